"""Validation of DaemonSet, StatefulSet and ControllerRevision.

Why this module exists: the apps kinds that keep per-node or per-ordinal pods carry
upstream's pkg/apis/apps/validation rules (ValidateDaemonSetSpec, ValidateStatefulSetSpec,
ValidateControllerRevision), worded as upstream words them (the claims a StatefulSet
creates are validated as every claim, in storage.py).

Rules run after admission's defaults (updateStrategy, podManagementPolicy, ...), so a
required-but-defaulted field is missing only when a client wrote it empty on purpose.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import apps_pb2
from services.api.machinery.errors import forbidden, invalid, required, unsupported
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    Errors,
    child,
    nonnegative,
    show,
    validate_selector,
)
from services.api.validation.workloads import (
    int_or_percent,
    not_more_than_100_percent,
    pod_template,
)

UPDATE_STRATEGIES = ("RollingUpdate", "OnDelete")
POD_MANAGEMENT_POLICIES = ("OrderedReady", "Parallel")
RETENTION_POLICIES = ("Retain", "Delete")


def _int_or_percent_value(raw: str) -> int:
    """getIntOrPercentValue: the number, with or without its '%' (0 when unparsable)."""
    body = raw[:-1] if raw.endswith("%") else raw
    try:
        return int(body)
    except ValueError:
        return 0


def _shown(raw: str) -> int | str:
    """An IntOrString as upstream prints it in an error: an integer bare, a percent quoted."""
    try:
        return int(raw)
    except ValueError:
        return raw


def _selector_and_template(spec: Any, kind: str) -> Errors:
    """Selector required and non-empty, matching the template's labels; the template."""
    errs: Errors = []
    selector = None
    template_labels = dict(spec.template.metadata.labels)
    if not spec.HasField("selector"):
        if kind == "DaemonSet":
            # upstream: a nil selector selects nothing, so it cannot match the template
            detail = "`selector` does not match template `labels`"
            errs.append(invalid("spec.template.metadata.labels", show(template_labels), detail))
        else:
            errs.append(required("spec.selector"))
    else:
        selector, selector_errs = validate_selector("spec.selector", spec.selector)
        errs += selector_errs
        if not spec.selector.match_labels and not spec.selector.match_expressions:
            detail = f"empty selector is invalid for {kind.lower()}"
            errs.append(invalid("spec.selector", show(spec.selector), detail))
            selector = None
    if selector is not None and not selector.matches(template_labels):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", show(template_labels), detail))
    errs += pod_template("spec.template", spec.template, kind)
    errs += nonnegative("spec.minReadySeconds", spec.min_ready_seconds)
    if spec.HasField("revision_history_limit"):
        errs += nonnegative("spec.revisionHistoryLimit", spec.revision_history_limit)
    return errs


# ----------------------------------------------------------------------------- DaemonSet


def _rolling_update_daemon_set(path: str, ru: apps_pb2.RollingUpdateDaemonSet) -> Errors:
    """ValidateRollingUpdateDaemonSet: exactly one of maxUnavailable, maxSurge non-zero."""
    errs: Errors = []
    unavail_raw = ru.max_unavailable if ru.HasField("max_unavailable") else "0"
    surge_raw = ru.max_surge if ru.HasField("max_surge") else "0"
    u, u_pct, u_errs = int_or_percent(child(path, "maxUnavailable"), unavail_raw)
    s, s_pct, s_errs = int_or_percent(child(path, "maxSurge"), surge_raw)
    errs += u_errs + s_errs
    errs += not_more_than_100_percent(child(path, "maxUnavailable"), unavail_raw, u, u_pct)
    errs += not_more_than_100_percent(child(path, "maxSurge"), surge_raw, s, s_pct)
    has_unavailable = _int_or_percent_value(unavail_raw) != 0
    has_surge = _int_or_percent_value(surge_raw) != 0
    if has_unavailable and has_surge:
        detail = "may not be set when maxUnavailable is non-zero"
        errs.append(invalid(child(path, "maxSurge"), _shown(surge_raw), detail))
    elif not has_unavailable and not has_surge:
        errs.append(required(child(path, "maxUnavailable"), "cannot be 0 when maxSurge is 0"))
    return errs


def validate_daemon_set(ds: Any) -> Errors:
    spec = ds.spec
    errs = _selector_and_template(spec, "DaemonSet")
    strategy = spec.update_strategy
    if strategy.type == "OnDelete":
        pass
    elif strategy.type == "RollingUpdate":
        if not strategy.HasField("rolling_update"):
            errs.append(required("spec.updateStrategy.rollingUpdate"))
        else:
            errs += _rolling_update_daemon_set(
                "spec.updateStrategy.rollingUpdate", strategy.rolling_update
            )
    else:
        errs.append(unsupported("spec.updateStrategy", show(strategy), UPDATE_STRATEGIES))
    return errs


def validate_daemon_set_update(new: Any, old: Any) -> Errors:
    """apps/v1's daemonset strategy: the selector is immutable."""
    if new.spec.selector != old.spec.selector:
        return [invalid("spec.selector", show(new.spec.selector), FIELD_IMMUTABLE)]
    return []


# ----------------------------------------------------------------------------- StatefulSet


def validate_stateful_set(sts: Any) -> Errors:
    spec = sts.spec
    errs: Errors = []
    policy = spec.pod_management_policy
    if not policy:
        errs.append(required("spec.podManagementPolicy"))
    elif policy not in POD_MANAGEMENT_POLICIES:
        detail = "must be 'OrderedReady' or 'Parallel'"
        errs.append(invalid("spec.podManagementPolicy", policy, detail))
    strategy = spec.update_strategy
    if not strategy.type:
        errs.append(required("spec.updateStrategy"))
    elif strategy.type == "OnDelete":
        if strategy.HasField("rolling_update"):
            detail = "only allowed for updateStrategy 'RollingUpdate'"
            errs.append(
                invalid("spec.updateStrategy.rollingUpdate", show(strategy.rolling_update), detail)
            )
    elif strategy.type == "RollingUpdate":
        if strategy.HasField("rolling_update"):
            errs += _rolling_update_stateful_set(
                "spec.updateStrategy.rollingUpdate", strategy.rolling_update
            )
    else:
        detail = "must be 'RollingUpdate' or 'OnDelete'"
        errs.append(invalid("spec.updateStrategy", show(strategy), detail))
    if spec.HasField("persistent_volume_claim_retention_policy"):
        retention = spec.persistent_volume_claim_retention_policy
        path = "spec.persistentVolumeClaimRetentionPolicy"
        for value, name in (
            (retention.when_deleted, "whenDeleted"),
            (retention.when_scaled, "whenScaled"),
        ):
            if value not in RETENTION_POLICIES:
                errs.append(unsupported(child(path, name), value, RETENTION_POLICIES))
    if spec.HasField("replicas"):
        errs += nonnegative("spec.replicas", spec.replicas)
    if spec.HasField("ordinals"):
        errs += nonnegative("spec.ordinals.start", spec.ordinals.start)
    errs += _selector_and_template(spec, "StatefulSet")
    return errs


def _rolling_update_stateful_set(
    path: str, ru: apps_pb2.RollingUpdateStatefulSetStrategy
) -> Errors:
    errs = nonnegative(child(path, "partition"), ru.partition)
    if ru.HasField("max_unavailable"):
        mu_path = child(path, "maxUnavailable")
        value, is_pct, mu_errs = int_or_percent(mu_path, ru.max_unavailable)
        errs += mu_errs
        if _int_or_percent_value(ru.max_unavailable) == 0:
            errs.append(invalid(mu_path, _shown(ru.max_unavailable), "cannot be 0"))
        errs += not_more_than_100_percent(mu_path, ru.max_unavailable, value, is_pct)
    return errs


#: The spec fields a StatefulSet update may change (ValidateStatefulSetUpdate).
STATEFUL_SET_MUTABLE = (
    "replicas",
    "ordinals",
    "template",
    "update_strategy",
    "persistent_volume_claim_retention_policy",
    "min_ready_seconds",
)


def validate_stateful_set_update(new: Any, old: Any) -> Errors:
    a, b = apps_pb2.StatefulSetSpec(), apps_pb2.StatefulSetSpec()
    a.CopyFrom(new.spec)
    b.CopyFrom(old.spec)
    for name in STATEFUL_SET_MUTABLE:
        a.ClearField(name)
        b.ClearField(name)
    if a != b:
        detail = (
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
            "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
            "'minReadySeconds' are forbidden"
        )
        return [forbidden("spec", detail)]
    return []


# ----------------------------------------------------------------------------- ControllerRevision


def validate_controller_revision(cr: Any) -> Errors:
    errs: Errors = []
    if not cr.HasField("data"):
        errs.append(required("data", "data is mandatory"))
    errs += nonnegative("revision", cr.revision)
    return errs


def validate_controller_revision_update(new: Any, old: Any) -> Errors:
    if new.data != old.data:
        return [invalid("data", show(new.data), FIELD_IMMUTABLE)]
    return []
