"""The apiserver: `ApiServer(storage, config)` (the registry over a Storage, see registry)
and `serve(api, host, port)` (its gRPC edge, see server)."""

from services.apiserver.config import ApiServerConfig
from services.apiserver.registry import ApiServer, BatchResult, Listed
from services.apiserver.server import serve

__all__ = ["ApiServer", "ApiServerConfig", "BatchResult", "Listed", "serve"]
