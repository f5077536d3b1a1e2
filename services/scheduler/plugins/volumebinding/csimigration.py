"""In-tree volumes seen as their CSI driver's (upstream binder.go tryTranslatePVToCSI and the
topology part of k8s.io/csi-translation-lib; the driver names are in
services/api/helpers/csimigration.py).

Why it exists: once a node's CSINode says an in-tree plugin is migrated to CSI there
(annotation `storage.alpha.kubernetes.io/migrated-plugins`), the volume is mounted by the
CSI driver, whose nodes are labelled with the driver's topology key, not the in-tree zone
label. So a bound in-tree volume's node affinity is checked in its CSI form: the zone the
volume names (its node affinity's zone requirement, else its zone label) under the
driver's key.

Only the topology is translated (the rest of the CSI source does not change what the
scheduler decides), for the plugins VolumeBinding translates (isCSIMigrationOnForPlugin):
GCE PD, AWS EBS, Azure Disk and Cinder; Portworx (its migration gate is off by default)
and the others are left in-tree.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import storage_pb2
from services.api.helpers.csimigration import (
    AWS_EBS_PLUGIN,
    AZURE_DISK_PLUGIN,
    CINDER_PLUGIN,
    GCE_PD_PLUGIN,
    is_csi_migration_on,
    pv_plugin,
)
from services.api.helpers.wellknown import LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE

#: A zone label's value may list several zones, joined by this (labelMultiZoneDelimiter).
MULTI_ZONE_DELIMITER = "__"

#: in-tree plugin -> its CSI driver's zone topology key.
TOPOLOGY_KEYS: dict[str, str] = {
    GCE_PD_PLUGIN: "topology.gke.io/zone",
    AWS_EBS_PLUGIN: "topology.ebs.csi.aws.com/zone",
    AZURE_DISK_PLUGIN: "topology.disk.csi.azure.com/zone",
    CINDER_PLUGIN: "topology.cinder.csi.openstack.org/zone",
}


def _affinity_values(pv: storage_pb2.PersistentVolume, key: str) -> list[str]:
    if not pv.spec.node_affinity.HasField("required"):
        return []
    return [
        v
        for term in pv.spec.node_affinity.required.node_selector_terms
        for r in term.match_expressions
        if r.key == key
        for v in r.values
    ]


def _zone_label(pv: storage_pb2.PersistentVolume) -> str:
    """getTopologyLabel: the zone label the volume uses, in its node affinity first, then
    its labels; the GA label when neither has one."""
    for key in (LABEL_TOPOLOGY_ZONE, LABEL_FAILURE_DOMAIN_BETA_ZONE):
        if _affinity_values(pv, key):
            return key
    for key in (LABEL_TOPOLOGY_ZONE, LABEL_FAILURE_DOMAIN_BETA_ZONE):
        if key in pv.metadata.labels:
            return key
    return LABEL_TOPOLOGY_ZONE


def translate(pv: storage_pb2.PersistentVolume, csi_node: Any) -> storage_pb2.PersistentVolume:
    """tryTranslatePVToCSI's topology: a copy of `pv` whose zone requirement uses the CSI
    driver's key, when the volume is migratable and migrated on the node; else `pv`."""
    row = pv_plugin(pv)
    csi_key = TOPOLOGY_KEYS.get(row.plugin) if row is not None else None
    if row is None or csi_key is None or not is_csi_migration_on(csi_node, row.plugin):
        return pv
    if _affinity_values(pv, csi_key):
        return pv  # already in CSI form
    out = storage_pb2.PersistentVolume()
    out.CopyFrom(pv)
    label = _zone_label(pv)
    if _affinity_values(pv, label):
        for term in out.spec.node_affinity.required.node_selector_terms:
            for r in term.match_expressions:
                if r.key == label:
                    r.key = csi_key
        return out
    zones = [z for z in pv.metadata.labels.get(label, "").split(MULTI_ZONE_DELIMITER) if z]
    if not zones:
        return out
    terms = out.spec.node_affinity.required.node_selector_terms
    if not terms:
        terms.add()
    for term in terms:
        term.match_expressions.add(key=csi_key, operator="In", values=zones)
    return out
