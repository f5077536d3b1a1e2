"""Binds take the pod from the pods watch cache when it has it bindable (no etcd read):
a stale copy must never change a bind's outcome. Each row makes the cache hold the pod's
version from before a change, then binds, alone and in a batch; the outcome must be the
one a bind reading etcd gets (the cache hint turned off), on the fake and on real etcd."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import bindbatch, binding
from services.apiserver.binding import BindItem
from services.apiserver.registry import ApiServer
from services.apiserver.watchcache import Entry
from tests.builders import pod

PODS = BY_KIND["Pod"]

Change = Callable[[ApiServer], Awaitable[object]]


async def _label(api: ApiServer) -> object:
    return await api.patch(PODS, "default", "p", '{"metadata":{"labels":{"x":"1"}}}')


async def _bind_elsewhere(api: ApiServer) -> object:
    return await api.bind("default", "p", "n2")


async def _recreate(api: ApiServer) -> object:
    await api.delete(PODS, "default", "p", grace_period_seconds=0)
    return await api.create(pod("p"))


async def _delete(api: ApiServer) -> object:
    return await api.delete(PODS, "default", "p", grace_period_seconds=0)


#: (what changed behind the cache's back, the bind's preconditions)
ROWS: dict[str, tuple[Change, dict[str, bool]]] = {
    "labelled": (_label, {}),
    "labelled, rv": (_label, {"rv": True}),
    "labelled, uid": (_label, {"uid": True}),
    "bound meanwhile": (_bind_elsewhere, {}),
    "bound meanwhile, rv": (_bind_elsewhere, {"rv": True}),
    "recreated, uid": (_recreate, {"uid": True}),
    "recreated": (_recreate, {}),
    "deleted": (_delete, {}),
}


async def _outcome(api: ApiServer, row: str, batched: bool) -> tuple[str, str]:
    change, pre = ROWS[row]
    await api.create(pod("p"))
    await api.create(pod("other"))
    old: core_pb2.Pod = await api.get(PODS, "default", "p")  # type: ignore[assignment]
    await change(api)
    cache = api.caches[PODS.resource]
    assert await cache.wait_revision(await api.storage.revision(), 5.0)
    cache.store[PODS.key("default", "p")] = Entry(old)  # the cache is one change behind
    item = BindItem(
        "default",
        "p",
        "n1",
        resource_version=old.metadata.resource_version if pre.get("rv") else "",
        uid=old.metadata.uid if pre.get("uid") else "",
    )
    try:
        if batched:
            out = await api.bind_batch([item, BindItem("default", "other", "n1")])
            assert out[1].error is None
            if out[0].error is not None:
                raise out[0].error
            got: Any = out[0].pod
        else:
            got = await api.bind(
                "default", "p", "n1", resource_version=item.resource_version, uid=item.uid
            )
    except ApiError as e:
        return type(e).__name__, re.sub(r"[0-9a-f-]{36}|\d+", "#", e.message)
    stored: Any = await api.get(PODS, "default", "p")
    assert stored.spec.node_name == got.spec.node_name == "n1"
    return "bound", ""


@pytest.mark.parametrize("batched", [False, True], ids=["single", "batch"])
@pytest.mark.parametrize("row", list(ROWS))
async def test_a_stale_cached_pod_binds_as_an_etcd_read_does(
    api: ApiServer, monkeypatch: pytest.MonkeyPatch, row: str, batched: bool
) -> None:
    with_cache = await _outcome(api, row, batched)
    for name in ("p", "other"):
        with contextlib.suppress(NotFoundError):
            await api.delete(PODS, "default", name, grace_period_seconds=0)
    monkeypatch.setattr(binding, "cached", lambda *a: None)
    monkeypatch.setattr(bindbatch, "cached", lambda *a: None)
    from_etcd = await _outcome(api, row, batched)
    assert with_cache == from_etcd
