"""Create and update validation for kubera's kinds, with Kubernetes' rules and wording.

Why this module exists: the apiserver must refuse exactly what Kubernetes' apiserver
refuses, worded the same way (clients, tests and people compare the text, e.g.
``spec.containers[0].resources.requests[cpu]: Invalid value: "5x": quantities must
match ...``), and everything downstream (scheduler, controllers) may then trust that a
stored object is well formed: quantities parse, selectors compile, operators are known,
Gt/Lt values are integers. Rules and messages are carried over from upstream's
pkg/apis/{core,apps,policy,scheduling}/validation and apimachinery's metadata checks.

Entry points are :func:`validate_create` and :func:`validate_update`. Each kind is one
row in ``_RULES`` (name rule, a create function, optionally an update function),
so adding a kind is one function plus one row. Unknown kinds get metadata checks only.

Deliberate adaptations (kubera has no defaulting pass before validation):
* fields upstream defaults and then requires (container port protocol, pull policy,
  restart policy, DNS policy, deployment strategy) are checked only when set;
* paths are always indexed/keyed the Kubernetes way (``spec.overhead[cpu]``,
  ``status.capacity[cpu]``, ``spec.taints[0]``) where upstream has historical quirks;
* on update an empty ``metadata.uid`` means "keep the stored one", as upstream's
  ``BeforeUpdate`` does, and ``spec.terminationGracePeriodSeconds`` of a pod may change.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, meta_pb2
from services.api import labels, names
from services.api.errors import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    REQUIRED,
    UNSUPPORTED,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
    unsupported,
)
from services.api.kinds import BY_KIND
from services.api.quantity import Quantity, QuantityError, parse_quantity

Errors = list[FieldError]

# ----------------------------------------------------------------------------- constants

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
IS_NOT_POSITIVE = "must be greater than zero"
IS_NOT_INTEGER = "must be an integer"
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024
HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# name -> value of the priority classes Kubernetes creates itself.
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
MAX_INT32 = 2**31 - 1
DEFAULT_ROLLING_UPDATE = "25%"  # upstream's default for both maxSurge and maxUnavailable

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
DEPLOYMENT_STRATEGIES = ("Recreate", "RollingUpdate")
UNHEALTHY_POD_EVICTION_POLICIES = ("AlwaysAllow", "IfHealthyBudget")

STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
HUGEPAGES_PREFIX = "hugepages-"
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})

# ----------------------------------------------------------------------------- paths


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int | str) -> str:
    return f"{path}[{i}]"


class _Shown:
    """A value printed as-is in an error (structs and maps, which Go prints unquoted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def _shown(value: Message | Mapping[str, str]) -> _Shown:
    if isinstance(value, Message):
        data: Any = json_format.MessageToDict(value)
    else:
        data = dict(sorted(value.items()))
    return _Shown(json.dumps(data, separators=(",", ":"), sort_keys=True))


def _has(msg: Message, field: str) -> bool:
    return msg.HasField(field)


# ----------------------------------------------------------------------------- primitives


def _name_errors(path: str, value: str, fn: Callable[[str], list[str]]) -> Errors:
    return [invalid(path, value, msg) for msg in fn(value)]


def _label_name(path: str, key: str) -> Errors:
    """ValidateLabelName: a qualified name."""
    return _name_errors(path, key, names.qualified_name)


def _label_map(path: str, values: Mapping[str, str]) -> Errors:
    """ValidateLabels: keys are qualified names, values label values (path not keyed)."""
    errs: Errors = []
    for k in sorted(values):
        errs += _label_name(path, k)
        errs += [invalid(path, values[k], msg) for msg in names.label_value(values[k])]
    return errs


def _nonnegative(path: str, value: int) -> Errors:
    return [invalid(path, value, IS_NEGATIVE)] if value < 0 else []


def _port_number(path: str, port: int) -> Errors:
    if 1 <= port <= 65535:
        return []
    return [invalid(path, port, "must be between 1 and 65535, inclusive")]


def _port_name(port: str) -> list[str]:
    """IsValidPortName (an IANA_SVC_NAME)."""
    msgs: list[str] = []
    if len(port) > 15:
        msgs.append(names.max_len_error(15))
    if not port or any(c not in "-abcdefghijklmnopqrstuvwxyz0123456789" for c in port):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in port):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in port:
        msgs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def _parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    n = int(text)
    return n if -(2**63) <= n < 2**63 else None


def _selector(path: str, selector: meta_pb2.LabelSelector) -> tuple[labels.Selector | None, Errors]:
    """ValidateLabelSelector via labels.from_label_selector; its messages become FieldErrors."""
    exprs = [(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions]
    try:
        return labels.from_label_selector(dict(selector.match_labels), exprs, path), []
    except labels.SelectorError as exc:
        return None, [_field_error_from_text(msg) for msg in dict.fromkeys(exc.errors)]


_TYPE_MARKERS = (INVALID, REQUIRED, FORBIDDEN, UNSUPPORTED, DUPLICATE)


def _field_error_from_text(text: str) -> FieldError:
    """Rebuild a FieldError from ``path: Type: rest`` (the value stays inside the detail)."""
    best: tuple[int, str] | None = None
    for marker in _TYPE_MARKERS:
        at = text.find(f": {marker}")
        if at >= 0 and (best is None or at < best[0]):
            best = (at, marker)
    if best is None:
        return FieldError("", INVALID, text)
    at, marker = best
    rest = text[at + len(marker) + 2 :]
    return FieldError(text[:at], marker, rest[2:] if rest.startswith(": ") else rest)


# ----------------------------------------------------------------------------- resources


def _quantity(path: str, raw: str, errs: Errors) -> Quantity | None:
    try:
        return parse_quantity(raw)
    except QuantityError as exc:
        errs.append(invalid(path, raw, str(exc)))
        return None


def _is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _is_native(name: str) -> bool:
    """IsNativeResource: unprefixed or in the kubernetes.io/ namespace."""
    return "/" not in name or "kubernetes.io/" in name


def _is_extended(name: str) -> bool:
    """IsExtendedResourceName: not native, no ``requests.`` prefix, quota name qualified."""
    if _is_native(name) or name.startswith("requests."):
        return False
    return not names.qualified_name("requests." + name)


def _overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not _is_hugepages(name)


def _is_integer_resource(name: str) -> bool:
    return name in INTEGER_RESOURCES or _is_extended(name)


def _resource_name(path: str, name: str) -> Errors:
    """validateResourceName + validateContainerResourceName."""
    errs = _name_errors(path, name, names.qualified_name)
    if errs:
        return errs
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource type or fully qualified")]
        if name not in STANDARD_CONTAINER_RESOURCES and not _is_hugepages(name):
            return [invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and not _is_extended(name):
        return [invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def _quantity_value(path: str, name: str, q: Quantity) -> Errors:
    """ValidateResourceQuantityValue: not negative; integer for integer resources."""
    errs: Errors = []
    if q.sign() < 0:
        errs.append(invalid(path, q.canonical(), IS_NEGATIVE))
    if _is_integer_resource(name):
        millis = (q.value * 1000).to_integral_value(rounding=ROUND_CEILING)
        if millis % 1000 != 0:
            errs.append(invalid(path, q.canonical(), IS_NOT_INTEGER))
    return errs


def _hugepages_value(path: str, name: str, q: Quantity) -> Errors:
    """Hugepage amounts must be whole multiples of the page size in the name."""
    page: Quantity | None
    try:
        page = parse_quantity(name[len(HUGEPAGES_PREFIX) :])
    except QuantityError:
        page = None
    ok = page is not None and page.sign() > 0 and page.value == page.value.to_integral_value()
    if ok and page is not None:
        ok = q.value.to_integral_value(rounding=ROUND_CEILING) % page.value == 0
    if ok:
        return []
    return [
        invalid(path, q.canonical(), f"{q.canonical()} is not positive integer multiple of {name}")
    ]


def _resource_list(path: str, values: Mapping[str, str], errs: Errors) -> dict[str, Quantity]:
    """Names and quantities of a resource map (limits, overhead, capacity); parsed values."""
    parsed: dict[str, Quantity] = {}
    for name in sorted(values):
        p = _index(path, name)
        errs += _resource_name(p, name)
        q = _quantity(p, values[name], errs)
        if q is None:
            continue
        errs += _quantity_value(p, name, q)
        if _is_hugepages(name):
            errs += _hugepages_value(p, name, q)
        parsed[name] = q
    return parsed


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


# ----------------------------------------------------------------------------- metadata


def _owner_references(path: str, refs: Sequence[meta_pb2.OwnerReference]) -> Errors:
    errs: Errors = []
    first_controller = ""
    for i, ref in enumerate(refs):
        p = _index(path, i)
        group, _, version = ref.api_version.rpartition("/")
        if not version:
            errs.append(
                invalid(_child(p, "apiVersion"), ref.api_version, "version must not be empty")
            )
        if not ref.kind:
            errs.append(invalid(_child(p, "kind"), ref.kind, "must not be empty"))
        if not ref.name:
            errs.append(invalid(_child(p, "name"), ref.name, "must not be empty"))
        if not ref.uid:
            errs.append(invalid(_child(p, "uid"), ref.uid, "must not be empty"))
        if (group, version, ref.kind) == ("", "v1", "Event"):
            errs.append(
                invalid(p, _shown(ref), "/v1, Kind=Event is disallowed from being an owner")
            )
        if ref.HasField("controller") and ref.controller:
            current = f"{ref.kind}/{ref.name}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {first_controller} and {current}"
                )
                errs.append(invalid(path, _Shown(f"[{len(refs)} references]"), detail))
            else:
                first_controller = current
    return errs


def _finalizers(path: str, finalizers: Sequence[str]) -> Errors:
    errs: Errors = []
    for i, name in enumerate(finalizers):
        p = _index(path, i)
        errs += _name_errors(p, name, names.qualified_name)
        if "/" not in name and name not in STANDARD_FINALIZERS:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            errs.append(invalid(p, name, detail))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        detail = "finalizer orphan and foregroundDeletion cannot be both set"
        errs.append(invalid(path, _Shown(json.dumps(list(finalizers))), detail))
    return errs


def _annotations(path: str, annotations: Mapping[str, str]) -> Errors:
    """ValidateAnnotations: keys are qualified names (case-insensitive), total size <= 256 KiB."""
    errs: Errors = []
    size = 0
    for k in sorted(annotations):
        errs += [invalid(path, k, msg) for msg in names.qualified_name(k.lower())]
        size += len(k.encode()) + len(annotations[k].encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def _object_meta(
    meta: meta_pb2.ObjectMeta, rules: _Rules | None, namespaced: bool | None
) -> Errors:
    """ValidateObjectMeta, for a kind's name rule and scope (None: unknown kind)."""
    name_fn = rules.name if rules else names.dns1123_subdomain
    errs: Errors = []
    if meta.generate_name:
        msgs = names.generate_name_prefix(meta.generate_name, name_fn)
        errs += [invalid("metadata.generateName", meta.generate_name, m) for m in msgs]
    if meta.name:
        errs += _name_errors("metadata.name", meta.name, name_fn)
    elif not meta.generate_name:
        errs.append(required("metadata.name", "name or generateName is required"))
    if namespaced:
        if not meta.namespace:
            errs.append(required("metadata.namespace"))
        else:
            errs += _name_errors("metadata.namespace", meta.namespace, names.dns1123_label)
    elif namespaced is not None and meta.namespace:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    errs += _nonnegative("metadata.generation", meta.generation)
    errs += _label_map("metadata.labels", meta.labels)
    errs += _annotations("metadata.annotations", meta.annotations)
    errs += _owner_references("metadata.ownerReferences", meta.owner_references)
    errs += _finalizers("metadata.finalizers", meta.finalizers)
    return errs


def _object_meta_update(new: meta_pb2.ObjectMeta, old: meta_pb2.ObjectMeta) -> Errors:
    errs: Errors = []
    if new.name != old.name:
        errs.append(invalid("metadata.name", new.name, FIELD_IMMUTABLE))
    if new.namespace != old.namespace:
        errs.append(invalid("metadata.namespace", new.namespace, FIELD_IMMUTABLE))
    if new.uid and new.uid != old.uid:
        errs.append(invalid("metadata.uid", new.uid, FIELD_IMMUTABLE))
    if old.deletion_timestamp:
        added = [f for f in new.finalizers if f not in set(old.finalizers)]
        if added:
            errs.append(
                forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {json.dumps(added)}",
                )
            )
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


def _pod_template(path: str, template: core_pb2.PodTemplateSpec, kind: str) -> Errors:
    """ValidatePodTemplateSpec plus the ReplicaSet/Deployment template rules."""
    meta_path = _child(path, "metadata")
    spec_path = _child(path, "spec")
    errs = _label_map(_child(meta_path, "labels"), template.metadata.labels)
    errs += _annotations(_child(meta_path, "annotations"), template.metadata.annotations)
    errs += _pod_spec(spec_path, template.spec, is_pod=False)
    if template.spec.restart_policy and template.spec.restart_policy != "Always":
        errs.append(
            unsupported(
                _child(spec_path, "restartPolicy"), template.spec.restart_policy, ("Always",)
            )
        )
    if template.spec.HasField("active_deadline_seconds"):
        detail = f"activeDeadlineSeconds in {kind} is not Supported"
        errs.append(forbidden(_child(spec_path, "activeDeadlineSeconds"), detail))
    return errs


# ----------------------------------------------------------------------------- int-or-percent


def _int_or_percent(path: str, raw: str) -> tuple[int | None, bool, Errors]:
    """ValidatePositiveIntOrPercent: (value, is_percent, errors)."""
    as_int = _parse_int64(raw)
    if as_int is not None:
        return as_int, False, _nonnegative(path, as_int)
    body = raw[:-1]
    if raw.endswith("%") and body.isascii() and body.isdigit():
        return int(body), True, []
    msg = names.regex_error(
        "a valid percent string must be a numeric string followed by an ending '%'",
        "[0-9]+%",
        "1%",
        "93%",
    )
    return None, False, [invalid(path, raw, msg)]


def _not_more_than_100_percent(path: str, raw: str, value: int | None, is_percent: bool) -> Errors:
    if is_percent and value is not None and value > 100:
        return [invalid(path, raw, "must not be greater than 100%")]
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


def _node(node: core_pb2.Node) -> Errors:
    errs: Errors = []
    seen: set[tuple[str, str]] = set()
    for i, taint in enumerate(node.spec.taints):
        p = _index("spec.taints", i)
        errs += _label_name(_child(p, "key"), taint.key)
        msgs = names.label_value(taint.value)
        if msgs:
            errs.append(invalid(_child(p, "value"), taint.value, ";".join(msgs)))
        errs += _taint_effect(_child(p, "effect"), taint.effect, allow_empty=False)
        if (taint.key, taint.effect) in seen:
            shown = _Shown(f"{taint.key}={taint.value}:{taint.effect}")
            errs.append(
                FieldError(p, DUPLICATE, "taints must be unique by key and effect pair", shown)
            )
        seen.add((taint.key, taint.effect))
    for field, values in (
        ("capacity", node.status.capacity),
        ("allocatable", node.status.allocatable),
    ):
        for name in sorted(values):
            p = _index(f"status.{field}", name)
            q = _quantity(p, values[name], errs)
            if q is not None:
                errs += _quantity_value(p, name, q)
    return errs


def _namespace(ns: core_pb2.Namespace) -> Errors:
    return _finalizers("spec.finalizers", ns.spec.finalizers)


def _priority_class(pc: Any) -> Errors:
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
        errs += _preemption_policy("preemptionPolicy", pc.preemption_policy)
    return errs


def _pod_disruption_budget(pdb: Any) -> Errors:
    spec = pdb.spec
    errs: Errors = []
    if spec.HasField("min_available") and spec.HasField("max_unavailable"):
        shown = _shown(spec)
        errs.append(invalid("spec", shown, "minAvailable and maxUnavailable cannot be both set"))
    for field, name in (("min_available", "minAvailable"), ("max_unavailable", "maxUnavailable")):
        if spec.HasField(field):
            raw = getattr(spec, field)
            value, is_percent, field_errs = _int_or_percent(f"spec.{name}", raw)
            errs += field_errs
            errs += _not_more_than_100_percent(f"spec.{name}", raw, value, is_percent)
    if spec.HasField("selector"):
        errs += _selector("spec.selector", spec.selector)[1]
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
        errs += _nonnegative("spec.replicas", spec.replicas)
    errs += _nonnegative("spec.minReadySeconds", spec.min_ready_seconds)
    selector: labels.Selector | None = None
    if not spec.HasField("selector"):
        errs.append(required("spec.selector"))
    else:
        selector, selector_errs = _selector("spec.selector", spec.selector)
        errs += selector_errs
        if not spec.selector.match_labels and not spec.selector.match_expressions:
            errs.append(
                invalid(
                    "spec.selector",
                    _shown(spec.selector),
                    "empty selector is invalid for deployment",
                )
            )
            selector = None
    template_labels = dict(spec.template.metadata.labels)
    if selector is not None and not selector.matches(template_labels):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", _shown(template_labels), detail))
    errs += _pod_template("spec.template", spec.template, "ReplicaSet")
    return errs


def _replica_set(rs: Any) -> Errors:
    return _workload_spec(rs.spec)


def _deployment(deploy: Any) -> Errors:
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
        surge, _, surge_errs = _int_or_percent(f"{path}.maxSurge", surge_raw)
        unavail, unavail_pct, unavail_errs = _int_or_percent(f"{path}.maxUnavailable", unavail_raw)
        errs += unavail_errs + surge_errs
        if surge == 0 and unavail == 0:
            errs.append(
                invalid(f"{path}.maxUnavailable", unavail_raw, "may not be 0 when `maxSurge` is 0")
            )
        errs += _not_more_than_100_percent(
            f"{path}.maxUnavailable", unavail_raw, unavail, unavail_pct
        )
    else:
        errs.append(unsupported("spec.strategy.type", strategy.type, DEPLOYMENT_STRATEGIES))
    if spec.HasField("revision_history_limit"):
        errs += _nonnegative("spec.revisionHistoryLimit", spec.revision_history_limit)
    if spec.HasField("progress_deadline_seconds"):
        errs += _nonnegative("spec.progressDeadlineSeconds", spec.progress_deadline_seconds)
        if spec.progress_deadline_seconds <= spec.min_ready_seconds:
            detail = "must be greater than minReadySeconds"
            errs.append(
                invalid("spec.progressDeadlineSeconds", spec.progress_deadline_seconds, detail)
            )
    return errs


def _runtime_class(rc: Any) -> Errors:
    errs: Errors = []
    if not rc.handler:
        errs.append(required("handler"))
    else:
        errs += _name_errors("handler", rc.handler, names.dns1123_label)
    if rc.HasField("overhead"):
        _resource_list("overhead.podFixed", rc.overhead.pod_fixed, errs)
    if rc.HasField("scheduling"):
        errs += _label_map("scheduling.nodeSelector", rc.scheduling.node_selector)
        errs += _tolerations("scheduling.tolerations", rc.scheduling.tolerations)
    return errs


def _lease(lease: Any) -> Errors:
    errs: Errors = []
    spec = lease.spec
    if spec.HasField("lease_duration_seconds") and spec.lease_duration_seconds <= 0:
        errs.append(
            invalid(
                "spec.leaseDurationSeconds", spec.lease_duration_seconds, "must be greater than 0"
            )
        )
    if spec.HasField("lease_transitions"):
        errs += _nonnegative("spec.leaseTransitions", spec.lease_transitions)
    return errs


def _event(ev: core_pb2.Event) -> Errors:
    """The legacy core/v1 rule: the involved object's namespace must be the event's."""
    involved_ns = ev.involved_object.namespace
    ns = ev.metadata.namespace
    ok = ns in ("", "default") if not involved_ns else ns == involved_ns
    if ok:
        return []
    return [invalid("involvedObject.namespace", involved_ns, "does not match event.namespace")]


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


def _workload_update(new: Any, old: Any) -> Errors:
    if new.spec.selector != old.spec.selector or new.spec.HasField("selector") != old.spec.HasField(
        "selector"
    ):
        return [invalid("spec.selector", _shown(new.spec.selector), FIELD_IMMUTABLE)]
    return []


def _priority_class_update(new: Any, old: Any) -> Errors:
    errs: Errors = []
    if new.value != old.value:
        errs.append(forbidden("value", "may not be changed in an update."))
    if new.HasField("preemption_policy") != old.HasField("preemption_policy") or (
        new.preemption_policy != old.preemption_policy
    ):
        errs.append(invalid("preemptionPolicy", new.preemption_policy, FIELD_IMMUTABLE))
    return errs


def _runtime_class_update(new: Any, old: Any) -> Errors:
    if new.handler != old.handler:
        return [invalid("handler", new.handler, FIELD_IMMUTABLE)]
    return []


def _no_update_rules(new: Any, old: Any) -> Errors:
    return []


# ----------------------------------------------------------------------------- the table


@dataclass(frozen=True)
class _Rules:
    """How one kind is validated: its name rule, create checks and update checks (its scope is in kinds.py)."""

    create: Callable[[Any], Errors]
    update: Callable[[Any, Any], Errors] = _no_update_rules
    name: Callable[[str], list[str]] = names.dns1123_subdomain


_RULES: dict[str, _Rules] = {
    "Pod": _Rules(_pod, _pod_update),
    "Node": _Rules(_node),
    "Namespace": _Rules(_namespace, name=names.dns1123_label),
    "PriorityClass": _Rules(_priority_class, _priority_class_update),
    "PodDisruptionBudget": _Rules(_pod_disruption_budget),
    "ReplicaSet": _Rules(_replica_set, _workload_update),
    "Deployment": _Rules(_deployment, _workload_update),
    "RuntimeClass": _Rules(_runtime_class, _runtime_class_update),
    "Lease": _Rules(_lease),
    "Event": _Rules(_event),
}


def validate_create(kind: str, obj: Any) -> list[FieldError]:
    """Every problem with ``obj`` as a new object of ``kind`` (empty when valid)."""
    rules = _RULES.get(kind)
    known = BY_KIND.get(kind)
    errs = _object_meta(obj.metadata, rules, known.namespaced if known else None)
    if rules is not None:
        errs += rules.create(obj)
    return errs


def validate_update(kind: str, new: Any, old: Any) -> list[FieldError]:
    """Every problem with replacing ``old`` by ``new``: immutable fields, then ``new`` itself."""
    rules = _RULES.get(kind)
    errs = _object_meta_update(new.metadata, old.metadata)
    if rules is not None:
        errs += rules.update(new, old)
    return errs + validate_create(kind, new)
