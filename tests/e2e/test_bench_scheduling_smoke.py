"""`kubera bench scheduling-basic`'s plumbing with tiny counts: a churning workload (the file
mixed-churn.yaml) runs twice on fresh clusters through the experiment runner, and the output
holds every figure the bench promises (the numbers themselves are not judged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubera.experiment.measure.dataitems import run_items
from kubera.experiment.measure.model import ExperimentResult
from tests.e2e.helpers import runs_on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_scheduling_reports_throughput_cpu_per_pod_and_the_model(
    tmp_path: Path, shared_ray: str
) -> None:
    out = tmp_path / "mixed"
    args = ["--workload", "mixed-churn", "--nodes", "5", "--pods", "20", "--repeat", "2"]
    k, on_ray = runs_on_ray(tmp_path / "home", shared_ray)
    r = k.run("bench", "scheduling-basic", *args, *on_ray, "--output", str(out), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for words in ("pods bound/s: avg", "raw etcd put rate", "CPU per pod", "capacity model"):
        assert words in r.stdout
    assert "median of 2 runs" in r.stdout
    result = ExperimentResult.from_json(json.loads((out / "results.json").read_text()))
    assert [run.workload for run in result.runs] == [
        "5000Nodes_10000Pods/run=1",
        "5000Nodes_10000Pods/run=2",
    ]
    for run in result.runs:
        assert run.error is None and run.threshold is None  # not upstream's 5,000-node shape
        assert run.etcd_put_rate and run.etcd_put_rate > 0
        (phase,) = run.measured
        assert phase.pods == 20 and phase.seconds > 0
        items = run_items(run)
        kinds = {i.labels["Component"] for i in items if i.metric == "kubera_measured_cpu_per_pod"}
        assert {"apiserver", "scheduler", "etcd", "runner"} <= kinds
        machines = [i.labels["Machines"] for i in items if i.metric == "kubera_capacity_model"]
        assert machines == ["1", "2", "4", "8"]
        (tp,) = [i for i in items if i.metric == "kubera_measured_throughput"]
        assert tp.data["EtcdRatio"] > 0
    # the churn ran: a 9-CPU pod was created and never scheduled
    assert any(sum(run.series.get("created", [])) > 20 for run in result.runs), (
        "no churn pod created"
    )
