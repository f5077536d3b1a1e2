"""Upstream 1.37's PodGroup API (scheduling.k8s.io/v1beta1) end to end: its scheduler_perf
podgroup files (basicscheduling, gangscheduling, tas; copied unchanged) run their
integration-test workloads with `kubera experiment run` (basic and gang their smallest, tas
both), and on a cluster whose profile enables GangScheduling, kubectl creates a gang
PodGroup whose pods wait until minCount of them exist, then bind together; a pod waits for
its PodGroup to exist; a gang with a topology constraint binds within one rack and its
PodGroup reads PodGroupInitiallyScheduled=True, one no rack can hold stays pending with
the condition False; bad PodGroups are refused with upstream's field paths."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubera.experiment.run.runner import GANG_SCHEDULING_PROFILE
from kubera.testing import Cluster
from tests.e2e.helpers import ROOT, kubectl, upstream_run
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

DATA = ROOT / "tests" / "experiment" / "data" / "scheduler_perf" / "podgroup"


@pytest.fixture(scope="module")
def up_args(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, ...]:
    cfg = tmp_path_factory.mktemp("podgroup") / "scheduler.yaml"
    cfg.write_text(GANG_SCHEDULING_PROFILE)
    return ("--nodes", "2", "--scheduler-config", str(cfg))


@pytest.fixture
def ns(cluster: Cluster, request: pytest.FixtureRequest) -> Iterator[str]:
    name = "pg-" + request.node.name.removeprefix("test_").replace("_", "-")[:40].strip("-")
    kubectl(cluster, "create", "namespace", name)
    yield name
    kubectl(cluster, "delete", "namespace", name, "--wait=false", check=False)


def _group(name: str, ns: str, policy: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"schedulingPolicy": policy, **spec},
    }


def _pod(name: str, ns: str, group: str | None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}]}
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns},
        "spec": spec,
    }


def _apply(k: Cluster, *docs: dict[str, Any]) -> None:
    kubectl(k, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))


def _pods(k: Cluster, ns: str) -> dict[str, dict[str, Any]]:
    r = kubectl(k, "get", "pods", "-n", ns, "-o", "json")
    return {p["metadata"]["name"]: p for p in json.loads(r.stdout)["items"]}


def test_a_gang_pod_group_waits_for_min_count_pods_then_binds_whole(
    cluster: Cluster, ns: str
) -> None:
    _apply(
        cluster,
        _group("trainer", ns, {"gang": {"minCount": 3}}),
        _pod("w-0", ns, "trainer"),
        _pod("w-1", ns, "trainer"),
    )
    got = kubectl(cluster, "get", "podgroups.scheduling.k8s.io", "trainer", "-n", ns, "-o", "json")
    doc = json.loads(got.stdout)
    assert doc["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert doc["spec"]["schedulingPolicy"] == {"gang": {"minCount": 3}}
    # A later pod of no group binds: the gang's two were seen before it and left alone.
    _apply(cluster, _pod("solo", ns, None))
    until(lambda: _pods(cluster, ns)["solo"]["spec"].get("nodeName"), timeout=60)
    pods = _pods(cluster, ns)
    for name in ("w-0", "w-1"):
        assert pods[name]["spec"]["schedulingGroup"] == {"podGroupName": "trainer"}
        assert not pods[name]["spec"].get("nodeName"), name

    _apply(cluster, _pod("w-2", ns, "trainer"))
    until(
        lambda: all(_pods(cluster, ns)[n]["spec"].get("nodeName") for n in ("w-0", "w-1", "w-2")),
        timeout=60,
    )


def test_a_gang_pod_waits_for_its_pod_group_to_exist(cluster: Cluster, ns: str) -> None:
    _apply(cluster, _pod("early", ns, "later"), _pod("solo", ns, None))
    until(lambda: _pods(cluster, ns)["solo"]["spec"].get("nodeName"), timeout=60)
    assert not _pods(cluster, ns)["early"]["spec"].get("nodeName")
    _apply(cluster, _group("later", ns, {"basic": {}}))
    until(lambda: _pods(cluster, ns)["early"]["spec"].get("nodeName"), timeout=60)


RACK = "topology.kubernetes.io/rack"


@pytest.fixture
def racks(cluster: Cluster) -> Iterator[list[str]]:
    """Each of the cluster's nodes in a rack of its own (labels taken off afterwards)."""
    nodes = sorted(
        n["metadata"]["name"]
        for n in json.loads(kubectl(cluster, "get", "nodes", "-o", "json").stdout)["items"]
    )
    for i, node in enumerate(nodes):
        kubectl(cluster, "label", "node", node, f"{RACK}=rack-{i}", "--overwrite")
    yield nodes
    for node in nodes:
        kubectl(cluster, "label", "node", node, f"{RACK}-", check=False)


def test_a_gang_with_a_topology_constraint_binds_in_one_rack(
    cluster: Cluster, ns: str, racks: list[str]
) -> None:
    topology = {"topology": [{"key": RACK}]}
    group = _group("racked", ns, {"gang": {"minCount": 3}}, schedulingConstraints=topology)
    _apply(cluster, group, *(_pod(f"r-{i}", ns, "racked") for i in range(3)))

    def nodes() -> set[str] | None:
        pods = _pods(cluster, ns)
        names = [p["spec"].get("nodeName") for p in pods.values()]
        return set(names) if len(names) == 3 and all(names) else None

    until(nodes, timeout=60)
    # One rack per node here: the whole gang on one node, whichever rack it chose.
    got = nodes()
    assert got is not None and len(got) == 1 and got <= set(racks)
    want = ("True", "Scheduled")
    until(lambda: _initially_scheduled(cluster, ns, "racked")[:2] == want, timeout=30)


def _initially_scheduled(cluster: Cluster, ns: str, name: str) -> tuple[str, str, str]:
    got = kubectl(cluster, "get", "podgroups.scheduling.k8s.io", name, "-n", ns, "-o", "json")
    for c in json.loads(got.stdout).get("status", {}).get("conditions", []):
        if c["type"] == "PodGroupInitiallyScheduled":
            return c["status"], c["reason"], c.get("message", "")
    return "", "", ""


def test_a_gang_no_rack_can_hold_stays_pending_and_says_so(
    cluster: Cluster, ns: str, racks: list[str]
) -> None:
    """Upstream's placement step weighs every rack for the whole gang: 3 pods of 60% of a
    node's cpu fit no single-node rack, so none binds (no pod waits at Permit for a rack
    chosen by its first pod) and the PodGroup says why."""
    cpu = json.loads(kubectl(cluster, "get", "node", racks[0], "-o", "json").stdout)["status"][
        "allocatable"
    ]["cpu"]
    milli = int(cpu[:-1]) if cpu.endswith("m") else int(cpu) * 1000
    topology = {"topology": [{"key": RACK}]}
    group = _group("too-big", ns, {"gang": {"minCount": 3}}, schedulingConstraints=topology)
    pods = [_pod(f"b-{i}", ns, "too-big") for i in range(3)]
    for p in pods:
        p["spec"]["containers"][0]["resources"] = {"requests": {"cpu": f"{milli * 6 // 10}m"}}
    _apply(cluster, group, *pods)
    until(lambda: _initially_scheduled(cluster, ns, "too-big")[0] == "False", timeout=60)
    _, reason, message = _initially_scheduled(cluster, ns, "too-big")
    assert reason == "Unschedulable" and RACK in message, message
    assert not any(p["spec"].get("nodeName") for p in _pods(cluster, ns).values())


def test_bad_pod_groups_and_pods_are_refused_with_upstreams_fields(
    cluster: Cluster, ns: str
) -> None:
    cases = [
        (_group("g", ns, {}), "spec.schedulingPolicy", "must specify one of: `basic`, `gang`"),
        (_group("g", ns, {"gang": {"minCount": -1}}), "spec.schedulingPolicy.gang.minCount", ""),
        (
            _group("g", ns, {"basic": {}}, disruptionMode={"single": {}, "all": {}}),
            "spec.disruptionMode",
            "exactly one of `single`, `all` is required",
        ),
        (_pod("p", ns, "Bad_Name"), "spec.schedulingGroup.podGroupName", "RFC 1123"),
    ]
    for doc, field, detail in cases:
        r = kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(doc), check=False)
        assert r.returncode != 0, doc
        assert field in r.stderr and detail in r.stderr, r.stderr

    single, every = {"single": {}}, {"all": {}}
    _apply(cluster, _group("fixed", ns, {"gang": {"minCount": 2}}, disruptionMode=single))
    # minCount may change; disruptionMode may not.
    _apply(cluster, _group("fixed", ns, {"gang": {"minCount": 1}}, disruptionMode=single))
    changed = _group("fixed", ns, {"gang": {"minCount": 1}}, disruptionMode=every)
    r = kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(changed), check=False)
    assert r.returncode != 0
    assert "spec.disruptionMode" in r.stderr and "field is immutable" in r.stderr
    # The Priority admission plugin computes a PodGroup's priority (0 without a class).
    r = kubectl(
        cluster,
        "apply",
        "-f",
        "-",
        stdin=json.dumps(_group("own", ns, {"basic": {}}, priority=5)),
        check=False,
    )
    assert r.returncode != 0 and "must not be provided in pod group spec" in r.stderr


# ---------------------------------------------------- upstream's files, unchanged


@pytest.mark.parametrize(
    ("config", "workload"),
    [
        ("basicscheduling", "BasicScheduling/10Nodes_3Groups"),
        ("gangscheduling", "GangScheduling/10Nodes_3Gangs"),
    ],
)
def test_upstream_podgroup_workload_binds_every_pod(
    tmp_path: Path, shared_ray: str, config: str, workload: str
) -> None:
    run = upstream_run(tmp_path, shared_ray, DATA / config / "performance-config.yaml", workload)
    # 3 groups of 3 pods, each naming its PodGroup: all 9 bound in the measured window.
    assert sum(run["series"]["created"]) == 9
    (window,) = run["collected"]
    assert sum(run["series"][f"bound:{window['name']}"]) == 9
    assert len(run["latency"]["scheduling"]) == 9
    # The research measures as the run ended: 10 nodes, nothing pending, so nothing is
    # stranded and the queue drained after the last pod was created.
    research = run["research"]
    assert (research["nodes"], research["pendingPods"]) == (10, 0)
    assert research["fragmentation"]["cpu"]["free"] > 0
    assert research["fragmentation"]["cpu"]["stranded"] == 0
    assert research["queueDrainSeconds"] >= 0
    by_metric: dict[str, list[dict[str, Any]]] = {}
    for item in run["dataItems"]:
        by_metric.setdefault(item["labels"]["Metric"], []).append(item)
    # Pod-group latency and throughput: 3 whole groups.
    (gang,) = by_metric["kubera_gang_latency"]
    assert gang["data"]["Count"] == 3
    assert by_metric["kubera_gang_throughput"][0]["data"]["Average"] > 0
    assert by_metric["kubera_queue_drain"][0]["data"]["Value"] >= 0
    if config == "gangscheduling":  # each gang's quorum at Permit: a scheduled attempt
        results = {
            i["labels"]["result"]
            for i in by_metric["scheduler_podgroup_scheduling_attempt_duration_seconds"]
        }
        assert results == {"scheduled"}
        assert by_metric["scheduler_podgroup_scheduling_algorithm_duration_seconds"]


@pytest.mark.parametrize(
    ("workload", "pods"),
    [
        ("TopologyAwareScheduling/10Nodes_3Gangs", 9),
        ("TopologyAwareScheduling/100Nodes_10Gangs", 30),
    ],
)
def test_upstream_tas_integration_workloads_bind_every_gang(
    tmp_path: Path, shared_ray: str, workload: str, pods: int
) -> None:
    """podgroup/tas, unchanged: gangs of 3 whose PodGroups ask for one rack
    (topology.kubernetes.io/rack, 100 nodes a rack) all bind in the measured window."""
    run = upstream_run(tmp_path, shared_ray, DATA / "tas" / "performance-config.yaml", workload)
    assert sum(run["series"]["created"]) == pods
    (window,) = run["collected"]
    assert sum(run["series"][f"bound:{window['name']}"]) == pods
    assert len(run["latency"]["scheduling"]) == pods
