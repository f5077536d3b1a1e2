"""End to end: VolumeZone on a real `kubera up` with real kubectl. Hollow nodes in zones
(zone-a, zone-b, ... as the default node template spreads them); a statically provisioned volume
labelled with a zone binds its claim (the PV controller), and the claim's pod lands in the
volume's zone, or, when no node is in that zone, stays Pending with upstream's words in
`kubectl describe pod`."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

NS = "volume-zone-e2e"
ZONE = "topology.kubernetes.io/zone"


#: Shared with modules of the same flags (conftest); the zones are read from the nodes.
UP_ARGS = ("--nodes", "3", "--time-scale", "10")


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def manifests(name: str, zone: str) -> str:
    """A 1Gi hostPath volume in `zone`, a claim that binds it, and a pod using the claim."""
    pv = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"{NS}-{name}", "labels": {ZONE: zone}},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": f"{NS}-{name}",
            "hostPath": {"path": f"/mnt/{name}"},
        },
    }
    pvc = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": f"{NS}-{name}",
            "resources": {"requests": {"storage": "1Gi"}},
        },
    }
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.9"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": name}}],
        },
    }
    return "\n".join(json.dumps(doc) for doc in (pv, pvc, pod))  # a JSON stream


def test_a_pod_lands_in_its_volumes_zone_or_waits_with_the_reason(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", NS)
    try:
        zone_of = {
            n["metadata"]["name"]: n["metadata"]["labels"][ZONE]
            for n in get_json(cluster, "nodes")["items"]
        }
        zone_b = sorted(zone_of.values())[-1]
        kubectl(cluster, "apply", "-f", "-", stdin=manifests("in-b", zone_b))
        node = until(
            lambda: get_json(cluster, "pod", "in-b", "-n", NS)["spec"].get("nodeName"),
            timeout=60,
        )
        assert zone_of[node] == zone_b

        kubectl(cluster, "apply", "-f", "-", stdin=manifests("nowhere", "zone-z"))
        until(
            lambda: get_json(cluster, "pvc", "nowhere", "-n", NS)["status"].get("phase") == "Bound",
            timeout=60,
        )
        described = until(
            lambda: (
                out
                if "had no available volume zone"
                in (out := kubectl(cluster, "describe", "pod", "nowhere", "-n", NS).stdout)
                else None
            ),
            timeout=60,
        )
        assert "FailedScheduling" in described
        n = len(zone_of)
        assert f"0/{n} nodes are available: {n} node(s) had no available volume zone." in described
        assert get_json(cluster, "pod", "nowhere", "-n", NS)["status"]["phase"] == "Pending"
    finally:
        kubectl(cluster, "delete", "namespace", NS, "--ignore-not-found", "--wait=false")
        for name in ("in-b", "nowhere"):
            kubectl(cluster, "delete", "pv", f"{NS}-{name}", "--ignore-not-found", "--wait=false")
