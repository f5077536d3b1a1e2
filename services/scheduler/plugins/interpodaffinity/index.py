"""The existing pods as InterPodAffinity's PreFilter and PreScore read them, digested once.

Why it exists: both extension points ask, per scheduling cycle, which existing pods match the
incoming pod's terms and whose terms match the incoming pod, then count them per topology
domain. Walking every pod of the cluster for that (upstream does it in 16 goroutines) is
O(pods) Python per cycle: 3,000 pods cost ~45 ms a pod at SchedulingPodAntiAffinity's size.
Pods share few distinct label sets and fewer distinct terms, so this index keeps, per snapshot:

- `label_sets`: (namespace, labels) -> the rows holding pods with exactly those, and how many
  per row. The incoming pod's term is evaluated once per distinct label set.
- `anti`: existing pods' required anti-affinity terms -> rows holding them, with counts (from
  `pods_with_required_anti_affinity`, as the reference walk reads them);
- `req_aff` / `pref_aff` / `pref_anti`: the same for the required affinity, preferred affinity
  and preferred anti-affinity terms of `pods_with_affinity` (PreScore's symmetric side). Each
  distinct term is matched against the incoming pod once.

A term is its frozen `AffinityTerm` (selector, namespaces, namespaceSelector, topology key,
weight): equal terms match the same pods, so counting them together changes no sum.

Upkeep follows `cache/columns.py`: rows are `snapshot.list()` rows; a row whose `row_gen` differs
from the one it was digested at is digested again from its NodeInfo (O(pods on that node)) and
its contribution replaced; a changed `layout_version` carries digests of kept NodeInfos (by
identity) to their new rows and rebuilds the aggregates from the digests. Invariant: every
aggregate equals the sum of the current rows' digests, and holds no empty entry.
"""

from __future__ import annotations

import weakref
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from services.scheduler.cache.columns import NodeColumns
from services.scheduler.framework.types import AffinityTerm, NodeInfo, PodInfo
from services.scheduler.plugins.interpodaffinity.state import NamespaceLabels, TopologyPair

#: (namespace, frozenset of label items): pods with equal keys match every term alike.
LabelSetKey = tuple[str, frozenset[tuple[str, str]]]
#: row -> how many pods of the row contribute the entry (always > 0).
RowCounts = dict[int, int]


class LabelSet:
    """One distinct (namespace, labels) of existing pods, and where such pods are."""

    __slots__ = ("namespace", "labels", "rows")

    def __init__(self, namespace: str, labels: dict[str, str]) -> None:
        self.namespace = namespace
        self.labels = labels
        self.rows: RowCounts = {}


class _Digest:
    """One row's pods: counts per label set and per term of each kind."""

    __slots__ = ("label_sets", "terms")

    def __init__(self) -> None:
        self.label_sets: dict[LabelSetKey, tuple[int, str, dict[str, str]]] = {}
        #: Per kind (ANTI, REQ_AFF, PREF_AFF, PREF_ANTI): term -> count.
        self.terms: tuple[dict[AffinityTerm, int], ...] = ({}, {}, {}, {})


ANTI, REQ_AFF, PREF_AFF, PREF_ANTI = range(4)
_EMPTY = _Digest()


def _count(d: dict[Any, int], key: Hashable) -> None:
    d[key] = d.get(key, 0) + 1


def digest(ni: NodeInfo) -> _Digest:
    """What the reference walks read from `ni` (nothing for a row without a Node)."""
    if ni.node is None or not ni.pods:
        return _EMPTY
    out = _Digest()
    sets = out.label_sets
    for p in ni.pods:
        md = p.pod.metadata
        labels = dict(md.labels)
        key = (md.namespace, frozenset(labels.items()))
        got = sets.get(key)
        sets[key] = (1, md.namespace, labels) if got is None else (got[0] + 1, got[1], got[2])
    anti, req_aff, pref_aff, pref_anti = out.terms
    for p in ni.pods_with_required_anti_affinity:
        for t in p.required_anti_affinity:
            _count(anti, t)
    for p in ni.pods_with_affinity:
        for t in p.required_affinity:
            _count(req_aff, t)
        for t in p.preferred_affinity:
            _count(pref_aff, t)
        for t in p.preferred_anti_affinity:
            _count(pref_anti, t)
    return out


class AffinityIndex:
    """The aggregates of one Snapshot; `index_of` keeps them current."""

    def __init__(self) -> None:
        self.layout_version = -1
        self.row_gen: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._infos: list[NodeInfo] = []
        self._digests: list[_Digest] = []
        self.label_sets: dict[LabelSetKey, LabelSet] = {}
        #: Per kind (ANTI, REQ_AFF, PREF_AFF, PREF_ANTI): term -> rows holding it.
        self.terms: tuple[dict[AffinityTerm, RowCounts], ...] = ({}, {}, {}, {})
        #: Rows digested by the last refresh (for tests).
        self.last_refreshed = 0
        #: RowValues' lists: key -> (label column, its version, value per row).
        self.row_values: dict[str, tuple[Any, int, list[str | None]]] = {}

    def refresh(self, infos: list[NodeInfo], row_gen: npt.NDArray[np.int64], layout: int) -> None:
        if layout != self.layout_version or len(row_gen) != len(self.row_gen):
            self._relayout(infos, layout)
        self._infos = infos
        changed = np.flatnonzero(self.row_gen != row_gen)
        self.last_refreshed = len(changed)
        for i in changed.tolist():
            self._set_row(i, digest(infos[i]))
        self.row_gen[changed] = row_gen[changed]

    def _relayout(self, infos: list[NodeInfo], layout: int) -> None:
        """Rows renumbered: kept NodeInfos keep their digest (and generation) at their new
        row; new rows get generation -1 (never a NodeInfo's), so `refresh` digests them."""
        old = {id(ni): i for i, ni in enumerate(self._infos)}
        src = [old.get(id(ni), -1) for ni in infos]
        self._digests = [self._digests[j] if j >= 0 else _EMPTY for j in src]
        self.row_gen = np.array(
            [int(self.row_gen[j]) if j >= 0 else -1 for j in src], dtype=np.int64
        )
        self.label_sets = {}
        self.terms = ({}, {}, {}, {})
        for i, d in enumerate(self._digests):
            if d is not _EMPTY:
                self._add_row(i, d)
        self.layout_version = layout

    def _set_row(self, i: int, new: _Digest) -> None:
        old = self._digests[i]
        if old is not _EMPTY:
            for key in old.label_sets:
                ls = self.label_sets[key]
                del ls.rows[i]
                if not ls.rows:
                    del self.label_sets[key]
            for kind, counts in enumerate(old.terms):
                agg = self.terms[kind]
                for t in counts:
                    rows = agg[t]
                    del rows[i]
                    if not rows:
                        del agg[t]
        self._digests[i] = new
        if new is not _EMPTY:
            self._add_row(i, new)

    def _add_row(self, i: int, d: _Digest) -> None:
        for key, (n, namespace, labels) in d.label_sets.items():
            ls = self.label_sets.get(key)
            if ls is None:
                ls = self.label_sets[key] = LabelSet(namespace, labels)
            ls.rows[i] = n
        for kind, counts in enumerate(d.terms):
            agg = self.terms[kind]
            for t, n in counts.items():
                rows = agg.get(t)
                if rows is None:
                    rows = agg[t] = {}
                rows[i] = n


_registry: weakref.WeakKeyDictionary[Any, AffinityIndex] = weakref.WeakKeyDictionary()


def index_of(snapshot: Any) -> AffinityIndex | None:
    """The current index of `snapshot`, or None when it is not a Snapshot with row
    generations (a test's fake): the plugin then walks every pod (the reference path)."""
    row_gen = getattr(snapshot, "row_gen", None)
    if row_gen is None:
        return None
    idx = _registry.get(snapshot)
    if idx is None:
        idx = _registry[snapshot] = AffinityIndex()
    idx.refresh(snapshot.list(), row_gen, snapshot.layout_version)
    return idx


# ------------------------------------------------------------------ per-cycle queries


class RowValues:
    """A topology key's value per row (None: the node lacks the label), as lists (indexing a
    numpy array per row costs more than the dict work it feeds). Kept across cycles in
    `cache` while the label column is the same object at the same version (its ids are
    then unchanged)."""

    __slots__ = ("_cols", "_cache")

    def __init__(self, cols: NodeColumns, cache: dict[str, tuple[Any, int, list[str | None]]]):
        self._cols = cols
        self._cache = cache

    def __call__(self, key: str) -> list[str | None]:
        col = self._cols.label(key)
        got = self._cache.get(key)
        if got is not None and got[0] is col and got[1] == col.version:
            return got[2]
        values = col.values
        out = [values[i] for i in col.ids.tolist()]
        if len(self._cache) >= 64:
            self._cache.clear()
        self._cache[key] = (col, col.version, out)
        return out


def _matches_set(t: AffinityTerm, ls: LabelSet, ns: NamespaceLabels) -> bool:
    """t.matches(pod) for any pod of the label set (what `_matches` does per pod)."""
    if t.namespace_selector is None:
        if ls.namespace not in t.namespaces:
            return False
    elif not t.matches_namespace(ls.namespace, ns(ls.namespace)):
        return False
    return t.selector.matches(ls.labels)


def _add_rows(
    counts: dict[TopologyPair, int], key: str, rows: RowCounts, values: RowValues
) -> None:
    """counts[(key, value of row)] += n for every row (rows lacking the key: nothing)."""
    vals = values(key)
    get = counts.get
    for r, n in rows.items():
        v = vals[r]
        if v is not None:
            pair = (key, v)
            counts[pair] = get(pair, 0) + n


def fill_pre_filter(
    idx: AffinityIndex,
    values: RowValues,
    pod_info: PodInfo,
    incoming_ns: Mapping[str, str],
    ns: NamespaceLabels,
    existing_anti: dict[TopologyPair, int],
    affinity: dict[TopologyPair, int],
    anti: dict[TopologyPair, int],
) -> None:
    """PreFilter's three counts, as the reference walk over every pod makes them."""
    pod = pod_info.pod
    for t, rows in idx.terms[ANTI].items():
        if t.matches(pod, incoming_ns):
            _add_rows(existing_anti, t.topology_key, rows, values)
    aff_terms, anti_terms = pod_info.required_affinity, pod_info.required_anti_affinity
    if not aff_terms and not anti_terms:
        return
    for ls in idx.label_sets.values():
        if aff_terms and all(_matches_set(t, ls, ns) for t in aff_terms):
            for t in aff_terms:
                _add_rows(affinity, t.topology_key, ls.rows, values)
        for t in anti_terms:
            if _matches_set(t, ls, ns):
                _add_rows(anti, t.topology_key, ls.rows, values)


def _score_rows(
    scores: dict[str, dict[str, int]], key: str, weight: int, rows: RowCounts, values: RowValues
) -> None:
    """scores[key][value of row] += weight * n; the key's map is made only when some row
    has the key (the reference adds nothing for a node without it)."""
    vals = values(key)
    by_value = scores.get(key)
    for r, n in rows.items():
        v = vals[r]
        if v is not None:
            if by_value is None:
                by_value = scores[key] = {}
            by_value[v] = by_value.get(v, 0) + weight * n


def fill_pre_score(
    idx: AffinityIndex,
    values: RowValues,
    pod_info: PodInfo,
    incoming_ns: Mapping[str, str],
    ns: NamespaceLabels,
    hard_weight: int,
    with_incoming_terms: bool,
    scores: dict[str, dict[str, int]],
) -> None:
    """PreScore's topology scores, as the reference walk makes them: the incoming pod's
    preferred terms against every pod (`with_incoming_terms`), and existing pods' terms
    against the incoming pod."""
    if with_incoming_terms:
        pref_aff: Sequence[AffinityTerm] = pod_info.preferred_affinity
        pref_anti: Sequence[AffinityTerm] = pod_info.preferred_anti_affinity
        for ls in idx.label_sets.values():
            for t in pref_aff:
                if _matches_set(t, ls, ns):
                    _score_rows(scores, t.topology_key, t.weight, ls.rows, values)
            for t in pref_anti:
                if _matches_set(t, ls, ns):
                    _score_rows(scores, t.topology_key, -t.weight, ls.rows, values)
    incoming = pod_info.pod
    if hard_weight > 0:
        for t, rows in idx.terms[REQ_AFF].items():
            if t.matches(incoming, incoming_ns):
                _score_rows(scores, t.topology_key, hard_weight, rows, values)
    for t, rows in idx.terms[PREF_AFF].items():
        if t.matches(incoming, incoming_ns):
            _score_rows(scores, t.topology_key, t.weight, rows, values)
    for t, rows in idx.terms[PREF_ANTI].items():
        if t.matches(incoming, incoming_ns):
            _score_rows(scores, t.topology_key, -t.weight, rows, values)
