"""GangScheduling end to end in process: the apiserver on the in-memory store, a scheduler
whose profile enables GangScheduling, Nodes as objects, a Workload whose pod group is a gang
of three (every Bind the scheduler sends is recorded).

What users see: a gang of which only two pods fit waits at Permit, and when its attempt's
deadline (upstream's fixed 5 minutes, shortened here as upstream's own integration test
shortens DefaultSchedulingTimeoutDuration) passes, both waiting pods are rejected together
and none is bound; once room appears, the whole gang binds."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.scheduler.config.load import load_config
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
    items, _ = await cp.client.list(PODS, namespace="default")
    assert [p.metadata.name for p in items if p.spec.node_name] == []

    await _node(cp, sched, "n2", "4")

    def all_bound() -> Any:
        pods = sched.pods.store.values()
        bound = {p.metadata.name for p in pods if p.spec.node_name}
        return bound if len(bound) == 3 else None

    assert await eventually(all_bound, timeout=30) == {"g0", "g1", "g2"}
    assert sorted(rec.bind_calls) == ["g0", "g1", "g2"]  # each bound once, together
