"""Validation of core/v1's policy kinds: ResourceQuota and LimitRange.

Rules and words from upstream's pkg/apis/core/validation/validation.go
(ValidateResourceQuota, ValidateResourceQuotaSpec, validateScopeSelector, ValidateLimitRange).
Differences: resource names are checked with the container-resource rule kubera already has
for quota keys that name a compute resource (``cpu``, ``requests.memory``) and with the
qualified-name rule for the rest (``count/deployments.apps``, ``pods``), which is what
upstream's validateResourceQuotaResourceName and validateLimitRangeResourceName accept.
"""

from __future__ import annotations

from typing import Any

from services.api.machinery import names
from services.api.machinery.errors import duplicate, forbidden, invalid, required
from services.api.machinery.quantity import Quantity
from services.api.validation.common import (
    Errors,
    child,
    field_quantity,
    index,
    name_errors,
    quantity_value,
)

LIMIT_TYPES = ("Pod", "Container", "PersistentVolumeClaim")
QUOTA_SCOPES = (
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
)
SCOPE_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")
_EXISTS_ONLY = ("Terminating", "NotTerminating", "BestEffort", "NotBestEffort")
#: Scopes that track only the pods' count (upstream's standardQuotaScopes of BestEffort).
_BEST_EFFORT_RESOURCES = frozenset({"pods", "count/pods"})
_COMPUTE_SCOPE_RESOURCES = frozenset(
    {
        "pods",
        "count/pods",
        "cpu",
        "memory",
        "requests.cpu",
        "requests.memory",
        "limits.cpu",
        "limits.memory",
        "ephemeral-storage",
        "requests.ephemeral-storage",
        "limits.ephemeral-storage",
    }
)


def _resource_list(path: str, values: Any, errs: Errors) -> dict[str, Quantity]:
    """A map of resource names to non-negative quantities (quota hard/used, a limit's min/max)."""
    parsed: dict[str, Quantity] = {}
    for name in sorted(values):
        p = index(path, name)
        errs += name_errors(p, name, names.qualified_name)
        q = field_quantity(p, values[name], errs)
        if q is None:
            continue
        errs += quantity_value(p, name, q)
        parsed[name] = q
    return parsed


#: helper.IsStandardQuotaResourceName's names (the scope check looks at these only).
_STANDARD_QUOTA_RESOURCES = frozenset(
    {
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.storage",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
    }
)
_POD_COMPUTE = frozenset(
    {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}
)


def _scope_resources_ok(scope: str, hard: dict[str, Quantity]) -> bool:
    """IsResourceQuotaScopeValidForResource over the standard quota names of `hard`."""
    standard = [r for r in hard if r in _STANDARD_QUOTA_RESOURCES]
    if scope == "BestEffort":
        return all(r == "pods" for r in standard)
    if scope in (
        "Terminating",
        "NotTerminating",
        "NotBestEffort",
        "PriorityClass",
        "CrossNamespacePodAffinity",
    ):
        return all(r == "pods" or r in _POD_COMPUTE for r in standard)
    return True


def validate_resource_quota(rq: Any) -> Errors:
    errs: Errors = []
    spec = rq.spec
    hard = _resource_list("spec.hard", spec.hard, errs)
    scopes: list[str] = list(spec.scopes)
    for s in spec.scopes:
        if s not in QUOTA_SCOPES:
            errs.append(invalid("spec.scopes", s, "unsupported scope"))
    sel_path = "spec.scopeSelector.matchExpressions"
    for i, req in enumerate(spec.scope_selector.match_expressions):
        p = index(sel_path, i)
        if req.scope_name not in QUOTA_SCOPES:
            errs.append(invalid(child(p, "scopeName"), req.scope_name, "unsupported scope"))
            continue
        scopes.append(req.scope_name)
        if req.operator not in SCOPE_OPERATORS:
            errs.append(
                invalid(child(p, "operator"), req.operator, "not a valid selector operator")
            )
        elif req.operator in ("In", "NotIn"):
            if not req.values:
                errs.append(
                    required(
                        child(p, "values"),
                        "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                    )
                )
        elif req.values:
            errs.append(
                invalid(
                    child(p, "values"),
                    list(req.values),
                    "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                )
            )
        if req.scope_name in _EXISTS_ONLY and req.operator != "Exists":
            errs.append(
                invalid(
                    child(p, "operator"),
                    req.operator,
                    "must be 'Exist' when scope is any of ResourceQuotaScopeTerminating, "
                    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort and "
                    "ResourceQuotaScopeNotBestEffort",
                )
            )
    path = "spec.scopeSelector" if spec.scope_selector.match_expressions else "spec.scopes"
    for s in scopes:
        if s in QUOTA_SCOPES and not _scope_resources_ok(s, hard):
            errs.append(invalid(path, s, "unsupported scope applied to resource"))
    pairs = (("Terminating", "NotTerminating"), ("BestEffort", "NotBestEffort"))
    for a, b in pairs:
        if a in scopes and b in scopes:
            errs.append(invalid(path, scopes, "conflicting scopes"))
    _resource_list("status.hard", rq.status.hard, errs)
    _resource_list("status.used", rq.status.used, errs)
    return errs


def validate_limit_range(lr: Any) -> Errors:
    """ValidateLimitRange: types known and not repeated; Pod items without defaults; for each
    resource min <= defaultRequest <= default <= max and maxLimitRequestRatio >= 1."""
    errs: Errors = []
    seen: set[str] = set()
    for i, item in enumerate(lr.spec.limits):
        p = index("spec.limits", i)
        if not item.type:
            errs.append(required(child(p, "type")))
        elif item.type in seen:
            errs.append(duplicate(child(p, "type"), item.type))
        seen.add(item.type)
        mx = _resource_list(child(p, "max"), item.max, errs)
        mn = _resource_list(child(p, "min"), item.min, errs)
        df = _resource_list(child(p, "default"), item.default, errs)
        dr = _resource_list(child(p, "defaultRequest"), item.default_request, errs)
        ratio = _resource_list(child(p, "maxLimitRequestRatio"), item.max_limit_request_ratio, errs)
        if item.type == "Pod":
            if item.default:
                errs.append(
                    forbidden(child(p, "default"), "may not be specified when `type` is 'Pod'")
                )
            if item.default_request:
                errs.append(
                    forbidden(
                        child(p, "defaultRequest"), "may not be specified when `type` is 'Pod'"
                    )
                )
        for k in sorted(set(mx) | set(mn) | set(df) | set(dr) | set(ratio)):
            lo, hi, d, req, r = mn.get(k), mx.get(k), df.get(k), dr.get(k), ratio.get(k)
            if lo is not None and hi is not None and lo.value > hi.value:
                errs.append(
                    invalid(
                        index(child(p, "min"), k),
                        lo.canonical(),
                        f"min value {lo.canonical()} is greater than max value {hi.canonical()}",
                    )
                )
            if req is not None:
                if lo is not None and lo.value > req.value:
                    errs.append(
                        invalid(
                            index(child(p, "defaultRequest"), k),
                            req.canonical(),
                            f"min value {lo.canonical()} is greater than default request value {req.canonical()}",
                        )
                    )
                if hi is not None and req.value > hi.value:
                    errs.append(
                        invalid(
                            index(child(p, "defaultRequest"), k),
                            req.canonical(),
                            f"default request value {req.canonical()} is greater than max value {hi.canonical()}",
                        )
                    )
                if d is not None and req.value > d.value:
                    errs.append(
                        invalid(
                            index(child(p, "defaultRequest"), k),
                            req.canonical(),
                            f"default request value {req.canonical()} is greater than default limit value {d.canonical()}",
                        )
                    )
            if d is not None:
                if lo is not None and lo.value > d.value:
                    errs.append(
                        invalid(
                            index(child(p, "default"), k),
                            d.canonical(),
                            f"min value {lo.canonical()} is greater than default value {d.canonical()}",
                        )
                    )
                if hi is not None and d.value > hi.value:
                    errs.append(
                        invalid(
                            index(child(p, "default"), k),
                            d.canonical(),
                            f"default value {d.canonical()} is greater than max value {hi.canonical()}",
                        )
                    )
            if r is not None:
                if r.value < 1:
                    errs.append(
                        invalid(
                            index(child(p, "maxLimitRequestRatio"), k),
                            r.canonical(),
                            f"ratio {r.canonical()} is less than 1",
                        )
                    )
                if lo is not None and hi is not None and not lo.is_zero():
                    max_ratio = hi.value / lo.value
                    if r.value > max_ratio:
                        errs.append(
                            invalid(
                                index(child(p, "maxLimitRequestRatio"), k),
                                r.canonical(),
                                f"ratio {r.canonical()} is greater than max/min = {max_ratio:f}",
                            )
                        )
    return errs
