"""What several default plugins share: score normalisation, Go integer arithmetic, the
taints a Filter cares about.

Upstream keeps these in pkg/scheduler/framework/plugins/helper. Toleration matching itself
(what "tolerated" means, which TaintToleration, NodeUnschedulable, PodTopologySpread, the
taint-eviction controller and the kubelet must agree on) is vocabulary:
services/api/helpers/taints.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import NO_EXECUTE, NO_SCHEDULE
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.status import Status

#: ClusterEvent resources the default plugins register for (upstream framework.Pod / Node).
POD = "Pod"
NODE = "Node"

Int64Array = npt.NDArray[np.int64]


def go_div(a: int, b: int) -> int:
    """Go's integer division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def go_round_div(a: int, b: int) -> int:
    """int64(math.Round(float64(a) / float64(b))) for a >= 0, b > 0, exactly: half away from
    zero. (The float quotient of two small ints is never within an ulp of a .5 boundary
    it does not sit on, so the integer form agrees with Go's.)"""
    return (2 * a + b) // (2 * b)


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """helper.BuildBrokenLinearFunction over (utilization, score) points, at `p`
    (RequestedToCapacityRatio's and VolumeBinding's storage capacity scores)."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            pu, ps = shape[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return shape[-1][1]


def default_normalize_score(max_priority: int, reverse: bool, scores: list[NodeScore]) -> Status:
    """Rescale [0, max(scores)] to [0, max_priority] in place; with `reverse`, subtract from
    max_priority (upstream helper.DefaultNormalizeScore). All zero: zeros, or max_priority
    everywhere when reversed. Scores are assumed non-negative."""
    max_count = 0
    for s in scores:
        if s.score > max_count:
            max_count = s.score
    if max_count == 0:
        if reverse:
            for s in scores:
                s.score = max_priority
        return Status.success()
    for s in scores:
        score = max_priority * s.score // max_count
        s.score = max_priority - score if reverse else score
    return Status.success()


# ------------------------------------------------------------------ taints


def do_not_schedule_taints_filter(taint: core_pb2.Taint) -> bool:
    """The taints a Filter cares about (upstream helper.DoNotScheduleTaintsFilterFunc)."""
    return taint.effect in (NO_SCHEDULE, NO_EXECUTE)


def default_normalize_rows(scores: Int64Array, max_priority: int, reverse: bool) -> Int64Array:
    """default_normalize_score on an int64 array (a new array): the same results, element for
    element, as the NodeScore-list form."""
    max_count = max(int(scores.max()), 0) if len(scores) else 0
    if max_count == 0:
        if reverse:
            return np.full(len(scores), max_priority, dtype=np.int64)
        return scores.astype(np.int64, copy=True)
    # numpy's // floors on int64 exactly as Python's does.
    scaled = max_priority * scores.astype(np.int64, copy=False) // max_count
    return max_priority - scaled if reverse else scaled


class InformerStoreView(Mapping[str, Any]):
    """A plugin's lister: an informer's current store, keyed namespace/name (a relist
    replaces the dict, so it is read through the informer on every call)."""

    def __init__(self, informer: Any) -> None:
        self._informer = informer

    def __getitem__(self, key: str) -> Any:
        return self._informer.store[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._informer.store.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._informer.store)

    def __len__(self) -> int:
        return len(self._informer.store)
