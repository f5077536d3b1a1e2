"""The storage objects the scheduler's volume plugins read: PersistentVolumes,
PersistentVolumeClaims, StorageClasses, CSINodes and VolumeAttachments (and, for
VolumeBinding's capacity check, CSIDrivers and CSIStorageCapacities), as listers over the
scheduler's informers (upstream: the SharedInformerFactory's storage listers a plugin takes
from its Handle).

Why it exists: VolumeRestrictions, VolumeZone, NodeVolumeLimits and VolumeBinding read the
same kinds the same way. Each plugin's factory calls `volume_listers(handle, kinds)` with
the kinds it reads; the scheduler makes one informer per kind on first request (the
informer's store is the lister) and turns its adds, updates and deletes into the cluster
events `ClusterEvent(<kind>, ADD | UPDATE | DELETE)` the plugins' queueing hints register
for, so the event resource names below are the kind names. Kinds a plugin did not ask for
stay empty and cost no informer.

A missing object raises `NotFound`, worded as client-go's listers word it
(`persistentvolumeclaim "data" not found`): the plugins answer it with
UnschedulableAndUnresolvable and that text, as upstream's do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.podvolumes import pod_names_claim
from services.api.helpers.volumes import VolumeIndex
from services.api.machinery.meta import object_key
from services.client import Handlers
from services.scheduler.framework.types import QueueingHint

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim
StorageClass = storagev1_pb2.StorageClass
CSIDriver = storagev1_pb2.CSIDriver
CSIStorageCapacity = storagev1_pb2.CSIStorageCapacity
CSINode = storagev1_pb2.CSINode
VolumeAttachment = storagev1_pb2.VolumeAttachment

#: Kind names, which are also the ClusterEvent resources of their informers' events.
PERSISTENT_VOLUME = "PersistentVolume"
PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
CSI_NODE = "CSINode"
#: What VolumeBinding reads (upstream's binder: its listers, and CapacityCheck's).
VOLUME_BINDING_KINDS = (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    CSI_NODE,
    CSI_DRIVER,
    CSI_STORAGE_CAPACITY,
)
VOLUME_ATTACHMENT = "VolumeAttachment"
ALL_KINDS = (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS, CSI_NODE, VOLUME_ATTACHMENT)

#: The group-qualified singular resource client-go's listers name in NotFound errors.
_LISTER_RESOURCE = {
    PERSISTENT_VOLUME: "persistentvolume",
    PERSISTENT_VOLUME_CLAIM: "persistentvolumeclaim",
    STORAGE_CLASS: "storageclass.storage.k8s.io",
    CSI_DRIVER: "csidriver.storage.k8s.io",
    CSI_STORAGE_CAPACITY: "csistoragecapacity.storage.k8s.io",
    CSI_NODE: "csinode.storage.k8s.io",
    VOLUME_ATTACHMENT: "volumeattachment.storage.k8s.io",
}


class NotFound(LookupError):
    """A lister's miss: `str()` is client-go's `<resource> "<name>" not found`."""

    def __init__(self, kind: str, name: str) -> None:
        super().__init__(f'{_LISTER_RESOURCE[kind]} "{name}" not found')
        self.kind = kind
        self.name = name


Store = Mapping[str, Any]


def _view(source: Any) -> Store:
    """An informer's current store (read at each use: an informer replaces its store when it
    relists), or a plain mapping as it is."""
    store = getattr(source, "store", source)
    out: Store = store
    return out


class VolumeListers:
    """Read-only views keyed as informer stores are (`ns/name` or `name`). Each source is an
    Informer (its store read at each use) or, in tests, a mapping."""

    def __init__(
        self,
        pvs: Any = None,
        pvcs: Any = None,
        classes: Any = None,
        csi_drivers: Any = None,
        capacities: Any = None,
        csi_nodes: Any = None,
        volume_attachments: Any = None,
    ) -> None:
        self._sources: dict[str, Any] = {
            PERSISTENT_VOLUME: pvs if pvs is not None else {},
            PERSISTENT_VOLUME_CLAIM: pvcs if pvcs is not None else {},
            STORAGE_CLASS: classes if classes is not None else {},
            CSI_DRIVER: csi_drivers if csi_drivers is not None else {},
            CSI_STORAGE_CAPACITY: capacities if capacities is not None else {},
            CSI_NODE: csi_nodes if csi_nodes is not None else {},
            VOLUME_ATTACHMENT: volume_attachments if volume_attachments is not None else {},
        }

        #: The volumes by class (VolumeIndex), kept by the volume informer's events; None
        #: while the volumes are a plain mapping (tests).
        self.pv_index: VolumeIndex | None = None
        self._index_source(pvs)
        #: node name -> how many times a VolumeAttachment to it changed, and its
        #: VolumeAttachments by name, kept by the attachment informer's events; None while
        #: the attachments are a plain mapping.
        self._attachment_changes: dict[str, int] | None = None
        self._attachments_by_node: dict[str, dict[str, VolumeAttachment]] | None = None
        self._index_attachments(volume_attachments)

    def set_source(self, kind: str, source: Any) -> None:
        self._sources[kind] = source
        if kind == PERSISTENT_VOLUME:
            self._index_source(source)
        elif kind == VOLUME_ATTACHMENT:
            self._index_attachments(source)

    def _index_attachments(self, source: Any) -> None:
        if not hasattr(source, "add_handlers"):
            self._attachment_changes = self._attachments_by_node = None
            return
        counts: dict[str, int] = {}
        by_node: dict[str, dict[str, VolumeAttachment]] = {}
        self._attachment_changes, self._attachments_by_node = counts, by_node

        def removed(va: VolumeAttachment) -> None:
            node = va.spec.node_name
            counts[node] = counts.get(node, 0) + 1
            on_node = by_node.get(node)
            if on_node is not None:
                on_node.pop(va.metadata.name, None)

        def added(va: VolumeAttachment) -> None:
            node = va.spec.node_name
            counts[node] = counts.get(node, 0) + 1
            by_node.setdefault(node, {})[va.metadata.name] = va

        def updated(old: VolumeAttachment, new: VolumeAttachment) -> None:
            removed(old)
            added(new)

        for va in _view(source).values():
            added(va)
        source.add_handlers(Handlers(on_add=added, on_update=updated, on_delete=removed))  # type: ignore[arg-type]

    def attachments_to(self, node_name: str) -> list[VolumeAttachment] | None:
        """The VolumeAttachments to `node_name`, from the index the attachment informer's
        events keep; None when the attachments are a plain mapping (walk `attachments`)."""
        if self._attachments_by_node is None:
            return None
        return list(self._attachments_by_node.get(node_name, {}).values())

    def attachments_version(self, node_name: str) -> int | None:
        """A value that differs whenever a VolumeAttachment to `node_name` changed since it
        was taken; None when the attachments are a plain mapping (nothing may be cached)."""
        if self._attachment_changes is None:
            return None
        return self._attachment_changes.get(node_name, 0)

    def _index_source(self, source: Any) -> None:
        if not hasattr(source, "add_handlers"):
            self.pv_index = None
            return
        index = self.pv_index = VolumeIndex(_view(source).values())
        source.add_handlers(
            Handlers(
                on_add=index.add,  # type: ignore[arg-type]
                on_update=lambda _o, n: index.add(n),  # type: ignore[arg-type]
                on_delete=lambda o: index.remove(o.metadata.name),  # type: ignore[attr-defined]
            )
        )

    def get(self, kind: str, key: str) -> Any:
        """The object of `kind` stored under `key` (`ns/name` or `name`), or None."""
        return _view(self._sources[kind]).get(key)

    def store(self, kind: str) -> Store:
        """The current store of `kind`'s source (an informer replaces it when it relists)."""
        return _view(self._sources[kind])

    def pv_names_of_class(self, name: str) -> list[str] | None:
        """The names of the volumes of class `name` ("" for none), from the index; None
        without one (walk `pvs`)."""
        return self.pv_index.of_class(name) if self.pv_index is not None else None

    @property
    def pvs(self) -> Store:
        return _view(self._sources[PERSISTENT_VOLUME])

    @property
    def pvcs(self) -> Store:
        return _view(self._sources[PERSISTENT_VOLUME_CLAIM])

    @property
    def classes(self) -> Store:
        return _view(self._sources[STORAGE_CLASS])

    @property
    def csi_nodes(self) -> Store:
        return _view(self._sources[CSI_NODE])

    @property
    def volume_attachments(self) -> Store:
        return _view(self._sources[VOLUME_ATTACHMENT])

    @property
    def csi_drivers(self) -> Store:
        return _view(self._sources[CSI_DRIVER])

    @property
    def capacities(self) -> Store:
        """CSIStorageCapacities, keyed `namespace/name`."""
        return _view(self._sources[CSI_STORAGE_CAPACITY])

    def pvc(self, namespace: str, name: str) -> PVC:
        got: PVC | None = self.pvcs.get(f"{namespace}/{name}" if namespace else name)
        if got is None:
            raise NotFound(PERSISTENT_VOLUME_CLAIM, name)
        return got

    def pv(self, name: str) -> PV:
        got: PV | None = self.pvs.get(name)
        if got is None:
            raise NotFound(PERSISTENT_VOLUME, name)
        return got

    def storage_class(self, name: str) -> StorageClass:
        got: StorageClass | None = self.classes.get(name)
        if got is None:
            raise NotFound(STORAGE_CLASS, name)
        return got

    def csi_node(self, name: str) -> CSINode:
        got: CSINode | None = self.csi_nodes.get(name)
        if got is None:
            raise NotFound(CSI_NODE, name)
        return got

    def attachments(self) -> Iterable[VolumeAttachment]:
        return self.volume_attachments.values()


def volume_listers(handle: Any, kinds: Iterable[str] = ALL_KINDS) -> VolumeListers:
    """Listers over the scheduler's informers of `kinds` (made on first request, so call
    from a plugin's factory). A handle without informers (a framework unit test) gives
    empty listers: no claim exists there."""
    informer = getattr(handle, "informer", None)
    listers = VolumeListers()
    if informer is None:
        return listers
    for kind in kinds:
        listers.set_source(kind, informer(kind))
    return listers


def listers_of(*objects: Any) -> VolumeListers:
    """Listers holding `objects` (any of the kinds, told apart by message type): for
    tests and what-if tools."""
    by_type = {
        PV: "pvs",
        PVC: "pvcs",
        StorageClass: "classes",
        CSINode: "csi_nodes",
        VolumeAttachment: "volume_attachments",
        CSIDriver: "csi_drivers",
        CSIStorageCapacity: "capacities",
    }
    stores: dict[str, dict[str, Any]] = {name: {} for name in by_type.values()}
    for obj in objects:
        stores[by_type[type(obj)]][object_key(obj)] = obj
    return VolumeListers(**stores)


def after_claim_event(pod: core_pb2.Pod, claim: Any, *, ephemeral: bool = False) -> QueueingHint:
    """The queueing hint of a claim added (or updated): QUEUE when it is one the pod uses,
    in its namespace (with `ephemeral`, also as a generic ephemeral volume's claim); QUEUE
    for an object that is not a claim, as upstream does on a conversion error."""
    if not isinstance(claim, PVC):
        return QueueingHint.QUEUE
    if claim.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    if pod_names_claim(pod, claim.metadata.name, ephemeral=ephemeral):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP
