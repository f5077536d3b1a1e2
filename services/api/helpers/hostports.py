"""The host ports a pod holds on its node (upstream schedutil.GetHostPorts).

Only containers that run for the pod's whole life hold a host port: the regular containers
and the sidecars (init containers with restartPolicy Always). An ordinary init container has
exited before the pod runs, so its hostPorts neither conflict with other pods nor block
them. NodePorts, the scheduler's NodeInfo and its queueing hints all read this one list.
"""

from __future__ import annotations

from protos.kubera.v1 import core_pb2
from services.api.helpers.resources import is_restartable_init_container

DEFAULT_BIND_ALL_HOST_IP = "0.0.0.0"

#: (hostIP, protocol, hostPort), with "" read as 0.0.0.0 and TCP.
HostPort = tuple[str, str, int]


def host_ports(pod: core_pb2.Pod) -> list[HostPort]:
    """Sidecars' then regular containers' ports with hostPort > 0, sanitised."""
    return [
        (p.host_ip or DEFAULT_BIND_ALL_HOST_IP, p.protocol or "TCP", p.host_port)
        for c in (
            *(c for c in pod.spec.init_containers if is_restartable_init_container(c)),
            *pod.spec.containers,
        )
        for p in c.ports
        if p.host_port > 0
    ]
