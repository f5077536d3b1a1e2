"""A PodGroup's topology constraint end to end in process: the apiserver on the in-memory
store, a scheduler whose profile enables GangScheduling, Nodes as objects in two racks, a
gang PodGroup (minCount 3) that asks for one rack.

What users see: the group goes to the rack that holds all of it, even when another rack
comes first by name and holds its first pods (upstream's placement step weighs every
domain for the whole group; a rack fixed by the first placed pod would leave the gang
waiting at Permit for its 5-minute timeout), and its PodGroup reads
PodGroupInitiallyScheduled=True; a gang no rack holds binds nothing and reads False. Then
upstream's integration scenarios for topology-aware gangs, as step tables."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, schedulingv1beta1_pb2
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.scheduler.config.load import load_config
from services.scheduler.options import SchedulerOptions
from tests.builders import MakeNode, MakePod, scheduling_pod_group
from tests.harness import ControlPlane, control_plane
from tests.scheduler.test_gang_integration import RecordingClient
from tests.scheduler.test_workload_gang_integration import CONFIG
from tests.waiting import eventually

pytestmark = pytest.mark.integration
PODS = BY_KIND["Pod"]
POD_GROUPS = BY_KIND[SCHEDULING_POD_GROUP]
RACK = "topology.kubernetes.io/rack"


@pytest.fixture
async def plane() -> AsyncIterator[tuple[ControlPlane, Any, Any]]:
    async with control_plane() as cp:
        rec = cp.new_client(RecordingClient)
        options = SchedulerOptions(component_config=load_config(CONFIG), seed=7)
        sched = cp.scheduler(options, client=rec)
        await eventually(lambda: sched.pods.synced.is_set())
        yield cp, sched, rec


async def _racks(cp: ControlPlane, sched: Any, racks: dict[str, tuple[int, str]]) -> None:
    """`racks`: rack name -> (how many nodes, each node's cpu)."""
    for rack, (count, cpu) in racks.items():
        size = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
        for i in range(count):
            name = f"{rack}-{i}"
            n = MakeNode().typed().name(name).labels({"kubernetes.io/hostname": name, RACK: rack})
            await cp.api.create(n.allocatable(size).capacity(size).obj())
            await eventually(lambda name=name: name in sched.nodes.store)


async def _gang(cp: ControlPlane, sched: Any, name: str) -> list[str]:
    """A gang PodGroup of 3 asking for one rack, and its 3 pods of 1 cpu each."""
    group = scheduling_pod_group(
        name, "default", min_count=3, schedulingConstraints={"topology": [{"key": RACK}]}
    )
    await cp.api.create(group)
    await eventually(lambda: f"default/{name}" in sched.kind_informer(SCHEDULING_POD_GROUP).store)
    pods = [f"{name}-{i}" for i in range(3)]
    for p in pods:
        b = MakePod().typed().name(p).namespace("default").pod_group_name(name)
        b.container("c", "i", requests={"cpu": "1"})
        await cp.api.create(b.obj())
    return pods


async def _condition(cp: ControlPlane, name: str, status: str) -> tuple[str, str, str] | None:
    """The PodGroup's PodGroupInitiallyScheduled (status, reason, message) once its status
    is `status`."""
    pg: schedulingv1beta1_pb2.SchedulingPodGroup = await cp.client.get(POD_GROUPS, name, "default")
    for c in pg.status.conditions:
        if c.type == "PodGroupInitiallyScheduled" and c.status == status:
            return c.status, c.reason, c.message
    return None


async def _nodes(cp: ControlPlane, pods: list[str]) -> list[str]:
    out = []
    for p in pods:
        pod: core_pb2.Pod = await cp.client.get(PODS, p, "default")
        out.append(pod.spec.node_name)
    return out


async def test_a_gang_goes_to_the_rack_that_holds_all_of_it(
    plane: tuple[ControlPlane, Any, Any],
) -> None:
    cp, sched, _ = plane
    # rack-a holds 2 of the 3 pods, rack-b all 3; rack-a comes first by name and its nodes
    # have the most room, so a pod scheduled alone would go there (LeastAllocated).
    await _racks(cp, sched, {"rack-a": (2, "1500m"), "rack-b": (3, "1")})
    pods = await _gang(cp, sched, "trainer")

    async def bound() -> list[str] | None:
        nodes = await _nodes(cp, pods)
        return nodes if all(nodes) else None

    nodes = await eventually(bound, timeout=20)
    assert sorted(nodes) == ["rack-b-0", "rack-b-1", "rack-b-2"]
    got = await eventually(lambda: _condition(cp, "trainer", "True"))
    assert got[:2] == ("True", "Scheduled")


async def test_a_gang_no_rack_holds_binds_nothing_and_says_why(
    plane: tuple[ControlPlane, Any, Any],
) -> None:
    cp, sched, _ = plane
    await _racks(cp, sched, {"rack-a": (2, "1"), "rack-b": (2, "1")})
    pods = await _gang(cp, sched, "too-big")
    _, reason, message = await eventually(lambda: _condition(cp, "too-big", "False"), timeout=20)
    assert reason == "Unschedulable"
    assert RACK in message and "3" in message
    assert await _nodes(cp, pods) == ["", "", ""]


# ------------------------------------- upstream's TestTopologyAwareSchedulingWithGangPolicy
#
# test/integration/scheduler/podgroup/topology_aware_scheduling/tas_test.go: the 12
# scenarios of TestTopologyAwareSchedulingWithGangPolicy and the 13 of
# TestTopologyAwareSchedulingWithBasicPolicy, as step tables: nodes of 2 cpus (and 32
# pods) labelled rack and zone; group pods of 1 cpu ("large": 2, "unfittable": 3);
# pre-existing pods bound to a node with the cpu they use. Steps: ("nodes", [(node, rack,
# zone)]), ("assigned", [(pod, node, cpu)]), ("group", name, minCount or None for basic[,
# key]), ("pods", [(pod, group, cpu)]), ("scheduled", [pods]), ("on", [pods], {nodes}),
# ("one", [pods], key), ("unschedulable", [pods]), ("delete", [pods]).

N1, N2, N3 = (
    ("node1-rack1", "rack-1", "zone-1"),
    ("node2-rack1", "rack-1", "zone-1"),
    (
        "node3-rack1",
        "rack-1",
        "zone-1",
    ),
)
P123 = [("p1", "pg1", "1"), ("p2", "pg1", "1"), ("p3", "pg1", "1")]
LARGE123 = [("p1", "pg1", "2"), ("p2", "pg1", "2"), ("p3", "pg1", "2")]
NAMES123 = ["p1", "p2", "p3"]

SCENARIOS: dict[str, list[tuple[Any, ...]]] = {
    "gang schedules on a single rack, when only one feasible rack is available": [
        (
            "nodes",
            [
                N1,
                N2,
                N3,
                ("node4-rack2", "rack-2", "zone-1"),
                ("node5-rack2", "rack-2", "zone-1"),
                ("node6-zone2", "rack-3", "zone-2"),
            ],
        ),
        ("assigned", [("existing1", "node4-rack2", "2")]),
        ("group", "pg1", 3),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node1-rack1", "node2-rack1", "node3-rack1"}),
    ],
    "gang remains pending when no feasible resources are found": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-1"),
                ("node4-zone2", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", 3),
        ("pods", LARGE123),
        ("unschedulable", NAMES123),
    ],
    "gang remains pending when resources are consumed by existing pods": [
        ("nodes", [N1, N2, N3]),
        ("assigned", [("existing1", "node1-rack1", "2"), ("existing2", "node3-rack1", "2")]),
        ("group", "pg1", 3),
        ("pods", P123),
        ("unschedulable", NAMES123),
        ("delete", ["existing1"]),
        ("scheduled", NAMES123),
    ],
    "gang schedules on a single rack, choosing placement with the highest score in default "
    "placement scoring algorithm": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-2"),
                ("node4-rack2", "rack-2", "zone-2"),
                ("node5-rack2", "rack-2", "zone-2"),
                ("node6-rack3", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", 3),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node1-rack1", "node2-rack1"}),
    ],
    "gang schedules on a single rack, choosing placement with highest allocation percentage "
    "(default placement scoring algorithm) with pre-existing pods in cluster": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-2"),
                ("node4-rack2", "rack-2", "zone-2"),
                ("node5-rack2", "rack-2", "zone-2"),
                ("node6-rack3", "rack-3", "zone-2"),
                ("node7-rack3", "rack-3", "zone-2"),
                ("node8-rack3", "rack-3", "zone-2"),
                ("node9-rack4", "rack-4", "zone-2"),
            ],
        ),
        ("assigned", [("existing1", "node3-rack2", "2"), ("existing2", "node8-rack3", "1")]),
        ("group", "pg1", 3),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node3-rack2", "node4-rack2", "node5-rack2"}),
    ],
    "two gangs schedule consecutively, each on a separate rack": [
        (
            "nodes",
            [N1, N2, N3, ("node4-rack2", "rack-2", "zone-1"), ("node5-rack2", "rack-2", "zone-1")],
        ),
        ("group", "pg1", 3),
        ("pods", LARGE123),
        ("scheduled", NAMES123),
        ("group", "pg2", 2),
        ("pods", [("p4", "pg2", "1"), ("p5", "pg2", "1")]),
        ("scheduled", ["p4", "p5"]),
        ("on", NAMES123, {"node1-rack1", "node2-rack1", "node3-rack1"}),
        ("on", ["p4", "p5"], {"node4-rack2", "node5-rack2"}),
    ],
    "two gangs schedule consecutively, both on the same rack": [
        ("nodes", [N1, N2, N3, ("node4-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", 2),
        ("pods", [("p1", "pg1", "2"), ("p2", "pg1", "1")]),
        ("group", "pg2", 3),
        ("pods", [("p3", "pg2", "1"), ("p4", "pg2", "1"), ("p5", "pg2", "1")]),
        ("scheduled", ["p1", "p2"]),
        ("on", ["p1", "p2"], {"node1-rack1", "node2-rack1", "node3-rack1"}),
        ("scheduled", ["p3", "p4", "p5"]),
        ("on", ["p3", "p4", "p5"], {"node1-rack1", "node2-rack1", "node3-rack1"}),
    ],
    "two gangs schedule consecutively, different topology keys": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-1"),
                ("node4-zone2", "rack-3", "zone-2"),
                ("node5-zone2", "rack-3", "zone-2"),
                ("node6-zone2", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", 3),
        ("pods", LARGE123),
        ("scheduled", NAMES123),
        ("group", "pg2", 3, "zone"),
        ("pods", [("p4", "pg2", "2"), ("p5", "pg2", "2"), ("p6", "pg2", "2")]),
        ("scheduled", ["p4", "p5", "p6"]),
        ("on", NAMES123, {"node4-zone2", "node5-zone2", "node6-zone2"}),
        ("on", ["p4", "p5", "p6"], {"node1-rack1", "node2-rack1", "node3-rack2"}),
    ],
    "two gangs schedule consecutively, only one fits in the cluster": [
        ("nodes", [N1, N2]),
        ("group", "pg1", 3),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("group", "pg2", 2),
        ("pods", [("p4", "pg2", "1"), ("p5", "pg2", "1")]),
        ("on", NAMES123, {"node1-rack1", "node2-rack1"}),
        ("unschedulable", ["p4", "p5"]),
    ],
    "gang with minCount < pod count schedules on a single rack": [
        (
            "nodes",
            [N1, N2, ("node3-rack2", "rack-2", "zone-1"), ("node4-rack2", "rack-2", "zone-1")],
        ),
        ("group", "pg1", 2),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("one", NAMES123, "rack"),
    ],
    "gang with minCount < pod count schedules on a single rack, choosing smaller rack": [
        (
            "nodes",
            [
                N1,
                N2,
                N3,
                ("node4-rack2", "rack-2", "zone-1"),
                ("node5-rack2", "rack-2", "zone-1"),
                ("node6-rack3", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", 3),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("pods", [("p4", "pg1", "1")]),
        ("scheduled", ["p4"]),
        ("on", [*NAMES123, "p4"], {"node4-rack2", "node5-rack2"}),
        ("pods", [("p5", "pg1", "1")]),
        ("unschedulable", ["p5"]),
    ],
    "gang does not schedule on a single rack when preemption could free up enough resources": [
        ("nodes", [N1, N2]),
        ("assigned", [("existing1", "node2-rack1", "2")]),
        ("group", "pg1", 3),
        ("pods", P123),
        ("unschedulable", NAMES123),
    ],
    # TestTopologyAwareSchedulingWithBasicPolicy
    "basic podgroup schedules on the only rack in the cluster": [
        ("nodes", [N1, N2]),
        ("group", "pg1", None),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node1-rack1", "node2-rack1"}),
    ],
    "basic podgroup schedules all pods on a single rack, when there are multiple racks "
    "fitting in the cluster": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-1"),
                ("node4-rack2", "rack-2", "zone-1"),
                ("node5-zone2", "rack-3", "zone-2"),
                ("node6-zone2", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", None),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("one", NAMES123, "rack"),
    ],
    "basic podgroup cannot fit on a single rack, no pods get scheduled on a different rack": [
        ("nodes", [("node1-rack1", "rack-1", "zone-1"), ("node2-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", None),
        ("pods", P123),
        ("scheduled", ["p1", "p2"]),
        ("unschedulable", ["p3"]),
        ("one", ["p1", "p2"], "rack"),
    ],
    "basic podgroup does not schedule at all when no pods fit": [
        ("nodes", [("node1-rack1", "rack-1", "zone-1"), ("node2-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "3"), ("p2", "pg1", "3")]),
        ("unschedulable", ["p1", "p2"]),
    ],
    "basic podgroup schedules only some pods when others don't fit on any node": [
        ("nodes", [("node1-rack1", "rack-1", "zone-1"), ("node2-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "3"), ("p2", "pg1", "1")]),
        ("scheduled", ["p2"]),
        ("unschedulable", ["p1"]),
    ],
    "basic podgroup schedules on a single rack, choosing placement with highest allocation "
    "percentage (default placement scoring algorithm)": [
        (
            "nodes",
            [
                N1,
                N2,
                ("node3-rack2", "rack-2", "zone-2"),
                ("node4-rack2", "rack-2", "zone-2"),
                ("node5-rack2", "rack-2", "zone-2"),
            ],
        ),
        ("group", "pg1", None),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node1-rack1", "node2-rack1"}),
    ],
    "basic podgroup schedules on a single rack, choosing placement with highest allocation "
    "percentage with pre-existing pods": [
        (
            "nodes",
            [
                N1,
                N2,
                N3,
                ("node4-rack2", "rack-2", "zone-2"),
                ("node5-rack2", "rack-2", "zone-2"),
                ("node6-rack2", "rack-2", "zone-2"),
                ("node7-rack3", "rack-3", "zone-2"),
                ("node8-rack3", "rack-3", "zone-2"),
                ("node9-rack3", "rack-3", "zone-2"),
                ("node10-rack3", "rack-3", "zone-2"),
            ],
        ),
        (
            "assigned",
            [
                ("existing1", "node1-rack1", "1"),
                ("existing2", "node5-rack2", "1"),
                ("existing3", "node6-rack2", "1"),
            ],
        ),
        ("group", "pg1", None),
        ("pods", P123),
        ("scheduled", NAMES123),
        ("on", NAMES123, {"node4-rack2", "node5-rack2", "node6-rack2"}),
    ],
    "basic podgroup schedules on a single rack, choosing best scoring placement that will "
    "not fit all podgroup": [
        (
            "nodes",
            [
                N1,
                N2,
                N3,
                ("node4-rack1", "rack-1", "zone-1"),
                ("node5-rack2", "rack-2", "zone-1"),
            ],
        ),
        ("assigned", [("existing1", "node1-rack1", "2")]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1")]),
        ("scheduled", ["p1"]),
        ("pods", [("p2", "pg1", "1"), ("p3", "pg1", "1")]),
        ("scheduled", ["p2"]),
        ("on", ["p1", "p2"], {"node5-rack2"}),
        ("unschedulable", ["p3"]),
    ],
    "two basic podgroups schedule consecutively, each on a single rack": [
        ("nodes", [N1, N2, N3, ("node4-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1"), ("p2", "pg1", "1")]),
        ("group", "pg2", None),
        ("pods", [("p3", "pg2", "1"), ("p4", "pg2", "1")]),
        ("scheduled", ["p1", "p2"]),
        ("on", ["p1", "p2"], {"node4-rack2"}),
        ("scheduled", ["p3", "p4"]),
        ("on", ["p3", "p4"], {"node1-rack1", "node2-rack1", "node3-rack1"}),
    ],
    "two basic podgroups schedule consecutively on the only rack": [
        ("nodes", [N1, N2, N3]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1"), ("p2", "pg1", "1")]),
        ("group", "pg2", None),
        ("pods", [("p3", "pg2", "1"), ("p4", "pg2", "1"), ("p5", "pg2", "1")]),
        ("scheduled", ["p1", "p2", "p3", "p4", "p5"]),
    ],
    "two basic podgroups schedule consecutively, different topology keys": [
        (
            "nodes",
            [
                ("node1-rack1", "rack-1", "zone-1"),
                ("node2-zone2", "rack-2", "zone-2"),
                ("node3-zone2", "rack-2", "zone-2"),
                ("node4-zone2", "rack-3", "zone-2"),
                ("node5-zone2", "rack-3", "zone-2"),
            ],
        ),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1"), ("p2", "pg1", "1")]),
        ("group", "pg2", None, "zone"),
        ("pods", [("p3", "pg2", "2"), ("p4", "pg2", "2"), ("p5", "pg2", "2")]),
        ("scheduled", ["p1", "p2", "p3", "p4", "p5"]),
        ("on", ["p1", "p2"], {"node1-rack1"}),
        ("on", ["p3", "p4", "p5"], {"node2-zone2", "node3-zone2", "node4-zone2", "node5-zone2"}),
    ],
    "two basic podgroups schedule consecutively, one does not fit in the assigned rack": [
        ("nodes", [N1, N2, ("node3-rack2", "rack-2", "zone-1")]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1")]),
        ("scheduled", ["p1"]),
        ("pods", [("p2", "pg1", "1"), ("p3", "pg1", "1")]),
        ("scheduled", ["p2"]),
        ("unschedulable", ["p3"]),
        ("on", ["p1", "p2"], {"node3-rack2"}),
        ("group", "pg2", None),
        ("pods", [("p4", "pg2", "1"), ("p5", "pg2", "1"), ("p6", "pg2", "1")]),
        ("scheduled", ["p4", "p5", "p6"]),
        ("on", ["p4", "p5", "p6"], {"node1-rack1", "node2-rack1"}),
    ],
    "basic podgroup continues to schedule pods when more resources become available": [
        ("nodes", [("node1-rack1", "rack-1", "zone-1"), ("node2-rack2", "rack-2", "zone-1")]),
        ("assigned", [("existing1", "node1-rack1", "1")]),
        ("scheduled", ["existing1"]),
        ("group", "pg1", None),
        ("pods", [("p1", "pg1", "1")]),
        ("scheduled", ["p1"]),
        ("pods", [("p2", "pg1", "1")]),
        ("on", ["p1"], {"node1-rack1"}),
        ("unschedulable", ["p2"]),
        ("delete", ["existing1"]),
        ("scheduled", ["p1", "p2"]),
        ("on", ["p1", "p2"], {"node1-rack1"}),
    ],
}


async def _unschedulable(cp: ControlPlane, name: str) -> bool:
    pod: core_pb2.Pod = await cp.client.get(PODS, name, "default")
    return any(c.type == "PodScheduled" and c.status == "False" for c in pod.status.conditions)


async def _run_step(cp: ControlPlane, sched: Any, step: tuple[Any, ...]) -> None:
    what = step[0]
    if what == "nodes":
        size = {"cpu": "2", "pods": "32"}
        for name, rack, zone in step[1]:
            n = MakeNode().typed().name(name).labels({"rack": rack, "zone": zone})
            await cp.api.create(n.capacity(size).allocatable(size).obj())
            await eventually(lambda name=name: name in sched.nodes.store)
    elif what in ("assigned", "pods"):
        for name, target, cpu in step[1]:
            b = MakePod().typed().name(name).namespace("default")
            if what == "assigned":
                b.node(target)
            else:
                b.pod_group_name(target)
            b.container("c", "image", requests={"cpu": cpu})
            await cp.api.create(b.obj())
    elif what == "group":
        name, min_count = step[1], step[2]
        topology = {"topology": [{"key": step[3] if len(step) > 3 else "rack"}]}
        group = scheduling_pod_group(
            name, "default", min_count=min_count, schedulingConstraints=topology
        )
        await cp.api.create(group)
        informer = sched.kind_informer(SCHEDULING_POD_GROUP)
        await eventually(lambda: f"default/{name}" in informer.store)
    elif what == "scheduled":

        async def bound() -> bool:
            return all(await _nodes(cp, step[1]))

        await eventually(bound, timeout=20)
    elif what == "on":
        assert set(await _nodes(cp, step[1])) <= step[2]
    elif what == "one":
        nodes = await _nodes(cp, step[1])
        assert len({sched.nodes.store[n].metadata.labels[step[2]] for n in nodes}) == 1
    elif what == "unschedulable":

        async def refused() -> bool:
            return all([await _unschedulable(cp, p) for p in step[1]])

        await eventually(refused, timeout=20)
        assert await _nodes(cp, step[1]) == [""] * len(step[1])
    elif what == "delete":
        for name in step[1]:
            await cp.client.delete(PODS, name, "default", grace_period_seconds=0)
    else:  # pragma: no cover - a typo in the table
        raise AssertionError(what)


@pytest.mark.parametrize("steps", list(SCENARIOS.values()), ids=list(SCENARIOS))
async def test_topology_aware_scheduling_with_gang_policy(
    plane: tuple[ControlPlane, Any, Any], steps: list[tuple[Any, ...]]
) -> None:
    cp, sched, _ = plane
    for step in steps:
        await _run_step(cp, sched, step)
