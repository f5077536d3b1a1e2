"""Pod-group attempts (services/scheduler/podgroup_attempts.py) and upstream's pod-group
series they feed (metrics.PodGroupMetrics): names, labels and buckets as upstream's
pkg/scheduler/metrics, and one attempt per gang quorum, by hand-timed steps on a fake clock.

Upstream's TestObservePodGroupScheduleAttemptAndLatency and TestPodGroupAlgorithmLatency
(pkg/scheduler/metrics) are the first two tests: each result counted once under its
profile and type, each observation one histogram sample."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.framework.status import Code, Status
from services.scheduler.metrics import (
    ENTITY_COMPOSITE_POD_GROUP,
    ENTITY_POD_GROUP,
    RESULT_WAITING_ON_PREEMPTION,
    PodGroupMetrics,
    SchedulerMetrics,
    exponential_buckets,
)
from services.scheduler.podgroup_attempts import PodGroupAttempts
from tests.builders import MakePod

GANG = "GangScheduling"
PROFILE = "default-scheduler"
ATTEMPTS = "scheduler_podgroup_schedule_attempts_total"
DURATION = "scheduler_podgroup_scheduling_attempt_duration_seconds"
ALGORITHM = "scheduler_podgroup_scheduling_algorithm_duration_seconds"


def _value(reg: CollectorRegistry, name: str, **labels: str) -> float:
    v = reg.get_sample_value(name, labels)
    return 0.0 if v is None else v


def test_each_result_is_counted_under_its_profile_and_type_as_upstream() -> None:
    reg = CollectorRegistry()
    m = PodGroupMetrics(reg)
    results = ("scheduled", "unschedulable", RESULT_WAITING_ON_PREEMPTION, "error")
    for result in results:
        for entity in (ENTITY_POD_GROUP, ENTITY_COMPOSITE_POD_GROUP):
            m.observe_attempt(result, "test-profile", 0.5, entity)
    for result in results:
        for entity in (ENTITY_POD_GROUP, ENTITY_COMPOSITE_POD_GROUP):
            labels = {"result": result, "profile": "test-profile", "type": entity}
            assert _value(reg, ATTEMPTS, **labels) == 1
            assert _value(reg, f"{DURATION}_count", **labels) == 1
    text = generate_latest(reg).decode()
    assert f"# TYPE {ATTEMPTS} counter" in text
    assert f"# TYPE {DURATION} histogram" in text


def test_the_algorithm_latency_is_one_sample_per_profile_and_type() -> None:
    reg = CollectorRegistry()
    m = PodGroupMetrics(reg)
    m.observe_algorithm("test-profile", 0.1, ENTITY_POD_GROUP)
    m.observe_algorithm("test-profile", 0.2, ENTITY_COMPOSITE_POD_GROUP)
    m.observe_algorithm("test-profile-2", 0.3, ENTITY_COMPOSITE_POD_GROUP)
    for profile, entity in (
        ("test-profile", ENTITY_POD_GROUP),
        ("test-profile", ENTITY_COMPOSITE_POD_GROUP),
        ("test-profile-2", ENTITY_COMPOSITE_POD_GROUP),
    ):
        assert _value(reg, f"{ALGORITHM}_count", profile=profile, type=entity) == 1


def test_the_buckets_are_upstreams_1ms_doubling_fifteen_times() -> None:
    reg = CollectorRegistry()
    m = PodGroupMetrics(reg)
    m.observe_attempt("scheduled", PROFILE, 0.0015)
    bounds = exponential_buckets(0.001, 2, 15)
    labels = {"result": "scheduled", "profile": PROFILE, "type": ENTITY_POD_GROUP}
    assert _value(reg, f"{DURATION}_bucket", le="0.001", **labels) == 0
    assert _value(reg, f"{DURATION}_bucket", le="0.002", **labels) == 1
    assert _value(reg, f"{DURATION}_bucket", le=str(bounds[-1]), **labels) == 1
    assert bounds[-1] == pytest.approx(16.384)


def test_a_preemption_counts_its_pdb_violations_and_observes_group_units_when_any() -> None:
    reg = CollectorRegistry()
    m = PodGroupMetrics(reg)
    m.observe_preemption(pdb_violations=2, pod_group_disruptions=0)
    m.observe_preemption(pdb_violations=1, pod_group_disruptions=3)
    pdb = "scheduler_preemption_pdb_violations_total"
    units = "scheduler_preemption_workload_disruptions"
    assert _value(reg, pdb, preemptor="pod") == 3
    assert _value(reg, f"{units}_count", preemptor="pod") == 1  # none observed for 0 units
    assert _value(reg, f"{units}_sum", preemptor="pod") == 3
    assert _value(reg, f"{units}_bucket", preemptor="pod", le="1024.0") == 1


def test_the_scheduler_metrics_register_the_series_once() -> None:
    sm = SchedulerMetrics()
    assert sm.pod_groups() is sm.pod_groups()


# ------------------------------------------------------------ attempts at the quorum


def _member(name: str, group: str = "g", *, workload: bool = False) -> core_pb2.Pod:
    p = MakePod().name(name).namespace("ns").uid(f"uid-{name}")
    if workload:
        p.workload_ref("w", group)
    else:
        p.pod_group_name(group)
    return p.obj()


@pytest.fixture
def tracked() -> tuple[PodGroupAttempts, FakeClock, CollectorRegistry]:
    reg = CollectorRegistry()
    clock = FakeClock()
    return PodGroupAttempts(PodGroupMetrics(reg), clock), clock, reg


def _count(reg: CollectorRegistry, result: str) -> float:
    return _value(reg, ATTEMPTS, result=result, profile=PROFILE, type=ENTITY_POD_GROUP)


def _sum(reg: CollectorRegistry, name: str, **labels: str) -> float:
    return _value(reg, f"{name}_sum", profile=PROFILE, type=ENTITY_POD_GROUP, **labels)


def _cycle(
    t: PodGroupAttempts, clock: FakeClock, pod: core_pb2.Pod, seconds: float, st: Status
) -> None:
    """One member's scheduling cycle of `seconds` ending in Permit's `st`."""
    start = clock.monotonic()
    clock.advance(seconds)
    t.permit(pod, PROFILE, start, st)


@pytest.mark.parametrize("workload", [False, True], ids=["PodGroup", "Workload"])
def test_a_gang_whose_quorum_is_reached_is_one_scheduled_attempt(
    tracked: tuple[PodGroupAttempts, FakeClock, CollectorRegistry], workload: bool
) -> None:
    t, clock, reg = tracked
    a, b, c = (_member(n, workload=workload) for n in "abc")
    _cycle(t, clock, a, 0.010, Status.wait(GANG))  # opens at 0, algorithm 10 ms
    clock.advance(0.100)  # other pods' cycles: not the group's algorithm
    _cycle(t, clock, b, 0.020, Status.wait(GANG))
    clock.advance(0.050)
    _cycle(t, clock, c, 0.030, Status.success())  # the quorum: closes at 0.210
    assert _count(reg, "scheduled") == 1
    assert _sum(reg, DURATION, result="scheduled") == pytest.approx(0.210)
    assert _sum(reg, ALGORITHM) == pytest.approx(0.060)
    assert t.open_attempts() == 0


def test_a_timed_out_gang_is_one_unschedulable_attempt_however_many_members_waited(
    tracked: tuple[PodGroupAttempts, FakeClock, CollectorRegistry],
) -> None:
    t, clock, reg = tracked
    a, b = _member("a"), _member("b")
    _cycle(t, clock, a, 0.010, Status.wait(GANG))
    _cycle(t, clock, b, 0.010, Status.wait(GANG))
    clock.advance(300.0)  # the deadline: both waiting members are rejected
    t.rejected("uid-a")
    t.rejected("uid-b")
    assert _count(reg, "unschedulable") == 1
    assert _sum(reg, DURATION, result="unschedulable") == pytest.approx(300.02)
    assert _count(reg, "scheduled") == 0


def test_a_rejection_left_over_from_an_old_attempt_does_not_close_the_new_one(
    tracked: tuple[PodGroupAttempts, FakeClock, CollectorRegistry],
) -> None:
    t, clock, reg = tracked
    a, b = _member("a"), _member("b")
    _cycle(t, clock, a, 0.010, Status.wait(GANG))
    _cycle(t, clock, b, 0.010, Status.wait(GANG))
    t.rejected("uid-a")  # the first attempt fails
    _cycle(t, clock, a, 0.010, Status.wait(GANG))  # a's retry opens the next one
    t.rejected("uid-b")  # b's rejection from the first attempt arrives late
    assert _count(reg, "unschedulable") == 1
    assert t.open_attempts() == 1


def test_a_gang_refused_at_permit_is_unschedulable_and_a_vanished_group_an_error(
    tracked: tuple[PodGroupAttempts, FakeClock, CollectorRegistry],
) -> None:
    t, clock, reg = tracked
    refused = Status(Code.UNSCHEDULABLE, ("minCount (3) cannot be satisfied",), GANG)
    _cycle(t, clock, _member("a"), 0.004, refused)  # no attempt open: one of its own
    assert _count(reg, "unschedulable") == 1
    assert _sum(reg, DURATION, result="unschedulable") == pytest.approx(0.004)
    gone = Status(Code.ERROR, ("pod group vanished",), GANG)
    _cycle(t, clock, _member("b", "h"), 0.001, Status.wait(GANG))
    _cycle(t, clock, _member("c", "h"), 0.001, gone)
    assert _count(reg, "error") == 1
    assert t.open_attempts() == 0


def test_pods_with_no_group_decision_are_not_attempts(
    tracked: tuple[PodGroupAttempts, FakeClock, CollectorRegistry],
) -> None:
    t, clock, reg = tracked
    _cycle(t, clock, MakePod().name("solo").namespace("ns").obj(), 0.01, Status.wait("X"))
    _cycle(t, clock, _member("basic"), 0.01, Status.success())  # basic group: Permit passes
    _cycle(t, clock, _member("a", "g2"), 0.01, Status.wait(GANG))
    # another Permit plugin refuses a member: the gang's attempt goes on
    _cycle(t, clock, _member("b", "g2"), 0.01, Status.unschedulable("no", plugin="Other"))
    for result in ("scheduled", "unschedulable", "error"):
        assert _count(reg, result) == 0
    assert t.open_attempts() == 1
