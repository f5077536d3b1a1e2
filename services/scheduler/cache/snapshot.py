"""The read-only view one scheduling cycle works on (upstream backend/cache/snapshot.go).

`Snapshot` holds the cycle's NodeInfos in zone round-robin order, with per-node resource
arrays for vectorised Filter/Score. It is filled by `Cache.update_snapshot` (cache.py) and
read-only otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from services.api.helpers.resources import MAX_AMOUNT
from services.scheduler.framework.types import NodeInfo

if TYPE_CHECKING:
    from services.scheduler.framework import interface


#: Column order of `Snapshot.alloc` / `Snapshot.requested`.
RESOURCE_COLUMNS = ("milli_cpu", "memory", "ephemeral_storage", "pods")
COL_CPU, COL_MEMORY, COL_EPHEMERAL, COL_PODS = range(4)

Int64Array = npt.NDArray[np.int64]
#: Spelled once here: inside Snapshot, `list` names the method.
NodeInfoList = list[NodeInfo]


class Snapshot:
    """The cluster as one scheduling cycle sees it (implements framework.interface.Snapshot).

    Filled by `Cache.update_snapshot` at the start of each cycle and read-only otherwise:
    the returned lists and arrays are the snapshot's own, callers must not modify them.
    `alloc`, `requested` and `non_zero` have one row per node in `list()` order.
    """

    def __init__(self) -> None:
        self._map: dict[str, NodeInfo] = {}
        self._list: NodeInfoList = []
        #: `_list` as an object array (set with the rows, by _rebuild_arrays): a cycle's
        #: feasible NodeInfos are taken by fancy indexing, not a Python loop over rows.
        self._infos: npt.NDArray[np.object_] = np.empty(0, dtype=object)
        self._with_affinity: NodeInfoList = []
        self._with_required_anti_affinity: NodeInfoList = []
        self._index: dict[str, int] = {}
        self._namespace_labels: dict[str, dict[str, str]] = {}
        #: The newest NodeInfo generation copied in; the cache copies only newer ones.
        self.generation = 0
        #: NodeTree.version the list order was built from (-1: never built).
        self.tree_version = -1
        #: NodeInfos copied by the last update_snapshot (for metrics and tests).
        self.last_copied = 0
        self.alloc: Int64Array = np.zeros((0, 4), dtype=np.int64)
        self.requested: Int64Array = np.zeros((0, 4), dtype=np.int64)
        self.non_zero: Int64Array = np.zeros((0, 2), dtype=np.int64)
        #: NodeInfo.generation of each row when it was last written: per-node columns
        #: derived from NodeInfos (taints, labels) recompute exactly the rows whose
        #: generation differs from the one they were computed at.
        self.row_gen: Int64Array = np.zeros(0, dtype=np.int64)
        #: Bumped whenever rows are renumbered (the list rebuilt): columns kept beside the
        #: snapshot start over when it differs from the one they were built at.
        self.layout_version = 0

    def list(self) -> NodeInfoList:
        """Every node, in zone round-robin order."""
        return self._list

    def infos(self, rows: Int64Array) -> NodeInfoList:
        """The NodeInfos of `rows`, in their order (`[list()[r] for r in rows]`)."""
        if len(self._infos) != len(self._list):  # a list set without _rebuild_arrays
            self._set_infos()
        out: NodeInfoList = self._infos[rows].tolist()
        return out

    def _set_infos(self) -> None:
        infos = np.empty(len(self._list), dtype=object)
        infos[:] = self._list
        self._infos = infos

    def get(self, name: str) -> NodeInfo | None:
        ni = self._map.get(name)
        return ni if ni is not None and ni.node is not None else None

    def have_pods_with_affinity(self) -> NodeInfoList:
        return self._with_affinity

    def have_pods_with_required_anti_affinity(self) -> NodeInfoList:
        return self._with_required_anti_affinity

    def num_nodes(self) -> int:
        return len(self._list)

    def index_of(self, name: str) -> int:
        """The row of `name` in the arrays and its position in `list()`; KeyError if absent."""
        return self._index[name]

    def rows_of(self, names: Iterable[str]) -> Int64Array:
        """The rows of those of `names` that are listed, ascending (i.e. in `list()` order)."""
        index = self._index
        rows = [r for name in names if (r := index.get(name)) is not None]
        rows.sort()
        return np.array(rows, dtype=np.int64)

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The namespace's labels, or None when the Namespace informer has not seen it."""
        return self._namespace_labels.get(namespace)

    def set_namespace_labels(self, namespace: str, labels: Mapping[str, str]) -> None:
        self._namespace_labels[namespace] = dict(labels)

    def remove_namespace(self, namespace: str) -> None:
        self._namespace_labels.pop(namespace, None)

    # -- maintained by Cache.update_snapshot --------------------------------------------

    # Rows hold sums over a node's pods, which may pass int64 when pods were bound with
    # requests validation would refuse; they are capped at MAX_AMOUNT (the node is full
    # either way) so that writing a row never raises.

    def _write_row(self, i: int, ni: NodeInfo) -> None:
        self.alloc[i], self.requested[i], self.non_zero[i] = _rows(ni)
        self.row_gen[i] = ni.generation

    def _rebuild_arrays(self) -> None:
        """Rows renumbered for a new `list()` order: the row of a node whose NodeInfo
        generation is the one its old row was written at is moved, not recomputed."""
        infos = self._list
        n = len(infos)
        old_index, old_gen = self._index, self.row_gen
        old_alloc, old_requested, old_non_zero = self.alloc, self.requested, self.non_zero
        self._index = {ni.name: i for i, ni in enumerate(infos)}
        gens = np.fromiter((ni.generation for ni in infos), dtype=np.int64, count=n)
        src = np.fromiter((old_index.get(ni.name, -1) for ni in infos), dtype=np.int64, count=n)
        reuse = src >= 0
        reuse[reuse] = old_gen[src[reuse]] == gens[reuse]
        self.alloc = np.zeros((n, 4), dtype=np.int64)
        self.requested = np.zeros((n, 4), dtype=np.int64)
        self.non_zero = np.zeros((n, 2), dtype=np.int64)
        kept = src[reuse]
        self.alloc[reuse] = old_alloc[kept]
        self.requested[reuse] = old_requested[kept]
        self.non_zero[reuse] = old_non_zero[kept]
        for i in np.flatnonzero(~reuse).tolist():
            self.alloc[i], self.requested[i], self.non_zero[i] = _rows(infos[i])
        self.row_gen = gens
        self._set_infos()
        self.layout_version += 1

    def _rebuild_affinity_lists(self) -> None:
        self._with_affinity = [ni for ni in self._list if ni.pods_with_affinity]
        self._with_required_anti_affinity = [
            ni for ni in self._list if ni.pods_with_required_anti_affinity
        ]


def _rows(ni: NodeInfo) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A node's (alloc, requested, non_zero) array rows, each amount capped at MAX_AMOUNT."""
    a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
    m = MAX_AMOUNT
    return (
        (
            min(a.milli_cpu, m),
            min(a.memory, m),
            min(a.ephemeral_storage, m),
            min(a.allowed_pod_number, m),
        ),
        (min(r.milli_cpu, m), min(r.memory, m), min(r.ephemeral_storage, m), len(ni.pods)),
        (min(nz.milli_cpu, m), min(nz.memory, m)),
    )


if TYPE_CHECKING:
    # Static check only: Snapshot satisfies the framework's protocol.
    _protocol_check: interface.Snapshot = Snapshot()
