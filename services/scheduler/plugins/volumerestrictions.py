"""VolumeRestrictions: a pod's disk must not conflict with the disks of the pods already on the
node, and a ReadWriteOncePod claim may be used by one pod only.

Upstream plugins/volumerestrictions. Filter rejects with Unschedulable
"node(s) had no available disk" when, on that node, another pod mounts

- the same GCE PD (pdName), unless both mount it read-only;
- the same AWS EBS volume (volumeID), read-only or not;
- the same iSCSI target (iqn), unless both read-only;
- the same Ceph RBD image (a shared monitor, same pool and image), unless both read-only.

PreFilter looks up the pod's claims (a missing one: UnschedulableAndUnresolvable with the
lister's "not found") and counts how many scheduled pods already use one of its
ReadWriteOncePod claims; when that is not zero every node is Unschedulable with "node has
pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
(Unschedulable, not unresolvable: preempting that pod helps, and AddPod/RemovePod keep the
count right during preemption's what-ifs). A pod with neither such disks nor such claims
Skips Filter.

Where upstream asks the snapshot's StorageInfos (a set of the claims used by pods, kept by
the cache), kubera counts over the snapshot's pods in PreFilter, and only for a pod that
has ReadWriteOncePod claims: a pod without them pays nothing.
"""

from __future__ import annotations

from collections.abc import Sequence, Set
from dataclasses import dataclass
from typing import Any

from google.protobuf import struct_pb2

from protos.kubera.v1 import core_pb2
from services.api.helpers.podvolumes import (
    bool_field,
    claim_name,
    source,
    string_field,
    strings_field,
)
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
from services.scheduler.plugins.helpers import NODE, POD
from services.scheduler.volumelisters import (
    PERSISTENT_VOLUME_CLAIM,
    NotFound,
    VolumeListers,
    after_claim_event,
    volume_listers,
)

NAME = "VolumeRestrictions"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_DISK_CONFLICT = "node(s) had no available disk"
ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT = (
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
)
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

#: The in-tree sources whose conflicts Filter checks (needsRestrictionsCheck).
_RESTRICTED = ("gcePersistentDisk", "awsElasticBlockStore", "rbd", "iscsi")


@dataclass
class Args:
    """VolumeRestrictions takes no arguments."""


@dataclass
class PreFilterState:
    #: The pod's claims with the ReadWriteOncePod access mode.
    rwop_claims: frozenset[str]
    #: How many uses of those claims by scheduled pods there are.
    conflicting_refs: int

    def clone(self) -> PreFilterState:
        return PreFilterState(self.rwop_claims, self.conflicting_refs)

    def update_with_pod(self, other: PodInfo, multiplier: int) -> None:
        self.conflicting_refs += multiplier * _uses(other.pod, self.rwop_claims)


def _uses(pod: core_pb2.Pod, claims: Set[str]) -> int:
    """How many of `pod`'s volumes name one of `claims`."""
    n = 0
    for vol in pod.spec.volumes:
        name = claim_name(vol)
        if name is not None and name in claims:
            n += 1
    return n


def needs_restrictions_check(vol: struct_pb2.Struct) -> bool:
    return any(source(vol, key) is not None for key in _RESTRICTED)


def _have_overlap(a: Sequence[str], b: Sequence[str]) -> bool:
    return not set(a).isdisjoint(b)


def is_volume_conflict(vol: struct_pb2.Struct, pod: core_pb2.Pod) -> bool:
    """isVolumeConflict: `vol` conflicts with one of `pod`'s volumes."""
    gce, aws = source(vol, "gcePersistentDisk"), source(vol, "awsElasticBlockStore")
    iscsi, rbd = source(vol, "iscsi"), source(vol, "rbd")
    for existing in pod.spec.volumes:
        if gce is not None:
            other = source(existing, "gcePersistentDisk")
            if (
                other is not None
                and string_field(gce, "pdName") == string_field(other, "pdName")
                and not (bool_field(gce, "readOnly") and bool_field(other, "readOnly"))
            ):
                return True
        if aws is not None:
            other = source(existing, "awsElasticBlockStore")
            if other is not None and string_field(aws, "volumeID") == string_field(
                other, "volumeID"
            ):
                return True
        if iscsi is not None:
            other = source(existing, "iscsi")
            if (
                other is not None
                and string_field(iscsi, "iqn") == string_field(other, "iqn")
                and not (bool_field(iscsi, "readOnly") and bool_field(other, "readOnly"))
            ):
                return True
        if rbd is not None:
            other = source(existing, "rbd")
            if (
                other is not None
                and _have_overlap(strings_field(rbd, "monitors"), strings_field(other, "monitors"))
                and string_field(rbd, "pool") == string_field(other, "pool")
                and string_field(rbd, "image") == string_field(other, "image")
                and not (bool_field(rbd, "readOnly") and bool_field(other, "readOnly"))
            ):
                return True
    return False


def satisfy_volume_conflicts(pod: core_pb2.Pod, pods: Sequence[core_pb2.Pod]) -> bool:
    """satisfyVolumeConflicts: none of the pod's restricted disks conflicts with `pods`."""
    for vol in pod.spec.volumes:
        if not needs_restrictions_check(vol):
            continue
        if any(is_volume_conflict(vol, other) for other in pods):
            return False
    return True


class VolumeRestrictions:
    """PreFilterPlugin (with AddPod/RemovePod), FilterPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(self, listers: VolumeListers, handle: Any = None) -> None:
        self.listers = listers
        self._handle = handle
        self._disk_conflict = Status.unschedulable(ERR_REASON_DISK_CONFLICT, plugin=NAME)
        self._rwop_conflict = Status.unschedulable(
            ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=NAME
        )

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        if not pod.spec.volumes:
            return None, Status.skip(NAME)
        needs_check = any(needs_restrictions_check(v) for v in pod.spec.volumes)
        try:
            rwop = self._rwop_claims(pod)
        except NotFound as e:
            return None, Status.unresolvable(str(e), plugin=NAME)
        refs = self._used_by_pods(pod.metadata.namespace, rwop) if rwop else 0
        if not needs_check and refs == 0:
            return None, Status.skip(NAME)
        state.write(PRE_FILTER_STATE_KEY, PreFilterState(rwop, refs))
        return None, Status.success()

    def _rwop_claims(self, pod: core_pb2.Pod) -> frozenset[str]:
        out = set()
        for vol in pod.spec.volumes:
            name = claim_name(vol)
            if name is None:
                continue
            claim = self.listers.pvc(pod.metadata.namespace, name)
            if READ_WRITE_ONCE_POD in claim.spec.access_modes:
                out.add(claim.metadata.name)
        return frozenset(out)

    def _used_by_pods(self, namespace: str, claims: frozenset[str]) -> int:
        """calPreFilterState: each of `claims` used by some pod in the snapshot counts once
        (StorageInfos().IsPVCUsedByPods)."""
        snapshot = self._handle.snapshot() if self._handle is not None else None
        if snapshot is None:
            return 0
        used: set[str] = set()
        for ni in snapshot.list():
            for pi in ni.pods:
                p = pi.pod
                if p.metadata.namespace != namespace or not p.spec.volumes:
                    continue
                for vol in p.spec.volumes:
                    name = claim_name(vol)
                    if name is not None and name in claims:
                        used.add(name)
        return len(used)

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing()
        s.update_with_pod(pod_to_add, 1)
        return Status.success()

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodInfo,
        pod_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing()
        s.update_with_pod(pod_to_remove, -1)
        return Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if node_info.pods and not satisfy_volume_conflicts(
            pod_info.pod, [pi.pod for pi in node_info.pods]
        ):
            return self._disk_conflict
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing()
        if s.conflicting_refs > 0:
            return self._rwop_conflict
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Volumes are immutable: only a deleted pod releases a disk or a claim.
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
            # The pod's claim must exist for PreFilter to read its access modes.
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD),
                is_schedulable_after_pvc_added,
            ),
        ]


def _missing() -> Status:
    return Status.as_error(
        KeyError(f"cannot read {PRE_FILTER_STATE_KEY!r} from cycleState"), plugin=NAME
    )


def _claims(pod: core_pb2.Pod) -> set[str]:
    return {n for n in (claim_name(v) for v in pod.spec.volumes) if n is not None}


def is_schedulable_after_pod_deleted(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: Any
) -> QueueingHint:
    """Queue when the deleted pod (same namespace) held a disk the pod conflicts with, or
    used one of the pod's claims (its access mode is not looked up: cheaper to retry)."""
    if not isinstance(old, core_pb2.Pod):
        return QueueingHint.QUEUE
    if old.metadata.namespace != pod.metadata.namespace:
        return QueueingHint.SKIP
    if not satisfy_volume_conflicts(pod, [old]):
        return QueueingHint.QUEUE
    if _claims(pod) & _claims(old):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pvc_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added claim is one the pod names, in its namespace."""
    return after_claim_event(pod, new)


def new(args: Args | None, handle: Any) -> VolumeRestrictions:
    return VolumeRestrictions(volume_listers(handle, (PERSISTENT_VOLUME_CLAIM,)), handle)
