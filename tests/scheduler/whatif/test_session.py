"""What-if sessions on a fork of a running scheduler (in-memory apiserver over gRPC, the
real Scheduler): the what-if places pods where the scheduler then binds them; it writes
nothing (the store's revision does not move); it previews preemption's victims; a gang
places whole or not at all; steps chain and roll back."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.experiment.run.runner import GANG_SCHEDULING_PROFILE
from protos.kubera.v1 import core_pb2, scheduling_pb2
from services.scheduler.config.load import load_config
from services.scheduler.options import SchedulerOptions
from services.scheduler.whatif import (
    AddNode,
    Base,
    DeleteNode,
    DeletePod,
    Schedule,
    Session,
    Sessions,
    StepError,
)
from services.scheduler.whatif.session import IDLE_TTL
from tests.builders import MakeNode, MakePod, scheduling_pod_group, workload
from tests.harness import control_plane
from tests.scheduler.test_preemption_integration import guarded_and_plain
from tests.scheduler.test_scheduler_integration import Cluster
from tests.waiting import eventually


class WhatIfCluster(Cluster):
    async def admitted(self, name: str, cpu: str, **spec: Any) -> core_pb2.Pod:
        """The pod as the apiserver would store it (a dry-run create), not created."""
        p = MakePod().typed().name(name).namespace("default")
        p.container("c", "i", requests={"cpu": cpu})
        pod: core_pb2.Pod = await self.api.create(p.spec(spec).obj(), dry_run=True)
        return pod

    async def session(self, seed: int = 1) -> Session:
        return Session(Base.capture(self.sched), seed=seed)

    async def revision(self) -> int:
        return await self.api.storage.revision()


@pytest.fixture
async def cluster() -> AsyncIterator[WhatIfCluster]:
    async with control_plane() as cp:
        yield WhatIfCluster(cp.api, cp.client, cp.scheduler(SchedulerOptions(seed=7)))


@pytest.fixture
async def gang_cluster() -> AsyncIterator[WhatIfCluster]:
    options = SchedulerOptions(seed=7, component_config=load_config(GANG_SCHEDULING_PROFILE))
    async with control_plane() as cp:
        yield WhatIfCluster(cp.api, cp.client, cp.scheduler(options))


async def test_the_what_if_places_pods_where_the_scheduler_then_binds_them(
    cluster: WhatIfCluster,
) -> None:
    # Sizes leave one best node for each pod in turn, so the what-if must count the pods
    # it placed before (1 cpu on the 3-cpu node, and so on).
    for name, cpu in (("n1", "1"), ("n2", "2"), ("n3", "3")):
        await cluster.node(name, cpu=cpu)
    sizes = [("a", "2500m"), ("b", "1500m"), ("c", "800m"), ("d", "400m")]
    pods = [await cluster.admitted(name, cpu) for name, cpu in sizes]
    before = await cluster.revision()
    answer = await (await cluster.session()).apply(Schedule(pods))
    assert await cluster.revision() == before
    planned = {r.pod.split("/")[1]: r.node for r in answer.pods}
    assert all(r.result == "scheduled" for r in answer.pods), answer
    for r in answer.pods:  # no score ties: the comparison below is exact
        tops = [s.total for s in r.attempt.top_scores] if r.attempt else []
        assert tops.count(max(tops, default=0)) <= 1, r
    real = {}
    for name, cpu in sizes:  # created one by one, as the what-if took them
        await cluster.pod(name, cpu=cpu)
        real.update(await cluster.wait_bound(name))
    assert real == planned == {"a": "n3", "b": "n2", "c": "n1", "d": planned["d"]}


async def test_preemption_is_previewed_with_its_victims_and_nothing_is_deleted(
    cluster: WhatIfCluster,
) -> None:
    for name, value in (("low", 0), ("high", 1000)):
        pc = scheduling_pb2.PriorityClass(value=value)
        pc.metadata.name = name
        await cluster.api.create(pc)
    await guarded_and_plain(cluster)
    urgent = await cluster.admitted("urgent", "900m", priorityClassName="high")
    before = await cluster.revision()

    plain = await (await cluster.session()).apply(Schedule([urgent]))
    (r,) = plain.pods
    assert (r.result, r.node, r.victims) == ("unschedulable", "", [])
    assert r.reasons == ["0/2 nodes are available: 2 Insufficient cpu."]

    session = await cluster.session()
    (r,) = (await session.apply(Schedule([urgent], preempt=True))).pods
    assert (r.result, r.node, r.victims) == ("scheduled", "n2", ["default/plain"])
    assert r.preemption is not None and r.preemption.node == "n2"
    assert session.fork.pod("default/plain") is None  # gone from the fork only
    assert await cluster.revision() == before
    assert {p.metadata.name for p in cluster.sched.pods.store.values()} == {"guarded", "plain"}


def _gangs(api: str) -> tuple[list[tuple[str, Any]], dict[str, Any], dict[str, Any]]:
    """The objects of gangs "fits" and "too-big" of three, and their members' fields."""
    if api == "PodGroup":
        groups = [
            ("PodGroup.scheduling.k8s.io", scheduling_pod_group(name, min_count=3))
            for name in ("fits", "too-big")
        ]
        return (
            groups,
            {"schedulingGroup": {"podGroupName": "fits"}},
            {"schedulingGroup": {"podGroupName": "too-big"}},
        )
    groups = [("Workload", workload(name, workers=3)) for name in ("fits", "too-big")]
    return (
        groups,
        {"workloadRef": {"name": "fits", "podGroup": "workers"}},
        {"workloadRef": {"name": "too-big", "podGroup": "workers"}},
    )


@pytest.mark.parametrize("api", ["PodGroup", "Workload"])
async def test_a_gang_places_whole_or_not_at_all(gang_cluster: WhatIfCluster, api: str) -> None:
    cluster = gang_cluster
    await cluster.node("n1", cpu="2")
    await cluster.node("n2", cpu="2")
    groups, group, big = _gangs(api)
    members = [await cluster.admitted(f"f{i}", "1", **group) for i in range(3)]
    session = await cluster.session()
    before = await cluster.revision()

    answer = await session.apply(Schedule(members, objects=groups))
    assert [(r.result, bool(r.node)) for r in answer.pods] == [("scheduled", True)] * 3
    # one cpu left on the two nodes: two of three members would fit, so none is placed
    members = [await cluster.admitted(f"b{i}", "1", **big) for i in range(3)]
    answer = await session.apply(Schedule(members, objects=groups))
    assert [r.result for r in answer.pods] == ["unschedulable"] * 3
    assert any("gang" in reason for r in answer.pods for reason in r.reasons), answer
    assert all(session.fork.pod(f"default/b{i}") is None for i in range(3))
    used = sum(len(session.fork.pods_on(n)) for n in ("n1", "n2"))
    assert used == 3
    assert await cluster.revision() == before


async def test_a_gang_counts_its_members_the_cluster_already_has(
    gang_cluster: WhatIfCluster,
) -> None:
    cluster = gang_cluster
    await cluster.node("n1", cpu="4")
    await cluster.api.create(scheduling_pod_group("trio", min_count=3))
    member = {"schedulingGroup": {"podGroupName": "trio"}}
    for i in range(2):  # bound by name: members the gang plugin's index must know
        await cluster.pod(f"m{i}", cpu="1", nodeName="n1", **member)
    await eventually(lambda: len(cluster.sched.pods.store) == 2)
    await eventually(
        lambda: "default/trio" in cluster.sched.kind_informers["PodGroup.scheduling.k8s.io"].store
    )
    third = await cluster.admitted("m2", "1", **member)
    (r,) = (await (await cluster.session()).apply(Schedule([third]))).pods
    assert (r.result, r.node) == ("scheduled", "n1"), r


async def test_steps_chain_and_roll_back_to_any_step(cluster: WhatIfCluster) -> None:
    await cluster.node("n1", cpu="2")
    await cluster.node("n2", cpu="2")
    session = await cluster.session()
    first = await session.apply(Schedule([await cluster.admitted("p1", "1500m")]))
    (p1,) = first.pods
    other = "n2" if p1.node == "n1" else "n1"
    gone = await session.apply(DeleteNode(p1.node))
    assert [(r.pod, r.result) for r in gone.pods] == [("default/p1", "deleted")]
    third = await session.apply(Schedule([await cluster.admitted("p2", "1500m")]))
    assert third.pods[0].node == other
    fourth = await session.apply(Schedule([await cluster.admitted("p3", "1500m")]))
    assert fourth.pods[0].result == "unschedulable"

    await session.rollback(1)
    assert [r.op for r in session.results()] == ["schedule"]
    assert session.results()[0].pods[0].node == p1.node  # the replay answers alike
    assert session.fork.pod("default/p1") is not None
    assert session.fork.node(p1.node) is not None
    again = await session.apply(Schedule([await cluster.admitted("p3", "1500m")]))
    assert again.pods[0].node == other

    await session.apply(DeletePod("default", "p1"))
    await session.apply(AddNode(MakeNode().name("n3").allocatable({"cpu": "4"}).obj()))
    assert session.fork.node("n3") is not None and session.fork.pod("default/p1") is None
    with pytest.raises(StepError):
        await session.apply(DeletePod("default", "p1"))
    with pytest.raises(StepError):
        await session.rollback(9)

    await session.rollback(0)
    assert session.results() == [] and session.fork.pod("default/p1") is None
    assert sorted(p.metadata.name for p in session.fork.pods.store.values()) == []


def test_sessions_keep_the_recently_used_and_drop_the_idle() -> None:
    now = [0.0]

    class Stub:
        def __init__(self, ident: str) -> None:
            self.id = ident

    sessions = Sessions(owner=None, now=lambda: now[0], max_sessions=2)
    for ident in ("a", "b"):
        sessions.open(Stub(ident))  # type: ignore[arg-type]
    assert sessions.get("a") is not None  # "b" is now the least recently used
    sessions.open(Stub("c"))  # type: ignore[arg-type]
    assert sessions.get("b") is None and sessions.get("a") is not None
    now[0] = IDLE_TTL + 1
    assert sessions.get("a") is None and len(sessions) == 0


def _random_spec(rng: random.Random, i: int) -> dict[str, Any]:
    """A pod's spec that exercises the default profile's plugins: taints, node affinity,
    topology spread, inter-pod affinity, node ports."""
    spec: dict[str, Any] = {}
    kind = rng.randrange(6)
    if kind == 0:
        spec["tolerations"] = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    elif kind == 1:
        spec["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 50,
                        "preference": {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": [rng.choice(["z1", "z2"])],
                                }
                            ]
                        },
                    }
                ]
            }
        }
    elif kind == 2:
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "spread"}},
            }
        ]
    elif kind == 3:
        spec["affinity"] = {
            "podAntiAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 100,
                        "podAffinityTerm": {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": {"app": "spread"}},
                        },
                    }
                ]
            }
        }
    elif kind == 4:
        spec["nodeSelector"] = {"topology.kubernetes.io/zone": rng.choice(["z1", "z2"])}
    return spec


@pytest.mark.parametrize("seed", [1, 2, 3])
async def test_random_pods_land_where_the_what_if_said(cluster: WhatIfCluster, seed: int) -> None:
    """Pod by pod: the what-if on a fresh fork, then the real pod; the scheduler binds it
    on the what-if's node or on one of the same top score (ties are drawn at random on
    both sides); a pod the what-if finds no node for stays unbound."""
    rng = random.Random(seed)
    for n in range(5):
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if n == 4 else []
        await cluster.node(
            f"n{n}", zone=f"z{n % 2 + 1}", cpu=str(rng.choice([2, 3, 4])), taints=taints
        )
    for i in range(14):
        name, cpu = f"p{i}", f"{rng.choice([100, 300, 600, 900, 1400])}m"
        spec = _random_spec(rng, i)
        labels = {"app": "spread"} if rng.random() < 0.5 else {}
        pod = await cluster.admitted(name, cpu, **spec)
        pod.metadata.labels.update(labels)
        (answer,) = (await (await cluster.session()).apply(Schedule([pod]))).pods
        await cluster.pod(name, cpu=cpu, labels=labels, **spec)
        if answer.result != "scheduled":
            assert answer.result == "unschedulable", answer
            await cluster.wait_unschedulable(name)
            continue
        tops = answer.attempt.top_scores if answer.attempt else []
        best = max((s.total for s in tops), default=0)
        ties = {s.node for s in tops if s.total == best} or {answer.node}
        assert answer.node in ties
        real = (await cluster.wait_bound(name))[name]
        assert real in ties, (i, spec, answer, real)
