"""results.json round-trips every field; the output directory holds the files it promises."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from kubera.experiment.measure.model import VERSION, ExperimentResult, RunResult, slug
from kubera.experiment.output import results
from tests.experiment.builders import make_experiment, make_run


def test_json_round_trip_is_exact() -> None:
    exp = make_experiment(make_run(), make_run("SchedulingBasic/500Nodes/schedulers=2"))
    data = exp.to_json()
    again = ExperimentResult.from_json(json.loads(json.dumps(data)))
    assert again == exp
    assert again.to_json() == data


def test_json_follows_the_schema_names() -> None:
    run = make_run().to_json()
    assert set(run) == {
        "id", "test_case", "workload", "params", "labels", "sweep", "threshold",
        "threshold_metric", "cluster", "t0", "duration", "phases", "collected", "series",
        "latency", "attempts", "replicas", "leaders", "faults", "scheduler_metrics", "check",
        "error", "research",
    }  # fmt: skip
    assert run["attempts"] == {"1": 90, "2": 10}
    assert run["leaders"][1]["end"] is None
    assert run["faults"][0]["duration"] is None
    assert make_experiment().to_json()["version"] == VERSION


def test_a_threshold_selector_round_trips_and_is_omitted_when_empty() -> None:
    assert "threshold_selector" not in make_run().to_json()
    run = make_run(threshold_selector={"name": "X", "labels": {"a": "b"}, "expectLower": True})
    assert RunResult.from_json(json.loads(json.dumps(run.to_json()))) == run


def test_a_minimal_run_reads_with_defaults() -> None:
    run = RunResult.from_json({"id": "A/b", "test_case": "A", "workload": "b"})
    assert run.threshold_metric == "SchedulingThroughput"
    assert run.check is None and run.scheduler_metrics == [] and run.series == {}
    assert run.name == "A/b"


def test_per_window_snapshots_and_warnings_round_trip() -> None:
    run = make_run(warnings=["churn[2]: 3 creates failed, the last: boom"])
    data = json.loads(json.dumps(run.to_json()))
    assert data["scheduler_metrics"][0]["window"] == "namespace-1"
    assert set(data["scheduler_metrics"][0]["end"]) == {"scheduler-0"}
    assert RunResult.from_json(data) == run
    assert "warnings" not in make_run().to_json()


def test_the_old_single_snapshot_shape_still_reads() -> None:
    data = make_run().to_json()
    data["scheduler_metrics"] = {"start": "a 1\n", "end": "a 2\n"}
    (m,) = RunResult.from_json(data).scheduler_metrics
    assert (m.window, m.start, m.end) == ("", {"scheduler": "a 1\n"}, {"scheduler": "a 2\n"})
    data["scheduler_metrics"] = None
    assert RunResult.from_json(data).scheduler_metrics == []


def test_an_unknown_version_is_refused() -> None:
    with pytest.raises(ValueError, match="v0"):
        ExperimentResult.from_json({"version": "v0", "runs": []})


@pytest.mark.parametrize(
    ("run_id", "expected"),
    [
        ("SchedulingBasic/500Nodes", "SchedulingBasic_500Nodes"),
        ("A/b/schedulers=2", "A_b_schedulers=2"),
        ("../../etc/passwd", "etc_passwd"),
        ("<script>", "script"),
        ("///", "run"),
    ],
)
def test_slug_is_a_safe_file_name(run_id: str, expected: str) -> None:
    assert slug(run_id) == expected


def test_write_then_load(tmp_path: Path) -> None:
    exp = make_experiment(make_run(), make_run("A/b"), make_run("A_b"))
    results.write(tmp_path, exp)
    assert results.load(tmp_path) == exp
    assert results.load(tmp_path / "results.json") == exp
    names = sorted(p.name for p in (tmp_path / "series").iterdir())
    assert names == ["A_b-2.csv", "A_b.csv", "SchedulingBasic_500Nodes.csv"]


def test_series_csv_has_one_column_per_series(tmp_path: Path) -> None:
    run = make_run()
    run.series["short"] = [1.5]
    results.write(tmp_path, make_experiment(run))
    with (tmp_path / "series" / "SchedulingBasic_500Nodes.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 20
    assert rows[0]["t"] == "0" and rows[5]["bound"] == "10"
    assert rows[0]["short"] == "1.5" and rows[1]["short"] == ""
    assert rows[0]["cpu:apiserver"] == "0.8"
