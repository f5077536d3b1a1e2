"""The apiserver: `ApiServer(storage, config)` (the registry over a Storage, see registry)
and `serve(api, host, port)` (its gRPC edge, see server). Also public for other components:
`apply_defaults` (the defaulting every create and update gets, for a client-side preview),
`prepare_for_create` (the strategy steps a create takes before validation)
and `decode` (a stored value as an object, for readers of etcd such as the checker).
For the HTTP edge (services/httpapi), which words requests as the gRPC edge does:
`Filter` (a list's or watch's selectors, parsed), `parse_resource_version`, `conflict`
(the update conflict's wording) and `MAX_RETRIES` (read-modify-write retries). For the
authorizer (services/auth): `registry_lookup` (its reads of stored objects). For
`kubera up`: `ServiceNetwork` and `parse_node_port_range` (the service CIDR and node
port range, checked before anything starts), and `DISABLEABLE` / `SCHEDULER_PERF_DISABLED`
(the admission plugins --disable-admission-plugins may name, and upstream scheduler_perf's)."""

from services.apiserver.admission import (
    DISABLEABLE,
    SCHEDULER_PERF_DISABLED,
    apply_defaults,
    prepare_for_create,
)
from services.apiserver.config import ApiServerConfig
from services.apiserver.objects import MAX_RETRIES, Filter, conflict
from services.apiserver.read import parse_resource_version
from services.apiserver.registry import ApiServer, BatchResult, Listed
from services.apiserver.server import registry_lookup, serve
from services.apiserver.serviceips import ServiceNetwork, parse_node_port_range
from services.apiserver.watchcache import decode

__all__ = [
    "DISABLEABLE",
    "SCHEDULER_PERF_DISABLED",
    "ApiServer",
    "ApiServerConfig",
    "BatchResult",
    "Filter",
    "MAX_RETRIES",
    "Listed",
    "ServiceNetwork",
    "apply_defaults",
    "prepare_for_create",
    "conflict",
    "decode",
    "parse_node_port_range",
    "parse_resource_version",
    "registry_lookup",
    "serve",
]
