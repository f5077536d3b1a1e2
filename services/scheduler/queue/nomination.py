"""The scheduling cycle's side of nominations (upstream schedule_one.go evaluateNominatedNode
and the first pass of findNodesThatPassFilters with nominated pods): a pod nominated by an
earlier preemption tries its nominated node first; any node a pod passes must also fit it
with the pods nominated there that are not below it (framework/nominator.py)."""

from __future__ import annotations

from collections.abc import Callable

from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.nominator import (
    FilterRunner,
    Nominator,
)
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo


def with_nominated_pods(
    fwk: FilterRunner, state: CycleState, pi: PodInfo, ni: NodeInfo, nominator: Nominator
) -> Status:
    """For a node the pod passed: the pass with the nominated pods there (Success when none)."""
    return nominator.filter_with_nominated(fwk, state, pi, ni)


def evaluate_nominated_node(
    fwk: FilterRunner,
    state: CycleState,
    pi: PodInfo,
    get_node: Callable[[str], NodeInfo | None],
    pre_result: PreFilterResult | None,
    nominator: Nominator,
) -> tuple[NodeInfo | None, Status]:
    """(the pod's nominated node when it fits there, else None; the status that decided —
    an Error aborts the attempt)."""
    name = pi.pod.status.nominated_node_name
    ni = get_node(name) if name else None
    if ni is None:
        return None, Status.success()
    allowed = pre_result.node_names if pre_result is not None else None
    if allowed is not None and name not in allowed:
        return None, Status.success()
    st = fwk.run_filter(state, pi, ni)
    if st.is_success():
        st = with_nominated_pods(fwk, state, pi, ni, nominator)
    return (ni if st.is_success() else None), st
