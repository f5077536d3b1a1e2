"""The table of kinds kubera serves: one row per kind.

Adding a kind is local: a message in protos/kubera/v1/, one `Kind` row here, and a
validation function in services/api/validation/. Everything else (storage keys, the
codec, the CLI's names and short names, field selectors) reads this table.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from google.protobuf.message import Message

from protos.kubera.v1 import (
    apps_pb2,
    batch_pb2,
    coordination_pb2,
    core_pb2,
    discovery_pb2,
    node_pb2,
    podgroup_pb2,
    policy_pb2,
    policyv1core_pb2,
    resource_pb2,
    scheduling_pb2,
    schedulingv1alpha1_pb2,
    schedulingv1beta1_pb2,
    service_pb2,
    storage_pb2,
    storagev1_pb2,
)
from services.api.machinery.kubeobject import narrow, object_meta
from services.storage.keys import resource_prefix

#: The kubera name (Kind.ident) of upstream's scheduling.k8s.io PodGroup; "PodGroup" stays
#: the scheduler-plugins one (scheduling.x-k8s.io) that kubera served first.
SCHEDULING_POD_GROUP = "PodGroup.scheduling.k8s.io"

#: Older versions a manifest may name for a kind served at one version only, with the same
#: fields (upstream's scheduler_perf templates mix v1alpha3 and v1beta1 PodGroups).
VERSION_ALIASES: dict[tuple[str, str], str] = {
    ("scheduling.k8s.io/v1alpha3", "PodGroup"): SCHEDULING_POD_GROUP,
}


def _meta_fields(obj: Message) -> dict[str, str]:
    return {
        "metadata.name": object_meta(obj).name,
        "metadata.namespace": object_meta(obj).namespace,
    }


def _pod_fields(obj: Message) -> dict[str, str]:
    pod = narrow(obj, core_pb2.Pod)
    return {
        **_meta_fields(pod),
        "spec.nodeName": pod.spec.node_name,
        "spec.schedulerName": pod.spec.scheduler_name,
        "status.phase": pod.status.phase,
        "status.nominatedNodeName": pod.status.nominated_node_name,
        "spec.restartPolicy": pod.spec.restart_policy,
    }


def _node_fields(obj: Message) -> dict[str, str]:
    node = narrow(obj, core_pb2.Node)
    return {
        **_meta_fields(node),
        "spec.unschedulable": "true" if node.spec.unschedulable else "false",
    }


def _event_fields(obj: Message) -> dict[str, str]:
    ev = narrow(obj, core_pb2.Event)
    io = ev.involved_object
    return {
        **_meta_fields(ev),
        "involvedObject.kind": io.kind,
        "involvedObject.name": io.name,
        "involvedObject.namespace": io.namespace,
        "involvedObject.uid": io.uid,
        "reason": ev.reason,
        "type": ev.type,
    }


def _resource_slice_fields(obj: Message) -> dict[str, str]:
    rs = narrow(obj, resource_pb2.ResourceSlice)
    return {
        **_meta_fields(rs),
        "spec.nodeName": rs.spec.node_name,
        "spec.driver": rs.spec.driver,
    }


def _secret_fields(obj: Message) -> dict[str, str]:
    return {**_meta_fields(obj), "type": narrow(obj, service_pb2.Secret).type}


@dataclass(frozen=True)
class Kind:
    kind: str
    group: str
    version: str
    resource: str
    message: type[Message]
    namespaced: bool
    short_names: tuple[str, ...] = ()
    #: Whether spec and status are separate (status only changes through UpdateStatus).
    has_status: bool = False
    #: Fields a field selector may name, read off an object.
    fields: Callable[[Message], Mapping[str, str]] = field(default=_meta_fields)
    #: The resource's name on the HTTP API and for kubectl, when two groups serve the same
    #: plural (upstream's scheduling.k8s.io PodGroup and scheduler-plugins' one): then
    #: `resource` is kubera's own unique name for it (gRPC, storage keys, caches).
    plural: str = ""
    #: kubera's own unique name for the kind (BY_KIND, informers, cluster events) when two
    #: groups serve the same Kind name; `kind` stays the name objects carry.
    ident: str = ""

    @property
    def http_resource(self) -> str:
        """The plural in URLs, discovery and kubectl (see `plural`)."""
        return self.plural or self.resource

    @property
    def name(self) -> str:
        """kubera's unique name for the kind (see `ident`)."""
        return self.ident or self.kind

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def type_url(self) -> str:
        return "type.googleapis.com/" + self.message.DESCRIPTOR.full_name

    def key(self, namespace: str, name: str) -> str:
        """etcd key: /registry/<resource>/<namespace>/<name> (no namespace segment when cluster-scoped)."""
        if self.namespaced:
            return f"{resource_prefix(self.resource)}{namespace}/{name}"
        return f"{resource_prefix(self.resource)}{name}"

    def prefix(self, namespace: str = "") -> str:
        if self.namespaced and namespace:
            return f"{resource_prefix(self.resource)}{namespace}/"
        return resource_prefix(self.resource)

    def new(self) -> Message:
        obj = self.message()
        obj.api_version = self.api_version  # type: ignore[attr-defined]
        obj.kind = self.kind  # type: ignore[attr-defined]
        return obj


KINDS: tuple[Kind, ...] = (
    Kind("Namespace", "", "v1", "namespaces", core_pb2.Namespace, False, ("ns",), has_status=True),
    Kind(
        "Node",
        "",
        "v1",
        "nodes",
        core_pb2.Node,
        False,
        ("no",),
        has_status=True,
        fields=_node_fields,
    ),
    Kind("Pod", "", "v1", "pods", core_pb2.Pod, True, ("po",), has_status=True, fields=_pod_fields),
    Kind("Event", "", "v1", "events", core_pb2.Event, True, ("ev",), fields=_event_fields),
    Kind(
        "PriorityClass",
        "scheduling.k8s.io",
        "v1",
        "priorityclasses",
        scheduling_pb2.PriorityClass,
        False,
        ("pc",),
    ),
    Kind(
        "Workload",
        "scheduling.k8s.io",
        "v1alpha1",
        "workloads",
        schedulingv1alpha1_pb2.Workload,
        True,
    ),
    Kind(
        "PodDisruptionBudget",
        "policy",
        "v1",
        "poddisruptionbudgets",
        policy_pb2.PodDisruptionBudget,
        True,
        ("pdb",),
        has_status=True,
    ),
    Kind(
        "ReplicaSet",
        "apps",
        "v1",
        "replicasets",
        apps_pb2.ReplicaSet,
        True,
        ("rs",),
        has_status=True,
    ),
    Kind(
        "Deployment",
        "apps",
        "v1",
        "deployments",
        apps_pb2.Deployment,
        True,
        ("deploy",),
        has_status=True,
    ),
    Kind("Job", "batch", "v1", "jobs", batch_pb2.Job, True, has_status=True),
    Kind("CronJob", "batch", "v1", "cronjobs", batch_pb2.CronJob, True, ("cj",), has_status=True),
    Kind("RuntimeClass", "node.k8s.io", "v1", "runtimeclasses", node_pb2.RuntimeClass, False),
    Kind("Lease", "coordination.k8s.io", "v1", "leases", coordination_pb2.Lease, True),
    Kind("DeviceClass", "resource.k8s.io", "v1", "deviceclasses", resource_pb2.DeviceClass, False),
    Kind(
        "ResourceSlice",
        "resource.k8s.io",
        "v1",
        "resourceslices",
        resource_pb2.ResourceSlice,
        False,
        fields=_resource_slice_fields,
    ),
    Kind(
        "ResourceClaim",
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        resource_pb2.ResourceClaim,
        True,
        has_status=True,
    ),
    Kind(
        "ResourceClaimTemplate",
        "resource.k8s.io",
        "v1",
        "resourceclaimtemplates",
        resource_pb2.ResourceClaimTemplate,
        True,
    ),
    Kind(
        "DeviceTaintRule",
        "resource.k8s.io",
        "v1",
        "devicetaintrules",
        resource_pb2.DeviceTaintRule,
        False,
        has_status=True,
    ),
    Kind(
        "PodGroup",
        "scheduling.x-k8s.io",
        "v1alpha1",
        "podgroups",
        podgroup_pb2.PodGroup,
        True,
        ("pg", "pgs"),
        has_status=True,
    ),
    Kind(
        "PodGroup",
        "scheduling.k8s.io",
        "v1beta1",
        "podgroups.scheduling.k8s.io",
        schedulingv1beta1_pb2.SchedulingPodGroup,
        True,
        has_status=True,
        plural="podgroups",
        ident=SCHEDULING_POD_GROUP,
    ),
    Kind(
        "ResourceQuota",
        "",
        "v1",
        "resourcequotas",
        policyv1core_pb2.ResourceQuota,
        True,
        ("quota",),
        has_status=True,
    ),
    Kind("LimitRange", "", "v1", "limitranges", policyv1core_pb2.LimitRange, True, ("limits",)),
    Kind(
        "DaemonSet",
        "apps",
        "v1",
        "daemonsets",
        apps_pb2.DaemonSet,
        True,
        ("ds",),
        has_status=True,
    ),
    Kind(
        "StatefulSet",
        "apps",
        "v1",
        "statefulsets",
        apps_pb2.StatefulSet,
        True,
        ("sts",),
        has_status=True,
    ),
    Kind(
        "ControllerRevision",
        "apps",
        "v1",
        "controllerrevisions",
        apps_pb2.ControllerRevision,
        True,
    ),
    Kind(
        "PersistentVolumeClaim",
        "",
        "v1",
        "persistentvolumeclaims",
        storage_pb2.PersistentVolumeClaim,
        True,
        ("pvc",),
        has_status=True,
    ),
    Kind(
        "PersistentVolume",
        "",
        "v1",
        "persistentvolumes",
        storage_pb2.PersistentVolume,
        False,
        ("pv",),
        has_status=True,
    ),
    Kind(
        "StorageClass",
        "storage.k8s.io",
        "v1",
        "storageclasses",
        storagev1_pb2.StorageClass,
        False,
        ("sc",),
    ),
    Kind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", storagev1_pb2.CSIDriver, False),
    Kind("CSINode", "storage.k8s.io", "v1", "csinodes", storagev1_pb2.CSINode, False),
    Kind(
        "CSIStorageCapacity",
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        storagev1_pb2.CSIStorageCapacity,
        True,
    ),
    Kind(
        "VolumeAttachment",
        "storage.k8s.io",
        "v1",
        "volumeattachments",
        storagev1_pb2.VolumeAttachment,
        False,
        has_status=True,
    ),
    Kind(
        "Service",
        "",
        "v1",
        "services",
        service_pb2.Service,
        True,
        ("svc",),
        has_status=True,
    ),
    Kind(
        "EndpointSlice",
        "discovery.k8s.io",
        "v1",
        "endpointslices",
        discovery_pb2.EndpointSlice,
        True,
    ),
    Kind("Endpoints", "", "v1", "endpoints", service_pb2.Endpoints, True, ("ep",)),
    Kind("ConfigMap", "", "v1", "configmaps", service_pb2.ConfigMap, True, ("cm",)),
    Kind("Secret", "", "v1", "secrets", service_pb2.Secret, True, fields=_secret_fields),
    Kind("ServiceAccount", "", "v1", "serviceaccounts", service_pb2.ServiceAccount, True, ("sa",)),
)

BY_RESOURCE: dict[str, Kind] = {k.resource: k for k in KINDS}
BY_KIND: dict[str, Kind] = {k.name: k for k in KINDS}
BY_TYPE_URL: dict[str, Kind] = {k.type_url: k for k in KINDS}
_NAMES: dict[str, Kind] = {}
for _k in KINDS:
    for _n in (_k.http_resource, _k.singular, _k.kind.lower(), *_k.short_names):
        # A bare name two groups share names the kind served first (kubectl's preference
        # order picks one too); resource.group names either.
        _NAMES.setdefault(_n, _k)
        _NAMES[f"{_n}.{_k.group}" if _k.group else _n] = _k
    _NAMES.setdefault(_k.resource, _k)


class UnknownKindError(LookupError):
    pass


def lookup(name: str) -> Kind:
    """A kind by kubectl's names: plural, singular, short name, Kind, or resource.group."""
    kind = _NAMES.get(name) or _NAMES.get(name.lower())
    if kind is None:
        raise UnknownKindError(f'the server doesn\'t have a resource type "{name}"')
    return kind


def for_manifest(api_version: str, kind_name: str) -> Kind:
    """The kind a manifest's apiVersion/kind names (a Kind name may be served by two
    groups; an old version may alias the served one); kubectl's error when none matches."""
    alias = VERSION_ALIASES.get((api_version, kind_name))
    if alias is not None:
        return BY_KIND[alias]
    for kind in KINDS:
        if kind.kind == kind_name and kind.api_version == api_version:
            return kind
    raise UnknownKindError(f'no matches for kind "{kind_name}" in version "{api_version}"')


def kind_of(obj: Message) -> Kind:
    for k in KINDS:
        if isinstance(obj, k.message):
            return k
    raise UnknownKindError(f"not a kubera kind: {type(obj).__name__}")
