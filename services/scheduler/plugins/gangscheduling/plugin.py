"""GangScheduling: all-or-nothing scheduling of gang pod groups, for both of upstream's
APIs: 1.35's Workload (scheduling.k8s.io/v1alpha1, a pod's spec.workloadRef) and 1.37's
PodGroup (scheduling.k8s.io/v1beta1, a pod's spec.schedulingGroup.podGroupName)
(pkg/scheduler/framework/plugins/gangscheduling, alpha behind the GangScheduling and
GenericWorkload feature gates).

A pod joins a pod group through spec.schedulingGroup (the PodGroup of that name in its
namespace gives the policy) or spec.workloadRef {name, podGroup, podGroupReplicaKey} (the
Workload's pod group of that name). Pods of a basic group, and pods with neither field, pass
every point untouched. For a gang group {minCount}, per group (per replica key for a
Workload's):

    PreEnqueue  gate the pod while its PodGroup (Workload, or Workload pod group) does not
                exist, or while fewer than minCount pods of the group exist
    Reserve     count the pod as assumed; Unreserve takes it back
    Permit      Wait until minCount pods of the group are assumed or bound, waking the
                group's unscheduled pods meanwhile; the pod that completes the quorum allows
                every waiting one. All pods of an attempt share one deadline, 5 minutes after
                its first Permit: at that moment every waiting pod is rejected (Unreserve,
                back to the unschedulable queue) and none binds.

Upstream 1.37 schedules a PodGroup's pods in one pod-group scheduling cycle and checks the
quorum there (PlacementFeasible: Unschedulable once `scheduled + remaining < minCount`, Wait
while `scheduled < minCount`); kubera keeps the 1.35 shape above (pod by pod, the quorum held
at Permit) for both APIs; `placement_feasible` states 1.37's rule, which Permit applies to
a PodGroup's gang (refused at once when the pods that exist cannot reach its quorum, e.g.
after deletions; a Workload gang waits for its timeout as in 1.35).

Events: a Pod add of the same group; a Workload add with the pod's namespace and workload
name; a PodGroup add with the pod's namespace and group name, and a PodGroup update that
lowers its gang's minCount. Upstream's queue also turns every unscheduled pod's arrival
into that Pod/Add event for the waiting pods; kubera's queue does not, so the plugin's own
handler does the same for its gangs: a pod joining a gang that has minCount pods wakes the
gang's unscheduled pods (Handle.activate), as Coscheduling does for its groups.

Not served: CompositePodGroups (the CompositePodGroup gate; a PodGroup's
parentCompositePodGroupName is refused at validation). A PodGroup's topology constraint
(one domain of a node label for the whole group, chosen for the whole group as upstream's
placement step does) is PreFilter's, see topology.py. A PodGroup's resourceClaims are
DynamicResources' and the resourceclaim controller's.

Enabling it: kubera has no such gates; as upstream with the gates off, the plugin is not
in the default profile. A KubeSchedulerConfiguration enables it with
`plugins: {multiPoint: {enabled: [{name: GangScheduling}]}}` (`kubera up --scheduler-config`).
The Workload and PodGroup kinds and both pod fields are always served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2, schedulingv1alpha1_pb2, schedulingv1beta1_pb2
from services.api.machinery.kinds import SCHEDULING_POD_GROUP
from services.client import Handlers
from services.clock import RealClock
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.gangscheduling import topology
from services.scheduler.plugins.gangscheduling.status import StatusWriter
from services.scheduler.plugins.gangscheduling.workloadmanager import (
    PodGroupInfo,
    WorkloadManager,
    pod_group_key,
)
from services.scheduler.plugins.helpers import InformerStoreView

NAME = "GangScheduling"
#: The kind of the Workload informer (and of its cluster events).
WORKLOAD_KIND = "Workload"
MSG_MIN_COUNT_NOT_PRESENT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAITING_ON_PERMIT = "waiting for minCount pods from a gang to be waiting on permit"
#: The kind of the PodGroup informer (scheduling.k8s.io/v1beta1) and of its cluster events.
POD_GROUP_KIND = SCHEDULING_POD_GROUP


@dataclass
class Args:
    """GangScheduling takes no arguments."""


def same_pod_group(a: core_pb2.Pod, b: Any) -> bool:
    """Both pods belong to one pod group: the same PodGroup, or the same Workload, pod
    group and replica key, in one namespace."""
    if not isinstance(b, core_pb2.Pod) or a.metadata.namespace != b.metadata.namespace:
        return False
    if a.spec.scheduling_group.pod_group_name:
        return a.spec.scheduling_group.pod_group_name == b.spec.scheduling_group.pod_group_name
    return (
        a.spec.HasField("workload_ref")
        and b.spec.HasField("workload_ref")
        and a.spec.workload_ref == b.spec.workload_ref
    )


def hint_pod_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Another pod of the same gang (unscheduled or bound) may complete its minCount."""
    return QueueingHint.QUEUE if same_pod_group(pod, new) else QueueingHint.SKIP


def _names_pod_group(pod: core_pb2.Pod, pg: Any) -> bool:
    return (
        isinstance(pg, schedulingv1beta1_pb2.SchedulingPodGroup)
        and bool(pod.spec.scheduling_group.pod_group_name)
        and pod.metadata.namespace == pg.metadata.namespace
        and pod.spec.scheduling_group.pod_group_name == pg.metadata.name
    )


def hint_pod_group_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's PodGroup appeared."""
    return QueueingHint.QUEUE if _names_pod_group(pod, new) else QueueingHint.SKIP


def hint_pod_group_updated(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's gang PodGroup lowered its minCount (a gang's policy never switches)."""
    if not _names_pod_group(pod, new) or not isinstance(
        old, schedulingv1beta1_pb2.SchedulingPodGroup
    ):
        return QueueingHint.SKIP
    was, now = old.spec.scheduling_policy, new.spec.scheduling_policy
    if not was.HasField("gang") or not now.HasField("gang"):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE if now.gang.min_count < was.gang.min_count else QueueingHint.SKIP


def placement_feasible(min_count: int, scheduled: int, remaining: int) -> Status:
    """Upstream 1.37's PlacementFeasible: may a group with `scheduled` pods placed and
    `remaining` still to try reach its quorum? A basic group's quorum is one pod."""
    want = max(min_count, 1)
    if remaining + scheduled < want:
        return Status(
            Code.UNSCHEDULABLE,
            (
                f"minCount ({want}) cannot be satisfied: {scheduled} scheduled, "
                f"{remaining} remaining",
            ),
            NAME,
        )
    if scheduled < want:
        return Status(
            Code.WAIT,
            (
                f"minCount ({want}) is not yet satisfied: {scheduled} scheduled, {remaining} remaining",
            ),
            NAME,
        )
    return Status.success()


def hint_workload_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's Workload appeared."""
    if (
        not isinstance(new, schedulingv1alpha1_pb2.Workload)
        or not pod.spec.HasField("workload_ref")
        or pod.metadata.namespace != new.metadata.namespace
        or pod.spec.workload_ref.name != new.metadata.name
    ):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def pod_group_policy(
    workload: schedulingv1alpha1_pb2.Workload, name: str
) -> schedulingv1alpha1_pb2.PodGroupPolicy | None:
    for group in workload.spec.pod_groups:
        if group.name == name:
            return group.policy
    return None


class GangScheduling:
    """PreEnqueuePlugin, PreFilterPlugin (topology constraints), ReservePlugin,
    PermitPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(
        self,
        handle: Any,
        workloads: Mapping[str, schedulingv1alpha1_pb2.Workload],
        manager: WorkloadManager,
        pod_groups: Mapping[str, schedulingv1beta1_pb2.SchedulingPodGroup] | None = None,
        status: StatusWriter | None = None,
    ) -> None:
        self.handle = handle
        self.workloads = workloads
        self.pod_groups: Mapping[str, schedulingv1beta1_pb2.SchedulingPodGroup] = (
            pod_groups if pod_groups is not None else {}
        )
        self.manager = manager
        #: PodGroupInitiallyScheduled (status.py); None writes nothing.
        self.status = status

    def _report(self, pod: core_pb2.Pod, verdict: Status) -> None:
        """The PodGroup's PodGroupInitiallyScheduled after a decision about the group."""
        group = pod.spec.scheduling_group.pod_group_name
        if self.status is None or not group:
            return
        if verdict.is_success():
            self.status.scheduled(pod.metadata.namespace, group)
        else:
            self.status.unschedulable(pod.metadata.namespace, group, verdict.message)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD), hint_pod_added),
            ClusterEventWithHint(ClusterEvent(WORKLOAD_KIND, ActionType.ADD), hint_workload_added),
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP_KIND, ActionType.ADD), hint_pod_group_added
            ),
            ClusterEventWithHint(
                ClusterEvent(POD_GROUP_KIND, ActionType.UPDATE), hint_pod_group_updated
            ),
            # A topology-constrained group refused at PreFilter (no domain holds it): what
            # frees room or adds nodes may make a domain hold it (upstream's pod-group cycle
            # names the pods' Filter plugins, whose hints these are).
            ClusterEventWithHint(
                ClusterEvent("Pod", ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                self.hint_room_changed,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    "Node",
                    ActionType.ADD
                    | ActionType.UPDATE_NODE_ALLOCATABLE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.hint_room_changed,
            ),
        ]

    def hint_room_changed(self, pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
        """Queue the pod of a PodGroup with a topology constraint: a domain may hold the
        group now (not for a pod that was never on a node: it freed nothing)."""
        if isinstance(old, core_pb2.Pod) and not old.spec.node_name:
            return QueueingHint.SKIP
        group = pod.spec.scheduling_group.pod_group_name
        pg = self.pod_groups.get(f"{pod.metadata.namespace}/{group}") if group else None
        if pg is None or not pg.spec.scheduling_constraints.topology:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def _workload(self, pod: core_pb2.Pod) -> schedulingv1alpha1_pb2.Workload | None:
        return self.workloads.get(f"{pod.metadata.namespace}/{pod.spec.workload_ref.name}")

    def _gang_min_count(self, pod: core_pb2.Pod) -> tuple[int, Status]:
        """minCount of the pod's gang (0: not a gang), or the status that refuses it (the
        pod group is unknown)."""
        group = pod.spec.scheduling_group.pod_group_name
        if group:
            pg = self.pod_groups.get(f"{pod.metadata.namespace}/{group}")
            if pg is None:
                return 0, Status.unresolvable(
                    f'waiting for pod\'s pod group "{group}" to appear in scheduling queue',
                    plugin=NAME,
                )
            policy: Any = pg.spec.scheduling_policy
        else:
            ref = pod.spec.workload_ref
            workload = self._workload(pod)
            if workload is None:
                return 0, Status.unresolvable(
                    f'waiting for pods\'s workload "{ref.name}" to appear in scheduling queue',
                    plugin=NAME,
                )
            policy = pod_group_policy(workload, ref.pod_group)
            if policy is None:
                return 0, Status.unresolvable(
                    f'pod group "{ref.pod_group}" doesn\'t exist for a workload "{ref.name}"',
                    plugin=NAME,
                )
        if not policy.HasField("gang"):
            return 0, Status.success()
        return policy.gang.min_count, Status.success()

    def pod_joined(self, info: PodGroupInfo, pod: core_pb2.Pod) -> None:
        """A pod joined a gang that now has minCount pods or more: wake the gang's
        unscheduled pods (gated for lack of the quorum, or back from a timed-out attempt).
        Upstream's queue turns the unscheduled pod's arrival into a Pod/Add event whose hint
        does the same (addPodToSchedulingQueue under the GangScheduling gate)."""
        min_count, _ = self._gang_min_count(pod)
        if min_count and len(info.all_pods) >= min_count:
            self._activate(info.unscheduled_pods())

    def _activate(self, pods: Sequence[core_pb2.Pod]) -> None:
        """Handle.activate, when the handle has a queue (a framework unit test's may not)."""
        activate = getattr(self.handle, "activate", None)
        if callable(activate) and pods:
            activate(pods)

    # ------------------------------------------------------------------ queue
    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        if pod_group_key(pod) is None:
            return Status.success()
        min_count, status = self._gang_min_count(pod)
        if not min_count:
            return status
        if len(self.manager.pod_group_info(pod).all_pods) < min_count:
            return Status.unresolvable(MSG_MIN_COUNT_NOT_PRESENT, plugin=NAME)
        return Status.success()

    # ------------------------------------------------------ Reserve / Permit
    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        pod = pod_info.pod
        if pod_group_key(pod) is not None:
            self.manager.pod_group_info(pod).assume_pod(pod.metadata.uid, node_name)
        return Status.success()

    # ------------------------------------------------------------ PreFilter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """A PodGroup with a topology constraint: the pod goes to the group's domain, the
        scheduled pods' or, with none yet, the one chosen for the whole group (topology.py);
        any other pod: Skip."""
        pod = pod_info.pod
        group = pod.spec.scheduling_group.pod_group_name
        pg = self.pod_groups.get(f"{pod.metadata.namespace}/{group}") if group else None
        if pg is None or not pg.spec.scheduling_constraints.topology:
            return None, Status.skip(NAME)
        key = pg.spec.scheduling_constraints.topology[0].key
        info = self.manager.pod_group_info(pod)
        placed = info.placed_on()
        # The group's pods to place (this one first) matter only while none is scheduled.
        pending = (
            []
            if placed
            else [pod_info]
            + [PodInfo(p) for p in info.unscheduled_pods() if p.metadata.uid != pod.metadata.uid]
        )
        policy = pg.spec.scheduling_policy
        placement, status = topology.place_group(
            key,
            nodes,
            placed,
            pending,
            min_count=policy.gang.min_count if policy.HasField("gang") else 1,
            plugin=NAME,
        )
        if placement is None:
            self._report(pod, status)
            return None, status
        return PreFilterResult(frozenset(n.name for n in placement.nodes)), Status.success()

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        pod = pod_info.pod
        if pod_group_key(pod) is not None:
            self.manager.pod_group_info(pod).forget_pod(pod.metadata.uid)

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        pod = pod_info.pod
        if pod_group_key(pod) is None:
            return Status.success(), 0.0
        min_count, status = self._gang_min_count(pod)
        if not status.is_success():
            # The group vanished between PreEnqueue and Permit.
            return Status.as_error(LookupError(status.message), plugin=NAME), 0.0
        if not min_count:
            self._report(pod, Status.success())  # a basic group is scheduled with one pod
            return Status.success(), 0.0
        info = self.manager.pod_group_info(pod)
        assumed = set(info.assumed)
        scheduled = len(assumed | info.assigned)
        verdict = placement_feasible(min_count, scheduled, len(info.unscheduled - assumed))
        if verdict.code == Code.UNSCHEDULABLE and pod.spec.scheduling_group.pod_group_name:
            # 1.37 (PodGroup API): a gang whose pods cannot reach the quorum is refused at
            # once; 1.35's Workload gangs wait for the timeout.
            self._report(pod, verdict)
            return verdict, 0.0
        if verdict.code != Code.SUCCESS:
            # Wake the group's unscheduled pods: they may have waited for this one.
            self._activate(info.unscheduled_pods())
            timeout = info.scheduling_timeout(self.manager.clock.monotonic())
            return Status(Code.WAIT, (MSG_WAITING_ON_PERMIT,), NAME), timeout
        for uid in sorted(assumed):
            self.handle.allow_waiting_pod(uid, NAME)
        self._report(pod, Status.success())
        return Status.success(), 0.0


def new(args: Args | None, handle: Any) -> GangScheduling:
    """The plugin, its Workload and PodGroup listers (handle.informer) and its pod group
    index (handlers on the scheduler's own Pod informer, handle.pod_informer). A handle
    without informers (a framework unit test's) gives a plugin that knows no Workload and no
    PodGroup: gang pods stay gated."""
    informer_of = getattr(handle, "informer", None)
    workloads: Mapping[str, schedulingv1alpha1_pb2.Workload] = (
        InformerStoreView(informer_of(WORKLOAD_KIND)) if callable(informer_of) else {}
    )
    pod_groups: Mapping[str, schedulingv1beta1_pb2.SchedulingPodGroup] = (
        InformerStoreView(informer_of(POD_GROUP_KIND)) if callable(informer_of) else {}
    )
    clock = getattr(handle, "clock", None) or RealClock()
    plugin = GangScheduling(
        handle,
        workloads,
        WorkloadManager(clock=clock),
        pod_groups,
        StatusWriter(
            getattr(handle, "client", None),
            getattr(handle, "cluster_clock", None) or clock,
            pod_groups,
        ),
    )
    plugin.manager.on_pod_added = plugin.pod_joined
    pod_informer = getattr(handle, "pod_informer", None)
    if callable(pod_informer):
        m = plugin.manager
        pod_informer().add_handlers(Handlers(m.add_pod, m.update_pod, m.delete_pod))
    return plugin
