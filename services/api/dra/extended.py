"""Extended resources backed by DRA (DRAExtendedResource; upstream
dynamic-resource-allocation/deviceclass/extendedresourcecache and the scheduler plugin's
extendeddynamicresources.go): a pod asks for `example.com/gpu: 2` in a container's requests,
no node advertises `example.com/gpu`, and a DeviceClass names it in
`spec.extendedResourceName`; the scheduler then allocates two devices of that class to a
claim it makes for the pod, as if the pod had asked for them in a ResourceClaim.

Which class serves a name (`resolve`):

    deviceclass.resource.kubernetes.io/<class>   always that class (the implicit name;
                                                  validation keeps it out of
                                                  extendedResourceName, so it is unique)
    spec.extendedResourceName                     the newest class naming it, the lower
                                                  name on a tie (several classes may name
                                                  one resource while moving between them)

The claim the scheduler makes (`requests_and_mappings`) has one ExactCount request per
container and resource, named `container-<i>-request-<j>` (i: the container's index in
initContainers + containers, j: the resource's index in the container's sorted requests).
Sidecars and regular containers run together, so each gets its own devices; an init container
that is not a sidecar runs before them and first reuses the devices of the long-lived
containers at and after its index, and all such init containers share one request, the
largest. The mappings say which request serves each container's resource; the scheduler
writes them to the pod's `status.extendedResourceClaimStatus`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.helpers.resources import (
    is_extended_resource_name,
    is_restartable_init_container,
)
from services.api.machinery.quantity import parse_quantity
from services.clock import parse_rfc3339

#: The implicit extended resource name of every DeviceClass is this prefix + its name
#: (upstream resourceapi.ResourceDeviceClassPrefix).
DEVICE_CLASS_PREFIX = "deviceclass.resource.kubernetes.io/"
#: The annotation on the claim the scheduler makes for a pod's extended resources; its only
#: value is "true" (upstream resourceapi.ExtendedResourceClaimAnnotation).
EXTENDED_RESOURCE_CLAIM_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def is_dra_extended_resource_name(name: str) -> bool:
    """An extended resource name, or a class's implicit one (upstream
    schedutil.IsDRAExtendedResourceName)."""
    return is_extended_resource_name(name) or name.startswith(DEVICE_CLASS_PREFIX)


def _created(dc: resource_pb2.DeviceClass) -> float:
    ts = dc.metadata.creation_timestamp
    try:
        return parse_rfc3339(ts) if ts else 0.0
    except ValueError:
        return 0.0


def resolve(classes: Iterable[resource_pb2.DeviceClass]) -> dict[str, resource_pb2.DeviceClass]:
    """Extended resource name -> the DeviceClass that serves it (see the module docstring)."""
    out: dict[str, resource_pb2.DeviceClass] = {}
    explicit: dict[str, resource_pb2.DeviceClass] = {}
    for dc in classes:
        out[DEVICE_CLASS_PREFIX + dc.metadata.name] = dc
        if not dc.spec.HasField("extended_resource_name"):
            continue
        name = dc.spec.extended_resource_name
        best = explicit.get(name)
        if best is None or (-_created(dc), dc.metadata.name) < (
            -_created(best),
            best.metadata.name,
        ):
            explicit[name] = dc
    out.update(explicit)
    return out


def mapped_requests(
    requests: Mapping[str, int], mapping: Mapping[str, resource_pb2.DeviceClass]
) -> dict[str, int]:
    """The pod's (non-zero) requests a DeviceClass maps (upstream
    hasDeviceClassMappedExtendedResource, keeping the names)."""
    return {
        name: q
        for name, q in requests.items()
        if q and is_dra_extended_resource_name(name) and name in mapping
    }


def is_extended_resource_claim(claim: resource_pb2.ResourceClaim) -> bool:
    return claim.metadata.annotations.get(EXTENDED_RESOURCE_CLAIM_ANNOTATION) == "true"


def find_claim(
    pod: core_pb2.Pod, claims: Iterable[resource_pb2.ResourceClaim]
) -> resource_pb2.ResourceClaim | None:
    """The extended resource claim an earlier attempt made for `pod`: annotated, and owned
    (as controller) by the pod (upstream findExtendedResourceClaim)."""
    for c in claims:
        if not is_extended_resource_claim(c):
            continue
        for ref in c.metadata.owner_references:
            if ref.name == pod.metadata.name and ref.controller and ref.uid == pod.metadata.uid:
                return c
    return None


def new_claim(pod: core_pb2.Pod) -> resource_pb2.ResourceClaim:
    """The claim for the pod's extended resources, without requests (each node's Filter adds
    its own) and without a name: created with generateName at PreBind."""
    claim = resource_pb2.ResourceClaim(api_version="resource.k8s.io/v1", kind="ResourceClaim")
    meta = claim.metadata
    meta.namespace = pod.metadata.namespace
    meta.generate_name = pod.metadata.name + "-extended-resources-"
    meta.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION] = "true"
    meta.owner_references.add(
        api_version="v1",
        kind="Pod",
        name=pod.metadata.name,
        uid=pod.metadata.uid,
        controller=True,
    )
    return claim


@dataclass(frozen=True)
class Request:
    """One ExactCount request of the extended resource claim."""

    name: str
    device_class_name: str
    count: int


def _count(container: core_pb2.Container, resource: str) -> int:
    raw = container.resources.requests.get(resource)
    if raw is None:
        return 0
    try:
        return parse_quantity(raw).int_value()
    except ValueError:
        return 0


def _container_request(
    index: int,
    container: core_pb2.Container,
    resource: str,
    class_name: str,
    reusable: Iterable[Request | None] = (),
) -> tuple[Request | None, list[core_pb2.ContainerExtendedResourceRequest]]:
    """upstream createResourceRequestAndMappings: the container's own request (None when
    it needs none, or `reusable` requests cover it) and its mappings."""
    want = _count(container, resource)
    if want <= 0:
        return None, []
    mappings: list[core_pb2.ContainerExtendedResourceRequest] = []
    got = 0
    for r in reusable:
        if r is None:
            continue
        got += r.count
        mappings.append(
            core_pb2.ContainerExtendedResourceRequest(
                container_name=container.name, resource_name=resource, request_name=r.name
            )
        )
        if got >= want:
            return None, mappings
    position = sorted(container.resources.requests).index(resource)
    req = Request(f"container-{index}-request-{position}", class_name, want - got)
    mappings.append(
        core_pb2.ContainerExtendedResourceRequest(
            container_name=container.name, resource_name=resource, request_name=req.name
        )
    )
    return req, mappings


def requests_and_mappings(
    pod: core_pb2.Pod,
    resources: Iterable[str],
    mapping: Mapping[str, resource_pb2.DeviceClass],
) -> tuple[list[Request], list[core_pb2.ContainerExtendedResourceRequest]]:
    """The requests of the pod's extended resource claim for `resources` (those a node must
    give through DRA), sorted by name, and the container mappings (upstream
    createRequestsAndMappings; see the module docstring)."""
    containers = list(pod.spec.init_containers) + list(pod.spec.containers)
    n_init = len(pod.spec.init_containers)
    short = [i for i in range(n_init) if not is_restartable_init_container(containers[i])]
    long_lived = [i for i in range(len(containers)) if i not in short]
    requests: list[Request] = []
    mappings: list[core_pb2.ContainerExtendedResourceRequest] = []
    for resource in sorted(resources):
        dc = mapping.get(resource)
        if dc is None:
            continue
        long_requests: list[Request | None] = [None] * len(containers)
        long_mappings: list[core_pb2.ContainerExtendedResourceRequest] = []
        for i in long_lived:
            req, got = _container_request(i, containers[i], resource, dc.metadata.name)
            long_requests[i] = req
            long_mappings += got
        largest: Request | None = None
        short_names: set[str] = set()
        short_mappings: list[core_pb2.ContainerExtendedResourceRequest] = []
        for i in short:
            req, got = _container_request(
                i, containers[i], resource, dc.metadata.name, long_requests[i:]
            )
            if req is not None:
                short_names.add(req.name)
                if largest is None or largest.count < req.count:
                    largest = req
            short_mappings += got
        if largest is not None and len(short_names) > 1:
            short_names.discard(largest.name)
            for m in short_mappings:
                if m.request_name in short_names:
                    m.request_name = largest.name
        if largest is not None:
            requests.append(largest)
        requests += [r for r in long_requests if r is not None]
        mappings += long_mappings + short_mappings
    requests.sort(key=lambda r: r.name)
    return requests, mappings


def claim_for_node(
    claim: resource_pb2.ResourceClaim, requests: Iterable[Request]
) -> resource_pb2.ResourceClaim:
    """A copy of the pod's extended resource claim with one node's requests."""
    out = resource_pb2.ResourceClaim()
    out.CopyFrom(claim)
    del out.spec.devices.requests[:]
    for r in requests:
        dr = out.spec.devices.requests.add(name=r.name)
        dr.exactly.device_class_name = r.device_class_name
        dr.exactly.allocation_mode = "ExactCount"
        dr.exactly.count = r.count
    return out
