"""Validation of scheduling.k8s.io/v1alpha1 Workload and of a pod's spec.workloadRef
(Kubernetes 1.35: pkg/apis/scheduling/validation ValidateWorkload / ValidateWorkloadUpdate,
pkg/apis/core/validation's workloadRef rules), and of scheduling.k8s.io/v1beta1 PodGroup and
a pod's spec.schedulingGroup (1.37: the declarative tags of staging/src/k8s.io/api/
scheduling/v1beta1/types.go and ValidatePodGroup's policy union).

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
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, schedulingv1alpha1_pb2
from services.api.machinery import names
from services.api.machinery.errors import (
    TOO_MANY,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    IS_NOT_POSITIVE,
    Errors,
    Shown,
    child,
    index,
    label_name,
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


# --------------------------------------------- scheduling.k8s.io/v1beta1 PodGroup (1.37)

#: MaxPodGroupResourceClaims.
POD_GROUP_MAX_RESOURCE_CLAIMS = 4
#: A PodGroup holds at most one topology constraint.
POD_GROUP_MAX_TOPOLOGY = 1
#: HighestUserDefinablePriority.
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
PREEMPTION_POLICIES = ("Never", "PreemptLowerPriority")


def _union(path: str, msg: Any, members: tuple[str, ...], *, required_one: bool) -> Errors:
    """A +union: exactly one member set (or none, when the union itself is optional)."""
    shown = ", ".join(f"`{m}`" for m in members)
    set_fields = [f"`{m}`" for m in members if msg.HasField(_snake(m))]
    if not set_fields and required_one:
        return [invalid(path, "", f"must specify one of: {shown}")]
    if len(set_fields) > 1:
        return [
            invalid(
                path,
                "{" + ", ".join(set_fields) + "}",
                f"exactly one of {shown} is required, but multiple fields are set",
            )
        ]
    return []


def _snake(camel: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in camel)


def _pod_group_policy(path: str, policy: Any) -> Errors:
    errs = _union(path, policy, ("basic", "gang"), required_one=True)
    if not errs and policy.HasField("gang"):
        at = child(child(path, "gang"), "minCount")
        if policy.gang.min_count == 0:
            errs.append(required(at))
        elif policy.gang.min_count < 0:
            errs.append(invalid(at, policy.gang.min_count, IS_NOT_POSITIVE))
    return errs


def _pod_group_resource_claims(path: str, claims: Any) -> Errors:
    if len(claims) > POD_GROUP_MAX_RESOURCE_CLAIMS:
        return [
            FieldError(
                path,
                TOO_MANY,
                f"must have at most {POD_GROUP_MAX_RESOURCE_CLAIMS} items",
                len(claims),
            )
        ]
    errs: Errors = []
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        at = index(path, i)
        if not claim.name:
            errs.append(required(child(at, "name")))
        else:
            errs += name_errors(child(at, "name"), claim.name, names.dns1123_label)
            if claim.name in seen:
                errs.append(duplicate(at, claim.name))
            seen.add(claim.name)
        members = ("resourceClaimName", "resourceClaimTemplateName")
        errs += _union(at, claim, members, required_one=True)
        for member in members:
            if claim.HasField(_snake(member)):
                value = getattr(claim, _snake(member))
                errs += name_errors(child(at, member), value, names.dns1123_subdomain)
    return errs


def _pod_group_claim_statuses(pg: Any) -> Errors:
    """status.resourceClaimStatuses: each names an entry of spec.resourceClaims (upstream
    validatePodGroupResourceClaimStatuses)."""
    names_ = {c.name for c in pg.spec.resource_claims}
    at = child("status", "resourceClaimStatuses")
    return [
        invalid(
            child(index(at, i), "name"),
            st.name,
            "must match the name of an entry in `spec.resourceClaims`",
        )
        for i, st in enumerate(pg.status.resource_claim_statuses)
        if st.name not in names_
    ]


def validate_scheduling_pod_group(pg: Any) -> Errors:
    """A scheduling.k8s.io/v1beta1 PodGroup's spec, by its type's validation tags (the
    metadata is the table's: a DNS subdomain name)."""
    spec, path = pg.spec, "spec"
    errs: Errors = []
    if spec.HasField("parent_composite_pod_group_name"):
        errs.append(
            forbidden(
                child(path, "parentCompositePodGroupName"),
                "CompositePodGroups are not served (the CompositePodGroup gate is off)",
            )
        )
    if spec.HasField("workload_ref"):
        at, ref = child(path, "workloadRef"), spec.workload_ref
        for field, value, fn in (
            ("workloadName", ref.workload_name, names.dns1123_subdomain),
            ("templateName", ref.template_name, names.dns1123_label),
        ):
            if not value:
                errs.append(required(child(at, field)))
            else:
                errs += name_errors(child(at, field), value, fn)
    errs += _pod_group_policy(child(path, "schedulingPolicy"), spec.scheduling_policy)
    topology = spec.scheduling_constraints.topology
    at = child(child(path, "schedulingConstraints"), "topology")
    if len(topology) > POD_GROUP_MAX_TOPOLOGY:
        errs.append(
            FieldError(
                at, TOO_MANY, f"must have at most {POD_GROUP_MAX_TOPOLOGY} items", len(topology)
            )
        )
    for i, constraint in enumerate(topology):
        if not constraint.key:
            errs.append(required(child(index(at, i), "key")))
        else:
            errs += label_name(child(index(at, i), "key"), constraint.key)
    errs += _pod_group_resource_claims(child(path, "resourceClaims"), spec.resource_claims)
    errs += _pod_group_claim_statuses(pg)
    if spec.HasField("disruption_mode"):
        mode = child(path, "disruptionMode")
        errs += _union(mode, spec.disruption_mode, ("single", "all"), required_one=True)
    if spec.priority_class_name:
        errs += name_errors(
            child(path, "priorityClassName"), spec.priority_class_name, names.dns1123_subdomain
        )
    if spec.HasField("priority") and spec.priority > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(
            invalid(
                child(path, "priority"),
                spec.priority,
                f"must be less than or equal to {HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    if spec.HasField("preemption_policy") and spec.preemption_policy not in PREEMPTION_POLICIES:
        errs.append(
            unsupported(
                child(path, "preemptionPolicy"), spec.preemption_policy, PREEMPTION_POLICIES
            )
        )
    return errs


#: The PodGroup spec fields that never change (+k8s:immutable), by JSON name.
_POD_GROUP_IMMUTABLE = (
    ("workloadRef", "workload_ref"),
    ("schedulingConstraints", "scheduling_constraints"),
    ("resourceClaims", "resource_claims"),
    ("disruptionMode", "disruption_mode"),
    ("priorityClassName", "priority_class_name"),
    ("priority", "priority"),
    ("preemptionPolicy", "preemption_policy"),
    ("parentCompositePodGroupName", "parent_composite_pod_group_name"),
)


def validate_scheduling_pod_group_update(new: Any, old: Any) -> Errors:
    """The immutable fields; the policy may not switch (basic is immutable, gang may not be
    set or unset) while gang.minCount stays mutable."""
    errs: Errors = []
    for json_name, field in _POD_GROUP_IMMUTABLE:
        a, b = getattr(new.spec, field), getattr(old.spec, field)
        if (list(a) if field == "resource_claims" else a) != (
            list(b) if field == "resource_claims" else b
        ) or (
            field not in ("resource_claims", "priority_class_name")
            and new.spec.HasField(field) != old.spec.HasField(field)
        ):
            value = show(a) if isinstance(a, Message) else a
            if field == "resource_claims":
                value = Shown(json.dumps([json_format.MessageToDict(c) for c in a]))
            errs.append(invalid(child("spec", json_name), value, FIELD_IMMUTABLE))
    policy, was = new.spec.scheduling_policy, old.spec.scheduling_policy
    path = child("spec", "schedulingPolicy")
    if policy.HasField("basic") != was.HasField("basic"):
        errs.append(invalid(child(path, "basic"), None, FIELD_IMMUTABLE))
    if was.HasField("gang") and not policy.HasField("gang"):
        errs.append(forbidden(child(path, "gang"), "field may not be cleared"))
    elif not was.HasField("gang") and policy.HasField("gang"):
        errs.append(forbidden(child(path, "gang"), "field may not be set"))
    return errs


def validate_scheduling_group(path: str, group: core_pb2.PodSchedulingGroup) -> Errors:
    """A pod's spec.schedulingGroup: exactly one field, podGroupName (a DNS subdomain)."""
    if not group.HasField("pod_group_name"):
        return [invalid(path, "", "must specify one of: `podGroupName`")]
    at = child(path, "podGroupName")
    if not group.pod_group_name:
        return [required(at)]
    return name_errors(at, group.pod_group_name, names.dns1123_subdomain)
