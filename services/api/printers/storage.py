"""What `kubectl get` shows for the storage kinds, as upstream's
pkg/printers/internalversion/printers.go prints them:

* PersistentVolume: NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS
  VOLUMEATTRIBUTESCLASS REASON AGE (wide: VOLUMEMODE), CLAIM as `namespace/name`;
* StorageClass: NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE,
  NAME marked `(default)` for the default class;
* CSIDriver: NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS
  REQUIRESREPUBLISH MODES AGE;
* CSINode: NAME DRIVERS AGE;
* CSIStorageCapacity: NAME STORAGECLASSNAME CAPACITY AGE;
* VolumeAttachment: NAME ATTACHER PV NODE ATTACHED AGE.

The claim's table is with the apps kinds (apps.py), where StatefulSets made it first.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.helpers.volumes import is_default_class
from services.api.printers.apps import BETA_STORAGE_CLASS_ANNOTATION, UNSET, access_modes
from services.api.printers.columns import (
    AGE,
    INT,
    NAME,
    NONE,
    Column,
    Columns,
    S,
    age,
    wide_columns,
)


def _bool(msg: Any, field: str) -> str:
    return ("true" if getattr(msg, field) else "false") if msg.HasField(field) else UNSET


def _pv_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    ref = x.spec.claim_ref
    claim = f"{ref.namespace}/{ref.name}" if x.spec.HasField("claim_ref") else ""
    phase = "Terminating" if x.metadata.deletion_timestamp else x.status.phase
    row = [
        x.metadata.name,
        x.spec.capacity.get("storage", ""),
        access_modes(x.spec.access_modes),
        x.spec.persistent_volume_reclaim_policy,
        phase,
        claim,
        x.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION) or x.spec.storage_class_name,
        x.spec.volume_attributes_class_name
        if x.spec.HasField("volume_attributes_class_name")
        else UNSET,
        x.status.reason,
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        row.append(x.spec.volume_mode if x.spec.HasField("volume_mode") else UNSET)
    return row


def _storage_class_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    name = x.metadata.name + (" (default)" if is_default_class(x) else "")
    return [
        name,
        x.provisioner,
        x.reclaim_policy if x.HasField("reclaim_policy") else "Delete",
        x.volume_binding_mode if x.HasField("volume_binding_mode") else "Immediate",
        "true" if x.allow_volume_expansion else "false",
        age(x.metadata.creation_timestamp, now),
    ]


def _csi_driver_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    spec = x.spec
    tokens = ",".join(t.audience for t in spec.token_requests) or UNSET
    return [
        x.metadata.name,
        _bool(spec, "attach_required"),
        _bool(spec, "pod_info_on_mount"),
        _bool(spec, "storage_capacity"),
        tokens,
        _bool(spec, "requires_republish"),
        ",".join(spec.volume_lifecycle_modes) or NONE,
        age(x.metadata.creation_timestamp, now),
    ]


def _csi_node_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    return [x.metadata.name, str(len(x.spec.drivers)), age(x.metadata.creation_timestamp, now)]


def _capacity_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    return [
        x.metadata.name,
        x.storage_class_name,
        x.capacity if x.HasField("capacity") else "",
        age(x.metadata.creation_timestamp, now),
    ]


def _attachment_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    src = x.spec.source
    return [
        x.metadata.name,
        x.spec.attacher,
        src.persistent_volume_name if src.HasField("persistent_volume_name") else "",
        x.spec.node_name,
        "true" if x.status.attached else "false",
        age(x.metadata.creation_timestamp, now),
    ]


#: kind -> table, merged into printers.COLUMNS.
STORAGE_COLUMNS: dict[str, Columns] = {
    "PersistentVolume": Columns(
        (
            NAME,
            Column("Capacity", S, "The volume's capacity."),
            Column("Access Modes", S, "The volume's access modes."),
            Column("Reclaim Policy", S, "What happens to the volume when its claim is released."),
            Column("Status", S, "The volume's phase."),
            Column("Claim", S, "The claim bound to the volume."),
            Column("StorageClass", S, "StorageClass of the pv"),
            Column("VolumeAttributesClass", S, "VolumeAttributesClass of the pv"),
            Column("Reason", S, "Why the volume is in its phase."),
            AGE,
            *wide_columns(Column("VolumeMode", S, "Filesystem or Block.")),
        ),
        _pv_row,
    ),
    "StorageClass": Columns(
        (
            NAME,
            Column("Provisioner", S, "The provisioner of the class's volumes."),
            Column("ReclaimPolicy", S, "The reclaim policy of the volumes it provisions."),
            Column("VolumeBindingMode", S, "When claims of the class bind."),
            Column("AllowVolumeExpansion", S, "Whether claims of the class may grow."),
            AGE,
        ),
        _storage_class_row,
    ),
    "CSIDriver": Columns(
        (
            NAME,
            Column("AttachRequired", S, "Whether the driver's volumes are attached."),
            Column("PodInfoOnMount", S, "Whether the driver gets pod information on mount."),
            Column("StorageCapacity", S, "Whether the scheduler checks the driver's capacity."),
            Column("TokenRequests", S, "The audiences of the tokens the driver gets."),
            Column("RequiresRepublish", S, "Whether the driver republishes its volumes."),
            Column("Modes", S, "The volume lifecycle modes the driver supports."),
            AGE,
        ),
        _csi_driver_row,
    ),
    "CSINode": Columns(
        (NAME, Column("Drivers", INT, "The number of CSI drivers on the node."), AGE),
        _csi_node_row,
    ),
    "CSIStorageCapacity": Columns(
        (
            NAME,
            Column("StorageClassName", S, "The class the capacity is for."),
            Column("Capacity", S, "The capacity available."),
            AGE,
        ),
        _capacity_row,
    ),
    "VolumeAttachment": Columns(
        (
            NAME,
            Column("Attacher", S, "The driver that attaches the volume."),
            Column("PV", S, "The volume attached."),
            Column("Node", S, "The node the volume is attached to."),
            Column("Attached", S, "Whether the volume is attached."),
            AGE,
        ),
        _attachment_row,
    ),
}
