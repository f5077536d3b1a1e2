"""The order in which a controller deletes surplus pods (upstream
pkg/controller/controller_utils.go ActivePodsWithRanks, with PodDeletionCost and
LogarithmicScaleDown, both on by default upstream).

Kept apart from the other controller helpers: a pure rule over pods, read and tested on
its own; nothing here does I/O.
"""

from __future__ import annotations

import functools
import math
from collections import defaultdict
from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.controllers.controller_utils import (
    is_pod_active,
    is_pod_ready,
    pod_ready_condition,
    timestamp,
)

#: Lower cost is deleted first (PodDeletionCost, on by default upstream).
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32 = (-(2**31), 2**31 - 1)


def deletion_cost(pod: core_pb2.Pod) -> int:
    text = pod.metadata.annotations.get(POD_DELETION_COST, "")
    try:
        cost = int(text)
    except ValueError:
        return 0
    return cost if _INT32[0] <= cost <= _INT32[1] else 0


def _ready_time(pod: core_pb2.Pod) -> float | None:
    c = pod_ready_condition(pod)
    if c is None or c.status != "True":
        return None
    return timestamp(c.last_transition_time)


def _max_restarts(pod: core_pb2.Pod) -> int:
    return max((c.restart_count for c in pod.status.container_statuses), default=0)


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank(t: float, now: float) -> int:
    nanos = (now - t) * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _newer_first(t1: float | None, t2: float | None, uid1: str, uid2: str, now: float) -> bool:
    """Later (or zero) time first, compared in log2 buckets of age with the UID as the
    tie-break (LogarithmicScaleDown, on by default upstream)."""
    if t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def _deletion_less(a: tuple[core_pb2.Pod, int], b: tuple[core_pb2.Pod, int], now: float) -> bool:
    """Whether pod a should be deleted before pod b (upstream ActivePodsWithRanks.Less):
    unassigned < assigned; Pending < Unknown < Running; not ready < ready; lower
    deletion cost; more related pods on the same node; ready more recently; more
    container restarts; created more recently."""
    (p, rank_p), (q, rank_q) = a, b
    if p.spec.node_name != q.spec.node_name and (not p.spec.node_name or not q.spec.node_name):
        return not p.spec.node_name
    op, oq = _PHASE_ORDINAL.get(p.status.phase, 0), _PHASE_ORDINAL.get(q.status.phase, 0)
    if op != oq:
        return op < oq
    rp, rq = is_pod_ready(p), is_pod_ready(q)
    if rp != rq:
        return not rp
    cp, cq = deletion_cost(p), deletion_cost(q)
    if cp != cq:
        return cp < cq
    if rank_p != rank_q:
        return rank_p > rank_q
    if rp and rq:
        tp, tq = _ready_time(p), _ready_time(q)
        if tp != tq:
            return _newer_first(tp, tq, p.metadata.uid, q.metadata.uid, now)
    mp, mq = _max_restarts(p), _max_restarts(q)
    if mp != mq:
        return mp > mq
    tp, tq = timestamp(p.metadata.creation_timestamp), timestamp(q.metadata.creation_timestamp)
    if tp != tq:
        return _newer_first(tp, tq, p.metadata.uid, q.metadata.uid, now)
    return False


def rank_for_deletion(
    pods: Sequence[core_pb2.Pod], related: Sequence[core_pb2.Pod], now: float
) -> list[core_pb2.Pod]:
    """`pods` in the order the controller deletes them. A pod's rank is the number of
    active `related` pods (those of every ReplicaSet of the same owner) on its node, so
    doubled-up nodes lose pods first."""
    on_node: dict[str, int] = defaultdict(int)
    for p in related:
        if is_pod_active(p):
            on_node[p.spec.node_name] += 1
    ranked = [(p, on_node[p.spec.node_name]) for p in pods]

    def cmp(a: tuple[core_pb2.Pod, int], b: tuple[core_pb2.Pod, int]) -> int:
        if _deletion_less(a, b, now):
            return -1
        return 1 if _deletion_less(b, a, now) else 0

    ranked.sort(key=functools.cmp_to_key(cmp))
    return [p for p, _ in ranked]


__all__ = [
    "POD_DELETION_COST",
    "deletion_cost",
    "rank_for_deletion",
]
