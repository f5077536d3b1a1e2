"""LeasePublisher against an in-process apiserver over gRPC: the election holder as a
coordination.k8s.io/v1 Lease, with client-go's acquireTime / renewTime / leaseTransitions
rules, a release that clears only its own holder, fenced writes, and coalescing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import coordination_pb2
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.client import Client
from services.clock import rfc3339_micro
from services.leaderelection import LeaderElectionRecord
from services.leaderelection.lock import StorageLock
from services.leaderelection.publish import LeasePublisher
from services.storage.memory import MemoryStorage
from tests.harness import control_plane

LEASE = BY_KIND["Lease"]
NS, NAME = "kube-system", "kube-scheduler"
KEY = f"/kubera/leaderelection/{NS}/{NAME}"
T0 = 1_700_000_000.0


def held_by(holder: str, acquired: float, renewed: float, transitions: int = 0):  # type: ignore[no-untyped-def]
    return LeaderElectionRecord(holder, acquired, renewed, 15, transitions)


def released(at: float) -> LeaderElectionRecord:
    return LeaderElectionRecord("", at, at, 1, 0)


@dataclass
class Setup:
    api: ApiServer
    client: Client
    lock: StorageLock
    #: Lease writes the apiserver served: (verb, holderIdentity or None).
    writes: list[tuple[str, str | None]] = field(default_factory=list)
    publishers: list[LeasePublisher] = field(default_factory=list)

    def publisher(self, identity: str, client: Client | None = None) -> LeasePublisher:
        p = LeasePublisher(client or self.client, NS, NAME, identity)
        self.publishers.append(p)
        return p

    async def lease(self) -> coordination_pb2.Lease | None:
        try:
            return await self.client.get(LEASE, NAME, NS)  # type: ignore[return-value]
        except NotFoundError:
            return None


def _counting(setup: Setup, verb: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def wrapper(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(obj, coordination_pb2.Lease):
            holder = obj.spec.holder_identity if obj.spec.HasField("holder_identity") else None
            setup.writes.append((verb, holder))
        return await fn(obj, *args, **kwargs)

    return wrapper


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    storage = MemoryStorage()
    config = ApiServerConfig(watch_cache_capacity=20, bookmark_interval=0.1)
    async with control_plane(storage, config) as cp:
        s = Setup(cp.api, cp.client, StorageLock(storage, KEY, lease_duration=15))
        cp.api.create = _counting(s, "create", cp.api.create)  # type: ignore[method-assign]
        cp.api.update = _counting(s, "update", cp.api.update)  # type: ignore[method-assign]
        try:
            yield s
        finally:
            for p in s.publishers:
                await p.close()


async def publish(p: LeasePublisher, record: LeaderElectionRecord) -> None:
    p.publish(record)
    await p.flush()


async def test_acquire_creates_the_lease(setup: Setup) -> None:
    a = setup.publisher("a")
    await publish(a, held_by("a", T0, T0))
    lease = await setup.lease()
    assert lease is not None
    assert lease.spec.holder_identity == "a"
    assert lease.spec.lease_duration_seconds == 15
    assert lease.spec.acquire_time == lease.spec.renew_time == rfc3339_micro(T0)
    assert lease.spec.HasField("lease_transitions") and lease.spec.lease_transitions == 0
    assert a.written == held_by("a", T0, T0)
    assert setup.writes == [("create", "a")]


async def test_renewals_move_renew_time_and_keep_acquire_time(setup: Setup) -> None:
    a = setup.publisher("a")
    await publish(a, held_by("a", T0, T0))
    for i in (1, 2, 3):
        await publish(a, held_by("a", T0, T0 + 2 * i))
        lease = await setup.lease()
        assert lease is not None
        assert lease.spec.renew_time == rfc3339_micro(T0 + 2 * i)
        assert lease.spec.acquire_time == rfc3339_micro(T0)
        assert lease.spec.lease_transitions == 0
    assert setup.writes == [("create", "a")] + [("update", "a")] * 3


async def test_a_new_holder_increments_transitions_and_resets_acquire_time(setup: Setup) -> None:
    a, b = setup.publisher("a"), setup.publisher("b")
    await publish(a, held_by("a", T0, T0 + 4))
    await publish(b, held_by("b", T0 + 20, T0 + 20))  # a was silent: b took over
    lease = await setup.lease()
    assert lease is not None
    assert lease.spec.holder_identity == "b"
    assert lease.spec.acquire_time == rfc3339_micro(T0 + 20)
    assert lease.spec.lease_transitions == 1
    await publish(b, held_by("b", T0 + 20, T0 + 22))  # b's renewal keeps the count
    lease = await setup.lease()
    assert lease is not None and lease.spec.lease_transitions == 1
    assert lease.spec.acquire_time == rfc3339_micro(T0 + 20)


async def test_release_clears_the_holder_and_the_next_acquire_is_a_transition(
    setup: Setup,
) -> None:
    a = setup.publisher("a")
    await publish(a, held_by("a", T0, T0 + 2))
    await publish(a, released(T0 + 3))
    lease = await setup.lease()
    assert lease is not None
    assert not lease.spec.HasField("holder_identity")
    assert lease.spec.lease_duration_seconds == 1
    assert lease.spec.renew_time == rfc3339_micro(T0 + 3)
    assert lease.spec.lease_transitions == 0

    b = setup.publisher("b")
    await publish(b, held_by("b", T0 + 4, T0 + 4))
    lease = await setup.lease()
    assert lease is not None and lease.spec.holder_identity == "b"
    assert lease.spec.lease_transitions == 1, "client-go counts taking a released lease"
    assert lease.spec.acquire_time == rfc3339_micro(T0 + 4)


@pytest.mark.parametrize("lease", ["held-by-a-successor", "never-written"])
async def test_release_leaves_a_lease_it_does_not_hold(setup: Setup, lease: str) -> None:
    a = setup.publisher("a")
    if lease == "held-by-a-successor":
        await publish(a, held_by("a", T0, T0))
        await publish(setup.publisher("b"), held_by("b", T0 + 20, T0 + 20))
    before = await setup.lease()
    writes = list(setup.writes)

    await publish(a, released(T0 + 21))

    assert await setup.lease() == before
    assert setup.writes == writes, "nothing was written"


async def test_a_stale_fenced_publisher_does_not_overwrite_the_successor(setup: Setup) -> None:
    held_a, _ = await setup.lock.create("a")
    assert held_a is not None
    token_a: tuple[str, int] | None = (KEY, held_a.create_revision)
    a = setup.publisher("a", setup.client.fenced(lambda: token_a))
    await publish(a, held_by("a", T0, T0))
    assert (await setup.lease()).spec.holder_identity == "a"  # type: ignore[union-attr]

    # a's term ends (its key expired) and b wins the next one, publishing under its token.
    assert await setup.lock.expire(held_a)
    held_b, _ = await setup.lock.create("b")
    assert held_b is not None
    b = setup.publisher("b", setup.client.fenced(lambda: (KEY, held_b.create_revision)))
    await publish(b, held_by("b", T0 + 20, T0 + 20))
    successor = await setup.lease()

    # a, still believing it leads, renews with its old token: refused by the apiserver.
    await publish(a, held_by("a", T0, T0 + 21))
    assert await setup.lease() == successor
    assert a.written == held_by("a", T0, T0), "the refused write is not recorded as written"
    # Once a knows it does not lead, its client refuses locally; the Lease is still b's.
    token_a = None
    await publish(a, held_by("a", T0, T0 + 22))
    assert await setup.lease() == successor
    assert successor is not None and successor.spec.holder_identity == "b"


async def test_publishes_coalesce_and_the_last_one_wins(setup: Setup) -> None:
    a = setup.publisher("a")
    records = [held_by("a", T0, T0 + i) for i in range(50)]
    a.publish(records[0])
    for r in records[1:]:  # no await in between: the writer task has not run yet
        a.publish(r)
    await a.flush()
    lease = await setup.lease()
    assert lease is not None and lease.spec.renew_time == rfc3339_micro(T0 + 49)
    assert a.written == records[-1]
    assert len(setup.writes) == 1


async def test_publishes_during_a_write_collapse_into_one_more(setup: Setup) -> None:
    a = setup.publisher("a")
    a.publish(held_by("a", T0, T0))
    # Let the first write get under way, then publish many while it is in flight.
    while not setup.writes:
        await asyncio.sleep(0)  # one loop turn: not a wait for time
    for i in range(1, 50):
        a.publish(held_by("a", T0, T0 + i))
    await a.flush()
    lease = await setup.lease()
    assert lease is not None and lease.spec.renew_time == rfc3339_micro(T0 + 49)
    assert setup.writes == [("create", "a"), ("update", "a")]
