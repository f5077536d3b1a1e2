"""End to end: the docs' PersistentVolume walkthrough ("Configure a Pod to Use a
PersistentVolume for Storage") on a real `kubera up`, with real kubectl and the docs' own
manifests, unchanged (kubernetes/website content/en/examples/pods/storage/pv-volume.yaml,
pv-claim.yaml, pv-pod.yaml, in tests/e2e/manifests/storage/): the claim binds the volume,
`kubectl get pv,pvc` prints upstream's columns, the pod runs, and once the pod and the
claim are deleted the volume (Retain) is Released."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

MANIFESTS = Path(__file__).parent / "manifests" / "storage"
NS = "storage-e2e"


@pytest.fixture(scope="module")
def up_args() -> tuple[str, ...]:
    return ("--nodes", "1")


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def test_the_docs_volume_and_claim_bind_and_the_pod_runs(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", NS)
    try:
        kubectl(cluster, "apply", "-f", str(MANIFESTS / "pv-volume.yaml"))
        kubectl(cluster, "apply", "-n", NS, "-f", str(MANIFESTS / "pv-claim.yaml"))
        claim = until(
            lambda: (
                (c := get_json(cluster, "pvc", "task-pv-claim", "-n", NS))["status"].get("phase")
                == "Bound"
                and c
            ),
            timeout=60,
        )
        assert claim["spec"]["volumeName"] == "task-pv-volume"
        assert claim["status"]["capacity"] == {"storage": "10Gi"}
        assert "kubernetes.io/pvc-protection" in claim["metadata"]["finalizers"]
        pv = get_json(cluster, "pv", "task-pv-volume")
        assert pv["status"]["phase"] == "Bound"
        assert pv["spec"]["claimRef"]["name"] == "task-pv-claim"
        assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
        # the docs' `kubectl get pv task-pv-volume` and `kubectl get pvc task-pv-claim`
        header, row = kubectl(cluster, "get", "pv", "task-pv-volume").stdout.splitlines()
        assert header.split() == [
            "NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
            "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "REASON", "AGE",
        ]  # fmt: skip
        assert row.split()[:7] == [
            "task-pv-volume", "10Gi", "RWO", "Retain", "Bound", f"{NS}/task-pv-claim", "manual",
        ]  # fmt: skip
        row = kubectl(cluster, "get", "pvc", "task-pv-claim", "-n", NS).stdout.splitlines()[1]
        assert row.split()[:6] == [
            "task-pv-claim",
            "Bound",
            "task-pv-volume",
            "10Gi",
            "RWO",
            "manual",
        ]

        kubectl(cluster, "apply", "-n", NS, "-f", str(MANIFESTS / "pv-pod.yaml"))
        until(
            lambda: (
                get_json(cluster, "pod", "task-pv-pod", "-n", NS)["status"].get("phase")
                == "Running"
            ),
            timeout=60,
        )
        described = kubectl(cluster, "describe", "pvc", "task-pv-claim", "-n", NS).stdout
        assert "task-pv-pod" in described  # kubectl's "Used By"

        kubectl(cluster, "delete", "pod", "task-pv-pod", "-n", NS, "--grace-period=0", "--force")
        kubectl(cluster, "delete", "pvc", "task-pv-claim", "-n", NS, "--timeout=60s")
        until(
            lambda: get_json(cluster, "pv", "task-pv-volume")["status"]["phase"] == "Released",
            timeout=60,
        )
    finally:
        kubectl(cluster, "delete", "pv", "task-pv-volume", "--ignore-not-found", "--wait=false")
        kubectl(cluster, "delete", "namespace", NS, "--ignore-not-found", "--wait=false")
