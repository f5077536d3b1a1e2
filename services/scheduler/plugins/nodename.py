"""NodeName: a pod that names `spec.nodeName` fits only that node.

Upstream plugins/nodename; the rejection is UnschedulableAndUnresolvable (preemption on
another node cannot help).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
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
from services.scheduler.plugins.helpers import NODE, Int64Array

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


@dataclass
class Args:
    """NodeName takes no arguments."""


def fits(pod: core_pb2.Pod, node_name: str) -> bool:
    return not pod.spec.node_name or pod.spec.node_name == node_name


class NodeName:
    """FilterPlugin, FilterRowsPlugin (the row of the named node), EnqueueExtensions."""

    name = NAME

    def __init__(self) -> None:
        self._reject = Status.unresolvable(ERR_REASON, plugin=NAME)

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if fits(pod_info.pod, node_info.name):
            return Status.success()
        return self._reject

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        want = pod_info.pod.spec.node_name
        if not want:
            return np.ones(len(rows), dtype=np.bool_)
        index_of = getattr(snapshot, "index_of", None)
        if index_of is None:
            return None
        try:
            row = index_of(want)
        except KeyError:
            return np.zeros(len(rows), dtype=np.bool_)
        return np.asarray(rows) == row

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), is_schedulable_after_node_add)
        ]


def is_schedulable_after_node_add(
    pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
) -> QueueingHint:
    if new is None or not fits(pod, new.metadata.name):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> NodeName:
    return NodeName()
