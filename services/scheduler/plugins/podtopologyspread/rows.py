"""PodTopologySpread's row forms: Filter and Score over snapshot rows, each constraint's skew
or count answered once per distinct value of its topology key (services/scheduler/cache/columns.py)
instead of once per node, with the same results as filter_node / score_node / normalize; and
PreFilter's per-domain counts (`pre_filter_state_rows`, the same PreFilterState as
pre_filter_state) from per-node match counts the columns cache across cycles, so a pod's
PreFilter recounts only the nodes changed since the last pod with the same selector.

The one per-row part left is Score's kubernetes.io/hostname count (the matching pods on the
node itself); it is a generator over the node's pods, without Status objects or label lookups.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.nodeaffinity import RequiredNodeAffinity
from services.api.helpers.taints import find_matching_untolerated_taint
from services.api.helpers.wellknown import LABEL_HOSTNAME
from services.scheduler.cache.columns import NodeColumns, TaintSet
from services.scheduler.framework.interface import MAX_NODE_SCORE
from services.scheduler.framework.types import NodeInfo
from services.scheduler.plugins.helpers import do_not_schedule_taints_filter
from services.scheduler.plugins.podtopologyspread.common import (
    HONOR,
    NAME,
    Constraint,
    NodeEligibility,
)
from services.scheduler.plugins.podtopologyspread.filtering import PreFilterState
from services.scheduler.plugins.podtopologyspread.scoring import PreScoreState
from services.scheduler.plugins.selector_rows import required_mask

BoolArray = npt.NDArray[np.bool_]
Int64Array = npt.NDArray[np.int64]


def filter_rows(
    s: PreFilterState, pod: core_pb2.Pod, cols: NodeColumns, rows: Int64Array
) -> BoolArray:
    """filter_node(...).is_success() per row (rows without a Node: False)."""
    mask = cols.has_node[rows].copy()
    pod_labels = pod.metadata.labels
    for i, c in enumerate(s.constraints):
        col = cols.label(c.topology_key)
        rest = (1 if c.selector.matches(pod_labels) else 0) - s.min_match(i)
        # filter_node: the key must be on the node, and count + self_match - min <= maxSkew.
        within = col.counts_table(s.counts[i]) + rest <= c.max_skew
        mask &= within[col.ids[rows]] & col.present(rows)
    return mask


def count_matching(ni: NodeInfo, c: Constraint, namespace: str) -> int:
    """The node's pods that `c` counts for a pod of `namespace`."""
    return sum(1 for p in ni.pods if c.counts(p.pod, namespace))


def _tolerated(ts: TaintSet, tolerations: Any) -> bool:
    if ts.taints is None:
        return True
    return (
        find_matching_untolerated_taint(ts.taints, tolerations, do_not_schedule_taints_filter)
        is None
    )


class _Eligibility:
    """NodeEligibility as row masks (all rows), each policy's mask built on first use."""

    def __init__(self, pod: core_pb2.Pod, cols: NodeColumns, snapshot: Any) -> None:
        self.pod, self.cols, self.snapshot = pod, cols, snapshot
        self.rows = np.arange(len(cols.row_gen), dtype=np.int64)
        self._affinity: BoolArray | None = None
        self._taints: BoolArray | None = None

    def mask(self, c: Constraint, base: BoolArray) -> BoolArray:
        """`base` and the nodes NodeEligibility.ok admits for `c`."""
        if c.node_affinity_policy == HONOR:
            if self._affinity is None:
                req = RequiredNodeAffinity(self.pod)
                self._affinity = required_mask(self.cols, self.snapshot, req, self.rows)
            base = base & self._affinity
        if c.node_taints_policy == HONOR:
            if self._taints is None:
                taints = self.cols.taints
                tolerated = partial(_tolerated, tolerations=self.pod.spec.tolerations)
                self._taints = taints.table(tolerated)[taints.ids]
            base = base & self._taints
        return base


def _keys_present(cols: NodeColumns, constraints: list[Constraint], rows: Int64Array) -> BoolArray:
    """Rows with a Node carrying every constraint's topology key."""
    mask = cols.has_node[rows].copy()
    for c in constraints:
        mask &= cols.label(c.topology_key).present(rows)
    return mask


def _sums(
    cols: NodeColumns, c: Constraint, namespace: str, eligible: BoolArray
) -> tuple[npt.NDArray[Any], npt.NDArray[Any]]:
    """The label ids of the eligible rows' domains, and per id the matching pods summed."""
    col = cols.label(c.topology_key)
    where = np.flatnonzero(eligible)
    ids = col.ids[where]
    per_node = cols.pod_counts(
        (NAME, c.selector, namespace), partial(count_matching, c=c, namespace=namespace)
    )
    return ids, np.bincount(ids, weights=per_node[where], minlength=len(col.values))


def pre_filter_state_rows(
    constraints: list[Constraint], pod: core_pb2.Pod, cols: NodeColumns, snapshot: Any
) -> PreFilterState:
    """pre_filter_state over every row of the snapshot: nodes carrying every topology key,
    eligible per constraint (NodeEligibility's policies as masks), their matching pods summed
    per domain value (every eligible domain present, 0 included)."""
    s = PreFilterState(constraints, NodeEligibility(pod))
    elig = _Eligibility(pod, cols, snapshot)
    base = _keys_present(cols, constraints, elig.rows)
    for i, c in enumerate(constraints):
        ids, sums = _sums(cols, c, pod.metadata.namespace, elig.mask(c, base))
        values = cols.label(c.topology_key).values
        s.counts[i] = {values[j]: int(sums[j]) for j in np.unique(ids).tolist()}
    return s


def fill_pre_score_state_rows(
    s: PreScoreState,
    pod: core_pb2.Pod,
    candidates: Int64Array,
    cols: NodeColumns,
    snapshot: Any,
    require_all: bool,
) -> None:
    """fill_pre_score_state with the candidate nodes given as rows and every row of the
    snapshot as all_nodes. A missing key reads as the value "" there, so here an absent
    label (None) and the value "" are one domain."""
    every = np.arange(len(cols.row_gen), dtype=np.int64)
    if require_all:
        keys = _keys_present(cols, s.constraints, every)
        missing = candidates[cols.has_node[candidates] & ~keys[candidates]]
        s.ignored = {cols.node_info(r).name for r in missing.tolist()}
        counted = keys
    else:
        counted = cols.has_node.copy()
    valid = candidates[counted[candidates]]
    s.counts = [{} for _ in s.constraints]
    for i, c in enumerate(s.constraints):
        if c.topology_key == LABEL_HOSTNAME:
            size = len(candidates) - len(s.ignored)
        else:
            values = cols.label(c.topology_key).values
            ids = np.unique(cols.label(c.topology_key).ids[valid]).tolist()
            s.counts[i] = dict.fromkeys({_domain(values[j]) for j in ids}, 0)
            size = len(s.counts[i])
        s.weights.append(math.log(size + 2))
    elig = _Eligibility(pod, cols, snapshot)
    for i, c in enumerate(s.constraints):
        counts = s.counts[i]
        if not counts:
            continue  # hostname: counted per node in Score
        ids, sums = _sums(cols, c, pod.metadata.namespace, elig.mask(c, counted))
        values = cols.label(c.topology_key).values
        for j in np.unique(ids).tolist():
            d = _domain(values[j])
            if d in counts:
                counts[d] += int(sums[j])


def _domain(value: str | None) -> str:
    return "" if value is None else value


def _hostname_counts(
    c: Constraint, namespace: str, cols: NodeColumns, rows: Int64Array
) -> Int64Array:
    """Score's per-node count for kubernetes.io/hostname: only rows whose node has pods."""
    out = np.zeros(len(rows), dtype=np.int64)
    if c.selector.is_empty():
        return out  # counts nothing
    for j in np.flatnonzero(cols.pod_count[rows]).tolist():
        out[j] = count_matching(cols.node_info(int(rows[j])), c, namespace)
    return out


def ignored_rows(s: PreScoreState, cols: NodeColumns, rows: Int64Array) -> BoolArray:
    """Rows whose node is one of `s.ignored` (missing a topology key): they score 0."""
    if not s.ignored:
        return np.zeros(len(rows), dtype=np.bool_)
    ignored = s.ignored
    return np.fromiter(
        (cols.node_info(r).name in ignored for r in rows.tolist()),
        dtype=np.bool_,
        count=len(rows),
    )


def score_rows(
    s: PreScoreState, namespace: str, cols: NodeColumns, rows: Int64Array, ignored: BoolArray
) -> Int64Array:
    """score_node per row (`ignored` rows, from ignored_rows: 0). The float sums run constraint by constraint in the
    same order as score_node's, so they round identically."""
    total = np.zeros(len(rows), dtype=np.float64)
    for i, c in enumerate(s.constraints):
        col = cols.label(c.topology_key)
        ids = col.ids[rows]
        present = col.present(rows)
        if c.topology_key == LABEL_HOSTNAME:
            cnt = _hostname_counts(c, namespace, cols, rows)
        else:
            cnt = col.counts_table(s.counts[i])[ids]
        total = np.where(present, total + (cnt * s.weights[i] + (c.max_skew - 1)), total)
    scores = np.floor(total + 0.5).astype(np.int64)  # Go math.Round (total >= 0)
    scores[ignored] = 0
    return scores


def normalize_rows(scores: Int64Array, ignored: BoolArray) -> Int64Array:
    """normalize on an array: reversed, ignored rows 0, all-zero raw scores 100."""
    valid = scores[~ignored]
    lo = int(valid.min()) if len(valid) else 0
    hi = int(valid.max()) if len(valid) else 0
    if hi == 0:
        out = np.full(len(scores), MAX_NODE_SCORE, dtype=np.int64)
    else:
        out = MAX_NODE_SCORE * (hi + lo - scores) // hi
    out[ignored] = 0
    return out
