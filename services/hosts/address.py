"""Where a component listens and the address it gives out.

A component's config names its host: 127.0.0.1 by default (the embedded cluster stays on
loopback); actors/ sets it to the address of the Ray node the actor runs on, so a
component on another machine is reachable. Two environment variables override it for
every component of a process (set them on a Ray node's `ray start`, or in a container):

    KUBERA_BIND_HOST       the interface to listen on (e.g. 0.0.0.0 in a container)
    KUBERA_ADVERTISE_HOST  the host others dial (e.g. the container's service name)

Without KUBERA_ADVERTISE_HOST the advertised host is the config's host, or the bind host
when the config names none; a wildcard (0.0.0.0, ::) is never advertised.
"""

from __future__ import annotations

import ipaddress
import os
import socket

BIND_ENV = "KUBERA_BIND_HOST"
ADVERTISE_ENV = "KUBERA_ADVERTISE_HOST"
LOOPBACK = "127.0.0.1"
WILDCARDS = ("0.0.0.0", "::", "[::]")


def listen_hosts(host: str) -> tuple[str, str]:
    """(bind, advertise) for a component whose config names `host` ("" = loopback)."""
    bind = os.environ.get(BIND_ENV) or host or LOOPBACK
    advertise = os.environ.get(ADVERTISE_ENV) or ""
    if not advertise:
        for candidate in (host, bind):
            if candidate and candidate not in WILDCARDS:
                advertise = candidate
                break
    if not advertise:
        advertise = socket.gethostbyname(socket.gethostname())
    return bind, advertise


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or "localhost") is on this machine's loopback only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def join(host: str, port: int) -> str:
    """host:port, with brackets around an IPv6 host."""
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else f"{host}:{port}"
