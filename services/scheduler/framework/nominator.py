"""Nominated pods (upstream's nominator in the scheduling queue, and the two-pass filter of
RunFilterPluginsWithNominatedPods).

A pod that preempted is nominated to a node (status.nominatedNodeName) while its victims
terminate. Until it is bound, it counts on that node for every pod of equal or lower
priority: such a pod passes a node only if it fits both with those nominated pods added
(PreFilter AddPod extensions on a cloned CycleState/NodeInfo) and without them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.equivalence import NODE_LOCAL_FILTERS, signature
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo


def pod_priority(pod: core_pb2.Pod) -> int:
    """spec.priority, 0 when unset (upstream corev1helpers.PodPriority)."""
    return pod.spec.priority if pod.spec.HasField("priority") else 0


class Nominator:
    """Node name -> the pods nominated to it (by uid), and the reverse."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, PodInfo]] = {}
        self._node_of: dict[str, str] = {}
        #: The first pass's verdicts, reused across attempts (NominatedVerdicts).
        self.verdicts = NominatedVerdicts()

    def filter_with_nominated(
        self, fwk: FilterRunner, state: CycleState, pi: PodInfo, ni: NodeInfo
    ) -> Status:
        """filter_with_nominated_pods_only with the pods nominated to `ni` (Success when
        none count), its verdict reused while nothing it depends on changed."""
        nominated = self._by_node.get(ni.name)
        if not nominated:
            return Status.success()
        counting = nominated_pods_to_add(pi, list(nominated.values()))
        if not counting:
            return Status.success()
        cacheable = self.verdicts.begin(fwk, state, pi)
        if cacheable:
            st = self.verdicts.get(ni, counting)
            if st is not None:
                return st
        st = _filter_with(fwk, state, pi, ni, counting)
        if cacheable:
            self.verdicts.put(ni, counting, st)
        return st

    def add(self, pi: PodInfo, node: str) -> None:
        """Nominate `pi` to `node` (replacing an earlier nomination; "" only removes it)."""
        self.delete(pi.uid)
        if not node:
            return
        self._by_node.setdefault(node, {})[pi.uid] = pi
        self._node_of[pi.uid] = node

    def delete(self, uid: str) -> None:
        node = self._node_of.pop(uid, None)
        if node is None:
            return
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(uid, None)
            if not pods:
                del self._by_node[node]

    def pod_seen(self, old: core_pb2.Pod | None, pod: core_pb2.Pod) -> None:
        """The informer's view of an unbound pod: its status.nominatedNodeName wins when set;
        cleared by someone else (it had one and now has none), the nomination goes too."""
        if pod.spec.node_name or pod.metadata.deletion_timestamp:
            self.delete(pod.metadata.uid)
            return
        nominated = pod.status.nominated_node_name
        if nominated:
            self.add(PodInfo(pod), nominated)
        elif old is not None and old.status.nominated_node_name:
            self.delete(pod.metadata.uid)

    def node_of(self, uid: str) -> str:
        return self._node_of.get(uid, "")

    def pods_on(self, node: str) -> list[PodInfo]:
        return list(self._by_node.get(node, {}).values())

    def __len__(self) -> int:
        return len(self._node_of)


class FilterRunner(Protocol):
    """What the two-pass filter needs of a Framework."""

    def run_filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status: ...

    def run_pre_filter_extension(
        self, op: str, state: CycleState, pod_info: PodInfo, other: PodInfo, node_info: NodeInfo
    ) -> Status: ...


def nominated_pods_to_add(pi: PodInfo, nominated: Sequence[PodInfo]) -> list[PodInfo]:
    """Those of `nominated` that count for `pi`: other pods of equal or higher priority."""
    prio = pod_priority(pi.pod)
    return [p for p in nominated if p.uid != pi.uid and pod_priority(p.pod) >= prio]


def filter_with_nominated_pods_only(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    node_info: NodeInfo,
    nominated: Sequence[PodInfo],
) -> Status:
    """The first pass: Filter with the counting nominated pods added (Success when none)."""
    pods = nominated_pods_to_add(pi, nominated)
    if not pods:
        return Status.success()
    return _filter_with(fwk, state, pi, node_info, pods)


def _filter_with(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    node_info: NodeInfo,
    pods: Sequence[PodInfo],
) -> Status:
    state2, node2 = state.clone(), node_info.clone()
    for p in pods:
        node2.add_pod(p)
        st = fwk.run_pre_filter_extension("add_pod", state2, pi, p, node2)
        if not st.is_success():
            return st
    return fwk.run_filter(state2, pi, node2)


def run_filter_with_nominated_pods(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    node_info: NodeInfo,
    nominated: Sequence[PodInfo],
) -> Status:
    """Both passes (upstream RunFilterPluginsWithNominatedPods): with the nominated pods that
    count, then without them; the first failure decides."""
    st = filter_with_nominated_pods_only(fwk, state, pi, node_info, nominated)
    if not st.is_success():
        return st
    return fwk.run_filter(state, pi, node_info)


def active_extensions(fwk: Any, state: CycleState) -> bool:
    """Whether some PreFilter plugin with an AddPod/RemovePod extension runs for the pod
    (True when the framework does not say)."""
    pre = getattr(fwk, "pre_filter_plugins", None)
    if pre is None:
        return True
    skip = state.skip_filter_plugins
    return any(
        n not in skip
        and (callable(getattr(p, "add_pod", None)) or callable(getattr(p, "remove_pod", None)))
        for n, p in pre()
    )


class NominatedVerdicts:
    """The first pass's verdicts (Filter with the counting nominated pods added) per node,
    reused across attempts: a pod retried behind a long queue meets the same nominated
    nodes every attempt.

    Only for a pod whose PreFilter state and Filter verdicts depend on the pod's own
    scheduling signature (equivalence.signature) and the node alone: no PreFilter
    extension active and only node-local Filter plugins (equivalence.NODE_LOCAL_FILTERS),
    as cache/equivalence.py's filter cache. Entries belong to one context (profile, signature,
    priority; a new one starts over) and are per node, under its NodeInfo generation and
    the identities of the counting nominated PodInfos (kept alive by the entry)."""

    def __init__(self) -> None:
        self._context: tuple[Any, bytes, int] | None = None
        self._entries: dict[str, tuple[int, list[PodInfo], Status]] = {}
        #: (pod, state, whether cacheable) of the last `begin`: one answer per attempt.
        self._last: tuple[PodInfo | None, CycleState | None, bool] = (None, None, False)

    def begin(self, fwk: Any, state: CycleState, pi: PodInfo) -> bool:
        """Set the context for this attempt; False when its verdicts cannot be cached."""
        last_pi, last_state, ok = self._last
        if pi is last_pi and state is last_state:
            return ok
        ok = self._eligible(fwk, state)
        if ok:
            context = (fwk, signature(pi.pod), pod_priority(pi.pod))
            old = self._context
            if old is None or old[0] is not fwk or old[1:] != context[1:]:
                self._context = context
                self._entries = {}
        self._last = (pi, state, ok)
        return ok

    @staticmethod
    def _eligible(fwk: Any, state: CycleState) -> bool:
        filters = getattr(fwk, "filter_plugins", None)
        if filters is None or active_extensions(fwk, state):
            return False
        skip = state.skip_filter_plugins
        return {n for n, _ in filters() if n not in skip} <= NODE_LOCAL_FILTERS

    def get(self, ni: NodeInfo, counting: Sequence[PodInfo]) -> Status | None:
        e = self._entries.get(ni.name)
        if e is None or e[0] != ni.generation or len(e[1]) != len(counting):
            return None
        if any(a is not b for a, b in zip(e[1], counting, strict=True)):
            return None
        return e[2]

    def put(self, ni: NodeInfo, counting: Sequence[PodInfo], st: Status) -> None:
        self._entries[ni.name] = (ni.generation, list(counting), st)
