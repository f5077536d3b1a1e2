"""The node pool's gRPC edge refuses usage it cannot hold with INVALID_ARGUMENT naming the
resource, and passes what it can to the pool."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import nodepool_pb2 as pb
from protos.kubera.v1 import nodepool_pb2_grpc as pb_grpc
from services.kubelet.server import serve


class RecordingPool:
    def __init__(self) -> None:
        self.injected: list[tuple[list[str], dict[str, int]]] = []

    def inject(self, names: Any, usage: dict[str, int]) -> list[str]:
        self.injected.append((list(names), usage))
        return list(names)


@pytest.fixture
async def edge() -> AsyncIterator[tuple[pb_grpc.NodePoolStub, RecordingPool]]:
    pool = RecordingPool()
    server, port = await serve(pool)  # type: ignore[arg-type]
    channel = grpc.aio.insecure_channel(f"127.0.0.1:{port}")
    try:
        yield pb_grpc.NodePoolStub(channel), pool
    finally:
        await channel.close()
        await server.stop(0.2)


@pytest.mark.parametrize(
    ("usage", "message"),
    [
        (
            {"memory": "1e400"},
            "usage.memory: '1e400': must be at most 9223372036854775807m "
            "(kubera holds quantities as int64 milli-units)",
        ),
        ({"pids": "-5"}, "usage.pids: '-5': must not be negative"),
        ({"memory": "lots"}, "usage.memory: 'lots': quantities must match"),
    ],
)
async def test_usage_the_pool_cannot_hold_is_invalid_argument(
    edge: tuple[pb_grpc.NodePoolStub, RecordingPool], usage: dict[str, str], message: str
) -> None:
    stub, pool = edge
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await stub.InjectUsage(pb.InjectUsageRequest(nodes=["n1"], usage=usage))
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (info.value.details() or "").startswith(message)
    assert pool.injected == []


async def test_usage_it_can_hold_reaches_the_pool(
    edge: tuple[pb_grpc.NodePoolStub, RecordingPool],
) -> None:
    stub, pool = edge
    reply = await stub.InjectUsage(pb.InjectUsageRequest(nodes=["n1"], usage={"memory": "8Pi"}))
    assert list(reply.nodes) == ["n1"]
    assert pool.injected == [(["n1"], {"memory": 8 * 2**50})]
