"""The endpoints controller (upstream pkg/controller/endpoint): the core/v1 Endpoints of
every Service with a selector, named after the service, from the pods it selects.
EndpointSlices superseded them, but `kubectl describe service` (1.32) and
`kubectl get endpoints` still read them.

For each service (`desired_subsets`): the pods of its namespace its selector matches,
except terminal pods, pods without an IP and, unless publishNotReadyAddresses, pods
being deleted (ShouldPodBeInEndpoints). Each is an address {ip, nodeName, targetRef,
hostname when spec.hostname is set and spec.subdomain names the service}, under
`addresses` when the pod is Ready (or publishNotReadyAddresses), else under
`notReadyAddresses`, once per service port the pod resolves (FindPort; a headless service
without ports lists its addresses without ports). Subsets are then repacked as upstream's
RepackSubsets does: addresses with the same set of ports share a subset. The Endpoints
carry the service's labels (and service.kubernetes.io/headless for a headless service).

Upstream deletes the Endpoints of a deleted service and leaves those of a service
without selector to whoever writes them; so does this controller. Deliberate differences: addresses are sorted by IP then pod name and ports by
name, port and protocol (upstream sorts ports by their hash), and the
endpoints.kubernetes.io/last-change-trigger-time annotation is not written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, service_pb2
from services.api.machinery.errors import ForbiddenError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    NamespaceIndex,
    is_namespace_terminating,
    is_pod_ready,
    split_key,
    wait_synced,
)
from services.controllers.endpointslice import (
    LABEL_HEADLESS,
    endpoint_changed,
    find_port,
    has_ip,
    selects,
)
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS, SERVICES, ENDPOINTS = BY_KIND["Pod"], BY_KIND["Service"], BY_KIND["Endpoints"]

#: One port: (name, port, protocol, appProtocol).
PortKey = tuple[str, int, str, str | None]


@dataclass
class EndpointsConfig(WorkerSettings):
    """Settings of the endpoints controller."""

    workers: int = 5
    """Services synced at once (--concurrent-endpoint-syncs)."""


def should_be_in_endpoints(pod: core_pb2.Pod, include_terminating: bool) -> bool:
    """ShouldPodBeInEndpoints."""
    if pod.status.phase in ("Succeeded", "Failed"):
        return False
    if not (pod.status.pod_ip or pod.status.pod_ips):
        return False
    return include_terminating or not pod.metadata.deletion_timestamp


def pod_address(svc: service_pb2.Service, pod: core_pb2.Pod) -> service_pb2.EndpointAddress:
    """podToEndpointAddressForService."""
    a = service_pb2.EndpointAddress(
        ip=pod.status.pod_ip or pod.status.pod_ips[0].ip,
        target_ref=core_pb2.ObjectReference(
            kind="Pod",
            namespace=pod.metadata.namespace,
            name=pod.metadata.name,
            uid=pod.metadata.uid,
        ),
    )
    if pod.spec.node_name:
        a.node_name = pod.spec.node_name
    if (
        pod.spec.hostname
        and pod.spec.subdomain == svc.metadata.name
        and pod.metadata.namespace == svc.metadata.namespace
    ):
        a.hostname = pod.spec.hostname
    return a


def desired_subsets(
    svc: service_pb2.Service, pods: Iterable[core_pb2.Pod]
) -> list[service_pb2.EndpointSubset]:
    """The subsets the service's Endpoints should have (see the module docstring)."""
    publish = svc.spec.publish_not_ready_addresses
    # (ready, address key) -> (address, its ports)
    found: dict[tuple[bool, str, str], tuple[service_pb2.EndpointAddress, set[PortKey]]] = {}
    for pod in pods:
        if not selects(svc, pod) or not should_be_in_endpoints(pod, publish):
            continue
        ready = publish or is_pod_ready(pod)
        addr = pod_address(svc, pod)
        ports: set[PortKey] = set()
        if svc.spec.ports:
            for sp in svc.spec.ports:
                num = find_port(pod, sp)
                if num is not None:
                    app = sp.app_protocol if sp.HasField("app_protocol") else None
                    ports.add((sp.name, num, sp.protocol, app))
            if not ports:
                continue
        elif svc.spec.cluster_ip != "None":
            continue  # no ports and not headless: nothing to list
        found[(ready, addr.ip, pod.metadata.name)] = (addr, ports)
    # RepackSubsets: addresses with the same ports share a subset.
    groups: dict[frozenset[PortKey], service_pb2.EndpointSubset] = {}
    for (ready, _, _), (addr, addr_ports) in sorted(found.items(), key=lambda kv: kv[0][1:]):
        subset = groups.setdefault(frozenset(addr_ports), service_pb2.EndpointSubset())
        (subset.addresses if ready else subset.not_ready_addresses).append(addr)
    out = []
    for port_set, subset in groups.items():
        for name, num, protocol, app in sorted(port_set, key=lambda k: (k[0], k[1], k[2])):
            port = service_pb2.CoreEndpointPort(name=name, port=num, protocol=protocol)
            if app is not None:
                port.app_protocol = app
            subset.ports.append(port)
        out.append(subset)
    return sorted(out, key=lambda s: [(p.name, p.port, p.protocol) for p in s.ports])


class EndpointsController:
    """Keeps every selecting Service's Endpoints (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: EndpointsConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or EndpointsConfig()
        self.clock = clock or RealClock()
        self.svc_informer = informers.get(SERVICES)
        self.pod_informer = informers.get(PODS)
        self.ep_informer = informers.get(ENDPOINTS)
        self.queue: WorkQueue[str] = controller_queue(
            "endpoint",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self._services = NamespaceIndex(self.svc_informer, service_pb2.Service)
        self._pods = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        enqueue = self._enqueue
        self.svc_informer.add_handlers(Handlers(enqueue, lambda _o, n: enqueue(n), enqueue))
        self.pod_informer.add_handlers(
            Handlers(self._pod_changed, self._pod_updated, self._pod_changed)
        )
        self.ep_informer.add_handlers(Handlers(None, None, enqueue))

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop, self.svc_informer.synced, self.pod_informer.synced, self.ep_informer.synced
            ):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="endpoint"
                )
        finally:
            self.queue.shutdown()

    def _enqueue(self, obj: Message) -> None:
        self.queue.add(object_key(obj))

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
        if not has_ip(obj):  # type: ignore[arg-type]
            return  # no address, added or gone
        for key in self._services_of(obj):  # type: ignore[arg-type]
            self.queue.add(key)

    def _pod_updated(self, old: Message, new: Message) -> None:
        if not self.wants_pod_update(old, new):
            return  # dispatched for another controller
        for key in set(self._services_of(new)) | set(self._services_of(old)):  # type: ignore[arg-type]
            self.queue.add(key)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """A pod in a namespace with selecting services, changing an address."""
        o: core_pb2.Pod = old  # type: ignore[assignment]
        n: core_pb2.Pod = new  # type: ignore[assignment]
        return self._selecting_services(n.metadata.namespace) and endpoint_changed(o, n)

    async def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        svc: service_pb2.Service | None = self.svc_informer.store.get(key)  # type: ignore[assignment]
        current: service_pb2.Endpoints | None = self.ep_informer.store.get(key)  # type: ignore[assignment]
        if svc is None:
            if current is not None:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(ENDPOINTS, name, namespace)
            return
        if not svc.spec.selector:
            return  # endpoints of a service without selector are their writer's
        new = service_pb2.Endpoints(api_version="v1", kind="Endpoints")
        if current is not None:
            new.CopyFrom(current)
        new.metadata.name, new.metadata.namespace = name, namespace
        labels = dict(svc.metadata.labels)
        if svc.spec.cluster_ip == "None":
            labels[LABEL_HEADLESS] = ""
        new.metadata.labels.clear()
        new.metadata.labels.update(labels)
        del new.subsets[:]
        new.subsets.extend(desired_subsets(svc, self._pods.list(namespace)))
        if current is not None:
            if new != current:
                await self.client.update(new)
            return
        try:
            await self.client.create(new)
        except (NotFoundError, ForbiddenError) as e:
            if isinstance(e, ForbiddenError) and not is_namespace_terminating(e):
                raise  # the namespace is gone or going: not an error


__all__ = ["EndpointsConfig", "EndpointsController", "desired_subsets"]
