"""The preemption evaluator (upstream framework/preemption/preemption.go Evaluator.Preempt),
the decision part: eligibility, candidate nodes, bounded dry runs, the chosen candidate.
Its effects (victims deleted, nominations) are executor.py's.

    preempt(pod, node statuses):
      eligible?            preemptionPolicy Never: no; nominated node still has a lower-priority
                           pod terminating by preemption (and is not Unresolvable): wait
      potential nodes      those whose Filter status is not UnschedulableAndUnresolvable
      dry runs             from a random offset, node by node (clones of the CycleState and
                           NodeInfo), until some candidate violates no PDB and at least
                           max(nodes * minCandidateNodesPercentage / 100,
                               minCandidateNodesAbsolute) candidates were found
      pick                 victims.pick_one_node_for_preemption
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.framework.nominator import (
    FilterRunner,
    nominated_pods_to_add,
    pod_priority,
)
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.preemption.fastpath import DryRunCache, FitCheck, Outcome
from services.scheduler.preemption.victims import (
    NO_VICTIMS,
    Candidate,
    pick_one_node_with_rule,
    select_victims_on_node,
)
from services.scheduler.trace import unschedulable_message

NOT_HELPFUL = "Preemption is not helpful for scheduling"
POLICY_NEVER = "not eligible due to preemptionPolicy=Never."
TERMINATING_ON_NOMINATED = "not eligible due to a terminating pod on the nominated node."
DISRUPTION_TARGET = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass
class Decision:
    """What one preemption attempt considered and chose (for the decision trace)."""

    eligible: bool = True
    reason: str = ""
    potential_nodes: int = 0
    offset: int = 0
    num_candidates: int = 0
    dry_runs: int = 0
    #: Of `dry_runs`, outcomes reused from an earlier attempt (fastpath.DryRunCache).
    cached: int = 0
    #: (node, victim keys, PDB violations) of every candidate found.
    candidates: list[tuple[str, list[str], int]] = field(default_factory=list)
    node: str = ""
    victims: list[str] = field(default_factory=list)
    #: The rule that chose `node` among the candidates (victims.PICK_RULES).
    why: str = ""
    #: Of the chosen candidate: its PDB violations, and the preemption units among its victims
    #: that affect pod groups (podgroups.disruption_units): upstream's
    #: preemption_pdb_violations_total and preemption_workload_disruptions.
    pdb_violations: int = 0
    pod_group_disruptions: int = 0


def terminating_by_preemption(pod: Any) -> bool:
    """Deleting, with DisruptionTarget=True for reason PreemptionByScheduler."""
    if not pod.metadata.deletion_timestamp:
        return False
    for c in pod.status.conditions:
        if c.type == DISRUPTION_TARGET:
            return c.status == "True" and c.reason == PREEMPTION_BY_SCHEDULER
    return False


def pod_eligible_to_preempt_others(
    pi: PodInfo, nodes: Callable[[str], NodeInfo | None], nominated_status: Status | None
) -> tuple[bool, str]:
    """Upstream PodEligibleToPreemptOthers."""
    pod = pi.pod
    if pod.spec.HasField("preemption_policy") and pod.spec.preemption_policy == "Never":
        return False, POLICY_NEVER
    nom = pod.status.nominated_node_name
    if nom:
        if nominated_status is not None and nominated_status.code == (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        ):
            return True, ""
        ni = nodes(nom)
        if ni is not None:
            prio = pod_priority(pod)
            for p in ni.pods:
                if pod_priority(p.pod) < prio and terminating_by_preemption(p.pod):
                    return False, TERMINATING_ON_NOMINATED
    return True, ""


def calculate_num_candidates(num_nodes: int, percentage: int, absolute: int) -> int:
    n = num_nodes * percentage // 100
    n = max(n, absolute)
    return min(n, num_nodes)


class Evaluator:
    """Decides one preemption: `preempt` returns (the chosen Candidate or None, status,
    decision). `rand(n)` gives the dry runs' offset in [0, n) (the scheduler's seeded RNG)."""

    def __init__(
        self,
        *,
        min_candidate_nodes_percentage: int,
        min_candidate_nodes_absolute: int,
        rand: Callable[[int], int],
        now: Callable[[], float],
        fast: bool = True,
    ) -> None:
        #: The exact shortcuts of fastpath.py (False: the reference path, for tests).
        self.fast = fast
        #: Dry-run outcomes reused across attempts (fastpath.DryRunCache).
        self.cache = DryRunCache()
        self.percentage = min_candidate_nodes_percentage
        self.absolute = min_candidate_nodes_absolute
        self.rand = rand
        self.now = now

    def offset_and_num_candidates(self, num_nodes: int) -> tuple[int, int]:
        return self.rand(num_nodes), calculate_num_candidates(
            num_nodes, self.percentage, self.absolute
        )

    def preempt(
        self,
        fwk: FilterRunner,
        state: CycleState,
        pi: PodInfo,
        statuses: Mapping[str, Status],
        all_nodes: Sequence[NodeInfo],
        pdbs: Sequence[Any],
        nominated: Callable[[str], Sequence[PodInfo]],
    ) -> tuple[Candidate | None, Status, Decision]:
        """Status Success with a Candidate; otherwise Unschedulable (or Error) with the
        message upstream gives (without the "preemption: " prefix the plugin adds)."""
        d = Decision()
        by_name = {n.name: n for n in all_nodes}
        nom = pi.pod.status.nominated_node_name
        ok, why = pod_eligible_to_preempt_others(pi, by_name.get, statuses.get(nom))
        if not ok:
            d.eligible, d.reason = False, why
            return None, Status.unschedulable(why), d
        if not all_nodes:
            return None, Status.as_error(RuntimeError("no nodes available")), d
        potential = [
            n
            for n in all_nodes
            # a node absent from `statuses` counts as UnschedulableAndUnresolvable
            if (st := statuses.get(n.name)) is not None
            and st.code != Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        ]
        d.potential_nodes = len(potential)
        node_statuses: dict[str, Status] = {}
        candidates: list[Candidate] = []
        errors: list[Status] = []
        if potential:
            offset, num = self.offset_and_num_candidates(len(potential))
            d.offset, d.num_candidates = offset, num
            non_violating: list[Candidate] = []
            violating: list[Candidate] = []
            now = self.now()
            fit = FitCheck.of(fwk, state, pi) if self.fast else None
            prio = pod_priority(pi.pod)
            #: Nodes that failed, in order; a None status is a certain failure whose
            #: status is computed only if it is used (no candidate at all).
            failed: list[tuple[NodeInfo, Status | None]] = []
            cache = (
                self.cache if self.fast and self.cache.begin(fwk, state, pi, fit, pdbs) else None
            )
            for i in range(len(potential)):
                ni = potential[(offset + i) % len(potential)]
                d.dry_runs += 1
                on_node = nominated(ni.name)
                if self.fast:
                    counting = nominated_pods_to_add(pi, on_node)
                    out = cache.get(ni, counting) if cache is not None else None
                    if out is None:
                        out = _outcome(fwk, state, pi, ni, pdbs, on_node, now, fit, counting, prio)
                        if cache is not None:
                            lower = [p for p in ni.pods if pod_priority(p.pod) < prio]
                            cache.put(ni, counting, lower, out)
                    else:
                        d.cached += 1
                    pods, n_viol, known = out
                    if known is None or not known.is_success() or not pods:
                        failed.append((ni, known))
                        continue
                    pods = list(pods)
                else:
                    pods, n_viol, st = select_victims_on_node(
                        fwk, state.clone(), pi, ni.clone(), pdbs, on_node, now
                    )
                    if not st.is_success() or not pods:
                        failed.append((ni, st))
                        continue
                c = Candidate(ni.name, pods, n_viol)
                (violating if n_viol else non_violating).append(c)
                if non_violating and len(non_violating) + len(violating) >= num:
                    break
            candidates = non_violating + violating
            for ni, maybe in failed if not candidates else ():
                st = maybe
                if st is None:  # the reference dry run, for its status
                    st = select_victims_on_node(
                        fwk, state.clone(), pi, ni.clone(), pdbs, nominated(ni.name), now
                    )[2]
                if st.is_success():
                    st = Status.as_error(
                        RuntimeError(f"expected at least one victim pod on node {ni.name!r}")
                    )
                if st.code == Code.ERROR:
                    errors.append(st)
                node_statuses[ni.name] = st
        for c in candidates:
            d.candidates.append((c.name, [_key(v) for v in c.victims], c.num_pdb_violations))
        if errors and not candidates:
            d.reason = errors[0].message
            return None, Status(Code.ERROR, errors[0].reasons, "", errors[0].error), d
        if not candidates:
            for n in all_nodes:
                if n.name not in node_statuses:
                    node_statuses[n.name] = Status.unresolvable(NOT_HELPFUL)
            msg = unschedulable_message(len(all_nodes), node_statuses)
            d.reason = msg
            return None, Status.unschedulable(msg), d
        best, d.why = pick_one_node_with_rule(candidates, self.now())
        assert best is not None
        d.node, d.victims = best.name, [_key(v) for v in best.victims]
        return best, Status.success(), d


def _outcome(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    ni: NodeInfo,
    pdbs: Sequence[Any],
    nominated: Sequence[PodInfo],
    now: float,
    fit: FitCheck | None,
    counting: Sequence[PodInfo],
    prio: int,
) -> Outcome:
    """The dry run's outcome on `ni` with the shortcuts of fastpath.py."""
    lower = [p for p in ni.pods if pod_priority(p.pod) < prio]
    if not lower:
        return [], 0, Status.unresolvable(NO_VICTIMS)
    if fit is not None and fit.fails(ni, lower, counting):
        return [], 0, None
    return select_victims_on_node(fwk, state.clone(), pi, ni.clone(), pdbs, nominated, now, fit)


def _key(pod: Any) -> str:
    return f"{pod.metadata.namespace}/{pod.metadata.name}"
