"""Per-node derived columns kept beside a Snapshot, for the plugins' row forms.

Why it exists: a Filter or Score that asks every node "does this pod tolerate your taints?"
makes one Python call per node per pod (5,000 nodes × 10,000 pods). Nodes share few distinct
taint sets, label values and port sets, so each column holds, per row of `snapshot.list()`, an
int32 id into a list of distinct values; a plugin evaluates the pod against each distinct value
once and gathers the answers with numpy (`table[column.ids[rows]]`).

Upkeep (`columns_of(snapshot)`, called by every row method):
- one `NodeColumns` per Snapshot object (a weak-keyed registry: the snapshot owns nothing new);
- `snapshot.layout_version` changed (rows renumbered, e.g. a node added): each kept row's
  values move to its new row (snapshot NodeInfos keep their identity), O(nodes) numpy and
  dict lookups; only new rows are derived afresh (everything when nothing is kept);
- otherwise only rows whose `snapshot.row_gen` differs from the generation they were derived
  at are revisited, O(changed) Python plus one vectorised compare. A bind changes a row's
  generation without touching its Node; Node-derived values (taints, labels, unschedulable)
  are recomputed only when the row's Node object is a different object — Node protos in the
  cache are never modified in place (an update replaces the object: NodeInfo.set_node).
- interned values are never renumbered between rebuilds; values no row uses any more are
  dropped by rebuilding the column once they outnumber the live ones.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any, Generic, TypeVar

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import NO_EXECUTE, NO_SCHEDULE, PREFER_NO_SCHEDULE
from services.scheduler.framework.types import NodeInfo

V = TypeVar("V")
IdArray = npt.NDArray[np.int32]
BoolArray = npt.NDArray[np.bool_]
#: A node's taints as interned: (key, value, effect) per taint, in node order.
TaintKey = tuple[tuple[str, str, str], ...]
Port = tuple[str, str, int]

#: More label keys than this tracked at once: start the label columns over (a bound on memory
#: when pods ask for many different keys; any key is rebuilt on its next use).
MAX_LABEL_COLUMNS = 128
#: More per-node pod counts than this cached at once: start them over.
MAX_POD_COUNTS = 64
#: Dead values tolerated beyond the live ones before a column is rebuilt.
_SLACK = 32


class Interned(Generic[V]):
    """One derived value per row, interned: `ids[row]` indexes `values`.

    `values[i]` is the value first seen for key i; `rows[i]` counts the rows holding it (0:
    dead, kept until the column is compacted, so ids stay stable between compactions).
    """

    __slots__ = ("ids", "values", "rows", "live", "version", "_index")

    def __init__(self, keyed: list[tuple[Hashable, V]]) -> None:
        self.values: list[V] = []
        self.rows: list[int] = []
        #: How many values some row holds (rows[i] > 0), kept as rows change.
        self.live = 0
        #: Bumped whenever some row's id changes (answers derived from the column go stale).
        self.version = 0
        self._index: dict[Hashable, int] = {}
        ids = [self._intern(k, v) for k, v in keyed]
        self.ids: IdArray = np.array(ids, dtype=np.int32)

    def _intern(self, key: Hashable, value: V) -> int:
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.values)
            self.values.append(value)
            self.rows.append(0)
        if not self.rows[i]:
            self.live += 1
        self.rows[i] += 1
        return i

    def id_of(self, key: Hashable) -> int | None:
        """The id of `key`'s value, or None when no row has ever held it."""
        return self._index.get(key)

    def assign(self, row: int, key: Hashable, value: V) -> None:
        old = int(self.ids[row])
        new = self._intern(key, value)
        self.rows[old] -= 1
        if not self.rows[old]:
            self.live -= 1
        if new != old:
            self.ids[row] = new
            self.version += 1

    def renumber(self, src: npt.NDArray[np.int64]) -> None:
        """Row i now holds what row src[i] held (rows are recounted)."""
        self.ids = self.ids[src]
        self.version += 1
        counts = np.bincount(self.ids, minlength=len(self.values))
        self.rows = counts.tolist()
        self.live = int(np.count_nonzero(counts))

    def present(self, rows: npt.NDArray[np.int64]) -> BoolArray:
        """Per row: its value is not None (for a label column: the node has the label)."""
        none_id = self._index.get(None)
        if none_id is None:
            return np.ones(len(rows), dtype=np.bool_)
        return np.asarray(self.ids[rows] != none_id, dtype=np.bool_)

    def counts_table(self, counts: Mapping[Any, int]) -> npt.NDArray[np.int64]:
        """counts.get(value, 0) per distinct value, as an array indexed by id: one step per
        entry of `counts` (values no row holds are left out)."""
        table = np.zeros(len(self.values), dtype=np.int64)
        index = self._index
        for value, n in counts.items():
            i = index.get(value)
            if i is not None:
                table[i] = n
        return table

    def marked(self, keys: Iterable[Hashable]) -> BoolArray:
        """True at the id of each of `keys`, as an array indexed by id: one dict lookup per
        key (keys no row has held are left out)."""
        table = np.zeros(len(self.values), dtype=np.bool_)
        get = self._index.get
        ids = [i for k in keys if (i := get(k)) is not None]
        if ids:
            table[ids] = True
        return table

    def needs_compaction(self) -> bool:
        return len(self.values) - self.live > self.live + _SLACK

    def table(self, fn: Callable[[V], Any], dtype: Any = np.bool_) -> npt.NDArray[Any]:
        """fn over every distinct value (dead ones included: they are never gathered, but
        keep the table aligned with the ids), as an array indexed by id."""
        return np.fromiter((fn(v) for v in self.values), dtype=dtype, count=len(self.values))


def taint_key(node: core_pb2.Node | None) -> TaintKey | None:
    if node is None:
        return None
    taints = node.spec.taints
    if not taints:
        return ()
    return tuple((t.key, t.value, t.effect) for t in taints)


class TaintSet:
    """A distinct taint list (the protos of the first node seen with it) and what its effects
    say at once."""

    __slots__ = ("taints", "has_prefer", "has_hard")

    def __init__(self, node: core_pb2.Node | None) -> None:
        #: None: the row has no Node.
        self.taints: tuple[core_pb2.Taint, ...] | None = (
            None if node is None else tuple(node.spec.taints)
        )
        effects = {t.effect for t in self.taints or ()}
        self.has_prefer = PREFER_NO_SCHEDULE in effects
        self.has_hard = NO_SCHEDULE in effects or NO_EXECUTE in effects


#: Stands for "no Node seen yet" in a row's remembered Node (None means the row has none).
_UNSEEN: Any = object()


class NodeColumns:
    """The columns of one Snapshot; `columns_of` keeps them current.

    - `taints`: the node's taint list (`TaintSet`);
    - `unschedulable`: `spec.unschedulable` per row (False for a row without a Node);
    - `has_node`: whether the row has a Node (a snapshot's rows always do; kept so row forms
      can decline honestly rather than assume);
    - `ports`: the node's used host ports (frozenset), from its pods;
    - `pod_count`: how many pods the node holds;
    - `label(key)`: one label's value per row (None: absent), built on first use.
    """

    def __init__(self) -> None:
        self.layout_version = -1
        self.row_gen: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self._nodes: list[Any] = []
        self.taints: Interned[TaintSet] = Interned([])
        self.ports: Interned[frozenset[Port]] = Interned([])
        self.unschedulable: BoolArray = np.zeros(0, dtype=np.bool_)
        self.has_node: BoolArray = np.zeros(0, dtype=np.bool_)
        self.pod_count: npt.NDArray[np.int64] = np.zeros(0, dtype=np.int64)
        self.all_have_nodes = True
        self._labels: dict[str, Interned[str | None]] = {}
        #: pod_counts' cache: key -> (row generations counted at, counts).
        self._pod_counts: dict[Hashable, tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]] = {}
        self._infos: list[NodeInfo] = []
        #: has_prefer_no_schedule's answer, for (taints column, its version).
        self._prefer: tuple[Any, int, bool] = (None, -1, False)
        #: Rows revisited by the last refresh (for tests and metrics).
        self.last_refreshed = 0

    # ----------------------------------------------------------------- upkeep
    def refresh(self, infos: list[NodeInfo], row_gen: npt.NDArray[np.int64], layout: int) -> None:
        relaid = layout != self.layout_version or len(row_gen) != len(self.row_gen)
        if relaid and not self._relayout(infos, layout):
            self._rebuild(infos, row_gen, layout)
            return
        self._infos = infos
        changed = np.flatnonzero(self.row_gen != row_gen)
        self.last_refreshed = len(changed)
        if not len(changed):
            return
        for i in changed.tolist():
            ni = infos[i]
            ports = frozenset(ni.used_ports)
            self.ports.assign(i, ports, ports)
            self.pod_count[i] = len(ni.pods)
            node = ni.node
            if node is self._nodes[i]:
                continue
            self._nodes[i] = node
            self.taints.assign(i, taint_key(node), TaintSet(node))
            self.unschedulable[i] = node is not None and node.spec.unschedulable
            self.has_node[i] = node is not None
            labels = node.metadata.labels if node is not None else {}
            for key, col in self._labels.items():
                value = labels.get(key)
                col.assign(i, value, value)
        self.all_have_nodes = bool(self.has_node.all())
        self.row_gen[changed] = row_gen[changed]
        if self.taints.needs_compaction():
            self.taints = _taint_column(self._nodes)
        if self.ports.needs_compaction():
            self.ports = _port_column(infos)
        for key in [k for k, c in self._labels.items() if c.needs_compaction()]:
            self._labels[key] = _label_column(self._nodes, key)

    def _relayout(self, infos: list[NodeInfo], layout: int) -> bool:
        """Rows renumbered: carry each kept NodeInfo's values to its new row (snapshot
        NodeInfos keep their identity) and mark new rows changed, so that the refresh
        recomputes only those. False when nothing can be kept (rebuild instead)."""
        old = {id(ni): i for i, ni in enumerate(self._infos)}
        m = np.fromiter((old.get(id(ni), -1) for ni in infos), dtype=np.int64, count=len(infos))
        kept = m >= 0
        if not kept.any():
            return False
        src = np.where(kept, m, int(m[kept][0]))
        # -1 is never a generation: rows not kept count as changed.
        self.row_gen = np.where(kept, self.row_gen[src], -1)
        self._nodes = [self._nodes[j] if j >= 0 else _UNSEEN for j in m.tolist()]
        self.taints.renumber(src)
        self.ports.renumber(src)
        for col in self._labels.values():
            col.renumber(src)
        self.unschedulable = self.unschedulable[src]
        self.has_node = self.has_node[src]
        self.pod_count = self.pod_count[src]
        self._pod_counts = {}
        self.layout_version = layout
        return True

    def _rebuild(self, infos: list[NodeInfo], row_gen: npt.NDArray[np.int64], layout: int) -> None:
        self._infos = infos
        self._nodes = [ni.node for ni in infos]
        self.taints = _taint_column(self._nodes)
        self.ports = _port_column(infos)
        self.unschedulable = np.fromiter(
            (n is not None and n.spec.unschedulable for n in self._nodes),
            dtype=np.bool_,
            count=len(infos),
        )
        self.has_node = np.fromiter(
            (n is not None for n in self._nodes), dtype=np.bool_, count=len(infos)
        )
        self.pod_count = np.fromiter(
            (len(ni.pods) for ni in infos), dtype=np.int64, count=len(infos)
        )
        self.all_have_nodes = bool(self.has_node.all())
        self._labels = {}
        self._pod_counts = {}
        self.row_gen = row_gen.copy()
        self.layout_version = layout
        self.last_refreshed = len(infos)

    # ----------------------------------------------------------------- reading
    def label(self, key: str) -> Interned[str | None]:
        """The column of label `key` (value None where the node lacks it)."""
        col = self._labels.get(key)
        if col is None:
            if len(self._labels) >= MAX_LABEL_COLUMNS:
                self._labels = {}
            col = self._labels[key] = _label_column(self._nodes, key)
        return col

    def pod_counts(self, key: Hashable, counts: Callable[[NodeInfo], int]) -> npt.NDArray[np.int64]:
        """counts(node_info) for every row, cached under `key` (which must determine
        `counts`): rows are recounted only when their generation changed since (a bind
        recounts one node, not every pod of the cluster). The array is the cache's own:
        read it, do not modify it."""
        got = self._pod_counts.get(key)
        if got is None:
            if len(self._pod_counts) >= MAX_POD_COUNTS:
                self._pod_counts = {}
            out = np.zeros(len(self._infos), dtype=np.int64)
            for i in np.flatnonzero(self.pod_count).tolist():
                out[i] = counts(self._infos[i])
            self._pod_counts[key] = (self.row_gen.copy(), out)
            return out
        gen, out = got
        changed = np.flatnonzero(gen != self.row_gen)
        for i in changed.tolist():
            out[i] = counts(self._infos[i])
        gen[changed] = self.row_gen[changed]
        return out

    def node_info(self, row: int) -> NodeInfo:
        return self._infos[row]

    def has_prefer_no_schedule(self) -> bool:
        """Whether some row's Node has a PreferNoSchedule taint."""
        t = self.taints
        of, version, found = self._prefer
        if of is not t or version != t.version:
            found = any(n and v.has_prefer for v, n in zip(t.values, t.rows, strict=True))
            self._prefer = (t, t.version, found)
        return found


def _taint_column(nodes: list[core_pb2.Node | None]) -> Interned[TaintSet]:
    keyed: list[tuple[Hashable, TaintSet]] = []
    seen: dict[Hashable, TaintSet] = {}
    for n in nodes:
        k = taint_key(n)
        v = seen.get(k)
        if v is None:
            v = seen[k] = TaintSet(n)
        keyed.append((k, v))
    return Interned(keyed)


def _port_column(infos: list[NodeInfo]) -> Interned[frozenset[Port]]:
    keyed: list[tuple[Hashable, frozenset[Port]]] = []
    for ni in infos:
        ports = frozenset(ni.used_ports)
        keyed.append((ports, ports))
    return Interned(keyed)


def _label_column(nodes: list[core_pb2.Node | None], key: str) -> Interned[str | None]:
    keyed: list[tuple[Hashable, str | None]] = []
    for n in nodes:
        value = n.metadata.labels.get(key) if n is not None else None
        keyed.append((value, value))
    return Interned(keyed)


_registry: weakref.WeakKeyDictionary[Any, NodeColumns] = weakref.WeakKeyDictionary()


def columns_of(snapshot: Any) -> NodeColumns | None:
    """The current columns of `snapshot`, or None when it is not a Snapshot with row
    generations (a test's fake): the caller then falls back to its per-node form."""
    row_gen = getattr(snapshot, "row_gen", None)
    if row_gen is None:
        return None
    cols = _registry.get(snapshot)
    if cols is None:
        cols = _registry[snapshot] = NodeColumns()
    cols.refresh(snapshot.list(), row_gen, snapshot.layout_version)
    return cols
