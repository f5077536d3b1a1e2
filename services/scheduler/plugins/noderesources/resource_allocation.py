"""What NodeResourcesFit's scoring and NodeResourcesBalancedAllocation share.

Upstream resource_allocation.go: both plugins score a node from per-resource (allocatable,
requested) pairs for their configured, weighted resources. This module gathers those pairs,
from one NodeInfo (`_vectors`) or for many nodes at once from the snapshot's per-node numpy
arrays (`_matrices`), and holds the `ResourceSpec` argument both plugins' Args list with
its v1 defaulting (cpu:1, memory:1).

All integer arithmetic follows Go (int64, division truncating toward zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.api.resources import CPU, EPHEMERAL, MAX_AMOUNT, MEMORY, is_scalar_resource
from services.scheduler.framework.types import NodeInfo, PodInfo

#: Columns of the snapshot's per-node arrays (`alloc`, `requested`).
COL_CPU, COL_MEMORY, COL_EPHEMERAL, COL_PODS = 0, 1, 2, 3
_COLUMN = {CPU: COL_CPU, MEMORY: COL_MEMORY, EPHEMERAL: COL_EPHEMERAL}


@dataclass
class ResourceSpec:
    """A resource scored by a strategy, with its weight."""

    name: str
    weight: int = 1


def default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1)]


def resources_from(raw: Any) -> list[ResourceSpec]:
    """v1 defaulting: no resources means cpu:1, memory:1; a missing or 0 weight means 1."""
    specs = [ResourceSpec(str(r["name"]), int(r.get("weight") or 1)) for r in raw or []]
    return specs or default_resources()


def defaulted(resources: Sequence[ResourceSpec]) -> list[ResourceSpec]:
    return list(resources) or default_resources()


def pod_score_requests(
    pod_info: PodInfo, resources: Sequence[ResourceSpec], use_requested: bool
) -> list[int]:
    """The pod's request per scored resource; cpu and memory use the non-zero defaults
    unless `use_requested` (upstream calculatePodResourceRequestList)."""
    out = []
    for r in resources:
        if not use_requested and r.name == CPU:
            out.append(pod_info.non_zero[0])
        elif not use_requested and r.name == MEMORY:
            out.append(pod_info.non_zero[1])
        else:
            out.append(pod_info.requests.get(r.name))
    return out


def allocatable_and_requested(
    node_info: NodeInfo, name: str, pod_request: int, use_requested: bool
) -> tuple[int, int]:
    """(allocatable, requested incl. the pod) for one resource; (0, 0) leaves it unscored
    (upstream calculateResourceAllocatableRequest)."""
    if pod_request == 0 and is_scalar_resource(name):
        return 0, 0
    alloc = node_info.allocatable
    requested = node_info.requested if use_requested else node_info.non_zero_requested
    if name == CPU:
        return alloc.milli_cpu, requested.milli_cpu + pod_request
    if name == MEMORY:
        return alloc.memory, requested.memory + pod_request
    if name == EPHEMERAL:
        return alloc.ephemeral_storage, node_info.requested.ephemeral_storage + pod_request
    if name in alloc.scalar:
        return alloc.scalar[name], node_info.requested.scalar.get(name, 0) + pod_request
    return 0, 0


class ResourceAllocationScorer:
    """What Fit's scoring and BalancedAllocation share: per-node (allocatable, requested)
    vectors for the configured resources, gathered from NodeInfo or from snapshot arrays."""

    resources: list[ResourceSpec]
    use_requested: bool
    handle: Any
    _row_index: RowIndex

    def _vectors(self, node_info: NodeInfo, pod_reqs: Sequence[int]) -> tuple[list[int], list[int]]:
        allocs, reqs = [], []
        for r, q in zip(self.resources, pod_reqs, strict=True):
            a, rq = allocatable_and_requested(node_info, r.name, q, self.use_requested)
            if a == 0:
                a = rq = 0
            allocs.append(a)
            reqs.append(rq)
        return reqs, allocs

    def _matrices(
        self, nodes: Sequence[NodeInfo], pod_reqs: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(requested, allocatable) int64 (len(nodes), len(resources)); allocatable 0 marks a
        resource left out for that node."""
        n, k = len(nodes), len(self.resources)
        req = np.zeros((n, k), dtype=np.int64)
        alloc = np.zeros((n, k), dtype=np.int64)
        arrays = snapshot_arrays(self.handle, nodes, self._row_index)
        non_zero = None
        if arrays is not None and not self.use_requested:
            non_zero = getattr(arrays[3], "non_zero", None)
        for j, (r, q) in enumerate(zip(self.resources, pod_reqs, strict=True)):
            col = _COLUMN.get(r.name)
            if arrays is not None and col is not None:
                a_arr, r_arr, idx, _ = arrays
                base = None
                if col == COL_EPHEMERAL or self.use_requested:
                    base = r_arr[idx, col]
                elif non_zero is not None:
                    base = np.asarray(non_zero)[idx, col]
                if base is not None:
                    alloc[:, j] = a_arr[idx, col]
                    # saturating: base and q are each at most MAX_AMOUNT, their sum may not be
                    req[:, j] = np.minimum(base, MAX_AMOUNT - q) + q
                    continue
            for i, ni in enumerate(nodes):
                a, rq = allocatable_and_requested(ni, r.name, q, self.use_requested)
                alloc[i, j] = min(a, MAX_AMOUNT)
                req[i, j] = min(rq, MAX_AMOUNT)
        return req, alloc


class RowIndex:
    """Rows of NodeInfos in the snapshot's arrays, remembered by object identity.

    A remembered row is trusted only while `snapshot.list()[row] is node_info`, so a stale
    entry (a list rebuilt, an id reused) falls back to `index_of(name)`."""

    def __init__(self) -> None:
        self._rows: dict[int, int] = {}

    def rows(self, listed: Sequence[NodeInfo], index_of: Any, nodes: Sequence[NodeInfo]) -> Any:
        if nodes is listed:
            return slice(None)
        known = self._rows
        if len(known) > 4 * len(listed) + 1024:
            known.clear()
        n = len(listed)
        out = []
        for ni in nodes:
            r = known.get(id(ni))
            if r is None or r >= n or listed[r] is not ni:
                r = known[id(ni)] = index_of(ni.name)
            out.append(r)
        return np.array(out, dtype=np.int64)


def snapshot_arrays(handle: Any, nodes: Sequence[NodeInfo], row_index: RowIndex) -> Any:
    """(alloc, requested, row index, snapshot) for `nodes`, or None without arrays.

    The snapshot's `alloc` / `requested` are int64 (N, 4) arrays [milli_cpu, memory,
    ephemeral_storage, pods] aligned with `snapshot.list()` (requested pods = pods on the
    node), with `index_of(name)` for the row of a node."""
    if handle is None:
        return None
    snap = handle.snapshot()
    alloc = getattr(snap, "alloc", None)
    requested = getattr(snap, "requested", None)
    index_of = getattr(snap, "index_of", None)
    if alloc is None or requested is None or index_of is None:
        return None
    listed = snap.list()
    if len(listed) != alloc.shape[0]:
        return None
    return alloc, requested, row_index.rows(listed, index_of, nodes), snap
