"""upstream's batching/performance-config.yaml, its integration-test workloads run unchanged
(`kubera experiment run --workload`): every pod bound, with OpportunisticBatching passed to
the scheduler as the workload sets it (every pod asked for a batch, counted in the
kubera_batching DataItem: HintUsed + NoHint)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import ROOT, runs_on_ray

BATCHING = (
    ROOT
    / "tests"
    / "experiment"
    / "data"
    / "scheduler_perf"
    / "batching"
    / "performance-config.yaml"
)


@pytest.mark.e2e
@pytest.mark.ray
@pytest.mark.parametrize("case", ["HostPortConflict", "ResourceSaturation"])
def test_upstream_batching_integration_workloads_run_unchanged(
    tmp_path: Path, shared_ray: str, case: str
) -> None:
    out = tmp_path / "out"
    workload = f"{case}/10Nodes_10Pods_10BatchSize"
    k, on_ray = runs_on_ray(tmp_path / "home", shared_ray)
    r = k.run(
        "experiment",
        "run",
        str(BATCHING),
        *on_ray,
        "--workload",
        workload,
        "--output",
        str(out),
        "--timeout",
        "120",
        timeout=240,
    )
    assert r.returncode == 0, r.stderr + r.stdout
    (run,) = json.loads((out / "results.json").read_text())["runs"]
    assert (run["id"], run["error"]) == (workload, None)
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 10
    # one pod per node: HostPort 80, or 3 of a node's 4 CPUs
    items = json.loads((out / "DataItems.json").read_text())["dataItems"]
    (batching,) = [i for i in items if i["labels"]["Metric"] == "kubera_batching"]
    assert batching["data"]["HintUsed"] + batching["data"]["NoHint"] == 10
