"""CSI migration names and a pod's volumes: which driver and handle an in-tree disk is
counted under, when its migration counts on a node, and which claims a pod's volumes use."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import storage_pb2, storagev1_pb2
from services.api.helpers import csimigration as csi
from services.api.helpers.podvolumes import (
    ephemeral_claim_not_for_pod,
    has_scheduling_volumes,
    pod_claim_names,
    pod_names_claim,
)
from tests.builders import MakePod


def vol(**source: Any) -> Any:
    pod = MakePod().spec({"volumes": [{"name": "v", **source}]}).obj()
    return pod.spec.volumes[0]


def pv(labels: dict[str, str] | None = None, **spec: Any) -> storage_pb2.PersistentVolume:
    out = storage_pb2.PersistentVolume()
    out.metadata.name = "pv"
    out.metadata.labels.update(labels or {})
    json_format.ParseDict(spec, out.spec)
    return out


INLINE = [
    (vol(awsElasticBlockStore={"volumeID": "vol-1"}), (csi.AWS_EBS_DRIVER, "vol-1")),
    (vol(awsElasticBlockStore={"volumeID": "aws://us-east-1a/vol-2"}), (csi.AWS_EBS_DRIVER, "vol-2")),
    (
        vol(gcePersistentDisk={"pdName": "d"}),
        (csi.GCE_PD_DRIVER, "projects/UNSPECIFIED/zones/UNSPECIFIED/disks/d"),
    ),
    (vol(cinder={"volumeID": "c1"}), ("cinder.csi.openstack.org", "c1")),
    (vol(azureDisk={"diskURI": "/sub/d"}), ("disk.csi.azure.com", "/sub/d")),
    (vol(hostPath={"path": "/tmp"}), None),
    (vol(persistentVolumeClaim={"claimName": "c"}), None),
]  # fmt: skip


@pytest.mark.parametrize(("volume", "want"), INLINE, ids=[str(w) for _, w in INLINE])
def test_inline_volumes_translate_to_their_csi_driver_and_handle(volume: Any, want: Any) -> None:
    assert csi.translate_inline(volume) == want


def test_persistent_volumes_translate_with_their_zone() -> None:
    zonal = pv({"topology.kubernetes.io/zone": "z1"}, gcePersistentDisk={"pdName": "d"})
    assert csi.translate_pv(zonal) == (csi.GCE_PD_DRIVER, "projects/UNSPECIFIED/zones/z1/disks/d")
    assert csi.translate_pv(pv(awsElasticBlockStore={"volumeID": "vol-9"})) == (
        csi.AWS_EBS_DRIVER,
        "vol-9",
    )
    assert csi.translate_pv(pv(hostPath={"path": "/x"})) is None
    assert csi.pv_csi(pv(csi={"driver": "d", "volumeHandle": "h"})) == ("d", "h")


def test_migration_counts_only_where_the_csinode_lists_the_plugin() -> None:
    node = storagev1_pb2.CSINode()
    assert not csi.is_csi_migration_on(None, csi.AWS_EBS_PLUGIN)
    assert not csi.is_csi_migration_on(node, csi.AWS_EBS_PLUGIN)
    node.metadata.annotations[csi.MIGRATED_PLUGINS_ANNOTATION] = (
        f"{csi.GCE_PD_PLUGIN},{csi.AWS_EBS_PLUGIN}"
    )
    assert csi.is_csi_migration_on(node, csi.AWS_EBS_PLUGIN)
    assert csi.is_csi_migration_on(node, csi.GCE_PD_PLUGIN)
    node.metadata.annotations[csi.MIGRATED_PLUGINS_ANNOTATION] = csi.AZURE_FILE_PLUGIN
    assert not csi.is_csi_migration_on(node, csi.AZURE_FILE_PLUGIN)  # mounts, never attaches


def test_a_pods_claims_include_its_ephemeral_volumes_claims() -> None:
    pod = (
        MakePod()
        .name("p")
        .spec(
            {
                "volumes": [
                    {"name": "a", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "scratch", "ephemeral": {}},
                    {"name": "cfg", "configMap": {"name": "x"}},
                ]
            }
        )
        .obj()
    )
    assert list(pod_claim_names(pod)) == [("data", False), ("p-scratch", True)]
    assert pod_names_claim(pod, "p-scratch", ephemeral=True)
    assert not pod_names_claim(pod, "p-scratch", ephemeral=False)
    assert has_scheduling_volumes(pod)
    assert not has_scheduling_volumes(
        MakePod().spec({"volumes": [{"name": "c", "secret": {}}]}).obj()
    )


def test_an_ephemeral_claim_must_be_controlled_by_its_pod() -> None:
    pod = MakePod().name("p").namespace("ns").uid("u1").obj()
    claim = storage_pb2.PersistentVolumeClaim()
    claim.metadata.name, claim.metadata.namespace = "p-v", "ns"
    ref = claim.metadata.owner_references.add(kind="Pod", name="p", uid="u1")
    assert ephemeral_claim_not_for_pod(pod, claim)  # an owner, not the controller
    ref.controller = True
    assert ephemeral_claim_not_for_pod(pod, claim) == ""
    ref.uid = "other"
    assert ephemeral_claim_not_for_pod(pod, claim) == (
        "PVC ns/p-v was not created for pod ns/p (pod is not owner)"
    )
