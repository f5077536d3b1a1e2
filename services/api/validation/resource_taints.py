"""Validation of device taints, device tolerations and the DeviceTaintRule kind
(resource.k8s.io/v1; upstream pkg/apis/resource/validation/validation.go:
validateDeviceTaint, validateDeviceToleration, ValidateDeviceTaintRule(Update),
ValidateDeviceTaintRuleStatusUpdate).

A taint needs a label-name key, a label value (when set) and an effect of None, NoSchedule
or NoExecute; an update keeping a stored taint's effect does not judge that effect again
(stored objects may carry effects added later). A toleration's key (when set) is a label
name, Exists takes no value, Equal a label value, and its effect (when set) is one of the
three. A rule's selector names a driver, pool and device as slices do. At most 16 taints
per device, 16 tolerations per request, 8 conditions in a rule's status.

Adaptation: upstream defaults a toleration's operator to Equal before validating, so an
empty operator is Required only for objects that skipped defaulting; kubera's defaulting
(services/api/defaults/setdefaults.py) does the same.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import resource_pb2
from services.api.machinery import names
from services.api.machinery.errors import invalid, required, unsupported
from services.api.validation.common import Errors, child, index, label_name
from services.api.validation.resource import (
    dns_label,
    too_many,
    validate_driver_name,
    validate_pool_name,
)

DEVICE_TAINTS_MAX = 16
DEVICE_TOLERATIONS_MAX = 16
RULE_CONDITIONS_MAX = 8
TAINT_EFFECTS = ("NoExecute", "NoSchedule", "None")
TOLERATION_OPERATORS = ("Equal", "Exists")


def _label_value(path: str, value: str) -> Errors:
    return [invalid(path, value, m) for m in names.label_value(value)]


def validate_device_taint(
    path: str, taint: resource_pb2.DeviceTaint, old: resource_pb2.DeviceTaint | None = None
) -> Errors:
    errs = label_name(child(path, "key"), taint.key)
    if taint.value:
        errs += _label_value(child(path, "value"), taint.value)
    if old is None or old.effect != taint.effect:
        if not taint.effect:
            errs.append(required(child(path, "effect")))
        elif taint.effect not in TAINT_EFFECTS:
            errs.append(unsupported(child(path, "effect"), taint.effect, TAINT_EFFECTS))
    return errs


def validate_device_taints(
    path: str,
    taints: Sequence[resource_pb2.DeviceTaint],
    old: Sequence[resource_pb2.DeviceTaint] = (),
) -> Errors:
    errs: Errors = []
    for i, t in enumerate(taints):
        errs += validate_device_taint(index(path, i), t, old[i] if i < len(old) else None)
    if len(taints) > DEVICE_TAINTS_MAX:
        errs.append(too_many(path, len(taints), DEVICE_TAINTS_MAX))
    return errs


def validate_device_toleration(path: str, t: resource_pb2.DeviceToleration) -> Errors:
    errs: Errors = []
    if t.key:
        errs += label_name(child(path, "key"), t.key)
    if t.operator == "Exists":
        if t.value:
            errs.append(
                invalid(child(path, "value"), t.value, "must be empty for operator `Exists`")
            )
    elif t.operator == "Equal":
        errs += _label_value(child(path, "value"), t.value)
    elif not t.operator:
        errs.append(required(child(path, "operator")))
    else:
        errs.append(unsupported(child(path, "operator"), t.operator, TOLERATION_OPERATORS))
    if t.effect and t.effect not in TAINT_EFFECTS:
        errs.append(unsupported(child(path, "effect"), t.effect, TAINT_EFFECTS))
    return errs


def validate_device_tolerations(
    path: str, tolerations: Sequence[resource_pb2.DeviceToleration]
) -> Errors:
    errs: Errors = []
    for i, t in enumerate(tolerations):
        errs += validate_device_toleration(index(path, i), t)
    if len(tolerations) > DEVICE_TOLERATIONS_MAX:
        errs.append(too_many(path, len(tolerations), DEVICE_TOLERATIONS_MAX))
    return errs


def validate_slice_taints(rs: resource_pb2.ResourceSlice) -> Errors:
    """Each device's taints (spec.devices[i].taints)."""
    errs: Errors = []
    for i, d in enumerate(rs.spec.devices):
        errs += validate_device_taints(child(index("spec.devices", i), "taints"), d.taints)
    return errs


def _validate_rule_spec(
    spec: resource_pb2.DeviceTaintRuleSpec, old: resource_pb2.DeviceTaintRuleSpec | None
) -> Errors:
    errs: Errors = []
    if spec.HasField("device_selector"):
        sel, path = spec.device_selector, "spec.deviceSelector"
        if sel.HasField("driver"):
            errs += validate_driver_name(child(path, "driver"), sel.driver)
        if sel.HasField("pool"):
            errs += validate_pool_name(child(path, "pool"), sel.pool)
        if sel.HasField("device"):
            errs += dns_label(child(path, "device"), sel.device)
    return errs + validate_device_taint(
        "spec.taint", spec.taint, old.taint if old is not None else None
    )


def _validate_rule_status(status: resource_pb2.DeviceTaintRuleStatus) -> Errors:
    errs: Errors = []
    path = "status.conditions"
    for i, c in enumerate(status.conditions):
        p = index(path, i)
        if not c.type:
            errs.append(required(child(p, "type")))
        if c.status not in ("True", "False", "Unknown"):
            errs.append(unsupported(child(p, "status"), c.status, ("False", "True", "Unknown")))
    if len(status.conditions) > RULE_CONDITIONS_MAX:
        errs.append(too_many(path, len(status.conditions), RULE_CONDITIONS_MAX))
    return errs


def validate_device_taint_rule(rule: resource_pb2.DeviceTaintRule) -> Errors:
    return _validate_rule_spec(rule.spec, None) + _validate_rule_status(rule.status)


def validate_device_taint_rule_update(
    new: resource_pb2.DeviceTaintRule, old: resource_pb2.DeviceTaintRule
) -> Errors:
    return _validate_rule_spec(new.spec, old.spec) + _validate_rule_status(new.status)
