"""Workload validation: ReplicaSet, Deployment and PodDisruptionBudget.

Why this module exists: these kinds select pods by label and carry upstream's apps and
policy rules (pkg/apis/{apps,policy}/validation): a required, non-empty selector that
matches the pod template's labels, the template rules on top of the pod spec, rolling
update int-or-percent values, the PDB's minAvailable/maxUnavailable, and the immutable
selector on update.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.machinery import labels, names
from services.api.machinery.errors import forbidden, invalid, required, unsupported
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    MAX_INT32,
    Errors,
    child,
    label_map,
    nonnegative,
    show,
    validate_annotations,
    validate_selector,
)
from services.api.validation.pod import validate_pod_spec

# ----------------------------------------------------------------------------- constants

DEFAULT_ROLLING_UPDATE = "25%"  # upstream's default for both maxSurge and maxUnavailable

DEPLOYMENT_STRATEGIES = ("Recreate", "RollingUpdate")
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")


# ----------------------------------------------------------------------------- pod templates


def pod_template(path: str, template: core_pb2.PodTemplateSpec, kind: str) -> Errors:
    """ValidatePodTemplateSpec plus the ReplicaSet/Deployment template rules."""
    meta_path = child(path, "metadata")
    spec_path = child(path, "spec")
    errs = label_map(child(meta_path, "labels"), template.metadata.labels)
    errs += validate_annotations(child(meta_path, "annotations"), template.metadata.annotations)
    errs += validate_pod_spec(spec_path, template.spec, is_pod=False)
    if template.spec.restart_policy and template.spec.restart_policy != "Always":
        errs.append(
            unsupported(
                child(spec_path, "restartPolicy"), template.spec.restart_policy, ("Always",)
            )
        )
    if template.spec.HasField("active_deadline_seconds"):
        detail = f"activeDeadlineSeconds in {kind} is not Supported"
        errs.append(forbidden(child(spec_path, "activeDeadlineSeconds"), detail))
    return errs


# ----------------------------------------------------------------------------- int-or-percent


def int_or_percent(path: str, raw: str) -> tuple[int | None, bool, Errors]:
    """ValidatePositiveIntOrPercent: (value, is_percent, errors)."""
    as_int = labels.parse_int64(raw)
    if as_int is not None:
        return as_int, False, nonnegative(path, as_int)
    body = raw[:-1]
    if raw.endswith("%") and body.isascii() and body.isdigit():
        if len(body.lstrip("0")) > 10 or int(body) > MAX_INT32:
            # upstream's regex takes any digits, its controllers then fail on them
            detail = f"must be at most {MAX_INT32}% (kubera holds percentages as int32)"
            return None, True, [invalid(path, raw, detail)]
        return int(body), True, []
    msg = names.regex_error(
        "a valid percent string must be a numeric string followed by an ending '%'",
        "[0-9]+%",
        "1%",
        "93%",
    )
    return None, False, [invalid(path, raw, msg)]


def not_more_than_100_percent(path: str, raw: str, value: int | None, is_percent: bool) -> Errors:
    if is_percent and value is not None and value > 100:
        return [invalid(path, raw, "must not be greater than 100%")]
    return []


# ----------------------------------------------------------------------------- kinds: create


def validate_pod_disruption_budget(pdb: Any) -> Errors:
    spec = pdb.spec
    errs: Errors = []
    if spec.HasField("min_available") and spec.HasField("max_unavailable"):
        shown = show(spec)
        errs.append(invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set"))
    for field, name in (("min_available", "minAvailable"), ("max_unavailable", "maxUnavailable")):
        if spec.HasField(field):
            raw = getattr(spec, field)
            value, is_percent, field_errs = int_or_percent(f"spec.{name}", raw)
            errs += field_errs
            errs += not_more_than_100_percent(f"spec.{name}", raw, value, is_percent)
    if spec.HasField("selector"):
        errs += validate_selector("spec.selector", spec.selector)[1]
    policy = spec.unhealthy_pod_eviction_policy
    if policy and policy not in UNHEALTHY_POD_EVICTION_POLICIES:
        errs.append(
            unsupported("spec.unhealthyPodEvictionPolicy", policy, UNHEALTHY_POD_EVICTION_POLICIES)
        )
    return errs


def _workload_spec(spec: Any) -> Errors:
    """What ReplicaSet and Deployment specs share: replicas, selector, template."""
    errs: Errors = []
    if spec.HasField("replicas"):
        errs += nonnegative("spec.replicas", spec.replicas)
    errs += nonnegative("spec.minReadySeconds", spec.min_ready_seconds)
    selector: labels.Selector | None = None
    if not spec.HasField("selector"):
        errs.append(required("spec.selector"))
    else:
        selector, selector_errs = validate_selector("spec.selector", spec.selector)
        errs += selector_errs
        if not spec.selector.match_labels and not spec.selector.match_expressions:
            errs.append(
                invalid(
                    "spec.selector",
                    show(spec.selector),
                    "empty selector is invalid for deployment",
                )
            )
            selector = None
    template_labels = dict(spec.template.metadata.labels)
    if selector is not None and not selector.matches(template_labels):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", show(template_labels), detail))
    errs += pod_template("spec.template", spec.template, "ReplicaSet")
    return errs


def validate_replica_set(rs: Any) -> Errors:
    return _workload_spec(rs.spec)


def validate_deployment(deploy: Any) -> Errors:
    spec = deploy.spec
    errs = _workload_spec(spec)
    strategy = spec.strategy
    stype = strategy.type or "RollingUpdate"
    if stype == "Recreate":
        if strategy.HasField("rolling_update"):
            detail = "may not be specified when strategy `type` is 'Recreate'"
            errs.append(forbidden("spec.strategy.rollingUpdate", detail))
    elif stype == "RollingUpdate":
        ru = strategy.rolling_update
        path = "spec.strategy.rollingUpdate"
        surge_raw = ru.max_surge if ru.HasField("max_surge") else DEFAULT_ROLLING_UPDATE
        unavail_raw = (
            ru.max_unavailable if ru.HasField("max_unavailable") else DEFAULT_ROLLING_UPDATE
        )
        surge, _, surge_errs = int_or_percent(f"{path}.maxSurge", surge_raw)
        unavail, unavail_pct, unavail_errs = int_or_percent(f"{path}.maxUnavailable", unavail_raw)
        errs += unavail_errs + surge_errs
        if surge == 0 and unavail == 0:
            errs.append(
                invalid(f"{path}.maxUnavailable", unavail_raw, "may not be 0 when `maxSurge` is 0")
            )
        errs += not_more_than_100_percent(
            f"{path}.maxUnavailable", unavail_raw, unavail, unavail_pct
        )
    else:
        errs.append(unsupported("spec.strategy.type", strategy.type, DEPLOYMENT_STRATEGIES))
    if spec.HasField("revision_history_limit"):
        errs += nonnegative("spec.revisionHistoryLimit", spec.revision_history_limit)
    if spec.HasField("progress_deadline_seconds"):
        errs += nonnegative("spec.progressDeadlineSeconds", spec.progress_deadline_seconds)
        if spec.progress_deadline_seconds <= spec.min_ready_seconds:
            detail = "must be greater than minReadySeconds"
            errs.append(
                invalid("spec.progressDeadlineSeconds", spec.progress_deadline_seconds, detail)
            )
    return errs


# ----------------------------------------------------------------------------- kinds: update


def validate_workload_update(new: Any, old: Any) -> Errors:
    if new.spec.selector != old.spec.selector or new.spec.HasField("selector") != old.spec.HasField(
        "selector"
    ):
        return [invalid("spec.selector", show(new.spec.selector), FIELD_IMMUTABLE)]
    return []
