"""The assume caches' state machine (services/scheduler/plugins/volumebinding/
assume_cache.py; upstream util/assumecache): assume answers the assumed object until
restore or a newer informer object, and refuses an unknown or older object."""

from __future__ import annotations

from typing import Any

import pytest

from services.client import Handlers
from services.scheduler.plugins.volumebinding.assume_cache import (
    AssumeCacheError,
    NotFoundError,
    PVAssumeCache,
    PVCAssumeCache,
)
from services.scheduler.volumelisters import VolumeListers
from tests.scheduler.plugins.volumebinding._fakes import PV, pv, pvc


def _with(volume: PV, rv: str, claim_name: str = "") -> PV:
    out = PV()
    out.CopyFrom(volume)
    out.metadata.resource_version = rv
    if claim_name:
        out.spec.claim_ref.name = claim_name
    return out


@pytest.mark.parametrize(
    ("assumed_rv", "ok"),
    [("5", True), ("6", True), ("4", False)],
    ids=["same version", "newer version", "older version is out of sync"],
)
def test_assume_needs_a_version_no_older_than_the_cached_one(assumed_rv: str, ok: bool) -> None:
    store = {"pv-a": pv("pv-a", "sc", rv="5")}
    cache = PVAssumeCache(lambda: store)
    new = _with(store["pv-a"], assumed_rv, "claim")
    if ok:
        cache.assume(new)
        assert cache.get("pv-a") is new
        assert cache.get_api("pv-a") is store["pv-a"]
    else:
        with pytest.raises(AssumeCacheError, match="out of sync"):
            cache.assume(new)
        assert cache.get("pv-a") is store["pv-a"]


def test_restore_answers_the_informers_object_again() -> None:
    store = {"pv-a": pv("pv-a", "sc", rv="5")}
    cache = PVAssumeCache(lambda: store)
    cache.assume(_with(store["pv-a"], "5", "claim"))
    cache.restore("pv-a")
    assert cache.get("pv-a") is store["pv-a"] and not cache.is_assumed("pv-a")


def test_a_newer_informer_object_replaces_the_assumed_one() -> None:
    store = {"pv-a": pv("pv-a", "sc", rv="5")}
    cache = PVAssumeCache(lambda: store)
    cache.assume(_with(store["pv-a"], "5", "claim"))
    store["pv-a"] = _with(store["pv-a"], "6")
    assert cache.get("pv-a") is store["pv-a"] and not cache.is_assumed("pv-a")


def test_unknown_or_deleted_objects_are_not_found() -> None:
    store = {"pv-a": pv("pv-a", "sc", rv="5")}
    cache = PVAssumeCache(lambda: store)
    with pytest.raises(NotFoundError):
        cache.assume(pv("pv-b", "sc", rv="1"))
    cache.assume(_with(store["pv-a"], "5", "claim"))
    del store["pv-a"]
    with pytest.raises(NotFoundError):
        cache.get("pv-a")


@pytest.mark.parametrize("indexed", [False, True], ids=["walked", "indexed-by-class"])
def test_list_pvs_answers_one_class_as_assumed(indexed: bool) -> None:
    store = {
        "a": pv("a", "fast", rv="1"),
        "b": pv("b", "slow", rv="1"),
        "c": pv("c", "fast", rv="1"),
    }
    listers = VolumeListers(pvs=_Informer(store)) if indexed else None
    asked: list[str] = []

    def of_class(name: str) -> list[str] | None:
        asked.append(name)
        return listers.pv_names_of_class(name) if listers is not None else None

    cache = PVAssumeCache(lambda: store, of_class)
    cache.assume(_with(store["c"], "1", "claim"))
    got = cache.list_pvs("fast")
    assert [v.metadata.name for v in got] == ["a", "c"]
    assert got[1].spec.claim_ref.name == "claim"
    assert asked == ["fast"]


class _Informer:
    """An informer's store and its handlers, fed by hand."""

    def __init__(self, store: dict[str, Any]) -> None:
        self.store = store
        self.handlers: list[Handlers] = []

    def add_handlers(self, handlers: Handlers) -> None:
        self.handlers.append(handlers)


def test_the_listers_index_follows_the_volume_informer() -> None:
    """A volume added, reclassified or deleted by the informer moves in the index the
    assume cache lists a class from."""
    store: dict[str, Any] = {"a": pv("a", "fast", rv="1")}
    informer = _Informer(store)
    listers = VolumeListers(pvs=informer)
    (h,) = informer.handlers
    assert listers.pv_names_of_class("fast") == ["a"]
    store["b"] = pv("b", "fast", rv="1")
    h.on_add(store["b"])  # type: ignore[misc]
    moved = pv("a", "slow", rv="2")
    h.on_update(store["a"], moved)  # type: ignore[misc]
    store["a"] = moved
    assert listers.pv_names_of_class("fast") == ["b"]
    assert listers.pv_names_of_class("slow") == ["a"]
    h.on_delete(store.pop("b"))  # type: ignore[misc]
    assert listers.pv_names_of_class("fast") == []
    assert VolumeListers(pvs=dict(store)).pv_names_of_class("slow") is None  # no index


def test_claims_are_keyed_by_namespace_and_name() -> None:
    claim = pvc("data", "sc", namespace="ns1", rv="3")
    store = {"ns1/data": claim}
    cache = PVCAssumeCache(lambda: store)
    assert cache.get("ns1/data") is claim
    with pytest.raises(NotFoundError):
        cache.get("ns2/data")
