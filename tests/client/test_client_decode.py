"""The client never hands its caller a protobuf exception: an object the apiserver sends
that does not decode raises CorruptObjectError (an ApiError), so an informer's loop
relists instead of dying. The apiserver here is a fake that sends such bytes on purpose
(the real one decodes at intake and never does)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from google.protobuf import any_pb2

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from services.api.machinery import codec
from services.api.machinery.errors import CorruptObjectError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.client import Client
from services.client.informer import Informer
from services.grpcserver import start_server
from tests.builders import pod
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
BAD = any_pb2.Any(type_url=PODS.type_url, value=b"\x0a\xff\xff\xff\xff\x0f")
UNKNOWN_TYPE = any_pb2.Any(type_url="type.googleapis.com/kubera.v1.Nope", value=b"")


class Garbling(pb_grpc.ApiServerServicer):
    """Lists one good pod; everything else answers objects that do not decode."""

    def __init__(self) -> None:
        self.lists = 0

    async def Get(self, request: Any, context: Any) -> pb.ObjectResponse:
        return pb.ObjectResponse(object=BAD if request.name == "bad" else UNKNOWN_TYPE)

    async def List(self, request: Any, context: Any) -> pb.ListResponse:
        self.lists += 1
        good = pod("good")
        good.metadata.resource_version = "5"  # type: ignore[attr-defined]
        items = [codec.pack(good)] + ([BAD] if request.label_selector == "bad" else [])
        return pb.ListResponse(items=items, resource_version="5")

    async def Watch(self, request: Any, context: Any) -> AsyncIterator[pb.WatchEvent]:
        yield pb.WatchEvent(type="ADDED", object=BAD)


@pytest.fixture
async def garbling() -> AsyncIterator[tuple[Garbling, Client]]:
    fake = Garbling()
    server, port = await start_server(
        lambda s: pb_grpc.add_ApiServerServicer_to_server(fake, s), "a fake apiserver"
    )
    client = Client(f"127.0.0.1:{port}", timeout=5)
    try:
        yield fake, client
    finally:
        await client.close()
        await server.stop(0)


async def _watch_first(c: Client) -> None:
    async for _ in c.watch(PODS):
        pass


CALLS: list[tuple[str, Callable[[Client], Awaitable[Any]], str]] = [
    ("get-garbage", lambda c: c.get(PODS, "bad", "default"), "get pods bad: "),
    ("get-unknown-type", lambda c: c.get(PODS, "x", "default"), "unknown object type"),
    ("list", lambda c: c.list(PODS, options=ListOptions(label_selector="bad")), "list pods: "),
    ("watch", _watch_first, "watch pods: "),
]


@pytest.mark.parametrize(
    ("call", "words"), [(c[1], c[2]) for c in CALLS], ids=[c[0] for c in CALLS]
)
async def test_an_object_that_does_not_decode_raises_corrupt_object_error(
    garbling: tuple[Garbling, Client], call: Callable[[Client], Awaitable[Any]], words: str
) -> None:
    _, client = garbling
    with pytest.raises(CorruptObjectError) as e:
        await call(client)
    assert words in e.value.message
    assert "does not decode" in e.value.message


async def test_an_informer_relists_after_an_undecodable_event_and_keeps_running(
    garbling: tuple[Garbling, Client],
) -> None:
    fake, client = garbling
    inf = Informer(client, PODS)
    task = asyncio.create_task(inf.run())
    try:
        await eventually(lambda: fake.lists >= 3)
        assert list(inf.store) == ["default/good"]
        assert inf.relists >= 2 and not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
