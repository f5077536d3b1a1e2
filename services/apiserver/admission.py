"""The admission chain every create passes before validation and storage, in
kube-apiserver's order: defaulting (services/api/defaults), then the mutating plugins (Priority, RuntimeClass,
DefaultTolerationSeconds), then the validating checks that need other objects
(NamespaceLifecycle, DRA's admin access); for claims and volumes, DefaultStorageClass and
StorageObjectInUseProtection. PodTopologyLabels also runs at a pod's binding (binding.py). Each step is a small function over (lookup,
object).
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import Any, Protocol

from google.protobuf.message import Message

from protos.kubera.v1 import (
    apps_pb2,
    batch_pb2,
    core_pb2,
    node_pb2,
    resource_pb2,
    scheduling_pb2,
    storage_pb2,
)
from services.api import defaults, features
from services.api.dra.claims import ADMIN_ACCESS_NAMESPACE_LABEL
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.stages import STAGES_ANNOTATION, Stages, TemplateError
from services.api.helpers.usage import USAGE_ANNOTATION, UsageSpecError, parse_usage
from services.api.helpers.volumes import ANN_BETA_STORAGE_CLASS as BETA_STORAGE_CLASS
from services.api.helpers.volumes import (
    PV_PROTECTION_FINALIZER,
    PVC_PROTECTION_FINALIZER,
    is_default_class,
)
from services.api.helpers.wellknown import (
    DAEMON_SET_TEMPLATE_GENERATION,
    DEFAULT_SERVICE_ACCOUNT,
    LABEL_CONTROLLER_UID,
    LABEL_JOB_NAME,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    LEGACY_CONTROLLER_UID,
    LEGACY_JOB_NAME,
    MIRROR_POD_ANNOTATION,
    TAINT_NOT_READY,
    TAINT_UNREACHABLE,
)
from services.api.machinery.errors import (
    INVALID,
    FieldError,
    ForbiddenError,
    InvalidError,
    forbidden,
)
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP, Kind
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.quantity import QuantityError, parse_quantity
from services.apiserver import serviceips
from services.clock import rfc3339


class Lookup(Protocol):
    """What admission may read: other objects, as of now."""

    async def cached_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None: ...

    async def global_default_priority_class(self) -> scheduling_pb2.PriorityClass | None: ...

    async def namespace_objects(self, kind: Kind, namespace: str) -> list[Message]: ...


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

#: Admission plugins that may be turned off (kube-apiserver's --disable-admission-plugins),
#: by upstream's names. TaintNodesByCondition is accepted and changes nothing: kubera's
#: apiserver does not taint a node at its create (docs/differences.md).
DISABLEABLE = frozenset(
    {
        "ServiceAccount",
        "Priority",
        "RuntimeClass",
        "DefaultTolerationSeconds",
        "TaintNodesByCondition",
        "PodTopologyLabels",
    }
)
#: What upstream's scheduler_perf apiserver disables (test/integration/scheduler_perf
#: mustSetupCluster: "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition,Priority"),
#: so its templates may set spec.priority directly: experiments run with this set.
SCHEDULER_PERF_DISABLED = ("ServiceAccount", "TaintNodesByCondition", "Priority")
#: PodTopologyLabels admission: the node labels a pod bound to the node gets (upstream's
#: plugin/pkg/admission/podtopologylabels default Config.Labels; only these exact keys).
TOPOLOGY_LABELS = (LABEL_TOPOLOGY_ZONE, LABEL_TOPOLOGY_REGION)


def _forbidden(kind: Kind, name: str, why: str) -> ForbiddenError:
    return ForbiddenError(f'{kind.resource} "{name}" is forbidden: {why}')


# ---------------------------------------------------------------- defaulting


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


def daemon_set_template_generation(ds: Message, old: Message | None) -> None:
    """The DaemonSet strategy's TemplateGeneration: 1 on create; on update the stored value,
    plus one when the template changed. Whatever a client wrote there is replaced."""
    new = narrow(ds, apps_pb2.DaemonSet)
    generation = 1
    if old is not None:
        prev = narrow(old, apps_pb2.DaemonSet)
        try:
            generation = int(prev.metadata.annotations.get(DAEMON_SET_TEMPLATE_GENERATION, "1"))
        except ValueError:
            generation = 1
        if new.spec.template != prev.spec.template:
            generation += 1
    new.metadata.annotations[DAEMON_SET_TEMPLATE_GENERATION] = str(generation)


def prepare_for_create(kind: Kind, obj: Message) -> None:
    """What a kind's registry strategy does to a new, defaulted object before validation
    (its PrepareForCreate), beyond defaults: a DaemonSet's template generation; a Job's
    generated selector and labels, then the defaults again (SetDefaults_Job copies the
    template's labels to a Job without any; upstream defaults again on every read, after
    the strategy generated the selector). `kubera apply` runs it too, to validate locally
    what the apiserver will validate."""
    if kind.kind == "DaemonSet":
        daemon_set_template_generation(obj, None)
    elif kind.kind == "Job":
        generate_job_selector(obj)
        apply_defaults(kind, obj)


def generate_job_selector(obj: Message) -> None:
    """The Job strategy's generateSelector (pkg/registry/batch/job/strategy.go), unless
    manualSelector: the template gets the job-name and controller-uid labels (legacy and
    batch.kubernetes.io/ forms, where not set) and the selector the controller-uid one."""
    job = narrow(obj, batch_pb2.Job)
    if job.spec.manual_selector:
        return
    tpl = job.spec.template.metadata.labels
    for key in (LEGACY_JOB_NAME, LABEL_JOB_NAME):
        tpl.setdefault(key, job.metadata.name)
    for key in (LEGACY_CONTROLLER_UID, LABEL_CONTROLLER_UID):
        tpl.setdefault(key, job.metadata.uid)
    job.spec.selector.match_labels.setdefault(LABEL_CONTROLLER_UID, job.metadata.uid)


def apply_defaults(kind: Kind, obj: Message) -> None:
    """Kubernetes' API defaults (services/api/defaults: upstream's SetDefaults_* and OpenAPI
    defaults, for every kind); run on create and on every update (so an update that drops a
    defaulted field gets the default back, and re-applying a manifest is a no-op). The
    defaults follow the message; `kind` adds the registry's own steps for a Service and a
    Secret (services/apiserver/serviceips.py)."""
    defaults.apply(obj)
    mirror_service_account(kind, obj)
    if kind.kind == "Service":
        # the registry's part: the IP family defaults (SetDefaults_Service's is done above)
        serviceips.default_service(obj)
    elif kind.kind == "Secret":
        serviceips.default_secret(obj)  # stringData folded into data, never stored


def mirror_service_account(kind: Kind, obj: Message) -> None:
    """upstream's v1 PodSpec conversion, for a pod and a pod template: the deprecated
    `serviceAccount` names the account when `serviceAccountName` does not, and is written
    as a copy of it."""
    found = _pod_template(obj) if kind.kind != "Pod" else ("", obj)
    if found is None:
        return
    spec: Any = found[1].spec  # type: ignore[attr-defined]
    if not spec.service_account_name:
        spec.service_account_name = spec.service_account
    spec.service_account = spec.service_account_name


#: The PodScheduled=False reason and message of a pod created with scheduling gates
#: (upstream's apiv1.PodReasonSchedulingGated, and pod strategy's message).
REASON_SCHEDULING_GATED = "SchedulingGated"
MESSAGE_SCHEDULING_GATED = "Scheduling is blocked due to non-empty scheduling gates"


def initial_status(kind: Kind, obj: Message, now: float) -> None:
    """The status a new object starts with; what a client sent there is not kept (nodes
    excepted: a registering kubelet reports its status with the create). A namespace also
    gets the "kubernetes" spec finalizer, which holds it until its contents are gone.

    A pod created with scheduling gates gets PodScheduled=False, reason SchedulingGated,
    as upstream's pod strategy writes it at create (applySchedulingGatedCondition,
    pkg/registry/core/pod/strategy.go): the scheduler does not write it for a gated pod.
    Once the gates are removed, the scheduler's PodScheduled=False Unschedulable (its
    failure handler) or the binding's PodScheduled=True replaces it, as upstream's do."""
    if kind.kind == "Pod":
        pod = narrow(obj, core_pb2.Pod)
        pod.status.Clear()
        pod.status.phase = "Pending"
        if pod.spec.scheduling_gates:
            update_pod_condition(
                pod.status,
                "PodScheduled",
                "False",
                now,
                reason=REASON_SCHEDULING_GATED,
                message=MESSAGE_SCHEDULING_GATED,
            )
    elif kind.kind == "Namespace":
        ns = narrow(obj, core_pb2.Namespace)
        ns.status.Clear()
        ns.status.phase = "Active"
        if NAMESPACE_FINALIZER not in ns.spec.finalizers:
            ns.spec.finalizers.append(NAMESPACE_FINALIZER)
    elif kind.kind == "PersistentVolumeClaim":
        # SetDefaults_PersistentVolumeClaim: a new claim is Pending until it is bound.
        claim = narrow(obj, storage_pb2.PersistentVolumeClaim)
        claim.status.Clear()
        claim.status.phase = "Pending"
    elif kind.kind == "PersistentVolume":
        # persistentvolumeStrategy.PrepareForCreate: Pending, since now.
        pv = narrow(obj, storage_pb2.PersistentVolume)
        pv.status.Clear()
        pv.status.phase = "Pending"
        pv.status.last_phase_transition_time = rfc3339(now)
    elif kind.kind in ("DaemonSet", "StatefulSet"):
        # A struct upstream always writes: its required counts read 0 from the start.
        obj.ClearField("status")
        obj.status.SetInParent()  # type: ignore[attr-defined]
    elif kind.has_status and kind.kind != "Node":
        obj.ClearField("status")


# -------------------------------------------------------- mutating plugins


async def _priority(obj: Message, kind: Kind, lookup: Lookup, *, with_policy: bool) -> None:
    """The Priority plugin: priorityClassName (or the global default) → spec.priority (and
    spec.preemptionPolicy when `with_policy`), for a Pod or a scheduling.k8s.io PodGroup
    (whose preemptionPolicy is behind the alpha PodGroupPreemptionPolicy gate: left as
    given)."""
    spec: Any = obj.spec  # type: ignore[attr-defined]
    name_of_obj = object_meta(obj).name
    where = "pod spec" if kind.kind == "Pod" else "pod group spec"
    pc_kind = BY_KIND["PriorityClass"]
    name = spec.priority_class_name
    value, policy = 0, PREEMPT_LOWER
    if name:
        pc = narrow_optional(
            await lookup.cached_or_none(pc_kind, "", name), scheduling_pb2.PriorityClass
        )
        if pc is None:
            raise _forbidden(kind, name_of_obj, f"no PriorityClass with name {name} was found")
        value = pc.value
        policy = pc.preemption_policy or PREEMPT_LOWER
    else:
        default = await _global_default(lookup)
        if default is not None:
            spec.priority_class_name = default.metadata.name
            value, policy = default.value, default.preemption_policy or PREEMPT_LOWER
    if spec.HasField("priority") and spec.priority != value:
        raise _forbidden(
            kind,
            name_of_obj,
            f"the integer value of priority ({spec.priority}) must not be provided in {where}; "
            f"priority admission controller computed {value} from the given PriorityClass name",
        )
    spec.priority = value
    if not with_policy:
        return
    if spec.HasField("preemption_policy") and spec.preemption_policy != policy:
        raise _forbidden(
            kind,
            name_of_obj,
            f"the string value of PreemptionPolicy ({spec.preemption_policy}) must not be provided "
            f"in {where}; priority admission controller computed {policy} from the given PriorityClass name",
        )
    spec.preemption_policy = policy


async def _service_account(pod: core_pb2.Pod, lookup: Lookup) -> None:
    """The ServiceAccount plugin (plugin/pkg/admission/serviceaccount), on create: a pod
    without an account gets `default`; an account it names must exist, else 403 ``error
    looking up service account NS/NAME: serviceaccount "NAME" not found``. A mirror pod
    is not defaulted and may name no account. Differences: `default` is not looked up
    (upstream retries it for a second or two, then refuses; kubera admits it, as its
    serviceaccount controller may not have made it yet and unit tests run without one);
    no token is mounted, and the account's imagePullSecrets are not copied."""
    kind = BY_KIND["Pod"]
    spec = pod.spec
    if MIRROR_POD_ANNOTATION in pod.metadata.annotations:
        if spec.service_account_name:
            raise _forbidden(
                kind, pod.metadata.name, "a mirror pod may not reference service accounts"
            )
        return
    if not spec.service_account_name:
        spec.service_account_name = DEFAULT_SERVICE_ACCOUNT
    spec.service_account = spec.service_account_name
    name, namespace = spec.service_account_name, pod.metadata.namespace
    if name == DEFAULT_SERVICE_ACCOUNT:
        return
    if await lookup.cached_or_none(BY_KIND["ServiceAccount"], namespace, name) is None:
        raise _forbidden(
            kind,
            pod.metadata.name,
            f'error looking up service account {namespace}/{name}: serviceaccount "{name}" not found',
        )


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


def copy_topology_labels(
    node: Message | None,
    labels: MutableMapping[str, str],
    gates: features.FeatureGates | None = None,
) -> None:
    """PodTopologyLabels: the node's TOPOLOGY_LABELS into `labels` (a pod's, at its
    binding or at a create that names its node), overwriting the pod's own values, as
    upstream's plugin and BindingREST do. A node that does not exist copies nothing;
    nothing happens with the PodTopologyLabelsAdmission gate off."""
    if node is None or not features.enabled(gates, features.POD_TOPOLOGY_LABELS_ADMISSION):
        return
    node_labels = narrow(node, core_pb2.Node).metadata.labels
    for key in TOPOLOGY_LABELS:
        value = node_labels.get(key)
        if value is not None:
            labels[key] = value


async def mutate(
    kind: Kind, obj: Message, lookup: Lookup, disabled: frozenset[str] = frozenset()
) -> None:
    """The mutating admission plugins, for a create; those named in `disabled` do not run."""
    check_hollow_kubelet_annotations(kind, obj)
    if kind.kind == "Pod":
        pod = narrow(obj, core_pb2.Pod)
        if "ServiceAccount" not in disabled:
            await _service_account(pod, lookup)
        if "Priority" not in disabled:
            await _priority(pod, kind, lookup, with_policy=True)
        if "RuntimeClass" not in disabled:
            await _runtime_class(pod, lookup)
        if "DefaultTolerationSeconds" not in disabled:
            _default_toleration_seconds(pod)
        if "PodTopologyLabels" not in disabled and pod.spec.node_name:
            node = await lookup.cached_or_none(BY_KIND["Node"], "", pod.spec.node_name)
            copy_topology_labels(node, pod.metadata.labels)
        pod.status.qos_class = qos_class(pod.spec)
    elif kind.name == SCHEDULING_POD_GROUP and "Priority" not in disabled:
        await _priority(obj, kind, lookup, with_policy=False)
    elif kind.kind == "PriorityClass":
        await check_single_global_default(kind, obj, lookup)
    elif kind.kind in ("ResourceClaim", "ResourceClaimTemplate"):
        await check_admin_access(kind, obj, lookup)
    elif kind.kind == "PersistentVolumeClaim":
        claim = narrow(obj, storage_pb2.PersistentVolumeClaim)
        await default_storage_class(claim, lookup)
        _add_finalizer(claim.metadata, PVC_PROTECTION_FINALIZER)
    elif kind.kind == "PersistentVolume":
        _add_finalizer(object_meta(obj), PV_PROTECTION_FINALIZER)


def _add_finalizer(meta: Any, finalizer: str) -> None:
    """StorageObjectInUseProtection: every new claim and volume carries its protection
    finalizer, removed by the pvc-protection / pv-protection controllers once unused."""
    if finalizer not in meta.finalizers:
        meta.finalizers.append(finalizer)


async def default_storage_class(claim: storage_pb2.PersistentVolumeClaim, lookup: Lookup) -> None:
    """DefaultStorageClass: a claim that names no class (neither spec.storageClassName,
    even "", nor the beta annotation) gets the default class: of those annotated
    is-default-class "true", the newest (then by name), as upstream's GetDefaultClass."""
    if (
        claim.spec.HasField("storage_class_name")
        or BETA_STORAGE_CLASS in claim.metadata.annotations
    ):
        return
    classes = await lookup.namespace_objects(BY_KIND["StorageClass"], "")
    defaults_ = [c for c in classes if is_default_class(c)]
    if defaults_:
        defaults_.sort(key=lambda c: object_meta(c).name)
        defaults_.sort(key=lambda c: object_meta(c).creation_timestamp, reverse=True)
        claim.spec.storage_class_name = object_meta(defaults_[0]).name


# -------------------------------------------------------- validating plugins


def check_hollow_kubelet_annotations(kind: Kind, obj: Message) -> None:
    """kubera's own pod annotations, which the hollow kubelet plays: ``kubera.io/usage``
    (a usage model) and ``kubera.io/stages`` (stage delays). One the kubelet cannot use
    (bad JSON, a quantity beyond int64 milli-units, a non-finite or int32-overflowing
    duration) is refused here, naming the annotation and the field inside it, rather than
    ignored by the kubelet with a log line. Checked on pods and on pod templates."""
    found = _pod_template(obj) if kind.kind != "Pod" else ("", obj)
    if found is None:
        return
    prefix, template = found
    path = prefix + "metadata.annotations"
    annotations: Mapping[str, str] = template.metadata.annotations  # type: ignore[attr-defined]
    errors: list[FieldError] = []
    text = annotations.get(USAGE_ANNOTATION)
    if text is not None:
        try:
            parse_usage(text)
        except UsageSpecError as e:
            errors.append(_annotation_error(path, USAGE_ANNOTATION, str(e)))
    if annotations.get(STAGES_ANNOTATION):
        try:
            stages = Stages().for_pod({STAGES_ANNOTATION: annotations[STAGES_ANNOTATION]})
        except TemplateError as e:
            errors.append(_annotation_error(path, STAGES_ANNOTATION, str(e)))
        else:
            spec = template.spec  # type: ignore[attr-defined]
            names = {c.name for c in (*spec.init_containers, *spec.containers)}
            for name, _ in stages.containers:
                if name not in names:
                    errors.append(
                        _annotation_error(
                            path,
                            STAGES_ANNOTATION,
                            f"containers.{name}: the pod has no container or init container "
                            f"named {name!r}",
                        )
                    )
    if errors:
        raise InvalidError(kind.kind, object_meta(obj).name, errors)


#: Where the pod template sits in the kinds that carry one (Deployment, ReplicaSet, Job,
#: DaemonSet, StatefulSet: spec.template; CronJob: spec.jobTemplate.spec.template).
_TEMPLATE_PATHS = (("spec", "template"), ("spec", "jobTemplate", "spec", "template"))
_PROTO_NAMES = {"jobTemplate": "job_template"}


def _pod_template(obj: Message) -> tuple[str, Message] | None:
    """The pod template inside `obj` and its path ("spec.template."), if its kind has one."""
    for fields in _TEMPLATE_PATHS:
        node: Any = obj
        for f in fields:
            name = _PROTO_NAMES.get(f, f)
            descriptor = getattr(node, "DESCRIPTOR", None)
            if descriptor is None or name not in descriptor.fields_by_name:
                node = None
                break
            node = getattr(node, name)
        if node is not None and "metadata" in node.DESCRIPTOR.fields_by_name:
            return ".".join(fields) + ".", node
    return None


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
