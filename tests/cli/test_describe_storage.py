"""`kubera describe` of PersistentVolumes, PersistentVolumeClaims, StorageClasses and
CSINodes: each layout compared with what kubectl 1.32's `describe` printed for the same
object on a kubera cluster (kubectl's describe.go: describePersistentVolume,
describePersistentVolumeClaim with getPodsForPVC, describeStorageClass, describeCSINode),
trailing padding included."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from kubera.printing import describe_storage as ds
from kubera.printing.describe import annotations_list
from services.api.machinery import codec

NOW = 1_900_000_000.0


def obj(doc: dict[str, Any]) -> Message:
    return codec.decode(doc, validate="ignore").obj


PV_CSI = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {
        "name": "pv-csi",
        "annotations": {"note": "a short one"},
        "finalizers": ["kubernetes.io/pv-protection"],
    },
    "spec": {
        "capacity": {"storage": "2Gi"},
        "accessModes": ["ReadOnlyMany", "ReadWriteOnce"],
        "csi": {
            "driver": "ebs.csi.aws.com",
            "volumeHandle": "h1",
            "volumeAttributes": {"a": "b", "c": "d"},
        },
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
                            {"key": "gpu", "operator": "Exists"},
                        ]
                    }
                ]
            }
        },
    },
    "status": {"phase": "Available"},
}
KUBECTL_PV_CSI = """\
Name:              pv-csi
Labels:            <none>
Annotations:       note: a short one
Finalizers:        [kubernetes.io/pv-protection]
StorageClass:      
Status:            Available
Claim:             
Reclaim Policy:    Retain
Access Modes:      RWO,ROX
VolumeMode:        Filesystem
Capacity:          2Gi
Node Affinity:     
  Required Terms:  
    Term 0:        zone in [z1, z2]
                   gpu exists
Message:           
Source:
    Type:              CSI (a Container Storage Interface (CSI) volume source)
    Driver:            ebs.csi.aws.com
    FSType:            
    VolumeHandle:      h1
    ReadOnly:          false
    VolumeAttributes:      a=b
                           c=d
Events:                <none>
"""  # noqa: W291 (kubectl pads an empty value)

PV_AWS = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-aws", "finalizers": ["kubernetes.io/pv-protection"]},
    "spec": {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadOnlyMany"],
        "awsElasticBlockStore": {"volumeID": "vol-1"},
        "persistentVolumeReclaimPolicy": "Retain",
        "volumeMode": "Filesystem",
    },
    "status": {"phase": "Available"},
}
KUBECTL_PV_AWS = """\
Name:            pv-aws
Labels:          <none>
Annotations:     <none>
Finalizers:      [kubernetes.io/pv-protection]
StorageClass:    
Status:          Available
Claim:           
Reclaim Policy:  Retain
Access Modes:    ROX
VolumeMode:      Filesystem
Capacity:        1Gi
Node Affinity:   <none>
Message:         
Source:
    Type:       AWSElasticBlockStore (a Persistent Disk resource in AWS)
    VolumeID:   vol-1
    FSType:     
    Partition:  0
    ReadOnly:   false
Events:         <none>
"""  # noqa: W291

SC_FAST = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {
        "name": "fast",
        "annotations": {
            # kubectl describe does not hide it here, and its newline splits the line
            "kubectl.kubernetes.io/last-applied-configuration": '{"k":"v"}\n',
            "storageclass.kubernetes.io/is-default-class": "true",
        },
    },
    "provisioner": "hollow.kubera.io",
    "parameters": {"type": "ssd"},
    "reclaimPolicy": "Delete",
    "mountOptions": ["debug"],
    "allowVolumeExpansion": True,
    "volumeBindingMode": "WaitForFirstConsumer",
}
KUBECTL_SC_FAST = """\
Name:            fast
IsDefaultClass:  Yes
Annotations:     kubectl.kubernetes.io/last-applied-configuration={"k":"v"}
,storageclass.kubernetes.io/is-default-class=true
Provisioner:           hollow.kubera.io
Parameters:            type=ssd
AllowVolumeExpansion:  True
MountOptions:
  debug
ReclaimPolicy:      Delete
VolumeBindingMode:  WaitForFirstConsumer
Events:             <none>
"""

SC_PLAIN = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "StorageClass",
    "metadata": {"name": "plain"},
    "provisioner": "example.com/x",
    "reclaimPolicy": "Delete",
    "volumeBindingMode": "Immediate",
    "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["z1", "z2"]}]}],
}
KUBECTL_SC_PLAIN = """\
Name:                  plain
IsDefaultClass:        No
Annotations:           <none>
Provisioner:           example.com/x
Parameters:            <none>
AllowVolumeExpansion:  <unset>
MountOptions:          <none>
ReclaimPolicy:         Delete
VolumeBindingMode:     Immediate
AllowedTopologies:     
  Term 0:              zone in [z1, z2]
Events:                <none>
"""  # noqa: W291

CSINODE = {
    "apiVersion": "storage.k8s.io/v1",
    "kind": "CSINode",
    "metadata": {"name": "node-x", "creationTimestamp": "2026-12-07T19:38:38Z"},
    "spec": {
        "drivers": [
            {
                "name": "ebs.csi.aws.com",
                "nodeID": "node-x",
                "allocatable": {"count": 39},
                "topologyKeys": ["topology.ebs.csi.aws.com/zone"],
            }
        ]
    },
}
KUBECTL_CSINODE = """\
Name:               node-x
Labels:             <none>
Annotations:        <none>
CreationTimestamp:  Mon, 07 Dec 2026 19:38:38 +0000
Spec:
  Drivers:
    ebs.csi.aws.com:
      Node ID:  node-x
      Allocatables:
        Count:        39
      Topology Keys:  [topology.ebs.csi.aws.com/zone]
Events:               <none>
"""


@pytest.mark.parametrize(
    ("describe", "doc", "want"),
    [
        (ds.describe_persistent_volume, PV_CSI, KUBECTL_PV_CSI),
        (ds.describe_persistent_volume, PV_AWS, KUBECTL_PV_AWS),
        (ds.describe_storage_class, SC_FAST, KUBECTL_SC_FAST),
        (ds.describe_storage_class, SC_PLAIN, KUBECTL_SC_PLAIN),
        (ds.describe_csi_node, CSINODE, KUBECTL_CSINODE),
    ],
    ids=["pv-csi-node-affinity", "pv-in-tree", "default-class", "class-topologies", "csinode"],
)
def test_describe_prints_what_kubectl_prints(describe: Any, doc: dict, want: str) -> None:
    assert describe(obj(doc), [], NOW) == want


def _claim(**meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": "c1",
            "namespace": "d1",
            "uid": "u-c1",
            "finalizers": ["kubernetes.io/pvc-protection"],
            "annotations": {
                "kubectl.kubernetes.io/last-applied-configuration": "{}\n",
                "pv.kubernetes.io/bind-completed": "yes",
                "pv.kubernetes.io/bound-by-controller": "yes",
            },
            **meta,
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "storageClassName": "manual",
            "volumeName": "pv1",
            "volumeMode": "Filesystem",
        },
        "status": {
            "phase": "Bound",
            "accessModes": ["ReadWriteOnce"],
            "capacity": {"storage": "1Gi"},
        },
    }


KUBECTL_PVC = """\
Name:          c1
Namespace:     d1
StorageClass:  manual
Status:        Bound
Volume:        pv1
Labels:        <none>
Annotations:   pv.kubernetes.io/bind-completed: yes
               pv.kubernetes.io/bound-by-controller: yes
Finalizers:    [kubernetes.io/pvc-protection]
Capacity:      1Gi
Access Modes:  RWO
VolumeMode:    Filesystem
Used By:       p1
Events:        <none>
"""


def _pod(name: str, uid: str, claim: str | None) -> Message:
    volumes = [{"name": "v", "persistentVolumeClaim": {"claimName": claim}}] if claim else []
    return obj(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "d1", "uid": uid},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": volumes},
        }
    )


def test_describe_claim_prints_what_kubectl_prints_with_the_pods_using_it() -> None:
    claim = obj(_claim())
    pods = [_pod("p1", "u1", "c1"), _pod("other", "u2", "c2"), _pod("bare", "u3", None)]
    users = ds.claim_users(claim, pods)
    assert ds.describe_persistent_volume_claim(claim, [], NOW, users) == KUBECTL_PVC


def test_a_claims_users_are_its_pods_then_the_pods_that_own_it() -> None:
    # getPodsForPVC: by volume, then by owner reference (a generic ephemeral volume's), once
    owned = _claim(ownerReferences=[{"apiVersion": "v1", "kind": "Pod", "name": "e", "uid": "u3"}])
    pods = [_pod("b", "u1", "c1"), _pod("x", "u2", "c2"), _pod("e", "u3", None)]
    assert [p.metadata.name for p in ds.claim_users(obj(owned), pods)] == ["b", "e"]  # type: ignore[attr-defined]
    text = ds.describe_persistent_volume_claim(
        obj(owned), [], NOW, ds.claim_users(obj(owned), pods)
    )
    assert "Used By:       b\n               e\n" in text


def test_an_unbound_claim_shows_no_capacity_or_modes() -> None:
    doc = _claim()
    doc["spec"]["volumeName"] = ""
    doc["status"] = {"phase": "Pending"}
    text = ds.describe_persistent_volume_claim(obj(doc), [], NOW, [])
    assert "Volume:        \n" in text
    assert "Capacity:      \nAccess Modes:  \n" in text
    assert "Used By:       <none>\n" in text


@pytest.mark.parametrize(
    ("annotations", "lines"),
    [
        ({"b": "2", "a": "1"}, ["a: 1", "b: 2"]),
        # the manifest kubectl apply keeps is not repeated
        ({"kubectl.kubernetes.io/last-applied-configuration": "{}", "a": "1"}, ["a: 1"]),
        # a value with a newline, or too long for one line, goes on lines of its own
        ({"a": "x\ny\n"}, ["a:", "  x", "  y"]),
        ({"k": "v" * 140}, ["k:", "  " + "v" * 138 + "..."]),
    ],
    ids=["sorted", "last-applied-hidden", "multiline", "long"],
)
def test_annotations_print_as_kubectl_1_32(annotations: dict, lines: list[str]) -> None:
    assert annotations_list(annotations) == lines
