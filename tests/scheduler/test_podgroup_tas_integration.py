"""A PodGroup's topology constraint end to end in process: the apiserver on the in-memory
store, a scheduler whose profile enables GangScheduling, Nodes as objects in two racks, a
gang PodGroup (minCount 3) that asks for one rack.

What users see: the group goes to the rack that holds all of it, even when another rack
comes first by name and holds its first pods (upstream's placement step weighs every
domain for the whole group; a rack fixed by the first placed pod would leave the gang
waiting at Permit for its 5-minute timeout), and its PodGroup reads
PodGroupInitiallyScheduled=True; a gang no rack holds binds nothing and reads False."""

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
