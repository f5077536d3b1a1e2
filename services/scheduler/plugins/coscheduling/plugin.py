"""Coscheduling: all-or-nothing placement of a PodGroup's pods (scheduler-plugins
pkg/coscheduling), so a gang never holds part of the cluster while it cannot run.

A pod joins a gang with the label scheduling.x-k8s.io/pod-group=<PodGroup name> (same
namespace). For a pod without it every extension point returns at once, so the plugin
costs nothing in kubera's default profile and changes nothing for other pods.

    PreEnqueue   gate the pod while its PodGroup does not exist, or the group has fewer
                 pods (without scheduling gates) than minMember
    QueueSort    priority, then the group's creation time (its last failure time once it
                 failed; the pod's own queue time without a group), then namespace/name:
                 a gang's pods leave the queue together (opt-in: PrioritySort stays the
                 default QueueSort)
    PreFilter    refuse the whole group at once while it is backed off, short of members,
                 or short of minResources in the cluster's free total; for a gang member
                 leave its GangNeed for DefaultPreemption (preemption/gang.py)
    PostFilter   a member failed: reject every waiting sibling so the gang unreserves and
                 backs off together (unless only podGroupRejectPercentage or less of the
                 gang is missing)
    Reserve      nothing; Unreserve of one member rejects every waiting sibling
    Permit       Wait until minMember of the group are assigned (bound, assumed or
                 waiting); the member that completes the quorum allows its siblings.
                 Timeout: PodGroup.spec.scheduleTimeoutSeconds, else permitWaitingTimeSeconds

Differences from upstream, on purpose:
- The member count lives in PreEnqueue (upstream does it in PreFilter, newer upstream in
  PreEnqueue too), so short gangs wait gated instead of cycling through backoff; the
  member add or gate removal that completes a group's quorum activates the group's pods
  (Handle.activate), once, so a k-pod gang costs O(k), not a requeue per new pod.
- EventsToRegister adds Node add/allocatable updates and assigned Pod deletes with a hint
  that only wakes gang members: a gang rejected as a whole at Permit/Unreserve/PostFilter
  is helped by whatever helps any member fit (upstream re-activates siblings through
  PodsToActivate, which kubera's queue does not have).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2, podgroup_pb2
from services.api.helpers.podgroups import POD_GROUP_LABEL, pod_group_full_name, pod_group_name
from services.client import Handlers
from services.clock import RealClock
from services.scheduler.framework.interface import PostFilterResult, PreFilterResult
from services.scheduler.framework.nominator import pod_priority
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
)
from services.scheduler.plugins.coscheduling.core import PermitResult, PodGroupManager
from services.scheduler.plugins.helpers import InformerStoreView
from services.scheduler.preemption.gang import GANG_KEY, GangNeed

NAME = "Coscheduling"
#: The kind of the PodGroup informer (and of its cluster events).
POD_GROUP_KIND = "PodGroup"
#: The wait when neither the PodGroup nor the args say (upstream util.DefaultWaitTime).
DEFAULT_WAIT_TIME = 60.0


@dataclass
class Args:
    """CoschedulingArgs (scheduler-plugins apis/config, v1 defaults)."""

    #: How long a gang's assumed pods wait at Permit when the PodGroup does not say.
    permit_waiting_time_seconds: int = 60
    #: How long a gang that failed is refused at PreFilter (0: no group backoff).
    pod_group_backoff_seconds: int = 0
    #: PostFilter leaves the waiting siblings alone when at most this percentage of
    #: minMember is still unassigned (0-100).
    pod_group_reject_percentage: int = 10

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        d = d or {}
        args = cls(
            int(d.get("permitWaitingTimeSeconds", 60)),
            int(d.get("podGroupBackoffSeconds", 0)),
            int(d.get("podGroupRejectPercentage", 10)),
        )
        errs = validate_args(args)
        if errs:
            raise ValueError("; ".join(errs))
        return args


def validate_args(args: Args, path: str = "") -> list[str]:
    """Upstream ValidateCoschedulingArgs and New's checks, as field error texts."""
    p = f"{path}." if path else ""
    errs = []
    if args.permit_waiting_time_seconds < 0:
        errs.append(
            f"{p}permitWaitingTimeSeconds: Invalid value: {args.permit_waiting_time_seconds}: "
            "must be greater than or equal to 0"
        )
    if args.pod_group_backoff_seconds < 0:
        errs.append(
            f"{p}podGroupBackoffSeconds: Invalid value: {args.pod_group_backoff_seconds}: "
            "must be greater than or equal to 0"
        )
    if not 0 <= args.pod_group_reject_percentage <= 100:
        errs.append(
            f"{p}podGroupRejectPercentage: Invalid value: {args.pod_group_reject_percentage}: "
            "must be in the range [0, 100]"
        )
    return errs


def _same_group(pod: core_pb2.Pod, other: Any) -> bool:
    return (
        isinstance(other, core_pb2.Pod)
        and other.metadata.namespace == pod.metadata.namespace
        and pod_group_name(other) == pod_group_name(pod)
    )


def _hint_pod_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """A new member of the pod's own gang may complete its quorum."""
    return QueueingHint.QUEUE if _same_group(pod, new) else QueueingHint.SKIP


def _hint_pod_group(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's PodGroup appeared or its spec changed (status updates do not help)."""
    if not isinstance(new, podgroup_pb2.PodGroup):
        return QueueingHint.SKIP
    if new.metadata.namespace != pod.metadata.namespace or new.metadata.name != pod_group_name(pod):
        return QueueingHint.SKIP
    if isinstance(old, podgroup_pb2.PodGroup) and old.spec == new.spec:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def _hint_gang_member(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Room may have appeared: only gang members were rejected by Coscheduling anyway."""
    return QueueingHint.QUEUE if POD_GROUP_LABEL in pod.metadata.labels else QueueingHint.SKIP


class Coscheduling:
    """PreEnqueuePlugin, QueueSortPlugin, PreFilterPlugin, PostFilterPlugin,
    ReservePlugin, PermitPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(self, args: Args, handle: Any, manager: PodGroupManager) -> None:
        self.args = args
        self.handle = handle
        self.manager = manager
        self.reject_threshold = args.pod_group_reject_percentage / 100.0

    # ------------------------------------------------------------------ queue
    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        full, pg = self.manager.get_pod_group(pod)
        if not full:
            return Status.success()
        if pg is None:
            return Status.unresolvable(f'PodGroup "{full}" not found', plugin=NAME)
        gap = self.manager.quorum_gap(pod, pg)
        if gap:
            return Status.unresolvable(gap, plugin=NAME)
        return Status.success()

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = pod_priority(a.pod), pod_priority(b.pod)
        if pa != pb:
            return pa > pb
        ta = self.manager.creation_time(a.pod, _queued_at(a))
        tb = self.manager.creation_time(b.pod, _queued_at(b))
        if ta == tb:
            return _namespaced(a.pod) < _namespaced(b.pod)
        return ta < tb

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD), _hint_pod_added),
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP_KIND, ActionType.ADD | ActionType.UPDATE), _hint_pod_group
            ),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                _hint_gang_member,
            ),
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.DELETE), _hint_gang_member),
        ]

    # -------------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        if POD_GROUP_LABEL not in pod.metadata.labels:
            return None, Status.success()
        why = self.manager.pre_filter(pod, lambda: nodes)
        if why:
            return None, Status.unresolvable(why, plugin=NAME)
        full, pg = self.manager.get_pod_group(pod)
        if pg is not None:
            state.write(GANG_KEY, self._gang_need(full, pg, pod))
        return None, Status.success()

    def _gang_need(self, full: str, pg: podgroup_pb2.PodGroup, pod: core_pb2.Pod) -> GangNeed:
        uid = pod.metadata.uid
        manager = self.manager

        def pending() -> list[core_pb2.Pod]:
            return [
                p
                for p in sorted(manager.members(full), key=_namespaced)
                if p.metadata.uid != uid
                and not p.spec.node_name
                and not manager.is_assigned(full, p.metadata.uid)
            ]

        assigned = manager.assigned_count(full) - manager.is_assigned(full, uid)
        return GangNeed(full, max(pg.spec.min_member - assigned - 1, 0), pending)

    # ------------------------------------------------------------- PostFilter
    async def post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        pod = pod_info.pod
        full, pg = self.manager.get_pod_group(pod)
        if not full:
            # Not a gang pod: nothing to say (no reason joins the pod's message).
            return None, Status.unschedulable(plugin=NAME)
        if pg is None:
            return PostFilterResult(), Status.unschedulable("can not find pod group", plugin=NAME)
        assigned = self.manager.assigned_count(full)
        min_member = pg.spec.min_member
        if assigned >= min_member:
            return PostFilterResult(), Status.unschedulable(plugin=NAME)
        if (min_member - assigned) / max(min_member, 1) <= self.reject_threshold:
            return PostFilterResult(), Status.unschedulable(plugin=NAME)
        self._reject_waiting_siblings(pod, "optimistic rejection in PostFilter")
        if self.args.pod_group_backoff_seconds > 0 and (
            len(self.manager.members(full)) >= min_member
        ):
            self.manager.backoff(full, float(self.args.pod_group_backoff_seconds))
        self.manager.delete_permitted(full)
        self.manager.mark_failure(full)
        return PostFilterResult(), Status.unschedulable(
            f"PodGroup {full} gets rejected due to Pod {pod.metadata.name} is unschedulable "
            "even after PostFilter",
            plugin=NAME,
        )

    # ------------------------------------------------------ Reserve / Permit
    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        return Status.success()

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        pod = pod_info.pod
        full, pg = self.manager.get_pod_group(pod)
        if pg is None:
            return
        self.manager.unreserve(pod)
        self._reject_waiting_siblings(pod, "rejection in Unreserve")
        self.manager.delete_permitted(full)
        self.manager.mark_failure(full)

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        pod = pod_info.pod
        result = self.manager.permit(pod)
        if result is PermitResult.NOT_SPECIFIED:
            return Status.success(), 0.0
        if result is PermitResult.NOT_FOUND:
            return Status.unschedulable("PodGroup not found", plugin=NAME), 0.0
        full, pg = self.manager.get_pod_group(pod)
        if result is PermitResult.WAIT:
            return Status.wait(NAME), self._wait_time(pg)
        self.manager.clear_failure(full)
        for wp in self._waiting_siblings(pod):
            self.handle.allow_waiting_pod(wp.pod_info.uid, NAME)
        return Status.success(), 0.0

    def _wait_time(self, pg: podgroup_pb2.PodGroup | None) -> float:
        """Upstream util.GetWaitTimeDuration."""
        if pg is not None and pg.spec.HasField("schedule_timeout_seconds"):
            return float(pg.spec.schedule_timeout_seconds)
        if self.args.permit_waiting_time_seconds:
            return float(self.args.permit_waiting_time_seconds)
        return DEFAULT_WAIT_TIME

    # ------------------------------------------------------------ waiting pods
    def _waiting_siblings(self, pod: core_pb2.Pod) -> list[Any]:
        fwk = self.handle.framework_for(pod.spec.scheduler_name)
        if fwk is None:
            return []
        full = pod_group_full_name(pod)
        return [
            wp
            for wp in fwk.waiting_pods
            if wp.pod_info.uid != pod.metadata.uid and pod_group_full_name(wp.pod_info.pod) == full
        ]

    def _reject_waiting_siblings(self, pod: core_pb2.Pod, reason: str) -> None:
        for wp in self._waiting_siblings(pod):
            self.handle.reject_waiting_pod(wp.pod_info.uid, NAME, reason)


def _queued_at(q: QueuedPodInfo) -> float:
    return q.initial_attempt_timestamp if q.initial_attempt_timestamp is not None else q.timestamp


def _namespaced(pod: core_pb2.Pod) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"


def new(args: Args | None, handle: Any) -> Coscheduling:
    """The plugin, its PodGroup lister (handle.informer) and its member index (handlers on
    the scheduler's own Pod informer, handle.pod_informer). A handle without informers (a
    framework unit test's) gives a plugin that knows no PodGroup: gang pods stay gated."""
    args = args or Args()
    errs = validate_args(args)
    if errs:
        raise ValueError("; ".join(errs))
    informer_of = getattr(handle, "informer", None)
    pod_groups: Mapping[str, podgroup_pb2.PodGroup] = (
        InformerStoreView(informer_of(POD_GROUP_KIND)) if callable(informer_of) else {}
    )
    activate = getattr(handle, "activate", None)
    manager = PodGroupManager(
        pod_groups,
        clock=getattr(handle, "clock", None) or RealClock(),
        schedule_timeout=float(args.permit_waiting_time_seconds),
        on_quorum=activate if callable(activate) else None,
        cluster_clock=getattr(handle, "cluster_clock", None),
    )
    pod_informer = getattr(handle, "pod_informer", None)
    if callable(pod_informer):
        pod_informer().add_handlers(
            Handlers(manager.pod_added, manager.pod_updated, manager.pod_deleted)
        )
    return Coscheduling(args, handle, manager)
