"""NodeResourcesFit's scoring strategies: LeastAllocated, MostAllocated and
RequestedToCapacityRatio.

Upstream least_allocated.go, most_allocated.go and requested_to_capacity_ratio.go. Each maps a
node's per-resource (requested, allocatable) to a score; `Scorer` applies the configured one
over weighted resources, node by node and vectorised over many nodes, with the same result:

- LeastAllocated: sum_i w_i * (alloc - req) * 100 / alloc, over sum_i w_i;
- MostAllocated: sum_i w_i * min(req, alloc) * 100 / alloc, over sum_i w_i;
- RequestedToCapacityRatio: a broken-linear shape maps utilization 0..100 to a score 0..10,
  scaled by 10; resources scoring 0 are left out, the weighted mean is rounded.

All integer arithmetic follows Go (int64, division truncating toward zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.scheduler.framework.interface import MAX_NODE_SCORE
from services.scheduler.plugins.helpers import broken_linear, go_div, go_round_div
from services.scheduler.plugins.noderesources.resource_allocation import ResourceSpec

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: Shape scores are 0..MAX_CUSTOM_PRIORITY_SCORE, scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


@dataclass
class UtilizationShapePoint:
    """One point of RequestedToCapacityRatio's shape: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Pods without requests count with the non-zero defaults, so requested may exceed it.
    requested = min(requested, capacity)
    return go_div(requested * MAX_NODE_SCORE, capacity)


class Scorer:
    """One strategy over weighted resources: score(requested, allocatable) per node, in pure
    Python and vectorised (rows are nodes, columns the resources). Columns whose allocatable
    is 0 are left out, as upstream leaves them at (0, 0)."""

    def __init__(self, strategy: str, resources: Sequence[ResourceSpec], shape: Sequence[Any]):
        self.strategy = strategy
        self.weights = [r.weight for r in resources]
        self.shape = [
            (p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape
        ]

    def _rtcr(self, requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(self.shape, MAX_UTILIZATION)
        return broken_linear(self.shape, go_div(requested * MAX_UTILIZATION, capacity))

    def score(self, requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for w, r, a in zip(self.weights, requested, allocatable, strict=True):
            if a == 0:
                continue
            if self.strategy == LEAST_ALLOCATED:
                s = least_requested_score(r, a)
            elif self.strategy == MOST_ALLOCATED:
                s = most_requested_score(r, a)
            else:
                s = self._rtcr(r, a)
                if s <= 0:
                    continue
            node_score += s * w
            weight_sum += w
        if weight_sum == 0:
            return 0
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return go_round_div(node_score, weight_sum)
        return go_div(node_score, weight_sum)

    def _broken_linear_v(self, p: np.ndarray) -> np.ndarray:
        out = np.full(p.shape, self.shape[-1][1], dtype=np.int64)
        done = np.zeros(p.shape, dtype=bool)
        for i, (u, s) in enumerate(self.shape):
            m = (p <= u) & ~done
            if i == 0:
                val = np.full(p.shape, s, dtype=np.int64)
            else:
                pu, ps = self.shape[i - 1]
                val = ps + _go_div_v((s - ps) * (p - pu), np.int64(u - pu))
            out = np.where(m, val, out)
            done |= m
        return out

    def score_v(self, requested: np.ndarray, allocatable: np.ndarray) -> np.ndarray:
        if allocatable.size and int(allocatable.max()) > _MAX_EXACT_ALLOCATABLE:
            # amount * 100 would wrap in int64 (a node with more than ~9.2e16 of a resource,
            # as validation allows): score those rows with Python's exact integers
            return np.array(
                [
                    self.score(r, a)
                    for r, a in zip(requested.tolist(), allocatable.tolist(), strict=True)
                ],
                dtype=np.int64,
            ).reshape(requested.shape[0])
        n = requested.shape[0]
        node_score = np.zeros(n, dtype=np.int64)
        weight_sum = np.zeros(n, dtype=np.int64)
        for j, w in enumerate(self.weights):
            a, r = allocatable[:, j], requested[:, j]
            valid = a != 0
            safe_a = np.where(valid, a, 1)
            if self.strategy == LEAST_ALLOCATED:
                s = np.where(r > a, 0, _go_div_v((a - r) * MAX_NODE_SCORE, safe_a))
            elif self.strategy == MOST_ALLOCATED:
                s = _go_div_v(np.minimum(r, a) * MAX_NODE_SCORE, safe_a)
            else:
                p = np.where(r > a, MAX_UTILIZATION, _go_div_v(r * MAX_UTILIZATION, safe_a))
                s = self._broken_linear_v(p)
                valid &= s > 0
            node_score += np.where(valid, s * w, 0)
            weight_sum += np.where(valid, w, 0)
        safe_ws = np.where(weight_sum == 0, 1, weight_sum)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            out = (2 * node_score + safe_ws) // (2 * safe_ws)
        else:
            out = _go_div_v(node_score, safe_ws)
        return np.where(weight_sum == 0, 0, out)


#: The largest allocatable the vectorised scoring multiplies by 100 without wrapping.
_MAX_EXACT_ALLOCATABLE = (2**63 - 1) // max(MAX_NODE_SCORE, MAX_UTILIZATION)


def _go_div_v(a: np.ndarray, b: np.ndarray | np.int64) -> np.ndarray:
    """Go's truncating int64 division, elementwise."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (b >= 0), q, -q)
