"""PodTopologySpread's row forms: Filter and Score over snapshot rows, each constraint's skew
or count answered once per distinct value of its topology key (services/scheduler/columns.py)
instead of once per node, with the same results as filter_node / score_node / normalize.

The one per-row part left is Score's kubernetes.io/hostname count (the matching pods on the
node itself); it is a generator over the node's pods, without Status objects or label lookups.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.wellknown import LABEL_HOSTNAME
from services.scheduler.columns import NodeColumns
from services.scheduler.framework.interface import MAX_NODE_SCORE
from services.scheduler.plugins.podtopologyspread.common import Constraint
from services.scheduler.plugins.podtopologyspread.filtering import PreFilterState
from services.scheduler.plugins.podtopologyspread.scoring import PreScoreState

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


def _hostname_counts(
    c: Constraint, namespace: str, cols: NodeColumns, rows: Int64Array
) -> Int64Array:
    """Score's per-node count for kubernetes.io/hostname: only rows whose node has pods."""
    out = np.zeros(len(rows), dtype=np.int64)
    if c.selector.is_empty():
        return out  # counts nothing
    for j in np.flatnonzero(cols.pod_count[rows]).tolist():
        pods = cols.node_info(int(rows[j])).pods
        out[j] = sum(1 for p in pods if c.counts(p.pod, namespace))
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
