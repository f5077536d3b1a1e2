"""A Service's cluster IP and node ports: defaults, allocation and release, kept in etcd
so that no two apiserver replicas ever hand out the same one.

Why this module exists: kubera runs several apiservers on one etcd, and each may create
services at once. Upstream's current allocator (MultiCIDRServiceAllocator) records each
allocated cluster IP as an IPAddress object whose create fails when the IP is taken; kubera
does the same with one etcd key per allocated value, written in the service's own create
txn:

    /kubera/serviceips/<ip>            value: <namespace>/<name> of the service holding it
    /kubera/servicenodeports/<port>    value: <namespace>/<name>

The create txn compares each key's create_revision == 0 next to the service's own key, so
the service and its allocations are written together or not at all: two replicas that
picked the same IP cannot both succeed, and a failed create leaves nothing allocated.
The delete that removes a service removes its keys in the same txn (upstream releases
after the delete and repairs leaks with a controller; here nothing can leak but a corrupt
service removed unsafely).

Allocation picks a random free value (upstream's random allocator over the range, with
the range's lower 1/16 preferred for static assignment not modelled), reading etcd for
the keys already taken; a race lost between that read and the txn answers 422 "provided
IP is already allocated" for a value the user asked for, and is retried with a new value
otherwise.

Defaults are upstream's SetDefaults_Service (pkg/apis/core/v1/defaults.go) and the
registry's ipFamilies/ipFamilyPolicy defaults on a single-stack IPv4 cluster
(pkg/registry/core/service/storage/alloc.go): SingleStack with [IPv4], and RequireDualStack
for a headless service without selector. Deliberate differences: one IPv4 service CIDR
(kubeadm's 10.96.0.0/12 unless configured), no dual-stack; an update keeps the values
allocated (upstream's patchAllocatedValues), allocates what the new type needs and
releases what it no longer uses, in the update's txn.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from services.api.machinery.errors import FieldError, InvalidError, invalid
from services.api.machinery.kinds import Kind
from services.storage import Compare, Delete, Get, Put, Storage
from services.storage.keys import NODE_PORTS_PREFIX, SERVICE_IPS_PREFIX

__all__ = [
    "DEFAULT_NODE_PORT_RANGE",
    "AllocationLostError",
    "DEFAULT_SERVICE_CIDR",
    "NODE_PORTS_PREFIX",
    "SERVICE_IPS_PREFIX",
    "ServiceNetwork",
    "allocate",
    "allocation_keys",
    "allocation_ops",
    "allocation_refusal",
    "default_secret",
    "default_service",
    "forget",
    "keep_allocated",
    "parse_node_port_range",
    "release_ops",
    "update_ops",
]

#: kubeadm's default --service-cluster-ip-range.
DEFAULT_SERVICE_CIDR = "10.96.0.0/12"
#: kube-apiserver's default --service-node-port-range.
DEFAULT_NODE_PORT_RANGE = (30000, 32767)
#: How many random picks allocation tries before reading the taken values whole.
_RANDOM_TRIES = 16
#: Client-IP session affinity's default timeout (upstream's DefaultClientIPServiceAffinitySeconds).
DEFAULT_CLIENT_IP_TIMEOUT = 10800


@dataclass(frozen=True, slots=True)
class ServiceNetwork:
    """The service CIDR and the node port range. Raises ValueError when they do not fit."""

    cidr: str = DEFAULT_SERVICE_CIDR
    node_ports: tuple[int, int] = DEFAULT_NODE_PORT_RANGE

    def __post_init__(self) -> None:
        net = ipaddress.ip_network(self.cidr)
        if net.version != 4 or net.num_addresses < 8:
            raise ValueError(
                f"service CIDR {self.cidr} must be an IPv4 range of 8 addresses or more"
            )
        lo, hi = self.node_ports
        if not 0 < lo <= hi <= 65535:
            raise ValueError(f"node port range {lo}-{hi} is not a range of ports")

    @property
    def network(self) -> ipaddress.IPv4Network:
        return ipaddress.IPv4Network(self.cidr)

    def first_ip(self) -> str:
        """The `kubernetes` service's IP: the range's first usable address."""
        return str(self.network.network_address + 1)


def parse_node_port_range(text: str) -> tuple[int, int]:
    """kube-apiserver's --service-node-port-range: "LO-HI" (or a single port)."""
    lo, sep, hi = text.partition("-")
    try:
        first = int(lo)
        last = int(hi) if sep else first
    except ValueError:
        raise ValueError(f"{text!r} is not a port range (e.g. 30000-32767)") from None
    return first, last


def _is_headless(spec: Any) -> bool:
    return bool(spec.cluster_ip == "None")


# ----------------------------------------------------------------- defaults


def externally_accessible(spec: Any) -> bool:
    """service.ExternallyAccessible: NodePort and LoadBalancer services, and ClusterIP
    services with external IPs."""
    return spec.type in ("NodePort", "LoadBalancer") or (
        spec.type == "ClusterIP" and len(spec.external_ips) > 0
    )


def default_service(svc: Any) -> None:
    """SetDefaults_Service, then the registry's IP family defaults."""
    spec = svc.spec
    if not spec.session_affinity:
        spec.session_affinity = "None"
    if spec.session_affinity == "None":
        spec.ClearField("session_affinity_config")
    if spec.session_affinity == "ClientIP" and not spec.session_affinity_config.client_ip.HasField(
        "timeout_seconds"
    ):
        spec.session_affinity_config.client_ip.timeout_seconds = DEFAULT_CLIENT_IP_TIMEOUT
    if not spec.type:
        spec.type = "ClusterIP"
    for p in spec.ports:
        if not p.protocol:
            p.protocol = "TCP"
        if not p.HasField("target_port") or p.target_port in ("", "0"):
            p.target_port = str(p.port)
    if externally_accessible(spec) and not spec.external_traffic_policy:
        spec.external_traffic_policy = "Cluster"
    if spec.type != "ExternalName" and not spec.HasField("internal_traffic_policy"):
        spec.internal_traffic_policy = "Cluster"
    if spec.type == "LoadBalancer" and not spec.HasField("allocate_load_balancer_node_ports"):
        spec.allocate_load_balancer_node_ports = True
    if spec.type == "LoadBalancer":
        for ingress in svc.status.load_balancer.ingress:
            if ingress.ip and not ingress.HasField("ip_mode"):
                ingress.ip_mode = "VIP"
    if spec.type == "ExternalName":
        return
    if spec.cluster_ip and not spec.cluster_ips:
        spec.cluster_ips.append(spec.cluster_ip)
    if not spec.HasField("ip_family_policy"):
        selectorless_headless = _is_headless(spec) and not spec.selector
        spec.ip_family_policy = "RequireDualStack" if selectorless_headless else "SingleStack"
    if not spec.ip_families:
        spec.ip_families.append("IPv4")


def default_secret(secret: Any) -> None:
    """A secret's type defaults to Opaque, and stringData is folded into data (its values
    win), never stored: upstream's conversion of v1.Secret."""
    if not secret.type:
        secret.type = "Opaque"
    for key, value in secret.string_data.items():
        secret.data[key] = value.encode()
    secret.ClearField("string_data")


def keep_allocated(new: Any, old: Any) -> None:
    """An update that leaves out what was allocated keeps it (upstream's
    patchAllocatedValues): the cluster IPs, and each node port of a port still there.
    What the new type does not use and the client left as it was is dropped (upstream's
    dropTypeDependentFields): node ports and externalTrafficPolicy off NodePort and
    LoadBalancer, allocateLoadBalancerNodePorts off LoadBalancer, the cluster IPs of a
    service turned ExternalName."""
    spec, was = new.spec, old.spec
    external_now = spec.type in ("NodePort", "LoadBalancer")
    traffic_policy_now = externally_accessible(spec)
    if spec.type == "ExternalName" and was.type != "ExternalName":
        if spec.cluster_ip == was.cluster_ip:
            spec.cluster_ip = ""
            del spec.cluster_ips[:]
        if list(spec.ip_families) == list(was.ip_families):
            del spec.ip_families[:]
        if spec.HasField("ip_family_policy") and spec.ip_family_policy == was.ip_family_policy:
            spec.ClearField("ip_family_policy")
    elif spec.type != "ExternalName" and not spec.cluster_ip and was.cluster_ip:
        spec.cluster_ip = was.cluster_ip
        spec.cluster_ips[:] = was.cluster_ips
    old_ports = {(p.port, p.protocol or "TCP"): p.node_port for p in was.ports}
    for p in spec.ports:
        kept = old_ports.get((p.port, p.protocol or "TCP"), 0)
        if external_now and not p.node_port:
            p.node_port = kept
        elif not external_now and p.node_port and p.node_port == kept:
            p.node_port = 0
    if not traffic_policy_now and spec.external_traffic_policy == was.external_traffic_policy:
        spec.external_traffic_policy = ""
    if (
        spec.type != "LoadBalancer"
        and spec.HasField("allocate_load_balancer_node_ports")
        and was.HasField("allocate_load_balancer_node_ports")
    ):
        spec.ClearField("allocate_load_balancer_node_ports")


# --------------------------------------------------------------- allocation


def ip_key(ip: str) -> str:
    return SERVICE_IPS_PREFIX + ip


def node_port_key(port: int) -> str:
    return f"{NODE_PORTS_PREFIX}{port}"


def allocation_keys(svc: Any) -> list[str]:
    """The keys a service holds: its cluster IP and its node ports."""
    keys = []
    if svc.spec.cluster_ip and not _is_headless(svc.spec):
        keys.append(ip_key(svc.spec.cluster_ip))
    keys += [node_port_key(p) for p in sorted({p.node_port for p in svc.spec.ports if p.node_port})]
    return keys


def _needs_node_ports(spec: Any) -> bool:
    if spec.type == "NodePort":
        return True
    return spec.type == "LoadBalancer" and (
        not spec.HasField("allocate_load_balancer_node_ports")
        or spec.allocate_load_balancer_node_ports
    )


async def _pick(
    storage: Storage, candidates: Sequence[str], prefix: str, taken_now: set[str]
) -> str | None:
    """A free value among `candidates`: a few random tries, then every free one."""
    for _ in range(min(_RANDOM_TRIES, len(candidates))):
        value = random.choice(candidates)
        if value not in taken_now and await storage.get(prefix + value) is None:
            return value
    kvs, _ = await storage.list(prefix)
    taken = {kv.key[len(prefix) :] for kv in kvs} | taken_now
    free = [c for c in candidates if c not in taken]
    return random.choice(free) if free else None


async def allocate(
    storage: Storage, net: ServiceNetwork, svc: Any, held: frozenset[str] = frozenset()
) -> list[str]:
    """Give the service a cluster IP and node ports where it needs them and has none;
    check the ones it asks for are in range and free (`held`: the keys the service holds
    already, on an update). Returns the keys it chose itself (retried on a lost race),
    InvalidError with upstream's messages otherwise."""
    spec = svc.spec
    chosen: list[str] = []
    errs: list[FieldError] = []
    network = net.network
    if spec.type != "ExternalName" and not _is_headless(spec):
        if spec.cluster_ip:
            ip = ipaddress.ip_address(spec.cluster_ip)
            why = ""
            if ip not in network or ip in (network.network_address, network.broadcast_address):
                why = (
                    f"the provided IP ({spec.cluster_ip}) is not in the valid range. "
                    f"The range of valid IPs is {net.cidr}"
                )
            elif ip_key(spec.cluster_ip) not in held and await storage.get(ip_key(spec.cluster_ip)):
                why = "provided IP is already allocated"
            if why:
                errs.append(
                    invalid(
                        "spec.clusterIPs",
                        f'[]string{{"{spec.cluster_ip}"}}',
                        f"failed to allocate IP {spec.cluster_ip}: {why}",
                    )
                )
        else:
            ip_text = await _pick_ip(storage, network)
            if ip_text is None:
                errs.append(
                    invalid(
                        "spec.clusterIPs",
                        "[]string{}",
                        "failed to allocate a serviceIP: range is full",
                    )
                )
            else:
                spec.cluster_ip = ip_text
                del spec.cluster_ips[:]
                spec.cluster_ips.append(ip_text)
                chosen.append(ip_key(ip_text))
    if _needs_node_ports(spec):
        lo, hi = net.node_ports
        mine: dict[int, int] = {}
        for i, p in enumerate(spec.ports):
            if not p.node_port:
                continue
            path = f"spec.ports[{i}].nodePort"
            if not lo <= p.node_port <= hi:
                errs.append(
                    invalid(
                        path,
                        p.node_port,
                        f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}",
                    )
                )
            elif (
                p.node_port not in mine
                and node_port_key(p.node_port) not in held
                and await storage.get(node_port_key(p.node_port)) is not None
            ):
                errs.append(invalid(path, p.node_port, "provided port is already allocated"))
            mine[p.node_port] = i
        candidates = [str(n) for n in range(lo, hi + 1)]
        taken_now = {str(n) for n in mine}
        for i, p in enumerate(spec.ports):
            if p.node_port:
                continue
            picked = await _pick(storage, candidates, NODE_PORTS_PREFIX, taken_now)
            if picked is None:
                errs.append(
                    invalid(
                        f"spec.ports[{i}].nodePort",
                        0,
                        "failed to allocate a nodePort: range is full",
                    )
                )
                continue
            p.node_port = int(picked)
            taken_now.add(picked)
            chosen.append(node_port_key(p.node_port))
    if errs:
        raise InvalidError("Service", svc.metadata.name, errs)
    return chosen


async def _pick_ip(storage: Storage, network: ipaddress.IPv4Network) -> str | None:
    first = int(network.network_address) + 1
    last = int(network.broadcast_address) - 1
    for _ in range(_RANDOM_TRIES):
        ip = str(ipaddress.IPv4Address(random.randint(first, last)))
        if await storage.get(ip_key(ip)) is None:
            return ip
    kvs, _ = await storage.list(SERVICE_IPS_PREFIX)
    taken = {kv.key[len(SERVICE_IPS_PREFIX) :] for kv in kvs}
    for n in range(first, last + 1):
        ip = str(ipaddress.IPv4Address(n))
        if ip not in taken:
            return ip
    return None


def allocation_ops(kind: Kind, obj: Message) -> tuple[list[Compare], list[Put]]:
    """The compares (each value still free) and puts (now held) of a service's create txn."""
    if kind.kind != "Service":
        return [], []
    svc: Any = obj
    owner = f"{svc.metadata.namespace}/{svc.metadata.name}".encode()
    keys = allocation_keys(svc)
    return [Compare(k, "create", "==", 0) for k in keys], [Put(k, owner) for k in keys]


def update_ops(kind: Kind, new: Message, old: Message) -> tuple[list[Compare], list[Put | Delete]]:
    """An update's allocation changes: the values it newly holds (compared free, put) and
    the ones it gave up (deleted), in the update's txn."""
    if kind.kind != "Service":
        return [], []
    now, before = set(allocation_keys(new)), set(allocation_keys(old))
    svc: Any = new
    owner = f"{svc.metadata.namespace}/{svc.metadata.name}".encode()
    added = sorted(now - before)
    return (
        [Compare(k, "create", "==", 0) for k in added],
        [*(Put(k, owner) for k in added), *(Delete(k) for k in sorted(before - now))],
    )


def release_ops(kind: Kind, obj: Message) -> list[Delete]:
    """The deletes that free a service's allocations, in the txn that removes it."""
    if kind.kind != "Service":
        return []
    return [Delete(k) for k in allocation_keys(obj)]


def allocation_gets(kind: Kind, obj: Message) -> list[Get]:
    return [Get(k) for k in allocation_keys(obj)] if kind.kind == "Service" else []


def forget(svc: Any, keys: Sequence[str]) -> None:
    """Drop the values of `keys` from the service, so that `allocate` picks new ones."""
    for key in keys:
        if key.startswith(SERVICE_IPS_PREFIX):
            svc.spec.cluster_ip = ""
            del svc.spec.cluster_ips[:]
        else:
            port = int(key[len(NODE_PORTS_PREFIX) :])
            for p in svc.spec.ports:
                if p.node_port == port:
                    p.node_port = 0


class AllocationLostError(InvalidError):
    """A create's txn found values it allocated taken by another create in between."""

    def __init__(self, name: str, errors: list[FieldError], keys: Sequence[str]) -> None:
        super().__init__("Service", name, errors)
        self.keys = list(keys)


def allocation_refusal(obj: Message, taken: Sequence[str]) -> AllocationLostError:
    """The 422 a create gets when a value it asked for was taken between its check and
    its txn."""
    svc: Any = obj
    errs: list[FieldError] = []
    for key in taken:
        if key.startswith(SERVICE_IPS_PREFIX):
            ip = key[len(SERVICE_IPS_PREFIX) :]
            errs.append(
                invalid(
                    "spec.clusterIPs",
                    f'[]string{{"{ip}"}}',
                    f"failed to allocate IP {ip}: provided IP is already allocated",
                )
            )
        else:
            port = int(key[len(NODE_PORTS_PREFIX) :])
            i = next(i for i, p in enumerate(svc.spec.ports) if p.node_port == port)
            errs.append(
                invalid(f"spec.ports[{i}].nodePort", port, "provided port is already allocated")
            )
    return AllocationLostError(svc.metadata.name, errs, taken)
