"""NodeResourcesFit: does the pod fit the node, and how full does it leave it.

Upstream plugins/noderesources/fit.go. Filter rejects a node that lacks a requested resource
(the arithmetic is in fits_request.py): UnschedulableAndUnresolvable when some request exceeds
the node's whole allocatable, else Unschedulable. `filter_rows` does the same for snapshot
rows at once with numpy over the snapshot's per-node arrays (`score_rows` likewise).

Score uses a strategy (strategies.py) over weighted resources (default cpu:1, memory:1), with
the non-zero requests for cpu and memory (100m / 200Mi for containers that set none).

A requested extended resource that a DeviceClass maps (DRAExtendedResource) is left to
DynamicResources on a node that does not advertise it (allocatable 0), as upstream's
shouldDelegateResourceToDRA.

The queueing hints requeue a pod when a pod leaves or shrinks, or a node appears or grows.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2
from services.api.dra import extended
from services.api.features import DRA_EXTENDED_RESOURCE, enabled
from services.api.helpers.resources import CPU, EPHEMERAL, MEMORY, Resource, pod_requests
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.helpers import NODE, POD
from services.scheduler.plugins.noderesources.fits_request import (
    InsufficientResource,
    checked_scalars,
    delegated_to_dra,
    fits_request,
    requests_nothing,
)
from services.scheduler.plugins.noderesources.resource_allocation import (
    COL_CPU,
    COL_EPHEMERAL,
    COL_MEMORY,
    COL_PODS,
    ResourceAllocationScorer,
    ResourceSpec,
    default_resources,
    defaulted,
    has_arrays,
    pod_score_requests,
    resources_from,
    rows_of,
    score_batch,
)
from services.scheduler.plugins.noderesources.strategies import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    REQUESTED_TO_CAPACITY_RATIO,
    STRATEGIES,
    Scorer,
    UtilizationShapePoint,
)

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
#: The pod's requested resources a DeviceClass maps (DRAExtendedResource), when any.
DRA_STATE_KEY = PRE_FILTER_STATE_KEY + "/dra"
PRE_SCORE_STATE_KEY = "PreScore" + NAME
MAX_RESOURCE_WEIGHT = 100


@dataclass
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    #: Defaults to cpu:1, memory:1 (weights 1..100; from_dict turns a 0 weight into 1).
    resources: list[ResourceSpec] = field(default_factory=default_resources)
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
        resources = resources_from(ss.get("resources"))
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


def _status_for(insufficient: Sequence[InsufficientResource]) -> Status:
    code = (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        if any(r.unresolvable for r in insufficient)
        else Code.UNSCHEDULABLE
    )
    return Status(code, tuple(r.reason for r in insufficient), NAME)


class Fit(ResourceAllocationScorer):
    """NodeResourcesFit: PreFilterPlugin, FilterPlugin (+ `filter_rows`, `filter_batch`),
    PreScorePlugin, ScorePlugin (+ `score_rows`, `score_batch`), EnqueueExtensions."""

    name = NAME

    def __init__(self, args: Args, handle: Any) -> None:
        validate_fit_args(args)
        ss = args.scoring_strategy
        self.handle = handle
        self.ignored = frozenset(args.ignored_resources)
        self.ignored_groups = frozenset(args.ignored_resource_groups)
        self.resources = defaulted(ss.resources)
        self.strategy = ss.type
        self.use_requested = False
        self._scorer = Scorer(ss.type, self.resources, ss.shape)
        #: The DeviceClasses (an informer's store, read anew each time), when the scheduler
        #: has informers and DRAExtendedResource is on; None: no request goes to DRA.
        self._classes: Callable[[], Mapping[str, Any]] | None = None
        informer = getattr(handle, "informer", None)
        if informer is not None and enabled(getattr(handle, "gates", None), DRA_EXTENDED_RESOURCE):
            classes = informer("DeviceClass")
            # An Informer's store is replaced on relist: read it anew each time.
            self._classes = lambda: getattr(classes, "store", classes)

    # ------------------------------------------------------------------- filtering
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        req = pod_info.requests
        state.write(PRE_FILTER_STATE_KEY, req)
        if req.scalar and self._classes is not None:
            mapped = extended.mapped_requests(
                req.scalar, extended.resolve(self._classes().values())
            )
            if mapped:
                state.write(DRA_STATE_KEY, frozenset(mapped))
        return None, Status.success()

    @staticmethod
    def _dra(state: CycleState) -> frozenset[str]:
        dra: frozenset[str] | None = state.get(DRA_STATE_KEY)
        return dra or frozenset()

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
        insufficient = fits_request(
            req, node_info, self.ignored, self.ignored_groups, self._dra(state)
        )
        if not insufficient:
            return Status.success()
        return _status_for(insufficient)

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        """`filter` for the snapshot's rows (True: the node fits), vectorised over the
        snapshot's arrays. The arrays describe the snapshot's NodeInfos; a caller filtering
        modified copies (e.g. with nominated pods added) must use `filter`. None without
        arrays or PreFilter state (then `filter` answers per node)."""
        req = self._request(state)
        if req is None or not has_arrays(snapshot):
            return None
        alloc = snapshot.alloc[rows]
        used = snapshot.requested[rows]
        bad = used[:, COL_PODS] + 1 > alloc[:, COL_PODS]
        if requests_nothing(req):
            return ~bad
        for col, q in (
            (COL_CPU, req.milli_cpu),
            (COL_MEMORY, req.memory),
            (COL_EPHEMERAL, req.ephemeral_storage),
        ):
            if q > 0:
                bad |= q > alloc[:, col] - used[:, col]
        scalars = checked_scalars(req, self.ignored, self.ignored_groups)
        if scalars:
            # Extended resources are not in the arrays: checked per node.
            infos = snapshot.list()
            dra = self._dra(state)
            for j, row in enumerate(rows.tolist()):
                a, r = infos[row].allocatable.scalar, infos[row].requested.scalar
                if any(
                    q > a.get(name, 0) - r.get(name, 0) and not delegated_to_dra(name, a, dra)
                    for name, q in scalars
                ):
                    bad[j] = True
        return ~bad

    def filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]:
        """`filter` for every node: `filter_rows` over the nodes' snapshot rows, `filter`
        for the reasons of the rejected ones (a loop without arrays)."""
        found = rows_of(self.handle, nodes)
        ok = None if found is None else self.filter_rows(state, pod_info, *found)
        if ok is None:
            return [self.filter(state, pod_info, ni) for ni in nodes]
        success = Status.success()
        out: list[Status] = [success] * len(nodes)
        for i in np.flatnonzero(~ok).tolist():
            out[i] = self.filter(state, pod_info, nodes[i])
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

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        """`score` for the snapshot's rows at once (numpy over the snapshot's arrays, and
        its `non_zero` (N, 2) [milli_cpu, memory] if it has one, else gathered from the
        NodeInfos); None without arrays."""
        if not has_arrays(snapshot):
            return None
        requested, allocatable = self._matrices(snapshot, rows, self._pod_reqs(state, pod_info))
        return self._scorer.score_v(requested, allocatable)

    def score_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        """`score` for every node: `score_rows` over the nodes' snapshot rows (a loop
        without arrays); equal to `score` node by node."""
        return score_batch(self, state, pod_info, nodes)

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
    if requests_nothing(want):
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
