"""Taints and tolerations: the effects and what "a toleration tolerates a taint" means
(upstream k8s.io/api/core/v1 toleration.go and component-helpers/scheduling/corev1 helpers).

The scheduler's TaintToleration, NodeUnschedulable and PodTopologySpread (nodeTaintsPolicy),
the taint-eviction and node-lifecycle controllers and the kubelet must agree on this, so it
lives here once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

from protos.kubera.v1 import core_pb2

log = logging.getLogger(__name__)

NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"

_MIN_INT64 = -(2**63)
_MAX_INT64 = 2**63 - 1


#: apimachinery content.IsDecimalInteger's message (and EmptyError's for "").
ERR_NOT_DECIMAL_INTEGER = "must be a valid decimal integer in canonical form"
ERR_EMPTY = "must be non-empty"


def decimal_integer_error(value: str) -> str:
    """apimachinery content.IsDecimalInteger: "" when `value` is "0" or -?[1-9][0-9]* (no
    "+", no leading zeros), else what is wrong with it."""
    if not value:
        return ERR_EMPTY
    body = value[1:] if value.startswith("-") else value
    if not body or not body.isascii() or not body.isdigit():
        return ERR_NOT_DECIMAL_INTEGER
    if body[0] == "0" and (len(body) > 1 or value.startswith("-")):
        return ERR_NOT_DECIMAL_INTEGER
    return ""


def is_decimal_integer(value: str) -> bool:
    return not decimal_integer_error(value)


def _parse_int64(what: str, value: str) -> int | None:
    """The int64 in `value`, or None after logging upstream's message for it (compareNumericValues:
    `failed to parse taint value as int64` err=... taint=..., the same for toleration)."""
    err = decimal_integer_error(value)
    if not err:
        n = int(value)
        if _MIN_INT64 <= n <= _MAX_INT64:
            return n
        err = f'strconv.ParseInt: parsing "{value}": value out of range'
    log.error(comparison_parse_error(what, value, err))
    return None


def comparison_parse_error(what: str, value: str, err: str) -> str:
    """Upstream's log line for a Gt/Lt value that is not an int64, `what` being "taint" or
    "toleration": failed to parse taint value as int64 err="..." taint="..."."""
    return f'failed to parse {what} value as int64 err="{err}" {what}="{value}"'


def toleration_tolerates_taint(toleration: core_pb2.Toleration, taint: core_pb2.Taint) -> bool:
    """corev1.Toleration.ToleratesTaint with the comparison operators enabled:

    - an empty effect matches every effect, else the effects must be equal;
    - an empty key matches every key (API validation pairs it with Exists);
    - Equal (the default) compares values; Exists matches any value;
    - Gt / Lt compare integers: the taint's value must be greater / less than the
      toleration's; a value that is not a canonical decimal int64 matches nothing and is
      logged with upstream's message (`comparison_parse_error`).
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
        want = _parse_int64("toleration", toleration.value)
        if want is None:
            return False
        have = _parse_int64("taint", taint.value)
        if have is None:
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
