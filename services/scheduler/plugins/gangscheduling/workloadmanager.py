"""What the scheduler knows about each pod group (upstream 1.35
pkg/scheduler/backend/workloadmanager; 1.37's PodGroupStates in the scheduler cache), kept
apart from GangScheduling's extension points so it can be read and tested without a
framework.

A Workload pod group instance is keyed by (namespace, workload name, pod group name, replica
key): pods with different podGroupReplicaKeys of one pod group are separate gangs. A PodGroup
object's pods (spec.schedulingGroup.podGroupName) are keyed by (namespace, "", its name, "").
Per instance:

    all          every pod naming the instance that the scheduler's Pod informer holds
    unscheduled  neither assumed nor assigned (the pods Permit wakes while it waits)
    assumed      passed Reserve in this scheduler, not bound yet (waiting at Permit or
                 binding); Unreserve puts the pod back to unscheduled
    assigned     bound (the informer saw spec.nodeName)
    deadline     when the gang's current attempt times out at Permit: set by the first
                 Permit of an attempt to now + 5 minutes, renewed once passed, so every
                 pod of the gang waits until the same moment and all time out together

The informer handlers keep the sets (add, update, delete); a pod whose last member leaves
drops its instance. Upstream keeps the manager in the scheduler's backend, shared by the
framework; kubera has one user, so it lives with the plugin, fed by the plugin's handlers
on the scheduler's own Pod informer, as Coscheduling's PodGroupManager is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

from protos.kubera.v1 import core_pb2
from services.clock import Clock

#: DefaultSchedulingTimeoutDuration: how long a gang's pods wait at Permit for its quorum.
DEFAULT_SCHEDULING_TIMEOUT = 300.0


class PodGroupKey(NamedTuple):
    """A Workload pod group instance (workload, pod group, replica key), or a PodGroup
    object (scheduling.k8s.io/v1beta1: workload "" and the PodGroup's name; a workloadRef
    always names a Workload, so the two never meet)."""

    namespace: str
    workload: str
    pod_group: str
    replica_key: str


def pod_group_key(pod: core_pb2.Pod) -> PodGroupKey | None:
    """The pod group the pod belongs to: its spec.schedulingGroup's PodGroup, else its
    spec.workloadRef's instance; None with neither."""
    if pod.spec.scheduling_group.pod_group_name:
        return PodGroupKey(pod.metadata.namespace, "", pod.spec.scheduling_group.pod_group_name, "")
    if not pod.spec.HasField("workload_ref"):
        return None
    ref = pod.spec.workload_ref
    return PodGroupKey(pod.metadata.namespace, ref.name, ref.pod_group, ref.pod_group_replica_key)


@dataclass
class PodGroupInfo:
    """The runtime state of one pod group instance (see the module docstring)."""

    all_pods: dict[str, core_pb2.Pod] = field(default_factory=dict)
    unscheduled: set[str] = field(default_factory=set)
    assumed: set[str] = field(default_factory=set)
    assigned: set[str] = field(default_factory=set)
    deadline: float | None = None
    #: The node each assumed pod was reserved on (its bound pods carry spec.nodeName).
    assumed_nodes: dict[str, str] = field(default_factory=dict)

    def add_pod(self, pod: core_pb2.Pod) -> None:
        uid = pod.metadata.uid
        self.all_pods[uid] = pod
        if pod.spec.node_name:
            self.assigned.add(uid)
        else:
            self.unscheduled.add(uid)

    def update_pod(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
        uid = new.metadata.uid
        self.all_pods[uid] = new
        if not old.spec.node_name and new.spec.node_name:
            self.assigned.add(uid)
            self.unscheduled.discard(uid)
            self.assumed.discard(uid)
            self.assumed_nodes.pop(uid, None)

    def delete_pod(self, uid: str) -> bool:
        """Forget the pod; True when the instance has no pod left."""
        self.all_pods.pop(uid, None)
        self.unscheduled.discard(uid)
        self.assumed.discard(uid)
        self.assigned.discard(uid)
        self.assumed_nodes.pop(uid, None)
        return not self.all_pods

    def unscheduled_pods(self) -> list[core_pb2.Pod]:
        return [self.all_pods[uid] for uid in sorted(self.unscheduled) if uid in self.all_pods]

    def assume_pod(self, uid: str, node_name: str = "") -> None:
        self.assumed.add(uid)
        self.unscheduled.discard(uid)
        if node_name:
            self.assumed_nodes[uid] = node_name

    def forget_pod(self, uid: str) -> None:
        self.unscheduled.add(uid)
        self.assumed.discard(uid)
        self.assumed_nodes.pop(uid, None)

    def placed_on(self) -> set[str]:
        """The nodes the group's assumed and bound pods are on."""
        nodes = {self.assumed_nodes[u] for u in self.assumed if u in self.assumed_nodes}
        nodes.update(self.all_pods[u].spec.node_name for u in self.assigned if u in self.all_pods)
        return nodes

    def scheduling_timeout(self, now: float) -> float:
        """Seconds until the gang's attempt times out; a new attempt starts once the old
        deadline passed (upstream SchedulingTimeout)."""
        if self.deadline is None or self.deadline < now:
            self.deadline = now + DEFAULT_SCHEDULING_TIMEOUT
        return self.deadline - now


class WorkloadManager:
    """Pod group instances by key, kept by the Pod informer's handlers. `on_pod_added` is
    called with the instance and the pod after the pod joined it (the plugin wakes the
    waiting ones once the quorum is there)."""

    def __init__(
        self,
        *,
        clock: Clock,
        on_pod_added: Callable[[PodGroupInfo, core_pb2.Pod], None] | None = None,
    ) -> None:
        self.clock = clock
        self.on_pod_added = on_pod_added
        self._groups: dict[PodGroupKey, PodGroupInfo] = {}

    # ----------------------------------------------------------- informer handlers
    def add_pod(self, pod: core_pb2.Pod) -> None:
        key = pod_group_key(pod)
        if key is None:
            return
        info = self._groups.setdefault(key, PodGroupInfo())
        info.add_pod(pod)
        if self.on_pod_added is not None:
            self.on_pod_added(info, pod)

    def update_pod(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
        # spec.workloadRef and spec.schedulingGroup are immutable: an update never moves a
        # pod between groups.
        key = pod_group_key(new)
        if key is None:
            return
        info = self._groups.get(key)
        if info is None or new.metadata.uid not in info.all_pods:
            self.add_pod(new)
            return
        info.update_pod(old, new)

    def delete_pod(self, pod: core_pb2.Pod) -> None:
        key = pod_group_key(pod)
        info = self._groups.get(key) if key is not None else None
        if key is None or info is None:
            return
        if info.delete_pod(pod.metadata.uid):
            del self._groups[key]

    # ------------------------------------------------------------------ lookups
    def pod_group_info(self, pod: core_pb2.Pod) -> PodGroupInfo:
        """The pod's instance (made empty when no informer event brought it yet)."""
        key = pod_group_key(pod)
        if key is None:
            raise ValueError(f"pod {pod.metadata.namespace}/{pod.metadata.name} names no pod group")
        return self._groups.setdefault(key, PodGroupInfo())

    def get(self, key: PodGroupKey) -> PodGroupInfo | None:
        return self._groups.get(key)
