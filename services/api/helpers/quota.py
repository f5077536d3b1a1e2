"""Quota vocabulary: resource lists, what an object uses, which quotas cover it.

Why this module exists: the ResourceQuota admission plugin (services/apiserver/quota.py)
and the resource quota controller (services/controllers/resourcequota.py) must count usage
the same way, so the counting is here, below both, as upstream keeps it in pkg/quota/v1
(resources.go: Add, Subtract, Mask, LessThanOrEqual; evaluator/core/pods.go: the pod
evaluator; generic/evaluator.go: object counts and scope matching).

What is counted, as upstream's evaluators do:
- a pod: ``count/pods`` always; while it is not terminal (phase Succeeded/Failed, or past
  its deletion grace) also ``pods`` and its compute usage from its effective requests and
  limits (``cpu``/``requests.cpu``, ``limits.cpu``, memory and ephemeral-storage alike,
  ``hugepages-*`` and ``requests.<extended>``);
- a service (evaluator/core/services.go): ``services``, ``count/services``,
  ``services.loadbalancers`` (1 for type LoadBalancer) and ``services.nodeports`` (one per
  port for NodePort and LoadBalancer; with ``allocateLoadBalancerNodePorts: false`` only
  the ports that name a nodePort);
- a claim (evaluator/core/persistent_volume_claims.go): ``persistentvolumeclaims``,
  ``count/persistentvolumeclaims``, ``requests.storage`` (its request rounded up to whole
  bytes), and both again per storage class as
  ``<class>.storageclass.storage.k8s.io/<name>``;
- any other namespaced object: ``count/<resource>[.<group>]`` (and the legacy names
  ``configmaps``, ``secrets``, ``resourcequotas``, ``replicationcontrollers`` for their
  kinds); quotas with scopes never count them.
- scopes (pods only): Terminating (activeDeadlineSeconds >= 0), NotTerminating,
  BestEffort (QoS BestEffort), NotBestEffort, PriorityClass (In/NotIn/Exists/DoesNotExist
  over spec.priorityClassName), CrossNamespacePodAffinity.
Updates: the service and claim evaluators handle updates (a service changing type, a
claim growing), the others only creates (``handles_update``). Not modelled: the
admission configuration's limitedResources, the VolumeAttributesClass scope.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import ROUND_CEILING, Decimal
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, policyv1core_pb2
from services.api.helpers.resources import is_restartable_init_container
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import narrow
from services.api.machinery.quantity import Quantity, QuantityError, parse_quantity
from services.clock import parse_rfc3339

ResourceList = dict[str, Quantity]
ZERO = Quantity(Decimal(0))

PODS = "pods"
COUNT_PODS = "count/pods"
#: The pod evaluator's resources (podResources) and name prefixes (podResourcePrefixes).
POD_RESOURCES = frozenset(
    {
        COUNT_PODS,
        PODS,
        "cpu",
        "requests.cpu",
        "limits.cpu",
        "memory",
        "requests.memory",
        "limits.memory",
        "ephemeral-storage",
        "requests.ephemeral-storage",
        "limits.ephemeral-storage",
    }
)
_POD_PREFIXES = ("hugepages-", "requests.hugepages-")
#: Quota on these makes every container name them (upstream's validationSet, "a mistake").
VALIDATION_SET = frozenset(
    {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
)
#: Legacy object-count names of core kinds (pkg/quota/v1/evaluator/core/registry.go).
LEGACY_COUNTS = {
    "services": "services",  # the service evaluator's
    "persistentvolumeclaims": "persistentvolumeclaims",  # the claim evaluator's
    "configmaps": "configmaps",
    "secrets": "secrets",
    "resourcequotas": "resourcequotas",
    "replicationcontrollers": "replicationcontrollers",
}
SCOPE_TERMINATING = "Terminating"
SCOPE_NOT_TERMINATING = "NotTerminating"
SCOPE_BEST_EFFORT = "BestEffort"
SCOPE_NOT_BEST_EFFORT = "NotBestEffort"
SCOPE_PRIORITY_CLASS = "PriorityClass"
SCOPE_CROSS_NAMESPACE_POD_AFFINITY = "CrossNamespacePodAffinity"


# ------------------------------------------------------------------ resource lists


def parse_list(values: Mapping[str, str]) -> ResourceList:
    """A stored resource map as quantities (an unreadable value, refused by validation, is skipped)."""
    out: ResourceList = {}
    for k, v in values.items():
        try:
            out[k] = parse_quantity(v)
        except QuantityError:
            continue
    return out


def to_strings(rl: Mapping[str, Quantity]) -> dict[str, str]:
    return {k: v.canonical() for k, v in rl.items()}


def add(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """quota.Add: the sum per name, in the first operand's format unless it is zero (then
    the second's), as Go's Quantity.Add."""
    out = dict(a)
    for k, v in b.items():
        if k not in out:
            out[k] = v
            continue
        fmt = v.format if out[k].is_zero() else out[k].format
        out[k] = Quantity(out[k].value + v.value, fmt)
    return out


def subtract(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        base = out.get(k, Quantity(Decimal(0), v.format))
        out[k] = Quantity(base.value - v.value, base.format)
    return out


def mask(rl: Mapping[str, Quantity], names: Iterable[str]) -> ResourceList:
    keep = set(names)
    return {k: v for k, v in rl.items() if k in keep}


def remove_zeros(rl: Mapping[str, Quantity]) -> ResourceList:
    return {k: v for k, v in rl.items() if not v.is_zero()}


def less_than_or_equal(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> list[str]:
    """quota.LessThanOrEqual's exceeded names: those of `a` above `b` (a name `b` lacks is not bounded)."""
    return sorted(k for k, v in a.items() if k in b and v.value > b[k].value)


def equal(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """quota.Equals over stored maps: the same names with the same values (1 == 1000m)."""
    return a.keys() == b.keys() and all(parse_list({k: a[k]}) == parse_list({k: b[k]}) for k in a)


def pretty(rl: Mapping[str, Quantity]) -> str:
    """prettyPrint: `name=value` sorted by name, joined by commas."""
    return ",".join(f"{k}={rl[k].canonical()}" for k in sorted(rl))


# ------------------------------------------------------------------ pods


def _sum(lists: Iterable[Mapping[str, str]]) -> ResourceList:
    out: ResourceList = {}
    for rl in lists:
        out = add(out, parse_list(rl))
    return out


def _max(a: ResourceList, b: ResourceList) -> ResourceList:
    out = dict(a)
    for k, v in b.items():
        if k not in out or v.value > out[k].value:
            out[k] = v
    return out


def _aggregate(pod: core_pb2.Pod, field: str, overhead: bool) -> ResourceList:
    """resourcehelper.PodRequests / PodLimits: containers and sidecars add up; init
    container i needs its own amount plus the sidecars before it; the larger wins; the
    overhead is added (for limits, only to resources that have a limit)."""
    total = _sum(getattr(c.resources, field) for c in pod.spec.containers)
    sidecars: ResourceList = {}
    peak: ResourceList = {}
    for c in pod.spec.init_containers:
        own = parse_list(getattr(c.resources, field))
        if is_restartable_init_container(c):
            total = add(total, own)
            sidecars = add(sidecars, own)
            peak = _max(peak, sidecars)
        else:
            peak = _max(peak, add(own, sidecars))
    total = _max(total, peak)
    if not overhead:
        return total
    extra = parse_list(pod.spec.overhead)
    if field == "requests":
        return add(total, extra)
    return add(total, mask(extra, total))


def pod_requests(pod: core_pb2.Pod, *, overhead: bool = True) -> ResourceList:
    return _aggregate(pod, "requests", overhead)


def pod_limits(pod: core_pb2.Pod, *, overhead: bool = True) -> ResourceList:
    return _aggregate(pod, "limits", overhead)


def _is_extended(name: str) -> bool:
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def compute_usage(requests: Mapping[str, Quantity], limits: Mapping[str, Quantity]) -> ResourceList:
    """podComputeUsageHelper: `pods` 1 and the quota names of requests and limits."""
    one = Quantity(Decimal(1))
    out: ResourceList = {PODS: one}
    for res in ("cpu", "memory", "ephemeral-storage"):
        if res in requests:
            out[res] = requests[res]
            out[f"requests.{res}"] = requests[res]
        if res in limits:
            out[f"limits.{res}"] = limits[res]
    for res, q in requests.items():
        if res.startswith("hugepages-"):
            out[res] = q
            out[f"requests.{res}"] = q
        if _is_extended(res):
            out[f"requests.{res}"] = q
    return out


def pod_counts_compute(pod: core_pb2.Pod, now: float) -> bool:
    """QuotaV1Pod: not terminal, and not past its deletion grace period."""
    if pod.status.phase in ("Succeeded", "Failed"):
        return False
    meta = pod.metadata
    if meta.deletion_timestamp and meta.HasField("deletion_grace_period_seconds"):
        try:
            deleted = parse_rfc3339(meta.deletion_timestamp)
        except ValueError:
            return True
        if now > deleted + meta.deletion_grace_period_seconds:
            return False
    return True


def pod_usage(pod: core_pb2.Pod, now: float) -> ResourceList:
    """PodUsageFunc: `count/pods` always, the compute usage while the pod counts."""
    out: ResourceList = {COUNT_PODS: Quantity(Decimal(1))}
    if not pod_counts_compute(pod, now):
        return out
    return add(out, compute_usage(pod_requests(pod), pod_limits(pod)))


def is_best_effort(pod: core_pb2.Pod) -> bool:
    """QoS BestEffort: no container asks for or limits cpu or memory."""
    for c in (*pod.spec.init_containers, *pod.spec.containers):
        for rl in (c.resources.requests, c.resources.limits):
            if any(k in ("cpu", "memory") for k in rl):
                return False
    return True


def is_terminating(pod: core_pb2.Pod) -> bool:
    return pod.spec.HasField("active_deadline_seconds") and pod.spec.active_deadline_seconds >= 0


def _uses_cross_namespace_affinity(pod: core_pb2.Pod) -> bool:
    aff = pod.spec.affinity
    for group in (aff.pod_affinity, aff.pod_anti_affinity):
        terms = [
            *group.required_during_scheduling_ignored_during_execution,
            *(
                w.pod_affinity_term
                for w in group.preferred_during_scheduling_ignored_during_execution
            ),
        ]
        if any(len(t.namespaces) or t.HasField("namespace_selector") for t in terms):
            return True
    return False


def pod_matches_scope(
    req: policyv1core_pb2.ScopedResourceSelectorRequirement, pod: core_pb2.Pod
) -> bool:
    """podMatchesScopeFunc."""
    name = req.scope_name
    if name == SCOPE_TERMINATING:
        return is_terminating(pod)
    if name == SCOPE_NOT_TERMINATING:
        return not is_terminating(pod)
    if name == SCOPE_BEST_EFFORT:
        return is_best_effort(pod)
    if name == SCOPE_NOT_BEST_EFFORT:
        return not is_best_effort(pod)
    if name == SCOPE_PRIORITY_CLASS:
        pc = pod.spec.priority_class_name
        if req.operator == "Exists":
            return bool(pc)
        if req.operator == "DoesNotExist":
            return not pc
        if req.operator == "In":
            return bool(pc) and pc in req.values
        if req.operator == "NotIn":
            return not pc or pc not in req.values
        return False
    if name == SCOPE_CROSS_NAMESPACE_POD_AFFINITY:
        return _uses_cross_namespace_affinity(pod)
    return False


def scope_selectors(
    rq: policyv1core_pb2.ResourceQuota,
) -> list[policyv1core_pb2.ScopedResourceSelectorRequirement]:
    """getScopeSelectorsFromQuota: each of spec.scopes as Exists, then the scopeSelector's."""
    out = [
        policyv1core_pb2.ScopedResourceSelectorRequirement(scope_name=s, operator="Exists")
        for s in rq.spec.scopes
    ]
    out.extend(rq.spec.scope_selector.match_expressions)
    return out


# ------------------------------------------------------------------ services and claims

SERVICES_NODE_PORTS = "services.nodeports"
SERVICES_LOAD_BALANCERS = "services.loadbalancers"
REQUESTS_STORAGE = "requests.storage"
PERSISTENT_VOLUME_CLAIMS = "persistentvolumeclaims"
#: <storage-class>.storageclass.storage.k8s.io/<resource>: a claim's usage per class.
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
#: The claim's storage class, before spec.storageClassName (GetPersistentVolumeClaimClass).
BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
_SERVICE_RESOURCES = frozenset({SERVICES_NODE_PORTS, SERVICES_LOAD_BALANCERS})
_PVC_RESOURCES = (PERSISTENT_VOLUME_CLAIMS, REQUESTS_STORAGE)


def service_usage(svc: Any) -> ResourceList:
    """The service evaluator's Usage beyond the object counts."""
    spec = svc.spec
    ports = len(spec.ports)
    node_ports, load_balancers = 0, 0
    if spec.type == "NodePort":
        node_ports = ports
    elif spec.type == "LoadBalancer":
        load_balancers = 1
        allocate = (
            not spec.HasField("allocate_load_balancer_node_ports")
            or spec.allocate_load_balancer_node_ports
        )
        node_ports = ports if allocate else sum(1 for p in spec.ports if p.node_port)
    return {
        SERVICES_NODE_PORTS: Quantity(Decimal(node_ports)),
        SERVICES_LOAD_BALANCERS: Quantity(Decimal(load_balancers)),
    }


def claim_class(pvc: Any) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName."""
    beta = pvc.metadata.annotations.get(BETA_STORAGE_CLASS_ANNOTATION)
    if beta is not None:
        return str(beta)
    return str(pvc.spec.storage_class_name) if pvc.spec.HasField("storage_class_name") else ""


def _round_up(q: Quantity) -> Quantity:
    """Quantity.RoundUp(0): a fraction of a byte counts as a whole one (issue 94313)."""
    whole = q.value.to_integral_value(rounding=ROUND_CEILING)
    return q if whole == q.value else Quantity(whole, q.format)


def claim_usage(pvc: Any) -> ResourceList:
    """The claim evaluator's Usage beyond the object counts: requests.storage is the
    request, or status.allocatedResources' storage when larger, rounded up to bytes."""
    one = Quantity(Decimal(1))
    out: ResourceList = {PERSISTENT_VOLUME_CLAIMS: one}
    cls = claim_class(pvc)
    if cls:
        out[cls + STORAGE_CLASS_SUFFIX + PERSISTENT_VOLUME_CLAIMS] = one
    requested = parse_list(pvc.spec.resources.requests).get("storage")
    if requested is None:
        return out
    allocated = parse_list(getattr(pvc.status, "allocated_resources", {})).get("storage")
    if allocated is not None and allocated.value > requested.value:
        requested = allocated
    storage = _round_up(requested)
    out[REQUESTS_STORAGE] = storage
    if cls:
        out[cls + STORAGE_CLASS_SUFFIX + REQUESTS_STORAGE] = storage
    return out


# ------------------------------------------------------------------ evaluators


def count_names(kind: Kind) -> tuple[str, ...]:
    """The object-count names of a kind: count/<resource>[.<group>] and its legacy name."""
    name = f"count/{kind.http_resource}" + (f".{kind.group}" if kind.group else "")
    legacy = LEGACY_COUNTS.get(kind.resource) if not kind.group else None
    return (name, legacy) if legacy else (name,)


def matching_resources(kind: Kind, names: Iterable[str]) -> list[str]:
    """Evaluator.MatchingResources: the names of `names` this kind's usage can fill."""
    if kind.kind == "Pod":
        return sorted(
            n
            for n in names
            if n in POD_RESOURCES
            or n.startswith(_POD_PREFIXES)
            or (n.startswith("requests.") and _is_extended(n[len("requests.") :]))
        )
    counted = set(count_names(kind))
    if kind.kind == "Service":
        counted |= _SERVICE_RESOURCES
    elif kind.kind == "PersistentVolumeClaim":
        return sorted(
            n
            for n in names
            if n in counted
            or n in _PVC_RESOURCES
            or any(n.endswith(STORAGE_CLASS_SUFFIX + r) for r in _PVC_RESOURCES)
        )
    return sorted(n for n in names if n in counted)


def usage(kind: Kind, obj: Message, now: float) -> ResourceList:
    """Evaluator.Usage of one object."""
    if kind.kind == "Pod":
        return pod_usage(narrow(obj, core_pb2.Pod), now)
    one = Quantity(Decimal(1))
    out = {n: one for n in count_names(kind)}
    if kind.kind == "Service":
        out.update(service_usage(obj))
    elif kind.kind == "PersistentVolumeClaim":
        out.update(claim_usage(obj))
    return out


def handles_update(kind: Kind) -> bool:
    """Evaluator.Handles for an update: the service evaluator ("a service type can
    change") and the claim evaluator (a claim grows); the pod evaluator only for in-place
    resize, which kubera does not serve; the object-count evaluators never."""
    return kind.kind in ("Service", "PersistentVolumeClaim")


def subtract_non_negative(a: Mapping[str, Quantity], b: Mapping[str, Quantity]) -> ResourceList:
    """quota.SubtractWithNonNegativeResult: a - b per name of a, never below zero."""
    out: ResourceList = {}
    for k, v in a.items():
        diff = v.value - b[k].value if k in b else v.value
        out[k] = Quantity(max(diff, Decimal(0)), v.format)
    return out


def matches(rq: policyv1core_pb2.ResourceQuota, kind: Kind, obj: Message) -> bool:
    """Evaluator.Matches (generic.Matches): the quota's status.hard names something this kind
    uses, and the object matches every scope (a non-pod object matches none)."""
    if not matching_resources(kind, rq.status.hard):
        return False
    selectors = scope_selectors(rq)
    if kind.kind != "Pod":
        return not selectors
    pod = narrow(obj, core_pb2.Pod)
    return all(pod_matches_scope(s, pod) for s in selectors)


def pod_constraints(required: Iterable[str], pod: core_pb2.Pod) -> str:
    """The pod evaluator's Constraints: with quota on cpu or memory, every container must
    name them; the message lists what each misses ("" when nothing)."""
    required_set = set(required) & VALIDATION_SET
    missing: dict[str, set[str]] = {}
    for c in (*pod.spec.containers, *pod.spec.init_containers):
        have = set(compute_usage(parse_list(c.resources.requests), parse_list(c.resources.limits)))
        for res in required_set - have:
            missing.setdefault(res, set()).add(c.name)
    if not missing:
        return ""
    parts = [f"{res} for: {','.join(sorted(missing[res]))}" for res in sorted(missing)]
    return "must specify " + "; ".join(parts)
