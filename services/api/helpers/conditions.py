"""Pod conditions, set the one way upstream does (podutil.UpdatePodCondition): a condition
of a type is replaced in place, and its lastTransitionTime moves only when its status
changes. Kubelets, controllers and the apiserver all write conditions through this."""

from __future__ import annotations

from protos.kubera.v1 import core_pb2
from services.clock import rfc3339


def update_pod_condition(
    status: core_pb2.PodStatus,
    type_: str,
    value: str,
    now: float,
    *,
    reason: str = "",
    message: str = "",
) -> bool:
    """Set condition `type_` to `value` (with reason and message); whether it changed."""
    for c in status.conditions:
        if c.type == type_:
            if (c.status, c.reason, c.message) == (value, reason, message):
                return False
            if c.status != value:
                c.last_transition_time = rfc3339(now)
            c.status, c.reason, c.message = value, reason, message
            return True
    status.conditions.add(
        type=type_,
        status=value,
        reason=reason,
        message=message,
        last_transition_time=rfc3339(now),
    )
    return True
