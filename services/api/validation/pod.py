"""Pod validation entry points: the pod spec as a whole, the Pod kind, and the pod update
rules; the biggest part of upstream's pkg/apis/core/validation.

Why this module exists: a pod spec is checked both for Pods and, through their templates,
for ReplicaSets and Deployments (``workloads`` calls :func:`validate_pod_spec`), and the pod
update rules (ValidatePodUpdate, adapted: which spec fields may change and how, including
the tightening-only rules for gated pods) need the whole spec in view. The pieces live
beside it, split by who relies on them:

* ``pod_containers``: containers, init containers, their ports and resources;
* ``pod_scheduling``: node and pod affinity, tolerations, topology spread constraints,
  scheduling gates and preemption policy (what the scheduler later relies on).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery import names
from services.api.machinery.errors import (
    INVALID,
    FieldError,
    forbidden,
    invalid,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    MAX_INT32,
    Errors,
    Shown,
    child,
    has_field,
    index,
    label_map,
    name_errors,
    resource_list,
    show,
    validate_seconds,
)
from services.api.validation.pod_containers import validate_containers
from services.api.validation.pod_scheduling import (
    validate_affinity,
    validate_preemption_policy,
    validate_scheduling_gates,
    validate_tolerations,
    validate_topology_spread,
)
from services.api.validation.resource_claims import (
    validate_container_claims,
    validate_pod_claim_statuses,
    validate_pod_resource_claims,
)
from services.api.validation.scheduling import (
    validate_scheduling_group,
    validate_workload_reference,
)

# ----------------------------------------------------------------------------- constants

RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")


# ----------------------------------------------------------------------------- pod spec


def validate_pod_spec(path: str, spec: core_pb2.PodSpec, is_pod: bool) -> Errors:
    """ValidatePodSpec (the parts kubera's object model carries)."""
    errs = validate_containers(path, spec, is_pod)
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        errs.append(
            unsupported(child(path, "restartPolicy"), spec.restart_policy, RESTART_POLICIES)
        )
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        errs.append(unsupported(child(path, "dnsPolicy"), spec.dns_policy, DNS_POLICIES))
    errs += label_map(child(path, "nodeSelector"), spec.node_selector)
    if has_field(spec, "affinity"):
        errs += validate_affinity(child(path, "affinity"), spec.affinity)
    errs += validate_scheduling_gates(child(path, "schedulingGates"), spec.scheduling_gates)
    if spec.HasField("workload_ref"):
        errs += validate_workload_reference(child(path, "workloadRef"), spec.workload_ref)
    if spec.HasField("scheduling_group"):
        errs += validate_scheduling_group(child(path, "schedulingGroup"), spec.scheduling_group)
    errs += validate_topology_spread(
        child(path, "topologySpreadConstraints"), spec.topology_spread_constraints
    )
    if spec.service_account_name:
        errs += name_errors(
            child(path, "serviceAccountName"), spec.service_account_name, names.dns1123_subdomain
        )
    if spec.node_name:
        errs += name_errors(child(path, "nodeName"), spec.node_name, names.dns1123_subdomain)
    if spec.HasField("active_deadline_seconds"):
        value = spec.active_deadline_seconds
        if not 1 <= value <= MAX_INT32:
            errs.append(
                invalid(
                    child(path, "activeDeadlineSeconds"),
                    value,
                    f"must be between 1 and {MAX_INT32}, inclusive",
                )
            )
    if spec.HasField("termination_grace_period_seconds"):
        errs += validate_seconds(
            child(path, "terminationGracePeriodSeconds"), spec.termination_grace_period_seconds
        )
    if spec.hostname:
        errs += name_errors(child(path, "hostname"), spec.hostname, names.dns1123_label)
    if spec.subdomain:
        errs += name_errors(child(path, "subdomain"), spec.subdomain, names.dns1123_label)
    errs += validate_tolerations(child(path, "tolerations"), spec.tolerations)
    if spec.priority_class_name:
        errs += name_errors(
            child(path, "priorityClassName"), spec.priority_class_name, names.dns1123_subdomain
        )
    if spec.HasField("runtime_class_name"):
        errs += name_errors(
            child(path, "runtimeClassName"), spec.runtime_class_name, names.dns1123_subdomain
        )
    if spec.HasField("preemption_policy"):
        errs += validate_preemption_policy(child(path, "preemptionPolicy"), spec.preemption_policy)
    overhead_path = child(path, "overhead")
    resource_list(overhead_path, spec.overhead, errs)
    errs += validate_pod_resource_claims(child(path, "resourceClaims"), spec.resource_claims)
    pod_claims = {c.name: c for c in spec.resource_claims if c.name}
    for field, name in (("containers", "containers"), ("init_containers", "initContainers")):
        for i, c in enumerate(getattr(spec, field)):
            claims_path = child(child(index(child(path, name), i), "resources"), "claims")
            errs += validate_container_claims(claims_path, c.resources.claims, pod_claims)
    return errs


# ----------------------------------------------------------------------------- kinds: create


def validate_pod(pod: core_pb2.Pod) -> Errors:
    errs = validate_pod_spec("spec", pod.spec, is_pod=True)
    if pod.spec.node_name and pod.spec.scheduling_gates:
        errs.append(
            forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
        )
    if pod.status.phase and pod.status.phase not in POD_PHASES:
        errs.append(unsupported("status.phase", pod.status.phase, POD_PHASES))
    pod_claims = {c.name: c for c in pod.spec.resource_claims if c.name}
    errs += validate_pod_claim_statuses(
        "status.resourceClaimStatuses", pod.status.resource_claim_statuses, pod_claims
    )
    return errs


# ----------------------------------------------------------------------------- kinds: update


def validate_pod_update(new: core_pb2.Pod, old: core_pb2.Pod) -> Errors:
    """ValidatePodUpdate, adapted: which spec fields may change, and how."""
    errs: Errors = []
    new_spec, old_spec = new.spec, old.spec
    for field, name in (("containers", "containers"), ("init_containers", "initContainers")):
        if len(getattr(new_spec, field)) != len(getattr(old_spec, field)):
            errs.append(forbidden(f"spec.{name}", "pod updates may not add or remove containers"))
            return errs

    # activeDeadlineSeconds: may be set, or lowered; never raised or unset.
    ads_path = "spec.activeDeadlineSeconds"
    if new_spec.HasField("active_deadline_seconds"):
        value = new_spec.active_deadline_seconds
        if not 0 <= value <= MAX_INT32:
            errs.append(invalid(ads_path, value, f"must be between 0 and {MAX_INT32}, inclusive"))
            return errs
        if (
            old_spec.HasField("active_deadline_seconds")
            and old_spec.active_deadline_seconds < value
        ):
            errs.append(invalid(ads_path, value, "must be less than or equal to previous value"))
            return errs
    elif old_spec.HasField("active_deadline_seconds"):
        errs.append(
            FieldError(ads_path, INVALID, "must not update from a positive integer to nil value")
        )

    errs += _only_added_tolerations(new_spec.tolerations, old_spec.tolerations)
    errs += _only_deleted_scheduling_gates(new_spec.scheduling_gates, old_spec.scheduling_gates)

    if new_spec.node_name != old_spec.node_name:
        errs.append(invalid("spec.nodeName", new_spec.node_name, FIELD_IMMUTABLE))

    if new_spec == old_spec:
        return errs
    munged = core_pb2.PodSpec()
    munged.CopyFrom(new_spec)
    for field in ("containers", "init_containers"):
        for mc, oc in zip(getattr(munged, field), getattr(old_spec, field), strict=True):
            mc.image = oc.image
    _copy_optional(munged, old_spec, "active_deadline_seconds")
    _copy_optional(munged, old_spec, "termination_grace_period_seconds")
    del munged.scheduling_gates[:]
    munged.scheduling_gates.extend(old_spec.scheduling_gates)
    del munged.tolerations[:]
    munged.tolerations.extend(old_spec.tolerations)
    munged.node_name = old_spec.node_name

    if old_spec.scheduling_gates:
        # A gated pod's scheduling directives may only be tightened.
        if dict(munged.node_selector) != dict(old_spec.node_selector):
            errs += _node_selector_mutation(new_spec.node_selector, old_spec.node_selector)
            munged.node_selector.clear()
            munged.node_selector.update(old_spec.node_selector)
        old_na = _node_affinity_of(old_spec)
        new_na = _node_affinity_of(munged)
        if old_na != new_na:
            errs += _node_affinity_mutation(new_na, old_na)
            if old_na is None:
                munged.affinity.ClearField("node_affinity")
                if not old_spec.HasField("affinity") and munged.affinity == core_pb2.Affinity():
                    munged.ClearField("affinity")
            else:
                munged.affinity.node_affinity.CopyFrom(old_na)

    if munged != old_spec:
        changed = _changed_fields(munged, old_spec)
        detail = (
            "pod updates may not change fields other than `spec.containers[*].image`,"
            "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,"
            "`spec.tolerations` (only additions to existing tolerations),"
            "`spec.terminationGracePeriodSeconds`,`spec.schedulingGates` (only deletions)"
            f"\nchanged: {', '.join('spec.' + c for c in changed)}"
        )
        errs.append(forbidden("spec", detail))
    return errs


def _copy_optional(dst: Message, src: Message, field: str) -> None:
    if src.HasField(field):
        setattr(dst, field, getattr(src, field))
    else:
        dst.ClearField(field)


def _changed_fields(a: Message, b: Message) -> list[str]:
    """JSON names of the top-level fields that differ between two messages of one type."""
    values_a = {f.json_name: v for f, v in a.ListFields()}
    values_b = {f.json_name: v for f, v in b.ListFields()}
    names_ = sorted(set(values_a) | set(values_b))
    return [
        n for n in names_ if n not in values_a or n not in values_b or values_a[n] != values_b[n]
    ]


def _only_added_tolerations(
    new: Sequence[core_pb2.Toleration], old: Sequence[core_pb2.Toleration]
) -> Errors:
    """validateOnlyAddedTolerations: existing ones stay (tolerationSeconds may change)."""

    def same(a: core_pb2.Toleration, b: core_pb2.Toleration) -> bool:
        return (a.key, a.operator, a.value, a.effect) == (b.key, b.operator, b.value, b.effect)

    for o in old:
        if not any(same(o, n) for n in new):
            return [
                forbidden(
                    "spec.tolerations",
                    "existing toleration can not be modified except its tolerationSeconds",
                )
            ]
    return []


def _only_deleted_scheduling_gates(
    new: Sequence[core_pb2.PodSchedulingGate], old: Sequence[core_pb2.PodSchedulingGate]
) -> Errors:
    old_names = {g.name for g in old}
    errs: Errors = []
    for i, gate in enumerate(new):
        if gate.name not in old_names:
            detail = f"only deletion is allowed, but found new scheduling gate '{gate.name}'"
            errs.append(forbidden(f"spec.schedulingGates[{i}].name", detail))
    return errs


def _node_affinity_of(spec: core_pb2.PodSpec) -> core_pb2.NodeAffinity | None:
    if spec.HasField("affinity") and spec.affinity.HasField("node_affinity"):
        return spec.affinity.node_affinity
    return None


def _node_selector_mutation(new: Mapping[str, str], old: Mapping[str, str]) -> Errors:
    for k, v in old.items():
        if new.get(k) != v:
            detail = "only additions to spec.nodeSelector are allowed (no mutations or deletions)"
            return [invalid("spec.nodeSelector", show(new), detail)]
    return []


def _node_affinity_mutation(
    new: core_pb2.NodeAffinity | None, old: core_pb2.NodeAffinity | None
) -> Errors:
    """validateNodeAffinityMutation: required terms may only gain expressions; preferred is free."""
    field = "required_during_scheduling_ignored_during_execution"
    if old is None or not old.HasField(field):
        return []
    old_terms = list(old.required_during_scheduling_ignored_during_execution.node_selector_terms)
    new_terms: list[core_pb2.NodeSelectorTerm] = []
    if new is not None and new.HasField(field):
        new_terms = list(
            new.required_during_scheduling_ignored_during_execution.node_selector_terms
        )
    path = (
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms"
    )
    if old_terms and len(old_terms) != len(new_terms):
        detail = "no additions/deletions to non-empty NodeSelectorTerms list are allowed"
        return [invalid(path, Shown(f"[{len(new_terms)} terms]"), detail)]
    errs: Errors = []
    for i, (nt, ot) in enumerate(zip(new_terms, old_terms, strict=True)):
        if not _term_only_additions(nt, ot):
            detail = "only additions are allowed (no mutations or deletions)"
            errs.append(invalid(index(path, i), show(nt), detail))
    return errs


def _term_only_additions(new: core_pb2.NodeSelectorTerm, old: core_pb2.NodeSelectorTerm) -> bool:
    if not old.match_expressions and not old.match_fields:
        return not new.match_expressions and not new.match_fields
    for field in ("match_expressions", "match_fields"):
        old_reqs, new_reqs = list(getattr(old, field)), list(getattr(new, field))
        if old_reqs and new_reqs[: len(old_reqs)] != old_reqs:
            return False
    return True
