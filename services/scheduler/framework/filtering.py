"""The Filter extension point's runner (upstream frameworkImpl.RunFilterPlugins): the
profile's Filter plugins, in order, for one node or a batch of nodes.

Plugins in order, the first rejection wins and names its plugin; a status that is neither
Success nor a rejection is an Error; a plugin that raises is an Error of that plugin. Plugins
whose PreFilter said Skip (`state.skip_filter_plugins`) are left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

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
    """run_filter for many nodes: plugin by plugin (filter_batch when a plugin has it),
    each later plugin seeing only the nodes still feasible. One Status per node, and whether
    some node is still feasible."""
    n = len(nodes)
    statuses: list[Status] = [Status.success()] * n
    alive = list(range(n))
    skip = state.skip_filter_plugins
    for name, plugin in plugins:
        if not alive:
            break
        if name in skip:
            continue
        subset = list(nodes) if len(alive) == n else [nodes[i] for i in alive]
        batch = getattr(plugin, "filter_batch", None)
        try:
            if callable(batch):
                results = list(batch(state, pod_info, subset))
                if len(results) != len(subset):
                    raise RuntimeError(
                        f"filter_batch returned {len(results)} statuses for {len(subset)} nodes"
                    )
            else:
                fp: FilterPlugin = plugin
                results = [fp.filter(state, pod_info, ni) for ni in subset]
        except Exception as e:  # noqa: BLE001
            err = Status.as_error(e, plugin=name)
            for i in alive:
                statuses[i] = err
            alive = []
            break
        still: list[int] = []
        for i, st in zip(alive, results, strict=True):
            if st.code == Code.SUCCESS:
                still.append(i)
            else:
                statuses[i] = filter_failure(name, st)
        alive = still
    return statuses, bool(alive)


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
