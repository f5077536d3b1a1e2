"""Validation of a pod's scheduling directives: node selector terms and node affinity,
pod (anti-)affinity, tolerations (and taint effects), topology spread constraints,
scheduling gates and preemption policy.

Why this module exists: these are exactly the fields the scheduler's plugins later read
and trust (operators are known, Gt/Lt values are integers, selectors compile), so their
rules are read in one place. Nodes' taints and PriorityClasses'
preemption policy (``cluster``) reuse :func:`validate_taint_effect`, :func:`validate_tolerations` and
:func:`validate_preemption_policy`; the update-time rules for these fields (tightening only, for
gated pods) are in ``pod``, with the rest of ValidatePodUpdate.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.api.machinery import labels, names
from services.api.machinery.errors import (
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.api.validation.common import (
    IS_NOT_POSITIVE,
    Errors,
    child,
    has_field,
    index,
    label_name,
    name_errors,
    validate_seconds,
    validate_selector,
)

# ----------------------------------------------------------------------------- constants

PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: Gt/Lt: the numeric comparison operators (alpha in Kubernetes 1.35, on in kubera as the seeds
#: describe them).
TOLERATION_OPERATORS = ("Equal", "Exists", "Gt", "Lt")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


# ----------------------------------------------------------------------------- node affinity


def _node_selector_requirement(
    path: str, req: core_pb2.NodeSelectorRequirement, check_values: bool
) -> Errors:
    """ValidateNodeSelectorRequirement, plus Gt/Lt values being integers (labels' rule)."""
    errs: Errors = []
    values_path = child(path, "values")
    op = req.operator
    if op in ("In", "NotIn"):
        if not req.values:
            errs.append(
                required(values_path, "must be specified when `operator` is 'In' or 'NotIn'")
            )
    elif op in ("Exists", "DoesNotExist"):
        if req.values:
            detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
            errs.append(forbidden(values_path, detail))
    elif op in ("Gt", "Lt"):
        if len(req.values) != 1:
            detail = "must be specified single value when `operator` is 'Lt' or 'Gt'"
            errs.append(required(values_path, detail))
        for i, v in enumerate(req.values):
            if labels.parse_int64(v) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(invalid(index(values_path, i), v, detail))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    errs += label_name(child(path, "key"), req.key)
    if check_values:
        for i, v in enumerate(req.values):
            errs += [invalid(index(values_path, i), v, m) for m in names.label_value(v)]
    return errs


def _node_field_selector_requirement(path: str, req: core_pb2.NodeSelectorRequirement) -> Errors:
    """ValidateNodeFieldSelectorRequirement: only metadata.name, In/NotIn, one value."""
    errs: Errors = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            detail = (
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
            errs.append(required(child(path, "values"), detail))
    else:
        errs.append(invalid(child(path, "operator"), req.operator, "not a valid selector operator"))
    if req.key != "metadata.name":
        errs.append(invalid(child(path, "key"), req.key, "not a valid field selector key"))
    else:
        for i, v in enumerate(req.values):
            errs += name_errors(index(child(path, "values"), i), v, names.dns1123_subdomain)
    return errs


def _node_selector_term(path: str, term: core_pb2.NodeSelectorTerm, check_values: bool) -> Errors:
    errs: Errors = []
    for i, req in enumerate(term.match_expressions):
        errs += _node_selector_requirement(
            index(child(path, "matchExpressions"), i), req, check_values
        )
    for i, req in enumerate(term.match_fields):
        errs += _node_field_selector_requirement(index(child(path, "matchFields"), i), req)
    return errs


def validate_node_selector(path: str, selector: core_pb2.NodeSelector) -> Errors:
    """ValidateNodeSelector: at least one term, each term's requirements valid (a
    ResourceSlice's spec.nodeSelector, a claim allocation's nodeSelector)."""
    errs: Errors = []
    terms_path = child(path, "nodeSelectorTerms")
    if not selector.node_selector_terms:
        errs.append(required(terms_path, "must have at least one node selector term"))
    for i, term in enumerate(selector.node_selector_terms):
        errs += _node_selector_term(index(terms_path, i), term, check_values=True)
    return errs


def _node_affinity(path: str, na: core_pb2.NodeAffinity) -> Errors:
    errs: Errors = []
    if has_field(na, "required_during_scheduling_ignored_during_execution"):
        terms_path = child(
            child(path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"
        )
        terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
        if not terms:
            errs.append(required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += _node_selector_term(index(terms_path, i), term, check_values=True)
    preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(na.preferred_during_scheduling_ignored_during_execution):
        p = index(preferred_path, i)
        if not 1 <= pref.weight <= 100:
            errs.append(invalid(child(p, "weight"), pref.weight, "must be in the range 1-100"))
        # Preferred terms may carry invalid label values (they can match nothing, harmlessly).
        errs += _node_selector_term(child(p, "preference"), pref.preference, check_values=False)
    return errs


# ----------------------------------------------------------------------------- pod affinity


def _label_keys(path: str, keys: Sequence[str], has_selector: bool) -> Errors:
    if not keys:
        return []
    if not has_selector:
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    errs: Errors = []
    for i, key in enumerate(keys):
        errs += label_name(index(path, i), key)
    return errs


def _pod_affinity_term(path: str, term: core_pb2.PodAffinityTerm) -> Errors:
    errs: Errors = []
    has_selector = has_field(term, "label_selector")
    if has_selector:
        errs += validate_selector(child(path, "labelSelector"), term.label_selector)[1]
    if has_field(term, "namespace_selector"):
        errs += validate_selector(child(path, "namespaceSelector"), term.namespace_selector)[1]
    for i, ns in enumerate(term.namespaces):
        errs += name_errors(index(child(path, "namespaces"), i), ns, names.dns1123_label)
    # validateMatchLabelKeysAndMismatchLabelKeys
    match_path = child(path, "matchLabelKeys")
    errs += _label_keys(match_path, term.match_label_keys, has_selector)
    errs += _label_keys(child(path, "mismatchLabelKeys"), term.mismatch_label_keys, has_selector)
    if has_selector:
        selector_keys = set(term.label_selector.match_labels)
        positions = {k: i for i, k in enumerate(term.match_label_keys)}
        for expr in term.label_selector.match_expressions:
            if expr.key in positions and expr.key in selector_keys:
                detail = "exists in both matchLabelKeys and labelSelector"
                errs.append(invalid(index(match_path, positions[expr.key]), expr.key, detail))
            selector_keys.add(expr.key)
    mismatch = set(term.mismatch_label_keys)
    for i, key in enumerate(term.match_label_keys):
        if key in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            errs.append(invalid(index(match_path, i), key, detail))
    topology_path = child(path, "topologyKey")
    if not term.topology_key:
        errs.append(required(topology_path, "can not be empty"))
    else:
        errs += label_name(topology_path, term.topology_key)
    return errs


def _pod_affinity(path: str, pa: core_pb2.PodAffinity | core_pb2.PodAntiAffinity) -> Errors:
    errs: Errors = []
    required_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(pa.required_during_scheduling_ignored_during_execution):
        errs += _pod_affinity_term(index(required_path, i), term)
    preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
        p = index(preferred_path, i)
        if not 1 <= weighted.weight <= 100:
            errs.append(invalid(child(p, "weight"), weighted.weight, "must be in the range 1-100"))
        errs += _pod_affinity_term(child(p, "podAffinityTerm"), weighted.pod_affinity_term)
    return errs


def validate_affinity(path: str, affinity: core_pb2.Affinity) -> Errors:
    errs: Errors = []
    if has_field(affinity, "node_affinity"):
        errs += _node_affinity(child(path, "nodeAffinity"), affinity.node_affinity)
    if has_field(affinity, "pod_affinity"):
        errs += _pod_affinity(child(path, "podAffinity"), affinity.pod_affinity)
    if has_field(affinity, "pod_anti_affinity"):
        errs += _pod_affinity(child(path, "podAntiAffinity"), affinity.pod_anti_affinity)
    return errs


# ----------------------------------------------------------------------------- taints and tolerations


def validate_taint_effect(path: str, effect: str, allow_empty: bool) -> Errors:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [unsupported(path, effect, TAINT_EFFECTS)]
    return []


def validate_tolerations(path: str, tolerations: Sequence[core_pb2.Toleration]) -> Errors:
    """ValidateTolerations."""
    errs: Errors = []
    for i, t in enumerate(tolerations):
        p = index(path, i)
        op_path = child(p, "operator")
        if t.key:
            errs += label_name(child(p, "key"), t.key)
        if not t.key and t.operator != "Exists":
            detail = (
                "operator must be Exists when `key` is empty, "
                'which means "match all values and all keys"'
            )
            errs.append(invalid(op_path, t.operator, detail))
        if t.HasField("toleration_seconds"):
            if t.effect != "NoExecute":
                detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
                errs.append(invalid(child(p, "effect"), t.effect, detail))
            # Upstream allows any int64 (<= 0: evict at once); kubera bounds it above.
            errs += validate_seconds(
                child(p, "tolerationSeconds"), t.toleration_seconds, non_negative=False
            )
        if t.operator in ("Equal", ""):
            msgs = names.label_value(t.value)
            if msgs:
                errs.append(invalid(op_path, t.value, ";".join(msgs)))
        elif t.operator == "Exists":
            if t.value:
                errs.append(
                    invalid(op_path, t.value, "value must be empty when `operator` is 'Exists'")
                )
        elif t.operator in ("Gt", "Lt"):
            if not t.key:
                errs.append(required(child(p, "key"), "must be specified for numeric operators"))
            if labels.parse_int64(t.value) is None:
                detail = f"value must be a valid integer for operator '{t.operator}'"
                errs.append(invalid(child(p, "value"), t.value, detail))
        else:
            errs.append(unsupported(op_path, t.operator, TOLERATION_OPERATORS))
        errs += validate_taint_effect(child(p, "effect"), t.effect, allow_empty=True)
    return errs


# ----------------------------------------------------------------------------- spread, gates, preemption


def validate_topology_spread(
    path: str, constraints: Sequence[core_pb2.TopologySpreadConstraint]
) -> Errors:
    """validateTopologySpreadConstraints."""
    errs: Errors = []
    for i, c in enumerate(constraints):
        p = index(path, i)
        if c.max_skew <= 0:
            errs.append(invalid(child(p, "maxSkew"), c.max_skew, IS_NOT_POSITIVE))
        if not c.topology_key:
            errs.append(required(child(p, "topologyKey"), "can not be empty"))
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            errs.append(
                unsupported(child(p, "whenUnsatisfiable"), c.when_unsatisfiable, WHEN_UNSATISFIABLE)
            )
        for rest in constraints[i + 1 :]:
            if (rest.topology_key, rest.when_unsatisfiable) == (
                c.topology_key,
                c.when_unsatisfiable,
            ):
                pair = f"{{{c.topology_key}, {c.when_unsatisfiable}}}"
                errs.append(duplicate(child(p, "{topologyKey, whenUnsatisfiable}"), pair))
                break
        if c.HasField("min_domains"):
            md_path = child(p, "minDomains")
            if c.min_domains <= 0:
                errs.append(invalid(md_path, c.min_domains, IS_NOT_POSITIVE))
            if c.when_unsatisfiable != "DoNotSchedule":
                detail = (
                    "can only use minDomains if whenUnsatisfiable=DoNotSchedule, "
                    f"not {c.when_unsatisfiable}"
                )
                errs.append(invalid(md_path, c.min_domains, detail))
        for field, name in (
            ("node_affinity_policy", "nodeAffinityPolicy"),
            ("node_taints_policy", "nodeTaintsPolicy"),
        ):
            policy = getattr(c, field)
            if policy and policy not in NODE_INCLUSION_POLICIES:
                errs.append(unsupported(child(p, name), policy, NODE_INCLUSION_POLICIES))
        keys_path = child(p, "matchLabelKeys")
        has_selector = has_field(c, "label_selector")
        if c.match_label_keys:
            selector_keys: set[str] = set()
            if has_selector:
                selector_keys = set(c.label_selector.match_labels)
                selector_keys |= {e.key for e in c.label_selector.match_expressions}
            else:
                errs.append(
                    forbidden(keys_path, "must not be specified when labelSelector is not set")
                )
            for j, key in enumerate(c.match_label_keys):
                errs += label_name(index(keys_path, j), key)
                if key in selector_keys:
                    detail = "exists in both matchLabelKeys and labelSelector"
                    errs.append(invalid(index(keys_path, j), key, detail))
        if has_selector:
            errs += validate_selector(child(p, "labelSelector"), c.label_selector)[1]
    return errs


def validate_scheduling_gates(path: str, gates: Sequence[core_pb2.PodSchedulingGate]) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        errs += name_errors(index(path, i), gate.name, names.qualified_name)
        if gate.name in seen:
            errs.append(duplicate(index(path, i), gate.name))
        seen.add(gate.name)
    return errs


def validate_preemption_policy(path: str, policy: str) -> Errors:
    if not policy:
        return [required(path)]
    if policy not in PREEMPTION_POLICIES:
        return [unsupported(path, policy, PREEMPTION_POLICIES)]
    return []
