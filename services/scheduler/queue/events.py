"""Cluster events as the scheduling queue sees them (upstream framework/events.go and the event
matching of backend/queue): the queue-internal pod resources, the event labels of
queue_incoming_pods_total, how a registered event matches an incoming one, and which pod
updates may change a scheduling result.
"""

from __future__ import annotations

from enum import IntEnum

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.types import ActionType, ClusterEvent

WILDCARD = "*"
#: Queue-internal pod resources: plugins register "Pod", which matches both (upstream rule).
ASSIGNED_POD = "AssignedPod"
UNSCHEDULABLE_POD = "UnschedulablePod"
POD = "Pod"
#: Pods rejected by it may be helped by any pod event in their namespace.
POD_TOPOLOGY_SPREAD = "PodTopologySpread"

# Event labels of queue_incoming_pods_total (upstream framework/events.go).
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
#: Upstream framework.ForceActivate: a plugin asked for the pods (Handle.activate).
FORCE_ACTIVATE = "ForceActivate"
UNSCHEDULABLE_TIMEOUT = "UnschedulableTimeout"
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(UNSCHEDULABLE_POD, ActionType.ADD, "UnschedulablePodAdd")
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(
    UNSCHEDULABLE_POD, ActionType.UPDATE, "UnschedulablePodUpdate"
)
EVENT_ASSIGNED_POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
EVENT_ASSIGNED_POD_UPDATE = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE, "AssignedPodUpdate")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")
EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, UNSCHEDULABLE_TIMEOUT)
POD_SCALE_DOWN = ClusterEvent(POD, ActionType.UPDATE_POD_SCALE_DOWN)


class QueueingStrategy(IntEnum):
    """Where an event sends an unschedulable pod (ordered: higher wins)."""

    SKIP = 0  # stays in unschedulable
    AFTER_BACKOFF = 1  # backoffQ if still backing off, else activeQ
    IMMEDIATELY = 2  # activeQ (a Pending plugin said QUEUE)


# --------------------------------------------------------------------------- event helpers
def is_wildcard(event: ClusterEvent) -> bool:
    return event.resource == WILDCARD and event.action == ActionType.ALL


def event_matches(registered: ClusterEvent, incoming: ClusterEvent) -> bool:
    """Whether an event a plugin registered covers one that happened (upstream
    ClusterEvent.Match): "*" matches any resource, and "Pod" also matches the queue-internal
    AssignedPod / UnschedulablePod resources."""
    if is_wildcard(registered):
        return True
    r = registered.resource
    resource_ok = r in (WILDCARD, incoming.resource) or (
        r == POD and incoming.resource in (ASSIGNED_POD, UNSCHEDULABLE_POD)
    )
    return resource_ok and bool(registered.action & incoming.action)


def event_label(event: ClusterEvent) -> str:
    """The metric label upstream's ClusterEvent.Label() gives: custom label, else resource
    followed by the CamelCase action ("NodeAdd", "NodeUpdateNodeTaint")."""
    if event.label:
        return event.label
    name = event.action.name or str(int(event.action))
    action = "|".join("".join(w.capitalize() for w in part.split("_")) for part in name.split("|"))
    return f"{event.resource}{action}"


def is_pod_updated(old: core_pb2.Pod | None, new: core_pb2.Pod) -> bool:
    """Whether an update may change the scheduling result: anything but resourceVersion,
    generation, finalizers and status changed (upstream isPodUpdated)."""
    if old is None:
        return True

    def strip(pod: core_pb2.Pod) -> core_pb2.Pod:
        c = core_pb2.Pod()
        c.CopyFrom(pod)
        c.metadata.resource_version = ""
        c.metadata.generation = 0
        del c.metadata.finalizers[:]
        c.ClearField("status")
        return c

    return strip(old) != strip(new)
