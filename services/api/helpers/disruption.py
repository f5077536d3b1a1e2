"""PodDisruptionBudget vocabulary shared by the apiserver's eviction subresource and the
disruption controller (upstream's k8s.io/component-helpers/apps/poddisruptionbudget and
the bits of podutil both use): which pods a budget covers, when a pod counts as healthy,
and the DisruptionAllowed condition."""

from __future__ import annotations

from protos.kubera.v1 import core_pb2, policy_pb2
from services.api.machinery.labels import Selector, SelectorError, from_label_selector
from services.clock import rfc3339

#: The condition type on a budget's status, and its reasons.
DISRUPTION_ALLOWED = "DisruptionAllowed"
SUFFICIENT_PODS = "SufficientPods"
INSUFFICIENT_PODS = "InsufficientPods"
SYNC_FAILED = "SyncFailed"

#: spec.unhealthyPodEvictionPolicy values (unset means IfHealthyBudget).
IF_HEALTHY_BUDGET = "IfHealthyBudget"
ALWAYS_ALLOW = "AlwaysAllow"


def parse_budget_selector(pdb: policy_pb2.PodDisruptionBudget) -> Selector | None:
    """The budget's selector; None when unset (nil) or empty, which select nothing
    (upstream: "a PDB with a nil or empty selector ... should match nothing, not
    everything"). Raises SelectorError when it is invalid."""
    if not pdb.spec.HasField("selector"):
        return None
    sel = pdb.spec.selector
    if not sel.match_labels and not sel.match_expressions:
        return None
    exprs = [(e.key, e.operator, tuple(e.values)) for e in sel.match_expressions]
    return from_label_selector(dict(sel.match_labels), exprs)


def budget_selector(pdb: policy_pb2.PodDisruptionBudget) -> Selector | None:
    """`parse_budget_selector`, an invalid selector also selecting nothing (None)."""
    try:
        return parse_budget_selector(pdb)
    except SelectorError:
        return None


def covers(pdb: policy_pb2.PodDisruptionBudget, pod: core_pb2.Pod) -> bool:
    """Whether the budget selects the pod (same namespace, selector matches its labels)."""
    if pdb.metadata.namespace != pod.metadata.namespace:
        return False
    selector = budget_selector(pdb)
    return selector is not None and selector.matches(pod.metadata.labels)


def pod_ready(pod: core_pb2.Pod) -> bool:
    """podutil.IsPodReady: the Ready condition is True."""
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions)


def set_condition(
    status: policy_pb2.PodDisruptionBudgetStatus,
    value: str,
    reason: str,
    message: str,
    now: float,
) -> bool:
    """apimeta.SetStatusCondition for DisruptionAllowed (lastTransitionTime moves only
    when the status changes); whether anything changed."""
    for c in status.conditions:
        if c.type == DISRUPTION_ALLOWED:
            before = (c.status, c.reason, c.message, c.observed_generation)
            if c.status != value:
                c.last_transition_time = rfc3339(now)
            c.status, c.reason, c.message = value, reason, message
            c.observed_generation = status.observed_generation
            return before != (c.status, c.reason, c.message, c.observed_generation)
    status.conditions.add(
        type=DISRUPTION_ALLOWED,
        status=value,
        reason=reason,
        message=message,
        observed_generation=status.observed_generation,
        last_transition_time=rfc3339(now),
    )
    return True


def update_disruption_allowed_condition(
    status: policy_pb2.PodDisruptionBudgetStatus, now: float
) -> bool:
    """pdbhelper.UpdateDisruptionAllowedCondition: True/SufficientPods while disruptions
    are allowed, else False/InsufficientPods."""
    if status.disruptions_allowed > 0:
        return set_condition(status, "True", SUFFICIENT_PODS, "", now)
    return set_condition(status, "False", INSUFFICIENT_PODS, "", now)
