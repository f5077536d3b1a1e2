"""InterPodAffinity: place a pod relative to the pods already running in a topology domain.

Upstream plugins/interpodaffinity (filtering.go, scoring.go, plugin.go).

Filter (required terms), from counts PreFilter builds once per cycle over every node:
- the incoming pod's affinity: each term's topology key must be on the node, and the node's
  domain must hold an existing pod matching *all* the pod's affinity terms; else
  UnschedulableAndUnresolvable "node(s) didn't match pod affinity rules". First pod of a
  series: when no pod anywhere matches all the terms and the pod matches its own terms, any
  node carrying every topology key passes (no deadlock for self-affine workloads);
- the incoming pod's anti-affinity: no pod matching a term in the node's domain for that term;
  else Unschedulable "node(s) didn't match pod anti-affinity rules";
- existing pods' required anti-affinity (symmetry): no existing pod whose term matches the
  incoming pod in a domain the node is in; else Unschedulable "node(s) didn't satisfy existing
  pods anti-affinity rules".

Score (preferred terms): for every existing pod on a node with labels, per topology domain,
+weight for the incoming pod's preferred affinity terms it matches, -weight for preferred
anti-affinity ones; symmetrically +hard_pod_affinity_weight for each of the existing pod's
required affinity terms the incoming pod matches, ±weight for its preferred (anti-)affinity
terms. A node scores the sum over the domains it is in; NormalizeScore maps [min, max] to
[0, 100].

A term whose label selector cannot be parsed (stored without validation) is the plugin's to
answer, as upstream's NewPodInfo error is: PreFilter UnschedulableAndUnresolvable "parsing
pod: ...", PreScore Error "failed to parse pod: ...". PreScore skips when there is nothing to
score: no nodes, or no term of the pod or of an existing pod contributing anywhere.

Namespaces: a term applies to `namespaces`, plus namespaces whose labels its
namespaceSelector matches (an empty selector: all); neither: the term owner's namespace. Upstream
unrolls the incoming pod's namespaceSelector into names via the Namespace lister; here it is
matched against the existing pod's namespace labels from the snapshot, which selects the same
pods (a namespace the snapshot does not know counts as unlabelled). matchLabelKeys /
mismatchLabelKeys are merged into the selector when the PodInfo is built (framework.types).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.columns import columns_of
from services.scheduler.framework.interface import (
    MAX_NODE_SCORE,
    Handle,
    NodeScore,
    PreFilterResult,
)
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
from services.scheduler.plugins.interpodaffinity.index import (
    AffinityIndex,
    RowValues,
    fill_pre_filter,
    fill_pre_score,
    index_of,
)
from services.scheduler.plugins.interpodaffinity.state import (
    NamespaceLabels,
    PreFilterState,
    PreScoreState,
    add_count,
    filter_rows_mask,
    matches,
    matches_all,
    namespace_labels_of,
    satisfies_existing_pods_anti_affinity,
    satisfies_pod_affinity,
    satisfies_pod_anti_affinity,
)

NAME = "InterPodAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = (
    "node(s) didn't satisfy existing pods anti-affinity rules"
)
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

# Filter's answers, made once (Status is frozen): the framework asks Filter for the reason of
# every row filter_rows rejected, hundreds a cycle when most nodes hold a conflicting pod.
_AFFINITY_REJECTED = Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
_ANTI_AFFINITY_REJECTED = Status.unschedulable(
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME
)
_EXISTING_ANTI_AFFINITY_REJECTED = Status.unschedulable(
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME
)
_SUCCESS = Status.success()


@dataclass
class Args:
    """InterPodAffinityArgs (kubescheduler.config.k8s.io/v1)."""

    #: Score weight for each existing pod's *required* affinity term the incoming pod matches
    #: (the symmetric, soft side of hard affinity). 0 turns it off; valid range [0, 100].
    hard_pod_affinity_weight: int = 1
    #: Skip existing pods' preferred terms when the incoming pod has no preferred terms of its
    #: own (a throughput optimisation; upstream #114393).
    ignore_preferred_terms_of_existing_pods: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.hard_pod_affinity_weight <= 100:
            raise ValueError(
                f"hardPodAffinityWeight: Invalid value: {self.hard_pod_affinity_weight}: "
                "not in valid range [0, 100]"
            )


# -------------------------------------------------------------------------------- plugin


class InterPodAffinity:
    """PreFilterPlugin (+ add_pod/remove_pod extensions), FilterPlugin, PreScorePlugin,
    ScorePlugin, NormalizeScorePlugin, EnqueueExtensions; FilterRowsPlugin and
    ScoreRowsPlugin (the per-domain counts gathered per distinct value of each topology key).
    PreFilter / PreScore return Skip where upstream's do (no required terms of the pod and no
    existing anti-affinity against it / nothing to score)."""

    name = NAME

    def __init__(self, args: Args, handle: Handle | None) -> None:
        self.args = args
        self.handle = handle
        #: PreFilter / PreScore read the snapshot's AffinityIndex (cost per distinct label set
        #: and term) instead of walking every pod; off: the walk, kept as the reference.
        self.use_index = True

    # ---------------------------------------------------------------- PreFilter / Filter
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if pod_info.affinity_error:
            return None, Status.unresolvable(f"parsing pod: {pod_info.affinity_error}", plugin=NAME)
        pod = pod_info.pod
        ns = namespace_labels_of(self.handle)
        s = PreFilterState(pod_info, ns(pod.metadata.namespace), ns)

        aff, anti = pod_info.required_affinity, pod_info.required_anti_affinity
        if not aff and not anti and not self._any_pods(affinity=False):
            pass  # nothing to count: no terms, and no existing pod has anti-affinity
        elif (fast := self._fast(nodes)) is not None:
            fill_pre_filter(
                *fast, pod_info, s.namespace_labels, ns, s.existing_anti, s.affinity, s.anti
            )
        else:
            self._pre_filter_walk(s, pod_info, nodes, ns)

        # The state is written even when skipping: a Filter run regardless sees "all pass".
        state.write(PRE_FILTER_STATE_KEY, s)
        if not s.existing_anti and not aff and not anti:
            return None, Status.skip(plugin=NAME)
        return None, Status.success()

    def _any_pods(self, *, affinity: bool) -> bool:
        """Whether some node of the snapshot holds a pod with (anti-)affinity terms
        (affinity=False: required anti-affinity ones); True without a handle (the walk
        looks for itself)."""
        if self.handle is None:
            return True
        snap = self.handle.snapshot()
        if affinity:
            return bool(snap.have_pods_with_affinity())
        return bool(snap.have_pods_with_required_anti_affinity())

    def _fast(self, nodes: Sequence[NodeInfo] | None) -> tuple[AffinityIndex, RowValues] | None:
        """The index of the handle's snapshot, when `nodes` are its rows (None: any) and
        `use_index` is on; else None (walk every pod)."""
        if not self.use_index or self.handle is None:
            return None
        snap = self.handle.snapshot()
        if nodes is not None and nodes is not snap.list():
            return None
        idx = index_of(snap)
        cols = columns_of(snap)
        if idx is None or cols is None:
            return None
        return idx, RowValues(cols, idx.row_values)

    def _pre_filter_walk(
        self,
        s: PreFilterState,
        pod_info: PodInfo,
        nodes: Sequence[NodeInfo],
        ns: NamespaceLabels,
    ) -> None:
        """PreFilter's counts by walking every existing pod (the reference for the index)."""
        pod = pod_info.pod
        # Existing pods' required anti-affinity against the incoming pod.
        with_anti = (
            self.handle.snapshot().have_pods_with_required_anti_affinity()
            if (self.handle is not None)
            else [ni for ni in nodes if ni.pods_with_required_anti_affinity]
        )
        for ni in with_anti:
            if ni.node is None:
                continue
            labels = ni.node.metadata.labels
            for existing in ni.pods_with_required_anti_affinity:
                for t in existing.required_anti_affinity:
                    if t.matches(pod, s.namespace_labels):
                        add_count(s.existing_anti, labels, t.topology_key, 1)

        # Existing pods against the incoming pod's required terms.
        aff, anti = pod_info.required_affinity, pod_info.required_anti_affinity
        if aff or anti:
            for ni in nodes:
                if ni.node is None:
                    continue
                labels = ni.node.metadata.labels
                for existing in ni.pods:
                    p = existing.pod
                    if aff and matches_all(aff, p, ns):
                        for t in aff:
                            add_count(s.affinity, labels, t.topology_key, 1)
                    for t in anti:
                        if matches(t, p, ns):
                            add_count(s.anti, labels, t.topology_key, 1)

    def add_pod(
        self, state: CycleState, pod_to_schedule: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status:
        """PreFilterExtensions.AddPod (preemption's what-if): count `pod_to_add` on the node."""
        return self._update(state, pod_to_add, node_info, 1)

    def remove_pod(
        self,
        state: CycleState,
        pod_to_schedule: PodInfo,
        pod_to_remove: PodInfo,
        node_info: NodeInfo,
    ) -> Status:
        """PreFilterExtensions.RemovePod: stop counting `pod_to_remove`."""
        return self._update(state, pod_to_remove, node_info, -1)

    def _update(self, state: CycleState, other: PodInfo, node_info: NodeInfo, n: int) -> Status:
        s = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing(PRE_FILTER_STATE_KEY)
        if node_info.node is not None:
            s.update_with_pod(other, node_info.node, n)
        return Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.as_error(LookupError("node not found"), plugin=NAME)
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        if s is None:
            return _missing(PRE_FILTER_STATE_KEY)
        labels = node.metadata.labels
        if not satisfies_pod_affinity(s, labels):
            return _AFFINITY_REJECTED
        if not satisfies_pod_anti_affinity(s, labels):
            return _ANTI_AFFINITY_REJECTED
        if not satisfies_existing_pods_anti_affinity(s, labels):
            return _EXISTING_ANTI_AFFINITY_REJECTED
        return _SUCCESS

    # ------------------------------------------------------------------- PreScore / Score
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        s = PreScoreState()
        state.write(PRE_SCORE_STATE_KEY, s)
        if not nodes:
            return Status.skip(plugin=NAME)  # no nodes to score
        aff = pod_info.pod.spec.affinity
        has_constraints = bool(
            aff.pod_affinity.preferred_during_scheduling_ignored_during_execution
            or aff.pod_anti_affinity.preferred_during_scheduling_ignored_during_execution
        )
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip(plugin=NAME)
        if pod_info.affinity_error:  # PreFilter normally refused the pod already
            return Status.as_error(
                ValueError(f"failed to parse pod: {pod_info.affinity_error}"), plugin=NAME
            )

        if not has_constraints and not self._any_pods(affinity=True):
            pass  # nothing to score: no preferred terms, and no existing pod has affinity
        elif (fast := self._fast(None)) is not None:
            ns = namespace_labels_of(self.handle)
            incoming_ns = ns(pod_info.pod.metadata.namespace)
            hard = self.args.hard_pod_affinity_weight
            fill_pre_score(
                *fast, pod_info, incoming_ns, ns, hard, has_constraints, s.topology_score
            )
        else:
            self._pre_score_walk(s, pod_info, nodes, has_constraints)
        if not s.topology_score:
            return Status.skip(plugin=NAME)
        return Status.success()

    def _pre_score_walk(
        self, s: PreScoreState, pod_info: PodInfo, nodes: Sequence[NodeInfo], has_constraints: bool
    ) -> None:
        """PreScore's topology scores by walking every existing pod (the reference)."""
        # Unless the pod has preferred terms, only pods with affinity can contribute.
        if self.handle is not None:
            snap = self.handle.snapshot()
            candidates = snap.list() if has_constraints else snap.have_pods_with_affinity()
        else:
            candidates = nodes
        ns = namespace_labels_of(self.handle)
        incoming = pod_info.pod
        incoming_ns = ns(incoming.metadata.namespace)
        hard_weight = self.args.hard_pod_affinity_weight
        for ni in candidates:
            node = ni.node
            if node is None or not node.metadata.labels:
                continue
            labels = node.metadata.labels
            for existing in ni.pods if has_constraints else ni.pods_with_affinity:
                p = existing.pod
                for t in pod_info.preferred_affinity:
                    if matches(t, p, ns):
                        s.add(t, t.weight, labels)
                for t in pod_info.preferred_anti_affinity:
                    if matches(t, p, ns):
                        s.add(t, -t.weight, labels)
                if hard_weight > 0:
                    for t in existing.required_affinity:
                        if t.matches(incoming, incoming_ns):
                            s.add(t, hard_weight, labels)
                for t in existing.preferred_affinity:
                    if t.matches(incoming, incoming_ns):
                        s.add(t, t.weight, labels)
                for t in existing.preferred_anti_affinity:
                    if t.matches(incoming, incoming_ns):
                        s.add(t, -t.weight, labels)

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return 0, _missing(PRE_SCORE_STATE_KEY)
        labels = node.metadata.labels
        total = 0
        for key, by_value in s.topology_score.items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        return total, Status.success()

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            return _missing(PRE_SCORE_STATE_KEY)
        if not s.topology_score or not scores:
            return Status.success()
        lo = min(ns.score for ns in scores)
        hi = max(ns.score for ns in scores)
        diff = hi - lo
        for ns in scores:
            # int64(float64(MaxNodeScore) * float64(score-min) / float64(max-min)): truncation.
            ns.score = int(MAX_NODE_SCORE * ((ns.score - lo) / diff)) if diff > 0 else 0
        return Status.success()

    # ------------------------------------------------------------------------- row forms
    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        s: PreFilterState | None = state.get(PRE_FILTER_STATE_KEY)
        cols = columns_of(snapshot)
        if s is None or cols is None:
            return None  # `filter` gives the error
        return filter_rows_mask(s, cols, rows)

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> Int64Array | None:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        cols = columns_of(snapshot)
        if s is None or cols is None or not cols.all_have_nodes:
            return None  # `score` gives the error
        total = np.zeros(len(rows), dtype=np.int64)
        for key, by_value in s.topology_score.items():
            col = cols.label(key)
            total += col.counts_table(by_value)[col.ids[rows]]
        return total

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: Int64Array
    ) -> Int64Array:
        s: PreScoreState | None = state.get(PRE_SCORE_STATE_KEY)
        if s is None:
            raise RuntimeError(f"{NAME}: normalize_rows without PreScore state")
        if not s.topology_score or not len(scores):
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        diff = hi - lo
        if diff <= 0:
            return np.zeros(len(scores), dtype=np.int64)
        # int64(float64(MaxNodeScore) * float64(score-min) / float64(max-min)), as normalize_score.
        return (MAX_NODE_SCORE * ((scores - lo) / diff)).astype(np.int64)

    # ---------------------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Add: a pod matching our affinity may appear; UpdatePodLabel: one may start (or
            # stop) matching; Delete: a pod our anti-affinity (or whose anti-affinity) blocked
            # us may go. UpdateNodeTaint: upstream's workaround for node adds it misses.
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(
                    NODE,
                    ActionType.ADD | ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT,
                ),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(
        self, pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
    ) -> QueueingHint:
        """Only bound pods count. Queue when a pod comes to match all our affinity terms
        (add or label update), stops matching our anti-affinity terms (update), or goes away
        while matching them, or while its own anti-affinity rejected us (delete; upstream only
        checks our terms, which would leave a pod blocked by symmetry waiting for the flush)."""
        if (new is not None and not new.spec.node_name) or (
            old is not None and not old.spec.node_name
        ):
            return QueueingHint.SKIP
        pi = PodInfo(pod)
        ns = namespace_labels_of(self.handle)
        aff, anti = pi.required_affinity, pi.required_anti_affinity
        if old is not None and new is not None:
            if not matches_all(aff, old, ns) and matches_all(aff, new, ns):
                return QueueingHint.QUEUE
            if matches_all(anti, old, ns) and not matches_all(anti, new, ns):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new is not None:
            return QueueingHint.QUEUE if matches_all(aff, new, ns) else QueueingHint.SKIP
        if old is None:
            return QueueingHint.SKIP
        if matches_all(anti, old, ns):
            return QueueingHint.QUEUE
        own_ns = ns(pod.metadata.namespace)
        deleted = PodInfo(old)
        if any(t.matches(pod, own_ns) for t in deleted.required_anti_affinity):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(
        self, pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
    ) -> QueueingHint:
        """Queue when the added/updated node carries a topology key of our required terms."""
        if new is None:
            return QueueingHint.SKIP
        pi = PodInfo(pod)
        labels = new.metadata.labels
        for t in (*pi.required_affinity, *pi.required_anti_affinity):
            if t.topology_key in labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def _missing(key: str) -> Status:
    return Status.as_error(KeyError(f"error reading {key!r} from cycleState"), plugin=NAME)


def new(args: Args | None, handle: Any) -> InterPodAffinity:
    return InterPodAffinity(args if args is not None else Args(), handle)
