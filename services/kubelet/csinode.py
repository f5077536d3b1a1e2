"""What the hollow CSI drivers of a pool's nodes publish (csidriver.py declares them):

- a CSINode per node that has drivers (name = the node's), one entry per driver: its
  name, nodeID (the node's name), topologyKeys and allocatable.count (the attach limit),
  as the kubelet's CSI plugin registration writes it upstream;
- a CSIDriver per driver (attachRequired as declared, storageCapacity when the driver
  declares capacity, volumeLifecycleModes Persistent), labelled
  `kubera.io/hollow-csi-driver`: the PV controller provisions for the drivers so
  labelled, and the attach/detach controller attaches their volumes;
- CSIStorageCapacity objects in kube-system (what external-provisioner publishes with
  --enable-capacity), one per (driver, class, node) for `per: node` or per (driver,
  class, zone) for `per: zone`: nodeTopology matches the node's (or the zone's) labels
  of the driver's topology keys, capacity and maximumVolumeSize as declared. They carry
  external-provisioner's labels (csi.storage.k8s.io/drivername, managed-by) and the
  hollow label. A zone's object is the same whichever pool writes it, so pools sharing
  a zone write it over each other harmlessly.

Everything is created when the pool starts (existing objects written over), like the
ResourceSlices; nothing is re-created if deleted while the pool runs, and the objects
stay when the pool stops.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import storagev1_pb2
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.api.helpers.wellknown import LABEL_TOPOLOGY_ZONE
from services.client import Client
from services.kubelet.csidriver import HollowCSIDriver, StorageCapacity
from services.kubelet.slices import create_or_update
from services.kubelet.template import NodePlan

#: Where the capacity objects live (upstream: the external-provisioner's namespace).
CAPACITY_NAMESPACE = "kube-system"
LABEL_DRIVER_NAME = "csi.storage.k8s.io/drivername"
LABEL_MANAGED_BY = "csi.storage.k8s.io/managed-by"
MANAGED_BY = "kubera-hollow-csi"


def csi_node(plan: NodePlan) -> storagev1_pb2.CSINode | None:
    """The CSINode of a node whose kind has CSI drivers (None without any)."""
    if not plan.kind.csi_drivers:
        return None
    obj = storagev1_pb2.CSINode(api_version="storage.k8s.io/v1", kind="CSINode")
    obj.metadata.name = plan.name
    for d in plan.kind.csi_drivers:
        entry = obj.spec.drivers.add(name=d.name, node_id=plan.name)
        entry.topology_keys.extend(d.topology_keys)
        if d.attach_limit is not None:
            entry.allocatable.count = d.attach_limit
    return obj


def csi_driver(d: HollowCSIDriver) -> storagev1_pb2.CSIDriver:
    """The CSIDriver object of a hollow driver."""
    obj = storagev1_pb2.CSIDriver(api_version="storage.k8s.io/v1", kind="CSIDriver")
    obj.metadata.name = d.name
    obj.metadata.labels[LABEL_HOLLOW_DRIVER] = "true"
    obj.spec.attach_required = d.attach_required
    obj.spec.pod_info_on_mount = False
    obj.spec.storage_capacity = bool(d.capacity)
    obj.spec.volume_lifecycle_modes.append("Persistent")
    obj.spec.fs_group_policy = "ReadWriteOnceWithFSType"
    obj.spec.requires_republish = False
    return obj


def _capacity(
    d: HollowCSIDriver, cap: StorageCapacity, segment: dict[str, str]
) -> storagev1_pb2.CSIStorageCapacity:
    obj = storagev1_pb2.CSIStorageCapacity(
        api_version="storage.k8s.io/v1", kind="CSIStorageCapacity"
    )
    key = "/".join([d.name, cap.storage_class, *(f"{k}={v}" for k, v in sorted(segment.items()))])
    obj.metadata.name = "csisc-" + hashlib.sha256(key.encode()).hexdigest()[:16]
    obj.metadata.namespace = CAPACITY_NAMESPACE
    obj.metadata.labels.update(
        {LABEL_DRIVER_NAME: d.name, LABEL_MANAGED_BY: MANAGED_BY, LABEL_HOLLOW_DRIVER: "true"}
    )
    obj.storage_class_name = cap.storage_class
    obj.node_topology.match_labels.update(segment)
    obj.capacity = cap.capacity
    if cap.maximum_volume_size:
        obj.maximum_volume_size = cap.maximum_volume_size
    return obj


def published(
    plans: Sequence[NodePlan],
) -> tuple[list[storagev1_pb2.CSIDriver], list[storagev1_pb2.CSINode], list[Message]]:
    """The CSIDrivers, CSINodes and CSIStorageCapacities the nodes of `plans` publish."""
    drivers: dict[str, storagev1_pb2.CSIDriver] = {}
    nodes: list[storagev1_pb2.CSINode] = []
    capacities: dict[str, Message] = {}
    for plan in plans:
        node = csi_node(plan)
        if node is None:
            continue
        nodes.append(node)
        for d in plan.kind.csi_drivers:
            drivers.setdefault(d.name, csi_driver(d))
            for cap in d.capacity:
                if cap.per == "zone":
                    segment = {LABEL_TOPOLOGY_ZONE: plan.labels.get(LABEL_TOPOLOGY_ZONE, "")}
                else:
                    segment = {k: plan.labels.get(k, "") for k in d.topology_keys}
                obj = _capacity(d, cap, segment)
                capacities[obj.metadata.name] = obj
    return list(drivers.values()), nodes, list(capacities.values())


async def publish_csi(client: Client, plans: Sequence[NodePlan], *, max_batch: int = 500) -> int:
    """Create (or write over) everything `plans` publish; returns how many objects."""
    total = 0
    for objs in published(plans):
        await create_or_update(client, objs, max_batch)
        total += len(objs)
    return total


__all__ = [
    "CAPACITY_NAMESPACE",
    "csi_driver",
    "csi_node",
    "publish_csi",
    "published",
]
