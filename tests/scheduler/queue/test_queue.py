"""Scheduling queue state machine on a FakeClock: ordering, backoff, moveRequestCycle,
event filters with queueing hints, gating, the leftover flush and the queue metrics."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
)
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.queue.events import (
    EVENT_ASSIGNED_POD_ADD,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    event_label,
    event_matches,
)
from services.scheduler.queue.heap import Heap
from services.scheduler.queue.scheduling_queue import SchedulingQueue
from tests.builders import MakePod

NODE_ADD = ClusterEvent("Node", ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent("Node", ActionType.DELETE, "NodeDelete")
NODE_TAINT = ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT, "NodeUpdateNodeTaint")
FIT = "NodeResourcesFit"
AFFINITY = "InterPodAffinity"
GATES = "SchedulingGates"


# ------------------------------------------------------------------------------ helpers
def make_pod(
    name: str,
    *,
    priority: int | None = None,
    gates: Iterable[str] = (),
    labels: dict[str, str] | None = None,
    affinity_to: dict[str, str] | None = None,
    namespace: str = "default",
) -> core_pb2.Pod:
    p = MakePod().name(name).namespace(namespace).uid(f"uid-{namespace}-{name}")
    p.labels(labels or {}).scheduler_name("default-scheduler")
    if priority is not None:
        p.priority(priority)
    p.scheduling_gates(gates)
    if affinity_to:
        term = {
            "labelSelector": {"matchLabels": affinity_to},
            "topologyKey": "kubernetes.io/hostname",
        }
        p.affinity({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
    return p.obj()


def priority_less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
    """PrioritySort's order: higher priority first, then earlier timestamp."""
    pa = a.pod.spec.priority if a.pod.spec.HasField("priority") else 0
    pb = b.pod.spec.priority if b.pod.spec.HasField("priority") else 0
    return pa > pb or (pa == pb and a.timestamp < b.timestamp)


class FakeGates:
    """A PreEnqueue plugin gating pods that still have scheduling gates."""

    name = GATES

    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        if pod.spec.scheduling_gates:
            return Status.unresolvable("waiting for scheduling gates", plugin=GATES)
        return Status.success()


def gates_hint(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    ok = isinstance(new, core_pb2.Pod) and new.metadata.uid == pod.metadata.uid
    return QueueingHint.QUEUE if ok and not new.spec.scheduling_gates else QueueingHint.SKIP


GATES_EVENTS = [
    ClusterEventWithHint(
        ClusterEvent("Pod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), gates_hint
    )
]


def make_queue(
    clock: FakeClock,
    *,
    hints: dict[str, list[ClusterEventWithHint]] | None = None,
    metrics: SchedulerMetrics | None = None,
    **kw: Any,
) -> SchedulingQueue:
    return SchedulingQueue(
        less=priority_less,
        pre_enqueue={"default-scheduler": [FakeGates()]},
        hints={GATES: GATES_EVENTS, **(hints or {})},
        clock=clock,
        metrics=metrics,
        **kw,
    )


def where(q: SchedulingQueue, name: str) -> str:
    """Which queue holds the pod ("" when none)."""
    for queue, pods in q.pending_pods().items():
        if any(p.metadata.name == name for p in pods):
            return queue
    return ""


async def pop(q: SchedulingQueue) -> QueuedPodInfo:
    qpi = await asyncio.wait_for(q.pop(), timeout=1.0)  # guards a hang; never actually waits
    assert qpi is not None
    return qpi


async def fail(q: SchedulingQueue, *plugins: str, error: bool = False) -> QueuedPodInfo:
    """Pop the head and report its attempt as rejected by `plugins`."""
    qpi = await pop(q)
    qpi.unschedulable_plugins = set(plugins)
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle, error=error)
    return qpi


async def settle(times: int = 5) -> None:
    for _ in range(times):
        await asyncio.sleep(0)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# ------------------------------------------------------------------------------- ordering
@pytest.mark.parametrize(
    ("pods", "expected"),
    [
        # (name, priority, seconds after the previous add)
        ([("a", 0, 0), ("b", 10, 1), ("c", 10, 1), ("d", 0, 1)], ["b", "c", "a", "d"]),
        ([("low", None, 0), ("neg", -5, 1), ("high", 1000, 1)], ["high", "low", "neg"]),
        ([("x", 1, 0), ("y", 1, 0), ("z", 1, 0)], ["x", "y", "z"]),  # ties: FIFO
    ],
)
async def test_active_q_pops_higher_priority_first_then_earlier(
    clock: FakeClock, pods: list[tuple[str, int | None, float]], expected: list[str]
) -> None:
    q = make_queue(clock)
    for name, prio, delay in pods:
        clock.advance(delay)
        q.add(make_pod(name, priority=prio))
    assert [(await pop(q)).pod.metadata.name for _ in expected] == expected


async def test_pop_waits_for_a_pod_and_counts_attempts_and_cycles(clock: FakeClock) -> None:
    q = make_queue(clock)
    task = asyncio.create_task(q.pop())
    await settle()
    assert not task.done()
    q.add(make_pod("p"))
    qpi = await asyncio.wait_for(task, 1.0)
    assert qpi is not None
    assert (qpi.attempts, q.scheduling_cycle) == (1, 1)
    assert [p.metadata.name for p in q.in_flight_pods()] == ["p"]
    assert qpi.initial_attempt_timestamp == clock.now()
    q.done(qpi.pod_info.uid)
    assert q.in_flight_pods() == []


async def test_close_wakes_pop_which_returns_none(clock: FakeClock) -> None:
    q = make_queue(clock)
    task = asyncio.create_task(q.pop())
    await settle()
    q.close()
    assert await asyncio.wait_for(task, 1.0) is None
    q.add(make_pod("late"))
    assert await q.pop() is None


def test_heap_keeps_order_under_random_updates_and_removals() -> None:
    rng = random.Random(7)
    prio: dict[str, int] = {}

    def less(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return prio[a.key] < prio[b.key]

    heap = Heap(less)
    infos: dict[str, QueuedPodInfo] = {}
    for i in range(300):
        name = f"p{rng.randrange(120)}"
        key = f"default/{name}"
        op = rng.random()
        if op < 0.6:
            prio[key] = rng.randrange(50)
            infos[key] = infos.get(key) or QueuedPodInfo(PodInfo(make_pod(name)), float(i))
            heap.push(infos[key])
        elif op < 0.8 and key in heap:
            prio[key] = rng.randrange(50)
            heap.fix(key)
        else:
            heap.remove(key)
    expected = sorted(prio[q.key] for q in heap.list())
    got = [prio[heap.pop().key] for _ in range(len(heap))]
    assert got == expected


# -------------------------------------------------------------------------------- backoff
@pytest.mark.parametrize(
    ("initial", "maximum", "expected"),
    [
        (1.0, 10.0, [0, 1, 2, 4, 8, 10, 10]),
        (2.0, 5.0, [0, 2, 4, 5, 5]),
        (1.0, 1.0, [0, 1, 1, 1]),
    ],
)
def test_backoff_is_initial_doubled_per_attempt_capped_at_max(
    clock: FakeClock, initial: float, maximum: float, expected: list[float]
) -> None:
    q = make_queue(clock, initial_backoff=initial, max_backoff=maximum)
    assert [q.backoff_duration(n) for n in range(len(expected))] == expected


async def test_backoff_q_releases_a_pod_exactly_when_its_doubling_backoff_ends(
    clock: FakeClock,
) -> None:
    q = make_queue(clock)
    q.add(make_pod("p"))
    for backoff in [1, 2, 4, 8, 10, 10]:
        await fail(q, error=True)  # an Error always backs off
        assert where(q, "p") == "backoff"
        clock.advance(backoff - 0.5)
        q.flush_backoff_completed()
        assert where(q, "p") == "backoff", backoff
        clock.advance(0.5)
        q.flush_backoff_completed()
        assert where(q, "p") == "active", backoff


async def test_backoff_q_releases_pods_in_expiry_order(clock: FakeClock) -> None:
    q = make_queue(clock)
    q.add(make_pod("a"))
    await fail(q, error=True)
    clock.advance(1)
    q.flush_backoff_completed()
    await fail(q, error=True)  # a: second failure, 2 s from now
    q.add(make_pod("b"))
    await fail(q, error=True)  # b: first failure, 1 s from now
    clock.advance(1)
    q.flush_backoff_completed()
    assert (where(q, "a"), where(q, "b")) == ("backoff", "active")
    clock.advance(1)
    q.flush_backoff_completed()
    assert [(await pop(q)).pod.metadata.name for _ in range(2)] == ["b", "a"]


# ---------------------------------------------------------------------- moveRequestCycle
@pytest.mark.parametrize(
    ("when", "plugins", "expected"),
    [
        ("during the attempt", {FIT}, "backoff"),
        ("never", {FIT}, "unschedulable"),
        ("before the attempt", {FIT}, "unschedulable"),
        ("never", set(), "backoff"),  # Error: no rejector could ever wake it
    ],
)
async def test_failed_pod_goes_to_backoff_only_if_a_move_request_came_since_its_cycle(
    clock: FakeClock, when: str, plugins: set[str], expected: str
) -> None:
    q = make_queue(clock, hints={FIT: [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    if when == "before the attempt":
        q.move_all_to_active_or_backoff(NODE_ADD)
    qpi = await pop(q)
    cycle = q.scheduling_cycle
    if when == "during the attempt":
        q.move_all_to_active_or_backoff(NODE_ADD)
        assert q.move_request_cycle == cycle
    qpi.unschedulable_plugins = plugins
    assert q.add_unschedulable_if_not_present(qpi, cycle) == expected
    assert where(q, "p") == expected
    assert q.in_flight_pods() == []


async def test_an_event_nobody_registered_is_not_a_move_request(clock: FakeClock) -> None:
    q = make_queue(clock, hints={FIT: [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    qpi = await pop(q)
    q.move_all_to_active_or_backoff(NODE_DELETE)
    qpi.unschedulable_plugins = {FIT}
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle) == "unschedulable"


async def test_pod_updated_while_in_flight_backs_off_with_its_new_version(
    clock: FakeClock,
) -> None:
    q = make_queue(clock)
    old = make_pod("p")
    q.add(old)
    qpi = await pop(q)
    new = make_pod("p", labels={"tier": "web"})
    q.update(old, new)
    assert where(q, "p") == ""  # still in flight, not duplicated into activeQ
    qpi.unschedulable_plugins = {FIT}
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle) == "backoff"
    assert q.get("default/p") is qpi and qpi.pod.metadata.labels["tier"] == "web"


async def test_pod_deleted_while_in_flight_is_not_requeued(clock: FakeClock) -> None:
    q = make_queue(clock)
    pod = make_pod("p")
    q.add(pod)
    qpi = await pop(q)
    q.delete(pod)
    qpi.unschedulable_plugins = {FIT}
    assert q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle) == ""
    assert all(not pods for pods in q.pending_pods().values())


# ------------------------------------------------------------- events and queueing hints
def _raise(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("buggy hint")


def _only_node(name: str) -> Callable[[core_pb2.Pod, Any, Any], QueueingHint]:
    def hint(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
        return QueueingHint.QUEUE if new == name else QueueingHint.SKIP

    return hint


@pytest.mark.parametrize(
    ("registered", "rejector", "event", "new", "wait", "expected"),
    [
        ([ClusterEventWithHint(NODE_ADD)], FIT, NODE_ADD, None, 2.0, "active"),
        ([ClusterEventWithHint(NODE_ADD)], FIT, NODE_ADD, None, 0.0, "backoff"),
        ([ClusterEventWithHint(NODE_ADD)], FIT, NODE_DELETE, None, 2.0, "unschedulable"),
        ([ClusterEventWithHint(NODE_ADD)], AFFINITY, NODE_ADD, None, 2.0, "unschedulable"),
        (
            [ClusterEventWithHint(ClusterEvent("Node", ActionType.UPDATE))],
            FIT,
            NODE_TAINT,
            None,
            2.0,
            "active",
        ),
        (
            [ClusterEventWithHint(NODE_ADD, _only_node("n1"))],
            FIT,
            NODE_ADD,
            "n2",
            2.0,
            "unschedulable",
        ),
        ([ClusterEventWithHint(NODE_ADD, _only_node("n1"))], FIT, NODE_ADD, "n1", 2.0, "active"),
        ([ClusterEventWithHint(NODE_ADD, _raise)], FIT, NODE_ADD, None, 2.0, "active"),
    ],
    ids=[
        "matching-event-after-backoff",
        "matching-event-during-backoff",
        "other-action",
        "event-of-another-plugin",
        "update-covers-taint-update",
        "hint-says-skip",
        "hint-says-queue",
        "raising-hint-queues",
    ],
)
async def test_event_requeues_only_pods_a_rejecting_plugin_registered_it_for(
    clock: FakeClock,
    registered: list[ClusterEventWithHint],
    rejector: str,
    event: ClusterEvent,
    new: Any,
    wait: float,
    expected: str,
) -> None:
    q = make_queue(clock, hints={FIT: registered, AFFINITY: []})
    q.add(make_pod("p"))
    await fail(q, rejector)
    assert where(q, "p") == "unschedulable"
    clock.advance(wait)
    q.move_all_to_active_or_backoff(event, None, new)
    assert where(q, "p") == expected


async def test_precheck_limits_which_pods_an_event_moves(clock: FakeClock) -> None:
    q = make_queue(clock, hints={FIT: [ClusterEventWithHint(NODE_ADD)]})
    for name in ("a", "b"):
        q.add(make_pod(name))
        await fail(q, FIT)
    clock.advance(2)
    q.move_all_to_active_or_backoff(NODE_ADD, precheck=lambda pod: pod.metadata.name == "a")
    assert (where(q, "a"), where(q, "b")) == ("active", "unschedulable")


async def test_pending_plugin_queue_hint_skips_backoff(clock: FakeClock) -> None:
    q = make_queue(clock, hints={"DRA": [ClusterEventWithHint(NODE_ADD)]})
    q.add(make_pod("p"))
    qpi = await pop(q)
    qpi.pending_plugins = {"DRA"}
    q.add_unschedulable_if_not_present(qpi, q.scheduling_cycle)
    assert where(q, "p") == "unschedulable"
    q.move_all_to_active_or_backoff(NODE_ADD)  # no time passed: still inside its backoff
    assert where(q, "p") == "active"


@pytest.mark.parametrize(
    ("new_labels", "wait", "expected"),
    [
        ({"app": "web"}, 2.0, "active"),
        ({"app": "web"}, 0.0, "backoff"),
        (None, 2.0, "unschedulable"),  # status-only update: nothing could have changed
    ],
)
async def test_update_of_an_unschedulable_pod_requeues_it_when_spec_or_labels_change(
    clock: FakeClock, new_labels: dict[str, str] | None, wait: float, expected: str
) -> None:
    q = make_queue(clock)
    old = make_pod("p")
    q.add(old)
    await fail(q, FIT)
    clock.advance(wait)
    new = make_pod("p", labels=new_labels)
    new.metadata.resource_version = "42"
    new.status.phase = "Pending"
    q.update(old, new)
    assert where(q, "p") == expected
    entry = q.get("default/p")
    assert entry is not None and entry.pod.metadata.resource_version == "42"


async def test_update_in_active_q_reorders_by_the_new_priority(clock: FakeClock) -> None:
    q = make_queue(clock)
    q.add(make_pod("a", priority=10))
    q.add(make_pod("b", priority=1))
    q.update(make_pod("b", priority=1), make_pod("b", priority=100))
    assert (await pop(q)).pod.metadata.name == "b"


@pytest.mark.parametrize(
    ("assigned_labels", "expected"),
    [({"app": "db"}, "active"), ({"app": "web"}, "unschedulable")],
)
async def test_assigned_pod_added_moves_pods_whose_required_affinity_it_matches(
    clock: FakeClock, assigned_labels: dict[str, str], expected: str
) -> None:
    q = make_queue(
        clock, hints={AFFINITY: [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ALL))]}
    )
    q.add(make_pod("p", affinity_to={"app": "db"}))
    await fail(q, AFFINITY)
    clock.advance(2)
    assigned = make_pod("db-0", labels=assigned_labels)
    assigned.spec.node_name = "n1"
    q.assigned_pod_added(assigned)
    assert where(q, "p") == expected


async def test_assigned_pod_event_moves_pod_topology_spread_rejects_in_its_namespace(
    clock: FakeClock,
) -> None:
    spread = "PodTopologySpread"
    q = make_queue(
        clock, hints={spread: [ClusterEventWithHint(ClusterEvent("Pod", ActionType.ALL))]}
    )
    q.add(make_pod("same"))
    await fail(q, spread)
    q.add(make_pod("other", namespace="elsewhere"))
    await fail(q, spread)
    clock.advance(2)
    assigned = make_pod("x")
    assigned.spec.node_name = "n1"
    q.assigned_pod_added(assigned)
    assert (where(q, "same"), where(q, "other")) == ("active", "unschedulable")


# ----------------------------------------------------------------------------------- gating
async def test_gated_pod_stays_out_of_active_q_until_an_update_removes_its_gates(
    clock: FakeClock,
) -> None:
    metrics = SchedulerMetrics()
    q = make_queue(clock, metrics=metrics, hints={FIT: [ClusterEventWithHint(NODE_ADD)]})
    gated = make_pod("p", gates=["example.com/wait"])
    q.add(gated)
    assert where(q, "p") == "gated"
    assert _pending(metrics) == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    entry = q.get("default/p")
    assert entry is not None and entry.gating_plugin == GATES

    waiter = asyncio.create_task(q.pop())
    q.move_all_to_active_or_backoff(NODE_ADD)  # not an event of the gating plugin
    still = make_pod("p", gates=["example.com/wait"], labels={"x": "y"})
    q.update(gated, still)  # gates remain
    await settle()
    assert not waiter.done() and where(q, "p") == "gated"

    q.update(still, make_pod("p", labels={"x": "y"}))
    qpi = await asyncio.wait_for(waiter, 1.0)
    assert qpi is not None and qpi.pod.metadata.name == "p" and qpi.attempts == 1
    assert _pending(metrics) == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


async def test_gated_pod_is_released_by_its_gating_plugins_event(clock: FakeClock) -> None:
    q = make_queue(clock)
    gated = make_pod("p", gates=["g"])
    q.add(gated)
    ungated = make_pod("p")
    event = ClusterEvent("UnschedulablePod", ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    # The gate is still there in the stored pod, so PreEnqueue still gates it...
    q.move_all_to_active_or_backoff(event, gated, ungated)
    assert where(q, "p") == "gated"
    # ...until the stored version has lost its gates.
    q.update(gated, ungated)
    assert where(q, "p") == "active"


def test_leftover_flush_never_releases_gated_pods(clock: FakeClock) -> None:
    q = make_queue(clock)
    q.add(make_pod("p", gates=["g"]))
    clock.advance(3600)
    q.flush_unschedulable_leftover()
    assert where(q, "p") == "gated"


# ------------------------------------------------------------------------- leftover flush
async def test_leftover_flush_requeues_pods_unschedulable_for_more_than_five_minutes(
    clock: FakeClock,
) -> None:
    metrics = SchedulerMetrics()
    q = make_queue(clock, metrics=metrics)
    q.add(make_pod("p"))
    await fail(q, FIT)
    clock.advance(299)
    q.flush_unschedulable_leftover()
    assert where(q, "p") == "unschedulable"
    clock.advance(2)
    q.flush_unschedulable_leftover()
    assert where(q, "p") == "active"
    assert _incoming(metrics, "active", "UnschedulableTimeout") == 1


async def test_run_flushes_backoff_on_the_injected_clock_and_stops_on_close(
    clock: FakeClock,
) -> None:
    q = make_queue(clock)
    q.add(make_pod("p"))
    await fail(q, error=True)
    runner = asyncio.create_task(q.run())
    for _ in range(50):
        await asyncio.sleep(0)
        if where(q, "p") == "active":
            break
    assert where(q, "p") == "active"
    q.close()
    await asyncio.wait_for(runner, 1.0)


# --------------------------------------------------------------------------------- metrics
def _pending(m: SchedulerMetrics) -> dict[str, float | None]:
    return {
        queue: m.registry.get_sample_value("scheduler_pending_pods", {"queue": queue})
        for queue in ("active", "backoff", "unschedulable", "gated")
    }


def _incoming(m: SchedulerMetrics, queue: str, event: str) -> float | None:
    return m.registry.get_sample_value(
        "scheduler_queue_incoming_pods_total", {"queue": queue, "event": event}
    )


async def test_metrics_track_pending_pods_per_queue_and_incoming_pods_per_event(
    clock: FakeClock,
) -> None:
    metrics = SchedulerMetrics()
    q = make_queue(clock, metrics=metrics, hints={FIT: [ClusterEventWithHint(NODE_ADD)]})
    for name in ("a", "b", "c"):
        q.add(make_pod(name))
    q.add(make_pod("g", gates=["x"]))
    assert _pending(metrics) == {"active": 3, "backoff": 0, "unschedulable": 0, "gated": 1}
    await fail(q, FIT)
    await fail(q, error=True)
    assert _pending(metrics) == {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}
    clock.advance(5)
    q.move_all_to_active_or_backoff(NODE_ADD)
    q.flush_backoff_completed()
    assert _pending(metrics) == {"active": 3, "backoff": 0, "unschedulable": 0, "gated": 1}
    assert _incoming(metrics, "active", "UnschedulablePodAdd") == 3
    assert _incoming(metrics, "unschedulable", "UnschedulablePodAdd") == 1  # the gated pod
    assert _incoming(metrics, "unschedulable", "ScheduleAttemptFailure") == 1
    assert _incoming(metrics, "backoff", "ScheduleAttemptFailure") == 1
    assert _incoming(metrics, "active", "NodeAdd") == 1
    assert _incoming(metrics, "active", "BackoffComplete") == 1
    pre_enqueue = metrics.registry.get_sample_value(
        "scheduler_framework_extension_point_duration_seconds_count",
        {
            "extension_point": "PreEnqueue",
            "status": "UnschedulableAndUnresolvable",
            "profile": "default-scheduler",
        },
    )
    assert pre_enqueue == 1


def test_metrics_live_on_a_registry_per_scheduler_with_upstream_buckets() -> None:
    a, b = SchedulerMetrics(), SchedulerMetrics()  # no duplicate-registration error
    a.observe_attempt("scheduled", "default-scheduler", 0.003)
    assert (
        b.registry.get_sample_value(
            "scheduler_schedule_attempts_total",
            {"result": "scheduled", "profile": "default-scheduler"},
        )
        is None
    )
    assert (
        a.registry.get_sample_value(
            "scheduler_schedule_attempts_total",
            {"result": "scheduled", "profile": "default-scheduler"},
        )
        == 1
    )

    def bounds(metric: str) -> list[str]:
        fams = {f.name: f for f in a.registry.collect()}
        return [s.labels["le"] for s in fams[metric].samples if s.name.endswith("_bucket")]

    attempt = bounds("scheduler_scheduling_attempt_duration_seconds")
    assert len(attempt) == 16 and float(attempt[0]) == 0.001 and float(attempt[-2]) == 0.001 * 2**14
    a.framework_extension_point_duration_seconds.labels("Filter", "Success", "p").observe(0.01)
    ext = bounds("scheduler_framework_extension_point_duration_seconds")
    assert len(ext) == 13 and float(ext[0]) == 0.0001 and float(ext[-2]) == 0.0001 * 2**11


# ------------------------------------------------------------------------- event helpers
@pytest.mark.parametrize(
    ("registered", "incoming", "matches"),
    [
        (ClusterEvent("Pod", ActionType.UPDATE), EVENT_ASSIGNED_POD_ADD, False),
        (ClusterEvent("Pod", ActionType.ADD), EVENT_ASSIGNED_POD_ADD, True),
        (
            ClusterEvent("Pod", ActionType.UPDATE),
            ClusterEvent("UnschedulablePod", ActionType.UPDATE_POD_LABEL),
            True,
        ),
        (ClusterEvent("Node", ActionType.ADD), NODE_DELETE, False),
        (ClusterEvent("*", ActionType.ALL), NODE_DELETE, True),
        (ClusterEvent("Node", ActionType.ALL), EVENT_UNSCHEDULABLE_TIMEOUT, False),
    ],
)
def test_registered_pod_events_also_match_assigned_and_unschedulable_pods(
    registered: ClusterEvent, incoming: ClusterEvent, matches: bool
) -> None:
    assert event_matches(registered, incoming) is matches


@pytest.mark.parametrize(
    ("event", "label"),
    [
        (ClusterEvent("Node", ActionType.ADD), "NodeAdd"),
        (ClusterEvent("Node", ActionType.UPDATE_NODE_TAINT), "NodeUpdateNodeTaint"),
        (ClusterEvent("Node", ActionType.ADD, "Custom"), "Custom"),
    ],
)
def test_event_labels_spell_actions_as_upstream(event: ClusterEvent, label: str) -> None:
    assert event_label(event) == label


async def test_activate_moves_held_pods_to_active_q_and_regates_those_still_gated(
    clock: FakeClock,
) -> None:
    q = make_queue(clock)
    q.add(make_pod("u"))
    await fail(q, "SomePlugin")  # no move request since its cycle: unschedulable
    assert where(q, "u") == "unschedulable"
    q.add(make_pod("g", gates=["example.com/wait"]))
    q.activate([make_pod("u"), make_pod("g"), make_pod("unknown")])
    assert where(q, "u") == "active"
    assert where(q, "g") == "gated"  # PreEnqueue ran again and still refuses it
    assert where(q, "unknown") == ""
