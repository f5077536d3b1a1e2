"""VolumeZone: a pod's bound PersistentVolumes must be in the node's zone and region.

Upstream plugins/volumezone. PreFilter follows each of the pod's claims to its bound volume
and keeps the volume's topology labels (failure-domain.beta.kubernetes.io/zone and /region,
topology.kubernetes.io/zone and /region; a value may list several zones joined by "__").
Filter then wants, for each such label, the node's value of the same label (or, for a beta
label the node lacks, of its GA twin) among the volume's values, else
UnschedulableAndUnresolvable "node(s) had no available volume zone". A node with none of the
four labels fits (a single-zone cluster).

An unbound claim is skipped when its StorageClass binds WaitForFirstConsumer (VolumeBinding
chooses its volume on the node); otherwise the pod cannot be placed yet:
"PersistentVolumeClaim had no pv name and storageClass name", `VolumeBindingMode not set for
StorageClass "x"`, "PersistentVolume had no name", or the lister's "not found" for a missing
claim, class or volume, all UnschedulableAndUnresolvable. A pod with no volume topology to
check Skips Filter. Filter recomputes what PreFilter would have found when PreFilter did not
run, as upstream's does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.podvolumes import claim_name
from services.api.helpers.volumes import claim_class
from services.api.helpers.wellknown import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
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
from services.scheduler.plugins.helpers import NODE
from services.scheduler.volumelisters import (
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    NotFound,
    VolumeListers,
    after_claim_event,
    volume_listers,
)

log = logging.getLogger(__name__)

NAME = "VolumeZone"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_CONFLICT = "node(s) had no available volume zone"
WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"
#: The zones of a multi-zone volume label are joined with this (LabelMultiZoneDelimiter).
MULTI_ZONE_DELIMITER = "__"

#: The labels compared, in upstream's order.
TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL = {
    LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION,
}


@dataclass
class Args:
    """VolumeZone takes no arguments."""


@dataclass(frozen=True)
class PVTopology:
    """One topology label of one of the pod's volumes."""

    pv_name: str
    key: str
    values: frozenset[str]


def label_zones_to_set(value: str) -> frozenset[str]:
    """LabelZonesToSet: the "__"-joined zones; ValueError when one of them is empty."""
    zones = [z.strip() for z in value.split(MULTI_ZONE_DELIMITER)]
    if any(not z for z in zones):
        raise ValueError(f"{MULTI_ZONE_DELIMITER!r} separated list ({value!r}) has an empty zone")
    return frozenset(zones)


def pv_topologies(pv: storage_pb2.PersistentVolume) -> list[PVTopology]:
    """getPVTopologies: the volume's topology labels (an unreadable one is ignored)."""
    out = []
    for key in TOPOLOGY_LABELS:
        value = pv.metadata.labels.get(key)
        if value is None:
            continue
        try:
            zones = label_zones_to_set(value)
        except ValueError as e:
            log.debug("PV %s: ignoring label %s=%s: %s", pv.metadata.name, key, value, e)
            continue
        out.append(PVTopology(pv.metadata.name, key, zones))
    return out


class VolumeZone:
    """PreFilterPlugin, FilterPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(self, listers: VolumeListers) -> None:
        self.listers = listers
        self._conflict = Status.unresolvable(ERR_REASON_CONFLICT, plugin=NAME)

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        topologies, st = self.pv_topologies_of(pod_info.pod)
        if not st.is_success():
            return None, st
        if not topologies:
            return None, Status.skip(NAME)
        state.write(PRE_FILTER_STATE_KEY, topologies)
        return None, Status.success()

    def pv_topologies_of(self, pod: core_pb2.Pod) -> tuple[list[PVTopology], Status]:
        """getPVbyPod."""
        out: list[PVTopology] = []
        for vol in pod.spec.volumes:
            name = claim_name(vol)
            if name is None:
                continue
            if not name:
                return [], _unresolvable("PersistentVolumeClaim had no name")
            try:
                claim = self.listers.pvc(pod.metadata.namespace, name)
                pv_name = claim.spec.volume_name
                if not pv_name:
                    class_name = claim_class(claim)
                    if not class_name:
                        return [], _unresolvable(
                            "PersistentVolumeClaim had no pv name and storageClass name"
                        )
                    sc = self.listers.storage_class(class_name)
                    if not sc.HasField("volume_binding_mode"):
                        return [], _unresolvable(
                            f'VolumeBindingMode not set for StorageClass "{class_name}"'
                        )
                    if sc.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
                        continue
                    return [], _unresolvable("PersistentVolume had no name")
                pv = self.listers.pv(pv_name)
            except NotFound as e:
                return [], _unresolvable(str(e))
            out.extend(pv_topologies(pv))
        return out, Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        pod = pod_info.pod
        if not pod.spec.volumes:
            return Status.success()
        topologies = state.get(PRE_FILTER_STATE_KEY)
        if topologies is None:
            topologies, st = self.pv_topologies_of(pod)
            if not st.is_success():
                return st
        node = node_info.node
        labels = node.metadata.labels if node is not None else {}
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return Status.success()
        for t in topologies:
            value = labels.get(t.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(t.key, t.key))
            if value is None or value not in t.values:
                return self._conflict
        return Status.success()

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # volumeBindingMode is immutable: only a new class can be WaitForFirstConsumer.
            ClusterEventWithHint(
                ClusterEvent(STORAGE_CLASS, ActionType.ADD),
                is_schedulable_after_storage_class_added,
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
            # A new claim, or one that got its volume.
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME_CLAIM, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(PERSISTENT_VOLUME, ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pv_change,
            ),
        ]


def _unresolvable(reason: str) -> Status:
    return Status.unresolvable(reason, plugin=NAME)


def is_schedulable_after_pvc_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue when the added or updated claim is one the pod names, in its namespace."""
    return after_claim_event(pod, new)


def is_schedulable_after_storage_class_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue only for a new WaitForFirstConsumer class."""
    if not isinstance(new, storagev1_pb2.StorageClass):
        return QueueingHint.QUEUE
    if new.HasField("volume_binding_mode") and new.volume_binding_mode == WAIT_FOR_FIRST_CONSUMER:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pv_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Queue for a new volume, or one whose topology labels changed."""
    if not isinstance(new, storage_pb2.PersistentVolume) or (
        old is not None and not isinstance(old, storage_pb2.PersistentVolume)
    ):
        return QueueingHint.QUEUE
    if old is None:
        return QueueingHint.QUEUE
    if pv_topologies(old) != pv_topologies(new):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Args | None, handle: Any) -> VolumeZone:
    return VolumeZone(
        volume_listers(handle, (PERSISTENT_VOLUME, PERSISTENT_VOLUME_CLAIM, STORAGE_CLASS))
    )
