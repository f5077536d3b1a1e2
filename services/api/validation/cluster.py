"""Validation of the cluster-level and bookkeeping kinds.

Why this module exists: Node, Namespace, PriorityClass, RuntimeClass, Lease and Event each
have a handful of small rules (node taints and capacity, namespace finalizers, reserved
system priority classes, runtime class handler and scheduling, lease durations, an event's
namespace) that do not belong with pods or workloads; together they fit in one short
module.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.machinery import names
from services.api.machinery.errors import DUPLICATE, FieldError, forbidden, invalid, required
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    Errors,
    Shown,
    child,
    field_quantity,
    index,
    label_map,
    label_name,
    name_errors,
    nonnegative,
    quantity_value,
    resource_list,
    validate_finalizers,
)
from services.api.validation.pod_scheduling import (
    validate_preemption_policy,
    validate_taint_effect,
    validate_tolerations,
)

# ----------------------------------------------------------------------------- constants

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# name -> value of the priority classes Kubernetes creates itself.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}


# ----------------------------------------------------------------------------- kinds: create


def validate_node(node: core_pb2.Node) -> Errors:
    errs: Errors = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(node.spec.taints):
        p = index("spec.taints", i)
        errs += label_name(child(p, "key"), taint.key)
        msgs = names.label_value(taint.value)
        if msgs:
            errs.append(invalid(child(p, "value"), taint.value, ";".join(msgs)))
        errs += validate_taint_effect(child(p, "effect"), taint.effect, allow_empty=False)
        if (taint.key, taint.effect) in seen:
            shown = Shown(f"{taint.key}={taint.value}:{taint.effect}")
            errs.append(
                FieldError(p, DUPLICATE, "taints must be unique by key and effect pair", shown)
            )
        seen.add((taint.key, taint.effect))
    for field, values in (
        ("capacity", node.status.capacity),
        ("allocatable", node.status.allocatable),
    ):
        for name in sorted(values):
            p = index(f"status.{field}", name)
            q = field_quantity(p, values[name], errs)
            if q is not None:
                errs += quantity_value(p, name, q)
    return errs


def validate_namespace(ns: core_pb2.Namespace) -> Errors:
    return validate_finalizers("spec.finalizers", ns.spec.finalizers)


def validate_priority_class(pc: Any) -> Errors:
    errs: Errors = []
    if pc.metadata.name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        known = SYSTEM_PRIORITY_CLASSES.get(pc.metadata.name)
        if known is None:
            problem = f"{pc.metadata.name} is not a known system priority class"
        elif pc.value != known:
            problem = f"value of {pc.metadata.name} PriorityClass must be {known}"
        elif pc.global_default:
            problem = f"globalDefault of {pc.metadata.name} PriorityClass must be false"
        else:
            problem = ""
        if problem:
            detail = (
                f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved "
                f"for system use only. error: {problem}"
            )
            errs.append(forbidden("metadata.name", detail))
    elif pc.value > HIGHEST_USER_DEFINABLE_PRIORITY:
        detail = (
            f"maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
        )
        errs.append(forbidden("value", detail))
    if pc.HasField("preemption_policy"):
        errs += validate_preemption_policy("preemptionPolicy", pc.preemption_policy)
    return errs


def validate_runtime_class(rc: Any) -> Errors:
    errs: Errors = []
    if not rc.handler:
        errs.append(required("handler"))
    else:
        errs += name_errors("handler", rc.handler, names.dns1123_label)
    if rc.HasField("overhead"):
        resource_list("overhead.podFixed", rc.overhead.pod_fixed, errs)
    if rc.HasField("scheduling"):
        errs += label_map("scheduling.nodeSelector", rc.scheduling.node_selector)
        errs += validate_tolerations("scheduling.tolerations", rc.scheduling.tolerations)
    return errs


def validate_lease(lease: Any) -> Errors:
    errs: Errors = []
    spec = lease.spec
    if spec.HasField("lease_duration_seconds") and spec.lease_duration_seconds <= 0:
        errs.append(
            invalid(
                "spec.leaseDurationSeconds", spec.lease_duration_seconds, "must be greater than 0"
            )
        )
    if spec.HasField("lease_transitions"):
        errs += nonnegative("spec.leaseTransitions", spec.lease_transitions)
    return errs


def validate_event(ev: core_pb2.Event) -> Errors:
    """The legacy core/v1 rule: the involved object's namespace must be the event's."""
    involved_ns = ev.involved_object.namespace
    ns = ev.metadata.namespace
    ok = ns in ("", "default") if not involved_ns else ns == involved_ns
    if ok:
        return []
    return [invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")]


# ----------------------------------------------------------------------------- kinds: update


def validate_priority_class_update(new: Any, old: Any) -> Errors:
    errs: Errors = []
    if new.value != old.value:
        errs.append(forbidden("value", "may not be changed in an update."))
    if new.HasField("preemption_policy") != old.HasField("preemption_policy") or (
        new.preemption_policy != old.preemption_policy
    ):
        errs.append(invalid("preemptionPolicy", new.preemption_policy, FIELD_IMMUTABLE))
    return errs


def validate_runtime_class_update(new: Any, old: Any) -> Errors:
    if new.handler != old.handler:
        return [invalid("handler", new.handler, FIELD_IMMUTABLE)]
    return []
