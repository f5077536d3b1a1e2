"""`kubera bench shared-state`'s plumbing with tiny counts: replica processes start and
stop, every pod binds, the figures and the no-overcommit check are reported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.e2e.helpers import kubera_in

pytestmark = [pytest.mark.e2e, pytest.mark.ray]


def test_bench_shared_state_reports_each_scheduler_count(tmp_path: Path) -> None:
    out = tmp_path / "omega.json"
    # --fill 0.7: the largest pod (700m of a 4-cpu node) fits somewhere however the others
    # were packed: stranding it needs every node above 3.3 cpu, 13.2 in all, and all the
    # pods request 11.2 (memory likewise). At 0.9 an unlucky packing stranded a 900m pod.
    args = ["--schedulers", "1,2", "--nodes", "4", "--pods", "24", "--fill", "0.7"]
    r = kubera_in(tmp_path / "home").run(
        "bench", "shared-state", *args, "--output", str(out), timeout=600
    )
    assert r.returncode == 0, r.stdout + r.stderr
    for words in ("kubera bench shared-state", "conflicts/bind", "queue wait p50/p90/p99"):
        assert words in r.stdout
    report = json.loads(out.read_text())
    results = {x["schedulers"]: x for x in report["results"]}
    assert sorted(results) == [1, 2]
    for k, res in results.items():
        assert res["bound"] == 24 and res["binds"] == 24
        assert res["overcommitted"] == []
        assert len(res["per_scheduler"]) == len(res["useful_busy_s"]) == k
        assert res["throughput"] > 0 and res["attempts_per_pod_mean"] >= 1
    assert results[1]["conflicts"] == 0 and results[1]["lost_pods"] == 0
