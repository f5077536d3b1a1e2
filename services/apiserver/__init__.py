"""The apiserver: `ApiServer(storage, config)` (the registry over a Storage, see registry)
and `serve(api, host, port)` (its gRPC edge, see server). Also public for other components:
`apply_defaults` (the defaulting every create and update gets, for a client-side preview)
and `decode` (a stored value as an object, for readers of etcd such as the checker),
`registry_lookup` (the authorizer's reads of stored objects, services/auth)."""

from services.apiserver.admission import apply_defaults
from services.apiserver.config import ApiServerConfig
from services.apiserver.registry import ApiServer, BatchResult, Listed
from services.apiserver.server import registry_lookup, serve
from services.apiserver.watchcache import decode

__all__ = [
    "ApiServer",
    "ApiServerConfig",
    "BatchResult",
    "Listed",
    "apply_defaults",
    "decode",
    "registry_lookup",
    "serve",
]
