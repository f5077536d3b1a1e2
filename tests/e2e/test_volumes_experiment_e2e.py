"""upstream's scheduler_perf volumes/performance-config.yaml, copied unchanged with its
templates, run by `kubera experiment run` on real clusters: integration-test workloads (5Nodes) of
its test cases (secret volumes; in-tree, migrated in-tree and CSI persistent volumes, a
pre-bound claim and volume per pod, CSINodes for the nodes of the last two; preemption by
pods with volumes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.helpers import ROOT, upstream_run

UPSTREAM = (
    ROOT
    / "tests"
    / "experiment"
    / "data"
    / "scheduler_perf"
    / "volumes"
    / "performance-config.yaml"
)

#: Pods each 5Nodes workload creates (initPods + measurePods). The e2e runs two (a run
#: costs ~25 s here; all five ~130 s): CSI volumes on nodes with CSINodes, and preemption by
#: pods with in-tree volumes. The objects of all five are checked in
#: tests/experiment/run/test_volumes.py against a real apiserver.
PODS = {
    "SchedulingSecrets/5Nodes": 15,
    "SchedulingInTreePVs/5Nodes": 15,
    "SchedulingMigratedInTreePVs/5Nodes": 15,
    "SchedulingCSIPVs/5Nodes": 15,
    # 20 low-priority pods fill the nodes; 5 high-priority pods with volumes preempt
    "PreemptionPVs/5Nodes": 25,
}


@pytest.mark.e2e
@pytest.mark.ray
@pytest.mark.parametrize("workload", ["SchedulingCSIPVs/5Nodes", "PreemptionPVs/5Nodes"])
def test_upstreams_volume_test_case_runs_unchanged(
    tmp_path: Path, shared_ray: str, workload: str
) -> None:
    run = upstream_run(tmp_path, shared_ray, UPSTREAM, workload)
    assert "left out" not in run["stderr"], run["stderr"]
    # every pod created was bound (the measured ones wait for it, as upstream's)
    created = sum(run["series"]["created"])
    assert created == PODS[workload]
    assert len(run["latency"]["scheduling"]) == created
    # the measured createPods op is the run's one window, named after its namespace
    assert [w["name"] for w in run["collected"]] == ["namespace-2"]
    items = run["dataItems"]
    attempts = {
        i["labels"]["Name"]
        for i in items
        if i["labels"]["Metric"] == "scheduler_scheduling_attempt_duration_seconds"
    }
    assert attempts == {f"{workload}/namespace-2"}
