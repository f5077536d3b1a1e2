"""Two of upstream's scheduler_perf test cases that did not run before issue 28, from their
newest files copied unchanged, each on a real cluster with its smallest workload:
SchedulingWithNodeInclusionPolicy (its template writes `NodeAffinityPolicy:` capitalised, and
hostname spreading needs the kubernetes.io/hostname label upstream's node preparer sets) and
default_preemption's PreemptionBasic (its templates set spec.priority, which upstream's
scheduler_perf apiserver admits: it runs without the Priority admission plugin); and since
issue 29 both SchedulingWithExtendedResource cases, misc's (nodes advertising the resource)
and dra/extendedresource's (DeviceClasses mapping it to a test driver's devices); and since
issue 28's Go `if` default_preemption's PreemptionPodGroupDisruptionMode (PodGroups whose
disruptionMode decides how many pods one preemption evicts); and since issue 30 batching's
integration-test workloads (OpportunisticBatching passed to the scheduler as they set it:
every pod asks for a batch, counted in the kubera_batching DataItem)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.helpers import ROOT, upstream_run

DATA = ROOT / "tests" / "experiment" / "data" / "scheduler_perf"


@pytest.mark.e2e
@pytest.mark.ray
def test_upstream_node_inclusion_policy_case_binds_every_pod(
    tmp_path: Path, shared_ray: str
) -> None:
    config = DATA / "topology_spreading" / "performance-config.yaml"
    run = upstream_run(tmp_path, shared_ray, config, "SchedulingWithNodeInclusionPolicy/5Nodes")
    # 4 pods spread at most 1 apart over the 4 untainted hostnames: every one bound
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 4


@pytest.mark.e2e
@pytest.mark.ray
def test_upstream_preemption_basic_preempts_with_priorities_its_templates_set(
    tmp_path: Path, shared_ray: str
) -> None:
    config = DATA / "default_preemption" / "performance-config.yaml"
    run = upstream_run(tmp_path, shared_ray, config, "PreemptionBasic/5Nodes")
    assert run["cluster"]["disable_admission_plugins"] == [
        "ServiceAccount",
        "TaintNodesByCondition",
        "Priority",
    ]
    # 20 low-priority 900m pods fill the 5 nodes (3.6 of 4 CPUs each); the 5 measured
    # 3970m pods of priority 10000 are bound only once the victims are preempted.
    assert sum(run["series"]["created"]) == 25
    (window,) = run["collected"]
    assert sum(run["series"][f"bound:{window['name']}"]) == 5


@pytest.mark.e2e
@pytest.mark.ray
def test_upstream_misc_scheduling_with_extended_resource_binds_every_pod(
    tmp_path: Path, shared_ray: str
) -> None:
    config = DATA / "misc" / "performance-config.yaml"
    run = upstream_run(
        tmp_path,
        shared_ray,
        config,
        "SchedulingWithExtendedResource/fast_DRAExtendedResourceEnabled",
    )
    # 10 pods, pod i asking for foo.com/bar-i, which only node i advertises: every one bound.
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 10


@pytest.mark.e2e
@pytest.mark.ray
def test_upstream_dra_scheduling_with_extended_resource_binds_every_pod(
    tmp_path: Path, shared_ray: str
) -> None:
    config = DATA / "dra" / "extendedresource" / "performance-config.yaml"
    run = upstream_run(tmp_path, shared_ray, config, "SchedulingWithExtendedResource/fast")
    # 10 pods, pod i asking for example.com/gpu-i, which no node advertises and class i
    # maps to the test driver's devices: each gets one of the DRA node's 10 devices.
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 10


@pytest.mark.e2e
@pytest.mark.ray
@pytest.mark.parametrize(
    ("workload", "victims"),
    [
        # 2 nodes of 4 CPUs, 4 pods of 1500m (2 a node); the 3970m preemptor needs both
        # pods of one node evicted.
        ("FastTest_NoPodGroup", 2),
        ("FastTest_PodGroupDisruptionMode_Single", 2),
        # Each gang of 2 is placed one member a node (LeastAllocated spreads them), so the
        # node's two victims belong to both gangs, and `all` evicts every member of both.
        ("FastTest_PodGroupDisruptionMode_All", 4),
    ],
)
def test_upstream_pod_group_disruption_mode_evicts_as_its_mode_says(
    tmp_path: Path, shared_ray: str, workload: str, victims: int
) -> None:
    config = DATA / "default_preemption" / "performance-config.yaml"
    run = upstream_run(tmp_path, shared_ray, config, f"PreemptionPodGroupDisruptionMode/{workload}")
    assert sum(run["series"]["created"]) == 5
    (window,) = run["collected"]
    assert sum(run["series"][f"bound:{window['name']}"]) == 1
    assert sum(r["preemption_attempts"] for r in run["replicas"]) >= 1
    assert sum(r["preemption_victims"] for r in run["replicas"]) == victims


@pytest.mark.e2e
@pytest.mark.ray
@pytest.mark.parametrize("case", ["HostPortConflict", "ResourceSaturation"])
def test_upstream_batching_integration_workloads_bind_every_pod(
    tmp_path: Path, shared_ray: str, case: str
) -> None:
    config = DATA / "batching" / "performance-config.yaml"
    run = upstream_run(tmp_path, shared_ray, config, f"{case}/10Nodes_10Pods_10BatchSize")
    # one pod per node (host port 80, or 3 of a node's 4 CPUs): every one bound
    assert len(run["latency"]["scheduling"]) == sum(run["series"]["created"]) == 10
    (batching,) = [i for i in run["dataItems"] if i["labels"]["Metric"] == "kubera_batching"]
    assert batching["data"]["HintUsed"] + batching["data"]["NoHint"] == 10
