"""The scheduler's FailedScheduling reports: bounded (a storm of failures is a queue, not
a storm of writes), ordered (a pod's condition after its event) and skipped when the pod
already has that PodScheduled condition (upstream updatePod)."""

from __future__ import annotations

import asyncio
import json

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock, rfc3339
from services.scheduler.failure_report import FailureReporter, scheduled_false_conditions
from tests.client.test_events import FakeClient


class ReportClient(FakeClient):
    def __init__(self) -> None:
        super().__init__()
        self.order: list[str] = []
        self.conditions: dict[str, list[dict]] = {}

    async def create(self, e: core_pb2.Event) -> core_pb2.Event:
        out = await super().create(e)
        self.order.append(f"event {e.involved_object.name}")
        return out

    async def patch(self, kind, name, merge_patch, *, namespace="", status=False):
        if kind.kind != "Pod":
            return await super().patch(kind, name, merge_patch, namespace=namespace)
        self.calls.append("condition")
        await self._enter()
        self.order.append(f"condition {name}")
        self.conditions[name] = json.loads(merge_patch)["status"]["conditions"]
        return core_pb2.Pod()


def pending_pod(name: str, *conditions: core_pb2.PodCondition) -> core_pb2.Pod:
    p = core_pb2.Pod(metadata={"name": name, "namespace": "default", "uid": f"u-{name}"})
    p.status.conditions.extend(conditions)
    return p


async def test_a_storm_is_written_with_bounded_concurrency_event_first() -> None:
    client = ReportClient()
    rep = FailureReporter(client, FakeClock(), "sched-1", writers=2)  # type: ignore[arg-type]
    for i in range(200):
        await rep.report("default-scheduler", pending_pod(f"p{i}"), "0/0 nodes", "unschedulable")
    await rep.flush()
    assert len(client.conditions) == 200 and len(client.events) == 200
    assert client.max_inflight <= 3  # one event writer and two condition writers
    for i in range(200):
        assert client.order.index(f"event p{i}") < client.order.index(f"condition p{i}")
    await rep.close()


@pytest.mark.parametrize(
    ("existing", "writes_condition"),
    [
        (None, True),
        (("False", "Unschedulable", "0/0 nodes"), False),  # unchanged: not written
        (("False", "Unschedulable", "0/1 nodes"), True),  # another message
        (("False", "SchedulerError", "0/0 nodes"), True),  # another reason
        (("True", "", ""), True),
    ],
)
async def test_an_unchanged_condition_is_not_written(existing, writes_condition: bool) -> None:
    client = ReportClient()
    rep = FailureReporter(client, FakeClock(), "sched-1")  # type: ignore[arg-type]
    conds = []
    if existing is not None:
        status, reason, message = existing
        conds.append(
            core_pb2.PodCondition(
                type="PodScheduled", status=status, reason=reason, message=message
            )
        )
    await rep.report("default-scheduler", pending_pod("p", *conds), "0/0 nodes", "unschedulable")
    await rep.flush()
    assert ("p" in client.conditions) is writes_condition
    assert len(client.events) == 1  # the event is recorded either way
    await rep.close()


def test_the_transition_time_is_kept_while_the_status_stays_false() -> None:
    before = core_pb2.PodCondition(
        type="PodScheduled",
        status="False",
        reason="Unschedulable",
        message="a",
        last_transition_time="2026-01-01T00:00:00Z",
    )
    other = core_pb2.PodCondition(type="Ready", status="False", last_transition_time="t0")
    out = scheduled_false_conditions(pending_pod("p", other, before), "Unschedulable", "b", "now")
    assert out == [
        {
            "type": "Ready",
            "status": "False",
            "reason": "",
            "message": "",
            "lastTransitionTime": "t0",
        },
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "b",
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        },
    ]
    out = scheduled_false_conditions(pending_pod("p"), "Unschedulable", "b", "now")
    assert out[-1]["lastTransitionTime"] == "now"


async def test_a_newer_report_of_a_queued_pod_replaces_it() -> None:
    client = ReportClient()
    client.gate = asyncio.Event()
    rep = FailureReporter(client, FakeClock(), "sched-1", writers=1)  # type: ignore[arg-type]
    await rep.report("default-scheduler", pending_pod("a"), "m1", "unschedulable")
    await rep.report("default-scheduler", pending_pod("b"), "m1", "unschedulable")
    await rep.report("default-scheduler", pending_pod("b"), "m2", "unschedulable")
    assert rep.pending == 2
    client.gate.set()
    await rep.flush()
    assert client.conditions["b"][-1]["message"] == "m2"
    assert client.order.count("condition b") == 1
    await rep.close()


async def test_the_event_and_the_condition_are_stamped_on_the_cluster_clock() -> None:
    """Under the time scale the scheduler paces on the wall clock but writes the cluster's
    (simulated) time, as every other writer of these objects does (services/clock.py)."""
    client = ReportClient()
    wall, cluster = FakeClock(start=1_000.0), FakeClock(start=1_000_000.0)
    rep = FailureReporter(client, wall, "sched-1", cluster_clock=cluster)  # type: ignore[arg-type]
    await rep.report("default-scheduler", pending_pod("p"), "0/0 nodes", "unschedulable")
    await rep.flush()
    [cond] = client.conditions["p"]
    assert cond["lastTransitionTime"] == rfc3339(1_000_000.0)
    [event] = client.events.values()
    assert rfc3339(1_000_000.0) in (event.last_timestamp, event.event_time)
    await rep.close()
