"""End to end, with real kubectl: the seed's v1.35 scheduling features a client sees.

- PodTopologyLabels (beta, on): a pod gets its node's topology.kubernetes.io/zone and
  /region labels when it is bound, and when it is created naming its node.
- NominatedNodeNameForExpectation (beta, on): a pod whose PreBind waits (its claim's
  class has a provisioner nobody runs, so the volume never comes) shows
  status.nominatedNodeName = the node it waits for; when a volume bound to its claim
  appears, the pod binds there and the nomination is cleared.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

ZONE, REGION = "topology.kubernetes.io/zone", "topology.kubernetes.io/region"
SELECTED_NODE = "volume.kubernetes.io/selected-node"


#: conftest's shared cluster of these flags (with wire and storage describe)
UP_ARGS = ("--nodes", "3")


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def apply(k: Cluster, doc: dict[str, Any], *args: str) -> None:
    kubectl(k, "apply", *args, "-f", "-", stdin=json.dumps(doc))


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "seed", ZONE: "set-by-the-user"}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}], **spec},
    }


def topology(labels: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in labels.items() if k in (ZONE, REGION)}


def test_a_bound_pod_carries_its_nodes_zone_and_region(cluster: Cluster) -> None:
    ns = "seed-labels"
    kubectl(cluster, "create", "namespace", ns)
    try:
        apply(cluster, pod("scheduled"), "-n", ns)
        node = until(
            lambda: get_json(cluster, "pod", "scheduled", "-n", ns)["spec"].get("nodeName")
        )
        node_labels = get_json(cluster, "node", node)["metadata"]["labels"]
        want = topology(node_labels)
        assert set(want) == {ZONE, REGION}  # the hollow nodes carry both
        labels = get_json(cluster, "pod", "scheduled", "-n", ns)["metadata"]["labels"]
        assert topology(labels) == want  # the node's values win over the pod's own
        assert labels["app"] == "seed"

        apply(cluster, pod("placed", nodeName=node), "-n", ns)
        placed = get_json(cluster, "pod", "placed", "-n", ns)["metadata"]["labels"]
        assert topology(placed) == want
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)


def test_a_pod_waiting_in_pre_bind_shows_its_nominated_node(cluster: Cluster) -> None:
    ns, cls, pv = "seed-nnn", "seed-nnn-never", "seed-nnn-pv"
    kubectl(cluster, "create", "namespace", ns)
    try:
        apply(
            cluster,
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": cls},
                "provisioner": "example.com/nobody-runs-this",
                "volumeBindingMode": "WaitForFirstConsumer",
            },
        )
        apply(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data"},
                "spec": {
                    "storageClassName": cls,
                    "accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
            "-n",
            ns,
        )
        volume = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
        apply(cluster, pod("waits", volumes=[volume]), "-n", ns)

        def nominated() -> str:
            p = get_json(cluster, "pod", "waits", "-n", ns)
            assert not p["spec"].get("nodeName"), "bound before its volume exists"
            return str(p.get("status", {}).get("nominatedNodeName", ""))

        node = until(nominated)
        claim = get_json(cluster, "pvc", "data", "-n", ns)
        assert claim["metadata"]["annotations"][SELECTED_NODE] == node

        # A volume bound to the claim ends the wait: the pod binds to the node it was
        # nominated to, and the bind clears the nomination.
        apply(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": cls,
                    "persistentVolumeReclaimPolicy": "Delete",
                    "hostPath": {"path": "/tmp/seed-nnn"},
                    "claimRef": {"namespace": ns, "name": "data"},
                },
            },
        )
        bound = until(
            lambda: (
                (p := get_json(cluster, "pod", "waits", "-n", ns))["spec"].get("nodeName") and p
            ),
            timeout=90,
        )
        assert bound["spec"]["nodeName"] == node
        assert not bound.get("status", {}).get("nominatedNodeName")
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "pv", pv, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", cls, "--wait=false", check=False)
