"""In-tree volume plugins migrated to CSI: which CSI driver serves an in-tree volume and under
which volume handle (upstream k8s.io/csi-translation-lib, the part that names things).

Why it exists: since CSI migration went GA, an in-tree disk (awsElasticBlockStore,
gcePersistentDisk, azureDisk, cinder, vsphereVolume, portworxVolume) is attached by the CSI
driver that replaced its plugin, so whoever counts attachments (the scheduler's
NodeVolumeLimits, an attach-detach controller) counts it under that driver, with the handle
the driver would get, so the same disk reached inline and through a PersistentVolume is
one volume. Only the names are translated here; kubera attaches nothing.

Deliberate simplification: the handle of a translated GCE PD is
`projects/UNSPECIFIED/zones/<zone>/disks/<pdName>`, the zone from the volume's zone label
(UNSPECIFIED inline or without one), as the library writes it for a zonal disk; a regional
disk's `regions/...` form is not produced (the handle only needs to be the same for the
same disk).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2

from protos.kubera.v1 import storage_pb2, storagev1_pb2
from services.api.helpers.podvolumes import Volume, source, string_field
from services.api.helpers.wellknown import LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE

#: The CSINode annotation listing the in-tree plugins migrated on that node
#: (v1.MigratedPluginsAnnotationKey), comma-separated.
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"

#: Node allocatable names of attach limits (v1.ResourceAttachableVolumesPrefix).
ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
#: resource names are at most this long (ResourceNameLengthLimit in GetCSIAttachLimitKey).
_RESOURCE_NAME_LENGTH_LIMIT = 63

AWS_EBS_PLUGIN = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN = "kubernetes.io/gce-pd"
AZURE_DISK_PLUGIN = "kubernetes.io/azure-disk"
AZURE_FILE_PLUGIN = "kubernetes.io/azure-file"
CINDER_PLUGIN = "kubernetes.io/cinder"
VSPHERE_PLUGIN = "kubernetes.io/vsphere-volume"
PORTWORX_PLUGIN = "kubernetes.io/portworx-volume"

AWS_EBS_DRIVER = "ebs.csi.aws.com"
GCE_PD_DRIVER = "pd.csi.storage.gke.io"


@dataclass(frozen=True)
class InTree:
    """One migratable in-tree plugin: its source's JSON key, the field naming the disk."""

    plugin: str
    driver: str
    key: str
    id_field: str


#: csi-translation-lib's plugins, in its order; the key is the same in a pod's volume and a
#: PersistentVolume's spec.
IN_TREE: tuple[InTree, ...] = (
    InTree(GCE_PD_PLUGIN, GCE_PD_DRIVER, "gcePersistentDisk", "pdName"),
    InTree(AWS_EBS_PLUGIN, AWS_EBS_DRIVER, "awsElasticBlockStore", "volumeID"),
    InTree(CINDER_PLUGIN, "cinder.csi.openstack.org", "cinder", "volumeID"),
    InTree(AZURE_DISK_PLUGIN, "disk.csi.azure.com", "azureDisk", "diskURI"),
    InTree(AZURE_FILE_PLUGIN, "file.csi.azure.com", "azureFile", "shareName"),
    InTree(VSPHERE_PLUGIN, "csi.vsphere.vmware.com", "vsphereVolume", "volumePath"),
    InTree(PORTWORX_PLUGIN, "pxd.portworx.com", "portworxVolume", "volumeID"),
)
_BY_PLUGIN = {t.plugin: t for t in IN_TREE}

#: The plugins whose migration counts towards a node's attach limits (isCSIMigrationOn):
#: every attachable one (Azure File mounts, it does not attach).
_ATTACH_MIGRATED = frozenset(
    {
        AWS_EBS_PLUGIN,
        GCE_PD_PLUGIN,
        AZURE_DISK_PLUGIN,
        CINDER_PLUGIN,
        VSPHERE_PLUGIN,
        PORTWORX_PLUGIN,
    }
)


def driver_for_plugin(plugin: str) -> str:
    """GetCSINameFromInTreeName ("" for a plugin that is not migratable)."""
    row = _BY_PLUGIN.get(plugin)
    return row.driver if row is not None else ""


def is_migratable_plugin(plugin: str) -> bool:
    """IsMigratableIntreePluginByName."""
    return plugin in _BY_PLUGIN


def inline_plugin(vol: Volume) -> InTree | None:
    """The migratable in-tree plugin of a pod's inline volume (IsInlineMigratable)."""
    for row in IN_TREE:
        if source(vol, row.key) is not None:
            return row
    return None


def _pv_source(pv: storage_pb2.PersistentVolume, key: str) -> struct_pb2.Struct | None:
    """A PV's in-tree source by its JSON key: typed fields (GCE PD, AWS EBS) read as the
    Struct shape the inline readers take."""
    spec = pv.spec
    if key == "gcePersistentDisk" and spec.HasField("gce_persistent_disk"):
        s = struct_pb2.Struct()
        s.update({"pdName": spec.gce_persistent_disk.pd_name})
        return s
    if key == "awsElasticBlockStore" and spec.HasField("aws_elastic_block_store"):
        s = struct_pb2.Struct()
        s.update({"volumeID": spec.aws_elastic_block_store.volume_id})
        return s
    field = _PV_STRUCT_FIELDS.get(key)
    if field is not None and spec.HasField(field):
        value: struct_pb2.Struct = getattr(spec, field)
        return value
    return None


_PV_STRUCT_FIELDS = {
    "cinder": "cinder",
    "azureDisk": "azure_disk",
    "azureFile": "azure_file",
    "vsphereVolume": "vsphere_volume",
    "portworxVolume": "portworx_volume",
}


def pv_plugin(pv: storage_pb2.PersistentVolume) -> InTree | None:
    """The migratable in-tree plugin of a PersistentVolume (IsPVMigratable)."""
    for row in IN_TREE:
        if _pv_source(pv, row.key) is not None:
            return row
    return None


def _handle(row: InTree, src: struct_pb2.Struct, zone: str) -> str:
    disk = string_field(src, row.id_field)
    if row.plugin == AWS_EBS_PLUGIN:
        return ebs_volume_id(disk)
    if row.plugin == GCE_PD_PLUGIN:
        return f"projects/UNSPECIFIED/zones/{zone or 'UNSPECIFIED'}/disks/{disk}"
    return disk


def ebs_volume_id(volume_id: str) -> str:
    """KubernetesVolumeIDToEBSVolumeID: `aws://<zone>/<vol-id>` or `vol-id`, as the id."""
    if not volume_id.startswith("aws://"):
        return volume_id
    rest = volume_id[len("aws://") :]
    return rest.rsplit("/", 1)[-1]


def translate_inline(vol: Volume) -> tuple[str, str] | None:
    """TranslateInTreeInlineVolumeToCSI, names only: (driver, volume handle) of a migratable
    inline volume, None for any other."""
    row = inline_plugin(vol)
    if row is None:
        return None
    src = source(vol, row.key)
    assert src is not None
    return row.driver, _handle(row, src, "")


def translate_pv(pv: storage_pb2.PersistentVolume) -> tuple[str, str] | None:
    """TranslateInTreePVToCSI, names only: (driver, volume handle) of a migratable in-tree
    PersistentVolume, None for any other."""
    row = pv_plugin(pv)
    if row is None:
        return None
    src = _pv_source(pv, row.key)
    assert src is not None
    labels = pv.metadata.labels
    zone = labels.get(LABEL_TOPOLOGY_ZONE) or labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE, "")
    return row.driver, _handle(row, src, zone if "__" not in zone else "")


def is_csi_migration_on(csi_node: storagev1_pb2.CSINode | None, plugin: str) -> bool:
    """isCSIMigrationOn: the plugin's migration counts only on a node whose CSINode lists it
    in the migrated-plugins annotation (every migration gate is GA)."""
    if csi_node is None or plugin not in _ATTACH_MIGRATED:
        return False
    listed = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in listed.split(",")


def csi_attach_limit_key(driver: str) -> str:
    """GetCSIAttachLimitKey: `attachable-volumes-csi-<driver>`, shortened with a hash of the
    name when that would not be a valid resource name."""
    prefix = ATTACHABLE_VOLUMES_PREFIX + "csi-"
    if len(prefix) + len(driver) >= _RESOURCE_NAME_LENGTH_LIMIT:
        digest = hashlib.sha1(driver.encode()).hexdigest()[:16]  # noqa: S324 - a name, not a secret
        return prefix + driver[:23] + digest
    return prefix + driver


def pv_csi(pv: Any) -> tuple[str, str] | None:
    """(driver, handle) of a PersistentVolume with a csi source, else None."""
    if pv.spec.HasField("csi"):
        return pv.spec.csi.driver, pv.spec.csi.volume_handle
    return None
