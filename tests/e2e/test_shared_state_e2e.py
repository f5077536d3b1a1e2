"""End to end, shared-state (Omega) mode: two active replicas of one schedulerName split the
pods by hash and both bind, through the allocation record, with no fencing token; `kubera
schedulers` reports each replica's Omega measures, and `kubera check` accepts the binds
through the allocation record and finds no overcommitted node. Pods claiming more
network devices than there are get each device once (the device allocation records),
pods taking shares of a device never take more than its capacity, and `kubera check`
proves no device was given twice."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import yaml

from kubera.testing import Cluster
from tests.e2e.helpers import (
    bound_pods,
    claimed_pods,
    devices_held,
    kubectl,
    network_devices,
    pods_file,
    settled_pods,
)
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

PODS = 40


#: A cluster of its own (tests/e2e/conftest.py): its `kubera check` replays every bind in
#: the cluster's history.
EXCLUSIVE = True
UP_ARGS = (
    "--nodes", "4", "--schedulers", "2",
    "--scheduler-mode", "shared-state", "--shared-state-partition", "hash",
)  # fmt: skip


def test_both_replicas_bind_through_the_allocation_record(cluster: Cluster, tmp_path: Path) -> None:
    r = cluster("apply", "-f", str(pods_file(tmp_path, "omega", PODS)))
    assert r.returncode == 0, r.stderr
    deadline = time.monotonic() + 90
    while len(bound := bound_pods(cluster, "omega")) < PODS:
        assert time.monotonic() < deadline, f"only {len(bound)}/{PODS} pods bound"
        time.sleep(0.2)
    marks = {p["metadata"]["annotations"]["kubera.io/bound-by"] for p in bound.values()}
    assert marks == {f"allocation /kubera/allocations/{n}" for n in _nodes(bound)}

    r = cluster("schedulers", "-o", "json")
    assert r.returncode == 0, r.stderr
    rows = json.loads(r.stdout)
    assert len(rows) == 2
    assert {row["mode"] for row in rows} == {"shared-state"}
    assert all(row["leading"] for row in rows), rows
    # Split by hash: each pod belongs to exactly one replica, so every pod is bound once,
    # by its owner, and nobody loses a pod to the other.
    stats = [row["shared_state"] for row in rows]
    assert sum(s["binds"] for s in stats) == PODS
    assert all(s["binds"] > 0 and s["lost_pods"] == 0 for s in stats), stats
    for s in stats:
        assert s["attempts_per_pod_mean"] >= 1
        assert s["queue_wait_p50_seconds"] <= s["queue_wait_p99_seconds"]
        assert s["conflict_fraction"] == pytest.approx(s["conflicts"] / s["binds"])

    r = cluster("schedulers")
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("shared-state") == 2 and "conflict fraction" in r.stdout


def test_two_replicas_never_give_one_network_device_twice(cluster: Cluster) -> None:
    ns = "omega-dra"
    kubectl(cluster, "create", "namespace", ns)
    try:
        with network_devices(cluster, "omega-net", 3):
            kubectl(cluster, "apply", "-f", "-", stdin=claimed_pods(ns, "gpu", 8, "omega-net"))
            # Both replicas allocate at once from the same view: the later writer of a
            # device is refused and retried, so 3 pods get a device and 5 wait.
            until(lambda: settled_pods(cluster, ns) == (3, 5), timeout=90)
            held = devices_held(cluster, ns)
            assert len(held) == len(set(held)) == 3, held
        r = cluster("check", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        verdict = json.loads(r.stdout)
        assert verdict["ok"] is True, verdict
        assert verdict["counts"]["device_allocations"] >= 3
        assert verdict["violation_counts"]["double-allocation"] == 0
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)


def test_two_replicas_never_overcommit_a_shared_devices_capacity(cluster: Cluster) -> None:
    """One network device that allows multiple allocations, 8Gi of memory, and 5 pods whose
    claims each take a 4Gi share of it: both replicas allocate shares from their own views,
    the device's record refuses the writes that would pass 8Gi, so 2 pods run, 3 wait,
    and `kubera check` finds the capacity never overcommitted."""
    ns, name = "omega-shares", "omega-shared"
    docs = [
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "DeviceClass",
            "metadata": {"name": name},
            "spec": {
                "selectors": [{"cel": {"expression": 'device.driver == "shared.example.com"'}}]
            },
        },
        {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceSlice",
            "metadata": {"name": name},
            "spec": {
                "driver": "shared.example.com",
                "allNodes": True,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [
                    {
                        "name": "dev-0",
                        "allowMultipleAllocations": True,
                        "capacity": {"memory": {"value": "8Gi"}},
                    }
                ],
            },
        },
    ]
    pods = yaml.safe_load_all(claimed_pods(ns, "share", 5, name))
    manifest = []
    for doc in pods:
        if doc["kind"] == "ResourceClaimTemplate":
            request = doc["spec"]["spec"]["devices"]["requests"][0]["exactly"]
            request["capacity"] = {"requests": {"memory": "4Gi"}}
        manifest.append(doc)
    kubectl(cluster, "create", "namespace", ns)
    kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(docs))
    try:
        kubectl(cluster, "apply", "-f", "-", stdin=yaml.safe_dump_all(manifest))
        until(lambda: settled_pods(cluster, ns) == (2, 3), timeout=90)
        items = json.loads(kubectl(cluster, "get", "resourceclaims", "-n", ns, "-o", "json").stdout)
        shares = [
            (r["device"], r["consumedCapacity"], bool(r.get("shareID")))
            for c in items["items"]
            for r in c.get("status", {}).get("allocation", {}).get("devices", {}).get("results", [])
        ]
        assert shares == [("dev-0", {"memory": "4Gi"}, True)] * 2, shares
        r = cluster("check", "--json")
        assert r.returncode == 0, r.stdout + r.stderr
        verdict = json.loads(r.stdout)
        assert verdict["ok"] is True, verdict
        assert verdict["violation_counts"]["double-allocation"] == 0
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "resourceslice", name, "--wait=false", check=False)
        kubectl(cluster, "delete", "deviceclass", name, "--wait=false", check=False)


def test_check_accepts_allocation_binds(cluster: Cluster) -> None:
    r = cluster("check", "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    verdict = json.loads(r.stdout)
    assert verdict["ok"] is True, verdict
    counts = verdict["counts"]
    assert counts["binds_allocation"] >= PODS and counts["binds_fenced"] == 0
    assert "through a node's allocation record" in cluster("check").stdout


def _nodes(bound: dict[str, dict]) -> set[str]:
    return {p["spec"]["nodeName"] for p in bound.values()}
