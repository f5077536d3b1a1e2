"""A pod's volumes read where they are stored: `spec.volumes` holds each volume as a
`google.protobuf.Struct` in its Kubernetes (camelCase) shape, so the readers below take the
source by its JSON key (`persistentVolumeClaim`, `ephemeral`, `gcePersistentDisk`, ...).

Why it exists: the scheduler's volume plugins (VolumeRestrictions, VolumeZone,
NodeVolumeLimits, VolumeBinding), the controllers and the kubelet all ask the same questions
of a pod's volumes (which claims, which in-tree disk, is it a generic ephemeral volume and
what is its claim called), so the answers are spelled once, below every component, as
upstream keeps them in k8s.io/component-helpers/storage (ephemeral.VolumeClaimName,
ephemeral.VolumeIsForPod).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeAlias

from google.protobuf import struct_pb2

from protos.kubera.v1 import core_pb2, storage_pb2

Volume: TypeAlias = struct_pb2.Struct

PVC_SOURCE = "persistentVolumeClaim"
EPHEMERAL_SOURCE = "ephemeral"


def source(vol: Volume, key: str) -> struct_pb2.Struct | None:
    """The volume's source `key` (e.g. "gcePersistentDisk") when it is set."""
    value = vol.fields.get(key)
    if value is None or not value.HasField("struct_value"):
        return None
    return value.struct_value


def string_field(obj: struct_pb2.Struct, key: str) -> str:
    value = obj.fields.get(key)
    return value.string_value if value is not None else ""


def bool_field(obj: struct_pb2.Struct, key: str) -> bool:
    value = obj.fields.get(key)
    return value.bool_value if value is not None else False


def strings_field(obj: struct_pb2.Struct, key: str) -> list[str]:
    value = obj.fields.get(key)
    if value is None or not value.HasField("list_value"):
        return []
    return [v.string_value for v in value.list_value.values]


def volume_name(vol: Volume) -> str:
    return string_field(vol, "name")


def claim_name(vol: Volume) -> str | None:
    """The claimName of a persistentVolumeClaim volume ("" when it has none); None for
    any other volume."""
    src = source(vol, PVC_SOURCE)
    return None if src is None else string_field(src, "claimName")


def is_ephemeral(vol: Volume) -> bool:
    return source(vol, EPHEMERAL_SOURCE) is not None


def ephemeral_claim_name(pod: core_pb2.Pod, vol: Volume) -> str:
    """ephemeral.VolumeClaimName: the claim a generic ephemeral volume gets,
    `<pod name>-<volume name>`."""
    return f"{pod.metadata.name}-{volume_name(vol)}"


def pod_claim_names(pod: core_pb2.Pod) -> Iterator[tuple[str, bool]]:
    """Every claim a pod's volumes use: (claim name, whether it is a generic ephemeral
    volume's), persistentVolumeClaim volumes by their claimName."""
    for vol in pod.spec.volumes:
        name = claim_name(vol)
        if name is not None:
            yield name, False
        elif is_ephemeral(vol):
            yield ephemeral_claim_name(pod, vol), True


def pod_names_claim(pod: core_pb2.Pod, claim: str, *, ephemeral: bool) -> bool:
    """Whether one of the pod's volumes uses the claim named `claim` (in the pod's
    namespace): a persistentVolumeClaim volume, or with `ephemeral` also a generic
    ephemeral volume's claim."""
    return any(name == claim and (ephemeral or not eph) for name, eph in pod_claim_names(pod))


def ephemeral_claim_not_for_pod(pod: core_pb2.Pod, claim: storage_pb2.PersistentVolumeClaim) -> str:
    """ephemeral.VolumeIsForPod: "" when the claim's controller owner is the pod, else the
    error upstream returns (a claim of that name made for something else)."""
    meta = claim.metadata
    for ref in meta.owner_references:
        if ref.controller:
            if ref.uid == pod.metadata.uid:
                return ""
            break
    return (
        f"PVC {meta.namespace}/{meta.name} was not created for pod "
        f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
    )


#: The sources of the in-tree disks the scheduler's volume plugins look at (conflicts,
#: attach limits).
IN_TREE_DISK_SOURCES = frozenset(
    {
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "rbd",
        "iscsi",
        "azureDisk",
        "azureFile",
        "cinder",
        "vsphereVolume",
        "portworxVolume",
    }
)


_SCHEDULING_SOURCES = IN_TREE_DISK_SOURCES | {PVC_SOURCE, EPHEMERAL_SOURCE}


def has_scheduling_volumes(pod: core_pb2.Pod) -> bool:
    """Whether a volume of the pod is one the scheduler's volume plugins look at (a claim,
    a generic ephemeral volume, an in-tree disk); configMaps, secrets, emptyDirs and the
    like are not."""
    return any(key in _SCHEDULING_SOURCES for vol in pod.spec.volumes for key in vol.fields)
