"""The LimitRanger admission plugin: a namespace's LimitRanges default and bound its pods.

Upstream's plugin/pkg/admission/limitranger/admission.go, for pods on create:

1. mutate: each container (and init container) gets, for every resource it does not name,
   the `default` of the namespace's Container items as its limit and their
   `defaultRequest` as its request (defaultContainerResourceRequirements +
   mergeContainerResources), and the pod is annotated
   ``kubernetes.io/limit-ranger: LimitRanger plugin set: cpu, memory request for container
   app; cpu limit for container app``;
2. validate: per Container item, each container's request and limit against min, max and
   maxLimitRequestRatio; per Pod item, the pod's summed requests and limits; every failure
   is collected and the create refused with 403 ``pods "x" is forbidden: <errors>`` (one
   error as it is, several as ``[a, b]``, apimachinery's aggregate).

A LimitRange's own defaulting (SetDefaults_LimitRangeItem: a Container item's `default`
from `max`, `defaultRequest` from `default` then `min`) runs when the LimitRange is
admitted, with every other default (services/api/defaults, `default_limit_range_item`).
PersistentVolumeClaim items bound a claim's storage request on create
(PersistentVolumeClaimValidateLimitFunc: `min` as for a container with no limit, `max`
against the request only, maxRequestConstraint); a claim's update is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from protos.kubera.v1 import core_pb2, policyv1core_pb2, storage_pb2
from services.api.helpers import quota
from services.api.machinery.errors import ForbiddenError
from services.api.machinery.quantity import Quantity

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
CONTAINER = "Container"
#: resource.MaxMilliValue: the largest value whose milli-value fits an int64.
MAX_MILLI_VALUE = (2**63 - 1) // 1000
POD = "Pod"
CLAIM = "PersistentVolumeClaim"


def _container_defaults(
    lr: policyv1core_pb2.LimitRange,
) -> tuple[dict[str, str], dict[str, str]]:
    """defaultContainerResourceRequirements: (requests, limits) of the Container items."""
    requests: dict[str, str] = {}
    limits: dict[str, str] = {}
    for item in lr.spec.limits:
        if item.type == CONTAINER:
            requests.update(item.default_request)
            limits.update(item.default)
    return requests, limits


def _merge(
    c: core_pb2.Container, requests: Mapping[str, str], limits: Mapping[str, str], prefix: str
) -> list[str]:
    """mergeContainerResources: fill what the container does not name; say what was set."""
    set_limits = [k for k in sorted(limits) if k not in c.resources.limits]
    set_requests = [k for k in sorted(requests) if k not in c.resources.requests]
    for k in set_limits:
        c.resources.limits[k] = limits[k]
    for k in set_requests:
        c.resources.requests[k] = requests[k]
    notes = []
    if set_requests:
        notes.append(f"{', '.join(set_requests)} request for {prefix} {c.name}")
    if set_limits:
        notes.append(f"{', '.join(set_limits)} limit for {prefix} {c.name}")
    return notes


def apply_defaults(pod: core_pb2.Pod, lr: policyv1core_pb2.LimitRange) -> None:
    """PodMutateLimitFunc for one LimitRange: default requests and limits, and the
    annotation naming them (a later range that sets something rewrites it, as upstream)."""
    requests, limits = _container_defaults(lr)
    if not requests and not limits:
        return
    notes: list[str] = []
    for c in pod.spec.containers:
        notes += _merge(c, requests, limits, "container")
    for c in pod.spec.init_containers:
        notes += _merge(c, requests, limits, "init container")
    if notes:
        pod.metadata.annotations[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(
            notes
        )


def _values(req: Quantity | None, lim: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """requestLimitEnforcedValues: milli-units unless one of them is too large for them."""
    qs = [q for q in (req, lim, enforced) if q is not None]
    milli = all(q.int_value() <= MAX_MILLI_VALUE for q in qs)

    def v(q: Quantity | None) -> int:
        if q is None:
            return 0
        return q.milli_value() if milli else q.int_value()

    return v(req), v(lim), v(enforced)


def min_constraint(
    limit_type: str,
    name: str,
    enforced: Quantity,
    request: Mapping[str, Quantity],
    limit: Mapping[str, Quantity],
) -> str:
    req, lim = request.get(name), limit.get(name)
    r, li, e = _values(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {limit_type} is {enforced}.  No request is specified"
    if r < e:
        return f"minimum {name} usage per {limit_type} is {enforced}, but request is {req}"
    if lim is not None and li < e:
        return f"minimum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    return ""


def max_constraint(
    limit_type: str,
    name: str,
    enforced: Quantity,
    request: Mapping[str, Quantity],
    limit: Mapping[str, Quantity],
) -> str:
    req, lim = request.get(name), limit.get(name)
    r, li, e = _values(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No limit is specified"
    if li > e:
        return f"maximum {name} usage per {limit_type} is {enforced}, but limit is {lim}"
    if req is not None and r > e:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def ratio_constraint(
    limit_type: str,
    name: str,
    enforced: Quantity,
    request: Mapping[str, Quantity],
    limit: Mapping[str, Quantity],
) -> str:
    req, lim = request.get(name), limit.get(name)
    r, li, _ = _values(req, lim, enforced)
    if req is None or r == 0:
        return (
            f"{name} max limit to request ratio per {limit_type} is {enforced}, "
            "but no request is specified or request is 0"
        )
    if lim is None or li == 0:
        return (
            f"{name} max limit to request ratio per {limit_type} is {enforced}, "
            "but no limit is specified or limit is 0"
        )
    observed = li / r
    shown = observed
    max_ratio = float(enforced.int_value())
    if enforced.int_value() <= MAX_MILLI_VALUE:
        observed *= 1000
        max_ratio = float(enforced.milli_value())
    if observed > max_ratio:
        return (
            f"{name} max limit to request ratio per {limit_type} is {enforced}, "
            f"but provided ratio is {shown:f}"
        )
    return ""


def max_request_constraint(
    limit_type: str, name: str, enforced: Quantity, request: Mapping[str, Quantity]
) -> str:
    """maxRequestConstraint: a claim's max bounds what it requests (it has no limit)."""
    req = request.get(name)
    if req is None:
        return f"maximum {name} usage per {limit_type} is {enforced}.  No request is specified"
    r, _, e = _values(req, None, enforced)
    if r > e:
        return f"maximum {name} usage per {limit_type} is {enforced}, but request is {req}"
    return ""


def claim_violations(
    pvc: storage_pb2.PersistentVolumeClaim, ranges: Sequence[policyv1core_pb2.LimitRange]
) -> list[str]:
    """PersistentVolumeClaimValidateLimitFunc over every range of the namespace."""
    errs: list[str] = []
    request = quota.parse_list(pvc.spec.resources.requests)
    for lr in ranges:
        for item in lr.spec.limits:
            if item.type != CLAIM:
                continue
            for k, v in sorted(quota.parse_list(item.min).items()):
                errs.append(min_constraint(CLAIM, k, v, request, {}))
            for k, v in sorted(quota.parse_list(item.max).items()):
                errs.append(max_request_constraint(CLAIM, k, v, request))
    return [e for e in errs if e]


def _check(
    item: policyv1core_pb2.LimitRangeItem,
    limit_type: str,
    request: Mapping[str, Quantity],
    limit: Mapping[str, Quantity],
) -> list[str]:
    errs = []
    # Go ranges over maps in random order; sorted by name here, so the message is stable.
    for k, v in sorted(quota.parse_list(item.min).items()):
        errs.append(min_constraint(limit_type, k, v, request, limit))
    for k, v in sorted(quota.parse_list(item.max).items()):
        errs.append(max_constraint(limit_type, k, v, request, limit))
    for k, v in sorted(quota.parse_list(item.max_limit_request_ratio).items()):
        errs.append(ratio_constraint(limit_type, k, v, request, limit))
    return [e for e in errs if e]


def violations(pod: core_pb2.Pod, ranges: Sequence[policyv1core_pb2.LimitRange]) -> list[str]:
    """The validating half (PodValidateLimitFunc) over every range of the namespace."""
    errs: list[str] = []
    for lr in ranges:
        for item in lr.spec.limits:
            if item.type == CONTAINER:
                for c in (*pod.spec.containers, *pod.spec.init_containers):
                    errs += _check(
                        item,
                        CONTAINER,
                        quota.parse_list(c.resources.requests),
                        quota.parse_list(c.resources.limits),
                    )
            elif item.type == POD:
                # The limitranger's podRequests/podLimits leave the overhead out.
                reqs = quota.pod_requests(pod, overhead=False)
                errs += _check(item, POD, reqs, quota.pod_limits(pod, overhead=False))
    return errs


def admit(pod: core_pb2.Pod, ranges: Sequence[policyv1core_pb2.LimitRange]) -> None:
    """Default, then validate; ForbiddenError (403) with upstream's aggregate message."""
    for lr in ranges:
        apply_defaults(pod, lr)
    _refuse("pods", pod.metadata.name, violations(pod, ranges))


def admit_claim(
    pvc: storage_pb2.PersistentVolumeClaim, ranges: Sequence[policyv1core_pb2.LimitRange]
) -> None:
    """Validate a claim's storage request; ForbiddenError (403) as for a pod."""
    _refuse("persistentvolumeclaims", pvc.metadata.name, claim_violations(pvc, ranges))


def _refuse(resource: str, name: str, errs: list[str]) -> None:
    if not errs:
        return
    why = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
    raise ForbiddenError(f'{resource} "{name}" is forbidden: {why}')
