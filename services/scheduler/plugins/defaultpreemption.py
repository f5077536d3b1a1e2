"""DefaultPreemption: the PostFilter plugin that preempts lower-priority pods (upstream
plugins/defaultpreemption), on the evaluator in services/scheduler/preemption.

Args (DefaultPreemptionArgs): minCandidateNodesPercentage (default 10, in [0, 100]) and
minCandidateNodesAbsolute (default 100, >= 0), not both 0. A status message is prefixed
"preemption: " as upstream's. What the attempt considered and chose is written to the
CycleState under DECISION_KEY for the decision trace. A gang member (Coscheduling left its
GangNeed in the CycleState) preempts only when its whole gang then fits (preemption/gang.py).
A victim whose scheduling.k8s.io PodGroup has disruptionMode `all` takes its whole group
along (preemption/podgroups.py; the plugin lists PodGroups through handle.informer).
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from services.api.machinery.kinds import SCHEDULING_POD_GROUP
from services.clock import Clock
from services.scheduler.framework.interface import PostFilterResult, Snapshot
from services.scheduler.framework.nominator import FilterRunner, Nominator
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins.helpers import InformerStoreView
from services.scheduler.preemption import (
    Evaluator,
    PreemptionClient,
    prepare_candidate,
)
from services.scheduler.preemption.gang import GANG_KEY, gang_fits_after
from services.scheduler.preemption.podgroups import disruption_units, whole_groups

NAME = "DefaultPreemption"
#: CycleState key of the attempt's preemption.Decision.
DECISION_KEY = "DefaultPreemption/decision"

log = logging.getLogger("services.scheduler.scheduler")


@dataclass
class Args:
    min_candidate_nodes_percentage: int = 10
    min_candidate_nodes_absolute: int = 100

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        d = d or {}
        args = cls(
            int(d.get("minCandidateNodesPercentage", 10)),
            int(d.get("minCandidateNodesAbsolute", 100)),
        )
        errs = validate_args(args)
        if errs:
            raise ValueError("; ".join(errs))
        return args


def validate_args(args: Args, path: str = "") -> list[str]:
    """Upstream ValidateDefaultPreemptionArgs, as field error texts."""
    p = f"{path}." if path else ""
    pct, absolute = args.min_candidate_nodes_percentage, args.min_candidate_nodes_absolute
    errs = []
    if not 0 <= pct <= 100:
        errs.append(
            f"{p}minCandidateNodesPercentage: Invalid value: {pct}: not in valid range [0, 100]"
        )
    if absolute < 0:
        errs.append(
            f"{p}minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
        )
    if pct == 0 and absolute == 0:
        errs.append(
            f"{p}minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same "
            "time as minCandidateNodesAbsolute"
        )
        errs.append(
            f"{p}minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same "
            "time as minCandidateNodesPercentage"
        )
    return errs


class PreemptionHandle(Protocol):
    """What DefaultPreemption needs of the scheduler (services/scheduler/scheduler.py)."""

    #: The cluster clock: the time PDBs' disruptedPods, start times and the victims'
    #: DisruptionTarget conditions are compared and stamped with (services/clock.py).
    cluster_clock: Clock
    client: PreemptionClient
    nominator: Nominator

    def snapshot(self) -> Snapshot: ...

    def framework_for(self, scheduler_name: str) -> FilterRunner | None: ...

    def pdbs(self) -> Sequence[Any]: ...

    def rand_int(self, n: int) -> int: ...

    def reject_preempted_waiting_pod(self, uid: str) -> bool: ...


class DefaultPreemption:
    """PostFilterPlugin."""

    name = NAME

    def __init__(
        self,
        args: Args,
        handle: PreemptionHandle,
        pod_groups: Mapping[str, Any] | None = None,
    ) -> None:
        self.args = args
        self.handle = handle
        #: scheduling.k8s.io PodGroups by namespace/name (their disruptionMode).
        self.pod_groups: Mapping[str, Any] = pod_groups if pod_groups is not None else {}
        #: Preemption attempts (upstream's preemption_attempts_total).
        self.attempts = 0
        self.victims = 0
        self.evaluator = Evaluator(
            min_candidate_nodes_percentage=args.min_candidate_nodes_percentage,
            min_candidate_nodes_absolute=args.min_candidate_nodes_absolute,
            rand=self._rand,
            now=self._now,
        )

    def _now(self) -> float:
        return self.handle.cluster_clock.now()

    def _rand(self, n: int) -> int:
        return self.handle.rand_int(n) if n > 0 else 0

    async def post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        self.attempts += 1
        h = self.handle
        pod = pod_info.pod
        fwk = h.framework_for(pod.spec.scheduler_name)
        if fwk is None:
            return None, Status.as_error(RuntimeError("no framework for the pod's profile"))
        candidate, st, decision = self.evaluator.preempt(
            fwk,
            state,
            pod_info,
            statuses,
            list(h.snapshot().list()),
            list(h.pdbs()),
            h.nominator.pods_on,
        )
        state.write(DECISION_KEY, decision)
        if candidate is None:
            result = None
            if decision.eligible and st.code != st.code.ERROR:
                # No candidate: the pod's nomination, if any, is cleared (the scheduler
                # writes status.nominatedNodeName from this result).
                result = PostFilterResult("")
                h.nominator.delete(pod_info.uid)
            msg = st.message
            return result, Status(st.code, (f"preemption: {msg}",) if msg else (), NAME, st.error)
        need = state.get(GANG_KEY)
        if need is not None:
            # A gang member preempts only when its whole gang then fits (preemption/gang.py).
            why = gang_fits_after(
                need, pod_info, candidate.name, candidate.victims, h.snapshot().list()
            )
            if why:
                decision.node, decision.victims, decision.reason = "", [], why
                return None, Status.unschedulable(f"preemption: {why}", plugin=NAME)
        # A victim whose PodGroup is disrupted whole takes its group along (podgroups.py).
        victims = whole_groups(candidate.victims, h.snapshot().list(), self.pod_groups)
        if len(victims) != len(candidate.victims):
            candidate = dataclasses.replace(candidate, victims=victims)
            decision.victims = [f"{v.metadata.namespace}/{v.metadata.name}" for v in victims]
        decision.pdb_violations = candidate.num_pdb_violations
        decision.pod_group_disruptions = disruption_units(candidate.victims, self.pod_groups)
        problems = await prepare_candidate(
            h.client,
            scheduler_name=pod.spec.scheduler_name,
            preemptor=pod,
            candidate=candidate,
            now=h.cluster_clock.now(),
            reject_waiting_pod=h.reject_preempted_waiting_pod,
            nominated_on_node=h.nominator.pods_on(candidate.name),
            forget_nomination=h.nominator.delete,
        )
        for p in problems:
            log.info("preemption for %s: %s", pod_info.key, p)
        self.victims += len(candidate.victims)
        return PostFilterResult(candidate.name), Status.success()


def new(args: Args | None, handle: Any) -> DefaultPreemption:
    args = args or Args()
    errs = validate_args(args)
    if errs:
        raise ValueError("; ".join(errs))
    informer_of = getattr(handle, "informer", None)
    pod_groups = (
        InformerStoreView(informer_of(SCHEDULING_POD_GROUP)) if callable(informer_of) else None
    )
    return DefaultPreemption(args, handle, pod_groups)


__all__: Sequence[str] = ["NAME", "Args", "DefaultPreemption", "new", "DECISION_KEY"]
