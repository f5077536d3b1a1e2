"""Device allocation records (services/apiserver/allocation.py), on the in-memory fake
and on real etcd: a shared-state scheduler's claim status write (`check_allocation`)
records each device it newly allocates in the same txn, and is refused, writing nothing,
when another claim still holds one; a record whose claim let the device go is taken over.
A deposed leader's claim allocation is refused by its stale fencing token."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.helpers.fencing import Fencing
from services.api.machinery.errors import AllocationConflictError, PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import fencing
from services.apiserver.registry import ApiServer
from services.leaderelection.lock import StorageLock
from services.storage import Delete, Storage
from services.storage.keys import DEVICE_ALLOCATIONS_PREFIX, device_allocation_key
from tests.builders import exact_request, resource_claim
from tests.harness import control_plane

CLAIMS = BY_KIND["ResourceClaim"]
DRIVER = "gpu.example.com"
GPU0 = device_allocation_key(DRIVER, "n1", "gpu-0")


@pytest.fixture
async def api(storage: Storage) -> AsyncIterator[ApiServer]:
    api = ApiServer(storage)
    await api.start()
    try:
        yield api
    finally:
        await api.stop()


async def claim(api: ApiServer, name: str) -> resource_pb2.ResourceClaim:
    try:
        return await api.get(CLAIMS, "default", name)  # type: ignore[return-value]
    except Exception:  # noqa: BLE001 - not there yet
        return await api.create(resource_claim(name, "default", exact_request("gpu", "gpu")))  # type: ignore[return-value]


async def allocate(
    api: ApiServer,
    name: str,
    *devices: str,
    check: bool = True,
    admin: bool = False,
    share: str = "",
) -> resource_pb2.ResourceClaim:
    c = await claim(api, name)
    for d in devices:
        r = c.status.allocation.devices.results.add(
            request="gpu", driver=DRIVER, pool="n1", device=d
        )
        if admin:
            r.admin_access = True
        if share:
            r.share_id = share
    return await api.update_status(c, check_allocation=check)  # type: ignore[return-value]


async def deallocate(api: ApiServer, name: str) -> None:
    c = await claim(api, name)
    c.status.ClearField("allocation")
    del c.status.reserved_for[:]
    await api.update_status(c)


async def records(api: ApiServer) -> dict[str, bytes]:
    items, _ = await api.storage.list(DEVICE_ALLOCATIONS_PREFIX)
    return {kv.key: kv.value for kv in items}


async def test_a_device_another_claim_holds_is_refused_and_nothing_is_written(
    api: ApiServer,
) -> None:
    a = await allocate(api, "a", "gpu-0")
    before = await records(api)
    assert list(before) == [GPU0] and a.metadata.uid.encode() in before[GPU0]
    b = await claim(api, "b")
    with pytest.raises(AllocationConflictError) as e:
        await allocate(api, "b", "gpu-1", "gpu-0")
    assert 'resourceclaim "default/a" holds it' in str(e.value)
    assert f"device {DRIVER}/n1/gpu-0" in str(e.value)
    after = await claim(api, "b")
    assert after.metadata.resource_version == b.metadata.resource_version
    assert not after.status.HasField("allocation")
    assert await records(api) == before  # gpu-1 was not recorded either


@pytest.mark.parametrize("release", ["deallocated", "deleted"])
async def test_a_device_its_claim_let_go_is_taken_over(api: ApiServer, release: str) -> None:
    await allocate(api, "a", "gpu-0")
    if release == "deallocated":
        await deallocate(api, "a")  # an unchecked write: the record stays, stale
    else:
        await api.delete(CLAIMS, "default", "a")
    b = await allocate(api, "b", "gpu-0")
    assert b.metadata.uid.encode() in (await records(api))[GPU0]


async def test_the_holder_writes_its_status_again_without_conflict(api: ApiServer) -> None:
    a = await allocate(api, "a", "gpu-0")
    a.status.reserved_for.add(resource="pods", name="p", uid="pod-uid")
    a = await api.update_status(a, check_allocation=True)  # type: ignore[assignment]
    assert [r.name for r in a.status.reserved_for] == ["p"]
    await deallocate(api, "a")
    await allocate(api, "a", "gpu-0")  # the same claim takes its device back


async def test_admin_access_holds_no_device(api: ApiServer) -> None:
    await allocate(api, "a", "gpu-0", admin=True)
    await allocate(api, "b", "gpu-0", admin=True)
    assert await records(api) == {}
    # (Shares of a device that allows multiple allocations: test_device_shares.py.)


async def test_without_check_allocation_nothing_is_recorded_or_refused(api: ApiServer) -> None:
    await allocate(api, "a", "gpu-0", check=False)
    await allocate(api, "b", "gpu-0", check=False)  # upstream's apiserver checks nothing
    assert await records(api) == {}


async def test_concurrent_writers_of_one_device_one_wins(api: ApiServer) -> None:
    for name in ("a", "b", "c"):
        await claim(api, name)
    got = await asyncio.gather(
        *(allocate(api, n, "gpu-0") for n in ("a", "b", "c")), return_exceptions=True
    )
    assert sum(not isinstance(g, BaseException) for g in got) == 1, got
    assert all(isinstance(g, AllocationConflictError) for g in got if isinstance(g, BaseException))


async def test_a_deposed_leaders_claim_allocation_is_refused(api: ApiServer) -> None:
    key = "/kubera/leaderelection/kube-system/kube-scheduler"
    rec, _ = await StorageLock(api.storage, key, lease_duration=30).create("old")
    assert rec is not None
    token = Fencing(key, rec.create_revision)
    await api.storage.txn([], [Delete(key)])  # the term is over (the lease expired)
    await claim(api, "a")
    reset = fencing.CURRENT.set(token)
    try:
        with pytest.raises(PreconditionError, match="stale leader"):
            await allocate(api, "a", "gpu-0", check=False)
    finally:
        fencing.CURRENT.reset(reset)
    assert not (await claim(api, "a")).status.HasField("allocation")


async def test_the_refusal_crosses_the_wire_as_allocation_conflict() -> None:
    async with control_plane() as cp:
        for name in ("a", "b"):
            await cp.api.create(resource_claim(name, "default", exact_request("gpu", "gpu")))
        got = []
        for name in ("a", "b"):
            c: Any = await cp.client.get(CLAIMS, name, "default")
            c.status.allocation.devices.results.add(
                request="gpu", driver=DRIVER, pool="n1", device="gpu-0"
            )
            try:
                got.append(await cp.client.update_status(c, check_allocation=True))
            except AllocationConflictError as e:
                got.append(e)
        assert isinstance(got[0], resource_pb2.ResourceClaim)
        assert isinstance(got[1], AllocationConflictError)
        assert 'resourceclaim "default/a" holds it' in str(got[1])
