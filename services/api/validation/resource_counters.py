"""Validation of a ResourceSlice's partitionable-device and consumable-capacity fields
(upstream pkg/apis/resource/validation/validation.go: validateResourceSliceSpec's
sharedCounters and perDeviceNodeSelection, validateDevice's consumesCounters, per-device
node selection and capacity requestPolicy, validateRequestPolicy*). resource.py calls
these hooks; the rules whose fields belong to other features stay there.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from protos.kubera.v1 import resource_pb2
from services.api.machinery import names
from services.api.machinery.errors import (
    TOO_MANY,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
)
from services.api.machinery.quantity import Quantity
from services.api.validation.common import (
    Errors,
    Shown,
    child,
    field_quantity,
    index,
    name_errors,
)
from services.api.validation.pod_scheduling import validate_node_selector

T = TypeVar("T")

SLICE_MAX_COUNTER_SETS = 8
COUNTERS_PER_COUNTER_SET_MAX = 32
DEVICE_COUNTER_CONSUMPTIONS_MAX = 2
COUNTERS_PER_CONSUMPTION_MAX = 32
#: A slice whose devices consume counters (or carry taints) holds at most this many.
SLICE_MAX_DEVICES_WITH_COUNTERS = 64
REQUEST_POLICY_VALID_VALUES_MAX = 10

PER_DEVICE_ONE_OF = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
PER_DEVICE_ONLY = (
    "`nodeName`, `nodeSelector` and `allNodes` can only be set if `perDeviceNodeSelection` "
    "is set to true in the ResourceSlice spec"
)


def _too_many(path: str, actual: int, maximum: int) -> Errors:
    return [FieldError(path, TOO_MANY, f"must have at most {maximum} items", actual)]


def _counters(path: str, counters: Mapping[str, resource_pb2.Counter], maximum: int) -> Errors:
    if not counters:
        return [required(path)]
    if len(counters) > maximum:
        return _too_many(path, len(counters), maximum)
    errs: Errors = []
    for name in sorted(counters):
        kp = index(path, name)
        errs += name_errors(kp, name, names.dns1123_label)
        field_quantity(child(kp, "value"), counters[name].value, errs)
    return errs


def _named_list(
    path: str,
    items: Sequence[T],
    key: Callable[[T], str],
    maximum: int,
    check: Callable[[str, T], Errors],
) -> Errors:
    """upstream validateSet: too many short-circuits (unlike resource.validate_list); each
    item; a duplicate key at the item's index."""
    if len(items) > maximum:
        return _too_many(path, len(items), maximum)
    errs: Errors = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        ip = index(path, i)
        errs += check(ip, item)
        k = key(item)
        if k in seen:
            errs.append(duplicate(ip, k))
        seen.add(k)
    return errs


def _counter_set(path: str, cs: resource_pb2.CounterSet) -> Errors:
    errs = (
        [required(child(path, "name"))]
        if not cs.name
        else name_errors(child(path, "name"), cs.name, names.dns1123_label)
    )
    return errs + _counters(child(path, "counters"), cs.counters, COUNTERS_PER_COUNTER_SET_MAX)


def _consumption(path: str, c: resource_pb2.DeviceCounterConsumption) -> Errors:
    errs = (
        [required(child(path, "counterSet"))]
        if not c.counter_set
        else name_errors(child(path, "counterSet"), c.counter_set, names.dns1123_label)
    )
    return errs + _counters(child(path, "counters"), c.counters, COUNTERS_PER_CONSUMPTION_MAX)


def validate_slice_spec(spec: resource_pb2.ResourceSliceSpec) -> tuple[list[str], Errors, int]:
    """The node-selection fields this feature adds (to count with the others), errors of
    sharedCounters, and the most devices the slice may hold (-1: the default)."""
    set_fields: list[str] = []
    errs: Errors = []
    if spec.HasField("per_device_node_selection"):
        if spec.per_device_node_selection:
            set_fields.append("`perDeviceNodeSelection`")
        else:
            errs.append(
                invalid("spec.perDeviceNodeSelection", False, "must be either unset or set to true")
            )
    if spec.shared_counters and spec.devices:
        errs.append(invalid("spec", "", "only one of `sharedCounters` or `devices` is allowed"))
    errs += _named_list(
        "spec.sharedCounters",
        spec.shared_counters,
        lambda cs: cs.name,
        SLICE_MAX_COUNTER_SETS,
        _counter_set,
    )
    limit = (
        SLICE_MAX_DEVICES_WITH_COUNTERS if any(d.consumes_counters for d in spec.devices) else -1
    )
    return set_fields, errs, limit


def validate_device(path: str, device: resource_pb2.Device, per_device: bool) -> Errors:
    """consumesCounters, per-device node selection and capacity request policies."""
    errs = _named_list(
        child(path, "consumesCounters"),
        device.consumes_counters,
        lambda c: c.counter_set,
        DEVICE_COUNTER_CONSUMPTIONS_MAX,
        _consumption,
    )
    has_any = (
        device.HasField("node_name")
        or device.HasField("node_selector")
        or device.HasField("all_nodes")
    )
    if per_device:
        set_fields: list[str] = []
        if device.HasField("node_name"):
            if device.node_name:
                set_fields.append("`nodeName`")
                errs += name_errors(
                    child(path, "nodeName"), device.node_name, names.dns1123_subdomain
                )
            else:
                errs.append(invalid(child(path, "nodeName"), "", "must not be empty"))
        if device.HasField("node_selector"):
            set_fields.append("`nodeSelector`")
            errs += validate_node_selector(child(path, "nodeSelector"), device.node_selector)
        if device.HasField("all_nodes"):
            if device.all_nodes:
                set_fields.append("`allNodes`")
            else:
                errs.append(
                    invalid(child(path, "allNodes"), False, "must be either unset or set to true")
                )
        if not set_fields:
            errs.append(required(path, PER_DEVICE_ONE_OF))
        elif len(set_fields) > 1:
            errs.append(invalid(path, "{" + ", ".join(set_fields) + "}", PER_DEVICE_ONE_OF))
    elif has_any:
        errs.append(invalid(path, Shown("null"), PER_DEVICE_ONLY))
    multi = device.HasField("allow_multiple_allocations") and device.allow_multiple_allocations
    for key in sorted(device.capacity):
        cap = device.capacity[key]
        if not cap.HasField("request_policy"):
            continue
        pp = child(index(child(path, "capacity"), key), "requestPolicy")
        if not multi:
            errs.append(forbidden(pp, "allowMultipleAllocations must be true"))
            continue
        value = field_quantity(child(index(child(path, "capacity"), key), "value"), cap.value, [])
        if value is not None:
            errs += _request_policy(pp, value, cap.request_policy)
    return errs


def _q(path: str, raw: str, errs: Errors) -> Quantity | None:
    return field_quantity(path, raw, errs)


def _request_policy(path: str, capacity: Quantity, p: resource_pb2.CapacityRequestPolicy) -> Errors:
    """upstream validateRequestPolicy: validValues or validRange, not both; either needs a
    default that it allows, within the capacity."""
    errs: Errors = []
    if p.valid_values and p.HasField("valid_range"):
        return [
            forbidden(
                path,
                'exactly one policy can be specified, cannot specify "validValues" and '
                '"validRange" at the same time',
            )
        ]
    if not p.valid_values and not p.HasField("valid_range"):
        return errs
    which = "validValues" if p.valid_values else "validRange"
    if not p.HasField("default"):
        return [required(child(path, "default"), f"required when {which} is defined")]
    default = _q(child(path, "default"), p.default, errs)
    if default is None:
        return errs
    if p.valid_values:
        vp = child(path, "validValues")
        values = [_q(index(vp, i), v, errs) for i, v in enumerate(p.valid_values)]
        if len(values) > REQUEST_POLICY_VALID_VALUES_MAX:
            return errs + _too_many(vp, len(values), REQUEST_POLICY_VALID_VALUES_MAX)
        known = [v for v in values if v is not None]
        for i in range(len(values) - 1):
            a, b = values[i], values[i + 1]
            if a is not None and b is not None and a > b:
                errs.append(
                    invalid(
                        index(vp, i + 1),
                        p.valid_values[i + 1],
                        "values must be sorted in ascending order",
                    )
                )
        seen: set[Quantity] = set()
        for i, v in enumerate(values):
            if v is None:
                continue
            if v > capacity:
                errs.append(
                    invalid(
                        index(vp, i),
                        p.valid_values[i],
                        f"option is larger than capacity value: {capacity}",
                    )
                )
            if v in seen:
                errs.append(duplicate(index(vp, i), p.valid_values[i]))
            seen.add(v)
        if default not in known:
            errs.append(
                invalid(vp, p.default, "default value is not valid according to the requestPolicy")
            )
        return errs
    rp = child(path, "validRange")
    r = p.valid_range
    if not r.HasField("min"):
        return [required(child(rp, "min"), "required when validRange is defined")]
    lo = _q(child(rp, "min"), r.min, errs)
    if lo is None:
        return errs
    if lo > capacity:
        errs.append(
            invalid(child(rp, "min"), r.min, f"min is larger than capacity value: {capacity}")
        )
    if default < lo:
        errs.append(invalid(child(rp, "min"), p.default, f"default is less than min: {r.min}"))
    hi = _q(child(rp, "max"), r.max, errs) if r.HasField("max") else None
    if hi is not None:
        if lo > hi:
            errs.append(invalid(child(rp, "max"), r.min, f"min is larger than max: {r.max}"))
        if hi > capacity:
            errs.append(
                invalid(child(rp, "max"), r.max, f"max is larger than capacity value: {capacity}")
            )
        if default > hi:
            errs.append(invalid(child(rp, "max"), p.default, f"default is more than max: {r.max}"))
    step = _q(child(rp, "step"), r.step, errs) if r.HasField("step") else None
    if step is not None and step.value > 0:
        if lo.value + step.value > capacity.value:
            errs.append(
                invalid(
                    child(rp, "step"),
                    r.step,
                    f"one step {Quantity(lo.value + step.value, lo.format)} is larger than "
                    f"capacity value: {capacity}",
                )
            )
        for raw, v in ((p.default, default), (r.max, hi)):
            if v is not None and (v.int_value() - lo.int_value()) % step.int_value() != 0:
                errs.append(
                    invalid(
                        child(rp, "step"),
                        raw,
                        f"value is not a multiple of a given step ({r.step}) from ({r.min})",
                    )
                )
    return errs
