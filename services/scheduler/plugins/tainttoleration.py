"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule ones are
scored against.

Upstream plugins/tainttoleration. Filter rejects with UnschedulableAndUnresolvable worded as
upstream 1.35 words it, "node(s) had untolerated taint(s)" (the taint's key and value are no
longer in the reason; upstream logs the first one at V(4), as `filter` does at debug). Score counts the
node's PreferNoSchedule taints that the pod's PreferNoSchedule (or effect-less) tolerations do
not tolerate; NormalizeScore reverses it so the fewest intolerable taints score 100.
Toleration matching (Equal, Exists, empty key/effect wildcards, numeric Gt/Lt) is in helpers.

As the docs say ("the control plane also adds the node.kubernetes.io/memory-pressure
toleration on pods that have a QoS class other than BestEffort"), Guaranteed and Burstable
pods tolerate the memory-pressure NoSchedule taint here without it being written into
their spec; new BestEffort pods are kept off a node under memory pressure.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import (
    NO_SCHEDULE,
    PREFER_NO_SCHEDULE,
    find_matching_untolerated_taint,
    tolerations_tolerate_taint,
)
from services.api.helpers.wellknown import TAINT_MEMORY_PRESSURE
from services.scheduler.cache.columns import TaintSet, columns_of
from services.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
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
from services.scheduler.plugins.helpers import (
    NODE,
    POD,
    Int64Array,
    default_normalize_rows,
    default_normalize_score,
    do_not_schedule_taints_filter,
)

log = logging.getLogger(__name__)

NAME = "TaintToleration"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_NOT_MATCH = "node(s) had taints that the pod didn't tolerate"


@dataclass
class Args:
    """TaintToleration takes no arguments."""


MEMORY_PRESSURE_TOLERATION = core_pb2.Toleration(
    key=TAINT_MEMORY_PRESSURE, operator="Exists", effect=NO_SCHEDULE
)


def effective_tolerations(pod: core_pb2.Pod) -> Sequence[core_pb2.Toleration]:
    """The pod's tolerations, plus memory pressure's for pods that are not BestEffort."""
    qos = pod.status.qos_class or (
        "Burstable"
        if any(c.resources.requests or c.resources.limits for c in pod.spec.containers)
        else "BestEffort"
    )
    if qos == "BestEffort":
        return pod.spec.tolerations
    return [*pod.spec.tolerations, MEMORY_PRESSURE_TOLERATION]


#: The Filter reason (upstream 1.35 taint_toleration.go).
ERR_REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


def prefer_no_schedule_tolerations(
    tolerations: Sequence[core_pb2.Toleration],
) -> list[core_pb2.Toleration]:
    """Tolerations that can tolerate a PreferNoSchedule taint (that effect, or no effect)."""
    return [t for t in tolerations if not t.effect or t.effect == PREFER_NO_SCHEDULE]


def count_intolerable_prefer_no_schedule(
    taints: Sequence[core_pb2.Taint], tolerations: Sequence[core_pb2.Toleration]
) -> int:
    return sum(
        1
        for t in taints
        if t.effect == PREFER_NO_SCHEDULE and not tolerations_tolerate_taint(tolerations, t)
    )


_SUCCESS = Status.success()


def _tolerated(ts: TaintSet, tolerations: Sequence[core_pb2.Toleration]) -> bool:
    """`filter`'s answer for every node with this taint list (no Node: Success, as there)."""
    if ts.taints is None or not ts.has_hard:
        return True
    return (
        find_matching_untolerated_taint(ts.taints, tolerations, do_not_schedule_taints_filter)
        is None
    )


def _intolerable(ts: TaintSet, tolerations: Sequence[core_pb2.Toleration]) -> int:
    """`score`'s raw answer for every node with this taint list."""
    if ts.taints is None or not ts.has_prefer:
        return 0
    return count_intolerable_prefer_no_schedule(ts.taints, tolerations)


class TaintToleration:
    """FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin, EnqueueExtensions;
    FilterRowsPlugin and ScoreRowsPlugin (tolerations evaluated once per distinct taint list
    of the snapshot's nodes, services/scheduler/cache/columns.py).

    PreScore returns Skip when no node of the snapshot has a PreferNoSchedule taint (asked by
    kubera issue 14; upstream scores anyway): every node would then score 0, normalised to
    100, which adds the same amount to every node and changes no ranking. Without a handle
    (plugin unit tests) there is no snapshot to ask, and PreScore never skips."""

    name = NAME

    def __init__(self, handle: Any = None) -> None:
        self.handle = handle
        self._untolerated = Status.unresolvable(ERR_REASON_UNTOLERATED, plugin=NAME)

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None or not node.spec.taints:
            return Status.success()
        taint = find_matching_untolerated_taint(
            node.spec.taints, effective_tolerations(pod_info.pod), do_not_schedule_taints_filter
        )
        if taint is None:
            return Status.success()
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "node %s had untolerated taints: pod %s/%s, untoleratedTaint %s=%s:%s",
                node.metadata.name,
                pod_info.pod.metadata.namespace,
                pod_info.pod.metadata.name,
                taint.key,
                taint.value,
                taint.effect,
            )
        return self._untolerated

    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        state.write(
            PRE_SCORE_STATE_KEY, prefer_no_schedule_tolerations(pod_info.pod.spec.tolerations)
        )
        if self.handle is not None:
            cols = columns_of(self.handle.snapshot())
            if cols is not None and not cols.has_prefer_no_schedule():
                return Status.skip(NAME)
        return Status.success()

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        if tolerations is None:
            return 0, Status.as_error(
                KeyError(f"failed to read {PRE_SCORE_STATE_KEY!r} from cycleState"), plugin=NAME
            )
        taints = node.spec.taints
        if not taints:  # the common case, without building a generator
            return 0, _SUCCESS
        return count_intolerable_prefer_no_schedule(taints, tolerations), _SUCCESS

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, True, scores)

    # ----------------------------------------------------------------- row forms
    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        cols = columns_of(snapshot)
        if cols is None:
            return None
        tolerations = effective_tolerations(pod_info.pod)
        table = cols.taints.table(lambda ts: _tolerated(ts, tolerations))
        return table[cols.taints.ids[rows]]

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> Int64Array | None:
        tolerations = state.get(PRE_SCORE_STATE_KEY)
        cols = columns_of(snapshot)
        if tolerations is None or cols is None or not cols.all_have_nodes:
            return None  # `score` gives the error
        table = cols.taints.table(lambda ts: _intolerable(ts, tolerations), np.int64)
        return table[cols.taints.ids[rows]]

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: Int64Array
    ) -> Int64Array:
        return default_normalize_rows(scores, MAX_NODE_SCORE, True)

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
    """Queue when the node went from having an untolerated taint (or not existing) to none."""
    if new is None:
        return QueueingHint.SKIP
    tolerations = effective_tolerations(pod)
    was_untolerated = old is None or (
        find_matching_untolerated_taint(old.spec.taints, tolerations, do_not_schedule_taints_filter)
        is not None
    )
    is_untolerated = (
        find_matching_untolerated_taint(new.spec.taints, tolerations, do_not_schedule_taints_filter)
        is not None
    )
    return QueueingHint.QUEUE if was_untolerated and not is_untolerated else QueueingHint.SKIP


def is_schedulable_after_pod_toleration_change(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
) -> QueueingHint:
    """A toleration added to the rejected pod itself may let it in."""
    if new is not None and new.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def new(args: Args | None, handle: Any) -> TaintToleration:
    return TaintToleration(handle)
