"""A component's own server (here a replica's chaos control) with `admin_only`: its writes
(Heal, Partition, Kill, Pause) answer the admin's token only, recognised by its sha256;
Status stays open; `token_channel` sends the token on every call."""

from __future__ import annotations

from collections.abc import AsyncIterator

import grpc
import pytest

from protos.kubera.v1 import chaos_pb2 as pb
from protos.kubera.v1 import chaos_pb2_grpc as pb_grpc
from services.auth.grpcauth import CHAOS_STATUS, admin_only, token_channel, token_hash
from services.chaos import serve_control

ADMIN_TOKEN = "the-admins-token"


@pytest.fixture
async def control() -> AsyncIterator[str]:
    server, port = await serve_control(
        [], "id", "test", interceptors=admin_only(token_hash(ADMIN_TOKEN), public=(CHAOS_STATUS,))
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        await server.stop(0)


@pytest.mark.parametrize(
    ("token", "code"),
    [
        ("", grpc.StatusCode.UNAUTHENTICATED),
        ("a-schedulers-token", grpc.StatusCode.UNAUTHENTICATED),
        (token_hash(ADMIN_TOKEN), grpc.StatusCode.UNAUTHENTICATED),  # the hash is no token
        (ADMIN_TOKEN, grpc.StatusCode.OK),
    ],
)
async def test_control_writes_answer_the_admin_only(
    control: str, token: str, code: grpc.StatusCode
) -> None:
    async with token_channel(control, token) as ch:
        stub = pb_grpc.ChaosStub(ch)
        try:
            await stub.Heal(pb.HealRequest(), timeout=5)
            got = grpc.StatusCode.OK
        except grpc.aio.AioRpcError as e:
            got = e.code()
        assert got == code
        # Status (a process's figures) is open to anyone
        assert (await stub.Status(pb.StatusRequest(), timeout=5)).pid > 0


def test_no_admin_hash_leaves_the_server_open() -> None:
    assert admin_only("") == []
