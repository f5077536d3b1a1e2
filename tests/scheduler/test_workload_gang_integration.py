"""GangScheduling end to end in process: the apiserver on the in-memory store, a scheduler
whose profile enables GangScheduling, Nodes as objects, a Workload whose pod group is a gang
of three (every Bind the scheduler sends is recorded).

What users see: a gang of which only two pods fit waits at Permit, and when its attempt's
deadline (upstream's fixed 5 minutes, shortened here as upstream's own integration test
shortens DefaultSchedulingTimeoutDuration) passes, both waiting pods are rejected together
and none is bound; once room appears, the whole gang binds. Then upstream 1.35's
test/integration/scheduler/gang TestGangScheduling cases, as a step table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.scheduler.config.load import load_config
from services.scheduler.metrics import QUEUE_GATED
from services.scheduler.options import SchedulerOptions
from services.scheduler.plugins.gangscheduling import workloadmanager
from tests.builders import MakeNode, MakePod, workload
from tests.harness import ControlPlane, control_plane
from tests.scheduler.test_gang_integration import RecordingClient
from tests.waiting import eventually

pytestmark = pytest.mark.integration
PODS = BY_KIND["Pod"]
TIMEOUT = 3.0
CONFIG = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - plugins:
      multiPoint:
        enabled: [{name: GangScheduling}]
"""


@pytest.fixture
async def plane(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[ControlPlane, Any, Any]]:
    monkeypatch.setattr(workloadmanager, "DEFAULT_SCHEDULING_TIMEOUT", TIMEOUT)
    async with control_plane() as cp:
        rec = cp.new_client(RecordingClient)
        options = SchedulerOptions(component_config=load_config(CONFIG), seed=7)
        sched = cp.scheduler(options, client=rec)
        await eventually(lambda: sched.pods.synced.is_set())
        yield cp, sched, rec


async def _node(cp: ControlPlane, sched: Any, name: str, cpu: str) -> None:
    size = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    n = MakeNode().typed().name(name).label("kubernetes.io/hostname", name)
    await cp.api.create(n.allocatable(size).capacity(size).obj())
    await eventually(lambda: name in sched.nodes.store)


async def _member(cp: ControlPlane, name: str, cpu: str) -> None:
    p = MakePod().typed().name(name).namespace("default").workload_ref("w", "workers")
    p.container("c", "i", requests={"cpu": cpu})
    await cp.api.create(p.obj())


async def _message(cp: ControlPlane, name: str) -> str:
    p: core_pb2.Pod = await cp.client.get(PODS, name, "default")
    for c in p.status.conditions:
        if c.type == "PodScheduled" and c.status == "False":
            return str(c.message)
    return ""


async def test_a_gang_that_only_partly_fits_times_out_whole_and_binds_once_room_appears(
    plane: tuple[ControlPlane, Any, Any],
) -> None:
    cp, sched, rec = plane
    await _node(cp, sched, "n1", "4")
    await cp.client.create(workload("w", workers=3))
    await eventually(lambda: "default/w" in sched.kind_informers["Workload"].store)
    for i in range(3):
        await _member(cp, f"g{i}", "2")  # two fit on n1, the third nowhere

    waiting = sched.frameworks["default-scheduler"].waiting_pods
    await eventually(lambda: len(waiting) == 2, timeout=20)
    await eventually(lambda: len(waiting) == 0, timeout=TIMEOUT + 20)

    async def both_timed_out() -> bool:
        msgs = [await _message(cp, n) for n in ("g0", "g1", "g2")]
        timed_out = [m for m in msgs if "rejected due to timeout after waiting" in m]
        return len(timed_out) == 2 and all(msgs)

    await eventually(both_timed_out, timeout=20)
    assert rec.bind_calls == []
    # One pod-group attempt, however many members waited (podgroup_attempts.py).
    assert _pod_group_attempts(sched) == {"unschedulable": 1.0}
    items, _ = await cp.client.list(PODS, namespace="default")
    assert [p.metadata.name for p in items if p.spec.node_name] == []

    await _node(cp, sched, "n2", "4")

    def all_bound() -> Any:
        pods = sched.pods.store.values()
        bound = {p.metadata.name for p in pods if p.spec.node_name}
        return bound if len(bound) == 3 else None

    assert await eventually(all_bound, timeout=30) == {"g0", "g1", "g2"}
    assert sorted(rec.bind_calls) == ["g0", "g1", "g2"]  # each bound once, together
    assert _pod_group_attempts(sched) == {"unschedulable": 1.0, "scheduled": 1.0}


def _pod_group_attempts(sched: Any) -> dict[str, float]:
    """scheduler_podgroup_schedule_attempts_total by result (those counted at all)."""
    out = {}
    for result in ("scheduled", "unschedulable", "error"):
        labels = {"result": result, "profile": "default-scheduler", "type": "podgroup"}
        v = sched.metrics.registry.get_sample_value(
            "scheduler_podgroup_schedule_attempts_total", labels
        )
        if v:
            out[result] = v
    return out


# ------------------------------------------- upstream test/integration/scheduler/gang
# TestGangScheduling (1.35): one node of 4 CPUs, a Workload with the gang pod group "pg" of
# minCount 3, pods p1..p3 of 1 CPU and a blocker of 2 CPUs; each case is a list of steps.

Step = tuple[str, Any]


async def _pod(cp: ControlPlane, name: str, cpu: str, gang: bool) -> None:
    p = MakePod().typed().name(name).namespace("default")
    if gang:
        p.workload_ref("workload", "pg")
    p.container("image", "i", requests={"cpu": cpu})
    if not gang:
        p.spec({"terminationGracePeriodSeconds": 0})
    await cp.api.create(p.obj())


def _in_queue(sched: Any, where: str, names: list[str]) -> bool:
    held = {p.metadata.name for p in sched.queue.pending_pods()[where]}
    return set(names) <= held


def _scheduled(sched: Any, names: list[str]) -> bool:
    bound = {p.metadata.name for p in sched.pods.store.values() if p.spec.node_name}
    return set(names) <= bound


GANG_CASES: dict[str, list[Step]] = {
    "gang schedules when workload and resources are available": [
        ("create workload", None),
        ("create pods", ["p1", "p2", "p3"]),
        ("wait scheduled", ["p1", "p2", "p3"]),
    ],
    "gang waits for quorum to start, then schedules": [
        ("create workload", None),
        ("create pods", ["p1", "p2"]),
        ("wait gated", ["p1", "p2"]),
        ("create pods", ["p3"]),
        ("wait scheduled", ["p1", "p2", "p3"]),
    ],
    "gang waits for workload, then for resources, then schedules": [
        ("create pods", ["blocker"]),
        ("wait scheduled", ["blocker"]),
        ("create pods", ["p1", "p2", "p3"]),
        ("wait gated", ["p1", "p2", "p3"]),
        ("create workload", None),
        ("wait unschedulable", ["p1", "p2", "p3"]),
        ("delete pods", ["blocker"]),
        ("wait scheduled", ["p1", "p2", "p3"]),
    ],
}


@pytest.mark.parametrize("steps", list(GANG_CASES.values()), ids=list(GANG_CASES))
async def test_gang_scheduling_steps(
    plane: tuple[ControlPlane, Any, Any], steps: list[Step]
) -> None:
    cp, sched, rec = plane
    await _node(cp, sched, "node", "4")
    for what, names in steps:
        if what == "create workload":
            await cp.client.create(workload("workload", pg=3))
        elif what == "create pods":
            for n in names:
                await _pod(cp, n, "2" if n == "blocker" else "1", gang=n != "blocker")
        elif what == "delete pods":
            for n in names:
                await cp.client.delete(PODS, n, "default", grace_period_seconds=0)
        elif what == "wait gated":
            await eventually(lambda ns=names: _in_queue(sched, QUEUE_GATED, ns), timeout=20)
        elif what == "wait unschedulable":

            async def refused(ns: list[str] = names) -> bool:
                return all([await _message(cp, n) for n in ns])

            await eventually(refused, timeout=TIMEOUT + 20)
        else:
            await eventually(lambda ns=names: _scheduled(sched, ns), timeout=TIMEOUT + 20)
    gang_binds = [n for n in rec.bind_calls if n != "blocker"]
    assert len(gang_binds) == len(set(gang_binds))  # each gang pod bound at most once
