"""Bind coalescing (services/client/binds.py) against a fake BindBatch: what goes in which
call, and that each caller gets its own result or its own error."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ConflictError, NotFoundError, UnavailableError
from services.client.binds import BindCoalescer
from services.client.client import _decode, error_from_status


class FakeServer:
    """Answers each BindBatch when the test releases it: pods named "missing*" are not
    found, "taken*" conflict; the rest are bound (the pod is the request's name)."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.release: list[asyncio.Event] = []
        self.fail: Exception | None = None
        self.arrived = asyncio.Event()

    async def send(self, req: pb.BindBatchRequest) -> pb.BindBatchResponse:
        self.calls.append([b.name for b in req.binds])
        gate = asyncio.Event()
        self.release.append(gate)
        self.arrived.set()
        await gate.wait()
        if self.fail is not None:
            raise self.fail
        out = pb.BindBatchResponse()
        for b in req.binds:
            if b.name.startswith("missing"):
                out.results.add(
                    code=grpc.StatusCode.NOT_FOUND.value[0],
                    message=f"{b.name} not found",
                    reason="NotFound",
                )
            elif b.name.startswith("taken"):
                out.results.add(
                    code=grpc.StatusCode.ABORTED.value[0], message="conflict", reason="Conflict"
                )
            else:
                r = out.results.add(code=0)
                r.object.type_url = "type.googleapis.com/kubera.v1.Pod"
                p = core_pb2.Pod()
                p.metadata.name = b.name
                p.spec.node_name = b.node_name
                r.object.value = p.SerializeToString()
        return out

    async def next_call(self) -> None:
        while len(self.release) == sum(g.is_set() for g in self.release):
            self.arrived.clear()
            await self.arrived.wait()


def coalescer(server: FakeServer, **kw: Any) -> BindCoalescer:
    return BindCoalescer(server.send, error_from_status, _decode, **kw)


def req(name: str) -> pb.BindRequest:
    return pb.BindRequest(namespace="default", name=name, node_name="n1")


async def test_binds_arriving_during_a_call_go_together_in_the_next() -> None:
    server = FakeServer()
    c = coalescer(server, max_in_flight=1, max_batch=3)
    names = ["a", "missing1", "b", "taken1", "c", "d"]
    tasks = [asyncio.create_task(c.bind(req(n))) for n in names]
    await server.next_call()
    assert server.calls == [["a"]]  # the first goes at once, alone
    server.release[0].set()
    await server.next_call()
    assert server.calls[1] == ["missing1", "b", "taken1"]  # gathered, at most max_batch
    server.release[1].set()
    await server.next_call()
    assert server.calls[2] == ["c", "d"]
    server.release[2].set()
    got = await asyncio.gather(*tasks, return_exceptions=True)
    assert [type(g).__name__ for g in got] == [
        "Pod",
        "NotFoundError",
        "Pod",
        "ConflictError",
        "Pod",
        "Pod",
    ]
    assert [g.metadata.name for g in got if not isinstance(g, Exception)] == ["a", "b", "c", "d"]  # type: ignore[attr-defined]
    assert isinstance(got[1], NotFoundError) and got[1].message == "missing1 not found"
    assert isinstance(got[3], ConflictError)
    assert (c.calls, c.binds) == (3, 6)


async def test_a_failed_call_fails_each_of_its_binds_with_its_own_error() -> None:
    server = FakeServer()
    c = coalescer(server, max_in_flight=1)
    first = asyncio.create_task(c.bind(req("a")))
    await server.next_call()
    rest = [asyncio.create_task(c.bind(req(n))) for n in ("b", "c")]
    server.fail = UnavailableError("apiserver unavailable: connection refused")
    server.release[0].set()
    await server.next_call()
    server.release[1].set()
    got = await asyncio.gather(first, *rest, return_exceptions=True)
    assert all(isinstance(g, UnavailableError) for g in got)
    assert len({id(g) for g in got}) == 3  # one exception object per caller
    assert got[1].message == "apiserver unavailable: connection refused"  # type: ignore[union-attr]


async def test_a_caller_cancelled_while_queued_is_not_sent() -> None:
    server = FakeServer()
    c = coalescer(server, max_in_flight=1)
    first = asyncio.create_task(c.bind(req("a")))
    await server.next_call()
    gone = asyncio.create_task(c.bind(req("gone")))
    kept = asyncio.create_task(c.bind(req("kept")))
    await asyncio.sleep(0)  # let both queue
    gone.cancel()
    server.release[0].set()
    await server.next_call()
    assert server.calls[1] == ["kept"]
    server.release[1].set()
    assert (await kept).metadata.name == "kept"  # type: ignore[attr-defined]
    await first
    with pytest.raises(asyncio.CancelledError):
        await gone


async def test_two_calls_in_flight_by_default() -> None:
    server = FakeServer()
    c = coalescer(server)
    tasks = [asyncio.create_task(c.bind(req(n))) for n in ("a", "b", "c")]
    await server.next_call()
    assert server.calls == [["a"], ["b"]]  # both sent before either answered
    for g in server.release:
        g.set()
    await server.next_call()
    server.release[2].set()
    assert [p.metadata.name for p in await asyncio.gather(*tasks)] == ["a", "b", "c"]  # type: ignore[attr-defined]
