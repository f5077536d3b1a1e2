"""PodTopologySpread: keep matching pods evenly spread over topology domains.

Upstream plugins/podtopologyspread, split as there: common.py (args, constraints, which nodes
count, default constraints), filtering.py (PreFilter / Filter: the skew rule), scoring.py
(PreScore / Score / NormalizeScore); this module is the plugin that runs them at its extension
points, and its requeueing hints.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.labels import SelectorError
from services.scheduler.cache.columns import columns_of
from services.scheduler.framework.interface import Handle, NodeScore, PreFilterResult
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
from services.scheduler.plugins.helpers import NODE, POD, Int64Array
from services.scheduler.plugins.podtopologyspread import rows as row_forms
from services.scheduler.plugins.podtopologyspread.common import (
    DO_NOT_SCHEDULE,
    HONOR,
    NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    SCHEDULE_ANYWAY,
    SYSTEM_DEFAULTING,
    Args,
    Constraint,
    WorkloadListers,
    build_constraint,
    default_selector,
    keys_present,
    missing_state,
    system_default_constraints,
)
from services.scheduler.plugins.podtopologyspread.filtering import (
    PreFilterState,
    filter_node,
    pre_filter_state,
)
from services.scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    fill_pre_score_state,
    normalize,
    score_node,
)


class PodTopologySpread:
    """PreFilterPlugin (+ add_pod/remove_pod extensions), FilterPlugin, PreScorePlugin,
    ScorePlugin, NormalizeScorePlugin, EnqueueExtensions; FilterRowsPlugin and
    ScoreRowsPlugin (rows.py). PreFilter / PreScore return Skip where upstream's do: no
    DoNotSchedule / ScheduleAnyway constraints (own or default), or no nodes to score."""

    name = NAME

    def __init__(
        self, args: Args, handle: Handle | None, listers: WorkloadListers | None = None
    ) -> None:
        self.args = args
        self.handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints = (
            system_default_constraints() if self.system_defaulted else args.constraints()
        )
        #: What DefaultSelector reads (None: the owner-labels approximation).
        self.listers = listers

    def get_constraints(self, pod: core_pb2.Pod, action: str) -> list[Constraint]:
        """The pod's constraints with whenUnsatisfiable == action, else its defaults."""
        labels = pod.metadata.labels
        if pod.spec.topology_spread_constraints:
            return [
                build_constraint(c, labels, None)
                for c in pod.spec.topology_spread_constraints
                if (c.when_unsatisfiable or DO_NOT_SCHEDULE) == action
            ]
        wanted = [c for c in self.default_constraints if c.when_unsatisfiable == action]
        if not wanted:
            return []
        selector = default_selector(pod, self.listers)
        if selector.is_empty():
            return []
        return [build_constraint(c, labels, selector) for c in wanted]

    # ---------------------------------------------------------------- PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError as e:
            return None, Status.as_error(e, plugin=NAME)
        if not constraints:
            state.write(PRE_FILTER_STATE_KEY, PreFilterState([], None))
            return None, Status.skip(plugin=NAME)
        snapshot = self.handle.snapshot() if self.handle is not None else None
        cols = columns_of(snapshot) if _lists_every_node(snapshot, nodes) else None
        if cols is not None:
            s = row_forms.pre_filter_state_rows(constraints, pod, cols, snapshot)
        else:
            s = pre_filter_state(constraints, pod, nodes)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, Status.success()

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """PreFilterExtensions.AddPod (preemption's what-if)."""
        return self._update(state, pod_to_schedule, pod_to_add, node_info, 1)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodInfo,
        pod_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        """PreFilterExtensions.RemovePod."""
        return self._update(state, pod_to_schedule, pod_to_remove, node_info, -1)

    def _update(
        self, state: CycleState, incoming: PodInfo, other: PodInfo, node_info: NodeInfo, d: int
    ) -> Status:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return missing_state(PRE_FILTER_STATE_KEY)
        if node_info.node is not None:
            s.update_with_pod(other.pod, incoming.pod, node_info.node, d)
        return Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.as_error(LookupError("node not found"), plugin=NAME)
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return missing_state(PRE_FILTER_STATE_KEY)
        return filter_node(s, pod_info, node)

    # ------------------------------------------------------------------- PreScore / Score
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        s = PreScoreState()
        state.write(PRE_SCORE_STATE_KEY, s)
        all_nodes = self.handle.snapshot().list() if self.handle is not None else nodes
        if not all_nodes:
            return Status.skip(plugin=NAME)
        pod = pod_info.pod
        try:
            s.constraints = self.get_constraints(pod, SCHEDULE_ANYWAY)
        except SelectorError as e:
            return Status.as_error(e, plugin=NAME)
        if not s.constraints:
            return Status.skip(plugin=NAME)

        # With the system defaults, nodes need not carry every key (a zoneless node still
        # gets hostname spreading).
        require_all = bool(pod.spec.topology_spread_constraints) or not self.system_defaulted
        snapshot = self.handle.snapshot() if self.handle is not None else None
        candidates = _rows_of(snapshot, nodes)
        cols = columns_of(snapshot) if candidates is not None else None
        if cols is not None and candidates is not None:
            row_forms.fill_pre_score_state_rows(s, pod, candidates, cols, snapshot, require_all)
        else:
            fill_pre_score_state(s, pod, nodes, all_nodes, require_all)
        return Status.success()

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, missing_state(PRE_SCORE_STATE_KEY)
        if node.metadata.name in s.ignored:
            return 0, Status.success()
        return score_node(s, pod_info.pod.metadata.namespace, node, node_info), Status.success()

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return missing_state(PRE_SCORE_STATE_KEY)
        normalize(s, scores)
        return Status.success()

    # ------------------------------------------------------------------------- row forms
    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        cols = columns_of(snapshot)
        if s is None or cols is None:
            return None  # `filter` gives the error
        return row_forms.filter_rows(s, pod_info.pod, cols, rows)

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> Int64Array | None:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        cols = columns_of(snapshot)
        if s is None or cols is None or not cols.all_have_nodes:
            return None  # `score` gives the error
        ignored = row_forms.ignored_rows(s, cols, rows)
        s.row_ignored = ignored
        return row_forms.score_rows(s, pod_info.pod.metadata.namespace, cols, rows, ignored)

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: Int64Array
    ) -> Int64Array:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None or s.row_ignored is None or len(s.row_ignored) != len(scores):
            raise RuntimeError(f"{NAME}: normalize_rows without the score_rows it normalizes")
        return row_forms.normalize_rows(scores, s.row_ignored)

    # ---------------------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add / UpdatePodLabel / Delete of bound pods change counts; UpdatePodTolerations
            # of the rejected pod itself matters under nodeTaintsPolicy Honor.
            ClusterEventWithHint(
                ClusterEvent(
                    POD,
                    ActionType.ADD
                    | ActionType.UPDATE_POD_LABEL
                    | ActionType.UPDATE_POD_TOLERATIONS
                    | ActionType.DELETE,
                ),
                self.is_schedulable_after_pod_change,
            ),
            # A node add/delete/relabel/retaint may change the domains.
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    ActionType.ADD
                    | ActionType.DELETE
                    | ActionType.UPDATE_NODE_LABEL
                    | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
    ) -> QueueingHint:
        """Upstream isSchedulableAfterPodChange: only the pod itself or bound pods in its
        namespace matter; Queue when one that matches a hard constraint's selector appears
        or goes, when a label change flips a selector match, or when the pod itself gets new
        tolerations while a constraint honours taints."""
        for other in (old, new):
            if other is not None and not _involved(other, pod):
                return QueueingHint.SKIP
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        if old is not None and new is not None:
            if (
                new.metadata.uid == pod.metadata.uid
                and list(new.spec.tolerations) != list(old.spec.tolerations)
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(new.metadata.labels) == dict(old.metadata.labels):
                return QueueingHint.SKIP
            for c in constraints:
                if c.selector.matches(old.metadata.labels) != c.selector.matches(
                    new.metadata.labels
                ):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new if new is not None else old
        if changed is not None and any(
            c.selector.matches(changed.metadata.labels) for c in constraints
        ):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
    ) -> QueueingHint:
        """Upstream isSchedulableAfterNodeChange: Queue when a node with every topology key
        appears or disappears, gains or loses the keys, changes a key's value or its taints."""
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except SelectorError:
            return QueueingHint.QUEUE
        old_ok = old is not None and keys_present(old.metadata.labels, constraints)
        new_ok = new is not None and keys_present(new.metadata.labels, constraints)
        if old is not None and new is not None:
            if old_ok != new_ok:
                return QueueingHint.QUEUE
            if new_ok and (
                any(
                    old.metadata.labels.get(c.topology_key)
                    != new.metadata.labels.get(c.topology_key)
                    for c in constraints
                )
                or list(old.spec.taints) != list(new.spec.taints)
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        return QueueingHint.QUEUE if (new_ok or old_ok) else QueueingHint.SKIP


def _lists_every_node(snapshot: Any, nodes: Sequence[NodeInfo]) -> bool:
    """Whether `nodes` are the snapshot's rows, in order (then PreFilter may count over the
    snapshot's columns instead)."""
    if snapshot is None or not hasattr(snapshot, "row_gen"):
        return False
    every = snapshot.list()
    if nodes is every:
        return True
    return len(nodes) == len(every) and all(a is b for a, b in zip(nodes, every, strict=True))


def _rows_of(snapshot: Any, nodes: Sequence[NodeInfo]) -> npt.NDArray[np.int64] | None:
    """The snapshot rows of `nodes` (each the snapshot's own NodeInfo), or None."""
    if snapshot is None or not hasattr(snapshot, "row_gen"):
        return None
    every = snapshot.list()
    rows = np.empty(len(nodes), dtype=np.int64)
    try:
        for j, ni in enumerate(nodes):
            r = rows[j] = snapshot.index_of(ni.name)
            if every[r] is not ni:
                return None
    except KeyError:
        return None
    return rows


def _involved(other: core_pb2.Pod, pod: core_pb2.Pod) -> bool:
    """involvedInTopologySpreading: the pod itself, or a bound pod in its namespace."""
    return other.metadata.uid == pod.metadata.uid or (
        bool(other.spec.node_name) and other.metadata.namespace == pod.metadata.namespace
    )


def new(args: Args | None, handle: Any) -> PodTopologySpread:
    """The factory: with default constraints and a handle with informers, the scheduler's
    Service, ReplicaSet and StatefulSet informers are DefaultSelector's listers."""
    args = args if args is not None else Args()
    plugin = PodTopologySpread(args, handle)
    informer = getattr(handle, "informer", None)
    if plugin.default_constraints and informer is not None:
        plugin.listers = WorkloadListers(
            services=informer("Service").store,
            replica_sets=informer("ReplicaSet").store,
            stateful_sets=informer("StatefulSet").store if "StatefulSet" in BY_KIND else None,
        )
    return plugin
