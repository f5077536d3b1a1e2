"""End to end: the scheduler's VolumeBinding on a real `kubera up` with real kubectl.

- WaitForFirstConsumer with the hollow provisioner: a StatefulSet's volumeClaimTemplates
  give claims that stay Pending until their pod is scheduled; then the scheduler writes the
  node it chose into each claim (`volume.kubernetes.io/selected-node`), the PV controller
  provisions and binds, and the pods run where their claims say.
- A claim of the default class `standard`: its volume is pinned to the node of its
  first pod (kubernetes.io/hostname), and a pod recreated for it lands there again.
- A static local volume with node affinity to one node and a WaitForFirstConsumer claim:
  the pod lands on that node and the claim binds that volume.
- A claim of an Immediate class nobody can satisfy keeps its pod Pending with upstream's
  reason.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

SELECTED_NODE = "volume.kubernetes.io/selected-node"
HOSTNAME = "kubernetes.io/hostname"


#: Shared with modules of the same flags (tests/e2e/conftest.py).
UP_ARGS = ("--nodes", "3", "--time-scale", "10")


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def apply(k: Cluster, doc: dict[str, Any], *args: str) -> None:
    kubectl(k, "apply", *args, "-f", "-", stdin=json.dumps(doc))


def storage_class(name: str, provisioner: str, mode: str) -> dict[str, Any]:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }


def claim(name: str, cls: str, size: str = "1Gi") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "storageClassName": cls,
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
        },
    }


def pod_with_claim(name: str, claim_name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}],
        },
    }


def test_statefulset_claims_bind_on_the_node_their_pod_landed_on(cluster: Cluster) -> None:
    ns, cls = "vb-sts", "vb-wffc-hollow"
    kubectl(cluster, "create", "namespace", ns)
    try:
        apply(cluster, storage_class(cls, "hollow.kubera.io", "WaitForFirstConsumer"))
        apply(
            cluster,
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "web"},
                "spec": {
                    "serviceName": "web",
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "web",
                                    "image": "registry.k8s.io/pause:3.9",
                                    "volumeMounts": [{"name": "www", "mountPath": "/data"}],
                                }
                            ]
                        },
                    },
                    "volumeClaimTemplates": [
                        {
                            "metadata": {"name": "www"},
                            "spec": {
                                "storageClassName": cls,
                                "accessModes": ["ReadWriteOnce"],
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    ],
                },
            },
            "-n",
            ns,
        )

        def all_running() -> dict[str, Any] | None:
            pods = get_json(cluster, "pods", "-n", ns)["items"]
            running = {
                p["metadata"]["name"]: p for p in pods if p["status"].get("phase") == "Running"
            }
            return running if len(running) == 2 else None

        pods = until(all_running, timeout=120)
        for name, p in pods.items():
            node = p["spec"]["nodeName"]
            c = get_json(cluster, "pvc", f"www-{name}", "-n", ns)
            assert c["status"]["phase"] == "Bound"
            assert c["metadata"]["annotations"][SELECTED_NODE] == node
            v = get_json(cluster, "pv", c["spec"]["volumeName"])
            assert v["spec"]["claimRef"]["name"] == f"www-{name}"
            assert v["spec"]["storageClassName"] == cls
            # the hollow provisioner's volumes are node-local, as kind's local-path ones
            terms = v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
            expr = {"key": HOSTNAME, "operator": "In", "values": [node]}
            assert terms == [{"matchExpressions": [expr]}]
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", cls, "--wait=false", check=False)


def running_pod(k: Cluster, name: str, ns: str) -> dict[str, Any]:
    def running() -> dict[str, Any] | None:
        p = get_json(k, "pod", name, "-n", ns)
        return p if p["status"].get("phase") == "Running" else None

    return until(running, timeout=90)


def test_a_recreated_pod_goes_back_to_its_provisioned_volumes_node(cluster: Cluster) -> None:
    """The default class `standard` (hollow, WaitForFirstConsumer): the claim's volume is
    made for the node its first pod landed on; a later pod of the claim that prefers every
    other node still lands there (VolumeBinding reads the volume's node affinity)."""
    ns = "vb-recreate"
    kubectl(cluster, "create", "namespace", ns)
    try:
        data = claim("data", "standard")
        del data["spec"]["storageClassName"]  # the default class, as the docs' claims
        apply(cluster, data, "-n", ns)
        apply(cluster, pod_with_claim("first", "data"), "-n", ns)
        node = running_pod(cluster, "first", ns)["spec"]["nodeName"]
        c = get_json(cluster, "pvc", "data", "-n", ns)
        assert (c["spec"]["storageClassName"], c["status"]["phase"]) == ("standard", "Bound")
        v = get_json(cluster, "pv", c["spec"]["volumeName"])
        host = v["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]
        assert host["matchExpressions"][0]["values"] == [node]
        kubectl(cluster, "delete", "pod", "first", "-n", ns, "--grace-period=1", "--timeout=60s")
        again = pod_with_claim("again", "data")
        away = {"key": HOSTNAME, "operator": "NotIn", "values": [node]}
        again["spec"]["affinity"] = {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 100, "preference": {"matchExpressions": [away]}}
                ]
            }
        }
        apply(cluster, again, "-n", ns)
        assert running_pod(cluster, "again", ns)["spec"]["nodeName"] == node
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)


def test_static_local_volume_puts_its_pod_on_the_volumes_node(cluster: Cluster) -> None:
    ns, cls, pv_name = "vb-local", "vb-local-wffc", "vb-local-pv"
    nodes = get_json(cluster, "nodes")["items"]
    assert len(nodes) == 3
    target = nodes[-1]
    host = target["metadata"]["labels"].get(HOSTNAME, target["metadata"]["name"])
    kubectl(cluster, "create", "namespace", ns)
    try:
        apply(cluster, storage_class(cls, "kubernetes.io/no-provisioner", "WaitForFirstConsumer"))
        apply(
            cluster,
            {
                "apiVersion": "v1",
                "kind": "PersistentVolume",
                "metadata": {"name": pv_name},
                "spec": {
                    "capacity": {"storage": "5Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": cls,
                    "persistentVolumeReclaimPolicy": "Retain",
                    "local": {"path": "/mnt/disks/vol1"},
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": HOSTNAME, "operator": "In", "values": [host]}
                                    ]
                                }
                            ]
                        }
                    },
                },
            },
        )
        apply(cluster, claim("local-claim", cls), "-n", ns)
        # WaitForFirstConsumer: no binding before a pod uses the claim
        assert get_json(cluster, "pvc", "local-claim", "-n", ns)["status"].get("phase") == "Pending"
        apply(cluster, pod_with_claim("uses-local", "local-claim"), "-n", ns)
        p = until(
            lambda: (
                (x := get_json(cluster, "pod", "uses-local", "-n", ns))["status"].get("phase")
                == "Running"
                and x
            ),
            timeout=90,
        )
        assert p["spec"]["nodeName"] == target["metadata"]["name"]
        c = get_json(cluster, "pvc", "local-claim", "-n", ns)
        assert (c["status"]["phase"], c["spec"]["volumeName"]) == ("Bound", pv_name)
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "pv", pv_name, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", cls, "--wait=false", check=False)


def test_unbound_immediate_claim_keeps_the_pod_pending_with_upstreams_reason(
    cluster: Cluster,
) -> None:
    ns, cls = "vb-immediate", "vb-immediate-none"
    kubectl(cluster, "create", "namespace", ns)
    try:
        apply(cluster, storage_class(cls, "kubernetes.io/no-provisioner", "Immediate"))
        apply(cluster, claim("nothing-fits", cls), "-n", ns)
        apply(cluster, pod_with_claim("waits", "nothing-fits"), "-n", ns)

        def unschedulable() -> str:
            p = get_json(cluster, "pod", "waits", "-n", ns)
            for cond in p["status"].get("conditions", []):
                if cond["type"] == "PodScheduled" and cond["status"] == "False":
                    return str(cond.get("message", ""))
            return ""

        message = until(unschedulable, timeout=60)
        assert "pod has unbound immediate PersistentVolumeClaims" in message
        assert not get_json(cluster, "pod", "waits", "-n", ns)["spec"].get("nodeName")
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", cls, "--wait=false", check=False)
