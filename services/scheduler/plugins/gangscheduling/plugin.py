"""GangScheduling: all-or-nothing scheduling of a Workload's gang pod groups (upstream 1.35
pkg/scheduler/framework/plugins/gangscheduling, alpha behind the GangScheduling and
GenericWorkload feature gates, both off by default).

A pod joins a pod group through spec.workloadRef {name, podGroup, podGroupReplicaKey}; the
Workload (scheduling.k8s.io/v1alpha1, same namespace) gives the group's policy. Pods of a
basic group, and pods without workloadRef, pass every point untouched. For a gang group
{minCount}, per replica key:

    PreEnqueue  gate the pod while its Workload or pod group does not exist, or while fewer
                than minCount pods of the group exist
    Reserve     count the pod as assumed; Unreserve takes it back
    Permit      Wait until minCount pods of the group are assumed or bound, waking the
                group's unscheduled pods meanwhile; the pod that completes the quorum allows
                every waiting one. All pods of an attempt share one deadline, 5 minutes after
                its first Permit: at that moment every waiting pod is rejected (Unreserve,
                back to the unschedulable queue) and none binds.

Events: a Pod add with the same workloadRef (namespace, name, group, replica key), and a
Workload add with the pod's namespace and workload name. A Workload's pod groups are
immutable, so upstream registers no Workload update (kubera neither). Upstream's queue also
turns every unscheduled pod's arrival into that Pod/Add event for the waiting pods (under
the GangScheduling gate); kubera's queue does not, so the plugin's own handler does the
same for its gangs: a pod joining a gang that has minCount pods wakes the gang's unscheduled
pods (Handle.activate), as Coscheduling does for its groups.

Enabling it: kubera has no feature gates; as upstream with the gates off, the plugin is not
in the default profile. A KubeSchedulerConfiguration enables it with
`plugins: {multiPoint: {enabled: [{name: GangScheduling}]}}` (`kubera up --scheduler-config`).
The Workload kind and spec.workloadRef are always served.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2, schedulingv1alpha1_pb2
from services.client import Handlers
from services.clock import RealClock
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.gangscheduling.workloadmanager import (
    PodGroupInfo,
    WorkloadManager,
)
from services.scheduler.plugins.helpers import InformerStoreView

NAME = "GangScheduling"
#: The kind of the Workload informer (and of its cluster events).
WORKLOAD_KIND = "Workload"
MSG_MIN_COUNT_NOT_PRESENT = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAITING_ON_PERMIT = "waiting for minCount pods from a gang to be waiting on permit"


@dataclass
class Args:
    """GangScheduling takes no arguments."""


def matching_workload_reference(a: core_pb2.Pod, b: Any) -> bool:
    """Both pods name the same workload, pod group and replica key, in one namespace."""
    return (
        isinstance(b, core_pb2.Pod)
        and a.spec.HasField("workload_ref")
        and b.spec.HasField("workload_ref")
        and a.metadata.namespace == b.metadata.namespace
        and a.spec.workload_ref == b.spec.workload_ref
    )


def hint_pod_added(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """Another pod of the same gang may complete its minCount."""
    return QueueingHint.QUEUE if matching_workload_reference(pod, new) else QueueingHint.SKIP


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
    """PreEnqueuePlugin, ReservePlugin, PermitPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(
        self,
        handle: Any,
        workloads: Mapping[str, schedulingv1alpha1_pb2.Workload],
        manager: WorkloadManager,
    ) -> None:
        self.handle = handle
        self.workloads = workloads
        self.manager = manager

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent("Pod", ActionType.ADD), hint_pod_added),
            ClusterEventWithHint(ClusterEvent(WORKLOAD_KIND, ActionType.ADD), hint_workload_added),
        ]

    def _workload(self, pod: core_pb2.Pod) -> schedulingv1alpha1_pb2.Workload | None:
        return self.workloads.get(f"{pod.metadata.namespace}/{pod.spec.workload_ref.name}")

    def _gang_min_count(self, pod: core_pb2.Pod) -> tuple[int, Status]:
        """minCount of the pod's gang (0: not a gang), or the status that refuses it."""
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
        if not pod.spec.HasField("workload_ref"):
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
        if pod.spec.HasField("workload_ref"):
            self.manager.pod_group_info(pod).assume_pod(pod.metadata.uid)
        return Status.success()

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        pod = pod_info.pod
        if pod.spec.HasField("workload_ref"):
            self.manager.pod_group_info(pod).forget_pod(pod.metadata.uid)

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        pod = pod_info.pod
        if not pod.spec.HasField("workload_ref"):
            return Status.success(), 0.0
        ref = pod.spec.workload_ref
        workload = self._workload(pod)
        if workload is None:
            err = LookupError(f"failed to get workload {pod.metadata.namespace}/{ref.name}")
            return Status.as_error(err, plugin=NAME), 0.0
        policy = pod_group_policy(workload, ref.pod_group)
        if policy is None:
            err = LookupError(
                f'pod group "{ref.pod_group}" doesn\'t exist for a workload "{ref.name}"'
            )
            return Status.as_error(err, plugin=NAME), 0.0
        if not policy.HasField("gang"):
            return Status.success(), 0.0
        info = self.manager.pod_group_info(pod)
        assumed = set(info.assumed)
        if len(assumed | info.assigned) < policy.gang.min_count:
            # Wake the group's unscheduled pods: they may have waited for this one.
            self._activate(info.unscheduled_pods())
            timeout = info.scheduling_timeout(self.manager.clock.monotonic())
            return Status(Code.WAIT, (MSG_WAITING_ON_PERMIT,), NAME), timeout
        for uid in sorted(assumed):
            self.handle.allow_waiting_pod(uid, NAME)
        return Status.success(), 0.0


def new(args: Args | None, handle: Any) -> GangScheduling:
    """The plugin, its Workload lister (handle.informer) and its pod group index (handlers
    on the scheduler's own Pod informer, handle.pod_informer). A handle without informers (a
    framework unit test's) gives a plugin that knows no Workload: gang pods stay gated."""
    informer_of = getattr(handle, "informer", None)
    workloads: Mapping[str, schedulingv1alpha1_pb2.Workload] = (
        InformerStoreView(informer_of(WORKLOAD_KIND)) if callable(informer_of) else {}
    )
    plugin = GangScheduling(
        handle, workloads, WorkloadManager(clock=getattr(handle, "clock", None) or RealClock())
    )
    plugin.manager.on_pod_added = plugin.pod_joined
    pod_informer = getattr(handle, "pod_informer", None)
    if callable(pod_informer):
        m = plugin.manager
        pod_informer().add_handlers(Handlers(m.add_pod, m.update_pod, m.delete_pod))
    return plugin
