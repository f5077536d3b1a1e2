"""In-tree volumes seen as their CSI driver's (upstream binder.go tryTranslatePVToCSI and the
topology part of k8s.io/csi-translation-lib).

Why it exists: once a node's CSINode says an in-tree plugin is migrated to CSI there
(annotation `storage.alpha.kubernetes.io/migrated-plugins`), the volume is mounted by the
CSI driver, whose nodes are labelled with the driver's topology key, not the in-tree zone
label. So a bound in-tree volume's node affinity is checked in its CSI form: the zone the
volume names (its node affinity's zone requirement, else its zone label) under the
driver's key.

Only the topology is translated (the rest of the CSI source does not change what the
scheduler decides). The migrated plugins are the ones whose migration is on by default
upstream: GCE PD, AWS EBS, Azure Disk and Cinder; Portworx (migration off by default) and
the others are left in-tree.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import storage_pb2

MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
ZONE_GA = "topology.kubernetes.io/zone"
ZONE_BETA = "failure-domain.beta.kubernetes.io/zone"
#: A zone label's value may list several zones, joined by this (labelMultiZoneDelimiter).
MULTI_ZONE_DELIMITER = "__"

#: PersistentVolumeSpec source field -> (in-tree plugin name, its CSI driver's zone key).
MIGRATABLE: dict[str, tuple[str, str]] = {
    "gce_persistent_disk": ("kubernetes.io/gce-pd", "topology.gke.io/zone"),
    "aws_elastic_block_store": ("kubernetes.io/aws-ebs", "topology.ebs.csi.aws.com/zone"),
    "azure_disk": ("kubernetes.io/azure-disk", "topology.disk.csi.azure.com/zone"),
    "cinder": ("kubernetes.io/cinder", "topology.cinder.csi.openstack.org/zone"),
}


def in_tree_plugin(pv: storage_pb2.PersistentVolume) -> tuple[str, str] | None:
    """(plugin name, CSI zone key) of a migratable in-tree volume, else None."""
    for source, plugin in MIGRATABLE.items():
        if pv.spec.HasField(source):  # type: ignore[arg-type]
            return plugin
    return None


def migrated_on_node(plugin: str, csi_node: Any) -> bool:
    """isPluginMigratedToCSIOnNode: the node's CSINode lists the plugin as migrated."""
    if csi_node is None:
        return False
    raw = csi_node.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
    return plugin in raw.split(",") if raw else False


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
    for key in (ZONE_GA, ZONE_BETA):
        if _affinity_values(pv, key):
            return key
    for key in (ZONE_GA, ZONE_BETA):
        if key in pv.metadata.labels:
            return key
    return ZONE_GA


def translate(pv: storage_pb2.PersistentVolume, csi_node: Any) -> storage_pb2.PersistentVolume:
    """tryTranslatePVToCSI's topology: a copy of `pv` whose zone requirement uses the CSI
    driver's key, when the volume is migratable and migrated on the node; else `pv`."""
    plugin = in_tree_plugin(pv)
    if plugin is None or not migrated_on_node(plugin[0], csi_node):
        return pv
    csi_key = plugin[1]
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
