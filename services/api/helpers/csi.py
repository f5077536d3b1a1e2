"""The names and rules of CSI volumes that several components share: the kubelet's
volume gate, the attach/detach controller and the hollow CSI drivers (upstream
pkg/volume/csi: the attacher's VolumeAttachment name, the plugin's unique volume name,
whether a driver requires attach)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from google.protobuf.message import Message

from protos.kubera.v1 import storagev1_pb2

#: The label kubera puts on the CSIDriver objects of the hollow CSI drivers that node
#: templates declare (their volumes are provisioned by the PV controller and attached by
#: the attach/detach controller, as the drivers' sidecars would).
LABEL_HOLLOW_DRIVER = "kubera.io/hollow-csi-driver"


def attachment_name(volume_handle: str, driver: str, node: str) -> str:
    """The VolumeAttachment of a CSI volume on a node (upstream's csiAttacher
    getAttachmentName: `csi-` + the hex sha256 of volumeHandle + driver + nodeName)."""
    digest = hashlib.sha256(f"{volume_handle}{driver}{node}".encode()).hexdigest()
    return f"csi-{digest}"


def csi_volume_name(driver: str, volume_handle: str) -> str:
    """The unique name of a CSI volume (`kubernetes.io/csi/<driver>^<volumeHandle>`), as
    node.status.volumesInUse and volumesAttached list it."""
    return f"kubernetes.io/csi/{driver}^{volume_handle}"


def attach_required(driver: str, drivers: Callable[[str], Message | None]) -> bool:
    """Whether a CSI driver's volumes are attached before use: its CSIDriver's
    spec.attachRequired, true when unset or when the driver has no CSIDriver object
    (upstream's csiAttacher / isAttachRequired)."""
    obj = drivers(driver)
    if not isinstance(obj, storagev1_pb2.CSIDriver):
        return True
    spec = obj.spec
    return not spec.HasField("attach_required") or spec.attach_required


__all__ = ["LABEL_HOLLOW_DRIVER", "attach_required", "attachment_name", "csi_volume_name"]
