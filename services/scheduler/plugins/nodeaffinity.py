"""NodeAffinity: `spec.nodeSelector` and required node affinity filter nodes; preferred terms
score them; a profile's `addedAffinity` applies to every pod it schedules.

Upstream plugins/nodeaffinity on component-helpers' nodeaffinity matcher
(services/api/helpers/nodeaffinity.py, which says how terms match):

- terms that pin `metadata.name` with `In` let PreFilter narrow the nodes to filter (the
  union over terms of the intersection within a term); if every term pins a disjoint set the
  pod is UnschedulableAndUnresolvable ("pod affinity terms conflict");
- preferred terms add their weight when they match; NormalizeScore rescales to [0, 100].

Filter reasons: "node(s) didn't match Pod's node affinity/selector", or for addedAffinity
"node(s) didn't match scheduler-enforced node affinity"; both UnschedulableAndUnresolvable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.helpers.nodeaffinity import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    NodeSelectorError,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
    has_required_node_affinity,
)
from services.scheduler.cache.columns import columns_of
from services.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore, PreFilterResult
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
from services.scheduler.plugins.helpers import (
    NODE,
    Int64Array,
    default_normalize_rows,
    default_normalize_score,
)
from services.scheduler.plugins.selector_rows import (
    node_selector_mask,
    preferred_scores,
    required_mask,
)

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"


def _pod_preferred(pod: core_pb2.Pod) -> PreferredSchedulingTerms | None:
    spec = pod.spec
    if spec.HasField("affinity") and spec.affinity.HasField("node_affinity"):
        terms = spec.affinity.node_affinity.preferred_during_scheduling_ignored_during_execution
        if terms:
            return PreferredSchedulingTerms(terms)
    return None


# --------------------------------------------------------------------------- the plugin


@dataclass
class Args:
    """NodeAffinityArgs."""

    #: A NodeAffinity (proto, or its JSON/YAML shape with camelCase or snake_case keys)
    #: added to every pod this profile schedules: its required terms must match too, its
    #: preferred terms add to the score.
    added_affinity: core_pb2.NodeAffinity | Mapping[str, Any] | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        """From KubeSchedulerConfiguration pluginConfig args (`addedAffinity`)."""
        d = d or {}
        return cls(added_affinity=d.get("addedAffinity", d.get("added_affinity")))


def _added_affinity_proto(value: core_pb2.NodeAffinity | Mapping[str, Any] | None) -> Any:
    if value is None or isinstance(value, core_pb2.NodeAffinity):
        return value
    try:
        return json_format.ParseDict(dict(value), core_pb2.NodeAffinity())
    except json_format.ParseError as err:
        raise ValueError(f"addedAffinity: {err}") from err


class NodeAffinity:
    """PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin,
    EnqueueExtensions; FilterRowsPlugin and ScoreRowsPlugin (each requirement answered once
    per distinct value of its label: plugins/selector_rows.py).

    PreFilter / PreScore return Skip exactly where upstream's do: no required node affinity,
    no nodeSelector and no addedAffinity required terms / no preferred terms of the pod or
    of addedAffinity."""

    name = NAME

    def __init__(self, args: Args) -> None:
        self.added_node_selector: NodeSelector | None = None
        self.added_pref_sched_terms: PreferredSchedulingTerms | None = None
        added = _added_affinity_proto(args.added_affinity)
        if added is not None:
            if added.HasField("required_during_scheduling_ignored_during_execution"):
                try:
                    self.added_node_selector = NodeSelector.strict(
                        added.required_during_scheduling_ignored_during_execution
                    )
                except NodeSelectorError as err:
                    raise ValueError(
                        "parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: "
                        f"{err}"
                    ) from err
            terms = added.preferred_during_scheduling_ignored_during_execution
            if terms:
                try:
                    self.added_pref_sched_terms = PreferredSchedulingTerms(terms)
                except NodeSelectorError as err:
                    raise ValueError(
                        "parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: "
                        f"{err}"
                    ) from err
        self._reject_pod = Status.unresolvable(ERR_REASON_POD, plugin=NAME)
        self._reject_enforced = Status.unresolvable(ERR_REASON_ENFORCED, plugin=NAME)

    # ------------------------------------------------------------------- filtering
    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        has_required = has_required_node_affinity(pod)
        if not has_required and self.added_node_selector is None and not pod.spec.node_selector:
            return None, Status.skip(NAME)
        state.write(PRE_FILTER_STATE_KEY, RequiredNodeAffinity(pod))
        if not has_required:
            return None, Status.success()
        terms = pod.spec.affinity.node_affinity.required_during_scheduling_ignored_during_execution
        if not terms.node_selector_terms:
            return None, Status.success()
        node_names: set[str] | None = None
        for t in terms.node_selector_terms:
            term_names: set[str] | None = None
            for r in t.match_fields:
                if r.key == OBJECT_NAME_FIELD and r.operator == "In":
                    values = set(r.values)
                    term_names = values if term_names is None else term_names & values
            if term_names is None:
                # This term does not pin a node name; terms are ORed, so every node may match.
                return None, Status.success()
            node_names = term_names if node_names is None else node_names | term_names
        if node_names is not None and not node_names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT, plugin=NAME)
        if node_names:
            return PreFilterResult(frozenset(node_names)), Status.success()
        return None, Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status.as_error(LookupError("node not found"), plugin=NAME)
        if self.added_node_selector is not None and not self.added_node_selector.match(node):
            return self._reject_enforced
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            # PreFilter disabled (or skipped): compute here.
            required = RequiredNodeAffinity(pod_info.pod)
        if required.match(node):
            return Status.success()
        return self._reject_pod

    # ------------------------------------------------------------------- scoring
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        try:
            preferred = _pod_preferred(pod_info.pod)
        except NodeSelectorError as err:
            return Status.as_error(err, plugin=NAME)
        if preferred is None and self.added_pref_sched_terms is None:
            return Status.skip(NAME)
        state.write(PRE_SCORE_STATE_KEY, preferred)
        return Status.success()

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        node = node_info.node
        if node is None:
            return 0, Status.as_error(LookupError("node not found"), plugin=NAME)
        count = 0
        if self.added_pref_sched_terms is not None:
            count += self.added_pref_sched_terms.score(node)
        marker = object()
        preferred = state.get(PRE_SCORE_STATE_KEY, marker)
        if preferred is marker:
            try:
                preferred = _pod_preferred(pod_info.pod)
            except NodeSelectorError as err:
                return 0, Status.as_error(err, plugin=NAME)
        if preferred is not None:
            count += preferred.score(node)
        return count, Status.success()

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        return default_normalize_score(MAX_NODE_SCORE, False, scores)

    # ------------------------------------------------------------------- row forms
    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        cols = columns_of(snapshot)
        if cols is None:
            return None
        required = state.get(PRE_FILTER_STATE_KEY)
        if required is None:
            required = RequiredNodeAffinity(pod_info.pod)
        mask = required_mask(cols, snapshot, required, rows)
        if self.added_node_selector is not None:
            mask &= node_selector_mask(cols, snapshot, self.added_node_selector, rows)
        return mask

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> Int64Array | None:
        cols = columns_of(snapshot)
        if cols is None or not cols.all_have_nodes:
            return None  # `score` gives the error
        marker = object()
        preferred = state.get(PRE_SCORE_STATE_KEY, marker)
        if preferred is marker:
            try:
                preferred = _pod_preferred(pod_info.pod)
            except NodeSelectorError:
                return None  # `score` gives the error
        total = np.zeros(len(rows), dtype=np.int64)
        if self.added_pref_sched_terms is not None:
            total += preferred_scores(cols, snapshot, self.added_pref_sched_terms, rows)
        if preferred is not None:
            total += preferred_scores(cols, snapshot, preferred, rows)
        return total

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: Int64Array
    ) -> Int64Array:
        return default_normalize_rows(scores, MAX_NODE_SCORE, False)

    # ------------------------------------------------------------------- queueing
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(
        self, pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
    ) -> QueueingHint:
        """Queue when the node (newly) matches both addedAffinity and the pod's own."""
        if new is None:
            return QueueingHint.SKIP
        if self.added_node_selector is not None and not self.added_node_selector.match(new):
            return QueueingHint.SKIP
        required = RequiredNodeAffinity(pod)
        matched, errored = required.match_with_error(new)
        if errored:
            return QueueingHint.QUEUE
        if not matched:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        was_matched, errored = required.match_with_error(old)
        if errored:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if was_matched else QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> NodeAffinity:
    return NodeAffinity(args or Args())
