"""Shared-state (Omega) mode: several active schedulers over one real apiserver (gRPC,
in-memory storage) split or share the pods, and never overcommit a node."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
import zlib
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from prometheus_client import generate_latest

from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import BOUND_BY, bound_by_allocation
from services.api.helpers.resources import pod_requests
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.client import Client
from services.scheduler import config as config_mod
from services.scheduler.omega import OmegaStats, SharedState, pod_hash
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler
from services.storage.keys import allocation_key
from tests.builders import MakeNode, MakePod
from tests.harness import control_plane
from tests.waiting import eventually

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]

# ----------------------------------------------------------------------- partitioning


@pytest.mark.parametrize("replicas", [1, 2, 3, 4])
def test_hash_partition_gives_every_pod_to_exactly_one_replica(replicas: int) -> None:
    uids = [str(uuid.UUID(int=i * 7919)) for i in range(2000)]
    shards = [SharedState(r, replicas, "hash") for r in range(replicas)]
    owners = [[s.replica for s in shards if s.owns(u)] for u in uids]
    assert all(len(o) == 1 for o in owners)
    # Deterministic: CRC-32 of the UID, the same in every process (never Python's hash()).
    assert [o[0] for o in owners] == [zlib.crc32(u.encode()) % replicas for u in uids]
    sizes = Counter(o[0] for o in owners)
    assert all(abs(n - len(uids) / replicas) < 0.1 * len(uids) for n in sizes.values())


def test_without_a_partition_every_replica_competes_for_every_pod() -> None:
    uids = [str(uuid.UUID(int=i)) for i in range(100)]
    assert all(SharedState(r, 3).owns(u) for r in range(3) for u in uids)


@pytest.mark.parametrize(
    ("replica", "replicas", "partition", "error"),
    [
        (0, 0, "hash", "replicas must be >= 1"),
        (2, 2, "hash", r"replica must be in \[0, 2\)"),
        (-1, 2, "none", r"replica must be in \[0, 2\)"),
        (0, 2, "modulo", "partition must be one of hash, none"),
    ],
)
def test_shared_state_refuses_impossible_places(
    replica: int, replicas: int, partition: Any, error: str
) -> None:
    with pytest.raises(ValueError, match=error):
        SharedState(replica, replicas, partition)


async def test_a_shared_state_scheduler_takes_no_fencing_token() -> None:
    # async: a gRPC aio channel wants a running event loop.
    client = Client("127.0.0.1:1")
    try:
        with pytest.raises(ValueError, match="not both"):
            Scheduler(
                client,
                SchedulerOptions(shared_state=SharedState(0, 1)),
                fencing=lambda: None,
            )
    finally:
        await client.close()


# ------------------------------------------------------------------------------ stats


def test_omega_stats_add_up() -> None:
    stats = OmegaStats()
    for busy, wait, attempts in [(0.1, 1.0, 1), (0.2, 2.0, 3), (0.3, 4.0, 2), (0.4, 8.0, 1)]:
        stats.bound(busy, 0.01, wait, attempts)
    stats.conflicted(0.05, 0.02)
    stats.conflicted(0.05, 0.02)
    stats.lost_pod(0.5, 0.02)
    s = stats.summary()
    assert s == pytest.approx(
        {
            "binds": 4,
            "conflicts": 2,
            "lost_pods": 1,
            "conflict_fraction": 0.5,
            "useful_busy_s": 1.0,
            "wasted_busy_s": 0.6,
            "bind_latency_mean_s": 0.1 / 7,
            "queue_wait_p50_s": 2.0,
            "queue_wait_p90_s": 8.0,
            "queue_wait_p99_s": 8.0,
            "attempts_per_pod_mean": 7 / 4,
            "attempts_per_pod_max": 3,
        }
    )
    assert OmegaStats().summary()["conflict_fraction"] == 0.0


# ------------------------------------------------------------------ end to end


@dataclass
class Omega:
    api: ApiServer
    client: Client
    scheds: list[Scheduler]
    #: While set, new UIDs are drawn until they hash to this replica (of 2).
    next_owner: list[int | None] = field(default_factory=lambda: [None])

    async def node(self, name: str, cpu: str) -> None:
        alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        n = MakeNode().typed().name(name).label("kubernetes.io/hostname", name)
        await self.api.create(n.allocatable(alloc).capacity(alloc).obj())
        await eventually(lambda: all(name in s.nodes.store for s in self.scheds))

    async def pod(self, name: str, cpu: str, owner: int | None = None) -> None:
        p = MakePod().typed().name(name).namespace("default")
        p.container("c", "i", requests={"cpu": cpu})
        self.next_owner[0] = owner
        try:
            await self.api.create(p.obj())
        finally:
            self.next_owner[0] = None

    async def pods(self) -> list[core_pb2.Pod]:
        return (await self.api.list(PODS, "default"))[0]  # type: ignore[return-value]

    def hold_binds(self, n: int, *names: str) -> list[str]:
        """The first `n` binds of the named pods wait for each other (5 s at most), so that
        they race: every scheduler decides before seeing the others' binds."""
        real = self.api.bind
        arrived: list[str] = []
        all_in = asyncio.Event()

        async def bind(namespace: str, name: str, *args: Any, **kwargs: Any) -> Any:
            if name in names and len(arrived) < n:
                arrived.append(name)
                if len(arrived) == n:
                    all_in.set()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(all_in.wait(), 5)
            return await real(namespace, name, *args, **kwargs)

        self.api.bind = bind  # type: ignore[method-assign]
        return arrived


async def _omega(replicas: int, partition: Any) -> AsyncIterator[Omega]:
    next_owner: list[int | None] = [None]
    counter = iter(range(1, 10**9))

    def new_uid() -> str:
        while True:
            uid = str(uuid.UUID(int=next(counter) * 104729))
            if next_owner[0] is None or pod_hash(uid) % 2 == next_owner[0]:
                return uid

    async with control_plane(new_uid=new_uid) as cp:
        clients = [cp.client, *(cp.new_client() for _ in range(replicas - 1))]
        cfg = config_mod.default_config()
        cfg.pod_initial_backoff_seconds = cfg.pod_max_backoff_seconds = 0.2
        scheds = [
            cp.scheduler(
                SchedulerOptions(
                    component_config=cfg,
                    seed=i,
                    shared_state=SharedState(i, replicas, partition),
                ),
                client=c,
                start=False,
            )
            for i, c in enumerate(clients)
        ]
        cp.run(*scheds)
        yield Omega(cp.api, clients[0], scheds, next_owner)


@pytest.fixture
async def hashed() -> AsyncIterator[Omega]:
    async for o in _omega(2, "hash"):
        yield o


@pytest.fixture
async def competing() -> AsyncIterator[Omega]:
    async for o in _omega(2, "none"):
        yield o


def _scheduled_condition(p: core_pb2.Pod) -> str:
    return next((c.status for c in p.status.conditions if c.type == "PodScheduled"), "")


def assert_no_node_overcommitted(pods: list[core_pb2.Pod], nodes: dict[str, int]) -> None:
    used: Counter[str] = Counter()
    for p in pods:
        if p.spec.node_name:
            used[p.spec.node_name] += pod_requests(p).milli_cpu
    over = {n: (m, nodes[n]) for n, m in used.items() if m > nodes[n]}
    assert not over, f"overcommitted (millicores used, allocatable): {over}"


async def test_two_replicas_racing_for_the_last_room_on_a_node_conflict_once(
    hashed: Omega,
) -> None:
    await hashed.node("n1", cpu="1")
    arrived = hashed.hold_binds(2, "a", "b")
    await hashed.pod("a", cpu="600m", owner=0)
    await hashed.pod("b", cpu="600m", owner=1)
    await eventually(lambda: sum(s.omega.conflicts + s.omega.binds for s in hashed.scheds) == 2)  # type: ignore[union-attr]
    assert sorted(arrived) == ["a", "b"]  # both replicas bound before seeing the other
    stats = [s.omega for s in hashed.scheds]
    assert [(st.binds, st.conflicts) for st in stats] in ([(1, 0), (0, 1)], [(0, 1), (1, 0)])  # type: ignore[union-attr]
    pods = {p.metadata.name: p for p in await hashed.pods()}
    winner = next(n for n, p in pods.items() if p.spec.node_name)
    loser = "b" if winner == "a" else "a"
    assert pods[winner].metadata.annotations[BOUND_BY] == bound_by_allocation(allocation_key("n1"))
    # The loser was requeued: once its cache shows the winner, it is unschedulable there...
    await eventually(lambda: _unschedulable(hashed, loser))
    # ...and binds as soon as there is room elsewhere.
    await hashed.node("n2", cpu="1")
    await eventually(lambda: _bound_to(hashed, loser, "n2"))
    loser_stats = hashed.scheds[int(loser == "b")].omega
    assert loser_stats is not None
    await eventually(lambda: loser_stats.binds == 1)  # once the bind's answer is back
    assert loser_stats.conflicts == 1
    assert loser_stats.attempts_max >= 2 and loser_stats.wasted_s > 0
    exposed = generate_latest(hashed.scheds[int(loser == "b")].metrics.registry).decode()
    assert 'kubera_scheduler_shared_state_conflicts_total{reason="allocation"} 1.0' in exposed
    assert "kubera_scheduler_shared_state_conflict_fraction 1.0" in exposed


async def _unschedulable(o: Omega, name: str) -> bool:
    p = await o.api.get(PODS, "default", name)
    return _scheduled_condition(p) == "False"  # type: ignore[arg-type]


async def _bound_to(o: Omega, name: str, node: str) -> bool:
    return (await o.api.get(PODS, "default", name)).spec.node_name == node  # type: ignore[attr-defined,no-any-return]


async def test_competing_replicas_fill_tight_nodes_without_overcommitting_any(
    competing: Omega,
) -> None:
    nodes = {f"n{i}": 1000 for i in range(6)}
    for name in nodes:
        await competing.node(name, cpu="1")
    arrived = competing.hold_binds(2, "p00")
    names = [f"p{i:02d}" for i in range(20)]  # 300m each: 3 per node, 18 of 20 fit
    for name in names:
        await competing.pod(name, cpu="300m")

    async def settled() -> bool:
        pods = await competing.pods()
        return all(p.spec.node_name or _scheduled_condition(p) == "False" for p in pods)

    await eventually(settled, timeout=20)
    pods = await competing.pods()
    assert_no_node_overcommitted(pods, nodes)
    bound = [p for p in pods if p.spec.node_name]
    assert len(bound) == 18
    stats = [s.omega for s in competing.scheds]
    assert all(st is not None for st in stats)
    # Each bound pod is counted once, by the replica whose bind won it (once its answer
    # is back: the pod may be listed bound a moment before).
    await eventually(lambda: sum(st.binds for st in stats) == 18)  # type: ignore[union-attr]
    # The binds of the first pod were held together: both replicas tried it, one lost it.
    assert arrived == ["p00", "p00"]
    assert sum(st.lost for st in stats) >= 1  # type: ignore[union-attr]
    for st in stats:
        s = st.summary()  # type: ignore[union-attr]
        assert s["conflict_fraction"] == (s["conflicts"] / s["binds"] if s["binds"] else 0.0)
        assert (s["wasted_busy_s"] > 0) == (s["conflicts"] + s["lost_pods"] > 0)
        assert s["queue_wait_p50_s"] <= s["queue_wait_p90_s"] <= s["queue_wait_p99_s"]
        if s["binds"]:
            assert s["useful_busy_s"] > 0 and s["attempts_per_pod_mean"] >= 1
    # The records agree with the pods: every node lists exactly what is bound to it.
    for name in nodes:
        kv = await competing.api.storage.get(allocation_key(name))
        listed = set() if kv is None else {e["pod"] for e in json.loads(kv.value)["pods"]}
        assert listed == {f"default/{p.metadata.name}" for p in bound if p.spec.node_name == name}
