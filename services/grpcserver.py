"""Starting a component's grpc.aio server, one way for all (apiserver, scheduler, node
pools): loopback by default, an ephemeral port unless one is asked for, SO_REUSEPORT
off so two servers can never share a port silently, and one guard at the edge.

The guard (`RequestDecodeGuard`) is the one place an undecodable request is answered:
grpc.aio runs the generated request deserializer (`XRequest.FromString`) before any
servicer code, and when it raises, the call ends UNKNOWN ("Unexpected DecodeError") with
no hook in between. The guard is a server interceptor that wraps each method handler's
deserializer so it never raises (it returns an `Undecodable` instead) and the handler's
behaviour so an `Undecodable` request ends INVALID_ARGUMENT naming the request type and
what protobuf said, before the servicer runs. Messages over the size cap never reach it:
gRPC answers RESOURCE_EXHAUSTED itself ("Received message larger than max (N vs. M)").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import grpc

from services.api.machinery.limits import MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES

#: How soon a channel dials again after losing its server (a restarted apiserver, back on
#: its address; a restarted etcd, back on its ports): gRPC's defaults (1 s, x1.6, up to
#: 120 s) leave a client idle for seconds after its server is back, and longer the more it
#: was asked while down. Dial again after 0.1 s, then at least every 0.25 s (a refused dial
#: on loopback costs microseconds). For every channel kubera opens to the apiserver and etcd.
RECONNECT_OPTIONS = (
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.min_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", 250),
)


@dataclass(frozen=True, slots=True)
class Undecodable:
    """A request whose bytes did not decode: what it should have been, and why not."""

    method: str
    error: str

    @property
    def message(self) -> str:
        return f"{self.method}: the request does not decode: {self.error}"


def _safe(deserializer: Callable[[bytes], Any], method: str) -> Callable[[bytes], Any]:
    def deserialize(data: bytes) -> Any:
        try:
            return deserializer(data)
        except Exception as e:  # noqa: BLE001 - any failure to decode is the client's
            return Undecodable(method, str(e) or type(e).__name__)

    return deserialize


class RequestDecodeGuard(grpc.aio.ServerInterceptor):
    """Undecodable requests end INVALID_ARGUMENT (see the module docstring)."""

    def __init__(self) -> None:
        #: method -> (the handler grpc found, its guarded copy): built once per method.
        self._guarded: dict[str, tuple[grpc.RpcMethodHandler, grpc.RpcMethodHandler]] = {}

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(handler_call_details)
        if handler is None or handler.request_deserializer is None:
            return handler
        method = handler_call_details.method  # type: ignore[attr-defined]
        known = self._guarded.get(method)
        if known is None or known[0] is not handler:
            known = (handler, self._guard(handler, method))
            self._guarded[method] = known
        return known[1]

    @staticmethod
    def _guard(handler: grpc.RpcMethodHandler, method: str) -> grpc.RpcMethodHandler:
        deserialize = _safe(handler.request_deserializer, method)
        if handler.unary_unary is not None:
            unary = handler.unary_unary

            async def unary_unary(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if isinstance(request, Undecodable):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
                return await unary(request, context)

            return handler._replace(  # type: ignore[attr-defined,no-any-return]
                unary_unary=unary_unary, request_deserializer=deserialize
            )
        if handler.unary_stream is not None:
            stream = handler.unary_stream

            async def unary_stream(request: Any, context: grpc.aio.ServicerContext) -> Any:
                if isinstance(request, Undecodable):
                    await context.abort(grpc.StatusCode.INVALID_ARGUMENT, request.message)
                async for item in stream(request, context):
                    yield item

            return handler._replace(  # type: ignore[attr-defined,no-any-return]
                unary_stream=unary_stream, request_deserializer=deserialize
            )
        # Request-streaming methods: kubera's protos have none; left as grpc runs them.
        return handler


async def start_server(
    register: Callable[[grpc.aio.Server], None],
    what: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    large_messages: bool = False,
    interceptors: Sequence[grpc.aio.ServerInterceptor] = (),
    credentials: grpc.ServerCredentials | None = None,
) -> tuple[grpc.aio.Server, int]:
    """A started server with the servicer(s) `register` adds; returns it and its port.
    `what` names the component in the error when the address cannot be bound.
    `large_messages`: requests up to MAX_REQUEST_BYTES (gRPC's default is 4 MiB) and
    responses up to MAX_RESPONSE_BYTES (a whole cluster's list, the apiserver's).
    `interceptors` run before the decode guard (authentication: services/auth/grpcauth.py,
    so an unauthenticated caller learns nothing about its request); `credentials`: serve
    TLS (grpc.ssl_server_credentials) instead of plaintext."""
    options: Sequence[tuple[str, int]] = [("grpc.so_reuseport", 0)]
    if large_messages:
        options = [
            *options,
            ("grpc.max_receive_message_length", MAX_REQUEST_BYTES),
            ("grpc.max_send_message_length", MAX_RESPONSE_BYTES),
        ]
    server = grpc.aio.server(
        options=list(options), interceptors=[*interceptors, RequestDecodeGuard()]
    )
    register(server)
    if credentials is not None:
        bound = server.add_secure_port(f"{host}:{port}", credentials)
    else:
        bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"could not bind {what} to {host}:{port}")
    await server.start()
    return server, bound
