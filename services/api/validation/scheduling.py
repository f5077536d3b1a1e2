"""Validation of scheduling.k8s.io/v1alpha1 Workload and of a pod's spec.workloadRef
(Kubernetes 1.35: pkg/apis/scheduling/validation ValidateWorkload / ValidateWorkloadUpdate,
pkg/apis/core/validation's workloadRef rules).

A Workload holds one to eight pod groups, each named by a DNS label unique in the Workload
and with exactly one policy (basic, or gang with a positive minCount). Its pod groups never
change; its controllerRef may be set once and then never changes. A pod's workloadRef names
a Workload (a DNS subdomain) and one of its pod groups (a DNS label), and optionally a
replica key (a DNS label); the pod update rules keep it as created.
"""

from __future__ import annotations

import json
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, schedulingv1alpha1_pb2
from services.api.machinery import names
from services.api.machinery.errors import TOO_MANY, FieldError, duplicate, invalid, required
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    IS_NOT_POSITIVE,
    Errors,
    Shown,
    child,
    index,
    name_errors,
    show,
)

#: WorkloadMaxPodGroups.
WORKLOAD_MAX_POD_GROUPS = 8
_POLICIES = "`basic`, `gang`"


def path_segment_name(value: str) -> list[str]:
    """apimachinery's path.IsValidPathSegmentName: a name usable as one URL path segment."""
    if value in (".", ".."):
        return [f"may not be '{value}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in value]


def _controller_ref(
    path: str, ref: schedulingv1alpha1_pb2.SchedulingTypedLocalObjectReference
) -> Errors:
    errs: Errors = []
    if ref.api_group:
        errs += name_errors(child(path, "apiGroup"), ref.api_group, names.dns1123_subdomain)
    for field, value in (("kind", ref.kind), ("name", ref.name)):
        if not value:
            errs.append(required(child(path, field)))
        else:
            errs += name_errors(child(path, field), value, path_segment_name)
    return errs


def _policy(path: str, policy: schedulingv1alpha1_pb2.PodGroupPolicy) -> Errors:
    set_fields = [f"`{f}`" for f in ("basic", "gang") if policy.HasField(f)]  # type: ignore[arg-type]
    if not set_fields:
        return [required(path, f"exactly one of {_POLICIES} is required")]
    if len(set_fields) > 1:
        return [
            invalid(
                path,
                "{" + ", ".join(set_fields) + "}",
                f"exactly one of {_POLICIES} is required, but multiple fields are set",
            )
        ]
    if policy.HasField("gang") and policy.gang.min_count <= 0:
        return [invalid(child(path, "gang.minCount"), policy.gang.min_count, IS_NOT_POSITIVE)]
    return []


def validate_scheduling_workload(workload: Any) -> Errors:
    """ValidateWorkload's spec part (the metadata is the table's: a DNS subdomain name)."""
    spec = workload.spec
    errs: Errors = []
    if spec.HasField("controller_ref"):
        errs += _controller_ref("spec.controllerRef", spec.controller_ref)
    path = "spec.podGroups"
    count = len(spec.pod_groups)
    if count == 0:
        errs.append(required(path, "must have at least one item"))
    elif count > WORKLOAD_MAX_POD_GROUPS:
        errs.append(
            FieldError(path, TOO_MANY, f"must have at most {WORKLOAD_MAX_POD_GROUPS} items", count)
        )
    else:
        seen: set[str] = set()
        for i, group in enumerate(spec.pod_groups):
            at = index(path, i)
            errs += name_errors(child(at, "name"), group.name, names.dns1123_label)
            if group.name in seen:
                errs.append(duplicate(child(at, "name"), group.name))
            seen.add(group.name)
            errs += _policy(child(at, "policy"), group.policy)
    return errs


def validate_scheduling_workload_update(new: Any, old: Any) -> Errors:
    """ValidateWorkloadUpdate: controllerRef, once set, and podGroups never change."""
    errs: Errors = []
    if old.spec.HasField("controller_ref") and (
        not new.spec.HasField("controller_ref")
        or new.spec.controller_ref != old.spec.controller_ref
    ):
        ref = new.spec.controller_ref if new.spec.HasField("controller_ref") else None
        errs.append(
            invalid("spec.controllerRef", None if ref is None else show(ref), FIELD_IMMUTABLE)
        )
    if list(new.spec.pod_groups) != list(old.spec.pod_groups):
        groups = [json_format.MessageToDict(g) for g in new.spec.pod_groups]
        shown = Shown(json.dumps(groups, separators=(",", ":"), sort_keys=True))
        errs.append(invalid("spec.podGroups", shown, FIELD_IMMUTABLE))
    return errs


def validate_workload_reference(path: str, ref: core_pb2.WorkloadReference) -> Errors:
    """A pod's spec.workloadRef: the Workload's name, its pod group, the replica key."""
    errs: Errors = []
    if not ref.name:
        errs.append(required(child(path, "name")))
    else:
        errs += name_errors(child(path, "name"), ref.name, names.dns1123_subdomain)
    if not ref.pod_group:
        errs.append(required(child(path, "podGroup")))
    else:
        errs += name_errors(child(path, "podGroup"), ref.pod_group, names.dns1123_label)
    if ref.pod_group_replica_key:
        errs += name_errors(
            child(path, "podGroupReplicaKey"), ref.pod_group_replica_key, names.dns1123_label
        )
    return errs
