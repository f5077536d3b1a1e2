"""Pod spec validation: the biggest part of upstream's pkg/apis/core/validation.

Why this module exists: a pod spec is checked both for Pods and, through their templates,
for ReplicaSets and Deployments, and its pieces (containers and their ports and resources,
node and pod affinity, tolerations, topology spread constraints, scheduling gates,
preemption policy) are what the scheduler later relies on. Kept apart from the other
kinds so those rules and the pod update rules (ValidatePodUpdate, adapted: which spec
fields may change and how, including the tightening-only rules for gated pods) can be
read in one place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api import labels, names
from services.api.errors import (
    INVALID,
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
    _child,
    _has,
    _index,
    _is_hugepages,
    _label_map,
    _label_name,
    _name_errors,
    _nonnegative,
    _overcommit_allowed,
    _parse_int64,
    _port_name,
    _port_number,
    _resource_list,
    _selector,
    _Shown,
    _shown,
)

# ----------------------------------------------------------------------------- constants

MAX_INT32 = 2**31 - 1

PORT_PROTOCOLS = ("SCTP", "TCP", "UDP")
RESTART_POLICIES = ("Always", "OnFailure", "Never")
DNS_POLICIES = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES = ("File", "FallbackToLogsOnError")
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
#: Gt/Lt: the numeric comparison operators (alpha in Kubernetes 1.35, on in kubera as the seeds
#: describe them).
TOLERATION_OPERATORS = ("Equal", "Exists", "Gt", "Lt")
NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
WHEN_UNSATISFIABLE = ("DoNotSchedule", "ScheduleAnyway")
NODE_INCLUSION_POLICIES = ("Honor", "Ignore")


# ----------------------------------------------------------------------------- resources


def _resources(path: str, res: core_pb2.ResourceRequirements) -> Errors:
    """validateResourceRequirements: names, quantities, request <= limit (== when no overcommit)."""
    errs: Errors = []
    lim_path, req_path = _child(path, "limits"), _child(path, "requests")
    limits = _resource_list(lim_path, res.limits, errs)
    requests = _resource_list(req_path, res.requests, errs)
    for name, q in requests.items():
        limit = limits.get(name)
        if limit is not None:
            if q != limit and not _overcommit_allowed(name):
                detail = f"must be equal to {name} limit of {limit.canonical()}"
                errs.append(invalid(req_path, q.canonical(), detail))
            elif q > limit:
                detail = f"must be less than or equal to {name} limit of {limit.canonical()}"
                errs.append(invalid(req_path, q.canonical(), detail))
        elif name not in res.limits and not _overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
    all_names = set(res.limits) | set(res.requests)
    if any(_is_hugepages(n) for n in all_names) and not all_names & {"cpu", "memory"}:
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    return errs


# ----------------------------------------------------------------------------- pod spec pieces


def _container_ports(path: str, ports: Sequence[core_pb2.ContainerPort]) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, port in enumerate(ports):
        p = _index(path, i)
        if port.name:
            msgs = _port_name(port.name)
            if msgs:
                errs += [invalid(_child(p, "name"), port.name, m) for m in msgs]
            elif port.name in seen:
                errs.append(duplicate(_child(p, "name"), port.name))
            seen.add(port.name)
        if port.container_port == 0:
            errs.append(required(_child(p, "containerPort")))
        else:
            errs += _port_number(_child(p, "containerPort"), port.container_port)
        if port.host_port != 0:
            errs += _port_number(_child(p, "hostPort"), port.host_port)
        if port.protocol and port.protocol not in PORT_PROTOCOLS:
            errs.append(unsupported(_child(p, "protocol"), port.protocol, PORT_PROTOCOLS))
    return errs


def _container(path: str, c: core_pb2.Container, init: bool) -> Errors:
    """validateContainerCommon plus the regular/init container differences."""
    errs: Errors = []
    if not c.name:
        errs.append(required(_child(path, "name")))
    else:
        errs += _name_errors(_child(path, "name"), c.name, names.dns1123_label)
    if not c.image:
        errs.append(required(_child(path, "image")))
    elif c.image != c.image.strip():
        errs.append(
            invalid(_child(path, "image"), c.image, "must not have leading or trailing whitespace")
        )
    errs += _container_ports(_child(path, "ports"), c.ports)
    for i, env in enumerate(c.env):
        if not env.name:
            errs.append(required(_child(_index(_child(path, "env"), i), "name")))
    errs += _resources(_child(path, "resources"), c.resources)
    if c.image_pull_policy and c.image_pull_policy not in PULL_POLICIES:
        errs.append(
            unsupported(_child(path, "imagePullPolicy"), c.image_pull_policy, PULL_POLICIES)
        )
    policy = c.termination_message_policy
    if policy and policy not in TERMINATION_MESSAGE_POLICIES:
        errs.append(
            unsupported(
                _child(path, "terminationMessagePolicy"), policy, TERMINATION_MESSAGE_POLICIES
            )
        )
    if c.restart_policy:
        rp = _child(path, "restartPolicy")
        if not init:
            errs.append(forbidden(rp, "may not be set for non-init containers"))
        elif c.restart_policy != "Always":
            errs.append(unsupported(rp, c.restart_policy, ("Always",)))
    return errs


def _containers(path: str, spec: core_pb2.PodSpec, is_pod: bool) -> Errors:
    errs: Errors = []
    containers_path = _child(path, "containers")
    init_path = _child(path, "initContainers")
    if not spec.containers:
        errs.append(required(containers_path))
    seen: set[str] = set()
    for group_path, group, init in (
        (containers_path, spec.containers, False),
        (init_path, spec.init_containers, True),
    ):
        for i, c in enumerate(group):
            p = _index(group_path, i)
            errs += _container(p, c, init)
            if c.name in seen:
                errs.append(duplicate(_child(p, "name"), c.name))
            elif c.name:
                seen.add(c.name)
    # Host ports may not collide across regular containers (init containers run one by one).
    host_ports: set[str] = set()
    for i, c in enumerate(spec.containers):
        for j, port in enumerate(c.ports):
            if port.host_port == 0:
                continue
            key = f"{port.protocol or 'TCP'}/{port.host_ip}/{port.host_port}"
            hp_path = _child(_index(_child(_index(containers_path, i), "ports"), j), "hostPort")
            if key in host_ports:
                errs.append(duplicate(hp_path, key))
            host_ports.add(key)
    if spec.host_network:
        for i, c in enumerate(spec.containers):
            for j, port in enumerate(c.ports):
                hp, cp = port.host_port, port.container_port
                if (is_pod or hp != 0) and hp != cp:
                    hp_path = _child(
                        _index(_child(_index(containers_path, i), "ports"), j), "hostPort"
                    )
                    errs.append(
                        invalid(
                            hp_path, hp, "must match `containerPort` when `hostNetwork` is true"
                        )
                    )
    return errs


def _node_selector_requirement(
    path: str, req: core_pb2.NodeSelectorRequirement, check_values: bool
) -> Errors:
    """ValidateNodeSelectorRequirement, plus Gt/Lt values being integers (labels' rule)."""
    errs: Errors = []
    values_path = _child(path, "values")
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
            if _parse_int64(v) is None:
                detail = "for 'Gt', 'Lt' operators, the value must be an integer"
                errs.append(invalid(_index(values_path, i), v, detail))
    else:
        errs.append(invalid(_child(path, "operator"), op, "not a valid selector operator"))
    errs += _label_name(_child(path, "key"), req.key)
    if check_values:
        for i, v in enumerate(req.values):
            errs += [invalid(_index(values_path, i), v, m) for m in names.label_value(v)]
    return errs


def _node_field_selector_requirement(path: str, req: core_pb2.NodeSelectorRequirement) -> Errors:
    """ValidateNodeFieldSelectorRequirement: only metadata.name, In/NotIn, one value."""
    errs: Errors = []
    if req.operator in ("In", "NotIn"):
        if len(req.values) != 1:
            detail = (
                "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"
            )
            errs.append(required(_child(path, "values"), detail))
    else:
        errs.append(
            invalid(_child(path, "operator"), req.operator, "not a valid selector operator")
        )
    if req.key != "metadata.name":
        errs.append(invalid(_child(path, "key"), req.key, "not a valid field selector key"))
    else:
        for i, v in enumerate(req.values):
            errs += _name_errors(_index(_child(path, "values"), i), v, names.dns1123_subdomain)
    return errs


def _node_selector_term(path: str, term: core_pb2.NodeSelectorTerm, check_values: bool) -> Errors:
    errs: Errors = []
    for i, req in enumerate(term.match_expressions):
        errs += _node_selector_requirement(
            _index(_child(path, "matchExpressions"), i), req, check_values
        )
    for i, req in enumerate(term.match_fields):
        errs += _node_field_selector_requirement(_index(_child(path, "matchFields"), i), req)
    return errs


def _node_affinity(path: str, na: core_pb2.NodeAffinity) -> Errors:
    errs: Errors = []
    if _has(na, "required_during_scheduling_ignored_during_execution"):
        terms_path = _child(
            _child(path, "requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms"
        )
        terms = na.required_during_scheduling_ignored_during_execution.node_selector_terms
        if not terms:
            errs.append(required(terms_path, "must have at least one node selector term"))
        for i, term in enumerate(terms):
            errs += _node_selector_term(_index(terms_path, i), term, check_values=True)
    preferred_path = _child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, pref in enumerate(na.preferred_during_scheduling_ignored_during_execution):
        p = _index(preferred_path, i)
        if not 1 <= pref.weight <= 100:
            errs.append(invalid(_child(p, "weight"), pref.weight, "must be in the range 1-100"))
        # Preferred terms may carry invalid label values (they can match nothing, harmlessly).
        errs += _node_selector_term(_child(p, "preference"), pref.preference, check_values=False)
    return errs


def _label_keys(path: str, keys: Sequence[str], has_selector: bool) -> Errors:
    if not keys:
        return []
    if not has_selector:
        return [forbidden(path, "must not be specified when labelSelector is not set")]
    errs: Errors = []
    for i, key in enumerate(keys):
        errs += _label_name(_index(path, i), key)
    return errs


def _pod_affinity_term(path: str, term: core_pb2.PodAffinityTerm) -> Errors:
    errs: Errors = []
    has_selector = _has(term, "label_selector")
    if has_selector:
        errs += _selector(_child(path, "labelSelector"), term.label_selector)[1]
    if _has(term, "namespace_selector"):
        errs += _selector(_child(path, "namespaceSelector"), term.namespace_selector)[1]
    for i, ns in enumerate(term.namespaces):
        errs += _name_errors(_index(_child(path, "namespaces"), i), ns, names.dns1123_label)
    # validateMatchLabelKeysAndMismatchLabelKeys
    match_path = _child(path, "matchLabelKeys")
    errs += _label_keys(match_path, term.match_label_keys, has_selector)
    errs += _label_keys(_child(path, "mismatchLabelKeys"), term.mismatch_label_keys, has_selector)
    if has_selector:
        selector_keys = set(term.label_selector.match_labels)
        positions = {k: i for i, k in enumerate(term.match_label_keys)}
        for expr in term.label_selector.match_expressions:
            if expr.key in positions and expr.key in selector_keys:
                detail = "exists in both matchLabelKeys and labelSelector"
                errs.append(invalid(_index(match_path, positions[expr.key]), expr.key, detail))
            selector_keys.add(expr.key)
    mismatch = set(term.mismatch_label_keys)
    for i, key in enumerate(term.match_label_keys):
        if key in mismatch:
            detail = "exists in both matchLabelKeys and mismatchLabelKeys"
            errs.append(invalid(_index(match_path, i), key, detail))
    topology_path = _child(path, "topologyKey")
    if not term.topology_key:
        errs.append(required(topology_path, "can not be empty"))
    else:
        errs += _label_name(topology_path, term.topology_key)
    return errs


def _pod_affinity(path: str, pa: core_pb2.PodAffinity | core_pb2.PodAntiAffinity) -> Errors:
    errs: Errors = []
    required_path = _child(path, "requiredDuringSchedulingIgnoredDuringExecution")
    for i, term in enumerate(pa.required_during_scheduling_ignored_during_execution):
        errs += _pod_affinity_term(_index(required_path, i), term)
    preferred_path = _child(path, "preferredDuringSchedulingIgnoredDuringExecution")
    for i, weighted in enumerate(pa.preferred_during_scheduling_ignored_during_execution):
        p = _index(preferred_path, i)
        if not 1 <= weighted.weight <= 100:
            errs.append(invalid(_child(p, "weight"), weighted.weight, "must be in the range 1-100"))
        errs += _pod_affinity_term(_child(p, "podAffinityTerm"), weighted.pod_affinity_term)
    return errs


def _affinity(path: str, affinity: core_pb2.Affinity) -> Errors:
    errs: Errors = []
    if _has(affinity, "node_affinity"):
        errs += _node_affinity(_child(path, "nodeAffinity"), affinity.node_affinity)
    if _has(affinity, "pod_affinity"):
        errs += _pod_affinity(_child(path, "podAffinity"), affinity.pod_affinity)
    if _has(affinity, "pod_anti_affinity"):
        errs += _pod_affinity(_child(path, "podAntiAffinity"), affinity.pod_anti_affinity)
    return errs


def _taint_effect(path: str, effect: str, allow_empty: bool) -> Errors:
    if not effect:
        return [] if allow_empty else [required(path)]
    if effect not in TAINT_EFFECTS:
        return [unsupported(path, effect, TAINT_EFFECTS)]
    return []


def _tolerations(path: str, tolerations: Sequence[core_pb2.Toleration]) -> Errors:
    """ValidateTolerations."""
    errs: Errors = []
    for i, t in enumerate(tolerations):
        p = _index(path, i)
        op_path = _child(p, "operator")
        if t.key:
            errs += _label_name(_child(p, "key"), t.key)
        if not t.key and t.operator != "Exists":
            detail = (
                "operator must be Exists when `key` is empty, "
                'which means "match all values and all keys"'
            )
            errs.append(invalid(op_path, t.operator, detail))
        if t.HasField("toleration_seconds") and t.effect != "NoExecute":
            detail = "effect must be 'NoExecute' when `tolerationSeconds` is set"
            errs.append(invalid(_child(p, "effect"), t.effect, detail))
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
                errs.append(required(_child(p, "key"), "must be specified for numeric operators"))
            if labels.parse_int64(t.value) is None:
                detail = f"value must be a valid integer for operator '{t.operator}'"
                errs.append(invalid(_child(p, "value"), t.value, detail))
        else:
            errs.append(unsupported(op_path, t.operator, TOLERATION_OPERATORS))
        errs += _taint_effect(_child(p, "effect"), t.effect, allow_empty=True)
    return errs


def _topology_spread(path: str, constraints: Sequence[core_pb2.TopologySpreadConstraint]) -> Errors:
    """validateTopologySpreadConstraints."""
    errs: Errors = []
    for i, c in enumerate(constraints):
        p = _index(path, i)
        if c.max_skew <= 0:
            errs.append(invalid(_child(p, "maxSkew"), c.max_skew, IS_NOT_POSITIVE))
        if not c.topology_key:
            errs.append(required(_child(p, "topologyKey"), "can not be empty"))
        if c.when_unsatisfiable not in WHEN_UNSATISFIABLE:
            errs.append(
                unsupported(
                    _child(p, "whenUnsatisfiable"), c.when_unsatisfiable, WHEN_UNSATISFIABLE
                )
            )
        for rest in constraints[i + 1 :]:
            if (rest.topology_key, rest.when_unsatisfiable) == (
                c.topology_key,
                c.when_unsatisfiable,
            ):
                pair = f"{{{c.topology_key}, {c.when_unsatisfiable}}}"
                errs.append(duplicate(_child(p, "{topologyKey, whenUnsatisfiable}"), pair))
                break
        if c.HasField("min_domains"):
            md_path = _child(p, "minDomains")
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
                errs.append(unsupported(_child(p, name), policy, NODE_INCLUSION_POLICIES))
        keys_path = _child(p, "matchLabelKeys")
        has_selector = _has(c, "label_selector")
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
                errs += _label_name(_index(keys_path, j), key)
                if key in selector_keys:
                    detail = "exists in both matchLabelKeys and labelSelector"
                    errs.append(invalid(_index(keys_path, j), key, detail))
        if has_selector:
            errs += _selector(_child(p, "labelSelector"), c.label_selector)[1]
    return errs


def _scheduling_gates(path: str, gates: Sequence[core_pb2.PodSchedulingGate]) -> Errors:
    errs: Errors = []
    seen: set[str] = set()
    for i, gate in enumerate(gates):
        errs += _name_errors(_index(path, i), gate.name, names.qualified_name)
        if gate.name in seen:
            errs.append(duplicate(_index(path, i), gate.name))
        seen.add(gate.name)
    return errs


def _pod_spec(path: str, spec: core_pb2.PodSpec, is_pod: bool) -> Errors:
    """ValidatePodSpec (the parts kubera's object model carries)."""
    errs = _containers(path, spec, is_pod)
    if spec.restart_policy and spec.restart_policy not in RESTART_POLICIES:
        errs.append(
            unsupported(_child(path, "restartPolicy"), spec.restart_policy, RESTART_POLICIES)
        )
    if spec.dns_policy and spec.dns_policy not in DNS_POLICIES:
        errs.append(unsupported(_child(path, "dnsPolicy"), spec.dns_policy, DNS_POLICIES))
    errs += _label_map(_child(path, "nodeSelector"), spec.node_selector)
    if _has(spec, "affinity"):
        errs += _affinity(_child(path, "affinity"), spec.affinity)
    errs += _scheduling_gates(_child(path, "schedulingGates"), spec.scheduling_gates)
    errs += _topology_spread(
        _child(path, "topologySpreadConstraints"), spec.topology_spread_constraints
    )
    if spec.service_account_name:
        errs += _name_errors(
            _child(path, "serviceAccountName"), spec.service_account_name, names.dns1123_subdomain
        )
    if spec.node_name:
        errs += _name_errors(_child(path, "nodeName"), spec.node_name, names.dns1123_subdomain)
    if spec.HasField("active_deadline_seconds"):
        value = spec.active_deadline_seconds
        if not 1 <= value <= MAX_INT32:
            errs.append(
                invalid(
                    _child(path, "activeDeadlineSeconds"),
                    value,
                    f"must be between 1 and {MAX_INT32}, inclusive",
                )
            )
    if spec.HasField("termination_grace_period_seconds"):
        errs += _nonnegative(
            _child(path, "terminationGracePeriodSeconds"), spec.termination_grace_period_seconds
        )
    if spec.hostname:
        errs += _name_errors(_child(path, "hostname"), spec.hostname, names.dns1123_label)
    if spec.subdomain:
        errs += _name_errors(_child(path, "subdomain"), spec.subdomain, names.dns1123_label)
    errs += _tolerations(_child(path, "tolerations"), spec.tolerations)
    if spec.priority_class_name:
        errs += _name_errors(
            _child(path, "priorityClassName"), spec.priority_class_name, names.dns1123_subdomain
        )
    if spec.HasField("runtime_class_name"):
        errs += _name_errors(
            _child(path, "runtimeClassName"), spec.runtime_class_name, names.dns1123_subdomain
        )
    if spec.HasField("preemption_policy"):
        errs += _preemption_policy(_child(path, "preemptionPolicy"), spec.preemption_policy)
    overhead_path = _child(path, "overhead")
    _resource_list(overhead_path, spec.overhead, errs)
    return errs


def _preemption_policy(path: str, policy: str) -> Errors:
    if not policy:
        return [required(path)]
    if policy not in PREEMPTION_POLICIES:
        return [unsupported(path, policy, PREEMPTION_POLICIES)]
    return []


# ----------------------------------------------------------------------------- kinds: create


def _pod(pod: core_pb2.Pod) -> Errors:
    errs = _pod_spec("spec", pod.spec, is_pod=True)
    if pod.spec.node_name and pod.spec.scheduling_gates:
        errs.append(
            forbidden("spec.nodeName", "cannot be set until all schedulingGates have been cleared")
        )
    if pod.status.phase and pod.status.phase not in POD_PHASES:
        errs.append(unsupported("status.phase", pod.status.phase, POD_PHASES))
    return errs


# ----------------------------------------------------------------------------- kinds: update


def _pod_update(new: core_pb2.Pod, old: core_pb2.Pod) -> Errors:
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
            return [invalid("spec.nodeSelector", _shown(new), detail)]
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
        return [invalid(path, _Shown(f"[{len(new_terms)} terms]"), detail)]
    errs: Errors = []
    for i, (nt, ot) in enumerate(zip(new_terms, old_terms, strict=True)):
        if not _term_only_additions(nt, ot):
            detail = "only additions are allowed (no mutations or deletions)"
            errs.append(invalid(_index(path, i), _shown(nt), detail))
    return errs


def _term_only_additions(new: core_pb2.NodeSelectorTerm, old: core_pb2.NodeSelectorTerm) -> bool:
    if not old.match_expressions and not old.match_fields:
        return not new.match_expressions and not new.match_fields
    for field in ("match_expressions", "match_fields"):
        old_reqs, new_reqs = list(getattr(old, field)), list(getattr(new, field))
        if old_reqs and new_reqs[: len(old_reqs)] != old_reqs:
            return False
    return True
