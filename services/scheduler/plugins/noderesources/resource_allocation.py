"""What NodeResourcesFit's scoring and NodeResourcesBalancedAllocation share.

Upstream resource_allocation.go: both plugins score a node from per-resource (allocatable,
requested) pairs for their configured, weighted resources. This module gathers those pairs,
from one NodeInfo (`_vectors`) or for snapshot rows at once from the snapshot's per-node
numpy arrays (`_matrices`, read in place: nothing is rebuilt per pod), and holds the
`ResourceSpec` argument both plugins' Args list with its v1 defaulting (cpu:1, memory:1).

All integer arithmetic follows Go (int64, division truncating toward zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from services.api.helpers.resources import CPU, EPHEMERAL, MAX_AMOUNT, MEMORY, is_scalar_resource
from services.scheduler.framework.status import Status
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
        self, snapshot: Any, rows: np.ndarray, pod_reqs: Sequence[int]
    ) -> tuple[np.ndarray, np.ndarray]:
        """(requested, allocatable) int64 (len(rows), len(resources)) for the snapshot's
        `rows` (`has_arrays(snapshot)`); allocatable 0 marks a resource left out for that
        node. Columns the arrays lack (extended resources; the non-zero requests of a
        snapshot without `non_zero`) are gathered from the rows' NodeInfos."""
        n, k = len(rows), len(self.resources)
        req = np.zeros((n, k), dtype=np.int64)
        alloc = np.zeros((n, k), dtype=np.int64)
        a_rows = snapshot.alloc[rows]
        non_zero = None if self.use_requested else getattr(snapshot, "non_zero", None)
        r_rows: np.ndarray | None = None
        nz_rows: np.ndarray | None = None
        for j, (r, q) in enumerate(zip(self.resources, pod_reqs, strict=True)):
            col = _COLUMN.get(r.name)
            base = None
            if col is not None:
                if col == COL_EPHEMERAL or self.use_requested:
                    if r_rows is None:
                        r_rows = snapshot.requested[rows]
                    base = r_rows[:, col]
                elif non_zero is not None:
                    if nz_rows is None:
                        nz_rows = non_zero[rows]
                    base = nz_rows[:, col]
            if base is not None:
                alloc[:, j] = a_rows[:, col]
                # saturating: base and q are each at most MAX_AMOUNT, their sum may not be
                req[:, j] = np.minimum(base, MAX_AMOUNT - q) + q
                continue
            infos = snapshot.list()
            for i, row in enumerate(rows.tolist()):
                a, rq = allocatable_and_requested(infos[row], r.name, q, self.use_requested)
                alloc[i, j] = min(a, MAX_AMOUNT)
                req[i, j] = min(rq, MAX_AMOUNT)
        return req, alloc


def has_arrays(snapshot: Any) -> bool:
    """Whether `snapshot` has the per-node arrays the row methods read: `alloc` and
    `requested`, int64 (N, 4) [milli_cpu, memory, ephemeral_storage, pods] aligned with
    `list()` (requested pods = pods on the node), and optionally `non_zero` (N, 2)."""
    alloc = getattr(snapshot, "alloc", None)
    return (
        alloc is not None
        and getattr(snapshot, "requested", None) is not None
        and len(snapshot.list()) == alloc.shape[0]
    )


def rows_of(handle: Any, nodes: Sequence[NodeInfo]) -> tuple[Any, np.ndarray] | None:
    """(the handle's snapshot, the rows of `nodes` in it) for the NodeInfo-list forms
    (filter_batch, score_batch) of the row methods; None without arrays or `index_of`."""
    if handle is None:
        return None
    snap = handle.snapshot()
    index_of = getattr(snap, "index_of", None)
    if index_of is None or not has_arrays(snap):
        return None
    return snap, np.fromiter((index_of(ni.name) for ni in nodes), dtype=np.int64, count=len(nodes))


def score_batch(
    plugin: Any, state: Any, pod_info: PodInfo, nodes: Sequence[NodeInfo]
) -> tuple[list[int], Status]:
    """A plugin's `score` for every node through its `score_rows` over the nodes' snapshot
    rows; per node without arrays."""
    found = rows_of(plugin.handle, nodes)
    scores = None if found is None else plugin.score_rows(state, pod_info, *found)
    if scores is None:
        out = []
        for ni in nodes:
            s, st = plugin.score(state, pod_info, ni)
            if not st.is_success():
                return [], st
            out.append(s)
        return out, Status.success()
    return [int(s) for s in scores.tolist()], Status.success()
