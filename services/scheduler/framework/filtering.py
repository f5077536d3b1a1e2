"""The Filter extension point's runner (upstream frameworkImpl.RunFilterPlugins): the
profile's Filter plugins, in order, for one node, a list of nodes, or snapshot rows.

Plugins in order, the first rejection wins and names its plugin; a status that is neither
Success nor a rejection is an Error; a plugin that raises is an Error of that plugin. Plugins
whose PreFilter said Skip (`state.skip_filter_plugins`) are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from services.scheduler.framework.interface import FilterPlugin
from services.scheduler.framework.status import Code, Status, plugin_error
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo

#: (plugin name, plugin), in the order they run.
Plugins = Sequence[tuple[str, Any]]


def filter_failure(name: str, st: Status) -> Status:
    if st.is_rejected():
        return st.with_plugin(name)
    return plugin_error(name, f"running {name!r} filter plugin", st)


def run_filter(
    plugins: Plugins, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
) -> Status:
    """Whether the pod fits the node: the first plugin that rejects it decides."""
    skip = state.skip_filter_plugins
    for name, plugin in plugins:
        if name in skip:
            continue
        fp: FilterPlugin = plugin
        try:
            st = fp.filter(state, pod_info, node_info)
        except Exception as e:  # noqa: BLE001
            return Status.as_error(e, plugin=name)
        if not st.is_success():
            return filter_failure(name, st)
    return Status.success()


def run_filter_batch(
    plugins: Plugins, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
) -> tuple[list[Status], bool]:
    """run_filter for many nodes (run_filter_rows over the list, without row methods): one
    Status per node, and whether some node is still feasible."""
    ok, rejected = run_filter_rows(plugins, state, pod_info, None, nodes, _arange(len(nodes)))
    success = Status.success()
    return [rejected.get(i, success) for i in range(len(nodes))], bool(ok.any())


def _arange(n: int) -> np.ndarray:
    return np.arange(n, dtype=np.int64)


def run_filter_rows(
    plugins: Plugins,
    state: CycleState,
    pod_info: PodInfo,
    snapshot: Any,
    infos: Sequence[NodeInfo],
    rows: np.ndarray,
) -> tuple[np.ndarray, dict[int, Status]]:
    """run_filter for the nodes `infos[rows]`, plugin by plugin, each later plugin seeing
    only the rows still feasible. A plugin runs as `filter_rows` when it has one and
    `snapshot` is given (`infos` is then `snapshot.list()`), else as `filter_batch` over
    the NodeInfos, else `filter` per node.

    (ok: bool aligned with `rows`, position in `rows` -> Status of every position not ok:
    the first rejection, naming its plugin, or an Error). A plugin that raises is an
    Error of that plugin for every row it was asked about."""
    n = len(rows)
    ok = np.ones(n, dtype=bool)
    statuses: dict[int, Status] = {}
    alive = _arange(n)
    skip = state.skip_filter_plugins
    for name, plugin in plugins:
        if not len(alive):
            break
        if name in skip:
            continue
        subset = rows if len(alive) == n else rows[alive]
        try:
            passed, rejected = _filter_one(name, plugin, state, pod_info, snapshot, infos, subset)
        except Exception as e:  # noqa: BLE001
            err = Status.as_error(e, plugin=name)
            for i in alive.tolist():
                statuses[i] = err
            ok[alive] = False
            break
        if rejected:
            where = alive.tolist()
            for j, st in rejected.items():
                statuses[where[j]] = st
            ok[alive[~passed]] = False
            alive = alive[passed]
    return ok, statuses


def _filter_one(
    name: str,
    plugin: Any,
    state: CycleState,
    pod_info: PodInfo,
    snapshot: Any,
    infos: Sequence[NodeInfo],
    rows: np.ndarray,
) -> tuple[np.ndarray, dict[int, Status]]:
    """One plugin over `rows`: (passed, aligned with rows; position -> Status of each
    rejected position, already named after the plugin or made an Error)."""
    fp: FilterPlugin = plugin
    by_rows = getattr(plugin, "filter_rows", None) if snapshot is not None else None
    if by_rows is not None:
        mask = by_rows(state, pod_info, snapshot, rows)
        if mask is not None:
            passed = np.asarray(mask, dtype=bool)
            if passed.shape != rows.shape:
                raise RuntimeError(f"filter_rows returned {passed.shape} for {len(rows)} rows")
            rejected: dict[int, Status] = {}
            if passed.all():
                return passed, rejected
            passed = passed.copy()
            for j in np.flatnonzero(~passed).tolist():
                # the per-node filter is the reference: it names the reason (and would
                # keep the node if the two ever disagreed)
                st = fp.filter(state, pod_info, infos[rows[j]])
                if st.code == Code.SUCCESS:
                    passed[j] = True
                else:
                    rejected[j] = filter_failure(name, st)
            return passed, rejected
    nodes = [infos[r] for r in rows.tolist()]
    batch = getattr(plugin, "filter_batch", None)
    if callable(batch):
        results = list(batch(state, pod_info, nodes))
        if len(results) != len(nodes):
            raise RuntimeError(
                f"filter_batch returned {len(results)} statuses for {len(nodes)} nodes"
            )
    else:
        results = [fp.filter(state, pod_info, ni) for ni in nodes]
    rejected = {}
    for j, st in enumerate(results):
        if st.code != Code.SUCCESS:
            rejected[j] = filter_failure(name, st)
    passed = np.ones(len(nodes), dtype=bool)
    if rejected:
        passed[list(rejected)] = False
    return passed, rejected


_EXTENSION_NAMES = {"add_pod": "AddPod", "remove_pod": "RemovePod"}


def run_pre_filter_extension(
    plugins: Plugins,
    op: str,
    state: CycleState,
    pod_info: PodInfo,
    other: PodInfo,
    node_info: NodeInfo,
) -> Status:
    """PreFilterExtensions (upstream RunPreFilterExtensionAddPod/RemovePod): `op` ("add_pod"
    or "remove_pod") of every PreFilter plugin that has it and did not Skip, so its PreFilter
    state sees `other` added to or removed from `node_info`. The first failure is an Error."""
    skip = state.skip_filter_plugins
    for name, plugin in plugins:
        fn = getattr(plugin, op, None)
        if name in skip or not callable(fn):
            continue
        try:
            st = fn(state, pod_info, other, node_info)
        except Exception as e:  # noqa: BLE001
            return Status.as_error(e, plugin=name)
        if not st.is_success():
            what = _EXTENSION_NAMES.get(op, op)
            return plugin_error(name, f"running {what} on PreFilter plugin {name!r}", st)
    return Status.success()
