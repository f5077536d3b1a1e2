"""InterPodAffinity's matching helpers, its PreFilter / PreScore states and the Filter checks
over a PreFilter state (per node and per row); `plugin` runs them."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.columns import BoolArray, Interned, NodeColumns
from services.scheduler.framework.interface import Handle
from services.scheduler.framework.types import AffinityTerm, PodInfo
from services.scheduler.plugins.helpers import Int64Array

TopologyPair = tuple[str, str]
NamespaceLabels = Callable[[str], Mapping[str, str]]


# ----------------------------------------------------------------------------- matching


def matches(term: AffinityTerm, pod: core_pb2.Pod, ns_labels: NamespaceLabels) -> bool:
    """term.matches, looking the pod's namespace labels up only when the term needs them."""
    if term.namespace_selector is None:
        return term.matches(pod, None)
    return term.matches(pod, ns_labels(pod.metadata.namespace))


def matches_all(
    terms: Sequence[AffinityTerm], pod: core_pb2.Pod, ns_labels: NamespaceLabels
) -> bool:
    """podMatchesAllAffinityTerms: false for no terms."""
    return bool(terms) and all(matches(t, pod, ns_labels) for t in terms)


def no_labels(namespace: str) -> Mapping[str, str]:
    return {}


def namespace_labels_of(handle: Handle | None) -> NamespaceLabels:
    """Namespace -> labels from the snapshot, memoised for one use; unknown: no labels
    (upstream GetNamespaceLabelsSnapshot)."""
    if handle is None:
        return no_labels
    snapshot = handle.snapshot()
    memo: dict[str, Mapping[str, str]] = {}

    def lookup(namespace: str) -> Mapping[str, str]:
        got = memo.get(namespace)
        if got is None:
            got = memo[namespace] = snapshot.namespace_labels(namespace) or {}
        return got

    return lookup


def add_count(counts: dict[TopologyPair, int], labels: Mapping[str, str], key: str, n: int) -> None:
    value = labels.get(key)
    if value is None:
        return
    pair = (key, value)
    total = counts.get(pair, 0) + n
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


# ---------------------------------------------------------------------------- PreFilter


class PreFilterState:
    """Per-cycle counts, keyed by (topology key, value):
    - existing_anti: existing pods whose required anti-affinity terms match the incoming pod;
    - affinity: existing pods matching all of the incoming pod's required affinity terms;
    - anti: existing pods matching each of the incoming pod's required anti-affinity terms."""

    __slots__ = (
        "existing_anti",
        "affinity",
        "anti",
        "pod_info",
        "namespace_labels",
        "_ns",
        "row_tables",
    )

    def __init__(
        self, pod_info: PodInfo, namespace_labels: Mapping[str, str], ns: NamespaceLabels
    ) -> None:
        self.existing_anti: dict[TopologyPair, int] = {}
        self.affinity: dict[TopologyPair, int] = {}
        self.anti: dict[TopologyPair, int] = {}
        self.pod_info = pod_info
        #: The incoming pod's namespace labels (existing pods' terms match against them).
        self.namespace_labels = namespace_labels
        self._ns = ns
        #: filter_rows' tables (`_positive_tables`) per counts dict, made on first use; the
        #: counts they were made from must not change while they are kept (update_with_pod
        #: drops them; a clone starts without).
        self.row_tables: dict[int, dict[str, tuple[Interned[str | None], BoolArray]]] = {}

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.pod_info, self.namespace_labels, self._ns)
        c.existing_anti = dict(self.existing_anti)
        c.affinity = dict(self.affinity)
        c.anti = dict(self.anti)
        return c

    def update_with_pod(self, other: PodInfo, node: core_pb2.Node, multiplier: int) -> None:
        """Account for `other` being added to (+1) or removed from (-1) `node`."""
        self.row_tables = {}
        labels = node.metadata.labels
        incoming = self.pod_info
        for t in other.required_anti_affinity:
            if t.matches(incoming.pod, self.namespace_labels):
                add_count(self.existing_anti, labels, t.topology_key, multiplier)
        if matches_all(incoming.required_affinity, other.pod, self._ns):
            for t in incoming.required_affinity:
                add_count(self.affinity, labels, t.topology_key, multiplier)
        for t in incoming.required_anti_affinity:
            if matches(t, other.pod, self._ns):
                add_count(self.anti, labels, t.topology_key, multiplier)


# ------------------------------------------------------------------------------ PreScore


class PreScoreState:
    """topology key -> value -> summed weight."""

    __slots__ = ("topology_score",)

    def __init__(self) -> None:
        self.topology_score: dict[str, dict[str, int]] = {}

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore

    def add(self, term: AffinityTerm, weight: int, labels: Mapping[str, str]) -> None:
        value = labels.get(term.topology_key)
        if value is None:
            return
        by_value = self.topology_score.setdefault(term.topology_key, {})
        by_value[value] = by_value.get(value, 0) + weight


# ---------------------------------------------------------------------- filter checks


def satisfies_pod_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    pods_exist = True
    for t in s.pod_info.required_affinity:
        value = labels.get(t.topology_key)
        if value is None:
            return False  # every topology key must be on the node
        if s.affinity.get((t.topology_key, value), 0) <= 0:
            pods_exist = False
    if pods_exist:
        return True
    # First pod of a series: nothing in the cluster matches yet, and the pod matches its own
    # terms, so it may go to any node with all the topology keys (checked above).
    pi = s.pod_info
    return not s.affinity and matches_all(pi.required_affinity, pi.pod, s._ns)


def satisfies_pod_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    if not s.anti:
        return True
    for t in s.pod_info.required_anti_affinity:
        value = labels.get(t.topology_key)
        if value is not None and s.anti.get((t.topology_key, value), 0) > 0:
            return False
    return True


def satisfies_existing_pods_anti_affinity(s: PreFilterState, labels: Mapping[str, str]) -> bool:
    if not s.existing_anti:
        return True
    return not any(s.existing_anti.get(pair, 0) > 0 for pair in labels.items())


def _positive_tables(
    s: PreFilterState, which: int, counts: Mapping[TopologyPair, int], cols: NodeColumns
) -> dict[str, tuple[Interned[str | None], BoolArray]]:
    """Per topology key of `counts`: its label column and, per distinct value of the column,
    whether some count of (key, value) is positive. One step per entry of `counts`, once per
    state (filter_rows runs several times a cycle over chunks of rows); a table is remade
    when its column was replaced or renumbered since."""
    tables = s.row_tables.get(which)
    if tables is not None and all(
        cols.label(k) is col and len(col.values) == len(t) for k, (col, t) in tables.items()
    ):
        return tables
    by_key: dict[str, list[str]] = {}
    for (key, value), n in counts.items():
        if n > 0:
            got = by_key.get(key)
            if got is None:
                by_key[key] = [value]
            else:
                got.append(value)
    tables = {}
    for key, values in by_key.items():
        col = cols.label(key)
        tables[key] = (col, col.marked(values))
    s.row_tables[which] = tables
    return tables


def _positive(
    tables: Mapping[str, tuple[Interned[str | None], BoolArray]],
    cols: NodeColumns,
    key: str,
    rows: Int64Array,
) -> BoolArray:
    """Per row: some count of (key, the row's value) is positive (absent label: False)."""
    got = tables.get(key)
    if got is None:
        return np.zeros(len(rows), dtype=np.bool_)
    col, table = got
    return np.asarray(table[col.ids[rows]], dtype=np.bool_)


def filter_rows_mask(
    s: PreFilterState, cols: NodeColumns, rows: Int64Array
) -> npt.NDArray[np.bool_]:
    """filter(...).is_success() per row: the three checks of `filter` over label columns."""
    mask = cols.has_node[rows].copy()
    terms = s.pod_info.required_affinity
    if terms:
        keys_ok = np.ones(len(rows), dtype=np.bool_)
        pods_exist = np.ones(len(rows), dtype=np.bool_)
        affinity = _positive_tables(s, 0, s.affinity, cols)
        for t in terms:
            keys_ok &= cols.label(t.topology_key).present(rows)
            pods_exist &= _positive(affinity, cols, t.topology_key, rows)
        pi = s.pod_info
        first_of_series = not s.affinity and matches_all(pi.required_affinity, pi.pod, s._ns)
        mask &= keys_ok & (pods_exist | first_of_series)
    if s.anti:
        anti = _positive_tables(s, 1, s.anti, cols)
        for t in s.pod_info.required_anti_affinity:
            mask &= ~_positive(anti, cols, t.topology_key, rows)
    if s.existing_anti:
        # Blocked wherever the row's value of some key has a positive count.
        existing = _positive_tables(s, 2, s.existing_anti, cols)
        for key in existing:
            mask &= ~_positive(existing, cols, key, rows)
    return mask
