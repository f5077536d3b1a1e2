"""`kubera bench scheduling-basic`'s plumbing with tiny counts: a churning workload runs
twice on fresh clusters, and the report holds every figure the bench promises (the
numbers themselves are not judged)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import kubera_in

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_scheduling_reports_throughput_cpu_per_pod_and_the_model(tmp_path: Path) -> None:
    out = tmp_path / "mixed.json"
    args = ["--workload", "mixed-churn", "--nodes", "5", "--pods", "20", "--repeat", "2"]
    r = kubera_in(tmp_path / "home").run(
        "bench", "scheduling-basic", *args, "--output", str(out), timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for words in ("pods bound/s: avg", "raw etcd put rate", "CPU per pod", "capacity model"):
        assert words in r.stdout
    rep = json.loads(out.read_text())
    assert rep["workload"] == "mixed-churn" and rep["median_of"] == 2 and len(rep["runs"]) == 2
    assert rep["throughput_avg"] > 0 and rep["etcd_ratio"] > 0
    assert rep["upstream_threshold"] is None  # not upstream's 5,000-node shape
    assert rep["churn"]["created"] >= 1
    kinds = rep["cpu"]["by_kind"]
    assert {"apiserver", "scheduler", "etcd", "bench-client"} <= set(kinds)
    assert kinds["scheduler"]["processes"] == 1
    assert [p["machines"] for p in rep["capacity_model"]["predictions"]] == [1, 2, 4, 8]
