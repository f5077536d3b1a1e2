"""DataItems as scheduler_perf computes them: throughput samples, histogram percentiles from the
difference of two snapshots, kubera's own items and upstream's threshold rule."""

from __future__ import annotations

import json
import math

import pytest

from kubera.experiment.measure import dataitems as di
from kubera.experiment.measure import histograms
from kubera.experiment.measure.model import MetricsSnapshots, ReplicaStats, Window
from kubera.experiment.measure.verdict import summary
from kubera.experiment.measure.verdict import threshold_verdict as verdict_of
from tests.experiment.builders import (
    SCHEDULER_END,
    SCHEDULER_START,
    attempt_durations,
    make_experiment,
    make_run,
)


def by_metric(items: list[di.DataItem], metric: str) -> list[di.DataItem]:
    return [i for i in items if i.metric == metric]


@pytest.mark.parametrize(
    ("bound", "expected"),
    [
        # The first tick with pods is only a baseline; then 10, 20, 30 pods/s.
        ([5, 10, 20, 30], [10.0, 20.0, 30.0]),
        # Ticks before the first pod are ignored; trailing empty ticks record nothing.
        ([0, 0, 4, 6, 6, 0, 0], [6.0, 6.0]),
        # An empty tick in the middle: the next pods spread over both intervals, twice.
        ([1, 10, 0, 8, 5], [10.0, 4.0, 4.0, 5.0]),
        # Never a second tick with pods: no samples.
        ([0, 3, 0, 0], []),
    ],
)
def test_throughput_samples_follow_the_upstream_collector(
    bound: list[float], expected: list[float]
) -> None:
    t = [float(i) for i in range(len(bound))]  # bound[i]: pods bound in [i, i + 1)
    assert di.throughput_samples(t, bound, Window(start=0.0, end=100.0)) == expected


def test_throughput_samples_only_inside_the_window() -> None:
    t = [float(i) for i in range(10)]
    bound = [100.0] * 10
    # ticks 3..6 inside (2, 6] see seconds [2, 3) .. [5, 6): a baseline, then 3 samples.
    assert di.throughput_samples(t, bound, Window(start=2.0, end=6.0)) == [100.0] * 3


def test_upstream_percentile_is_the_ceil_index() -> None:
    values = [float(v) for v in range(1, 11)]  # 1..10
    assert di.upstream_percentile(values, 50) == 5.0
    assert di.upstream_percentile(values, 90) == 9.0
    assert di.upstream_percentile(values, 95) == 10.0
    assert di.upstream_percentile(values, 99) == 10.0
    assert math.isnan(di.upstream_percentile([], 50))


def test_scheduling_throughput_item_of_a_known_series() -> None:
    # 1 s ticks; bound 2 (baseline), then 4, 0, 12, 1, 3 → samples 4, 6, 6, 1, 3.
    bound = [0.0, 2.0, 4.0, 0.0, 12.0, 1.0, 3.0, 0.0]
    run = make_run(
        series={"t": [float(i) for i in range(len(bound))], "bound": bound},
        collected=[Window(start=0.0, end=10.0, name="namespace-2")],
        scheduler_metrics=[],
    )
    (item,) = by_metric(di.run_items(run), di.THROUGHPUT)
    assert item.unit == "pods/s"
    assert item.labels == {"Metric": "SchedulingThroughput", "Name": f"{run.id}/namespace-2"}
    # sorted samples 1, 3, 4, 6, 6
    assert item.data == {
        "Average": 4.0,
        "Perc50": 4.0,
        "Perc90": 6.0,
        "Perc95": 6.0,
        "Perc99": 6.0,
    }


def test_one_throughput_item_per_window() -> None:
    run = make_run(
        collected=[Window(start=4.0, end=9.0, name="a"), Window(start=9.0, end=16.0, name="b")]
    )
    names = [i.labels["Name"] for i in by_metric(di.run_items(run), di.THROUGHPUT)]
    assert names == [f"{run.id}/a", f"{run.id}/b"]


def test_a_windows_throughput_counts_only_its_own_pods() -> None:
    # All pods: 10 per second; the window's namespaces: 4 per second (its bound:<name>).
    t = [float(i) for i in range(8)]
    run = make_run(
        series={"t": t, "bound": [10.0] * 8, "bound:mine": [4.0] * 8},
        collected=[Window(start=0.0, end=8.0, name="mine")],
        scheduler_metrics=[],
    )
    (item,) = by_metric(di.run_items(run), di.THROUGHPUT)
    assert item.data["Average"] == 4.0


def test_bucket_quantile_interpolates_as_prometheus() -> None:
    buckets = [(0.001, 0.0), (0.01, 50.0), (0.1, 100.0), (math.inf, 100.0)]
    assert di.bucket_quantile(0.5, buckets) == pytest.approx(0.01)
    assert di.bucket_quantile(0.9, buckets) == pytest.approx(0.082)
    # In the +Inf bucket: the highest finite bound.
    assert di.bucket_quantile(0.99, [(1.0, 1.0), (math.inf, 100.0)]) == 1.0
    assert math.isnan(di.bucket_quantile(0.5, [(1.0, 1.0)]))
    assert math.isnan(di.bucket_quantile(0.5, [(1.0, 0.0), (math.inf, 0.0)]))


def test_histogram_items_from_the_snapshot_difference() -> None:
    items = di.run_items(make_run())
    (item,) = by_metric(items, "scheduler_scheduling_attempt_duration_seconds")
    # the 10 observations already there at the start are not counted
    assert item.unit == "ms"
    assert item.labels["result"] == "scheduled" and "profile" not in item.labels
    assert item.data["Average"] == pytest.approx(30.0)
    assert item.data["Perc50"] == pytest.approx(10.0)
    assert item.data["Perc90"] == pytest.approx(82.0)
    assert item.data["Perc99"] == pytest.approx(98.2)
    assert not by_metric(items, "scheduler_plugin_execution_duration_seconds")


EXTENSION_POINTS = """\
# TYPE scheduler_framework_extension_point_duration_seconds histogram
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",status="Success",profile="p1",le="0.001"} 3.0
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",status="Success",profile="p1",le="+Inf"} 4.0
scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",status="Success",profile="p1"} 4.0
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",status="Success",profile="p1"} 0.004
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",status="Unschedulable",profile="p1",le="0.001"} 1.0
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Filter",status="Unschedulable",profile="p1",le="+Inf"} 4.0
scheduler_framework_extension_point_duration_seconds_count{extension_point="Filter",status="Unschedulable",profile="p1"} 4.0
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Filter",status="Unschedulable",profile="p1"} 0.012
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Score",status="Success",profile="p1",le="0.001"} 2.0
scheduler_framework_extension_point_duration_seconds_bucket{extension_point="Score",status="Success",profile="p1",le="+Inf"} 2.0
scheduler_framework_extension_point_duration_seconds_count{extension_point="Score",status="Success",profile="p1"} 2.0
scheduler_framework_extension_point_duration_seconds_sum{extension_point="Score",status="Success",profile="p1"} 0.001
"""


def test_extension_point_items_aggregate_over_status_and_profile() -> None:
    run = make_run(scheduler_metrics=[MetricsSnapshots(end={"scheduler-0": EXTENSION_POINTS})])
    items = by_metric(di.run_items(run), "scheduler_framework_extension_point_duration_seconds")
    assert [i.labels["extension_point"] for i in items] == ["Filter", "Score"]
    filt = items[0]
    assert filt.data["Average"] == pytest.approx(2.0)  # 16 ms over 8 observations
    assert filt.data["Perc50"] == pytest.approx(1.0)  # rank 4 of 8, all 4 in le=0.001


def test_a_restarted_series_counts_from_its_restart() -> None:
    diff = histograms.histogram_difference(SCHEDULER_END, SCHEDULER_START)  # end has fewer: a reset
    (series,) = diff["scheduler_scheduling_attempt_duration_seconds"].values()
    assert series.count == 10.0


def test_kubera_items() -> None:
    run = make_run(replicas=[ReplicaStats(name="s-1", binds=30, conflicts=10)])
    items = di.kubera_items(run)
    (conflict,) = by_metric(items, "kubera_conflict_fraction")
    assert conflict.labels["Replica"] == "s-1" and conflict.data["Value"] == 0.25
    (attempts,) = by_metric(items, "kubera_attempts_per_pod")
    assert attempts.data["Average"] == pytest.approx(1.1) and attempts.data["Perc95"] == 2.0
    (sched,) = by_metric(items, "kubera_scheduling_latency")
    assert sched.unit == "ms" and sched.data["Perc50"] == pytest.approx(500.0)
    terms = {
        i.labels["Component"]: i.data["Count"] for i in by_metric(items, "kubera_leader_terms")
    }
    assert terms == {"scheduler": 2.0, "controller-manager": 1.0}
    (gap,) = by_metric(items, "kubera_failover_gap")
    assert gap.data["Average"] == pytest.approx(1.5) and gap.unit == "s"
    cpu = {
        i.labels["Component"]: i.data["Value"]
        for i in by_metric(items, "kubera_cpu_seconds_per_pod")
    }
    assert cpu == {"apiserver": pytest.approx(0.16), "scheduler-0": pytest.approx(0.1)}
    (etcd,) = by_metric(items, "kubera_etcd_revision_rate")
    assert etcd.data["Average"] == 30.0


def test_data_items_json_fills_missing_labels_as_upstream() -> None:
    doc = di.data_items_json(make_experiment(make_run()))
    assert doc["version"] == "v1"
    keys = {frozenset(item["labels"]) for item in doc["dataItems"]}
    assert len(keys) == 1  # every item has every label
    thr = next(i for i in doc["dataItems"] if i["labels"]["Metric"] == "SchedulingThroughput")
    assert thr["labels"]["Replica"] == "not applicable"
    assert set(thr["data"]) == {"Average", "Perc50", "Perc90", "Perc95", "Perc99"}


@pytest.mark.parametrize(
    ("threshold", "selector", "ok"),
    [
        (5.0, None, True),  # 10 pods/s > 5
        (10.0, None, False),  # upstream wants strictly higher
        (50.0, None, False),
        (None, None, None),  # no threshold: passes, nothing compared
        (0.0, None, None),
        (20.0, {"name": "SchedulingThroughput", "expectLower": True}, True),
        (5.0, {"name": "kubera_no_such_metric"}, None),  # nothing matches: upstream passes
        (
            40.0,
            {
                "name": "scheduler_scheduling_attempt_duration_seconds",
                "labels": {"result": "scheduled"},
                "expectLower": True,
            },
            True,
        ),
    ],
)
def test_threshold_as_upstream(
    threshold: float | None, selector: dict[str, object] | None, ok: bool | None
) -> None:
    run = make_run(threshold=threshold)
    verdict = verdict_of(run, di.run_items(run), selector)
    assert verdict.ok is ok
    if ok is False:
        assert "expected SchedulingThroughput Average to be higher" in verdict.message


def test_summary_table_has_a_row_per_run() -> None:
    exp = make_experiment(make_run(), make_run("X/y", threshold=100.0))
    table = summary(exp)
    assert table.row_count == 2
    assert list(table.columns[0].cells) == ["SchedulingBasic/500Nodes", "X/y"]
    assert list(table.columns[9].cells) == ["pass (vs 5)", "FAIL (vs 100)"]
    assert list(table.columns[1].cells) == ["10.0", "10.0"]


def test_the_runs_own_selector_is_used() -> None:
    run = make_run(
        threshold=20.0,
        threshold_selector={
            "name": "SchedulingThroughput",
            "expectLower": True,
            "dataBucket": "Perc99",
        },
    )
    verdict = verdict_of(run, di.run_items(run))
    assert verdict.ok is True and verdict.value == 10.0
    run.threshold = 5.0
    verdict = verdict_of(run, di.run_items(run))
    assert verdict.ok is False
    assert "expected SchedulingThroughput Perc99 to be lower: got 10.000000" in verdict.message


def test_data_items_json_is_strict_json() -> None:
    # a histogram with only the +Inf bucket has no quantiles (NaN): they are left out
    only_inf = (
        "# TYPE scheduler_pod_scheduling_sli_duration_seconds histogram\n"
        'scheduler_pod_scheduling_sli_duration_seconds_bucket{le="+Inf"} 4.0\n'
        "scheduler_pod_scheduling_sli_duration_seconds_count 4.0\n"
        "scheduler_pod_scheduling_sli_duration_seconds_sum 2.0\n"
    )
    run = make_run(scheduler_metrics=[MetricsSnapshots(end={"scheduler-0": only_inf})])
    run.latency["scheduling"] = [float("nan"), 0.5]
    doc = di.data_items_json(make_experiment(run))
    json.dumps(doc, allow_nan=False)
    (sli,) = [
        i
        for i in doc["dataItems"]
        if i["labels"]["Metric"] == "scheduler_pod_scheduling_sli_duration_seconds"
    ]
    assert sli["data"] == {"Average": 500.0}


def attempts_item(items: list[di.DataItem]) -> di.DataItem:
    (item,) = by_metric(items, "scheduler_scheduling_attempt_duration_seconds")
    return item


def test_a_failover_inside_the_window_sums_both_processes() -> None:
    # scheduler-0 led at the window's start (10 observations before it) and was killed after
    # 40 more fast ones (its last scrape); scheduler-1 took over and observed 60 slow ones.
    # Its next term's registry (#1) was born in the window: it counts from zero.
    snaps = MetricsSnapshots(
        window="namespace-1",
        start={"scheduler-0": attempt_durations(10, 0), "scheduler-1": attempt_durations(0, 0)},
        end={
            "scheduler-0": attempt_durations(50, 0),
            "scheduler-1": attempt_durations(0, 50),
            "scheduler-1#1": attempt_durations(0, 10),
        },
    )
    item = attempts_item(di.run_items(make_run(scheduler_metrics=[snaps])))
    assert item.labels["Name"] == "SchedulingBasic/500Nodes/namespace-1"
    # 40 × 5 ms + 60 × 50 ms over 100 observations
    assert item.data["Average"] == pytest.approx(32.0)
    assert item.data["Perc50"] == pytest.approx(10 + 90 * 10 / 60)  # rank 50: 10th of 60 slow


def test_a_process_restarted_since_the_window_started_counts_from_zero() -> None:
    snaps = MetricsSnapshots(
        window="namespace-1",
        start={"scheduler-0": attempt_durations(100, 0)},
        end={"scheduler-0": attempt_durations(0, 4)},  # fewer than at the start: a reset
    )
    item = attempts_item(di.run_items(make_run(scheduler_metrics=[snaps])))
    assert item.data["Average"] == pytest.approx(50.0)


def test_each_window_has_its_own_histogram_items() -> None:
    run = make_run(
        collected=[Window(start=4.0, end=9.0, name="a"), Window(start=9.0, end=16.0, name="b")],
        scheduler_metrics=[
            MetricsSnapshots(window="a", end={"scheduler-0": attempt_durations(10, 0)}),
            MetricsSnapshots(
                window="b",
                start={"scheduler-0": attempt_durations(10, 0)},
                end={"scheduler-0": attempt_durations(10, 5)},
            ),
        ],
    )
    items = by_metric(di.run_items(run), "scheduler_scheduling_attempt_duration_seconds")
    assert [(i.labels["Name"], i.data["Average"]) for i in items] == [
        (f"{run.id}/a", pytest.approx(5.0)),
        (f"{run.id}/b", pytest.approx(50.0)),
    ]


def test_old_results_with_one_pair_of_snapshots_still_give_items() -> None:
    run = make_run(
        scheduler_metrics=MetricsSnapshots.read_all(
            {"start": SCHEDULER_START, "end": SCHEDULER_END}
        )
    )
    assert attempts_item(di.run_items(run)).labels["Name"] == f"{run.id}/namespace-1"


# The bench's own statistics (kubera/bench/report.py `windows`, `pct`, `collector_average`)
# were deleted as duplicates of these; their cases, on the surviving code:


def test_summarize_windows_and_percentiles() -> None:
    # report.pct's nearest rank is upstream_percentile's ceil index
    assert di.upstream_percentile([1.0, 1.0, 3.0], 50) == 1.0
    assert di.upstream_percentile([1.0, 1.0, 3.0], 90) == 3.0
    assert di.summarize([]) == {}
    s = di.summarize([3.0, 1.0, 2.0], extra=True)
    assert (s["Average"], s["Perc50"], s["Perc99"], s["Max"]) == (2.0, 2.0, 3.0, 3.0)


@pytest.mark.parametrize(
    ("windows", "average"),
    [
        pytest.param([], None, id="no pods: no sample"),
        pytest.param([0, 0, 5], None, id="pods in one window only: baseline, no sample"),
        pytest.param(
            [0, 2, 192, 157, 815],
            (192 + 157 + 815) / 3,
            id="first window with pods is the baseline",
        ),
        pytest.param(
            [4, 0, 8], 4.0, id="an empty window between: its interval shares the next rate"
        ),
    ],
)
def test_collector_average_is_upstreams_throughput_collector(
    windows: list[float], average: float | None
) -> None:
    t = [float(i) for i in range(len(windows))]
    samples = di.throughput_samples(t, windows, Window(start=0.0, end=100.0))
    assert di.summarize(samples).get("Average") == (
        None if average is None else pytest.approx(average)
    )


def test_measured_items_report_the_etcd_ratio_cpu_per_pod_and_the_model() -> None:
    from kubera.experiment.measure.model import MeasuredPhase, RunResult

    run = RunResult(
        id="Basic/w",
        test_case="Basic",
        workload="w",
        collected=[Window(start=1.0, end=6.0, name="namespace-1")],
        etcd_put_rate=4000.0,
        measured=[
            MeasuredPhase(window="init", pods=0, seconds=0.0),
            MeasuredPhase(
                window="namespace-1",
                pods=1000,
                seconds=4.0,
                cpu={"apiserver": 2.0, "scheduler-0": 3.0, "scheduler-1": None, "etcd": 1.0},
            ),
        ],
    )
    items = di.kubera_items(run)
    (etcd,) = by_metric(items, "kubera_etcd_put_rate")
    assert etcd.data == {"Value": 4000.0} and etcd.unit == "puts/s"
    (tp,) = by_metric(items, "kubera_measured_throughput")
    assert tp.labels["Name"] == "Basic/w/namespace-1"
    assert tp.data == {"Value": 250.0, "Pods": 1000.0, "Seconds": 4.0, "EtcdRatio": 250 / 4000}
    cpu = {
        i.labels["Component"]: i.data["Value"]
        for i in by_metric(items, "kubera_measured_cpu_per_pod")
    }
    assert cpu == {"apiserver": 0.002, "scheduler": 0.003, "etcd": 0.001}
    model = by_metric(items, "kubera_capacity_model")
    assert [i.labels["Machines"] for i in model] == ["1", "2", "4", "8"]
    # 6 ms/pod on 2 cores → 333/s on one machine; the scheduler's 3 ms caps 8 machines too
    assert model[0].data["Value"] == pytest.approx(2 / 0.006)
    assert model[3].labels["Bottleneck"] == "scheduler"
    # a run measured before these figures existed reports none of them
    assert not by_metric(di.kubera_items(make_run()), "kubera_measured_throughput")
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.measured == run.measured and back.etcd_put_rate == 4000.0
    assert "measured" not in make_run().to_json() and "etcd_put_rate" not in make_run().to_json()


def test_each_fault_is_timed_to_the_first_bind_of_the_next_term() -> None:
    from kubera.experiment.measure.model import Fault, LeaderTerm, RunResult, first_binds

    leaders = [
        LeaderTerm(component="scheduler", identity="a", start=0.0, end=5.2),
        LeaderTerm(component="scheduler", identity="b", start=5.2, end=None),
        LeaderTerm(component="controller-manager", identity="cm", start=0.0, end=None),
    ]
    faults = [
        Fault(t=3.0, kind="kill", target="a"),
        Fault(t=8.0, kind="restart-etcd", target="etcd"),
        Fault(t=20.0, kind="kill", target="b"),  # no later term, no later bind
    ]
    # 3.1: a bind of the deposed leader seen late; 5.5: the new term's first
    binds = [1.0, 3.1, 5.5, 8.4, 9.0]
    assert first_binds(faults, leaders, binds) == [2.5, pytest.approx(0.4), None]
    run = RunResult(
        id="F/w", test_case="F", workload="w", faults=faults, leaders=leaders,
        fault_first_bind=[2.5, 0.4, None],
    )  # fmt: skip
    items = {
        i.labels["Fault"]: i for i in by_metric(di.kubera_items(run), "kubera_fault_to_first_bind")
    }
    assert items["kill"].data["Count"] == 1.0 and items["kill"].data["Average"] == 2.5
    assert items["restart-etcd"].data["Max"] == pytest.approx(0.4)
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.fault_first_bind == [2.5, 0.4, None]


def test_each_leader_fault_is_timed_to_the_next_terms_start_and_an_apiserver_kill_to_its_first_write() -> (
    None
):
    from kubera.experiment.measure.model import Fault, LeaderTerm, RunResult, takeovers
    from kubera.experiment.output import figures

    leaders = [
        LeaderTerm(component="scheduler", identity="a", start=0.0, end=5.2),
        LeaderTerm(component="controller-manager", identity="cm", start=4.0, end=None),
        LeaderTerm(component="scheduler", identity="b", start=5.2, end=None),
    ]
    faults = [
        Fault(t=3.0, kind="kill", target="a"),  # the controller-manager's term is not its
        Fault(t=8.0, kind="kill-apiserver", target="apiserver"),
        Fault(t=20.0, kind="kill", target="b"),  # no later term
    ]
    assert takeovers(faults, leaders) == [pytest.approx(2.2), None, None]
    run = RunResult(
        id="F/w", test_case="F", workload="w", faults=faults, leaders=leaders,
        fault_takeover=[2.2, None, None], fault_first_write=[None, 1.5, None],
    )  # fmt: skip
    takeover = by_metric(di.kubera_items(run), "kubera_fault_to_takeover")
    assert [(i.labels["Fault"], i.data["Max"], i.data["Count"]) for i in takeover] == [
        ("kill", 2.2, 1.0)
    ]
    write = by_metric(di.kubera_items(run), "kubera_fault_to_first_write")
    assert [(i.labels["Fault"], i.data["Perc50"]) for i in write] == [("kill-apiserver", 1.5)]
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.fault_takeover == [2.2, None, None]
    assert back.fault_first_write == [None, 1.5, None]
    text = figures.render(run)
    assert "kill → takeover (the next leader term): p50 2.20s" in text
    assert "kill-apiserver → first write through the apiserver: p50 1.50s" in text
    assert "fault_takeover" not in RunResult(id="x", test_case="a", workload="b").to_json()


def test_shared_state_replicas_report_lost_pods_busy_seconds_and_the_queue_wait() -> None:
    from kubera.experiment.measure.model import MetricsSnapshots, ReplicaStats, RunResult
    from kubera.experiment.output import figures

    wait = "kubera_scheduler_shared_state_queue_wait_seconds"
    end = (
        f'{wait}_bucket{{le="0.5"}} 2\n{wait}_bucket{{le="1.0"}} 4\n'
        f'{wait}_bucket{{le="+Inf"}} 4\n{wait}_count 4\n{wait}_sum 2.0\n'
    )
    run = RunResult(
        id="S/w", test_case="S", workload="w",
        replicas=[
            ReplicaStats(name="scheduler-0", binds=8, conflicts=2, lost=1,
                         useful_busy_s=1.5, wasted_busy_s=0.25),
            ReplicaStats(name="scheduler-1", binds=4, conflicts=0),
        ],
        scheduler_metrics=[MetricsSnapshots(window="", start={}, end={"scheduler-0": end})],
    )  # fmt: skip
    items = di.run_items(run)
    busy = by_metric(items, "kubera_busy_seconds")
    assert [(i.labels["Replica"], i.data) for i in busy] == [
        ("scheduler-0", {"Useful": 1.5, "Wasted": 0.25})
    ]
    conflict = by_metric(items, "kubera_conflict_fraction")
    assert [i.data["Lost"] for i in conflict] == [1.0, 0.0]
    [queue] = by_metric(items, wait)
    assert queue.data["Perc50"] == pytest.approx(500.0)
    assert queue.data["Average"] == pytest.approx(500.0)
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.replicas == run.replicas
    old = {"name": "scheduler-0", "binds": 1, "conflicts": 0}  # results.json before
    assert ReplicaStats.from_json(old) == ReplicaStats(name="scheduler-0", binds=1, conflicts=0)
    text = figures.render(run)
    assert (
        "scheduler-0: 8 binds, 2 conflicts (0.200), 1 lost; busy useful 1.50s, wasted 0.25s" in text
    )
    assert "scheduler-1:" not in text
    assert "queue wait (shared-state, histogram): p50 0.50s" in text


def test_preemption_attempts_and_victims_and_churn_counts_are_reported() -> None:
    from kubera.experiment.measure.model import ReplicaStats, RunResult
    from kubera.experiment.output import figures

    run = RunResult(
        id="P/w", test_case="P", workload="w",
        replicas=[
            ReplicaStats(name="scheduler-0", binds=5, conflicts=0,
                         preemption_attempts=3, preemption_victims=4),
            ReplicaStats(name="scheduler-1", binds=5, conflicts=0, preemption_attempts=1),
        ],
        churn={"churn[3]": {"created": 10, "deleted": 8}},
    )  # fmt: skip
    items = di.kubera_items(run)
    [pre] = by_metric(items, "kubera_preemption")
    assert pre.data == {"Attempts": 4.0, "Victims": 4.0}
    [churn] = by_metric(items, "kubera_churn")
    assert (churn.labels["Op"], churn.data) == ("churn[3]", {"Created": 10.0, "Deleted": 8.0})
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.replicas == run.replicas and back.churn == run.churn
    text = figures.render(run)
    assert "preemption: 4 attempts, 4 victims" in text
    assert "churn (churn[3]): 10 created, 8 deleted" in text
    plain = RunResult(id="x", test_case="a", workload="b")
    assert not by_metric(di.kubera_items(plain), "kubera_preemption")
    assert "churn" not in plain.to_json()


def test_batched_pods_are_reported_when_the_scheduler_asked_for_batches() -> None:
    from kubera.experiment.measure.model import ReplicaStats, RunResult
    from kubera.experiment.output import figures

    run = RunResult(
        id="B/w", test_case="B", workload="w",
        replicas=[
            ReplicaStats(name="scheduler-0", binds=10, conflicts=0,
                         batched_pods=9, unbatched_pods=1),
        ],
    )  # fmt: skip
    [batch] = by_metric(di.kubera_items(run), "kubera_batching")
    assert batch.data == {"HintUsed": 9.0, "NoHint": 1.0}
    back = RunResult.from_json(json.loads(json.dumps(run.to_json())))
    assert back.replicas == run.replicas
    assert "batching: 9 pods placed from a batch, 1 without" in figures.render(run)
    plain = RunResult(id="x", test_case="a", workload="b")
    assert not by_metric(di.kubera_items(plain), "kubera_batching")
