"""`kubera bench shared-state`'s plumbing with tiny counts: the file shared-state.yaml swept
over 1 and 2 active schedulers (started as replicas by `kubera up`, through services/hosts),
every pod binds, the checker finds no overcommitted node, the conflict figures are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubera.experiment.measure.dataitems import run_items
from kubera.experiment.measure.model import ExperimentResult
from tests.e2e.helpers import runs_on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_shared_state_reports_each_scheduler_count(tmp_path: Path, shared_ray: str) -> None:
    out = tmp_path / "omega"
    args = ["--schedulers", "1,2", "--nodes", "4", "--pods", "24"]
    k, on_ray = runs_on_ray(tmp_path / "home", shared_ray)
    r = k.run("bench", "shared-state", *args, *on_ray, "--output", str(out), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "schedulers=1" in r.stdout and "schedulers=2" in r.stdout
    result = ExperimentResult.from_json(json.loads((out / "results.json").read_text()))
    runs = {run.sweep["schedulers"]: run for run in result.runs}
    assert sorted(runs) == [1, 2]
    for k, run in runs.items():
        assert run.error is None
        assert run.check is not None and run.check.ok, run.check
        (phase,) = run.measured
        assert phase.pods == 24
        conflicts = [i for i in run_items(run) if i.metric == "kubera_conflict_fraction"]
        assert len(conflicts) == k
        assert sum(i.data["Binds"] for i in conflicts) >= 24
        busy = [i for i in run_items(run) if i.metric == "kubera_busy_seconds"]
        # Omega's figures, per replica; a replica may lose every race for 24 pods (seen
        # under two xdist workers), so only the run as a whole must have bound usefully
        assert busy and all(i.data["Useful"] >= 0 and i.data["Wasted"] >= 0 for i in busy)
        assert any(i.data["Useful"] > 0 for i in busy)
    assert sum(r.conflicts for r in runs[1].replicas) == 0
    assert sum(r.lost for r in runs[1].replicas) == 0
    assert "busy useful" in r.stdout
