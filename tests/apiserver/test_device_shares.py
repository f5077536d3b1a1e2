"""Shares of devices that allow multiple allocations in the device allocation records
(services/apiserver/allocation.py, DRAConsumableCapacity), on the in-memory fake and on
real etcd: a shared-state claim write that takes a share of a device records it with
what it consumes, and is refused, writing nothing, when the device's shares would consume
more of a capacity than its ResourceSlice publishes; a share whose claim let it go is
forgotten. Two replicas writing at once never overcommit the device."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.machinery.errors import AllocationConflictError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.storage import Storage
from services.storage.keys import device_allocation_key
from tests.apiserver.test_device_allocation import claim
from tests.builders import resource_slice

CLAIMS = BY_KIND["ResourceClaim"]
DRIVER = "gpu.example.com"
GPU0 = device_allocation_key(DRIVER, "n1", "gpu-0")


@pytest.fixture
async def api(storage: Storage) -> AsyncIterator[ApiServer]:
    api = ApiServer(storage)
    await api.start()
    await api.create(
        resource_slice(
            "n1-gpus",
            driver=DRIVER,
            node="n1",
            devices=[
                {
                    "name": "gpu-0",
                    "allowMultipleAllocations": True,
                    "capacity": {"memory": {"value": "8Gi"}, "cores": {"value": "10"}},
                }
            ],
        )
    )
    try:
        yield api
    finally:
        await api.stop()


async def share(
    api: ApiServer, name: str, memory: str, *, device: str = "gpu-0", check: bool = True
) -> resource_pb2.ResourceClaim:
    c = await claim(api, name)
    r = c.status.allocation.devices.results.add(
        request="gpu", driver=DRIVER, pool="n1", device=device, share_id=f"share-{name}"
    )
    r.consumed_capacity["memory"] = memory
    return await api.update_status(c, check_allocation=check)  # type: ignore[return-value]


async def deallocate(api: ApiServer, name: str) -> None:
    c = await claim(api, name)
    c.status.ClearField("allocation")
    await api.update_status(c)


async def recorded(api: ApiServer) -> list[tuple[str, str, dict[str, str]]]:
    kv = await api.storage.get(GPU0)
    assert kv is not None
    shares = json.loads(kv.value)["shares"]
    return [(s["claim"], s["share"], s["consumed"]) for s in shares]


async def test_shares_within_the_capacity_are_recorded_with_what_they_consume(
    api: ApiServer,
) -> None:
    await share(api, "a", "4Gi")
    await share(api, "b", "4Gi")
    assert await recorded(api) == [
        ("default/a", "share-a", {"memory": "4Gi"}),
        ("default/b", "share-b", {"memory": "4Gi"}),
    ]


async def test_a_share_beyond_the_capacity_is_refused_and_nothing_is_written(
    api: ApiServer,
) -> None:
    await share(api, "a", "6Gi")
    before = await claim(api, "b")
    with pytest.raises(AllocationConflictError) as e:
        await share(api, "b", "3Gi")
    assert f"a share of device {DRIVER}/n1/gpu-0" in str(e.value)
    assert "capacity memory" in str(e.value)
    after = await claim(api, "b")
    assert after.metadata.resource_version == before.metadata.resource_version
    assert not after.status.HasField("allocation")
    assert await recorded(api) == [("default/a", "share-a", {"memory": "6Gi"})]


@pytest.mark.parametrize("release", ["deallocated", "deleted"])
async def test_a_share_its_claim_let_go_is_forgotten(api: ApiServer, release: str) -> None:
    await share(api, "a", "6Gi")
    if release == "deallocated":
        await deallocate(api, "a")  # an unchecked write: the record still lists it
    else:
        await api.delete(CLAIMS, "default", "a")
    await share(api, "b", "6Gi")
    assert await recorded(api) == [("default/b", "share-b", {"memory": "6Gi"})]


async def test_a_status_write_without_new_shares_is_not_checked(api: ApiServer) -> None:
    a = await share(api, "a", "8Gi")
    a.status.reserved_for.add(resource="pods", name="p", uid="pod-uid")
    a = await api.update_status(a, check_allocation=True)  # type: ignore[assignment]
    assert [r.name for r in a.status.reserved_for] == ["p"]


async def test_a_device_no_slice_publishes_is_refused(api: ApiServer) -> None:
    with pytest.raises(AllocationConflictError, match="no ResourceSlice publishes it"):
        await share(api, "a", "1Gi", device="gpu-9")


async def test_without_check_allocation_shares_are_not_refused(api: ApiServer) -> None:
    await share(api, "a", "8Gi", check=False)
    await share(api, "b", "8Gi", check=False)  # upstream's apiserver checks nothing
    assert await api.storage.get(GPU0) is None


async def test_concurrent_shares_never_overcommit_the_device(api: ApiServer) -> None:
    names = ("a", "b", "c", "d")
    for n in names:
        await claim(api, n)
    got = await asyncio.gather(*(share(api, n, "3Gi") for n in names), return_exceptions=True)
    won = [g for g in got if not isinstance(g, BaseException)]
    assert len(won) == 2, got  # 2 x 3Gi fit in 8Gi, a third would not
    assert all(isinstance(g, AllocationConflictError) for g in got if isinstance(g, BaseException))
    assert sorted(c for c, _, _ in await recorded(api)) == sorted(
        f"default/{w.metadata.name}" for w in won
    )
