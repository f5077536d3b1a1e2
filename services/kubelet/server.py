"""A node pool's gRPC edge: chaos (`kubera chaos kill-node/revive-node`), usage injection
and figures. The pool itself knows nothing of gRPC."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence

import grpc

from protos.kubera.v1 import nodepool_pb2 as pb
from protos.kubera.v1 import nodepool_pb2_grpc as pb_grpc
from services.api.helpers.usage import RESOURCES
from services.api.machinery.quantity import ERR_BEYOND_INT64_MILLI, QuantityError, parse_quantity
from services.grpcserver import start_server
from services.kubelet.pool import NodePool


class NodePoolServicer(pb_grpc.NodePoolServicer):
    def __init__(self, pool: NodePool) -> None:
        self.pool = pool

    async def SetAlive(
        self, request: pb.SetAliveRequest, context: grpc.aio.ServicerContext
    ) -> pb.SetAliveResponse:
        changed, unknown = self.pool.set_alive(request.nodes, request.alive)
        unchanged = [n for n in request.nodes if n not in changed and n not in unknown]
        return pb.SetAliveResponse(changed=changed, unknown=unknown, unchanged=unchanged)

    async def InjectUsage(
        self, request: pb.InjectUsageRequest, context: grpc.aio.ServicerContext
    ) -> pb.InjectUsageResponse:
        usage: dict[str, int] = {}
        for name, text in request.usage.items():
            if name not in RESOURCES:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT,
                    f"usage.{name}: unknown resource (expected one of {', '.join(RESOURCES)})",
                )
            try:
                q = parse_quantity(text)
            except QuantityError as e:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"usage.{name}: {text!r}: {e}"
                )
            problem = (
                "must not be negative"
                if q.sign() < 0
                else ERR_BEYOND_INT64_MILLI
                if not q.fits_int64_milli()
                else ""
            )
            if problem:
                await context.abort(
                    grpc.StatusCode.INVALID_ARGUMENT, f"usage.{name}: {text!r}: {problem}"
                )
            usage[name] = q.int_value()
        return pb.InjectUsageResponse(nodes=self.pool.inject(request.nodes, usage))

    async def Stats(
        self, request: pb.PoolStatsRequest, context: grpc.aio.ServicerContext
    ) -> pb.PoolStatsResponse:
        return pb.PoolStatsResponse(json=json.dumps(self.pool.stats()))


async def serve(
    pool: NodePool,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    also: Callable[[grpc.aio.Server], None] | None = None,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """Start the pool's gRPC server (with whatever `also` adds to it: its chaos control).
    `interceptors`: authentication (SetAlive and InjectUsage are the admin's; Stats
    public: see services/hosts/nodepool.py); `credentials`: serve TLS."""

    def register(s: grpc.aio.Server) -> None:
        pb_grpc.add_NodePoolServicer_to_server(NodePoolServicer(pool), s)
        if also is not None:
            also(s)

    return await start_server(
        register,
        "the node pool",
        host,
        port,
        interceptors=interceptors,
        credentials=credentials,
    )
