"""DataItems of pod groups and of the research measures (measure/dataitems.py): upstream's
pod-group histograms beside its default set, a test case's own metricsCollectorConfig read
as upstream's collector reads it (an item per metric and combination of listed label
values), and the research measures of results.json as items."""

from __future__ import annotations

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from kubera.experiment.measure import dataitems as di
from kubera.experiment.measure.histograms import parse_histograms
from kubera.experiment.measure.model import MetricsSnapshots, RunResult, Window
from services.scheduler.metrics import PodGroupMetrics, SchedulerMetrics

ATTEMPT = "scheduler_podgroup_scheduling_attempt_duration_seconds"
ALGORITHM = "scheduler_podgroup_scheduling_algorithm_duration_seconds"


def _exposition() -> str:
    """A scheduler's /metrics after two scheduled gangs (0.1 s, 0.3 s), one unschedulable
    (2 s) and three pod attempts (scheduled, 5 ms each)."""
    reg = CollectorRegistry()
    sm = SchedulerMetrics(reg)
    pg: PodGroupMetrics = sm.pod_groups()
    for seconds in (0.1, 0.3):
        pg.observe_attempt("scheduled", "default-scheduler", seconds)
        pg.observe_algorithm("default-scheduler", seconds / 10)
    pg.observe_attempt("unschedulable", "default-scheduler", 2.0)
    for _ in range(3):
        sm.observe_attempt("scheduled", "default-scheduler", 0.005)
    return generate_latest(reg).decode()


def _run(**kw: object) -> RunResult:
    run = RunResult(id="PG/10Nodes", test_case="PG", workload="10Nodes", **kw)  # type: ignore[arg-type]
    run.collected = [Window(start=0.0, end=10.0, name="gang-0")]
    run.scheduler_metrics = [
        MetricsSnapshots(start={}, end={"scheduler-0": _exposition()}, window="gang-0")
    ]
    return run


def _items(run: RunResult, metric: str) -> list[di.DataItem]:
    return [i for i in di.run_items(run) if i.metric == metric]


def test_pod_group_histograms_are_items_by_result_beside_upstreams_default_set() -> None:
    run = _run()
    by_result = {i.labels["result"]: i for i in _items(run, ATTEMPT)}
    assert set(by_result) == {"scheduled", "unschedulable"}
    assert by_result["scheduled"].data["Average"] == pytest.approx(200.0)  # ms
    assert by_result["unschedulable"].data["Average"] == pytest.approx(2000.0)
    assert by_result["scheduled"].labels["Name"] == "PG/10Nodes/gang-0"
    (algorithm,) = _items(run, ALGORITHM)
    assert algorithm.data["Average"] == pytest.approx(20.0)
    assert _items(run, "scheduler_scheduling_attempt_duration_seconds")


def test_a_metrics_collector_config_collects_exactly_what_it_names() -> None:
    config = {
        "metrics": {
            ATTEMPT: [{"label": "result", "values": ["scheduled", "error"]}],
            ALGORITHM: None,
        }
    }
    run = _run(metrics_collector_config=config)
    items = [i for i in di.run_items(run) if i.metric.startswith("scheduler_")]
    # "error" has no samples: no item, as upstream; nothing of the default set is collected
    assert sorted((i.metric, i.labels.get("result", "")) for i in items) == [
        (ALGORITHM, ""),
        (ATTEMPT, "scheduled"),
    ]


def test_the_collector_config_is_read_as_go_decodes_it_and_combines_label_values() -> None:
    raw = {
        "Metrics": {
            "m": [
                {"Label": "a", "Values": ["1", "2"]},
                {"label": "b", "values": ["x", "y"]},
            ],
            "n": None,
        }
    }
    config = di.collector_config(raw)
    assert config is not None
    assert sorted(tuple(sorted(c.items())) for c in config["m"]) == [
        (("a", "1"), ("b", "x")),
        (("a", "1"), ("b", "y")),
        (("a", "2"), ("b", "x")),
        (("a", "2"), ("b", "y")),
    ]
    assert config["n"] == [{}]
    assert di.collector_config(None) is None


def test_a_selector_aggregates_over_the_labels_it_does_not_name() -> None:
    hist = parse_histograms(_exposition())
    item = di.aggregate_item(hist, ATTEMPT, {}, {"Name": "x"})
    assert item is not None
    assert item.data["Average"] == pytest.approx((0.1 + 0.3 + 2.0) / 3 * 1000)
    assert di.aggregate_item(hist, ATTEMPT, {"result": "error"}, {}) is None


def test_research_measures_become_items() -> None:
    run = _run()
    run.research = {
        "nodes": 3,
        "pendingPods": 2,
        "fragmentation": {
            "cpu": {"free": 5.5, "stranded": 3.0, "strandedShare": 0.545455},
            "hugepages-2Mi": {"free": 0.0, "stranded": 0.0, "strandedShare": 0.0},
        },
        "unusableDevices": {
            "nvidia.com/gpu": {"free": 6.0, "unusable": 4.0, "unusableShare": 0.666667}
        },
        "unusableDRADevices": {"x": {"free": 3.0, "unusable": 1.0, "unusableShare": 0.333333}},
        "queueDrainSeconds": 1.75,
    }
    items = di.research_items(run)
    assert [(i.metric, i.labels.get("Resource") or i.labels.get("Driver")) for i in items] == [
        ("kubera_fragmentation", "cpu"),  # no free hugepages: no item
        ("kubera_unusable_devices", "nvidia.com/gpu"),
        ("kubera_unusable_devices", "x"),
        ("kubera_queue_drain", None),
    ]
    assert items[0].data == {"Free": 5.5, "Stranded": 3.0, "StrandedShare": 0.545455}
    assert items[-1].data == {"Value": 1.75}


def test_results_json_round_trips_the_new_fields() -> None:
    run = _run(metrics_collector_config={"metrics": {"m": None}})
    run.research = {"nodes": 1, "queueDrainSeconds": None}
    back = RunResult.from_json(run.to_json())
    assert back.research == run.research
    assert back.metrics_collector_config == run.metrics_collector_config
    assert (
        "metrics_collector_config" not in RunResult(id="a", test_case="a", workload="a").to_json()
    )
