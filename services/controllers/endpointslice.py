"""The EndpointSlice controller (upstream pkg/controller/endpointslice and its reconciler,
staging/src/k8s.io/endpointslice): the discovery.k8s.io/v1 EndpointSlices of every
Service with a selector, from the pods it selects.

For each service (`desired_slices`), the pods of its namespace whose labels match
spec.selector, except pods without an IP and terminal pods (ShouldPodBeInEndpoints,
terminating pods included), become endpoints:

    addresses   [status.podIP]
    conditions  serving = publishNotReadyAddresses or the pod is Ready
                terminating = the pod has a deletionTimestamp
                ready = publishNotReadyAddresses or (serving and not terminating)
    targetRef   {kind: Pod, namespace, name, uid};  nodeName;  zone (the node's
                topology.kubernetes.io/zone label);  hostname when the pod's
                spec.hostname is set and spec.subdomain names the service

Each pod's ports are the service's ports resolved against it (FindPort: a numeric
targetPort as is, a named one by the container port of that name and protocol; a port
the pod does not have is left out), so pods with different resolved ports go to
different slices. A slice holds at most max_endpoints_per_slice (100) endpoints. A
service with no endpoints keeps one placeholder slice with no endpoints and no ports, as
upstream. ExternalName services and services without selector get no slices (those this
controller made are deleted).

Slices are named `<service>-<5 random>` (generateName), owned by the service
(controller and blockOwnerDeletion), labelled kubernetes.io/service-name,
endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io, the service's
own labels, and service.kubernetes.io/headless for a headless service; addressType IPv4.

Placement (`place_endpoints`) follows upstream's reconciler: an endpoint stays in the
slice it is in, new ones fill slices with room before new slices are made, an emptied
slice is reused before one is created, so a pod's change writes one slice, not all.
Deliberate differences from upstream: no final packing pass that merges sparse slices,
no topology hints, IPv4 only, and the controller deletes the slices of a deleted service
itself (upstream leaves that to the garbage collector; both may happen, a NotFound is
ignored).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, discovery_pb2, service_pb2
from services.api.helpers.wellknown import LABEL_TOPOLOGY_ZONE
from services.api.machinery.errors import ForbiddenError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.labels import Selector
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    NamespaceIndex,
    is_namespace_terminating,
    is_pod_ready,
    new_controller_ref,
    split_key,
    wait_synced,
)
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
SERVICES, SLICES = BY_KIND["Service"], BY_KIND["EndpointSlice"]

LABEL_SERVICE_NAME = "kubernetes.io/service-name"
LABEL_MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
CONTROLLER_NAME = "endpointslice-controller.k8s.io"
LABEL_HEADLESS = "service.kubernetes.io/headless"
#: kube-controller-manager's --max-endpoints-per-slice default.
MAX_ENDPOINTS_PER_SLICE = 100

#: A port set: (name, protocol, port, appProtocol) of each resolved port, in service order.
PortSet = tuple[tuple[str, str, int, str | None], ...]


@dataclass
class EndpointSliceConfig(WorkerSettings):
    """Settings of the EndpointSlice controller."""

    workers: int = 5
    """Services synced at once (--concurrent-service-endpoint-syncs)."""

    max_endpoints_per_slice: int = MAX_ENDPOINTS_PER_SLICE
    """The most endpoints one slice holds (--max-endpoints-per-slice, 1 to 1000)."""

    def __post_init__(self) -> None:
        if not 1 <= self.max_endpoints_per_slice <= 1000:
            raise ValueError(
                f"max_endpoints_per_slice must be 1 to 1000, not {self.max_endpoints_per_slice}"
            )


# ----------------------------------------------------------------- pure rules


def is_pod_terminal(pod: core_pb2.Pod) -> bool:
    return pod.status.phase in ("Succeeded", "Failed")


def should_be_in_endpoints(pod: core_pb2.Pod) -> bool:
    """ShouldPodBeInEndpoints(pod, includeTerminating=true)."""
    if not (pod.status.pod_ip or pod.status.pod_ips):
        return False
    return not is_pod_terminal(pod)


def has_ip(pod: core_pb2.Pod) -> bool:
    return bool(pod.status.pod_ip or pod.status.pod_ips)


def endpoint_changed(old: core_pb2.Pod, new: core_pb2.Pod) -> bool:
    """Whether a pod update can change an endpoint (upstream's podEndpointsChanged): its
    labels, IP, readiness, deletion, node, phase or hostname, for a pod that has an IP
    before or after (a pod without one is no endpoint either way, so the binds of a
    cluster without kubelets cost the endpoint controllers nothing)."""
    if not (has_ip(old) or has_ip(new)):
        return False
    return (
        old.metadata.labels != new.metadata.labels
        or old.status.pod_ip != new.status.pod_ip
        or is_pod_ready(old) != is_pod_ready(new)
        or old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        or old.spec.node_name != new.spec.node_name
        or old.status.phase != new.status.phase
        or old.spec.hostname != new.spec.hostname
        or old.spec.subdomain != new.spec.subdomain
    )


def find_port(pod: core_pb2.Pod, port: service_pb2.ServicePort) -> int | None:
    """podutil.FindPort: the pod's port for a service port, None when it has none.
    Sidecars (init containers that restart Always) count, as upstream."""
    target = port.target_port if port.HasField("target_port") else str(port.port)
    if target.lstrip("-").isdigit():
        return int(target)
    containers = [
        *pod.spec.containers,
        *(c for c in pod.spec.init_containers if c.restart_policy == "Always"),
    ]
    for c in containers:
        for p in c.ports:
            if p.name == target and (p.protocol or "TCP") == port.protocol:
                return int(p.container_port)
    return None


def endpoint_ports(svc: service_pb2.Service, pod: core_pb2.Pod) -> PortSet:
    out = []
    for sp in svc.spec.ports:
        num = find_port(pod, sp)
        if num is None:
            continue
        out.append(
            (sp.name, sp.protocol, num, sp.app_protocol if sp.HasField("app_protocol") else None)
        )
    return tuple(out)


def pod_endpoint(
    svc: service_pb2.Service, pod: core_pb2.Pod, node: core_pb2.Node | None
) -> discovery_pb2.Endpoint:
    """podToEndpoint."""
    publish = svc.spec.publish_not_ready_addresses
    serving = publish or is_pod_ready(pod)
    terminating = bool(pod.metadata.deletion_timestamp)
    ready = publish or (serving and not terminating)
    ip = pod.status.pod_ip or pod.status.pod_ips[0].ip
    ep = discovery_pb2.Endpoint(
        addresses=[ip],
        conditions=discovery_pb2.EndpointConditions(
            ready=ready, serving=serving, terminating=terminating
        ),
        target_ref=core_pb2.ObjectReference(
            kind="Pod",
            namespace=pod.metadata.namespace,
            name=pod.metadata.name,
            uid=pod.metadata.uid,
        ),
    )
    if pod.spec.node_name:
        ep.node_name = pod.spec.node_name
    zone = node.metadata.labels.get(LABEL_TOPOLOGY_ZONE, "") if node is not None else ""
    if zone:
        ep.zone = zone
    if (
        pod.spec.hostname
        and pod.spec.subdomain == svc.metadata.name
        and pod.metadata.namespace == svc.metadata.namespace
    ):
        ep.hostname = pod.spec.hostname
    return ep


def _ports_message(ports: PortSet) -> list[discovery_pb2.EndpointPort]:
    out = []
    for name, protocol, port, app in ports:
        p = discovery_pb2.EndpointPort(name=name, protocol=protocol, port=port)
        if app is not None:
            p.app_protocol = app
        out.append(p)
    return out


def selects(svc: service_pb2.Service, pod: core_pb2.Pod) -> bool:
    return bool(svc.spec.selector) and Selector.from_set(svc.spec.selector).matches(
        pod.metadata.labels
    )


def desired_endpoints(
    svc: service_pb2.Service, pods: Iterable[core_pb2.Pod], nodes: dict[str, core_pb2.Node]
) -> dict[PortSet, list[discovery_pb2.Endpoint]]:
    """The service's endpoints by resolved port set, each list by pod name."""
    by_ports: dict[PortSet, list[discovery_pb2.Endpoint]] = {}
    for pod in sorted(pods, key=lambda p: p.metadata.name):
        if not selects(svc, pod) or not should_be_in_endpoints(pod):
            continue
        ports = endpoint_ports(svc, pod)
        ep = pod_endpoint(svc, pod, nodes.get(pod.spec.node_name))
        by_ports.setdefault(ports, []).append(ep)
    return by_ports


def desired_slices(
    svc: service_pb2.Service,
    pods: Iterable[core_pb2.Pod],
    nodes: dict[str, core_pb2.Node],
    *,
    max_per_slice: int = MAX_ENDPOINTS_PER_SLICE,
) -> list[tuple[PortSet, list[discovery_pb2.Endpoint]]]:
    """The slices a service without slices yet gets: (port set, endpoints), each at most
    `max_per_slice` long; one placeholder (no ports, no endpoints) when none."""
    by_ports = desired_endpoints(svc, pods, nodes)
    out: list[tuple[PortSet, list[discovery_pb2.Endpoint]]] = []
    for ports, eps in by_ports.items():
        for i in range(0, len(eps), max_per_slice):
            out.append((ports, eps[i : i + max_per_slice]))
    return out or [((), [])]


def _endpoint_id(ep: discovery_pb2.Endpoint) -> str:
    return ep.target_ref.uid or (ep.addresses[0] if ep.addresses else "")


#: One write of a sync: the slice to update (None: create one), its port set, endpoints.
Placement = tuple[discovery_pb2.EndpointSlice | None, PortSet, list[discovery_pb2.Endpoint]]


def place_endpoints(
    existing: Sequence[discovery_pb2.EndpointSlice],
    by_ports: dict[PortSet, list[discovery_pb2.Endpoint]],
    max_per_slice: int,
) -> tuple[list[Placement], list[discovery_pb2.EndpointSlice]]:
    """Upstream's reconciler, in its main rules: each endpoint still wanted stays in the
    slice of its port set it is in (with its new conditions); new endpoints fill the
    slices of their port set that have room, then new slices of `max_per_slice`; a slice
    left empty goes, or is reused for a new one (of any port set) rather than deleted and
    created again. No endpoints at all: one placeholder slice. Returns the writes and the
    slices to delete."""
    if not any(by_ports.values()):
        return [(existing[0] if existing else None, (), [])], list(existing[1:])
    plan: list[Placement] = []
    taken: set[int] = set()
    emptied: list[discovery_pb2.EndpointSlice] = []
    for ports, eps in by_ports.items():
        want = {_endpoint_id(e): e for e in eps}
        placed: set[str] = set()
        slots: list[tuple[discovery_pb2.EndpointSlice, list[discovery_pb2.Endpoint]]] = []
        for s in existing:
            if id(s) in taken or slice_port_set(s) != ports:
                continue
            taken.add(id(s))
            kept = []
            for e in s.endpoints:
                uid = _endpoint_id(e)
                if uid in want and uid not in placed:
                    kept.append(want[uid])
                    placed.add(uid)
            slots.append((s, kept))
        new_eps = [e for e in eps if _endpoint_id(e) not in placed]
        for s, kept in slots:
            room = max_per_slice - len(kept)
            if room > 0 and new_eps:
                kept.extend(new_eps[:room])
                new_eps = new_eps[room:]
            if kept:
                plan.append((s, ports, kept))
            else:
                emptied.append(s)
        for i in range(0, len(new_eps), max_per_slice):
            plan.append((None, ports, new_eps[i : i + max_per_slice]))
    spare = [s for s in existing if id(s) not in taken] + emptied
    for i, (cur, ports, eps) in enumerate(plan):
        if cur is None and spare:
            plan[i] = (spare.pop(0), ports, eps)
    return plan, spare


def slice_labels(svc: service_pb2.Service) -> dict[str, str]:
    """The service's labels, then the controller's (which win)."""
    labels = dict(svc.metadata.labels)
    labels[LABEL_SERVICE_NAME] = svc.metadata.name
    labels[LABEL_MANAGED_BY] = CONTROLLER_NAME
    if svc.spec.cluster_ip == "None":
        labels[LABEL_HEADLESS] = ""
    else:
        labels.pop(LABEL_HEADLESS, None)
    return labels


def slice_port_set(eps: discovery_pb2.EndpointSlice) -> PortSet:
    return tuple(
        (p.name, p.protocol, p.port, p.app_protocol if p.HasField("app_protocol") else None)
        for p in eps.ports
    )


# ----------------------------------------------------------------- controller


class EndpointSliceController:
    """Keeps every selecting Service's EndpointSlices (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: EndpointSliceConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or EndpointSliceConfig()
        self.clock = clock or RealClock()
        self.svc_informer = informers.get(SERVICES)
        self.pod_informer = informers.get(PODS)
        self.node_informer = informers.get(NODES)
        self.slice_informer = informers.get(SLICES)
        self.queue: WorkQueue[str] = controller_queue(
            "endpoint_slice",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self._services = NamespaceIndex(self.svc_informer, service_pb2.Service)
        self._pods = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self._slices = NamespaceIndex(self.slice_informer, discovery_pb2.EndpointSlice)
        enqueue = self._enqueue
        self.svc_informer.add_handlers(Handlers(enqueue, lambda _o, n: enqueue(n), enqueue))
        self.pod_informer.add_handlers(
            Handlers(self._pod_changed, self._pod_updated, self._pod_changed)
        )
        self.slice_informer.add_handlers(
            Handlers(self._slice_changed, lambda _o, n: self._slice_changed(n), self._slice_changed)
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Sync services until `stop` is set."""
        try:
            if await wait_synced(
                stop,
                self.svc_informer.synced,
                self.pod_informer.synced,
                self.node_informer.synced,
                self.slice_informer.synced,
            ):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="endpointslice",
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ handlers

    def _enqueue(self, svc: Message) -> None:
        self.queue.add(object_key(svc))

    def _services_of(self, pod: core_pb2.Pod) -> list[str]:
        return [
            object_key(s) for s in self._services.list(pod.metadata.namespace) if selects(s, pod)
        ]

    def _selecting_services(self, namespace: str) -> bool:
        """Whether a service of the namespace has a selector (the `kubernetes` service in
        default has none, so pod updates there reach no handler)."""
        return self._services.has(namespace) and any(
            s.spec.selector for s in self._services.list(namespace)
        )

    def _pod_changed(self, obj: Message) -> None:
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
        if not has_ip(pod):
            return  # no endpoint, added or gone
        for key in self._services_of(pod):
            self.queue.add(key)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """A pod in a namespace with selecting services, changing an endpoint."""
        o: core_pb2.Pod = old  # type: ignore[assignment]
        n: core_pb2.Pod = new  # type: ignore[assignment]
        return self._selecting_services(n.metadata.namespace) and endpoint_changed(o, n)

    def _pod_updated(self, old: Message, new: Message) -> None:
        if not self.wants_pod_update(old, new):
            return  # dispatched for another controller
        keys = set(self._services_of(new)) | set(self._services_of(old))  # type: ignore[arg-type]
        for key in keys:
            self.queue.add(key)

    def _slice_changed(self, obj: Message) -> None:
        eps: discovery_pb2.EndpointSlice = obj  # type: ignore[assignment]
        if eps.metadata.labels.get(LABEL_MANAGED_BY) != CONTROLLER_NAME:
            return
        name = eps.metadata.labels.get(LABEL_SERVICE_NAME)
        if name:
            self.queue.add(f"{eps.metadata.namespace}/{name}")

    # ---------------------------------------------------------------------- sync

    def managed_slices(self, namespace: str, name: str) -> list[discovery_pb2.EndpointSlice]:
        return sorted(
            (
                s
                for s in self._slices.list(namespace)
                if s.metadata.labels.get(LABEL_SERVICE_NAME) == name
                and s.metadata.labels.get(LABEL_MANAGED_BY) == CONTROLLER_NAME
            ),
            key=lambda s: s.metadata.name,
        )

    async def sync(self, key: str) -> None:
        """One service: write the slices it should have, delete the ones it should not."""
        namespace, name = split_key(key)
        existing = self.managed_slices(namespace, name)
        stored = self.svc_informer.store.get(key)
        svc: service_pb2.Service | None = stored  # type: ignore[assignment]
        if svc is None or not svc.spec.selector or svc.spec.type == "ExternalName":
            await self._delete(existing)
            return
        nodes: dict[str, core_pb2.Node] = dict(self.node_informer.store)  # type: ignore[arg-type]
        by_ports = desired_endpoints(svc, self._pods.list(namespace), nodes)
        labels = slice_labels(svc)
        owner = new_controller_ref(svc, SERVICES)
        plan, left = place_endpoints(existing, by_ports, self.config.max_endpoints_per_slice)
        for cur, ports, endpoints in plan:
            if cur is not None:
                new = discovery_pb2.EndpointSlice()
                new.CopyFrom(cur)
                self._fill(new, ports, endpoints, labels, owner)
                if new != cur:
                    await self.client.update(new)
                continue
            new = discovery_pb2.EndpointSlice(
                api_version="discovery.k8s.io/v1", kind="EndpointSlice"
            )
            new.metadata.generate_name = f"{name}-"
            new.metadata.namespace = namespace
            self._fill(new, ports, endpoints, labels, owner)
            try:
                await self.client.create(new)
            except (NotFoundError, ForbiddenError) as e:
                if isinstance(e, ForbiddenError) and not is_namespace_terminating(e):
                    raise
                return  # the namespace is gone or going
        await self._delete(left)

    @staticmethod
    def _fill(
        eps: discovery_pb2.EndpointSlice,
        ports: PortSet,
        endpoints: Sequence[discovery_pb2.Endpoint],
        labels: dict[str, str],
        owner: object,
    ) -> None:
        eps.address_type = "IPv4"
        del eps.endpoints[:]
        eps.endpoints.extend(endpoints)
        del eps.ports[:]
        eps.ports.extend(_ports_message(ports))
        eps.metadata.labels.clear()
        eps.metadata.labels.update(labels)
        del eps.metadata.owner_references[:]
        eps.metadata.owner_references.append(owner)  # type: ignore[arg-type]

    async def _delete(self, slices: Iterable[discovery_pb2.EndpointSlice]) -> None:
        for s in slices:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(SLICES, s.metadata.name, s.metadata.namespace)


__all__ = [
    "CONTROLLER_NAME",
    "LABEL_MANAGED_BY",
    "LABEL_SERVICE_NAME",
    "EndpointSliceConfig",
    "EndpointSliceController",
    "desired_endpoints",
    "endpoint_changed",
    "has_ip",
    "desired_slices",
    "find_port",
    "place_endpoints",
    "pod_endpoint",
]
