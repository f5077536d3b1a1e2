"""The scheduler's FailedScheduling reports: bounded (a storm of failures is a queue, not
a storm of writes), ordered (a pod's condition after its event) and skipped when the pod
already has that PodScheduled condition (upstream updatePod)."""

from __future__ import annotations

import asyncio
import json

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock, rfc3339
from services.scheduler.dispatcher import APIDispatcher
from services.scheduler.failure_report import (
    DISPATCH_LIMITS,
    FailureReporter,
    scheduled_false_conditions,
)
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


def reporter(client: ReportClient, mode: str, **kwargs) -> FailureReporter:
    """A reporter writing on its own ("writers") or through a started API dispatcher
    ("dispatcher", SchedulerAsyncAPICalls) with the scheduler's limits."""
    dispatcher = None
    if mode == "dispatcher":
        dispatcher = APIDispatcher(client, limits=DISPATCH_LIMITS)
        dispatcher.start()
    return FailureReporter(
        client,  # type: ignore[arg-type]
        kwargs.pop("clock", FakeClock()),
        "sched-1",
        dispatcher=dispatcher,
        **kwargs,
    )


async def close(rep: FailureReporter) -> None:
    if rep.dispatcher is not None:
        await rep.dispatcher.close()
    await rep.close()


MODES = pytest.mark.parametrize("mode", ["writers", "dispatcher"])


@MODES
async def test_a_storm_is_written_with_bounded_concurrency_event_first(mode: str) -> None:
    client = ReportClient()
    rep = reporter(client, mode, writers=2)
    for i in range(200):
        await rep.report("default-scheduler", pending_pod(f"p{i}"), "0/0 nodes", "unschedulable")
    await rep.flush()
    assert len(client.conditions) == 200 and len(client.events) == 200
    assert client.max_inflight <= 3  # one event writer and two condition writers
    for i in range(200):
        assert client.order.index(f"event p{i}") < client.order.index(f"condition p{i}")
    await close(rep)


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
@MODES
async def test_an_unchanged_condition_is_not_written(
    existing, writes_condition: bool, mode: str
) -> None:
    client = ReportClient()
    rep = reporter(client, mode)
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
    assert rep.conditions_unchanged == (0 if writes_condition else 1)
    await close(rep)


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


async def test_through_the_dispatcher_a_newer_report_of_a_pending_pod_merges_into_it() -> None:
    client = ReportClient()
    dispatcher = APIDispatcher(client, limits=DISPATCH_LIMITS)
    rep = FailureReporter(client, FakeClock(), "sched-1", dispatcher=dispatcher)  # type: ignore[arg-type]
    await rep.report("default-scheduler", pending_pod("a"), "m1", "unschedulable")
    await rep.report("default-scheduler", pending_pod("b"), "m1", "unschedulable")
    await rep.report("default-scheduler", pending_pod("b"), "m2", "unschedulable")
    assert dispatcher.pending == 4  # a's event and condition, b's newest event and condition
    dispatcher.start()
    await rep.flush()
    assert client.conditions["b"][-1]["message"] == "m2"
    assert client.order.count("condition b") == 1
    assert [e.message for e in client.events.values() if e.involved_object.name == "b"] == ["m2"]
    await close(rep)


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
