"""The conditional part of upstream's ``SetDefaults_*``, as small functions keyed by schema.

Ported from pkg/apis/core/v1/defaults.go (SetDefaults_Pod, SetDefaults_Container's
imagePullPolicy, SetDefaults_Service, SetDefaults_Volume, SetDefaults_Namespace,
SetDefaults_NodeStatus, SetDefaults_LimitRangeItem, SetDefaults_PersistentVolume and
SetDefaults_PersistentVolumeClaim), pkg/apis/apps/v1/defaults.go (the rolling-update
strategies of Deployment, DaemonSet and StatefulSet, the StatefulSet's claim retention
policy), pkg/apis/batch/v1/defaults.go (SetDefaults_Job) and pkg/apis/resource/v1/defaults.go
(a device request's allocationMode ExactCount and count 1). Each function takes the message of its schema
and reads and writes fields by JSON name (``fields.py``), so the functions for kinds kubera
gains later (Service, DaemonSet, StatefulSet, Job) apply as soon as those messages exist.
What kubera keeps as free-form JSON (probes, lifecycle handlers, volumes, env valueFrom) gets
upstream's defaults in the JSON itself, from the rows of ``tables.SET_DEFAULTS``.

Differences from upstream: pod-level resources (PodLevelResources) and image volumes are not
modelled, so their defaults are not applied; a DeviceTaint's timeAdded (upstream: the time of
decoding) is stamped by the apiserver's create and update (services/api/dra/taints.py), as
defaulting here takes no clock; SetDefaults_ResourceList's
rounding up to milli-units is the codec's quantity canonicalization, not repeated here; an image reference is split on its last "/",
":" and "@" rather than parsed by the docker reference grammar (the invalid references it
recognizes are the empty one and upper-case repository names; another invalid one, which
upstream's validation refuses anyway, gets IfNotPresent from upstream and may get Always here).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.defaults.fields import (
    clear,
    default_field,
    default_key,
    get,
    is_set,
    set_value,
)
from services.api.defaults.tables import APPS, BATCH, CORE, RESOURCE, SET_DEFAULTS, STORAGE
from services.api.machinery.kubeobject import narrow

#: DefaultClientIPServiceAffinitySeconds (three hours).
CLIENT_IP_AFFINITY_SECONDS = 10800
MAX_INT32 = 2**31 - 1
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


def image_pull_policy(image: str) -> str:
    """SetDefaults_Container: Always for the tag "latest" (which a reference without tag or
    digest has), IfNotPresent otherwise, and for a reference upstream cannot parse (empty,
    or with upper-case letters in its repository: upstream ignores the parse error and
    finds no tag)."""
    name, _, digest = image.partition("@")
    repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    if not repository or repository.rsplit("/", 1)[-1] != repository.rsplit("/", 1)[-1].lower():
        return "IfNotPresent"
    last = name.rsplit("/", 1)[-1]
    tag = last.rpartition(":")[2] if ":" in last else ""
    if not tag and not digest:
        tag = "latest"
    return "Always" if tag == "latest" else "IfNotPresent"


# ------------------------------------------------------------- free-form JSON


def _row(d: dict[str, Any], schema: str, *, zero_unset: bool = False) -> None:
    for name, value in SET_DEFAULTS[f"{CORE}.{schema}"].items():
        default_key(d, name, value, zero_unset=zero_unset)


def _handler(h: Any) -> None:
    """A probe's or lifecycle hook's handler: SetDefaults_HTTPGetAction."""
    if isinstance(h, dict) and isinstance(h.get("httpGet"), dict):
        _row(h["httpGet"], "HTTPGetAction")


def _probe(p: Any) -> None:
    if isinstance(p, dict):
        _row(p, "Probe", zero_unset=True)  # int32 values upstream: 0 is unset
        _handler(p)


def _field_ref(holder: Any) -> None:
    if isinstance(holder, dict) and isinstance(holder.get("fieldRef"), dict):
        _row(holder["fieldRef"], "ObjectFieldSelector")


def _volume(v: dict[str, Any]) -> None:
    """SetDefaults_Volume (a volume without a source is an emptyDir) and the sources' own."""
    if not any(k != "name" for k in v):
        v["emptyDir"] = {}
    for key, schema in (
        ("secret", "SecretVolumeSource"),
        ("configMap", "ConfigMapVolumeSource"),
        ("downwardAPI", "DownwardAPIVolumeSource"),
        ("projected", "ProjectedVolumeSource"),
        ("hostPath", "HostPathVolumeSource"),
        ("azureDisk", "AzureDiskVolumeSource"),
        ("iscsi", "ISCSIVolumeSource"),
        ("rbd", "RBDVolumeSource"),
        ("scaleIO", "ScaleIOVolumeSource"),
    ):
        if isinstance(v.get(key), dict):
            _row(v[key], schema)
    for item in _items(v, "downwardAPI", "items"):
        _field_ref(item)
    for source in _items(v, "projected", "sources"):
        if not isinstance(source, dict):
            continue
        if isinstance(source.get("serviceAccountToken"), dict):
            _row(source["serviceAccountToken"], "ServiceAccountTokenProjection")
        for item in _items(source, "downwardAPI", "items"):
            _field_ref(item)


def _items(d: dict[str, Any], key: str, items: str) -> list[Any]:
    """d[key][items] when it is a list (free-form JSON may hold anything: validation, not
    defaulting, refuses what is malformed)."""
    inner = d.get(key)
    found = inner.get(items) if isinstance(inner, dict) else None
    return found if isinstance(found, list) else []


# ------------------------------------------------------------------- core/v1


def default_pod(obj: Message) -> None:
    """SetDefaults_Pod: a limit without a request makes the request (pods only, not
    templates), enableServiceLinks true, and with hostNetwork each port's hostPort. (The Pod,
    PodSpec and Container defaulters read kubera's own messages directly: they run on every
    pod created, and reading fields by JSON name costs five times as much.)"""
    spec = narrow(obj, core_pb2.Pod).spec
    containers = (*spec.containers, *spec.init_containers)
    for c in containers:
        requests = c.resources.requests
        for key, qty in c.resources.limits.items():
            if key not in requests:
                requests[key] = qty
    if not spec.HasField("enable_service_links"):
        spec.enable_service_links = True
    if spec.host_network:
        for c in containers:
            for p in c.ports:
                if not p.host_port:
                    p.host_port = p.container_port


def default_pod_spec(obj: Message) -> None:
    """SetDefaults_PodSpec's free-form part: the volumes' defaults."""
    for v in narrow(obj, core_pb2.PodSpec).volumes:
        d = json_format.MessageToDict(v)
        _volume(d)
        v.Clear()
        v.update(d)


def _edit(s: Message, edit: Callable[[dict[str, Any]], None]) -> None:
    d = json_format.MessageToDict(s)
    edit(d)
    s.Clear()
    s.update(d)


def _lifecycle(d: dict[str, Any]) -> None:
    for hook in ("postStart", "preStop"):
        _handler(d.get(hook))


def default_container(obj: Message) -> None:
    """SetDefaults_Container's imagePullPolicy, and the defaults inside its free-form parts
    (probes, lifecycle handlers, env valueFrom.fieldRef); an empty `resources` is none."""
    c = narrow(obj, core_pb2.Container)
    if not c.image_pull_policy:
        c.image_pull_policy = image_pull_policy(c.image)
    if c.HasField("resources") and not c.resources.ByteSize():
        # a Go struct, not a pointer: `resources: {}` is no resources, and a template must
        # hash and compare the same either way (kubectl rollout undo sends it)
        c.ClearField("resources")
    if c.HasField("liveness_probe"):
        _edit(c.liveness_probe, _probe)
    if c.HasField("readiness_probe"):
        _edit(c.readiness_probe, _probe)
    if c.HasField("startup_probe"):
        _edit(c.startup_probe, _probe)
    if c.HasField("lifecycle"):
        _edit(c.lifecycle, _lifecycle)
    for env in c.env:
        if env.HasField("value_from"):
            _edit(env.value_from, _field_ref)


def default_service(svc: Message) -> None:
    """SetDefaults_Service."""
    spec = get(svc, "spec")
    if spec is None:
        return
    default_field(spec, "sessionAffinity", "None")
    affinity = get(spec, "sessionAffinity")
    if affinity == "None" and is_set(spec, "sessionAffinityConfig"):
        clear(spec, "sessionAffinityConfig")
    elif affinity == "ClientIP" and get(spec, "sessionAffinityConfig") is not None:
        config = json_format.MessageToDict(get(spec, "sessionAffinityConfig"))
        if (config.get("clientIP") or {}).get("timeoutSeconds") is None:
            timeout = {"clientIP": {"timeoutSeconds": CLIENT_IP_AFFINITY_SECONDS}}
            set_value(spec, "sessionAffinityConfig", timeout)
    default_field(spec, "type", "ClusterIP")
    kind = get(spec, "type")
    for p in get(spec, "ports") or ():
        default_field(p, "protocol", "TCP")
        if get(p, "targetPort") in (None, "", "0", 0):
            set_value(p, "targetPort", get(p, "port"))
    externally_accessible = kind in ("NodePort", "LoadBalancer") or bool(get(spec, "externalIPs"))
    if externally_accessible:
        default_field(spec, "externalTrafficPolicy", "Cluster")
    if kind in ("NodePort", "LoadBalancer", "ClusterIP"):
        default_field(spec, "internalTrafficPolicy", "Cluster")
    if kind == "LoadBalancer":
        default_field(spec, "allocateLoadBalancerNodePorts", True)
        status = get(svc, "status")
        lb = get(status, "loadBalancer") if status is not None else None
        for ing in (get(lb, "ingress") or ()) if lb is not None else ():
            if get(ing, "ip") and not is_set(ing, "ipMode"):
                set_value(ing, "ipMode", "VIP")


def default_namespace(ns: Message) -> None:
    """SetDefaults_Namespace: the kubernetes.io/metadata.name label, once the name is known."""
    meta = get(ns, "metadata")
    if meta is not None and get(meta, "name"):
        get(meta, "labels")[NAMESPACE_NAME_LABEL] = get(meta, "name")


def default_node_status(status: Message) -> None:
    """SetDefaults_NodeStatus: allocatable is the capacity when only capacity is given."""
    capacity, allocatable = get(status, "capacity"), get(status, "allocatable")
    if capacity and allocatable is not None and not allocatable:
        allocatable.update(capacity)


def default_limit_range_item(item: Message) -> None:
    """SetDefaults_LimitRangeItem: for a Container item, a missing default limit is the max,
    a missing default request is the default limit, else the min."""
    if get(item, "type") != "Container":
        return
    default, request = get(item, "default"), get(item, "defaultRequest")
    if default is None or request is None:
        return
    for key, qty in (get(item, "max") or {}).items():
        if key not in default:
            default[key] = qty
    for key, qty in default.items():
        if key not in request:
            request[key] = qty
    for key, qty in (get(item, "min") or {}).items():
        if key not in request:
            request[key] = qty


def default_persistent_volume(pv: Message) -> None:
    """SetDefaults_PersistentVolume: phase Pending, reclaim policy Retain, Filesystem mode."""
    status, spec = get(pv, "status"), get(pv, "spec")
    if status is not None:
        default_field(status, "phase", "Pending")
    if spec is not None:
        default_field(spec, "persistentVolumeReclaimPolicy", "Retain")
        default_field(spec, "volumeMode", "Filesystem")


def default_persistent_volume_claim(pvc: Message) -> None:
    """SetDefaults_PersistentVolumeClaim: phase Pending (its spec's volumeMode is a row)."""
    status = get(pvc, "status")
    if status is not None:
        default_field(status, "phase", "Pending")


def default_csi_driver(driver: Message) -> None:
    """SetDefaults_CSIDriver's list: volumeLifecycleModes [Persistent] when empty."""
    spec = get(driver, "spec")
    if spec is not None and not is_set(spec, "volumeLifecycleModes"):
        spec.volume_lifecycle_modes.append("Persistent")  # type: ignore[attr-defined]


# -------------------------------------------------------------- resource/v1


def default_device_request(req: Message) -> None:
    """SetDefaults_ExactDeviceRequest and SetDefaults_DeviceSubRequest: ExactCount, of 1."""
    default_field(req, "allocationMode", "ExactCount")
    if get(req, "allocationMode") == "ExactCount" and not get(req, "count"):
        set_value(req, "count", 1)


def default_device_toleration(t: Message) -> None:
    """SetDefaults_DeviceToleration (drataints): operator Equal."""
    default_field(t, "operator", "Equal")


# ------------------------------------------------------------------- apps/v1


def default_deployment_spec(spec: Message) -> None:
    """The strategy is a value upstream (always there), so its defaults always apply."""
    if get(spec, "strategy") is not None:
        get(spec, "strategy").SetInParent()


def default_deployment_strategy(st: Message) -> None:
    """SetDefaults_Deployment: a RollingUpdate strategy's maxUnavailable and maxSurge 25%."""
    if get(st, "type") != "RollingUpdate" or get(st, "rollingUpdate") is None:
        return
    ru = get(st, "rollingUpdate")
    ru.SetInParent()
    default_field(ru, "maxUnavailable", "25%")
    default_field(ru, "maxSurge", "25%")


def default_daemon_set_spec(spec: Message) -> None:
    if get(spec, "updateStrategy") is not None:
        get(spec, "updateStrategy").SetInParent()


def default_daemon_set_update_strategy(st: Message) -> None:
    """SetDefaults_DaemonSet: a RollingUpdate strategy's maxUnavailable 1 and maxSurge 0."""
    if get(st, "type") != "RollingUpdate" or get(st, "rollingUpdate") is None:
        return
    ru = get(st, "rollingUpdate")
    ru.SetInParent()
    default_field(ru, "maxUnavailable", 1)
    default_field(ru, "maxSurge", 0)


def default_stateful_set_spec(spec: Message) -> None:
    """SetDefaults_StatefulSet: RollingUpdate with partition 0 when no strategy is given (a
    RollingUpdate given without rollingUpdate keeps none), and the claim retention policy
    (Retain, Retain: its row) always."""
    st = get(spec, "updateStrategy")
    if st is not None:
        st.SetInParent()
        if not get(st, "type"):
            set_value(st, "type", "RollingUpdate")
            if get(st, "rollingUpdate") is not None:
                get(st, "rollingUpdate").SetInParent()
        ru = get(st, "rollingUpdate")
        if get(st, "type") == "RollingUpdate" and is_set(st, "rollingUpdate"):
            default_field(ru, "partition", 0)
    policy = get(spec, "persistentVolumeClaimRetentionPolicy")
    if policy is not None:
        policy.SetInParent()


# ------------------------------------------------------------------ batch/v1


def default_job(job: Message) -> None:
    """SetDefaults_Job: completions and parallelism 1 when both are unset (parallelism 1 when
    it alone is), backoffLimit 6 (MaxInt32 with backoffLimitPerIndex), the template's labels
    on a Job without labels, podReplacementPolicy Failed with a podFailurePolicy and
    TerminatingOrFailed without."""
    spec = get(job, "spec")
    if spec is None:
        return
    if not is_set(spec, "completions") and not is_set(spec, "parallelism"):
        set_value(spec, "completions", 1)
        set_value(spec, "parallelism", 1)
    default_field(spec, "parallelism", 1)
    if not is_set(spec, "backoffLimit"):
        per_index = is_set(spec, "backoffLimitPerIndex")
        set_value(spec, "backoffLimit", MAX_INT32 if per_index else 6)
    template = get(spec, "template")
    meta = get(job, "metadata")
    if template is not None and meta is not None:
        labels = get(get(template, "metadata"), "labels")
        if labels and not get(meta, "labels"):
            get(meta, "labels").update(labels)
    if not is_set(spec, "podReplacementPolicy"):
        failed = is_set(spec, "podFailurePolicy")
        set_value(spec, "podReplacementPolicy", "Failed" if failed else "TerminatingOrFailed")


#: schema -> its conditional defaulter, run after the schema's static rows and before the
#: message's children are defaulted (upstream's generated SetObjectDefaults_* order).
FUNCS: dict[str, Callable[[Message], None]] = {
    f"{CORE}.Pod": default_pod,
    f"{CORE}.PodSpec": default_pod_spec,
    f"{CORE}.Container": default_container,
    f"{CORE}.Service": default_service,
    f"{CORE}.Namespace": default_namespace,
    f"{CORE}.NodeStatus": default_node_status,
    f"{CORE}.LimitRangeItem": default_limit_range_item,
    f"{CORE}.PersistentVolume": default_persistent_volume,
    f"{CORE}.PersistentVolumeClaim": default_persistent_volume_claim,
    f"{STORAGE}.CSIDriver": default_csi_driver,
    f"{RESOURCE}.ExactDeviceRequest": default_device_request,
    f"{RESOURCE}.DeviceSubRequest": default_device_request,
    f"{RESOURCE}.DeviceToleration": default_device_toleration,
    f"{APPS}.DeploymentSpec": default_deployment_spec,
    f"{APPS}.DeploymentStrategy": default_deployment_strategy,
    f"{APPS}.DaemonSetSpec": default_daemon_set_spec,
    f"{APPS}.DaemonSetUpdateStrategy": default_daemon_set_update_strategy,
    f"{APPS}.StatefulSetSpec": default_stateful_set_spec,
    f"{BATCH}.Job": default_job,
}
