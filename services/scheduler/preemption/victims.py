"""Victims on one node and the choice of node (upstream defaultpreemption.SelectVictimsOnNode,
filterPodsWithPDBViolation, util.MoreImportantPod and preemption.pickOneNodeForPreemption).

selectVictimsOnNode, on a cloned CycleState and NodeInfo: remove every lower-priority pod
(RemovePod extensions of the PreFilter state), check the pod fits (Filter, with nominated
pods); then reprieve the potential victims one by one in importance order (higher priority
first, then earlier start), the PDB-violating ones first, keeping each whose return still
fits. What stays removed are the victims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from protos.kubera.v1 import core_pb2
from services.api.machinery.labels import from_label_selector
from services.clock import parse_rfc3339
from services.scheduler.framework.nominator import (
    FilterRunner,
    nominated_pods_to_add,
    pod_priority,
    run_filter_with_nominated_pods,
)
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo

#: Go's math.MaxInt32: priorities are shifted by it so their sum stays non-negative.
MAX_INT32 = 2**31 - 1
NO_VICTIMS = "No preemption victims found for incoming pod"


@dataclass
class Candidate:
    """A node where preempting `victims` (most important first) lets the pod fit."""

    name: str
    victims: list[core_pb2.Pod] = field(default_factory=list)
    num_pdb_violations: int = 0


def pod_start_time(pod: core_pb2.Pod, now: float) -> float:
    """status.startTime, or `now` when the pod has none (upstream GetPodStartTime)."""
    if pod.status.start_time:
        try:
            return parse_rfc3339(pod.status.start_time)
        except ValueError:
            return now
    return now


def more_important(a: core_pb2.Pod, b: core_pb2.Pod, now: float = float("inf")) -> bool:
    """Higher priority first; at equal priority the one that started earlier."""
    pa, pb = pod_priority(a), pod_priority(b)
    if pa != pb:
        return pa > pb
    return pod_start_time(a, now) < pod_start_time(b, now)


def sort_by_importance(pods: list[Any], get: Callable[[Any], core_pb2.Pod], now: float) -> None:
    """In place, most important first (stable: equal pods keep their order)."""
    pods.sort(key=lambda x: (-pod_priority(get(x)), pod_start_time(get(x), now)))


def pdb_selector_matches(pdb: Any, pod: core_pb2.Pod) -> bool:
    """Whether the PDB selects the pod: same namespace, a valid non-empty selector matching
    its labels (a nil or empty selector matches nothing, an invalid one does not match)."""
    if pdb.metadata.namespace != pod.metadata.namespace or not pdb.spec.HasField("selector"):
        return False
    sel = pdb.spec.selector
    if not sel.match_labels and not sel.match_expressions:
        return False
    try:
        selector = from_label_selector(
            dict(sel.match_labels),
            [(e.key, e.operator, list(e.values)) for e in sel.match_expressions],
        )
    except ValueError:
        return False
    return selector.matches(pod.metadata.labels)


def filter_pods_with_pdb_violation(
    pods: Sequence[PodInfo], pdbs: Sequence[Any]
) -> tuple[list[PodInfo], list[PodInfo]]:
    """(violating, non-violating), order kept: each matching PDB's disruptionsAllowed is
    decremented per pod not already in its disruptedPods; a pod that takes one below zero
    violates it."""
    allowed = [pdb.status.disruptions_allowed for pdb in pdbs]
    violating: list[PodInfo] = []
    ok: list[PodInfo] = []
    for pi in pods:
        pod = pi.pod
        violated = False
        if pod.metadata.labels:
            for i, pdb in enumerate(pdbs):
                if not pdb_selector_matches(pdb, pod):
                    continue
                if pod.metadata.name in pdb.status.disrupted_pods:
                    continue
                allowed[i] -= 1
                if allowed[i] < 0:
                    violated = True
        (violating if violated else ok).append(pi)
    return violating, ok


class FitVerdict(Protocol):
    """fastpath.FitCheck, as the dry run uses it."""

    extensions: bool

    def fails(
        self, ni: NodeInfo, removed: Sequence[PodInfo] = (), added: Sequence[PodInfo] = ()
    ) -> bool: ...


def select_victims_on_node(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    node_info: NodeInfo,
    pdbs: Sequence[Any],
    nominated: Sequence[PodInfo] = (),
    now: float = float("inf"),
    fit: FitVerdict | None = None,
) -> tuple[list[core_pb2.Pod], int, Status]:
    """(victims most important first, how many of them violate a PDB, status). `state` and
    `node_info` are changed: pass clones. With `fit` (a fastpath.FitCheck for this pod), a
    reprieve NodeResourcesFit certainly rejects skips its Filter run (and its AddPod and
    RemovePod when no extension is active): same outcome."""
    prio = pod_priority(pi.pod)
    counting = nominated_pods_to_add(pi, nominated) if fit is not None else []

    def remove(v: PodInfo) -> Status:
        node_info.remove_pod(v.pod)
        return fwk.run_pre_filter_extension("remove_pod", state, pi, v, node_info)

    def add(v: PodInfo) -> Status:
        node_info.add_pod(v)
        return fwk.run_pre_filter_extension("add_pod", state, pi, v, node_info)

    potential = [p for p in node_info.pods if pod_priority(p.pod) < prio]
    for v in potential:
        st = remove(v)
        if not st.is_success():
            return [], 0, st
    if not potential:
        return [], 0, Status.unresolvable(NO_VICTIMS)
    st = run_filter_with_nominated_pods(fwk, state, pi, node_info, nominated)
    if not st.is_success():
        return [], 0, st
    sort_by_importance(potential, lambda p: p.pod, now)
    violating, non_violating = filter_pods_with_pdb_violation(potential, pdbs)
    victims: list[PodInfo] = []

    def reprieve(v: PodInfo) -> tuple[bool, Status]:
        if fit is not None and not fit.extensions and fit.fails(node_info, (), [v, *counting]):
            # add, a rejecting Filter, remove: the NodeInfo ends as it was
            victims.append(v)
            return False, Status.success()
        st = add(v)
        if not st.is_success():
            return False, st
        if fit is not None and fit.fails(node_info, (), counting):
            fits = False
        else:
            fits = run_filter_with_nominated_pods(fwk, state, pi, node_info, nominated).is_success()
        if not fits:
            st = remove(v)
            if not st.is_success():
                return False, st
            victims.append(v)
        return fits, Status.success()

    num_violating = 0
    for v in violating:
        fits, st = reprieve(v)
        if not st.is_success():
            return [], 0, st
        if not fits:
            num_violating += 1
    for v in non_violating:
        _, st = reprieve(v)
        if not st.is_success():
            return [], 0, st
    if violating and non_violating:
        sort_by_importance(victims, lambda p: p.pod, now)
    return [v.pod for v in victims], num_violating, Status.success()


#: The rules of pick_one_node_for_preemption, in order (what `explain` says decided).
PICK_RULES = (
    "fewest PDB violations",
    "lowest highest victim priority",
    "smallest sum of victim priorities",
    "fewest victims",
    "latest start time of the highest-priority victims",
)


def pick_one_node_for_preemption(candidates: Sequence[Candidate], now: float) -> Candidate | None:
    """Upstream's order: fewest PDB violations; lowest highest-victim priority; smallest sum
    of priorities; fewest victims; latest start among the highest-priority victims; first."""
    return pick_one_node_with_rule(candidates, now)[0]


def pick_one_node_with_rule(
    candidates: Sequence[Candidate], now: float
) -> tuple[Candidate | None, str]:
    """pick_one_node_for_preemption, and the rule that singled the node out ("only
    candidate", one of PICK_RULES, or "first of the tied candidates")."""
    if not candidates:
        return None, ""
    if len(candidates) == 1:
        return candidates[0], "only candidate"

    def highest(c: Candidate) -> int:
        return pod_priority(c.victims[0]) if c.victims else -(2**63)

    def earliest_of_highest(c: Candidate) -> float:
        if not c.victims:
            return float("-inf")
        top = max(pod_priority(v) for v in c.victims)
        return min(pod_start_time(v, now) for v in c.victims if pod_priority(v) == top)

    score_funcs: list[Callable[[Candidate], float]] = [
        lambda c: -c.num_pdb_violations,
        lambda c: -highest(c),
        lambda c: -sum(pod_priority(v) + MAX_INT32 + 1 for v in c.victims),
        lambda c: -len(c.victims),
        earliest_of_highest,
    ]
    selected = list(candidates)
    for rule, f in zip(PICK_RULES, score_funcs, strict=True):
        scores = [f(c) for c in selected]
        best = max(scores)
        selected = [c for c, s in zip(selected, scores, strict=True) if s == best]
        if len(selected) == 1:
            return selected[0], rule
    return selected[0], "first of the tied candidates"


def is_unresolvable(st: Status) -> bool:
    return st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
