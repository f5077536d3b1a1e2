"""The collector's arithmetic (kubera/experiment/measure/measures.py), fed by hand."""

from __future__ import annotations

import math

import pytest

from kubera.experiment.measure.measures import (
    Counter,
    CpuMeter,
    PodTimeline,
    RateMeter,
    Series,
    Terms,
    bucket_counts,
    samples,
    total,
)


def test_pod_latency_counts_from_the_send_not_from_the_watch() -> None:
    tl = PodTimeline()
    tl.sent(["ns/a"], 1.0)
    tl.observe("u1", "ns/a", "", "Pending", 1.2)
    tl.observe("u1", "ns/a", "node-1", "Pending", 1.5)
    tl.observe("u1", "ns/a", "node-1", "Running", 3.0)
    assert tl.latencies() == {"scheduling": [0.5], "startup": [2.0]}


def test_a_pod_nobody_sent_is_created_when_first_seen() -> None:
    tl = PodTimeline()
    tl.observe("u1", "ns/rs-x", "", "", 4.0)
    tl.observe("u1", "ns/rs-x", "n", "", 4.25)
    assert tl.latencies()["scheduling"] == [0.25]


def test_a_recreated_name_takes_its_own_send() -> None:
    tl = PodTimeline()
    tl.sent(["ns/a"], 1.0)
    tl.observe("old", "ns/a", "n", "", 1.5)
    tl.sent(["ns/a"], 5.0)
    tl.observe("new", "ns/a", "", "", 5.1)
    tl.observe("new", "ns/a", "n", "", 5.3)
    assert sorted(tl.latencies()["scheduling"]) == [pytest.approx(0.3), pytest.approx(0.5)]


def test_bound_and_running_count_once_per_pod() -> None:
    tl = PodTimeline()
    for t in (1.0, 2.0, 3.0):
        tl.observe("u", "ns/a", "n", "Running", t)
    assert (tl.bound_count, tl.running_count) == (1, 1)
    assert tl.pods["u"].bound == 1.0


@pytest.mark.parametrize(
    ("events", "expected_bound"),
    [
        ([(0.2, "a"), (0.9, "b"), (1.0, "c"), (1.5, "d")], [0, 3, 1]),
        ([(0.0, "a")], [1, 0, 0]),  # tick 0 holds what happened by the start
        ([(2.01, "a"), (7.5, "b")], [0, 0, 2]),  # after the last tick: the last second
    ],
)
def test_per_second_counts_the_second_ending_at_each_tick(
    events: list[tuple[float, str]], expected_bound: list[int]
) -> None:
    tl = PodTimeline()
    for t, name in events:
        tl.observe(name, f"ns/{name}", "n", "", t)
    assert tl.per_second(3)["bound"] == expected_bound


def test_series_backfills_late_columns_and_zeroes_vanished_ones() -> None:
    s = Series()
    s.tick(0, {"a": 1})
    s.tick(1, {"a": 2, "b": 5})
    s.tick(2, {"b": 6})
    assert s.columns == {"a": [1, 2, 0], "b": [0, 5, 6]}
    assert len(s) == 3


@pytest.mark.parametrize(
    ("values", "increase"),
    [
        ([0, 5, 9], 9),
        ([0, 5, 2, 4], 9),  # restart after 5: 2 new, then +2
        ([3, 3, 3], 3),  # a fresh cluster's counter: its first value is an increase too
    ],
)
def test_counter_increase_survives_restarts(values: list[float], increase: float) -> None:
    c = Counter()
    for v in values:
        c.observe(v)
    assert c.increase == increase


def test_counter_with_a_baseline_ignores_its_first_value() -> None:
    c = Counter(last=None)
    for v in (10, 12):
        c.observe(v)
    assert c.increase == 2


PROM = """\
# HELP scheduler_pending_pods Number of pending pods
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 3.0
scheduler_pending_pods{queue="backoff"} 1.0
scheduler_pending_pods{queue="unschedulable"} 0.0
scheduler_schedule_attempts_total{profile="default-scheduler",result="scheduled"} 40.0
scheduler_schedule_attempts_total{profile="other",result="scheduled"} 2.0
scheduler_schedule_attempts_total{profile="default-scheduler",result="unschedulable"} 7.0
python_gc_objects_collected_total{generation="0"} 123.0
scheduler_pod_scheduling_attempts_bucket{le="1.0"} 30.0
scheduler_pod_scheduling_attempts_bucket{le="2.0"} 38.0
scheduler_pod_scheduling_attempts_bucket{le="4.0"} 42.0
scheduler_pod_scheduling_attempts_bucket{le="+Inf"} 42.0
"""


def test_samples_keep_only_the_prefixes_asked_for() -> None:
    found = samples(PROM, ("scheduler_",))
    assert all(s.name.startswith("scheduler_") for s in found)
    assert total(found, "scheduler_pending_pods", queue="active") == 3
    assert total(found, "scheduler_schedule_attempts_total", result="scheduled") == 42
    assert total(found, "scheduler_schedule_attempts_total") == 49


def test_bucket_counts_from_cumulative_buckets() -> None:
    found = samples(PROM, ("scheduler_pod_scheduling_attempts_bucket",))
    cumulative = {float(s.labels["le"]): s.value for s in found}
    assert bucket_counts(cumulative) == {1: 30, 2: 8, 4: 4}
    assert bucket_counts({1.0: 1, math.inf: 3}) == {1: 1, 2: 2}


def test_cpu_meter_is_cores_between_samples_and_restarts_with_a_new_pid() -> None:
    m = CpuMeter()
    assert m.sample("apiserver", 10, 0.0, 5.0) == 0.0
    assert m.sample("apiserver", 10, 2.0, 6.0) == pytest.approx(0.5)
    assert m.sample("apiserver", 11, 3.0, 0.2) == 0.0  # restarted: no interval yet
    assert m.sample("apiserver", 11, 4.0, 1.2) == pytest.approx(1.0)


def test_rate_meter_is_the_increase_per_second() -> None:
    r = RateMeter()
    assert r.sample(0.0, 100) == 0.0
    assert r.sample(0.5, 150) == pytest.approx(100.0)
    assert r.sample(1.5, 140) == 0.0  # went back (a new etcd): no rate


def test_terms_open_on_a_new_holder_and_close_on_a_gap() -> None:
    terms = Terms()
    terms.observe("scheduler", ("a", 5), 0.0)
    terms.observe("scheduler", ("a", 5), 1.0)
    terms.observe("scheduler", None, 2.0)
    terms.observe("scheduler", ("b", 9), 3.0)
    terms.observe("scheduler", ("b", 12), 4.0)  # same identity, new term (re-elected)
    got = [(t.identity, t.token, t.start, t.end) for t in terms.terms]
    assert got == [("a", 5, 0.0, 2.0), ("b", 9, 3.0, 4.0), ("b", 12, 4.0, None)]


def test_a_window_counts_only_its_namespaces_and_labels() -> None:
    tl = PodTimeline()
    tl.observe("a", "measured/a", "n", "", 0.5, {"app": "x"})
    tl.observe("b", "measured/b", "n", "", 1.5, {"app": "y"})
    tl.observe("c", "other/c", "n", "", 1.5, {"app": "x"})
    tl.observe("d", "measured/d", "", "", 1.5, {"app": "x"})  # not bound
    assert tl.bound_per_second(3, ["measured"], {}) == [0, 1, 1]
    assert tl.bound_per_second(3, ["measured"], {"app": "x"}) == [0, 1, 0]
    assert tl.bound_per_second(3, [], {"app": "x"}) == [0, 1, 1]


def test_a_shared_state_replica_counts_its_lost_pods_and_busy_seconds() -> None:
    from kubera.experiment.measure.collect import SCRAPED, Collector, Replica
    from kubera.experiment.measure.measures import Counter, samples
    from kubera.launch.context import Context

    collector = Collector(Context(apiserver="", etcd=""), t0=0.0)
    rep = collector.replicas["id-0"] = Replica("scheduler-0", "id-0", "", Counter(), Counter(), {})

    def text(binds: int, alloc: int, pod: int, useful: float, wasted: float) -> str:
        p = "kubera_scheduler_shared_state"
        return (
            f"{p}_binds_total {binds}\n"
            f'{p}_conflicts_total{{reason="allocation"}} {alloc}\n'
            f'{p}_conflicts_total{{reason="pod"}} {pod}\n'
            f'{p}_busy_seconds_total{{work="useful"}} {useful}\n'
            f'{p}_busy_seconds_total{{work="wasted"}} {wasted}\n'
        )

    collector._count(rep, samples(text(5, 1, 1, 0.5, 0.1), SCRAPED))
    collector._count(rep, samples(text(9, 2, 3, 1.25, 0.4), SCRAPED))
    assert collector.replica_stats() == [("scheduler-0", 9, 5)]
    assert collector.omega_stats() == {"scheduler-0": (3, 1.25, 0.4)}


def test_a_replica_counts_its_preemption_attempts_and_victims() -> None:
    from kubera.experiment.measure.collect import SCRAPED, Collector, Replica
    from kubera.experiment.measure.measures import Counter, samples
    from kubera.launch.context import Context

    collector = Collector(Context(apiserver="", etcd=""), t0=0.0)
    rep = collector.replicas["id-0"] = Replica("scheduler-0", "id-0", "", Counter(), Counter(), {})
    for attempts, victims in ((2, 3), (5, 9)):
        text = (
            f"scheduler_preemption_attempts_total {attempts}\n"
            f"scheduler_preemption_victims_count {attempts}\n"
            f"scheduler_preemption_victims_sum {victims}\n"
        )
        collector._count(rep, samples(text, SCRAPED))
    assert collector.preemption_stats() == {"scheduler-0": (5, 9)}


@pytest.mark.parametrize(
    ("field", "group"),
    [
        ("pod_group_name", "trainers"),  # spec.schedulingGroup: the PodGroup's name
        ("workload_ref", "w/pg/r1"),  # spec.workloadRef: workload/podGroup/replicaKey
    ],
)
def test_a_pods_pod_group_joins_its_gang_whichever_api_names_it(field: str, group: str) -> None:
    from kubera.experiment.measure.collect import Collector
    from kubera.experiment.measure.measures import SCHEDULING_GROUP_KEY
    from kubera.launch.context import Context
    from tests.builders import MakePod

    collector = Collector(Context(apiserver="", etcd=""), t0=0.0)
    for i in range(2):
        p = MakePod().name(f"p{i}").namespace("ns").uid(f"u{i}")
        if field == "pod_group_name":
            p.pod_group_name("trainers")
        else:
            p.workload_ref("w", "pg", "r1")
        pod = p.obj()
        collector._observe(pod, 1.0 + i)
        pod.spec.node_name = "n1"
        collector._observe(pod, 3.0 + i)
    assert {p.labels[SCHEDULING_GROUP_KEY] for p in collector.pods.pods.values()} == {group}
    (gang,) = collector.pods.gangs()
    assert (gang.key, gang.members, gang.last_bound) == (f"ns/{group}", 2, 4.0)
