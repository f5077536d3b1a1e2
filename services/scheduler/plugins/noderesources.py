"""NodeResourcesFit and NodeResourcesBalancedAllocation: does the pod fit, and how full does it
leave the node.

Upstream plugins/noderesources (fit.go, resource_allocation.go, least_allocated.go,
most_allocated.go, requested_to_capacity_ratio.go, balanced_allocation.go). Both plugins live
here, as upstream keeps them in one package, because they share the request/allocatable
arithmetic.

Fit filters on cpu, memory, ephemeral-storage, the pod count and scalar (extended) resources:
a request fits when it is at most allocatable - requested. Reasons are upstream's ("Too many
pods", "Insufficient cpu", "Insufficient <resource>"); the status is UnschedulableAndUnresolvable
when some request exceeds the node's whole allocatable (preemption cannot help), else
Unschedulable. `filter_batch` does the same for many nodes at once with numpy over the
snapshot's per-node arrays.

Fit scores with a strategy over weighted resources (default cpu:1, memory:1), using the
non-zero requests for cpu and memory (100m / 200Mi for containers that set none):

- LeastAllocated: sum_i w_i * (alloc - req) * 100 / alloc, over sum_i w_i;
- MostAllocated: sum_i w_i * min(req, alloc) * 100 / alloc, over sum_i w_i;
- RequestedToCapacityRatio: a broken-linear shape maps utilization 0..100 to a score 0..10,
  scaled by 10; resources scoring 0 are left out, the weighted mean is rounded.

BalancedAllocation scores (1 - std(fractions)) * 100 over the fractions requested/allocatable
(capped at 1) of its resources, with the plain requests; best-effort pods skip it.

All integer arithmetic follows Go (int64, division truncating toward zero).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2
from services.api.names import qualified_name
from services.scheduler.framework.interface import MAX_NODE_SCORE, PreFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import (
    CPU,
    EPHEMERAL,
    MEMORY,
    PODS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
    Resource,
    is_scalar_resource,
    pod_requests,
)
from services.scheduler.plugins.helpers import NODE, POD, go_div, go_round_div

NAME = "NodeResourcesFit"
BALANCED_ALLOCATION_NAME = "NodeResourcesBalancedAllocation"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
BALANCED_PRE_SCORE_STATE_KEY = "PreScore" + BALANCED_ALLOCATION_NAME

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

#: Shape scores are 0..MAX_CUSTOM_PRIORITY_SCORE, scaled to 0..MAX_NODE_SCORE.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
MAX_RESOURCE_WEIGHT = 100

#: Columns of the snapshot's per-node arrays (`alloc`, `requested`).
COL_CPU, COL_MEMORY, COL_EPHEMERAL, COL_PODS = 0, 1, 2, 3
_COLUMN = {CPU: COL_CPU, MEMORY: COL_MEMORY, EPHEMERAL: COL_EPHEMERAL}


# ============================================================================ arguments


@dataclass
class ResourceSpec:
    """A resource scored by a strategy, with its weight."""

    name: str
    weight: int = 1


@dataclass
class UtilizationShapePoint:
    """One point of RequestedToCapacityRatio's shape: utilization 0..100 -> score 0..10."""

    utilization: int
    score: int


def _default_resources() -> list[ResourceSpec]:
    return [ResourceSpec(CPU, 1), ResourceSpec(MEMORY, 1)]


@dataclass
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    #: Defaults to cpu:1, memory:1 (weights 1..100; from_dict turns a 0 weight into 1).
    resources: list[ResourceSpec] = field(default_factory=_default_resources)
    #: requestedToCapacityRatio.shape, for type RequestedToCapacityRatio.
    shape: list[UtilizationShapePoint] = field(default_factory=list)


@dataclass
class Args:
    """NodeResourcesFitArgs."""

    #: Extended resources Filter ignores (by full name).
    ignored_resources: list[str] = field(default_factory=list)
    #: Extended resource groups Filter ignores (the prefix before "/").
    ignored_resource_groups: list[str] = field(default_factory=list)
    scoring_strategy: ScoringStrategy = field(default_factory=ScoringStrategy)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        """From KubeSchedulerConfiguration pluginConfig args (camelCase), with v1 defaults."""
        d = d or {}
        ss = d.get("scoringStrategy") or {}
        resources = _resources_from(ss.get("resources"))
        shape = [
            UtilizationShapePoint(int(p.get("utilization", 0)), int(p.get("score", 0)))
            for p in (ss.get("requestedToCapacityRatio") or {}).get("shape") or []
        ]
        return cls(
            ignored_resources=list(d.get("ignoredResources") or []),
            ignored_resource_groups=list(d.get("ignoredResourceGroups") or []),
            scoring_strategy=ScoringStrategy(
                type=ss.get("type") or LEAST_ALLOCATED, resources=resources, shape=shape
            ),
        )


@dataclass
class BalancedAllocationArgs:
    """NodeResourcesBalancedAllocationArgs."""

    resources: list[ResourceSpec] = field(default_factory=_default_resources)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> BalancedAllocationArgs:
        return cls(resources=_resources_from((d or {}).get("resources")))


def _resources_from(raw: Any) -> list[ResourceSpec]:
    """v1 defaulting: no resources means cpu:1, memory:1; a missing or 0 weight means 1."""
    specs = [ResourceSpec(str(r["name"]), int(r.get("weight") or 1)) for r in raw or []]
    return specs or _default_resources()


def _defaulted(resources: Sequence[ResourceSpec]) -> list[ResourceSpec]:
    return list(resources) or _default_resources()


def validate_fit_args(args: Args) -> None:
    """ValidateNodeResourcesFitArgs (the checks that matter here); raises ValueError."""
    errs: list[str] = []
    for i, group in enumerate(args.ignored_resource_groups):
        if "/" in group:
            errs.append(f"ignoredResourceGroups[{i}]: Invalid value: {group!r}: '/' is not allowed")
    ss = args.scoring_strategy
    if ss.type not in STRATEGIES:
        errs.append(
            f"scoringStrategy.type: Unsupported value: {ss.type!r}: supported values: "
            + ", ".join(f'"{s}"' for s in STRATEGIES)
        )
    for i, r in enumerate(ss.resources):
        if not 1 <= r.weight <= MAX_RESOURCE_WEIGHT:
            errs.append(
                f"scoringStrategy.resources[{i}].weight: Invalid value: {r.weight}: "
                f"resource weight of {r.name} not in valid range [1, {MAX_RESOURCE_WEIGHT}]"
            )
    if ss.type == REQUESTED_TO_CAPACITY_RATIO:
        if not ss.shape:
            errs.append("scoringStrategy.requestedToCapacityRatio.shape: Required value")
        for i, p in enumerate(ss.shape):
            if not 0 <= p.utilization <= MAX_UTILIZATION:
                errs.append(
                    f"shape[{i}].utilization: Invalid value: {p.utilization}: not in [0-100]"
                )
            if i > 0 and p.utilization <= ss.shape[i - 1].utilization:
                errs.append(
                    f"shape[{i}].utilization: Invalid value: {p.utilization}: "
                    "values must be sorted in increasing order"
                )
            if not 0 <= p.score <= MAX_CUSTOM_PRIORITY_SCORE:
                errs.append(f"shape[{i}].score: Invalid value: {p.score}: not in [0-10]")
    if errs:
        raise ValueError("; ".join(errs))


# ============================================================================ filtering


def is_extended_resource_name(name: str) -> bool:
    """v1helper.IsExtendedResourceName: domain-prefixed, not in kubernetes.io, not requests.*"""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    return not qualified_name("requests." + name)


@dataclass(frozen=True)
class InsufficientResource:
    """A resource the node lacks for the pod (upstream InsufficientResource)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    #: The request exceeds the node's whole allocatable: preemption cannot help.
    unresolvable: bool = False


def _requests_nothing(req: Resource) -> bool:
    return req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar


def _checked_scalars(
    req: Resource, ignored: frozenset[str], ignored_groups: frozenset[str]
) -> list[tuple[str, int]]:
    """The scalar requests Filter checks, in a stable (sorted) order."""
    out = []
    for name in sorted(req.scalar):
        q = req.scalar[name]
        if q == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or name.split("/", 1)[0] in ignored_groups
        ):
            continue
        out.append((name, q))
    return out


def fits_request(
    req: Resource,
    node_info: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """What `node_info` lacks for a pod requesting `req` (upstream fitsRequest)."""
    out: list[InsufficientResource] = []
    alloc, used = node_info.allocatable, node_info.requested
    if len(node_info.pods) + 1 > alloc.allowed_pod_number:
        out.append(
            InsufficientResource(
                PODS, "Too many pods", 1, len(node_info.pods), alloc.allowed_pod_number
            )
        )
    if _requests_nothing(req):
        return out
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                CPU,
                "Insufficient cpu",
                req.milli_cpu,
                used.milli_cpu,
                alloc.milli_cpu,
                req.milli_cpu > alloc.milli_cpu,
            )
        )
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        out.append(
            InsufficientResource(
                MEMORY,
                "Insufficient memory",
                req.memory,
                used.memory,
                alloc.memory,
                req.memory > alloc.memory,
            )
        )
    if (
        req.ephemeral_storage > 0
        and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
    ):
        out.append(
            InsufficientResource(
                EPHEMERAL,
                "Insufficient ephemeral-storage",
                req.ephemeral_storage,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                req.ephemeral_storage > alloc.ephemeral_storage,
            )
        )
    for name, q in _checked_scalars(req, ignored, ignored_groups):
        a, u = alloc.scalar.get(name, 0), used.scalar.get(name, 0)
        if q > a - u:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    return out


def fits(pod_info: PodInfo, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream Fits: the node's shortfalls for this pod (no ignored resources)."""
    return fits_request(pod_info.requests, node_info)


def _status_for(insufficient: Sequence[InsufficientResource]) -> Status:
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(r.unresolvable for r in insufficient)
        else Code.UNSCHEDULABLE
    )
    return Status(code, tuple(r.reason for r in insufficient), NAME)


# ============================================================================ scoring


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


def broken_linear(shape: Sequence[tuple[int, int]], p: int) -> int:
    """helper.BuildBrokenLinearFunction over (utilization, score) points."""
    for i, (u, s) in enumerate(shape):
        if p <= u:
            if i == 0:
                return s
            pu, ps = shape[i - 1]
            return ps + go_div((s - ps) * (p - pu), u - pu)
    return shape[-1][1]


class _Scorer:
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


def _go_div_v(a: np.ndarray, b: np.ndarray | np.int64) -> np.ndarray:
    """Go's truncating int64 division, elementwise."""
    q = np.abs(a) // np.abs(b)
    return np.where((a >= 0) == (b >= 0), q, -q)


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


class _ResourceAllocationScorer:
    """What Fit's scoring and BalancedAllocation share: per-node (allocatable, requested)
    vectors for the configured resources, gathered from NodeInfo or from snapshot arrays."""

    resources: list[ResourceSpec]
    use_requested: bool
    handle: Any
    _row_index: _RowIndex

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
        arrays = _snapshot_arrays(self.handle, nodes, self._row_index)
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
                    req[:, j] = base + q
                    continue
            for i, ni in enumerate(nodes):
                a, rq = allocatable_and_requested(ni, r.name, q, self.use_requested)
                alloc[i, j] = a
                req[i, j] = rq
        return req, alloc


class _RowIndex:
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


def _snapshot_arrays(handle: Any, nodes: Sequence[NodeInfo], row_index: _RowIndex) -> Any:
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


# ============================================================================ Fit


class Fit(_ResourceAllocationScorer):
    """NodeResourcesFit: PreFilterPlugin, FilterPlugin, BatchFilterPlugin, PreScorePlugin,
    ScorePlugin, EnqueueExtensions; `score_batch` scores many nodes at once."""

    name = NAME

    def __init__(self, args: Args, handle: Any) -> None:
        validate_fit_args(args)
        ss = args.scoring_strategy
        self.handle = handle
        self._row_index = _RowIndex()
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        self.resources = _defaulted(ss.resources)
        self.strategy = ss.type
        self.use_requested = False
        self._scorer = _Scorer(ss.type, self.resources, ss.shape)

    # ------------------------------------------------------------------- filtering
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        state.write(PRE_FILTER_STATE_KEY, pod_info.requests)
        return None, Status.success()

    def _request(self, state: CycleState) -> Resource | None:
        req: Resource | None = state.get(PRE_FILTER_STATE_KEY)
        return req

    @staticmethod
    def _missing_state() -> Status:
        return Status.as_error(
            KeyError(f"error reading {PRE_FILTER_STATE_KEY!r} from cycleState"), plugin=NAME
        )

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        req = self._request(state)
        if req is None:
            return self._missing_state()
        insufficient = fits_request(req, node_info, self.ignored, self.ignored_groups)
        if not insufficient:
            return Status.success()
        return _status_for(insufficient)

    def filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]:
        """`filter` for every node, vectorised over the snapshot's arrays.

        The arrays describe the snapshot's NodeInfos; a caller filtering modified copies
        (e.g. with nominated pods added) must use `filter`. Without arrays this is a loop."""
        req = self._request(state)
        if req is None:
            return [self._missing_state()] * len(nodes)
        arrays = _snapshot_arrays(self.handle, nodes, self._row_index)
        if arrays is None:
            return [self.filter(state, pod_info, ni) for ni in nodes]
        a_all, r_all, idx, _ = arrays
        alloc = a_all[idx]
        used = r_all[idx]
        n = len(nodes)
        checks: list[tuple[np.ndarray, np.ndarray | None, str]] = [
            (used[:, COL_PODS] + 1 > alloc[:, COL_PODS], None, "Too many pods")
        ]
        scalars: list[tuple[str, int]] = []
        if not _requests_nothing(req):
            for col, q, reason in (
                (COL_CPU, req.milli_cpu, "Insufficient cpu"),
                (COL_MEMORY, req.memory, "Insufficient memory"),
                (COL_EPHEMERAL, req.ephemeral_storage, "Insufficient ephemeral-storage"),
            ):
                if q > 0:
                    a = alloc[:, col]
                    checks.append((q > a - used[:, col], q > a, reason))
            scalars = _checked_scalars(req, self.ignored, self.ignored_groups)
        bad = np.zeros(n, dtype=bool)
        for short, _, _ in checks:
            bad |= short
        if scalars:
            # Extended resources are not in the arrays: check them per node.
            scalar_short = [
                [
                    (name, q > ni.allocatable.scalar.get(name, 0))
                    for name, q in scalars
                    if q > ni.allocatable.scalar.get(name, 0) - ni.requested.scalar.get(name, 0)
                ]
                for ni in nodes
            ]
            bad |= np.fromiter((bool(s) for s in scalar_short), dtype=bool, count=n)
        success = Status.success()
        out: list[Status] = [success] * n
        cache: dict[tuple[Code, tuple[str, ...]], Status] = {}
        for i in np.flatnonzero(bad).tolist():
            reasons: list[str] = []
            unresolvable = False
            for short, unres, reason in checks:
                if short[i]:
                    reasons.append(reason)
                    unresolvable = unresolvable or bool(unres is not None and unres[i])
            if scalars:
                for name, unres_s in scalar_short[i]:
                    reasons.append(f"Insufficient {name}")
                    unresolvable = unresolvable or unres_s
            code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
            key = (code, tuple(reasons))
            status = cache.get(key)
            if status is None:
                status = cache[key] = Status(code, key[1], NAME)
            out[i] = status
        return out

    # ------------------------------------------------------------------- scoring
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        state.write(PRE_SCORE_STATE_KEY, pod_score_requests(pod_info, self.resources, False))
        return Status.success()

    def _pod_reqs(self, state: CycleState, pod_info: PodInfo) -> list[int]:
        reqs: list[int] | None = state.get(PRE_SCORE_STATE_KEY)
        return reqs if reqs is not None else pod_score_requests(pod_info, self.resources, False)

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        if node_info.node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        requested, allocatable = self._vectors(node_info, self._pod_reqs(state, pod_info))
        return self._scorer.score(requested, allocatable), Status.success()

    def score_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """`score` for every node at once (numpy); equal to `score` node by node. Uses the
        snapshot's arrays, and its `non_zero` (N, 2) [milli_cpu, memory] if it has
        one, else gathers from the NodeInfos."""
        if not nodes:
            return [], Status.success()
        requested, allocatable = self._matrices(nodes, self._pod_reqs(state, pod_info))
        return self._scorer.score_v(requested, allocatable).tolist(), Status.success()

    # ------------------------------------------------------------------- queueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                is_schedulable_after_pod_event,
            ),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE),
                is_schedulable_after_node_change,
            ),
        ]


def is_schedulable_after_pod_event(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
) -> QueueingHint:
    """A deleted pod that held (or was nominated to) a node frees resources; a scaled-down
    one helps when it shrank something the waiting pod requests."""
    if new is None:
        if old is None:
            return QueueingHint.QUEUE
        if not old.spec.node_name and not old.status.nominated_node_name:
            return QueueingHint.SKIP
        return QueueingHint.QUEUE
    if new.metadata.uid == pod.metadata.uid:
        return QueueingHint.QUEUE
    if not new.spec.node_name or old is None:
        return QueueingHint.SKIP
    before, after, want = pod_requests(old), pod_requests(new), pod_requests(pod)
    for name, have, now in (
        (CPU, before.milli_cpu, after.milli_cpu),
        (MEMORY, before.memory, after.memory),
        (EPHEMERAL, before.ephemeral_storage, after.ephemeral_storage),
    ):
        if want.get(name) and have > now:
            return QueueingHint.QUEUE
    for name, q in want.scalar.items():
        if q and before.scalar.get(name, 0) > after.scalar.get(name, 0):
            return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_fit(pod: core_pb2.Pod, node: core_pb2.Node | None) -> bool:
    """Would the pod fit the node if it were empty?"""
    return node is not None and not fits_request(pod_requests(pod), NodeInfo(node))


def have_any_requested_resources_increased(
    pod: core_pb2.Pod, old: core_pb2.Node, new: core_pb2.Node
) -> bool:
    want = pod_requests(pod)
    before, after = (
        Resource.from_list(old.status.allocatable),
        Resource.from_list(new.status.allocatable),
    )
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    if _requests_nothing(want):
        return False
    if (
        (want.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (want.memory > 0 and after.memory > before.memory)
        or (want.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    return any(
        q and after.scalar.get(name, 0) > before.scalar.get(name, 0)
        for name, q in want.scalar.items()
    )


def is_schedulable_after_node_change(
    pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
) -> QueueingHint:
    """Queue for a new node the pod fits when empty, or an update that grew a resource the
    pod requests (or the pod count) on a node it would fit."""
    if not is_fit(pod, new):
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    assert new is not None
    if not have_any_requested_resources_increased(pod, old, new):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> Fit:
    return Fit(args or Args(), handle)


# ============================================================================ BalancedAllocation


class BalancedAllocation(_ResourceAllocationScorer):
    """NodeResourcesBalancedAllocation: PreScorePlugin, ScorePlugin (+ `score_batch`)."""

    name = BALANCED_ALLOCATION_NAME
    #: The NAME / Args / new contract for this module's second plugin (the registry looks
    #: for an object carrying them when the module's NAME is the other plugin's).
    NAME = BALANCED_ALLOCATION_NAME
    Args = BalancedAllocationArgs

    @staticmethod
    def new(args: BalancedAllocationArgs | None, handle: Any) -> BalancedAllocation:
        return BalancedAllocation(args or BalancedAllocationArgs(), handle)

    def __init__(self, args: BalancedAllocationArgs, handle: Any) -> None:
        self.handle = handle
        self._row_index = _RowIndex()
        self.resources = _defaulted(args.resources)
        self.use_requested = True

    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        reqs = pod_score_requests(pod_info, self.resources, True)
        if not any(reqs):
            # Best-effort pods would all pile onto one node (kubernetes#129138): skip.
            return Status.skip(BALANCED_ALLOCATION_NAME)
        state.write(BALANCED_PRE_SCORE_STATE_KEY, reqs)
        return Status.success()

    def _pod_reqs(self, state: CycleState, pod_info: PodInfo) -> list[int] | None:
        """The pod's requests, or None for a best-effort pod scored without PreScore."""
        reqs: list[int] | None = state.get(BALANCED_PRE_SCORE_STATE_KEY)
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

    def score_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        reqs = self._pod_reqs(state, pod_info)
        if reqs is None or not nodes:
            return [0] * len(nodes), Status.success()
        requested, allocatable = self._matrices(nodes, reqs)
        return balanced_resource_score_v(requested, allocatable).tolist(), Status.success()


new_balanced_allocation = BalancedAllocation.new
