"""Exact shortcuts for preemption's dry runs (evaluator.py, victims.py).

A dry run (victims.select_victims_on_node) clones the CycleState and the NodeInfo, removes
every lower-priority pod, runs Filter (with nominated pods), then reprieves the pods one by
one, each with a Filter run. Most of that work has a foregone conclusion that is cheap to
see without it:

- no pod on the node has a lower priority: the dry run's status is NO_VICTIMS
  (UnschedulableAndUnresolvable) before any clone or extension runs — the same status;
- NodeResourcesFit (a Filter plugin the profile runs, not skipped) rejects the pod on the
  node even with every lower-priority pod gone and the counting nominated pods added: the
  dry run certainly fails. Which plugin's status it fails with is not known here (an
  earlier plugin may reject first, an extension may err), so the evaluator keeps no status
  for such a node and runs the reference dry run for it only when that status is used
  (when no candidate is found at all);
- a reprieved pod that leaves NodeResourcesFit rejecting the pod certainly stays a victim:
  its Filter run is skipped; when no PreFilter extension is active for the pod, its AddPod
  and RemovePod are skipped too (they would only restore the NodeInfo they changed).

The check calls NodeResourcesFit's own `filter` on a NodeInfo holding just the counts it
reads (allocatable, requested, the number of pods), so it agrees with the plugin by
construction. The outcomes — candidates, their order, victims, chosen node, statuses and
messages — are the reference's (tests/scheduler/preemption/test_fastpath.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from services.scheduler.cache.equivalence import NODE_LOCAL_FILTERS, signature
from services.scheduler.framework.nominator import FilterRunner, pod_priority
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins.noderesources.fit import NAME as FIT
from services.scheduler.plugins.noderesources.fit import PRE_FILTER_STATE_KEY
from services.scheduler.preemption.victims import pod_start_time

#: The PreFilter extension points a dry run calls.
_EXTENSIONS = ("add_pod", "remove_pod")


class FitCheck:
    """NodeResourcesFit's verdict on counts: `fails(...)` True means the dry run's Filter
    (both passes of RunFilterPluginsWithNominatedPods) certainly rejects the pod."""

    def __init__(self, plugin: Any, state: CycleState, pi: PodInfo, extensions: bool) -> None:
        self.plugin = plugin
        self.state = state
        self.pi = pi
        #: Some PreFilter plugin with AddPod/RemovePod extensions runs for this pod.
        self.extensions = extensions

    @classmethod
    def of(cls, fwk: FilterRunner, state: CycleState, pi: PodInfo) -> FitCheck | None:
        """The check, when the profile runs NodeResourcesFit's Filter for this pod and its
        PreFilter state is there (otherwise None: no shortcut is taken)."""
        filters = getattr(fwk, "filter_plugins", None)
        if filters is None or state.get(PRE_FILTER_STATE_KEY) is None:
            return None
        skip = state.skip_filter_plugins
        plugin = next((p for n, p in filters() if n == FIT and n not in skip), None)
        if plugin is None:
            return None
        pre = getattr(fwk, "pre_filter_plugins", None)
        extensions = True
        if pre is not None:
            extensions = any(
                n not in skip and any(callable(getattr(p, op, None)) for op in _EXTENSIONS)
                for n, p in pre()
            )
        return cls(plugin, state, pi, extensions)

    def fails(
        self,
        ni: NodeInfo,
        removed: Sequence[PodInfo] = (),
        added: Sequence[PodInfo] = (),
    ) -> bool:
        """Whether NodeResourcesFit rejects the pod on `ni` with `removed` (pods of `ni`)
        taken away and `added` put on."""
        probe = NodeInfo.__new__(NodeInfo)
        probe.allocatable = ni.allocatable
        req = ni.requested.clone()
        for p in removed:
            req.sub(p.requests)
        for p in added:
            req.add(p.requests)
        probe.requested = req
        probe.pods = _Count(len(ni.pods) - len(removed) + len(added))  # type: ignore[assignment]
        return not self.plugin.filter(self.state, self.pi, probe).is_success()


class _Count:
    """Stands for a list of pods where only its length is read."""

    __slots__ = ("n",)

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n


#: One node's dry-run outcome: (victims, PDB violations, status); a status None is a
#: certain failure whose status was not computed.
Outcome = tuple[list[Any], int, Status | None]


class DryRunCache:
    """Dry-run outcomes reused across attempts while nothing they depend on changed.

    A dry run is a function of the profile, the PreFilter state, the pod, the node's
    contents, the nominated pods that count there, the PDBs and — through the start-time
    order of pods without a start time — the clock. It is cached only for a pod whose
    PreFilter state and Filter verdicts depend on the pod's own scheduling signature
    (equivalence.signature) and the node alone: no PreFilter extension active (so
    InterPodAffinity and PodTopologySpread skipped) and only node-local Filter plugins
    (equivalence.NODE_LOCAL_FILTERS). Entries are for one context (profile, signature,
    priority, the PDB objects) — a new context starts over — and per node under its
    NodeInfo generation (bumped on every change) and the identities of the counting
    nominated PodInfos (kept alive by the entry); a node whose lower-priority pods mix
    pods with and without a start time (their order would depend on the clock) is not
    cached."""

    def __init__(self) -> None:
        self._context: tuple[Any, ...] = ()
        self._entries: dict[str, tuple[int, list[PodInfo], Outcome]] = {}

    def begin(
        self, fwk: Any, state: CycleState, pi: PodInfo, fit: FitCheck | None, pdbs: Sequence[Any]
    ) -> bool:
        """Set the attempt's context; False when the pod's dry runs cannot be cached."""
        filters = getattr(fwk, "filter_plugins", None)
        if fit is None or fit.extensions or filters is None:
            return False
        skip = state.skip_filter_plugins
        if not {n for n, _ in filters() if n not in skip} <= NODE_LOCAL_FILTERS:
            return False
        context = (fwk, signature(pi.pod), pod_priority(pi.pod), tuple(pdbs))
        if not _same_context(context, self._context):
            self._context = context
            self._entries = {}
        return True

    def get(self, ni: NodeInfo, counting: Sequence[PodInfo]) -> Outcome | None:
        e = self._entries.get(ni.name)
        if e is None or e[0] != ni.generation or len(e[1]) != len(counting):
            return None
        if any(a is not b for a, b in zip(e[1], counting, strict=True)):
            return None
        return e[2]

    def put(
        self, ni: NodeInfo, counting: Sequence[PodInfo], lower: Sequence[PodInfo], out: Outcome
    ) -> None:
        dated = [_dated(p) for p in lower]
        if any(dated) and not all(dated):
            return
        self._entries[ni.name] = (ni.generation, list(counting), out)

    def __len__(self) -> int:
        return len(self._entries)


def _same_context(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
    """Same profile and PDB objects (by identity), same signature and priority."""
    if not b or a[0] is not b[0] or a[1] != b[1] or a[2] != b[2] or len(a[3]) != len(b[3]):
        return False
    return all(x is y for x, y in zip(a[3], b[3], strict=True))


def _dated(pi: PodInfo) -> bool:
    """Whether the pod's start time does not depend on the clock (victims.pod_start_time)."""
    return pod_start_time(pi.pod, 0.0) == pod_start_time(pi.pod, 1.0)
