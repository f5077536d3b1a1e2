"""Taints and tolerations: the effects and what "a toleration tolerates a taint" means
(upstream k8s.io/api/core/v1 toleration.go and component-helpers/scheduling/corev1 helpers).

The scheduler's TaintToleration, NodeUnschedulable and PodTopologySpread (nodeTaintsPolicy),
the taint-eviction and node-lifecycle controllers and the kubelet must agree on this, so it
lives here once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from protos.kubera.v1 import core_pb2

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

_MIN_INT64 = -(2**63)
_MAX_INT64 = 2**63 - 1


def is_decimal_integer(value: str) -> bool:
    """apimachinery content.IsDecimalInteger: "0" or -?[1-9][0-9]* (no "+", no leading zeros)."""
    body = value[1:] if value.startswith("-") else value
    if not body or not body.isascii() or not body.isdigit():
        return False
    return not (body[0] == "0" and (len(body) > 1 or value.startswith("-")))


def _parse_numeric(value: str) -> int | None:
    if not is_decimal_integer(value):
        return None
    n = int(value)
    return n if _MIN_INT64 <= n <= _MAX_INT64 else None


def toleration_tolerates_taint(toleration: core_pb2.Toleration, taint: core_pb2.Taint) -> bool:
    """corev1.Toleration.ToleratesTaint with the comparison operators enabled:

    - an empty effect matches every effect, else the effects must be equal;
    - an empty key matches every key (API validation pairs it with Exists);
    - Equal (the default) compares values; Exists matches any value;
    - Gt / Lt compare integers: the taint's value must be greater / less than the
      toleration's; a value that is not a canonical decimal int64 matches nothing.
    """
    if toleration.effect and toleration.effect != taint.effect:
        return False
    if toleration.key and toleration.key != taint.key:
        return False
    op = toleration.operator
    if op in ("", "Equal"):
        return toleration.value == taint.value
    if op == "Exists":
        return True
    if op in ("Gt", "Lt"):
        want = _parse_numeric(toleration.value)
        have = _parse_numeric(taint.value)
        if want is None or have is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def tolerations_tolerate_taint(
    tolerations: Iterable[core_pb2.Toleration], taint: core_pb2.Taint
) -> bool:
    return any(toleration_tolerates_taint(t, taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Sequence[core_pb2.Taint],
    tolerations: Sequence[core_pb2.Toleration],
    inclusion_filter: Callable[[core_pb2.Taint], bool] | None = None,
) -> core_pb2.Taint | None:
    """The first taint (in node order) passing `inclusion_filter` that no toleration
    tolerates, or None (upstream v1helper.FindMatchingUntoleratedTaint)."""
    for taint in taints:
        if inclusion_filter is not None and not inclusion_filter(taint):
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None
