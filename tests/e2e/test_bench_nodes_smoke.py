"""`kubera bench nodes`'s plumbing with tiny counts: nodes.yaml's hollow-node figures (leases
on time and their lateness, nodes Ready, memory per hollow node, CPU at idle) over its steady
window, and the eviction reaction of nodes put under memory pressure (measure/nodes.py,
run/pressure.py), as the old Python bench reported them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kubera.experiment.measure.model import ExperimentResult
from tests.e2e.helpers import runs_on_ray

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_nodes_reports_leases_memory_and_the_eviction_reaction(
    tmp_path: Path, shared_ray: str
) -> None:
    out = tmp_path / "nodes"
    args = ["--workload", "100Nodes", "--nodes", "10", "--pods", "40", "--settle", "1s"]
    # a 5 s window holds renewals of half the leases (each renews once in 10 s, the nodes
    # spread over 10 slots), enough for every figure asserted
    args += ["--window", "5s", "--pressure-nodes", "3"]
    k, on_ray = runs_on_ray(tmp_path / "home", shared_ray)
    r = k.run("bench", "nodes", *args, *on_ray, "--output", str(out), timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    for line in ("nodes Ready (as the run ends): 10 / 10", "leases on time:", "lease lateness:"):
        assert line in r.stdout
    assert "memory per hollow node:" in r.stdout and "eviction reaction, 3 nodes:" in r.stdout
    (run,) = ExperimentResult.from_json(json.loads((out / "results.json").read_text())).runs
    assert run.error is None
    f = run.nodes
    assert f["nodes"] == 10 and f["nodes_ready"] == 10
    assert f["leases"] == 10 and f["lease_renewals"] > 0
    assert f["memory_per_node_kb"] > 0 and f["machine_cpu_pct"] > 0
    assert f["pressure_nodes"] == 3 and f["eviction_reaction_s"] > 0
