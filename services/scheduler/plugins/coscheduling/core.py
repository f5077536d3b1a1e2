"""The PodGroup manager: what Coscheduling knows about gangs (scheduler-plugins
pkg/coscheduling/core), kept apart from the plugin's extension points so it can be read
and tested without a framework.

It holds, per PodGroup (key namespace/name):
- members: every pod carrying the group's label, from the scheduler's own Pod informer
  (the plugin adds its handlers there; nothing is listed per call), and how many of them
  have no scheduling gates (kept by the handlers, so the quorum check is O(1));
- assigned: members bound (seen bound by the informer) or permitted by this scheduler
  (assumed, waiting at Permit or binding); a member leaves on Unreserve or deletion.
  Permit counts this set, so the quorum covers the snapshot's assumed/bound pods and the
  waiting pods at once, as upstream's assignedPodsByPG;
- backed off until (podGroupBackoffSeconds after a failed gang), permitted until (the
  minResources check is not repeated while a group is being placed), last failure time
  (the queue sorts a group that failed behind the others of its priority, as upstream).

Times come from the injected clocks: backoff and permitted deadlines on `clock.monotonic`
(the scheduler's pacing, wall time), the failure time on `cluster_clock.now` (it is
compared with the apiserver's creation timestamps in QueueSort, so it is the cluster's
time, simulated under the time scale: services/clock.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum

from protos.kubera.v1 import core_pb2, podgroup_pb2
from services.api.helpers.podgroups import pod_group_full_name
from services.api.helpers.resources import PODS, Resource
from services.clock import Clock, parse_rfc3339
from services.scheduler.framework.types import NodeInfo


class PermitResult(Enum):
    """Upstream core.Status."""

    NOT_SPECIFIED = "PodGroup not specified"
    NOT_FOUND = "PodGroup not found"
    SUCCESS = "Success"
    WAIT = "Wait"


@dataclass
class _Group:
    members: dict[str, core_pb2.Pod] = field(default_factory=dict)
    assigned: set[str] = field(default_factory=set)
    #: Invariant: the number of `members` without scheduling gates.
    ungated: int = 0


def _ungated(pod: core_pb2.Pod) -> int:
    return 0 if pod.spec.scheduling_gates else 1


class PodGroupManager:
    """Gang bookkeeping for one scheduler (see the module docstring). `pod_groups` is the
    PodGroup lister: the PodGroup informer's store, keyed namespace/name."""

    def __init__(
        self,
        pod_groups: Mapping[str, podgroup_pb2.PodGroup],
        *,
        clock: Clock,
        schedule_timeout: float,
        on_quorum: Callable[[Sequence[core_pb2.Pod]], None] | None = None,
        cluster_clock: Clock | None = None,
    ) -> None:
        self.pod_groups = pod_groups
        #: Called with a group's members when the informer handlers bring it to its
        #: quorum (minMember members, that many without gates): the plugin wakes them.
        self.on_quorum = on_quorum
        self.clock = clock
        self.cluster_clock = cluster_clock or clock
        self.schedule_timeout = schedule_timeout
        self._groups: dict[str, _Group] = {}
        self._backed_off: dict[str, float] = {}
        self._permitted: dict[str, float] = {}
        self._last_failed: dict[str, float] = {}
        #: creation timestamp text -> seconds since the epoch (QueueSort runs often).
        self._times: dict[str, float] = {}

    # ----------------------------------------------------------- informer handlers
    def pod_added(self, pod: core_pb2.Pod) -> None:
        full = pod_group_full_name(pod)
        if not full:
            return
        g = self._groups.setdefault(full, _Group())
        before = self._has_quorum(full, g)
        stored = g.members.get(pod.metadata.uid)
        if stored is not None:
            g.ungated -= _ungated(stored)
        g.members[pod.metadata.uid] = pod
        g.ungated += _ungated(pod)
        if pod.spec.node_name:
            g.assigned.add(pod.metadata.uid)
        if not before and self.on_quorum is not None and self._has_quorum(full, g):
            # Only the change that completes the quorum wakes the group: its gated pods
            # were refused for lack of it, and nothing else about them changed.
            self.on_quorum(list(g.members.values()))

    def pod_updated(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
        if pod_group_full_name(old) != pod_group_full_name(new):
            self.pod_deleted(old)
        self.pod_added(new)

    def pod_deleted(self, pod: core_pb2.Pod) -> None:
        full = pod_group_full_name(pod)
        g = self._groups.get(full)
        if g is None:
            return
        stored = g.members.pop(pod.metadata.uid, None)
        if stored is not None:
            g.ungated -= _ungated(stored)
        g.assigned.discard(pod.metadata.uid)
        if not g.members and not g.assigned:
            del self._groups[full]

    # ----------------------------------------------------------------- lookups
    def get_pod_group(self, pod: core_pb2.Pod) -> tuple[str, podgroup_pb2.PodGroup | None]:
        """(namespace/group or "", the PodGroup or None when it does not exist)."""
        full = pod_group_full_name(pod)
        if not full:
            return "", None
        return full, self.pod_groups.get(full)

    def members(self, full: str) -> Sequence[core_pb2.Pod]:
        g = self._groups.get(full)
        return list(g.members.values()) if g is not None else []

    def assigned_count(self, full: str) -> int:
        g = self._groups.get(full)
        return len(g.assigned) if g is not None else 0

    def is_assigned(self, full: str, uid: str) -> bool:
        g = self._groups.get(full)
        return g is not None and uid in g.assigned

    def creation_time(self, pod: core_pb2.Pod, default: float) -> float:
        """The group's last failure time, else its creation time; `default` (the pod's own
        queue time) for a pod without a group or whose group does not exist."""
        full, pg = self.get_pod_group(pod)
        if not full:
            return default
        failed = self._last_failed.get(full)
        if failed is not None:
            return failed
        if pg is None or not pg.metadata.creation_timestamp:
            return default
        text = pg.metadata.creation_timestamp
        t = self._times.get(text)
        if t is None:
            try:
                t = parse_rfc3339(text)
            except ValueError:
                return default
            if len(self._times) > 4096:
                self._times.clear()
            self._times[text] = t
        return t

    # --------------------------------------------------------------- decisions
    def _has_quorum(self, full: str, g: _Group) -> bool:
        pg = self.pod_groups.get(full)
        if pg is None:
            return False
        return min(len(g.members), g.ungated) >= pg.spec.min_member

    def quorum_gap(self, pod: core_pb2.Pod, pg: podgroup_pb2.PodGroup) -> str:
        """Why the group cannot be tried yet ("" when it can): fewer members than
        minMember, or members still held by scheduling gates (upstream PreFilter).
        O(1): the counters, with `pod` (the queue's copy) in place of the informer's."""
        g = self._groups.get(pod_group_full_name(pod))
        count = len(g.members) if g is not None else 0
        ungated = g.ungated if g is not None else 0
        stored = g.members.get(pod.metadata.uid) if g is not None else None
        if stored is None:
            count += 1
        else:
            ungated -= _ungated(stored)
        ungated += _ungated(pod)
        min_member = pg.spec.min_member
        if count < min_member:
            return (
                f"pre-filter pod {pod.metadata.name} cannot find enough sibling pods, "
                f"current pods number: {count}, minMember of group: {min_member}"
            )
        if ungated < min_member:
            return (
                f"pre-filter pod {pod.metadata.name} cannot proceed due to gated pods in "
                "the same PodGroup"
            )
        return ""

    def pre_filter(self, pod: core_pb2.Pod, nodes: Callable[[], Sequence[NodeInfo]]) -> str:
        """Upstream PodGroupManager.PreFilter: "" when the pod may be filtered, otherwise
        why its whole group is refused now."""
        full, pg = self.get_pod_group(pod)
        if pg is None:
            return ""
        until = self._backed_off.get(full)
        if until is not None:
            if until > self.clock.monotonic():
                return f"podGroup {full} failed recently"
            del self._backed_off[full]
        gap = self.quorum_gap(pod, pg)
        if gap:
            return gap
        if not pg.spec.min_resources:
            return ""
        permitted = self._permitted.get(full)
        if permitted is not None and permitted > self.clock.monotonic():
            return ""
        want = Resource.from_list(pg.spec.min_resources)
        want.allowed_pod_number = pg.spec.min_member
        gap_text = check_cluster_resource(nodes(), want, full)
        if gap_text:
            return gap_text
        self._permitted[full] = self.clock.monotonic() + self.schedule_timeout
        return ""

    def permit(self, pod: core_pb2.Pod) -> PermitResult:
        """Count the pod as assigned; SUCCESS when the group reaches minMember with it."""
        full, pg = self.get_pod_group(pod)
        if not full:
            return PermitResult.NOT_SPECIFIED
        if pg is None:
            return PermitResult.NOT_FOUND
        g = self._groups.setdefault(full, _Group())
        g.assigned.add(pod.metadata.uid)
        if len(g.assigned) >= pg.spec.min_member:
            return PermitResult.SUCCESS
        return PermitResult.WAIT

    def unreserve(self, pod: core_pb2.Pod) -> None:
        full = pod_group_full_name(pod)
        g = self._groups.get(full)
        if g is not None:
            g.assigned.discard(pod.metadata.uid)

    def backoff(self, full: str, seconds: float) -> None:
        if seconds > 0:
            self._backed_off[full] = self.clock.monotonic() + seconds

    def is_backed_off(self, full: str) -> bool:
        until = self._backed_off.get(full)
        return until is not None and until > self.clock.monotonic()

    def delete_permitted(self, full: str) -> None:
        self._permitted.pop(full, None)

    def mark_failure(self, full: str) -> None:
        self._last_failed[full] = self.cluster_clock.now()

    def clear_failure(self, full: str) -> None:
        self._last_failed.pop(full, None)


def check_cluster_resource(nodes: Sequence[NodeInfo], want: Resource, group: str) -> str:
    """Upstream CheckClusterResource: "" when the nodes' free resources, counting the
    group's own pods as free, add up to `want` (pods included); else the gap."""
    left = {
        "cpu": want.milli_cpu,
        "memory": want.memory,
        "ephemeral-storage": want.ephemeral_storage,
        PODS: want.allowed_pod_number,
        **want.scalar,
    }
    left = {k: v for k, v in left.items() if v > 0}
    for ni in nodes:
        if ni.node is None or not left:
            continue
        free = ni.allocatable.clone()
        free.sub(ni.requested)
        pods = len(ni.pods)
        for pi in ni.pods:
            if pod_group_full_name(pi.pod) == group:
                free.add(pi.requests)
                pods -= 1
        free.allowed_pod_number = ni.allocatable.allowed_pod_number - pods
        for name in list(left):
            left[name] -= max(free.get(name), 0)
            if left[name] <= 0:
                del left[name]
    if not left:
        return ""
    gap = ", ".join(f"{k}: {v}" for k, v in sorted(left.items()))
    return f"resource gap: {gap}"
