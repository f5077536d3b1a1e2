"""End to end: pods' volumes on a real `kubera up`, with real kubectl.

- A pod with a generic ephemeral volume gets the claim `<pod>-<volume>` (the ephemeral
  volume controller), owned by the pod; the hollow provisioner binds it, the pod runs,
  and the claim goes with the pod (garbage collector, pvc-protection).
- A pod bound to a node whose claim is not Bound stays ContainerCreating with the
  kubelet's FailedMount event, and runs once a volume for the claim appears and binds.
- The node template's hollow CSI driver (examples/zonal-disk-node-template.yaml) is
  published (CSINode, CSIDriver, CSIStorageCapacity); its class's volume is provisioned in
  the node's zone and attached to the pod's node (VolumeAttachment) before the pod runs,
  listed in the node's status.volumesAttached and volumesInUse, and detached (and
  unlisted) once the pod is gone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

CLASS = "volumes-e2e-hollow"
ZONE = "topology.kubernetes.io/zone"
MANUAL = "volumes-e2e-manual"


TEMPLATE = Path(__file__).resolve().parents[2] / "examples" / "zonal-disk-node-template.yaml"


UP_ARGS = ("--nodes", "1", "--node-template", str(TEMPLATE), "--time-scale", "10")


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def absent(k: Cluster, *args: str) -> bool:
    r = kubectl(k, "get", *args, check=False)
    return r.returncode != 0 and "NotFound" in r.stderr


def phase(k: Cluster, kind: str, name: str, ns: str) -> str:
    return str(get_json(k, kind, name, "-n", ns)["status"].get("phase", ""))


def test_an_ephemeral_volume_gets_its_claim_which_goes_with_the_pod(cluster: Cluster) -> None:
    ns = "volumes-e2e-ephemeral"
    kubectl(cluster, "create", "namespace", ns)
    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": CLASS},
        "provisioner": "hollow.kubera.io",
    }
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(storage_class))
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "scratch-user", "namespace": ns},
        "spec": {
            "containers": [{"name": "app", "image": "busybox:1.36"}],
            "volumes": [
                {
                    "name": "scratch",
                    "ephemeral": {
                        "volumeClaimTemplate": {
                            "metadata": {"labels": {"type": "scratch"}},
                            "spec": {
                                "accessModes": ["ReadWriteOnce"],
                                "storageClassName": CLASS,
                                "resources": {"requests": {"storage": "1Gi"}},
                            },
                        }
                    },
                }
            ],
        },
    }
    try:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod))
        made = get_json(cluster, "pod", "scratch-user", "-n", ns)
        claim = until(
            lambda: (
                (c := get_json(cluster, "pvc", "-n", ns, "-l", "type=scratch")["items"])
                and c[0]["status"].get("phase") == "Bound"
                and c[0]
            ),
            timeout=60,
        )
        assert claim["metadata"]["name"] == "scratch-user-scratch"
        (owner,) = claim["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"]) == (
            "Pod",
            "scratch-user",
            made["metadata"]["uid"],
        )
        assert owner["controller"] is True and owner["blockOwnerDeletion"] is True
        until(lambda: phase(cluster, "pod", "scratch-user", ns) == "Running", timeout=60)

        kubectl(cluster, "delete", "pod", "scratch-user", "-n", ns, "--wait=false")
        until(lambda: absent(cluster, "pvc", "scratch-user-scratch", "-n", ns), timeout=90)
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", CLASS, "--ignore-not-found", check=False)


def test_a_pod_waits_ContainerCreating_until_its_claim_is_bound(cluster: Cluster) -> None:
    ns = "volumes-e2e-unbound"
    kubectl(cluster, "create", "namespace", ns)
    node = get_json(cluster, "nodes")["items"][0]["metadata"]["name"]
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "namespace": ns},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": MANUAL,
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "db", "namespace": ns},
        "spec": {
            "nodeName": node,  # past the scheduler, which would hold it back
            "containers": [{"name": "db", "image": "postgres:16"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}],
        },
    }
    volume = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": "volumes-e2e-pv"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": MANUAL,
            "persistentVolumeReclaimPolicy": "Delete",
            "hostPath": {"path": "/mnt/data"},
        },
    }
    try:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(claim))
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod))

        def failed_mount() -> str:
            events = get_json(
                cluster, "events", "-n", ns, "--field-selector", "involvedObject.name=db"
            )["items"]
            return next((e["message"] for e in events if e["reason"] == "FailedMount"), "")

        message = until(failed_mount, timeout=60)
        assert message.startswith(
            "Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], "
            f"failed to process volumes=[data]: error processing PVC {ns}/data: PVC {ns}/data "
            'has non-bound phase ("Pending")'
        ), message
        got = get_json(cluster, "pod", "db", "-n", ns)
        assert got["status"]["phase"] == "Pending"
        (status,) = got["status"]["containerStatuses"]
        assert status["state"]["waiting"]["reason"] == "ContainerCreating"
        row = kubectl(cluster, "get", "pod", "db", "-n", ns).stdout.splitlines()[1]
        assert row.split()[2] == "ContainerCreating"

        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(volume))
        until(lambda: phase(cluster, "pvc", "data", ns) == "Bound", timeout=60)
        until(lambda: phase(cluster, "pod", "db", ns) == "Running", timeout=60)
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(
            cluster,
            "delete",
            "pv",
            "volumes-e2e-pv",
            "--wait=false",
            "--ignore-not-found",
            check=False,
        )


def test_a_hollow_csi_drivers_volume_is_provisioned_in_its_zone_and_attached(
    cluster: Cluster,
) -> None:
    ns = "volumes-e2e-csi"
    node = get_json(cluster, "nodes")["items"][0]
    name, zone = node["metadata"]["name"], node["metadata"]["labels"][ZONE]
    csinode = get_json(cluster, "csinode", name)
    drivers = {d["name"]: d for d in csinode["spec"]["drivers"]}
    assert drivers["disk.example.com"]["nodeID"] == name
    assert drivers["disk.example.com"]["topologyKeys"] == [ZONE]
    assert drivers["disk.example.com"]["allocatable"] == {"count": 16}
    assert get_json(cluster, "csidriver", "disk.example.com")["spec"]["attachRequired"] is True
    capacities = get_json(cluster, "csistoragecapacities", "-n", "kube-system")["items"]
    assert {(c["storageClassName"], c["capacity"]) for c in capacities} == {
        ("zonal-disk", "1Ti"),
        ("local", "500Gi"),
    }

    storage_class = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "zonal-disk"},
        "provisioner": "disk.example.com",
    }
    claim = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "disk", "namespace": ns},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "zonal-disk",
            "resources": {"requests": {"storage": "10Gi"}},
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "app", "namespace": ns},
        "spec": {
            "containers": [{"name": "app", "image": "busybox:1.36"}],
            "volumes": [{"name": "disk", "persistentVolumeClaim": {"claimName": "disk"}}],
        },
    }
    kubectl(cluster, "create", "namespace", ns)
    kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(storage_class))
    try:
        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(claim))
        until(lambda: phase(cluster, "pvc", "disk", ns) == "Bound", timeout=60)
        pv_name = get_json(cluster, "pvc", "disk", "-n", ns)["spec"]["volumeName"]
        pv = get_json(cluster, "pv", pv_name)
        assert pv["spec"]["csi"]["driver"] == "disk.example.com"
        (term,) = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [{"key": ZONE, "operator": "In", "values": [zone]}]

        kubectl(cluster, "apply", "-f", "-", stdin=json.dumps(pod))
        until(lambda: phase(cluster, "pod", "app", ns) == "Running", timeout=60)
        (va,) = [
            v
            for v in get_json(cluster, "volumeattachments")["items"]
            if v["spec"]["source"].get("persistentVolumeName") == pv_name
        ]
        assert va["metadata"]["name"].startswith("csi-")
        assert (va["spec"]["attacher"], va["spec"]["nodeName"]) == ("disk.example.com", name)
        assert va["status"]["attached"] is True
        # the node lists it: attached (the controller) and in use (the kubelet)
        unique = f"kubernetes.io/csi/disk.example.com^{pv['spec']['csi']['volumeHandle']}"

        def node_volumes() -> tuple[list[Any], list[Any]]:
            st = get_json(cluster, "node", name)["status"]
            return st.get("volumesAttached", []), st.get("volumesInUse", [])

        until(lambda: node_volumes() == ([{"name": unique, "devicePath": ""}], [unique]))

        kubectl(cluster, "delete", "pod", "app", "-n", ns, "--wait=false")
        until(lambda: absent(cluster, "volumeattachment", va["metadata"]["name"]), timeout=90)
        until(lambda: node_volumes() == ([], []), timeout=60)
    finally:
        kubectl(cluster, "delete", "namespace", ns, "--wait=false", check=False)
        kubectl(cluster, "delete", "storageclass", "zonal-disk", "--ignore-not-found", check=False)
