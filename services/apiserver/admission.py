"""The admission chain every create passes before validation and storage, in
kube-apiserver's order: defaulting, then the mutating plugins (Priority, RuntimeClass,
DefaultTolerationSeconds), then the validating checks that need other objects
(NamespaceLifecycle, DRA's admin access). Each step is a small function over (lookup,
object).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from google.protobuf.message import Message

from protos.kubera.v1 import (
    apps_pb2,
    core_pb2,
    node_pb2,
    resource_pb2,
    scheduling_pb2,
    service_pb2,
)
from services.api.dra.claims import ADMIN_ACCESS_NAMESPACE_LABEL
from services.api.helpers.stages import STAGES_ANNOTATION, Stages, TemplateError
from services.api.helpers.usage import USAGE_ANNOTATION, UsageSpecError, parse_usage
from services.api.helpers.wellknown import TAINT_NOT_READY, TAINT_UNREACHABLE
from services.api.machinery.errors import (
    INVALID,
    FieldError,
    ForbiddenError,
    InvalidError,
    forbidden,
)
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import M, narrow, narrow_optional, object_meta
from services.api.machinery.quantity import QuantityError, parse_quantity
from services.apiserver import serviceips


class Lookup(Protocol):
    """What admission may read: other objects, as of now."""

    async def cached_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None: ...

    async def global_default_priority_class(self) -> scheduling_pb2.PriorityClass | None: ...


DEFAULT_SCHEDULER = "default-scheduler"
DEFAULT_GRACE_SECONDS = 30
DEFAULT_TOLERATION_SECONDS = 300
INITIAL_NAMESPACES = ("default", "kube-system", "kube-node-lease", "kube-public")
UNDELETABLE_NAMESPACES = ("default", "kube-system", "kube-public")
NAMESPACE_FINALIZER = "kubernetes"
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": 2_000_001_000,
    "system-cluster-critical": 2_000_000_000,
}
PREEMPT_LOWER = "PreemptLowerPriority"


def _forbidden(kind: Kind, name: str, why: str) -> ForbiddenError:
    return ForbiddenError(f'{kind.resource} "{name}" is forbidden: {why}')


# ---------------------------------------------------------------- defaulting


def default_pod_spec(spec: core_pb2.PodSpec) -> None:
    """Kubernetes' API defaults for a pod spec (SetDefaults_PodSpec and friends)."""
    if not spec.scheduler_name:
        spec.scheduler_name = DEFAULT_SCHEDULER
    if not spec.HasField("termination_grace_period_seconds"):
        spec.termination_grace_period_seconds = DEFAULT_GRACE_SECONDS
    if not spec.restart_policy:
        spec.restart_policy = "Always"
    if not spec.dns_policy:
        spec.dns_policy = "ClusterFirst"
    for c in (*spec.init_containers, *spec.containers):
        for p in c.ports:
            if not p.protocol:
                p.protocol = "TCP"
        if not c.image_pull_policy:
            tag = c.image.rsplit("/", 1)[-1]
            latest = ":" not in tag or tag.endswith(":latest")
            c.image_pull_policy = "Always" if latest and "@" not in tag else "IfNotPresent"
        if not c.termination_message_path:
            c.termination_message_path = "/dev/termination-log"
        if not c.termination_message_policy:
            c.termination_message_policy = "File"
        # A limit without a request means request == limit.
        for res, qty in c.resources.limits.items():
            if res not in c.resources.requests:
                c.resources.requests[res] = qty


def qos_class(spec: core_pb2.PodSpec) -> str:
    """Guaranteed, Burstable or BestEffort, by Kubernetes' rules (cpu and memory only)."""
    requests: dict[str, object] = {}
    limits: dict[str, object] = {}
    any_set = False
    guaranteed = True
    for c in (*spec.init_containers, *spec.containers):
        for res in ("cpu", "memory"):
            req, lim = c.resources.requests.get(res), c.resources.limits.get(res)
            try:
                rq = parse_quantity(req) if req is not None else None
                lq = parse_quantity(lim) if lim is not None else None
            except QuantityError:
                rq = lq = None
            if (rq is not None and not rq.is_zero()) or (lq is not None and not lq.is_zero()):
                any_set = True
            if lq is None or rq is None or rq.value != lq.value or lq.is_zero():
                guaranteed = False
            requests[res], limits[res] = rq, lq
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed and (spec.containers or spec.init_containers) else "Burstable"


def _default_pod(pod: core_pb2.Pod) -> None:
    default_pod_spec(pod.spec)


def _default_template_owner(obj: apps_pb2.ReplicaSet | apps_pb2.Deployment) -> None:
    if not obj.spec.HasField("replicas"):
        obj.spec.replicas = 1
    default_pod_spec(obj.spec.template.spec)
    if isinstance(obj, apps_pb2.Deployment):
        st = obj.spec.strategy
        if not st.type:
            st.type = "RollingUpdate"
        if st.type == "RollingUpdate":
            if not st.rolling_update.HasField("max_unavailable"):
                st.rolling_update.max_unavailable = "25%"
            if not st.rolling_update.HasField("max_surge"):
                st.rolling_update.max_surge = "25%"
        if not obj.spec.HasField("revision_history_limit"):
            obj.spec.revision_history_limit = 10
        if not obj.spec.HasField("progress_deadline_seconds"):
            obj.spec.progress_deadline_seconds = 600


def _default_node(node: core_pb2.Node) -> None:
    # A node registered from a manifest often gives only capacity; the kubelet would
    # report allocatable = capacity minus reservations, which are zero here.
    if node.status.capacity and not node.status.allocatable:
        node.status.allocatable.update(node.status.capacity)


def _default_priority_class(pc: scheduling_pb2.PriorityClass) -> None:
    if not pc.HasField("preemption_policy"):
        pc.preemption_policy = PREEMPT_LOWER


def _for(cls: type[M], fn: Callable[[M], None]) -> Callable[[Message], None]:
    """`fn`, for the objects of its kind that arrive typed as Message (checked)."""
    return lambda obj: fn(narrow(obj, cls))


_DEFAULTS: dict[str, Callable[[Message], None]] = {
    "Pod": _for(core_pb2.Pod, _default_pod),
    "ReplicaSet": _for(apps_pb2.ReplicaSet, _default_template_owner),
    "Deployment": _for(apps_pb2.Deployment, _default_template_owner),
    "Node": _for(core_pb2.Node, _default_node),
    "PriorityClass": _for(scheduling_pb2.PriorityClass, _default_priority_class),
    "Service": _for(service_pb2.Service, serviceips.default_service),
    "Secret": _for(service_pb2.Secret, serviceips.default_secret),
}


def apply_defaults(kind: Kind, obj: Message) -> None:
    """Kubernetes' API defaults; run on create and on every update (so an update that
    drops a defaulted field gets the default back, and re-applying a manifest is a no-op)."""
    fn = _DEFAULTS.get(kind.kind)
    if fn is not None:
        fn(obj)


def initial_status(kind: Kind, obj: Message) -> None:
    """The status a new object starts with; what a client sent there is not kept (nodes
    excepted: a registering kubelet reports its status with the create). A namespace also
    gets the "kubernetes" spec finalizer, which holds it until its contents are gone."""
    if kind.kind == "Pod":
        pod = narrow(obj, core_pb2.Pod)
        pod.status.Clear()
        pod.status.phase = "Pending"
    elif kind.kind == "Namespace":
        ns = narrow(obj, core_pb2.Namespace)
        ns.status.Clear()
        ns.status.phase = "Active"
        if NAMESPACE_FINALIZER not in ns.spec.finalizers:
            ns.spec.finalizers.append(NAMESPACE_FINALIZER)
    elif kind.has_status and kind.kind != "Node":
        obj.ClearField("status")


# -------------------------------------------------------- mutating plugins


async def _priority(pod: core_pb2.Pod, lookup: Lookup) -> None:
    """The Priority plugin: priorityClassName (or the global default) → spec.priority."""
    kind = BY_KIND["Pod"]
    pc_kind = BY_KIND["PriorityClass"]
    name = pod.spec.priority_class_name
    value, policy = 0, PREEMPT_LOWER
    if name:
        pc = narrow_optional(
            await lookup.cached_or_none(pc_kind, "", name), scheduling_pb2.PriorityClass
        )
        if pc is None:
            raise _forbidden(
                kind, pod.metadata.name, f"no PriorityClass with name {name} was found"
            )
        value = pc.value
        policy = pc.preemption_policy or PREEMPT_LOWER
    else:
        default = await _global_default(lookup)
        if default is not None:
            pod.spec.priority_class_name = default.metadata.name
            value, policy = default.value, default.preemption_policy or PREEMPT_LOWER
    if pod.spec.HasField("priority") and pod.spec.priority != value:
        raise _forbidden(
            kind,
            pod.metadata.name,
            f"the integer value of priority ({pod.spec.priority}) must not be provided in pod spec; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    if pod.spec.HasField("preemption_policy") and pod.spec.preemption_policy != policy:
        raise _forbidden(
            kind,
            pod.metadata.name,
            f"the string value of PreemptionPolicy ({pod.spec.preemption_policy}) must not be provided "
            f"in pod spec; priority admission controller computed {policy} from the given PriorityClass name",
        )
    pod.spec.priority = value
    pod.spec.preemption_policy = policy


async def _global_default(lookup: Lookup) -> scheduling_pb2.PriorityClass | None:
    return await lookup.global_default_priority_class()


async def _runtime_class(pod: core_pb2.Pod, lookup: Lookup) -> None:
    """The RuntimeClass plugin: copy overhead into spec.overhead, merge its scheduling."""
    kind = BY_KIND["Pod"]
    rc: node_pb2.RuntimeClass | None = None
    if pod.spec.HasField("runtime_class_name") and pod.spec.runtime_class_name:
        rc = narrow_optional(
            await lookup.cached_or_none(BY_KIND["RuntimeClass"], "", pod.spec.runtime_class_name),
            node_pb2.RuntimeClass,
        )
        if rc is None:
            raise _forbidden(
                kind,
                pod.metadata.name,
                f'pod rejected: RuntimeClass "{pod.spec.runtime_class_name}" not found',
            )
    if pod.spec.overhead:
        if rc is None or not rc.overhead.pod_fixed:
            raise _forbidden(
                kind,
                pod.metadata.name,
                "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead",
            )
        if not _same_quantities(dict(pod.spec.overhead), dict(rc.overhead.pod_fixed)):
            raise _forbidden(
                kind,
                pod.metadata.name,
                "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead",
            )
    if rc is None:
        return
    pod.spec.overhead.update(rc.overhead.pod_fixed)
    for key, value in rc.scheduling.node_selector.items():
        if pod.spec.node_selector.get(key, value) != value:
            raise _forbidden(
                kind,
                pod.metadata.name,
                f"pod rejected: conflict in RuntimeClass.scheduling.nodeSelector for key {key}",
            )
        pod.spec.node_selector[key] = value
    for t in rc.scheduling.tolerations:
        if t not in pod.spec.tolerations:
            pod.spec.tolerations.append(t)


def _same_quantities(a: dict[str, str], b: dict[str, str]) -> bool:
    if a.keys() != b.keys():
        return False
    try:
        return all(parse_quantity(a[k]).value == parse_quantity(b[k]).value for k in a)
    except QuantityError:
        return False


def _default_toleration_seconds(pod: core_pb2.Pod) -> None:
    """DefaultTolerationSeconds: tolerate not-ready and unreachable for 300 s unless the pod says otherwise."""
    has = {TAINT_NOT_READY: False, TAINT_UNREACHABLE: False}
    for t in pod.spec.tolerations:
        for key in has:
            if (t.key == key or not t.key) and t.effect in ("NoExecute", ""):
                has[key] = True
    for key in (TAINT_NOT_READY, TAINT_UNREACHABLE):
        if not has[key]:
            pod.spec.tolerations.append(
                core_pb2.Toleration(
                    key=key,
                    operator="Exists",
                    effect="NoExecute",
                    toleration_seconds=DEFAULT_TOLERATION_SECONDS,
                )
            )


async def mutate(kind: Kind, obj: Message, lookup: Lookup) -> None:
    """The mutating admission plugins, for a create."""
    check_hollow_kubelet_annotations(kind, obj)
    if kind.kind == "Pod":
        pod = narrow(obj, core_pb2.Pod)
        await _priority(pod, lookup)
        await _runtime_class(pod, lookup)
        _default_toleration_seconds(pod)
        pod.status.qos_class = qos_class(pod.spec)
    elif kind.kind == "PriorityClass":
        await check_single_global_default(kind, obj, lookup)
    elif kind.kind in ("ResourceClaim", "ResourceClaimTemplate"):
        await check_admin_access(kind, obj, lookup)


# -------------------------------------------------------- validating plugins


def check_hollow_kubelet_annotations(kind: Kind, obj: Message) -> None:
    """kubera's own pod annotations, which the hollow kubelet plays: ``kubera.io/usage``
    (a usage model) and ``kubera.io/stages`` (stage delays). One the kubelet cannot use
    (bad JSON, a quantity beyond int64 milli-units, a non-finite or int32-overflowing
    duration) is refused here, naming the annotation and the field inside it, rather than
    ignored by the kubelet with a log line. Checked on pods and on pod templates."""
    if kind.kind == "Pod":
        path, annotations = "metadata.annotations", object_meta(obj).annotations
    elif kind.kind in ("ReplicaSet", "Deployment"):
        path = "spec.template.metadata.annotations"
        owner: apps_pb2.Deployment | apps_pb2.ReplicaSet = (
            narrow(obj, apps_pb2.Deployment)
            if kind.kind == "Deployment"
            else narrow(obj, apps_pb2.ReplicaSet)
        )
        annotations = owner.spec.template.metadata.annotations
    else:
        return
    errors: list[FieldError] = []
    text = annotations.get(USAGE_ANNOTATION)
    if text is not None:
        try:
            parse_usage(text)
        except UsageSpecError as e:
            errors.append(_annotation_error(path, USAGE_ANNOTATION, str(e)))
    if annotations.get(STAGES_ANNOTATION):
        try:
            Stages().for_pod({STAGES_ANNOTATION: annotations[STAGES_ANNOTATION]})
        except TemplateError as e:
            errors.append(_annotation_error(path, STAGES_ANNOTATION, str(e)))
    if errors:
        raise InvalidError(kind.kind, object_meta(obj).name, errors)


def _annotation_error(path: str, key: str, message: str) -> FieldError:
    """The parser's message ("kubera.io/usage: memory: ...") as an error at the annotation."""
    for prefix in (f"{key}: ", f"{key}."):
        if message.startswith(prefix):
            message = message[len(prefix) :]
            break
    return FieldError(f"{path}[{key}]", INVALID, message)


async def check_single_global_default(kind: Kind, obj: Message, lookup: Lookup) -> None:
    """Only one PriorityClass may be the global default (on create and on update)."""
    if kind.kind == "PriorityClass":
        pc = narrow(obj, scheduling_pb2.PriorityClass)
        if pc.global_default:
            existing = await _global_default(lookup)
            if existing is not None and existing.metadata.name != pc.metadata.name:
                raise _forbidden(
                    kind,
                    pc.metadata.name,
                    f"PriorityClass {existing.metadata.name} is already marked as default. Only one default can exist",
                )


async def check_admin_access(kind: Kind, obj: Message, lookup: Lookup) -> None:
    """DRA's AuthorizedForAdmin: a ResourceClaim or ResourceClaimTemplate whose request asks
    for admin access (devices in use by others may be handed out, for monitoring or
    maintenance) is refused unless its namespace carries the label
    resource.kubernetes.io/admin-access=true. Upstream words and paths: the first such
    request, at spec.devices.requests[i].adminAccess (for a template too). The spec of
    both kinds is immutable, so creates are all that need the check."""
    claim_spec = (
        narrow(obj, resource_pb2.ResourceClaim).spec
        if kind.kind == "ResourceClaim"
        else narrow(obj, resource_pb2.ResourceClaimTemplate).spec.spec
    )
    path = next(
        (
            f"spec.devices.requests[{i}].adminAccess"
            for i, r in enumerate(claim_spec.devices.requests)
            if r.HasField("exactly") and r.exactly.admin_access
        ),
        None,
    )
    if path is None:
        return
    meta = object_meta(obj)
    ns = await lookup.cached_or_none(BY_KIND["Namespace"], "", meta.namespace)
    labels = object_meta(ns).labels if ns is not None else {}
    if labels.get(ADMIN_ACCESS_NAMESPACE_LABEL) != "true":
        why = (
            f"admin access to devices requires the `{ADMIN_ACCESS_NAMESPACE_LABEL}: true` "
            "label on the containing namespace"
        )
        raise InvalidError(kind.kind, meta.name, [forbidden(path, why)])
