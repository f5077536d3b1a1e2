"""Object builders for tests, after upstream's pkg/scheduler/testing/wrappers.go:

    MakePod().name("p").namespace("ns").container("c", requests={"cpu": "1"}).priority(10).obj()
    MakeNode().name("n1").label("zone", "a").allocatable({"cpu": "4"}).obj()

Each method sets exactly what it names on the protobuf and returns the builder; `obj()`
returns the message. Nothing is defaulted: a builder with no calls gives an empty message
(no namespace, uid, timestamps or apiVersion/kind unless asked for with `typed()`). As with
`json_format.ParseDict` of a Kubernetes-shaped dict, calling a setter makes its section
(metadata, spec, status, a container's resources) present even when the value is empty, so
`MakePod().node("")` has an (empty) spec and `MakePod()` has none.

Methods taking `Json` take the Kubernetes (camelCase) shape of that field and parse it with
`json_format`; a list replaces the field's items, as ParseDict does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import (
    core_pb2,
    podgroup_pb2,
    policyv1core_pb2,
    resource_pb2,
    schedulingv1alpha1_pb2,
    schedulingv1beta1_pb2,
    service_pb2,
    storage_pb2,
    storagev1_pb2,
)

Json = dict[str, Any]

PAUSE_IMAGE = "registry.k8s.io/pause:3.9"


class MakePod:
    """A core_pb2.Pod, one field per call."""

    def __init__(self) -> None:
        self._pod = core_pb2.Pod()

    def obj(self) -> core_pb2.Pod:
        return self._pod

    def typed(self) -> MakePod:
        """apiVersion v1, kind Pod: what decoding a manifest sets."""
        self._pod.api_version, self._pod.kind = "v1", "Pod"
        return self

    # ------------------------------------------------------------------ metadata

    def name(self, name: str) -> MakePod:
        self._pod.metadata.name = name
        return self

    def namespace(self, namespace: str) -> MakePod:
        self._pod.metadata.namespace = namespace
        return self

    def uid(self, uid: str) -> MakePod:
        self._pod.metadata.uid = uid
        return self

    def labels(self, labels: Mapping[str, str]) -> MakePod:
        self._pod.metadata.SetInParent()
        self._pod.metadata.labels.update(labels)
        return self

    def label(self, key: str, value: str) -> MakePod:
        self._pod.metadata.labels[key] = value
        return self

    def annotations(self, annotations: Mapping[str, str]) -> MakePod:
        self._pod.metadata.SetInParent()
        self._pod.metadata.annotations.update(annotations)
        return self

    def annotation(self, key: str, value: str) -> MakePod:
        self._pod.metadata.annotations[key] = value
        return self

    def creation_timestamp(self, ts: str) -> MakePod:
        self._pod.metadata.creation_timestamp = ts
        return self

    def deletion_timestamp(self, ts: str) -> MakePod:
        self._pod.metadata.deletion_timestamp = ts
        return self

    def finalizers(self, finalizers: Iterable[str]) -> MakePod:
        self._pod.metadata.SetInParent()
        self._pod.metadata.finalizers.extend(finalizers)
        return self

    def owner_references(self, refs: Sequence[Json]) -> MakePod:
        return self.meta({"ownerReferences": list(refs)})

    def meta(self, doc: Json) -> MakePod:
        """Merge a Kubernetes-shaped metadata dict."""
        self._pod.metadata.SetInParent()
        json_format.ParseDict(doc, self._pod.metadata)
        return self

    # ------------------------------------------------------------------ spec

    def node(self, node_name: str) -> MakePod:
        """spec.nodeName (the pod is bound to it)."""
        self._pod.spec.node_name = node_name
        return self

    def scheduler_name(self, name: str) -> MakePod:
        self._pod.spec.scheduler_name = name
        return self

    def priority(self, priority: int) -> MakePod:
        self._pod.spec.priority = priority
        return self

    def workload_ref(self, name: str, pod_group: str, replica_key: str = "") -> MakePod:
        """spec.workloadRef: the Workload pod group (and replica) the pod belongs to."""
        ref = self._pod.spec.workload_ref
        ref.name, ref.pod_group, ref.pod_group_replica_key = name, pod_group, replica_key
        return self

    def pod_group_name(self, name: str) -> MakePod:
        """spec.schedulingGroup.podGroupName: the PodGroup (v1beta1) the pod belongs to."""
        self._pod.spec.scheduling_group.pod_group_name = name
        return self

    def scheduling_gates(self, gates: Iterable[str]) -> MakePod:
        self._pod.spec.SetInParent()
        for g in gates:
            self._pod.spec.scheduling_gates.add(name=g)
        return self

    def container(
        self,
        name: str = "c",
        image: str = "",
        *,
        requests: Mapping[str, str] | None = None,
        limits: Mapping[str, str] | None = None,
        ports: Sequence[Json] | None = None,
    ) -> MakePod:
        """Append a container; `requests`/`limits` given (even empty) make its resources present."""
        self._pod.spec.containers.append(_container(name, image, requests, limits, ports))
        return self

    def req(self, requests: Mapping[str, str]) -> MakePod:
        """Append a container c<i> (i: the containers before it) requesting `requests`, as
        upstream's MakePod().Req(...)."""
        return self.container(f"c{len(self._pod.spec.containers)}", requests=requests)

    def init_container(
        self,
        name: str,
        image: str = "",
        *,
        requests: Mapping[str, str] | None = None,
        ports: Sequence[Json] | None = None,
        restart_policy: str = "",
    ) -> MakePod:
        """Append an init container; restart_policy="Always" makes it a sidecar."""
        c = _container(name, image, requests, None, ports)
        c.restart_policy = restart_policy
        self._pod.spec.init_containers.append(c)
        return self

    def tolerations(self, tolerations: Sequence[Json]) -> MakePod:
        return self.spec({"tolerations": list(tolerations)})

    def node_selector(self, selector: Mapping[str, str]) -> MakePod:
        self._pod.spec.SetInParent()
        self._pod.spec.node_selector.update(selector)
        return self

    def affinity(self, affinity: Json) -> MakePod:
        """spec.affinity in its Kubernetes shape ({"nodeAffinity": ...}, {"podAntiAffinity": ...})."""
        return self.spec({"affinity": affinity})

    def topology_spread_constraints(self, constraints: Sequence[Json]) -> MakePod:
        return self.spec({"topologySpreadConstraints": list(constraints)})

    def overhead(self, overhead: Mapping[str, str]) -> MakePod:
        self._pod.spec.SetInParent()
        self._pod.spec.overhead.update(overhead)
        return self

    def resource_claim(
        self, name: str, *, claim: str | None = None, template: str | None = None
    ) -> MakePod:
        """Append a spec.resourceClaims entry naming an existing claim or a template."""
        self._pod.spec.SetInParent()
        entry = self._pod.spec.resource_claims.add(name=name)
        if claim is not None:
            entry.resource_claim_name = claim
        if template is not None:
            entry.resource_claim_template_name = template
        return self

    def container_claims(self, *names: str) -> MakePod:
        """resources.claims of the last container (each "name" or "name/request")."""
        resources = self._pod.spec.containers[-1].resources
        resources.SetInParent()
        for n in names:
            claim, _, request = n.partition("/")
            resources.claims.add(name=claim, request=request)
        return self

    def spec(self, doc: Json) -> MakePod:
        """Merge a Kubernetes-shaped spec dict (lists replace the field's items)."""
        self._pod.spec.SetInParent()
        json_format.ParseDict(doc, self._pod.spec)
        return self

    # ------------------------------------------------------------------ status

    def phase(self, phase: str) -> MakePod:
        self._pod.status.phase = phase
        return self

    def condition(self, type_: str, status: str, last_transition_time: str = "") -> MakePod:
        self._pod.status.conditions.add(
            type=type_, status=status, last_transition_time=last_transition_time
        )
        return self

    def container_status(
        self, name: str, *, restart_count: int = 0, ready: bool = False
    ) -> MakePod:
        self._pod.status.container_statuses.add(name=name, restart_count=restart_count, ready=ready)
        return self

    def claim_status(self, name: str, claim_name: str | None) -> MakePod:
        """A status.resourceClaimStatuses entry (the claim made for template entry `name`)."""
        entry = self._pod.status.resource_claim_statuses.add(name=name)
        if claim_name is not None:
            entry.resource_claim_name = claim_name
        return self


def _container(
    name: str,
    image: str,
    requests: Mapping[str, str] | None,
    limits: Mapping[str, str] | None,
    ports: Sequence[Json] | None,
) -> core_pb2.Container:
    c = core_pb2.Container(name=name, image=image)
    if requests is not None:
        c.resources.SetInParent()
        c.resources.requests.update(requests)
    if limits is not None:
        c.resources.SetInParent()
        c.resources.limits.update(limits)
    if ports is not None:
        json_format.ParseDict({"ports": list(ports)}, c)
    return c


class MakeNode:
    """A core_pb2.Node, one field per call."""

    def __init__(self) -> None:
        self._node = core_pb2.Node()

    def obj(self) -> core_pb2.Node:
        return self._node

    def typed(self) -> MakeNode:
        """apiVersion v1, kind Node: what decoding a manifest sets."""
        self._node.api_version, self._node.kind = "v1", "Node"
        return self

    def name(self, name: str) -> MakeNode:
        self._node.metadata.name = name
        return self

    def labels(self, labels: Mapping[str, str]) -> MakeNode:
        self._node.metadata.SetInParent()
        self._node.metadata.labels.update(labels)
        return self

    def label(self, key: str, value: str) -> MakeNode:
        self._node.metadata.labels[key] = value
        return self

    def taints(self, taints: Sequence[Json]) -> MakeNode:
        """spec.taints in their Kubernetes shape (the spec is present even when empty)."""
        self._node.spec.SetInParent()
        json_format.ParseDict({"taints": list(taints)}, self._node.spec)
        return self

    def unschedulable(self, value: bool = True) -> MakeNode:
        self._node.spec.unschedulable = value
        return self

    def capacity(self, capacity: Mapping[str, str]) -> MakeNode:
        self._node.status.SetInParent()
        self._node.status.capacity.update(capacity)
        return self

    def allocatable(self, allocatable: Mapping[str, str]) -> MakeNode:
        self._node.status.SetInParent()
        self._node.status.allocatable.update(allocatable)
        return self

    def condition(
        self,
        type_: str,
        status: str,
        *,
        last_heartbeat_time: str = "",
        last_transition_time: str = "",
    ) -> MakeNode:
        self._node.status.conditions.add(
            type=type_,
            status=status,
            last_heartbeat_time=last_heartbeat_time,
            last_transition_time=last_transition_time,
        )
        return self


def pod(name: str, namespace: str = "default", **spec: Any) -> core_pb2.Pod:
    """A decoded-manifest pod (apiVersion/kind set) with one pause container `c`; `spec` is
    merged in its Kubernetes shape (`nodeName="n1"`, `tolerations=[...]`; `containers=[...]`
    replaces the pause container)."""
    return (
        MakePod()
        .typed()
        .name(name)
        .namespace(namespace)
        .container("c", PAUSE_IMAGE)
        .spec(spec)
        .obj()
    )


# ----------------------------------------------------------------------------- DRA and gangs
# Kubernetes-shaped dicts parsed with json_format, like MakePod.spec: these objects are
# mostly nested data, so a builder per field would only rename the JSON.


def _parse(msg: Any, api_version: str, kind: str, name: str, namespace: str, doc: Json) -> Any:
    msg.api_version, msg.kind = api_version, kind
    msg.metadata.name = name
    if namespace:
        msg.metadata.namespace = namespace
    json_format.ParseDict(doc, msg)
    return msg


def device_class(name: str, *selectors: str, **doc: Any) -> resource_pb2.DeviceClass:
    """A DeviceClass whose spec.selectors are the CEL `selectors`; `doc`: more top-level fields."""
    cls = _parse(resource_pb2.DeviceClass(), "resource.k8s.io/v1", "DeviceClass", name, "", doc)
    for expr in selectors:
        cls.spec.selectors.add().cel.expression = expr
    return cls


def gpu(
    name: str, *, model: str = "A100", memory: str = "80Gi", index: int = 0, **attrs: Any
) -> Json:
    """A device dict for resource_slice: attributes model (string) and index (int), capacity
    memory; `attrs` adds attributes (int, bool or str values)."""
    attributes: Json = {"model": {"string": model}, "index": {"int": index}}
    for k, v in attrs.items():
        attributes[k] = (
            {"bool": v}
            if isinstance(v, bool)
            else {"int": v}
            if isinstance(v, int)
            else {"string": v}
        )
    return {"name": name, "attributes": attributes, "capacity": {"memory": {"value": memory}}}


def resource_slice(
    name: str,
    *,
    driver: str = "gpu.example.com",
    node: str | None = None,
    pool: str | None = None,
    devices: Sequence[Json] = (),
    generation: int = 1,
    slice_count: int = 1,
    **spec: Any,
) -> resource_pb2.ResourceSlice:
    """A ResourceSlice of `driver` for `node` (pool defaults to the node's name); `spec`:
    more spec fields in their Kubernetes shape (nodeSelector, allNodes)."""
    doc: Json = {
        "spec": {
            "driver": driver,
            "pool": {
                "name": pool or node or name,
                "generation": generation,
                "resourceSliceCount": slice_count,
            },
            "devices": list(devices),
            **spec,
        }
    }
    if node is not None:
        doc["spec"]["nodeName"] = node
    return _parse(
        resource_pb2.ResourceSlice(), "resource.k8s.io/v1", "ResourceSlice", name, "", doc
    )


def exact_request(
    name: str,
    device_class: str,
    *selectors: str,
    count: int = 0,
    mode: str = "",
    admin: bool | None = None,
) -> Json:
    """A DeviceRequest dict with `exactly` (count 0: unset, i.e. 1)."""
    exactly: Json = {"deviceClassName": device_class}
    if selectors:
        exactly["selectors"] = [{"cel": {"expression": e}} for e in selectors]
    if count:
        exactly["count"] = count
    if mode:
        exactly["allocationMode"] = mode
    if admin is not None:
        exactly["adminAccess"] = admin
    return {"name": name, "exactly": exactly}


def resource_claim(
    name: str,
    namespace: str = "default",
    *requests: Json,
    constraints: Sequence[Json] = (),
    **doc: Any,
) -> resource_pb2.ResourceClaim:
    """A ResourceClaim with spec.devices.requests `requests` (exact_request dicts or
    firstAvailable ones) and constraints; `doc`: more top-level fields (status, metadata)."""
    claim = _parse(
        resource_pb2.ResourceClaim(), "resource.k8s.io/v1", "ResourceClaim", name, namespace, doc
    )
    json_format.ParseDict(
        {"spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}}, claim
    )
    return claim


def resource_claim_template(
    name: str, namespace: str = "default", *requests: Json, constraints: Sequence[Json] = ()
) -> resource_pb2.ResourceClaimTemplate:
    tmpl = _parse(
        resource_pb2.ResourceClaimTemplate(),
        "resource.k8s.io/v1",
        "ResourceClaimTemplate",
        name,
        namespace,
        {},
    )
    json_format.ParseDict(
        {
            "spec": {
                "spec": {"devices": {"requests": list(requests), "constraints": list(constraints)}}
            }
        },
        tmpl,
    )
    return tmpl


#: The label a pod joins a PodGroup with (scheduler-plugins PodGroupLabel).
POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


def workload(
    name: str, namespace: str = "default", **groups: int | None
) -> schedulingv1alpha1_pb2.Workload:
    """A scheduling.k8s.io/v1alpha1 Workload: pod group name -> gang minCount, or None for
    a basic group (upstream st.MakeWorkload().PodGroup(...))."""
    pod_groups = [
        {"name": g, "policy": {"basic": {}} if n is None else {"gang": {"minCount": n}}}
        for g, n in groups.items()
    ]
    return _parse(
        schedulingv1alpha1_pb2.Workload(),
        "scheduling.k8s.io/v1alpha1",
        "Workload",
        name,
        namespace,
        {"spec": {"podGroups": pod_groups}},
    )


def pod_group(
    name: str,
    namespace: str = "default",
    *,
    min_member: int,
    timeout: int | None = None,
    **spec: Any,
) -> podgroup_pb2.PodGroup:
    """A PodGroup; `spec`: more spec fields in their Kubernetes shape (minResources)."""
    doc: Json = {"spec": {"minMember": min_member, **spec}}
    if timeout is not None:
        doc["spec"]["scheduleTimeoutSeconds"] = timeout
    return _parse(
        podgroup_pb2.PodGroup(), "scheduling.x-k8s.io/v1alpha1", "PodGroup", name, namespace, doc
    )


def scheduling_pod_group(
    name: str,
    namespace: str = "default",
    *,
    min_count: int | None = None,
    **spec: Any,
) -> schedulingv1beta1_pb2.SchedulingPodGroup:
    """A scheduling.k8s.io/v1beta1 PodGroup (upstream st.MakePodGroup()): a gang with
    `min_count`, else a basic group; `spec`: more spec fields in their Kubernetes shape
    (workloadRef, schedulingConstraints, disruptionMode, ...)."""
    policy: Json = {"basic": {}} if min_count is None else {"gang": {"minCount": min_count}}
    doc: Json = {"spec": {"schedulingPolicy": policy, **spec}}
    return _parse(
        schedulingv1beta1_pb2.SchedulingPodGroup(),
        "scheduling.k8s.io/v1beta1",
        "PodGroup",
        name,
        namespace,
        doc,
    )


def device(
    name: str = "dev", attributes: Mapping[str, Any] = (), capacity: Mapping[str, str] = ()
) -> resource_pb2.Device:
    """A resource_pb2.Device: attribute values int, bool or str, {"version": "1.2.3"} for a
    version; capacity values quantity strings. Names as in a slice ("model", "x.io/model")."""
    attrs: Json = {}
    for k, v in dict(attributes).items():
        kind = "bool" if isinstance(v, bool) else "int" if isinstance(v, int) else "string"
        attrs[k] = v if isinstance(v, dict) else {kind: v}
    doc = {
        "name": name,
        "attributes": attrs,
        "capacity": {k: {"value": v} for k, v in dict(capacity).items()},
    }
    return json_format.ParseDict(doc, resource_pb2.Device())


def slice_device(
    name: str, *, capacity: Mapping[str, str] | None = None, **attributes: Any
) -> Json:
    """`device` as a dict for resource_slice(devices=...): attributes as keywords (a domain
    name through **{"x.io/numa": 1}); only the fields given are set."""
    return json_format.MessageToDict(device(name, attributes, capacity or {}))


# ----------------------------------------------------------------------------- quota and limits


def limit_range(
    name: str = "limits", namespace: str = "default", *limits: Json
) -> policyv1core_pb2.LimitRange:
    """A LimitRange whose spec.limits are `limits` in their Kubernetes shape
    ({"type": "Container", "max": {"cpu": "1"}, "defaultRequest": {...}})."""
    return _parse(
        policyv1core_pb2.LimitRange(),
        "v1",
        "LimitRange",
        name,
        namespace,
        {"spec": {"limits": list(limits)}},
    )


def resource_quota(
    name: str = "quota",
    namespace: str = "default",
    *,
    hard: Mapping[str, str],
    scopes: Sequence[str] = (),
    scope_selector: Sequence[Json] = (),
    used: Mapping[str, str] | None = None,
) -> policyv1core_pb2.ResourceQuota:
    """A ResourceQuota; with `used`, also a status as the quota controller writes it
    (status.hard = spec.hard)."""
    spec: Json = {"hard": dict(hard)}
    if scopes:
        spec["scopes"] = list(scopes)
    if scope_selector:
        spec["scopeSelector"] = {"matchExpressions": list(scope_selector)}
    doc: Json = {"spec": spec}
    if used is not None:
        doc["status"] = {"hard": dict(hard), "used": dict(used)}
    return _parse(policyv1core_pb2.ResourceQuota(), "v1", "ResourceQuota", name, namespace, doc)


def service(
    name: str = "svc",
    namespace: str = "default",
    *,
    type_: str = "",
    ports: Sequence[Json] = (),
    **spec: Any,
) -> Any:
    """A Service of `type_` (empty: ClusterIP once defaulted) with `ports` in their
    Kubernetes shape ({"port": 80, "nodePort": 30001}); `spec`: more spec fields."""
    doc: Json = {"spec": {**spec, "ports": list(ports)}}
    if type_:
        doc["spec"]["type"] = type_
    return _parse(service_pb2.Service(), "v1", "Service", name, namespace, doc)


def persistent_volume(
    name: str,
    size: str,
    *modes: str,
    status: str = "Available",
    **doc: Any,
) -> storage_pb2.PersistentVolume:
    """A PersistentVolume of `size` with access `modes` (default RWO), a gcePersistentDisk
    source and volumeMode Filesystem, in phase `status` ("" for none); `doc`: more spec
    fields in their Kubernetes shape (storageClassName="silver", claimRef={...}), or
    `metadata`."""
    meta = doc.pop("metadata", {})
    spec: Json = {
        "capacity": {"storage": size},
        "accessModes": list(modes or ("ReadWriteOnce",)),
        "gcePersistentDisk": {"pdName": name},
        "volumeMode": "Filesystem",
        **doc,
    }
    body: Json = {"metadata": meta, "spec": spec}
    if status:
        body["status"] = {"phase": status}
    return _parse(storage_pb2.PersistentVolume(), "v1", "PersistentVolume", name, "", body)


def persistent_volume_claim(
    name: str,
    size: str,
    *modes: str,
    namespace: str = "default",
    **doc: Any,
) -> storage_pb2.PersistentVolumeClaim:
    """A claim for `size` with access `modes` (default RWO) and volumeMode Filesystem;
    `doc`: more spec fields (storageClassName, selector, volumeName), or `metadata`,
    `status`."""
    meta = doc.pop("metadata", {})
    status = doc.pop("status", None)
    spec: Json = {
        "accessModes": list(modes or ("ReadWriteOnce",)),
        "resources": {"requests": {"storage": size}},
        "volumeMode": "Filesystem",
        **doc,
    }
    body: Json = {"metadata": meta, "spec": spec}
    if status is not None:
        body["status"] = status
    return _parse(
        storage_pb2.PersistentVolumeClaim(), "v1", "PersistentVolumeClaim", name, namespace, body
    )


def storage_class(
    name: str, provisioner: str = "hollow.kubera.io", **doc: Any
) -> storagev1_pb2.StorageClass:
    """A StorageClass, defaulted as the apiserver would (Delete, Immediate); `doc`: more
    top-level fields (volumeBindingMode="WaitForFirstConsumer")."""
    body: Json = {
        "provisioner": provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "Immediate",
        **doc,
    }
    return _parse(storagev1_pb2.StorageClass(), "storage.k8s.io/v1", "StorageClass", name, "", body)
