"""An informer whose watch breaks inside a revision (one etcd revision holds many events:
BatchCreate, BindBatch) resumes from the last revision it received whole, and hands no
event to its handlers twice. The apiserver is a fake that serves a scripted history the
way the real watch cache does ("every event after rv") and breaks the first stream after
a given number of messages."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from itertools import groupby
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.client.informer import Handlers, Informer
from services.grpcserver import start_server
from tests.builders import pod
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
LISTED_AT = 5

#: (revision, type, pod, node): revision 7 is a BatchCreate, 8 a BindBatch.
HISTORY = [
    (6, "ADDED", "a", ""),
    (7, "ADDED", "b", ""),
    (7, "ADDED", "c", ""),
    (7, "ADDED", "d", ""),
    (8, "MODIFIED", "b", "n1"),
    (8, "MODIFIED", "c", "n1"),
    (8, "MODIFIED", "a", "n2"),
    (9, "DELETED", "d", ""),
    (10, "ADDED", "e", ""),
]
HANDLED = [
    ("add", "a"),
    ("add", "b"),
    ("add", "c"),
    ("add", "d"),
    ("update", "b"),
    ("update", "c"),
    ("update", "a"),
    ("delete", "d"),
    ("add", "e"),
]


def _event(rev: int, type_: str, name: str, node: str) -> pb.WatchEvent:
    p = pod(name)
    p.metadata.resource_version = str(rev)
    p.spec.node_name = node
    return pb.WatchEvent(type=type_, object=codec.pack(p))


class Scripted(pb_grpc.ApiServerServicer):
    """Lists nothing at LISTED_AT; watches replay HISTORY after the requested revision,
    the first one broken (UNAVAILABLE) after `cut` messages. `batched`: WatchBatches
    sends one message per revision; else the server has only Watch, one per event."""

    def __init__(self, cut: int, *, batched: bool) -> None:
        self.cut = cut
        self.batched = batched
        self.requested: list[str] = []

    async def List(self, request: Any, context: Any) -> pb.ListResponse:
        return pb.ListResponse(resource_version=str(LISTED_AT))

    def _after(self, rv: str) -> list[tuple[int, str, str, str]]:
        self.requested.append(rv)
        return [h for h in HISTORY if h[0] > int(rv)]

    async def _end(self, first: bool, context: Any) -> None:
        if first:
            await context.abort(grpc.StatusCode.UNAVAILABLE, "connection reset (scripted)")
        await asyncio.Event().wait()  # caught up: the stream stays open

    async def Watch(self, request: Any, context: Any) -> AsyncIterator[pb.WatchEvent]:
        if self.batched:
            raise AssertionError("Watch called though WatchBatches exists")
        first = not self.requested
        events = self._after(request.resource_version)
        for i, h in enumerate(events):
            if first and i == self.cut:
                break
            yield _event(*h)
        await self._end(first, context)

    async def WatchBatches(self, request: Any, context: Any) -> AsyncIterator[pb.WatchEventBatch]:
        if not self.batched:
            await context.abort(grpc.StatusCode.UNIMPLEMENTED, "Method not implemented!")
        first = not self.requested
        events = self._after(request.resource_version)
        for i, (_, group) in enumerate(groupby(events, key=lambda h: h[0])):
            if first and i == self.cut:
                break
            yield pb.WatchEventBatch(events=[_event(*h) for h in group])
        await self._end(first, context)


def _resumed_from(sent: list[tuple[int, str, str, str]], whole: bool) -> str:
    """The revision the informer must resume from after receiving `sent`: the last one
    it knows it holds whole (a later event began, or its batch ended)."""
    revs = sorted({h[0] for h in sent})
    if not revs:
        return str(LISTED_AT)
    complete = revs if whole else revs[:-1]
    return str(complete[-1]) if complete else str(LISTED_AT)


CASES = [(False, cut) for cut in range(len(HISTORY) + 1)] + [
    (True, cut) for cut in range(len({h[0] for h in HISTORY}) + 1)
]


@pytest.mark.parametrize(
    ("batched", "cut"), CASES, ids=[f"{'batched' if b else 'plain'}-cut{c}" for b, c in CASES]
)
async def test_a_stream_cut_inside_a_revision_resumes_from_the_last_whole_one(
    batched: bool, cut: int
) -> None:
    fake = Scripted(cut, batched=batched)
    server, port = await start_server(
        lambda s: pb_grpc.add_ApiServerServicer_to_server(fake, s), "a scripted apiserver"
    )
    client = Client(f"127.0.0.1:{port}", timeout=5)
    handled: list[tuple[str, str]] = []
    inf = Informer(client, PODS)
    inf.add_handlers(
        Handlers(
            on_add=lambda o: handled.append(("add", o.metadata.name)),
            on_update=lambda old, new: handled.append(("update", new.metadata.name)),
            on_delete=lambda o: handled.append(("delete", o.metadata.name)),
        )
    )
    task = asyncio.create_task(inf.run())
    try:
        await eventually(lambda: len(handled) >= len(HANDLED) and len(fake.requested) >= 2)
        assert handled == HANDLED  # each event once, in order
        if batched:
            sent = [h for h in HISTORY if h[0] in sorted({h[0] for h in HISTORY})[:cut]]
        else:
            sent = HISTORY[:cut]
        assert fake.requested == [str(LISTED_AT), _resumed_from(sent, whole=batched)]
        assert sorted(inf.store) == ["default/a", "default/b", "default/c", "default/e"]
        assert inf.store["default/a"].spec.node_name == "n2"  # type: ignore[attr-defined]
        assert inf.batched is batched
        if batched:  # its last message ended at revision 10: complete
            assert inf.resource_version == "10"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await client.close()
        await server.stop(0)


def _bookmark(rev: int) -> Any:
    p = pod("")
    p.metadata.resource_version = str(rev)
    return p


@pytest.mark.parametrize("batched", [True, False])
async def test_a_bookmark_moves_the_resume_point_up_and_never_down(batched: bool) -> None:
    """A bookmark says every event up to its revision was sent: the informer resumes from
    it (so a selective watch does not fall out of the watch cache's window), and a later
    event does not move the resume point back below it."""
    inf = Informer(client=None, kind=PODS)  # type: ignore[arg-type]
    inf.resource_version = "100"
    seen: list[str] = []

    def step(type_: str, obj: Any) -> None:
        ev = type("Ev", (), {"type": type_, "object": obj})()
        inf._apply_batch([ev], whole=batched)
        seen.append(inf.resource_version)

    p = pod("a")
    p.metadata.resource_version = "101"
    step("ADDED", p)
    step("BOOKMARK", _bookmark(150))
    q = pod("b")
    q.metadata.resource_version = "151"
    step("ADDED", q)
    step("BOOKMARK", _bookmark(140))  # older than what was seen: ignored
    assert seen[1] == "150"
    assert all(int(a) <= int(b) for a, b in zip(seen, seen[1:], strict=False)), seen
    assert seen[-1] == ("151" if batched else "150")
    assert set(inf.store) == {"default/a", "default/b"}
