"""NodeResourcesBalancedAllocation: prefer nodes whose resources stay evenly used.

Upstream plugins/noderesources/balanced_allocation.go. It scores (1 - std(fractions)) * 100
over the fractions requested/allocatable (capped at 1) of its resources, with the plain
requests (not the non-zero defaults Fit scores with); best-effort pods skip it. The
(allocatable, requested) gathering is shared with Fit in resource_allocation.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from services.scheduler.framework.interface import MAX_NODE_SCORE
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.noderesources.resource_allocation import (
    ResourceAllocationScorer,
    ResourceSpec,
    default_resources,
    defaulted,
    has_arrays,
    pod_score_requests,
    resources_from,
    score_batch,
)

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass
class BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs."""

    resources: list[ResourceSpec] = field(default_factory=default_resources)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> BalancedAllocationArgs:
        return cls(resources=resources_from((d or {}).get("resources")))


#: The module's NAME / Args / new contract (`new` is at the end).
Args = BalancedAllocationArgs


def balanced_resource_score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
    """(1 - std of the capped fractions) * 100, truncated (upstream balancedResourceScorer)."""
    fractions: list[float] = []
    total = 0.0
    for r, a in zip(requested, allocatable, strict=True):
        if a == 0:
            continue
        f = float(r) / float(a)
        if f > 1:
            f = 1.0
        total += f
        fractions.append(f)
    std = 0.0
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = total / len(fractions)
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / len(fractions))
    return int((1 - std) * float(MAX_NODE_SCORE))


def balanced_resource_score_v(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """balanced_resource_score per row, with the same float operations in the same order."""
    n, cols = requested.shape
    if cols == 2:
        return _balanced_two(requested, allocatable)
    count = np.zeros(n, dtype=np.int64)
    total = np.zeros(n, dtype=np.float64)
    first = np.zeros(n, dtype=np.float64)
    second = np.zeros(n, dtype=np.float64)
    fr = np.zeros((n, cols), dtype=np.float64)
    valid = allocatable != 0
    for j in range(cols):
        v = valid[:, j]
        f = requested[:, j].astype(np.float64) / np.where(v, allocatable[:, j], 1).astype(
            np.float64
        )
        f = np.where(f > 1, 1.0, f)
        fr[:, j] = f
        total = np.where(v, total + f, total)
        first = np.where(v & (count == 0), f, first)
        second = np.where(v & (count == 1), f, second)
        count += v
    std = np.zeros(n, dtype=np.float64)
    std = np.where(count == 2, np.abs((first - second) / 2), std)
    many = count > 2
    if many.any():
        k = np.where(many, count, 1).astype(np.float64)
        mean = total / k
        acc = np.zeros(n, dtype=np.float64)
        for j in range(cols):
            d = fr[:, j] - mean
            acc = np.where(valid[:, j], acc + d * d, acc)
        std = np.where(many, np.sqrt(acc / k), std)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


def _balanced_two(requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
    """balanced_resource_score_v for two resources (the default cpu, memory): the standard
    deviation of two fractions is |f0 - f1| / 2, or 0 unless both resources are scored."""
    valid = allocatable != 0
    safe = np.where(valid, allocatable, 1).astype(np.float64)
    f = requested.astype(np.float64) / safe
    f = np.where(f > 1, 1.0, f)
    std = np.where(valid[:, 0] & valid[:, 1], np.abs((f[:, 0] - f[:, 1]) / 2), 0.0)
    return np.trunc((1 - std) * float(MAX_NODE_SCORE)).astype(np.int64)


class BalancedAllocation(ResourceAllocationScorer):
    """NodeResourcesBalancedAllocation: PreScorePlugin, ScorePlugin (+ `score_rows`,
    `score_batch`)."""

    name = NAME
    #: The module's NAME / Args / new contract, carried by the class as well (as it was when
    #: both plugins shared one module); the module-level `new` is this class's.
    NAME = NAME
    Args = BalancedAllocationArgs

    @staticmethod
    def new(args: BalancedAllocationArgs | None, handle: Any) -> BalancedAllocation:
        return BalancedAllocation(args or BalancedAllocationArgs(), handle)

    def __init__(self, args: BalancedAllocationArgs, handle: Any) -> None:
        self.handle = handle
        self.resources = defaulted(args.resources)
        self.use_requested = True

    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        reqs = pod_score_requests(pod_info, self.resources, True)
        if not any(reqs):
            # Best-effort pods would all pile onto one node (kubernetes#129138): skip.
            return Status.skip(NAME)
        state.write(PRE_SCORE_STATE_KEY, reqs)
        return Status.success()

    def _pod_reqs(self, state: CycleState, pod_info: PodInfo) -> list[int] | None:
        """The pod's requests, or None for a best-effort pod scored without PreScore."""
        reqs: list[int] | None = state.get(PRE_SCORE_STATE_KEY)
        if reqs is not None:
            return reqs
        reqs = pod_score_requests(pod_info, self.resources, True)
        return reqs if any(reqs) else None

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        if node_info.node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=self.name)
        reqs = self._pod_reqs(state, pod_info)
        if reqs is None:
            return 0, Status.success()
        requested, allocatable = self._vectors(node_info, reqs)
        return balanced_resource_score(requested, allocatable), Status.success()

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        """`score` for the snapshot's rows at once (numpy); None without arrays."""
        if not has_arrays(snapshot):
            return None
        reqs = self._pod_reqs(state, pod_info)
        if reqs is None or not len(rows):
            return np.zeros(len(rows), dtype=np.int64)
        requested, allocatable = self._matrices(snapshot, rows, reqs)
        return balanced_resource_score_v(requested, allocatable)

    def score_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """`score` for every node, through `score_rows` (a loop without arrays)."""
        return score_batch(self, state, pod_info, nodes)


new = BalancedAllocation.new
