"""Node selectors matched over snapshot rows: the vector form of
services/api/helpers/nodeaffinity.py.

Why it exists: NodeAffinity (nodeSelector, required and preferred terms, addedAffinity) and
PodTopologySpread (nodeAffinityPolicy) ask the same questions of every node. A label
requirement depends on one label's value only, so it is answered once per distinct value of
that label (services/scheduler/cache/columns.py) and gathered per row; `metadata.name` field
requirements compare rows with the named node's row. Every function here gives, row for row,
what the per-node matcher gives (tests/scheduler/plugins/test_rows_*.py check it); rows
without a Node never match (the per-node plugins answer those with an Error or a rejection).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt

from services.api.helpers.nodeaffinity import (
    OBJECT_NAME_FIELD,
    NodeSelector,
    PreferredSchedulingTerms,
    RequiredNodeAffinity,
)
from services.api.machinery.labels import DOES_NOT_EXIST, EXISTS, IN, NOT_IN, Requirement, Selector
from services.scheduler.cache.columns import Interned, NodeColumns

BoolArray = npt.NDArray[np.bool_]
Int64Array = npt.NDArray[np.int64]


def requirement_table(col: Interned[str | None], req: Requirement) -> BoolArray:
    """req.matches for each distinct value of its key's column (None: the label is absent)."""
    op = req.operator
    if op in (IN, NOT_IN):
        table = np.zeros(len(col.values), dtype=np.bool_)
        for v in req.values:
            i = col.id_of(v)
            if i is not None:
                table[i] = True
        return table if op == IN else ~table
    if op in (EXISTS, DOES_NOT_EXIST):
        present = col.table(lambda v: v is not None)
        return present if op == EXISTS else ~present
    key = req.key
    return col.table(lambda v: req.matches({} if v is None else {key: v}))


def selector_mask(cols: NodeColumns, selector: Selector, rows: Int64Array) -> BoolArray:
    """selector.matches(node labels) per row."""
    mask = np.ones(len(rows), dtype=np.bool_)
    for req in selector.requirements:
        col = cols.label(req.key)
        mask &= requirement_table(col, req)[col.ids[rows]]
    return mask


def label_set_mask(cols: NodeColumns, want: Mapping[str, str], rows: Int64Array) -> BoolArray:
    """Every label of `want` present on the node with that value (a pod's nodeSelector)."""
    mask = np.ones(len(rows), dtype=np.bool_)
    for key, value in want.items():
        col = cols.label(key)
        i = col.id_of(value)
        if i is None:
            return np.zeros(len(rows), dtype=np.bool_)
        mask &= col.ids[rows] == i
    return mask


def _name_mask(snapshot: Any, name: str, rows: Int64Array) -> BoolArray:
    try:
        row = snapshot.index_of(name)
    except KeyError:
        return np.zeros(len(rows), dtype=np.bool_)
    return np.asarray(rows == row, dtype=np.bool_)


def term_mask(cols: NodeColumns, snapshot: Any, term: Any, rows: Int64Array) -> BoolArray:
    """One parsed NodeSelectorTerm (nodeaffinity's `_Term`) per row: its label selector and its
    field requirements ANDed; a term that failed to parse matches nothing."""
    if term.error is not None:
        return np.zeros(len(rows), dtype=np.bool_)
    mask = (
        selector_mask(cols, term.labels, rows)
        if term.labels is not None
        else np.ones(len(rows), dtype=np.bool_)
    )
    # Every snapshot node has a name, so its field requirements are always checked.
    for key, equal, value in term.fields:
        if key == OBJECT_NAME_FIELD:
            eq = _name_mask(snapshot, value, rows)
        else:
            eq = np.full(len(rows), value == "", dtype=np.bool_)
        mask &= eq if equal else ~eq
    return mask


def node_selector_mask(
    cols: NodeColumns, snapshot: Any, ns: NodeSelector, rows: Int64Array
) -> BoolArray:
    """NodeSelector.match per row: terms ORed."""
    mask = np.zeros(len(rows), dtype=np.bool_)
    for term in ns.terms:
        mask |= term_mask(cols, snapshot, term, rows)
    return mask & cols.has_node[rows]


def required_mask(
    cols: NodeColumns, snapshot: Any, req: RequiredNodeAffinity, rows: Int64Array
) -> BoolArray:
    """RequiredNodeAffinity.match per row: nodeSelector AND the required terms."""
    mask = cols.has_node[rows].copy()
    if req.label_selector is not None:
        mask &= label_set_mask(cols, req.label_selector, rows)
    if req.node_selector is not None:
        mask &= node_selector_mask(cols, snapshot, req.node_selector, rows)
    return mask


def preferred_scores(
    cols: NodeColumns, snapshot: Any, terms: PreferredSchedulingTerms, rows: Int64Array
) -> Int64Array:
    """PreferredSchedulingTerms.score per row: the weights of the matching terms, summed."""
    total = np.zeros(len(rows), dtype=np.int64)
    for term, weight in terms.terms:
        total += np.where(term_mask(cols, snapshot, term, rows), weight, 0)
    return total
