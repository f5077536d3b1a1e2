"""SchedulingGates: a pod with `spec.schedulingGates` waits outside activeQ until they are gone.

Upstream plugins/schedulinggates. PreEnqueue rejects with UnschedulableAndUnresolvable and the
message "waiting for scheduling gates: [a b]" (Go's %v of a string slice); the pod is requeued
only by an update of that same pod that removes its last gate.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from services.scheduler.plugins.helpers import POD

NAME = "SchedulingGates"


@dataclass
class Args:
    """SchedulingGates takes no arguments."""


class SchedulingGates:
    """PreEnqueuePlugin, EnqueueExtensions."""

    name = NAME

    def pre_enqueue(self, pod: core_pb2.Pod) -> Status:
        if not pod.spec.scheduling_gates:
            return Status.success()
        gates = " ".join(g.name for g in pod.spec.scheduling_gates)
        return Status.unresolvable(f"waiting for scheduling gates: [{gates}]", plugin=NAME)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                is_schedulable_after_pod_change,
            )
        ]


def is_schedulable_after_pod_change(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
) -> QueueingHint:
    """Only the gated pod's own update, leaving it with no gates, can release it."""
    if new is None or new.metadata.uid != pod.metadata.uid:
        return QueueingHint.SKIP
    return QueueingHint.SKIP if new.spec.scheduling_gates else QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> SchedulingGates:
    return SchedulingGates()
