"""The assume caches' state machine (services/scheduler/plugins/volumebinding/
assume_cache.py; upstream util/assumecache): assume answers the assumed object until
restore or a newer informer object, and refuses an unknown or older object."""

from __future__ import annotations

import pytest

from services.scheduler.plugins.volumebinding.assume_cache import (
    AssumeCacheError,
    NotFoundError,
    PVAssumeCache,
    PVCAssumeCache,
)
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


def test_list_pvs_answers_one_class_as_assumed() -> None:
    store = {
        "a": pv("a", "fast", rv="1"),
        "b": pv("b", "slow", rv="1"),
        "c": pv("c", "fast", rv="1"),
    }
    cache = PVAssumeCache(lambda: store)
    cache.assume(_with(store["c"], "1", "claim"))
    got = cache.list_pvs("fast")
    assert [v.metadata.name for v in got] == ["a", "c"]
    assert got[1].spec.claim_ref.name == "claim"


def test_claims_are_keyed_by_namespace_and_name() -> None:
    claim = pvc("data", "sc", namespace="ns1", rv="3")
    store = {"ns1/data": claim}
    cache = PVCAssumeCache(lambda: store)
    assert cache.get("ns1/data") is claim
    with pytest.raises(NotFoundError):
        cache.get("ns2/data")
