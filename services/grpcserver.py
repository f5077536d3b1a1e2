"""Starting a component's grpc.aio server, one way for all (apiserver, scheduler, node
pools): loopback by default, an ephemeral port unless one is asked for, and SO_REUSEPORT
off so two servers can never share a port silently."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import grpc

MAX_MESSAGE = 256 * 1024 * 1024


async def start_server(
    register: Callable[[grpc.aio.Server], None],
    what: str,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    large_messages: bool = False,
) -> tuple[grpc.aio.Server, int]:
    """A started server with the servicer(s) `register` adds; returns it and its port.
    `what` names the component in the error when the address cannot be bound."""
    options: Sequence[tuple[str, int]] = [("grpc.so_reuseport", 0)]
    if large_messages:
        options = [
            *options,
            ("grpc.max_receive_message_length", MAX_MESSAGE),
            ("grpc.max_send_message_length", MAX_MESSAGE),
        ]
    server = grpc.aio.server(options=list(options))
    register(server)
    bound = server.add_insecure_port(f"{host}:{port}")
    if bound == 0:
        raise OSError(f"could not bind {what} to {host}:{port}")
    await server.start()
    return server, bound
