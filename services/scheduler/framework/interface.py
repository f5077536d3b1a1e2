"""Plugin protocols, one per extension point, and what plugins get from the framework.

A plugin is a module under services/scheduler/plugins/ exposing `NAME`, an `Args`
dataclass and `new(args, handle) -> plugin`; it implements any of the protocols below
(upstream framework/interface.go). The framework calls them in the profile's order:

    PreEnqueue → (queue: QueueSort) → PreFilter → Filter → [PostFilter] → PreScore → Score
    → NormalizeScore → Reserve → Permit ══ binding cycle ══ PreBind → Bind → PostBind
                                  (any failure after Reserve: Unreserve in reverse order)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from protos.kubera.v1 import core_pb2
from services.clock import Clock
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
)

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0


@dataclass
class NodeScore:
    name: str
    score: int


@dataclass(frozen=True)
class PreFilterResult:
    """Which nodes are worth filtering at all (None: all of them)."""

    node_names: frozenset[str] | None = None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass
class PostFilterResult:
    nominated_node_name: str = ""


class Snapshot(Protocol):
    """The cluster as of the start of a scheduling cycle (services/scheduler/cache/snapshot.py)."""

    def list(self) -> Sequence[NodeInfo]:
        """Every node, in zone round-robin order."""
        ...

    def get(self, name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity(self) -> Sequence[NodeInfo]: ...

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None: ...


class Handle(Protocol):
    """What a plugin may use from the framework (upstream framework.Handle)."""

    clock: Clock

    def snapshot(self) -> Snapshot: ...

    def informer(self, kind: str) -> Any:
        """The scheduler's Informer of another kind ("ResourceClaim", "PodGroup"), made on
        first call (from a plugin's factory); its events reach the queue as
        ClusterEvent(kind, ADD | UPDATE | DELETE)."""
        ...

    async def bind(self, pod: core_pb2.Pod, node_name: str) -> None:
        """The apiserver's Bind with this scheduler's fencing token (DefaultBinder's call)."""
        ...

    def allow_waiting_pod(self, uid: str, plugin: str) -> None: ...

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None: ...


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: core_pb2.Pod) -> Status: ...


@runtime_checkable
class QueueSortPlugin(Protocol):
    name: str

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool: ...


@runtime_checkable
class EnqueueExtensions(Protocol):
    name: str

    def events_to_register(self) -> list[ClusterEventWithHint]:
        """The cluster events that may make a pod this plugin rejected schedulable."""
        ...


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status: ...


@runtime_checkable
class BatchFilterPlugin(Protocol):
    """Optional fast path: filter many nodes at once (e.g. vectorised resource fit).
    Must agree with `filter` node by node; returns one Status per node, in order."""

    name: str

    def filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]: ...


class FilterRowsPlugin(Protocol):
    """Optional fast path: Filter over snapshot rows (int64 indexes into `snapshot.list()`,
    the rows of `snapshot.alloc` and the other per-node arrays). `filter` stays the
    reference semantics: the framework asks it for the Status of each rejected row."""

    name: str

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        """bool array aligned with `rows`: True where the node passes this plugin. None: not
        vectorised for this pod; the framework calls `filter` per node."""
        ...


class ScoreRowsPlugin(Protocol):
    """Optional fast path: Score over snapshot rows (see FilterRowsPlugin)."""

    name: str

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        """int64 raw scores aligned with `rows` (before NormalizeScore); None: the framework
        calls `score` per node."""
        ...

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: np.ndarray
    ) -> np.ndarray:
        """Optional, with NormalizeScore only: normalize_score's vector form (the normalized
        int64 array); without it the framework goes through NodeScore lists."""
        ...


@runtime_checkable
class PostFilterPlugin(Protocol):
    name: str

    async def post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]: ...


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    """ScoreExtensions: rescale a plugin's raw scores to [0, MAX_NODE_SCORE] in place."""

    name: str

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None: ...


@runtime_checkable
class PermitPlugin(Protocol):
    name: str

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        """(Success | Wait | rejection, timeout in seconds for Wait)."""
        ...


@runtime_checkable
class PreBindPlugin(Protocol):
    name: str

    async def pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status: ...


@runtime_checkable
class PreBindPreFlightPlugin(Protocol):
    """A PreBind plugin that tells, before the binding cycle waits, whether its PreBind has
    work for this pod (upstream's PreBindPreFlight): Success (it has), Skip (it has none:
    its PreBind is then not run) or an Error. A PreBind plugin without it is taken to have
    work (Success)."""

    name: str

    def pre_bind_pre_flight(
        self, state: CycleState, pod_info: PodInfo, node_name: str
    ) -> Status: ...


@runtime_checkable
class BindPlugin(Protocol):
    name: str

    async def bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Success, Skip (let the next Bind plugin do it) or an error."""
        ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None: ...


@dataclass
class PluginSpec:
    """How the registry knows a plugin: its factory and its args type (with defaults)."""

    name: str
    factory: Any  # Callable[[Args, Handle], plugin]
    args_type: type | None = None
    #: Extension points it is enabled at by default (the default profile).
    default_points: tuple[str, ...] = field(default_factory=tuple)
    default_weight: int = 0
