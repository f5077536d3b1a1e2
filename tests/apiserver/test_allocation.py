"""Binds checked against the node's allocation record (shared-state scheduling): several
schedulers binding at once never overcommit a node, on the in-memory fake and real etcd."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from services.api.helpers.fencing import BOUND_BY, bound_by_allocation
from services.api.machinery.errors import AllocationConflictError, PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import allocation
from services.apiserver.registry import ApiServer
from services.storage import Storage
from services.storage.keys import allocation_key
from tests.apiserver.conftest import running_apiserver
from tests.builders import MakeNode, pod
from tests.harness import served

PODS = BY_KIND["Pod"]


async def node(api: ApiServer, name: str, **allocatable: str) -> None:
    alloc = {"cpu": "1", "memory": "1Gi", "pods": "110", **allocatable}
    await api.create(MakeNode().typed().name(name).allocatable(alloc).capacity(alloc).obj())


async def sized(api: ApiServer, name: str, **requests: str) -> Any:
    # Extended resources cannot be overcommitted: their limits must equal their requests.
    limits = {k: v for k, v in requests.items() if "/" in k}
    resources = {"requests": requests, "limits": limits}
    return await api.create(
        pod(name, containers=[{"name": "c", "image": "i", "resources": resources}])
    )


async def record(api: ApiServer, node_name: str) -> list[dict]:
    kv = await api.storage.get(allocation_key(node_name))
    assert kv is not None
    return json.loads(kv.value)["pods"]


async def bind(api: ApiServer, name: str, node_name: str = "n1") -> Any:
    return await api.bind("default", name, node_name, check_allocation=True)


@pytest.fixture
async def api2(storage: Storage) -> AsyncIterator[ApiServer]:
    """A second apiserver on the same storage: its binds race the first one's in etcd."""
    async with running_apiserver(storage) as server:
        yield server


def hold_first_admit(
    monkeypatch: pytest.MonkeyPatch, meanwhile: Callable[[], Awaitable[object]]
) -> list[str]:
    """Make the first fit decision wait until `meanwhile` ran (another bind), so the first
    bind's txn finds the record moved: the retry path, deterministically."""
    real = allocation.admit
    calls: list[str] = []

    async def admit(api: ApiServer, pod: Any, *args: Any) -> Any:
        calls.append(pod.metadata.name)
        guard = await real(api, pod, *args)
        if len(calls) == 1:
            await meanwhile()
        return guard

    monkeypatch.setattr(allocation, "admit", admit)
    return calls


async def test_a_checked_bind_creates_the_record_then_grows_it(api: ApiServer) -> None:
    await node(api, "n1", cpu="2")
    a = await sized(api, "a", cpu="500m", memory="64Mi")
    await sized(api, "b", cpu="700m", **{"example.com/gpu": "1"})
    bound = await bind(api, "a")
    assert bound.spec.node_name == "n1"
    assert await record(api, "n1") == [
        {
            "uid": a.metadata.uid,
            "pod": "default/a",
            "rev": int(a.metadata.resource_version),
            "requests": {"cpu": 500, "memory": 64 * 2**20},
        }
    ]
    with pytest.raises(AllocationConflictError, match="example.com/gpu: requested 1"):
        await bind(api, "b")
    await node(api, "n2", cpu="2", **{"example.com/gpu": "2"})
    await bind(api, "b", "n2")
    assert [p["pod"] for p in await record(api, "n2")] == ["default/b"]
    await sized(api, "c", cpu="1")
    await bind(api, "c")
    assert [p["pod"] for p in await record(api, "n1")] == ["default/a", "default/c"]


async def test_a_checked_bind_records_who_allowed_it(api: ApiServer) -> None:
    await node(api, "n1")
    await sized(api, "a", cpu="100m")
    bound = await bind(api, "a")
    want = bound_by_allocation(allocation_key("n1"))
    assert bound.metadata.annotations[BOUND_BY] == want == "allocation /kubera/allocations/n1"
    stored = await api.get(PODS, "default", "a")
    assert stored.metadata.annotations[BOUND_BY] == want


@pytest.mark.parametrize(
    ("allocatable", "first", "second", "shortfall"),
    [
        ({"cpu": "1"}, {"cpu": "600m"}, {"cpu": "600m"}, "cpu: requested 600m, allocated 600m, allocatable 1000m"),
        ({"memory": "1Gi"}, {"memory": "768Mi"}, {"memory": "512Mi"}, "memory: requested 536870912, allocated 805306368, allocatable 1073741824"),
        ({"pods": "1"}, {"cpu": "1m"}, {"cpu": "1m"}, "pods: requested 1, allocated 1, allocatable 1"),
        ({"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1"}, "ephemeral-storage: requested 1, allocated 1073741824"),
        ({"example.com/fpga": "1"}, {"example.com/fpga": "1"}, {"example.com/fpga": "1"}, "example.com/fpga: requested 1, allocated 1, allocatable 1"),
    ],
    ids=["cpu", "memory", "pod-count", "ephemeral-storage", "extended-resource"],
)  # fmt: skip
async def test_a_pod_that_no_longer_fits_is_an_allocation_conflict_naming_the_numbers(
    api: ApiServer,
    allocatable: dict[str, str],
    first: dict[str, str],
    second: dict[str, str],
    shortfall: str,
) -> None:
    await node(api, "n1", **allocatable)
    await sized(api, "first", **first)
    await sized(api, "second", **second)
    await bind(api, "first")
    with pytest.raises(AllocationConflictError) as err:
        await bind(api, "second")
    assert 'pod default/second does not fit node "n1"' in err.value.message
    assert shortfall in err.value.message
    assert err.value.reason == "AllocationConflict"
    assert (await api.get(PODS, "default", "second")).spec.node_name == ""
    assert [p["pod"] for p in await record(api, "n1")] == ["default/first"]


@pytest.mark.parametrize("apiservers", [1, 2], ids=["one-apiserver", "two-apiservers"])
async def test_concurrent_binds_to_a_node_with_room_for_one_bind_exactly_one(
    api: ApiServer, api2: ApiServer, apiservers: int
) -> None:
    await node(api, "n1", cpu="1")
    names = [f"p{i}" for i in range(6)]
    for name in names:
        await sized(api, name, cpu="600m")
    servers = [api, api2][:apiservers]
    results = await asyncio.gather(
        *(bind(servers[i % apiservers], n) for i, n in enumerate(names)), return_exceptions=True
    )
    bound = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, BaseException)]
    assert len(bound) == 1
    assert all(isinstance(r, AllocationConflictError) for r in refused), refused
    assert [p["pod"] for p in await record(api, "n1")] == [f"default/{bound[0].metadata.name}"]
    on_node = [p for p in (await api.list(PODS))[0] if p.spec.node_name == "n1"]
    assert len(on_node) == 1


async def test_a_bind_whose_record_moved_still_binds_when_it_still_fits(
    api: ApiServer, api2: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    await node(api, "n1", cpu="1")
    await sized(api, "a", cpu="400m")
    await sized(api, "b", cpu="400m")
    calls = hold_first_admit(monkeypatch, lambda: bind(api2, "b"))
    assert (await bind(api, "a")).spec.node_name == "n1"
    assert calls == ["a", "b", "a"]  # a decided, b bound meanwhile, a re-decided and bound
    assert sorted(p["pod"] for p in await record(api, "n1")) == ["default/a", "default/b"]


async def test_a_bind_whose_record_moved_is_refused_when_it_no_longer_fits(
    api: ApiServer, api2: ApiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    await node(api, "n1", cpu="1")
    await sized(api, "a", cpu="600m")
    await sized(api, "b", cpu="600m")
    hold_first_admit(monkeypatch, lambda: bind(api2, "b"))
    with pytest.raises(AllocationConflictError, match="cpu: requested 600m, allocated 600m"):
        await bind(api, "a")
    assert [p["pod"] for p in await record(api, "n1")] == ["default/b"]


async def _finish(api: ApiServer, name: str) -> None:
    p = await api.get(PODS, "default", name)
    p.status.phase = "Succeeded"
    await api.update_status(p)


async def _delete(api: ApiServer, name: str) -> None:
    await api.delete(PODS, "default", name, grace_period_seconds=0)


async def _recreate(api: ApiServer, name: str) -> None:
    await _delete(api, name)
    await sized(api, name, cpu="1m")


@pytest.mark.parametrize(
    "free", [_finish, _delete, _recreate], ids=["terminal", "deleted", "recreated-same-name"]
)
async def test_pods_that_are_gone_or_terminal_leave_the_record_and_free_their_room(
    api: ApiServer, free: Callable[[ApiServer, str], Awaitable[None]]
) -> None:
    await node(api, "n1", cpu="1")
    await sized(api, "a", cpu="600m")
    await sized(api, "b", cpu="600m")
    await bind(api, "a")
    with pytest.raises(AllocationConflictError):
        await bind(api, "b")
    await free(api, "a")
    await bind(api, "b")
    assert [p["pod"] for p in await record(api, "n1")] == ["default/b"]


async def test_the_record_is_exact_while_the_watch_cache_lags(api: ApiServer) -> None:
    await node(api, "n1", cpu="1")
    cache = api.caches["pods"]
    await cache.stop()  # the pods cache sees nothing from here on
    frozen_at = cache.revision
    await sized(api, "a", cpu="600m")
    await sized(api, "b", cpu="600m")
    await bind(api, "a")
    # The cache has never seen "a": its absence there must not drop it from the record.
    with pytest.raises(AllocationConflictError):
        await bind(api, "b")
    await _delete(api, "a")
    # Nor has it seen "a" go: the bind that would be refused asks etcd first, and binds.
    await bind(api, "b")
    assert [p["pod"] for p in await record(api, "n1")] == ["default/b"]
    assert cache.revision == frozen_at


async def test_pods_bound_without_the_check_are_counted_from_the_cache(api: ApiServer) -> None:
    await node(api, "n1", cpu="1")
    await sized(api, "plain", cpu="600m")
    await sized(api, "checked", cpu="600m")
    await sized(api, "small", cpu="300m")
    bound = await api.bind("default", "plain", "n1")  # fenced/unchecked path: no record
    assert await api.storage.get(allocation_key("n1")) is None
    assert await api.caches["pods"].wait_revision(int(bound.metadata.resource_version), 5)
    with pytest.raises(AllocationConflictError, match="allocated 600m"):
        await bind(api, "checked")
    await bind(api, "small")  # seeds the record with "plain"
    assert sorted(p["pod"] for p in await record(api, "n1")) == ["default/plain", "default/small"]


async def test_a_checked_bind_to_a_missing_node_is_a_conflict(api: ApiServer) -> None:
    await sized(api, "a", cpu="1m")
    with pytest.raises(AllocationConflictError, match='node "ghost": the node does not exist'):
        await bind(api, "a", "ghost")


async def test_a_checked_bind_keeps_the_pod_preconditions(api: ApiServer) -> None:
    await node(api, "n1")
    await sized(api, "a", cpu="1m")
    await bind(api, "a")
    with pytest.raises(PreconditionError, match='already assigned to node "n1"'):
        await bind(api, "a")


async def test_the_conflict_crosses_grpc_with_its_reason(api: ApiServer) -> None:
    async with served(api) as cp:
        client = cp.new_client(fencing=lambda: None)
        await node(api, "n1", cpu="1")
        await sized(api, "a", cpu="600m")
        await sized(api, "b", cpu="600m")
        # The client's fencing source says "not leading": a checked bind needs no token.
        bound = await client.bind("a", "n1", check_allocation=True)
        assert bound.spec.node_name == "n1"
        with pytest.raises(AllocationConflictError, match='pod default/b does not fit node "n1"'):
            await client.bind("b", "n1", check_allocation=True)


async def test_a_sidecar_counts_in_the_allocation_so_it_cannot_overcommit(api: ApiServer) -> None:
    # services/api/helpers/resources.py pod_requests (upstream PodRequests): a sidecar (an init
    # container with restartPolicy Always) adds to the regular containers: 400m + 400m.
    await node(api, "n1", cpu="1")
    await api.create(
        pod(
            "with-sidecar",
            containers=[{"name": "c", "image": "i", "resources": {"requests": {"cpu": "400m"}}}],
            initContainers=[
                {
                    "name": "proxy",
                    "image": "i",
                    "restartPolicy": "Always",
                    "resources": {"requests": {"cpu": "400m"}},
                }
            ],
        )
    )
    await sized(api, "second", cpu="300m")
    await bind(api, "with-sidecar")
    assert (await record(api, "n1"))[0]["requests"] == {"cpu": 800}
    with pytest.raises(AllocationConflictError, match="cpu: requested 300m, allocated 800m"):
        await bind(api, "second")
