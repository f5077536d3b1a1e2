"""End to end: kubectl 1.32's `get` and `describe` of PersistentVolumes,
PersistentVolumeClaims, StorageClasses and CSINodes against a real `kubera up`: upstream's
columns (pkg/printers/internalversion/printers.go), kubectl's client-side describers
(describe.go: the claim's "Used By" from the namespace's pods, events found by field
selector), and `kubera describe` printing the same text as kubectl's."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from kubera.testing import Cluster
from tests.e2e.helpers import kubectl
from tests.waiting import until

pytestmark = [pytest.mark.e2e, pytest.mark.ray]

NS = "storage-describe-e2e"
CLASS = "storage-describe-e2e-class"
PV = "storage-describe-e2e-pv"
CSINODE = "storage-describe-e2e-node"
#: Shared with modules of the same flags (tests/e2e/conftest.py); no node has the volume's
#: zones (z1, z2). Not time scaled: kubectl ages events by the wall clock (`<invalid>`).
UP_ARGS = ("--nodes", "3")

MANIFEST = f"""\
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {{name: {CLASS}}}
provisioner: example.com/external
parameters: {{type: ssd}}
reclaimPolicy: Retain
mountOptions: [debug]
allowVolumeExpansion: true
volumeBindingMode: WaitForFirstConsumer
---
apiVersion: v1
kind: PersistentVolume
metadata: {{name: {PV}, labels: {{tier: gold}}}}
spec:
  capacity: {{storage: 2Gi}}
  accessModes: [ReadWriteOnce]
  persistentVolumeReclaimPolicy: Retain
  storageClassName: {CLASS}
  csi: {{driver: ebs.csi.aws.com, volumeHandle: h-1, volumeAttributes: {{a: b}}}}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions: [{{key: zone, operator: In, values: [z1, z2]}}]
---
apiVersion: storage.k8s.io/v1
kind: CSINode
metadata: {{name: {CSINODE}}}
spec:
  drivers:
  - name: ebs.csi.aws.com
    nodeID: {CSINODE}
    allocatable: {{count: 39}}
    topologyKeys: [topology.ebs.csi.aws.com/zone]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: {NS}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: {CLASS}
  volumeName: {PV}
  resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: orphan, namespace: {NS}}}
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: ""
  resources: {{requests: {{storage: 5Gi}}}}
---
apiVersion: v1
kind: Pod
metadata: {{name: user, namespace: {NS}}}
spec:
  containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]
  volumes: [{{name: v, persistentVolumeClaim: {{claimName: data}}}}]
"""

#: Ages move between two reads, and so does a repeated event's count.
_AGE = re.compile(r"\b\d+(\.\d+)?[smhd](\d+[smh])?( \(x\d+ over [^)]*\))?")


def _stable(text: str) -> str:
    """`text` with its ages replaced, and in each events table (from "Events:" on to an
    empty line) the padding between cells too: the Age column is as wide as the widest
    age of that read."""
    lines, table = [], False
    for line in _AGE.sub("AGE", text).splitlines():
        table = line == "Events:" or (table and bool(line.strip()))
        lines.append(re.sub(r"  +", "  ", line) if table else line)
    return "\n".join(lines)


def get_json(k: Cluster, *args: str) -> Any:
    return json.loads(kubectl(k, "get", *args, "-o", "json").stdout)


def test_kubectl_gets_and_describes_the_storage_kinds(cluster: Cluster) -> None:
    kubectl(cluster, "create", "namespace", NS)
    try:
        # the volume first, seen by the PV controller (Available), then its claim: a claim
        # naming a volume the controller has not seen yet waits for the claims' resync (15 s)
        volume, claims = MANIFEST.split("---\napiVersion: v1\nkind: PersistentVolumeClaim", 1)
        kubectl(cluster, "apply", "-f", "-", stdin=volume)
        until(lambda: get_json(cluster, "pv", PV).get("status", {}).get("phase") == "Available")
        claims = "apiVersion: v1\nkind: PersistentVolumeClaim" + claims
        kubectl(cluster, "apply", "-f", "-", stdin=claims)
        until(
            lambda: get_json(cluster, "pvc", "data", "-n", NS)["status"].get("phase") == "Bound",
            timeout=60,
        )
        events = until(
            lambda: (
                kubectl(
                    cluster,
                    "get",
                    "events",
                    "-n",
                    NS,
                    "--field-selector",
                    "involvedObject.kind=PersistentVolumeClaim,involvedObject.name=orphan",
                ).stdout.strip()
                or None
            ),
            timeout=60,
        )
        assert "FailedBinding" in events

        # kubectl get: upstream's columns and cells
        header, row = kubectl(cluster, "get", "pv", PV).stdout.splitlines()
        assert header.split()[:9] == [
            "NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM",
            "STORAGECLASS",
        ]  # fmt: skip
        assert row.split()[:8] == [
            PV,
            "2Gi",
            "RWO",
            "Retain",
            "Bound",
            f"{NS}/data",
            CLASS,
            "<unset>",
        ]
        row = kubectl(cluster, "get", "pvc", "data", "-n", NS).stdout.splitlines()[1]
        assert row.split()[:7] == ["data", "Bound", PV, "2Gi", "RWO", CLASS, "<unset>"]
        header, row = kubectl(cluster, "get", "storageclass", CLASS).stdout.splitlines()
        assert header.split() == [
            "NAME", "PROVISIONER", "RECLAIMPOLICY", "VOLUMEBINDINGMODE", "ALLOWVOLUMEEXPANSION",
            "AGE",
        ]  # fmt: skip
        assert row.split()[:5] == [
            CLASS, "example.com/external", "Retain", "WaitForFirstConsumer", "true",
        ]  # fmt: skip
        header, row = kubectl(cluster, "get", "csinode", CSINODE).stdout.splitlines()
        assert header.split() == ["NAME", "DRIVERS", "AGE"]
        assert row.split()[:2] == [CSINODE, "1"]

        # kubectl describe (client-side): its describers read what kubera serves
        pv = kubectl(cluster, "describe", "pv", PV).stdout
        for line in (
            "Labels:            tier=gold",
            f"Claim:             {NS}/data",
            "    Term 0:        zone in [z1, z2]",
            "    Type:              CSI (a Container Storage Interface (CSI) volume source)",
            "    VolumeHandle:      h-1",
            "    VolumeAttributes:      a=b",
        ):
            assert line in pv.splitlines(), (line, pv)
        data = kubectl(cluster, "describe", "pvc", "data", "-n", NS).stdout
        assert "Used By:       user" in data.splitlines(), data
        assert "Capacity:      2Gi" in data.splitlines(), data
        orphan = kubectl(cluster, "describe", "pvc", "orphan", "-n", NS).stdout
        assert "Used By:       <none>" in orphan.splitlines(), orphan
        assert re.search(
            r"Normal\s+FailedBinding\s+.*persistentvolume-controller\s+no persistent volumes "
            r"available for this claim and no storage class is set",
            orphan,
        ), orphan
        sc = kubectl(cluster, "describe", "storageclass", CLASS).stdout
        for line in (
            "IsDefaultClass:  No",
            "AllowVolumeExpansion:  True",
            "  debug",
            "ReclaimPolicy:      Retain",
            "VolumeBindingMode:  WaitForFirstConsumer",
        ):
            assert line in sc.splitlines(), (line, sc)
        csinode = kubectl(cluster, "describe", "csinode", CSINODE).stdout
        for line in (
            "    ebs.csi.aws.com:",
            f"      Node ID:  {CSINODE}",
            "        Count:        39",
            "      Topology Keys:  [topology.ebs.csi.aws.com/zone]",
        ):
            assert line in csinode.splitlines(), (line, csinode)

        # kubera's own describe prints what kubectl prints
        for args in (
            ("pv", PV),
            ("pvc", "data", "-n", NS),
            ("pvc", "orphan", "-n", NS),
            ("storageclass", CLASS),
            ("csinode", CSINODE),
        ):
            want = kubectl(cluster, "describe", *args).stdout
            got = cluster.run("describe", *args)
            assert got.returncode == 0, got.stderr
            assert _stable(got.stdout) == _stable(want), args
    finally:
        kubectl(cluster, "delete", "namespace", NS, "--ignore-not-found", "--wait=false")
        for kind, name in (("pv", PV), ("storageclass", CLASS), ("csinode", CSINODE)):
            kubectl(cluster, "delete", kind, name, "--ignore-not-found", "--wait=false")
