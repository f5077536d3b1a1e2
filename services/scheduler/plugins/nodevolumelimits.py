"""NodeVolumeLimits: a node may not get more volumes of a CSI driver attached than the driver
allows there.

Upstream plugins/nodevolumelimits (csi.go: the CSILimits plugin; the in-tree EBS/GCE/Azure
limits plugins are gone upstream). The limit of driver D on a node is the CSINode's
`spec.drivers[D].allocatable.count`, else the node's allocatable
`attachable-volumes-csi-D`; a driver with neither is unlimited. What counts, as unique
`<driver>/<volume handle>` names (a volume shared by pods counts once):

- a claim bound to a CSI PersistentVolume: its driver and handle;
- a claim bound to an in-tree PersistentVolume whose plugin is migrated on the node (listed
  in the CSINode's migrated-plugins annotation): under the CSI driver that replaced it, with
  the translated handle (services/api/helpers/csimigration.py);
- an unbound claim (or one whose volume is missing): under its StorageClass's provisioner
  (translated when it is a migrated in-tree one), with a handle made of a random prefix and
  the claim, so one unbound claim shared by two pods counts once;
- a generic ephemeral volume: its claim `<pod>-<volume>`, which must be the pod's own;
- a migratable inline in-tree volume, when its plugin is migrated on the node;
- a VolumeAttachment to the node: its attacher and the handle of its volume, so a volume
  still attached after its pod went away keeps counting.

Filter rejects with Unschedulable "node(s) exceed max volume count" when, for a driver, the
attached volumes plus the pod's new ones exceed the limit. The pod's volumes are only
deduplicated against the pods' volumes on the node, not against VolumeAttachments (as
upstream's table has it: a volume attached without a pod still takes a slot). A missing claim
of the pod is UnschedulableAndUnresolvable `looking up PVC ns/name: ...`. PreFilter Skips a
pod without claims, ephemeral or migratable inline volumes.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers import csimigration as csi
from services.api.helpers.podvolumes import (
    claim_name,
    ephemeral_claim_name,
    ephemeral_claim_not_for_pod,
    is_ephemeral,
)
from services.api.helpers.volumes import claim_class
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.helpers import POD
from services.scheduler.volumelisters import (
    CSI_NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    VOLUME_ATTACHMENT,
    NotFound,
    VolumeListers,
    after_claim_event,
    volume_listers,
)

NAME = "NodeVolumeLimits"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED = "node(s) exceed max volume count"

CSINode = storagev1_pb2.CSINode
#: unique volume name ("<driver>/<handle>") -> its limit key ("attachable-volumes-csi-<driver>").
Volumes = dict[str, str]
#: A node's limits by key, the volumes its pods use, and the attached count by limit key.
NodeCounts = tuple[dict[str, int], Volumes, dict[str, int]]


@dataclass
class _Kept:
    """A node's counts and what they were derived from: (its generation, the version of
    the VolumeAttachments to it), its CSINode, and each (kind, key, object) read (None:
    it was missing)."""

    key: tuple[int, int]
    csi_node: CSINode | None
    reads: list[tuple[str, str, Any]]
    counted: NodeCounts | PodVolumeError


@dataclass
class Args:
    """NodeVolumeLimits takes no arguments."""


class CycleCache:
    """What one attempt's Filter calls share (written by PreFilter; Filter makes its own when
    PreFilter did not run): the pod's own volumes per migration setting of a CSINode (they
    differ only by which in-tree plugins the node migrated), and the VolumeAttachments by
    node. Read-mostly facts of this attempt, so clones share it."""

    def __init__(self) -> None:
        self._new: dict[str | None, Volumes | PodVolumeError] = {}
        self._attachments: dict[str, list[storagev1_pb2.VolumeAttachment]] | None = None
        self._stores: dict[str, Mapping[str, Any]] | None = None

    def clone(self) -> CycleCache:
        return self

    def new_volumes(
        self, plugin: NodeVolumeLimits, pod: core_pb2.Pod, csi_node: CSINode | None
    ) -> Volumes | PodVolumeError:
        key = (
            None
            if csi_node is None
            else csi_node.metadata.annotations.get(csi.MIGRATED_PLUGINS_ANNOTATION, "")
        )
        found = self._new.get(key)
        if found is None:
            volumes: Volumes = {}
            try:
                plugin.attachable_volumes(pod, csi_node, True, volumes)
                found = volumes
            except PodVolumeError as e:
                found = e
            self._new[key] = found
        return found

    def stores(self, listers: VolumeListers) -> dict[str, Mapping[str, Any]]:
        """The claim, volume and class stores, looked up once for the attempt."""
        if self._stores is None:
            self._stores = {
                kind: listers.store(kind)
                for kind in (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS)
            }
        return self._stores

    def attachments_of(
        self, listers: VolumeListers, node_name: str
    ) -> list[storagev1_pb2.VolumeAttachment]:
        indexed = listers.attachments_to(node_name)
        if indexed is not None:
            return indexed
        if self._attachments is None:
            self._attachments = {}
            for va in listers.attachments():
                self._attachments.setdefault(va.spec.node_name, []).append(va)
        return self._attachments.get(node_name, [])


class PodVolumeError(Exception):
    """A pod's volume cannot be counted; `missing` when it is the pod's claim not found."""

    def __init__(self, message: str, *, missing: bool = False) -> None:
        super().__init__(message)
        self.missing = missing


def counts_volumes(vol: Any) -> bool:
    """A volume NodeVolumeLimits may count: a claim, an ephemeral or a migratable inline
    volume."""
    return claim_name(vol) is not None or is_ephemeral(vol) or csi.inline_plugin(vol) is not None


class NodeVolumeLimits:
    """PreFilterPlugin, FilterPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(self, listers: VolumeListers, *, random_prefix: str | None = None) -> None:
        self.listers = listers
        #: Unbound claims are counted under a handle starting with this, so no real volume
        #: handle equals one.
        self.random_prefix = random_prefix if random_prefix is not None else secrets.token_hex(16)
        self._exceeded = Status.unschedulable(ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, plugin=NAME)
        #: node name -> what was counted on it, and what the count depended on.
        self._counts: dict[str, _Kept] = {}
        #: The objects the count in progress read (None: no count is in progress).
        self._reads: list[tuple[str, str, Any]] | None = None

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if any(counts_volumes(v) for v in pod_info.pod.spec.volumes):
            state.write(PRE_FILTER_STATE_KEY, CycleCache())
            return None, Status.success()
        return None, Status.skip(NAME)

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        pod = pod_info.pod
        if not pod.spec.volumes:
            return Status.success()
        csi_node = self.listers.csi_nodes.get(node_info.name)
        cache = state.get(PRE_FILTER_STATE_KEY)
        if cache is None:
            cache = CycleCache()
        found = cache.new_volumes(self, pod, csi_node)
        if isinstance(found, PodVolumeError):
            if found.missing:
                return Status.unresolvable(str(found), plugin=NAME)
            return Status.as_error(found, plugin=NAME)
        if not found:
            return Status.success()
        counted = self._node_counts(node_info, csi_node, cache)
        if isinstance(counted, PodVolumeError):
            return Status.as_error(counted, plugin=NAME)
        limits, by_pods, attached_count = counted
        if not limits:
            return Status.success()
        new_count: dict[str, int] = {}
        for unique, key in found.items():
            if unique not in by_pods:
                new_count[key] = new_count.get(key, 0) + 1
        for key, count in new_count.items():
            limit = limits.get(key)
            if limit is not None and attached_count.get(key, 0) + count > limit:
                return self._exceeded
        return Status.success()

    def _node_counts(
        self, node_info: NodeInfo, csi_node: CSINode | None, cache: CycleCache
    ) -> NodeCounts | PodVolumeError:
        """What a node holds, for every pod Filter asks about: its limits, the volumes its
        pods use, and how many volumes of each limit key are attached (by its pods and its
        VolumeAttachments). Kept per node while its generation, its CSINode, the
        VolumeAttachments to it and every claim, volume and class the count read are the
        same objects (informers replace an object on each change); nothing is kept where
        the listers are plain mappings (tests), which say nothing of their changes."""
        attachments = self.listers.attachments_version(node_info.name)
        if attachments is None:
            return self._count_node(node_info, csi_node, cache)
        key = (node_info.generation, attachments)
        kept = self._counts.get(node_info.name)
        if kept is not None and kept.key == key and kept.csi_node is csi_node:
            stores = cache.stores(self.listers)
            if all(stores[kind].get(k) is obj for kind, k, obj in kept.reads):
                return kept.counted
        self._reads = []
        try:
            counted = self._count_node(node_info, csi_node, cache)
            self._counts[node_info.name] = _Kept(key, csi_node, self._reads, counted)
        finally:
            self._reads = None
        return counted

    def _read(self, kind: str, key: str, obj: Any) -> None:
        if self._reads is not None:
            self._reads.append((kind, key, obj))

    def _pvc(self, namespace: str, name: str) -> storage_pb2.PersistentVolumeClaim:
        key = f"{namespace}/{name}" if namespace else name
        found = self.listers.get(PERSISTENT_VOLUME_CLAIM, key)
        self._read(PERSISTENT_VOLUME_CLAIM, key, found)
        if found is None:
            raise NotFound(PERSISTENT_VOLUME_CLAIM, name)
        return found  # type: ignore[no-any-return]

    def _pv(self, name: str) -> storage_pb2.PersistentVolume | None:
        found = self.listers.get(PERSISTENT_VOLUME, name)
        self._read(PERSISTENT_VOLUME, name, found)
        return found  # type: ignore[no-any-return]

    def _count_node(
        self, node_info: NodeInfo, csi_node: CSINode | None, cache: CycleCache
    ) -> NodeCounts | PodVolumeError:
        limits = volume_limits(node_info, csi_node)
        if not limits:
            return limits, {}, {}
        by_pods: Volumes = {}
        for existing in node_info.pods:
            if not existing.pod.spec.volumes:
                continue
            try:
                self.attachable_volumes(existing.pod, csi_node, False, by_pods)
            except PodVolumeError as e:
                return e
        attached = dict(by_pods)
        attached.update(self.attached_by_volume_attachments(node_info.name, cache))
        attached_count: dict[str, int] = {}
        for limit_key in attached.values():
            attached_count[limit_key] = attached_count.get(limit_key, 0) + 1
        return limits, by_pods, attached_count

    # ------------------------------------------------------------------ counting

    def attachable_volumes(
        self, pod: core_pb2.Pod, csi_node: CSINode | None, new_pod: bool, out: Volumes
    ) -> None:
        """filterAttachableVolumes: add the pod's countable volumes to `out`. For the pod
        being scheduled a missing claim is an error; for pods on the node it is skipped."""
        namespace = pod.metadata.namespace
        for vol in pod.spec.volumes:
            name = claim_name(vol)
            ephemeral = name is None and is_ephemeral(vol)
            if ephemeral:
                name = ephemeral_claim_name(pod, vol)
            if name is None:
                self._inline(vol, csi_node, out)
                continue
            if not name:
                raise PodVolumeError("PersistentVolumeClaim had no name")
            try:
                claim = self._pvc(namespace, name)
            except NotFound as e:
                if new_pod:
                    raise PodVolumeError(
                        f"looking up PVC {namespace}/{name}: {e}", missing=True
                    ) from e
                continue
            if ephemeral:
                problem = ephemeral_claim_not_for_pod(pod, claim)
                if problem:
                    raise PodVolumeError(problem)
            driver, handle = self._driver_info(csi_node, claim)
            if driver and handle:
                out[f"{driver}/{handle}"] = csi.csi_attach_limit_key(driver)

    @staticmethod
    def _inline(vol: Any, csi_node: CSINode | None, out: Volumes) -> None:
        """checkAttachableInlineVolume: a migratable inline volume counts where its plugin is
        migrated."""
        row = csi.inline_plugin(vol)
        if row is None or not csi.is_csi_migration_on(csi_node, row.plugin):
            return
        translated = csi.translate_inline(vol)
        if translated is None:
            return
        driver, handle = translated
        out[f"{driver}/{handle}"] = csi.csi_attach_limit_key(driver)

    def _driver_info(
        self, csi_node: CSINode | None, claim: storage_pb2.PersistentVolumeClaim
    ) -> tuple[str, str]:
        """getCSIDriverInfo: the claim's (driver, handle), ("", "") when it does not count."""
        pv_name = claim.spec.volume_name
        if not pv_name:
            return self._driver_info_from_class(csi_node, claim)
        pv = self._pv(pv_name)
        if pv is None:
            return self._driver_info_from_class(csi_node, claim)
        return pv_driver_info(pv, csi_node)

    def _driver_info_from_class(
        self, csi_node: CSINode | None, claim: storage_pb2.PersistentVolumeClaim
    ) -> tuple[str, str]:
        """getCSIDriverInfoFromSC: an unbound claim counts under its class's provisioner."""
        class_name = claim_class(claim)
        if not class_name:
            return "", ""
        sc = self.listers.get(STORAGE_CLASS, class_name)
        self._read(STORAGE_CLASS, class_name, sc)
        if sc is None:
            return "", ""
        handle = f"{self.random_prefix}-{claim.metadata.namespace}/{claim.metadata.name}"
        provisioner = sc.provisioner
        if csi.is_migratable_plugin(provisioner):
            if not csi.is_csi_migration_on(csi_node, provisioner):
                return "", ""
            return csi.driver_for_plugin(provisioner), handle
        return provisioner, handle

    def attached_by_volume_attachments(
        self, node_name: str, cache: CycleCache | None = None
    ) -> Volumes:
        """The volumes VolumeAttachments attach to the node, by unique name."""
        out: Volumes = {}
        if cache is None:
            cache = CycleCache()
        for va in cache.attachments_of(self.listers, node_name):
            spec = va.spec
            if not spec.attacher:
                continue
            handle = ""
            if spec.source.HasField("persistent_volume_name"):
                pv = self._pv(spec.source.persistent_volume_name)
                if pv is not None:
                    found = csi.pv_csi(pv) or csi.translate_pv(pv)
                    handle = found[1] if found is not None else ""
            elif spec.source.inline_volume_spec.HasField("csi"):
                handle = spec.source.inline_volume_spec.csi.volume_handle
            if handle:
                out[f"{spec.attacher}/{handle}"] = csi.csi_attach_limit_key(spec.attacher)
        return out

    # ------------------------------------------------------------------ events

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Any new or changed CSINode may raise a limit or migrate a plugin.
            ClusterEventWithHint(ClusterEvent(CSI_NODE, ActionType.ADD | ActionType.UPDATE)),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                is_schedulable_after_pvc_added,
            ),
            ClusterEventWithHint(
                ClusterEvent(VOLUME_ATTACHMENT, ActionType.DELETE),
                self.is_schedulable_after_volume_attachment_deleted,
            ),
        ]

    def is_schedulable_after_volume_attachment_deleted(
        self, pod: core_pb2.Pod, old: Any, new: Any
    ) -> QueueingHint:
        """Queue when the detached volume is one of the pod's claims' volumes, or of the
        driver one of the pod's inline migratable volumes goes to."""
        if not isinstance(old, storagev1_pb2.VolumeAttachment):
            return QueueingHint.QUEUE
        src = old.spec.source
        inline_driver = (
            src.inline_volume_spec.csi.driver if src.HasField("inline_volume_spec") else ""
        )
        for vol in pod.spec.volumes:
            name = claim_name(vol)
            if name is not None and src.HasField("persistent_volume_name"):
                try:
                    claim = self.listers.pvc(pod.metadata.namespace, name)
                except NotFound:
                    continue
                if claim.spec.volume_name == src.persistent_volume_name:
                    return QueueingHint.QUEUE
            row = csi.inline_plugin(vol)
            if row is not None and inline_driver and row.driver == inline_driver:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def pv_driver_info(pv: storage_pb2.PersistentVolume, csi_node: CSINode | None) -> tuple[str, str]:
    """A bound volume's (driver, handle): its csi source, or the translation of an in-tree
    source migrated on the node; ("", "") otherwise."""
    found = csi.pv_csi(pv)
    if found is not None:
        return found
    row = csi.pv_plugin(pv)
    if row is None or not csi.is_csi_migration_on(csi_node, row.plugin):
        return "", ""
    return csi.translate_pv(pv) or ("", "")


def volume_limits(node_info: NodeInfo, csi_node: CSINode | None) -> dict[str, int]:
    """getVolumeLimits: the node's attachable-volumes-* allocatable, overridden per driver by
    the CSINode's allocatable counts."""
    limits = {
        name: amount
        for name, amount in node_info.allocatable.scalar.items()
        if name.startswith(csi.ATTACHABLE_VOLUMES_PREFIX)
    }
    if csi_node is not None:
        for d in csi_node.spec.drivers:
            if d.HasField("allocatable") and d.allocatable.HasField("count"):
                limits[csi.csi_attach_limit_key(d.name)] = d.allocatable.count
    return limits


def is_schedulable_after_pod_deleted(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the deleted pod was on a node with a volume that may have counted."""
    if not isinstance(old, core_pb2.Pod):
        return QueueingHint.QUEUE
    if not old.spec.volumes or not old.spec.node_name:
        return QueueingHint.SKIP
    if any(counts_volumes(v) for v in old.spec.volumes):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the new claim is one of the pod's (directly or as an ephemeral volume's)."""
    return after_claim_event(pod, new, ephemeral=True)


def new(args: Args | None, handle: Any) -> NodeVolumeLimits:
    return NodeVolumeLimits(
        volume_listers(
            handle,
            (
                PERSISTENT_VOLUME,
                PERSISTENT_VOLUME_CLAIM,
                STORAGE_CLASS,
                CSI_NODE,
                VOLUME_ATTACHMENT,
            ),
        )
    )
