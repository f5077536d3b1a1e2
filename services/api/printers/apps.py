"""What `kubectl get` shows for DaemonSet, StatefulSet, ControllerRevision and
PersistentVolumeClaim, as upstream's pkg/printers/internalversion/printers.go prints them:

* DaemonSet: NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE
  (wide: CONTAINERS IMAGES SELECTOR);
* StatefulSet: NAME READY AGE (wide: CONTAINERS IMAGES), READY being readyReplicas/replicas;
* ControllerRevision: NAME CONTROLLER REVISION AGE, CONTROLLER as `daemonset.apps/web`;
* PersistentVolumeClaim: NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS
  VOLUMEATTRIBUTESCLASS AGE (wide: VOLUMEMODE).
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.printers.columns import (
    AGE,
    INT,
    NAME,
    NONE,
    Column,
    Columns,
    S,
    age,
    format_label_selector,
    format_labels,
    wide_columns,
)

#: The beta annotation a claim's class may still be named by (GetPersistentVolumeClaimClass).
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_ACCESS_MODE_SHORT = {
    "ReadWriteOnce": "RWO",
    "ReadOnlyMany": "ROX",
    "ReadWriteMany": "RWX",
    "ReadWriteOncePod": "RWOP",
}
UNSET = "<unset>"


def _containers(spec: Any) -> list[str]:
    cs = spec.template.spec.containers
    return [",".join(c.name for c in cs) or NONE, ",".join(c.image for c in cs) or NONE]


def _daemon_set_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    st = x.status
    row = [
        x.metadata.name,
        str(st.desired_number_scheduled),
        str(st.current_number_scheduled),
        str(st.number_ready),
        str(st.updated_number_scheduled),
        str(st.number_available),
        format_labels(x.spec.template.spec.node_selector),
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        row += [*_containers(x.spec), format_label_selector(x.spec.selector)]
    return row


def _stateful_set_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    desired = x.spec.replicas if x.spec.HasField("replicas") else 1
    row = [
        x.metadata.name,
        f"{x.status.ready_replicas}/{desired}",
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        row += _containers(x.spec)
    return row


def controller_name(obj: Message) -> str:
    """The controller owner as `kind.group/name` (formatResourceName of its GroupKind)."""
    x: Any = obj
    for ref in x.metadata.owner_references:
        if ref.HasField("controller") and ref.controller:
            group = ref.api_version.rpartition("/")[0]
            kind = f"{ref.kind}.{group}" if group else ref.kind
            return f"{kind.lower()}/{ref.name}"
    return NONE


def _controller_revision_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    return [
        x.metadata.name,
        controller_name(obj),
        str(x.revision),
        age(x.metadata.creation_timestamp, now),
    ]


def access_modes(modes: Any) -> str:
    """GetAccessModesAsString: RWO,ROX,RWX,RWOP in that order, each once."""
    present = set(modes)
    return ",".join(short for mode, short in _ACCESS_MODE_SHORT.items() if mode in present)


def _pvc_row(obj: Message, now: float, wide: bool) -> list[str]:
    x: Any = obj
    phase = "Terminating" if x.metadata.deletion_timestamp else x.status.phase
    storage_class = x.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION) or (
        x.spec.storage_class_name if x.spec.HasField("storage_class_name") else ""
    )
    bound = bool(x.spec.volume_name)
    row = [
        x.metadata.name,
        phase,
        x.spec.volume_name,
        x.status.capacity.get("storage", "") if bound else "",
        access_modes(x.status.access_modes) if bound else "",
        storage_class,
        x.spec.volume_attributes_class_name
        if x.spec.HasField("volume_attributes_class_name")
        else UNSET,
        age(x.metadata.creation_timestamp, now),
    ]
    if wide:
        row.append(x.spec.volume_mode if x.spec.HasField("volume_mode") else UNSET)
    return row


_WIDE_WORKLOAD = (
    Column("Containers", S, "Names of each container in the template."),
    Column("Images", S, "Images referenced by each container in the template."),
)

#: kind -> table, merged into printers.COLUMNS.
APPS_COLUMNS: dict[str, Columns] = {
    "DaemonSet": Columns(
        (
            NAME,
            Column("Desired", INT, "The number of nodes that should be running the daemon pod."),
            Column("Current", INT, "The number of nodes running at least one daemon pod."),
            Column("Ready", INT, "The number of nodes whose daemon pod is ready."),
            Column("Up-to-date", INT, "The number of nodes running the updated daemon pod."),
            Column("Available", INT, "The number of nodes whose daemon pod is available."),
            Column("Node Selector", S, "The node selector of the daemon pod's template."),
            AGE,
            *wide_columns(
                *_WIDE_WORKLOAD,
                Column("Selector", S, "The label selector of the daemon pods."),
            ),
        ),
        _daemon_set_row,
    ),
    "StatefulSet": Columns(
        (
            NAME,
            Column("Ready", S, "Number of the pod with ready state."),
            AGE,
            *wide_columns(*_WIDE_WORKLOAD),
        ),
        _stateful_set_row,
    ),
    "ControllerRevision": Columns(
        (
            NAME,
            Column("Controller", S, "Controller of the object."),
            Column("Revision", INT, "Revision of the ControllerRevision."),
            AGE,
        ),
        _controller_revision_row,
    ),
    "PersistentVolumeClaim": Columns(
        (
            NAME,
            Column("Status", S, "The claim's phase: Pending, Bound or Lost."),
            Column("Volume", S, "The volume bound to the claim."),
            Column("Capacity", S, "The capacity of the bound volume."),
            Column("Access Modes", S, "The access modes of the bound volume."),
            Column("StorageClass", S, "The storage class of the claim."),
            Column("VolumeAttributesClass", S, "The volume attributes class of the claim."),
            AGE,
            *wide_columns(Column("VolumeMode", S, "Filesystem or Block.")),
        ),
        _pvc_row,
    ),
}
