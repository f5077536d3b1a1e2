"""The PersistentVolume controller's pure parts (pkg/controller/volume/persistentvolume's
checkVolumeSatisfyClaim, the claim reference, the hollow provisioner's volume) and its
names: the provisioner of hollow volumes and upstream's event reasons. The controller
(persistentvolume.py) keeps the I/O."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from protos.kubera.v1 import storage_pb2, storagev1_pb2
from services.api.helpers.volumes import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    HOLLOW_PROVISIONER,
    check_access_modes,
    claim_class,
    claim_reference,
    storage_quantity,
    volume_class,
    volume_mode_mismatch,
)

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim

#: Upstream's event reasons (pkg/controller/volume/events).
FAILED_BINDING, VOLUME_MISMATCH = "FailedBinding", "VolumeMismatch"
CLAIM_LOST, CLAIM_MISBOUND = "ClaimLost", "ClaimMisbound"
WAIT_FOR_FIRST_CONSUMER, WAIT_FOR_POD_SCHEDULED = "WaitForFirstConsumer", "WaitForPodScheduled"
EXTERNAL_PROVISIONING, PROVISIONING_FAILED = "ExternalProvisioning", "ProvisioningFailed"
PROVISIONING_SUCCEEDED = "ProvisioningSucceeded"
VOLUME_FAILED_DELETE, VOLUME_RECYCLED = "VolumeFailedDelete", "VolumeRecycled"
NORMAL, WARNING = "Normal", "Warning"


def satisfy_problem(volume: PV, claim: PVC) -> str:
    """checkVolumeSatisfyClaim: why a volume the claim names cannot be bound ("" if it can)."""
    if volume.metadata.deletion_timestamp:
        return f"the volume is marked for deletion {volume.metadata.name!r}"
    if storage_quantity(volume.spec.capacity) < storage_quantity(claim.spec.resources.requests):
        return "requested PV is too small"
    if volume_class(volume) != claim_class(claim):
        return "storageClassName does not match"
    if volume_mode_mismatch(claim, volume):
        return "incompatible volumeMode"
    if not check_access_modes(claim, volume):
        return "incompatible accessMode"
    return ""


def provisioned_volume(claim: PVC, sc: storagev1_pb2.StorageClass) -> PV:
    """The hollow provisioner's volume for `claim` (see the module docstring)."""
    pv = PV(api_version="v1", kind="PersistentVolume")
    pv.metadata.name = f"pvc-{claim.metadata.uid}"
    pv.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    pv.metadata.annotations[ANN_DYNAMICALLY_PROVISIONED] = sc.provisioner
    spec = pv.spec
    spec.capacity["storage"] = claim.spec.resources.requests.get("storage", "0")
    spec.access_modes.extend(claim.spec.access_modes)
    spec.claim_ref.CopyFrom(claim_reference(claim))
    spec.persistent_volume_reclaim_policy = sc.reclaim_policy or "Delete"
    spec.storage_class_name = sc.metadata.name
    spec.mount_options.extend(sc.mount_options)
    if claim.spec.HasField("volume_mode"):
        spec.volume_mode = claim.spec.volume_mode
    spec.csi.driver = sc.provisioner
    spec.csi.volume_handle = pv.metadata.name
    return pv


def topology_segment(keys: Iterable[str], labels: Mapping[str, str]) -> dict[str, str]:
    """The topology segment of a node for a driver's topology keys (external-provisioner's
    requisite topology: the node's values of the keys it has)."""
    return {k: labels[k] for k in keys if k in labels}


def allowed_segment(sc: storagev1_pb2.StorageClass) -> dict[str, str]:
    """A segment the class allows: the first value of each key of its first
    allowedTopologies term ({} when it names none)."""
    if not sc.allowed_topologies:
        return {}
    term = sc.allowed_topologies[0]
    return {r.key: r.values[0] for r in term.match_label_expressions if r.values}


def pick_segment(segments: Iterable[Mapping[str, str]], claim_uid: str) -> dict[str, str]:
    """One of the distinct `segments` for a claim provisioned without a selected node
    (Immediate binding): chosen by the claim's UID, so claims spread over them and a
    retried provisioning picks the same one."""
    distinct = sorted({tuple(sorted(s.items())) for s in segments if s})
    if not distinct:
        return {}
    digest = int(hashlib.sha256(claim_uid.encode()).hexdigest()[:8], 16)
    return dict(distinct[digest % len(distinct)])


def add_topology(pv: PV, segment: Mapping[str, str]) -> None:
    """The volume's node affinity: one required term, each key In its value."""
    if not segment:
        return
    term = pv.spec.node_affinity.required.node_selector_terms.add()
    for key, value in sorted(segment.items()):
        term.match_expressions.add(key=key, operator="In", values=[value])


__all__ = [
    "add_topology",
    "allowed_segment",
    "pick_segment",
    "topology_segment",
    "CLAIM_LOST",
    "CLAIM_MISBOUND",
    "EXTERNAL_PROVISIONING",
    "FAILED_BINDING",
    "HOLLOW_PROVISIONER",
    "NORMAL",
    "PROVISIONING_FAILED",
    "PROVISIONING_SUCCEEDED",
    "VOLUME_FAILED_DELETE",
    "VOLUME_MISMATCH",
    "VOLUME_RECYCLED",
    "WAIT_FOR_FIRST_CONSUMER",
    "WAIT_FOR_POD_SCHEDULED",
    "WARNING",
    "claim_reference",
    "provisioned_volume",
    "satisfy_problem",
]
