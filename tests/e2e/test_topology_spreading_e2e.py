"""upstream's scheduler_perf DefaultTopologySpreading, from its topology_spreading/
performance-config.yaml copied unchanged: createAny makes the Service whose selector the
default PodTopologySpread constraints read (helper.DefaultSelector), on a real cluster,
its smallest workload (5Nodes: 10 pods, then 10 measured pods selected by the Service)."""

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
    / "topology_spreading"
    / "performance-config.yaml"
)


@pytest.mark.e2e
@pytest.mark.ray
def test_upstream_default_topology_spreading_runs_unchanged(
    tmp_path: Path, shared_ray: str
) -> None:
    run = upstream_run(tmp_path, shared_ray, UPSTREAM, "DefaultTopologySpreading/5Nodes")
    # initPods and measurePods: 20 pods, every one bound
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 20
    items = run["dataItems"]
    # the measured pods are the service's, in the namespace createAny made it in
    assert "DefaultTopologySpreading/5Nodes/service-ns" in {i["labels"]["Name"] for i in items}
