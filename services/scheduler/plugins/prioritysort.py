"""PrioritySort: the queue's order — higher `spec.priority` first, then whoever queued earlier.

Upstream plugins/queuesort. A pod without a resolved priority counts as 0 (the admission
plugin normally fills `spec.priority` from its PriorityClass before the scheduler sees it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.types import QueuedPodInfo

NAME = "PrioritySort"


@dataclass
class Args:
    """PrioritySort takes no arguments."""


def pod_priority(pod: core_pb2.Pod) -> int:
    """corev1helpers.PodPriority: spec.priority, or 0 when unset."""
    return pod.spec.priority if pod.spec.HasField("priority") else 0


class PrioritySort:
    """QueueSortPlugin."""

    name = NAME

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        pa, pb = pod_priority(a.pod), pod_priority(b.pod)
        return pa > pb or (pa == pb and a.timestamp < b.timestamp)


def new(args: Args | None, handle: Any) -> PrioritySort:
    return PrioritySort()
