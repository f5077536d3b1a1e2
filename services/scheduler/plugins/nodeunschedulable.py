"""NodeUnschedulable: cordoned nodes (`spec.unschedulable`) take only pods that tolerate
the `node.kubernetes.io/unschedulable:NoSchedule` taint.

Upstream plugins/nodeunschedulable. The toleration is matched exactly as TaintToleration
matches a taint {key: node.kubernetes.io/unschedulable, value: "", effect: NoSchedule}, so an
empty-key Exists toleration or one with an empty effect also lets the pod in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import NO_SCHEDULE, tolerations_tolerate_taint
from services.api.helpers.wellknown import TAINT_UNSCHEDULABLE as TAINT_NODE_UNSCHEDULABLE
from services.scheduler.cache.columns import columns_of
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
from services.scheduler.plugins.helpers import NODE, POD, Int64Array

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

_UNSCHEDULABLE_TAINT = core_pb2.Taint(key=TAINT_NODE_UNSCHEDULABLE, effect=NO_SCHEDULE)


@dataclass
class Args:
    """NodeUnschedulable takes no arguments."""


def tolerates_unschedulable(pod: core_pb2.Pod) -> bool:
    return tolerations_tolerate_taint(pod.spec.tolerations, _UNSCHEDULABLE_TAINT)


class NodeUnschedulable:
    """FilterPlugin, FilterRowsPlugin (the snapshot's unschedulable column), EnqueueExtensions."""

    name = NAME

    def __init__(self) -> None:
        self._reject = Status.unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=NAME)

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.unresolvable(ERR_REASON_UNKNOWN_CONDITION, plugin=NAME)
        if not node.spec.unschedulable or tolerates_unschedulable(pod_info.pod):
            return Status.success()
        return self._reject

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        cols = columns_of(snapshot)
        if cols is None:
            return None
        # A row without a Node is rejected (`filter` says "unknown conditions").
        if tolerates_unschedulable(pod_info.pod):
            return cols.has_node[rows]
        return cols.has_node[rows] & ~cols.unschedulable[rows]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATIONS),
                is_schedulable_after_pod_toleration_change,
            ),
        ]


def is_schedulable_after_node_change(
    pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
) -> QueueingHint:
    """Queue when a node appears schedulable or stops being unschedulable (uncordon)."""
    if new is None:
        return QueueingHint.SKIP
    was_schedulable = old is not None and not old.spec.unschedulable
    if not was_schedulable and not new.spec.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_pod_toleration_change(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
) -> QueueingHint:
    """Only the rejected pod itself, gaining the unschedulable toleration, can help."""
    if new is not None and new.metadata.uid == pod.metadata.uid and tolerates_unschedulable(new):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Args | None, handle: Any) -> NodeUnschedulable:
    return NodeUnschedulable()
