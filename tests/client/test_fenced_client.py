"""`Client(address, fencing=source)` over real gRPC (in-memory storage): every write
carries the leader's token as gRPC metadata (binds in BindRequest.fencing), the apiserver
refuses it once the term is over, and a client whose source says "not leading" refuses
locally; reads and watches are never fenced."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass

import grpc
import pytest

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import BOUND_BY, METADATA_KEY
from services.api.machinery import codec
from services.api.machinery.errors import PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.client import Client
from services.leaderelection.lock import LockRecord, StorageLock
from services.storage.memory import MemoryStorage
from tests.builders import pod

PODS = BY_KIND["Pod"]
KEY = "/kubera/leaderelection/kube-system/kube-scheduler"


class Source:
    """A fencing source as an elector's `fencing_token` is: the token, or None."""

    def __init__(self) -> None:
        self.token: tuple[str, int] | None = None
        self.calls = 0

    def __call__(self) -> tuple[str, int] | None:
        self.calls += 1
        return self.token


@dataclass
class Setup:
    api: ApiServer
    address: str
    lock: StorageLock
    source: Source
    client: Client  # fenced by `source`

    async def lead(self, identity: str = "a") -> LockRecord:
        held, _ = await self.lock.create(identity)
        assert held is not None
        self.source.token = (held.key, held.create_revision)
        return held

    async def state(self) -> dict[str, int]:
        items, _ = await self.api.storage.list("/registry/")
        return {kv.key: kv.mod_revision for kv in items}


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    storage = MemoryStorage()
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=20, bookmark_interval=0.1))
    await api.start()
    server, port = await serve(api)
    address = f"127.0.0.1:{port}"
    source = Source()
    client = Client(address, timeout=10, fencing=source)
    try:
        yield Setup(api, address, StorageLock(storage, KEY, lease_duration=15), source, client)
    finally:
        await client.close()
        await server.stop(0.2)
        await api.stop()


async def _labelled(c: Client) -> core_pb2.Pod:
    p: core_pb2.Pod = await c.get(PODS, "p", "default")  # type: ignore[assignment]
    p.metadata.labels["written"] = "yes"
    return p


async def _update_status(c: Client) -> object:
    p: core_pb2.Pod = await c.get(PODS, "p", "default")  # type: ignore[assignment]
    p.status.message = "written"
    return await c.update_status(p)


async def _batch_create(c: Client) -> object:
    results = await c.batch_create([pod("b1"), pod("b2")])
    assert all(r.error is None for r in results), results
    return results


async def _batch_update(c: Client) -> object:
    results = await c.batch_update([await _labelled(c)])
    assert all(r.error is None for r in results), results
    return results


async def _update(c: Client) -> object:
    return await c.update(await _labelled(c))


#: Every write the client makes, each on the unbound pod "p".
WRITES: dict[str, Callable[[Client], Awaitable[object]]] = {
    "create": lambda c: c.create(pod("new")),
    "update": _update,
    "update_status": _update_status,
    "patch": lambda c: c.patch(PODS, "p", '{"metadata":{"labels":{"w":"1"}}}', namespace="default"),
    "delete": lambda c: c.delete(PODS, "p", "default"),
    "batch_create": _batch_create,
    "batch_update": _batch_update,
    "bind": lambda c: c.bind("p", "n1", "default"),
}


@pytest.mark.parametrize("write", list(WRITES))
async def test_writes_under_the_current_token_succeed(setup: Setup, write: str) -> None:
    await setup.api.create(pod("p"))
    await setup.lead()
    await WRITES[write](setup.client)
    assert setup.source.calls >= 1


@pytest.mark.parametrize("successor", [None, "b"], ids=["released", "taken-over"])
@pytest.mark.parametrize("write", list(WRITES))
async def test_writes_carry_the_token_and_fail_once_it_is_stale(
    setup: Setup, write: str, successor: str | None
) -> None:
    await setup.api.create(pod("p"))
    held = await setup.lead()
    await setup.lock.release(held)
    if successor is not None:
        await setup.lock.create(successor)
    before = await setup.state()

    with pytest.raises(PreconditionError, match="stale leader"):
        await WRITES[write](setup.client)
    assert await setup.state() == before


async def test_a_bind_records_the_clients_token(setup: Setup) -> None:
    await setup.api.create(pod("p"))
    held = await setup.lead()
    bound = await setup.client.bind("p", "n1", "default")
    assert bound.metadata.annotations[BOUND_BY] == f"fenced {KEY}@{held.create_revision}"  # type: ignore[attr-defined]


@pytest.mark.parametrize("write", list(WRITES))
async def test_not_leading_refuses_locally_without_sending(setup: Setup, write: str) -> None:
    await setup.api.create(pod("p"))
    before = await setup.state()
    with pytest.raises(PreconditionError, match="not the leader"):
        await WRITES[write](setup.client)
    assert setup.source.calls >= 1, "the source was asked"
    assert await setup.state() == before


async def test_not_leading_is_refused_before_any_rpc() -> None:
    # Nothing listens here: a write that were sent would fail as unavailable instead.
    c = Client("127.0.0.1:1", timeout=2, fencing=lambda: None)
    try:
        with pytest.raises(PreconditionError, match="not the leader"):
            await c.create(pod("x"))
        with pytest.raises(PreconditionError, match="not the leader"):
            await c.bind("x", "n1", "default")
    finally:
        await c.close()


@pytest.mark.parametrize("token", ["none", "stale"])
async def test_reads_and_watches_work_whatever_the_token(setup: Setup, token: str) -> None:
    await setup.api.create(pod("p"))
    if token == "stale":
        held = await setup.lead()
        await setup.lock.release(held)
    c = setup.client
    assert (await c.get(PODS, "p", "default")).metadata.name == "p"  # type: ignore[attr-defined]
    items, rv = await c.list(PODS, namespace="default")
    assert [o.metadata.name for o in items] == ["p"]  # type: ignore[attr-defined]
    assert (await c.create(pod("dry"), dry_run=True)).metadata.name == "dry"

    events = c.watch(PODS, namespace="default", options=ListOptions(resource_version=rv))
    nxt = asyncio.ensure_future(anext(events))
    await setup.api.create(pod("q"))
    ev = await asyncio.wait_for(nxt, 5)
    assert (ev.type, ev.object.metadata.name) == ("ADDED", "q")  # type: ignore[attr-defined]
    await events.aclose()  # type: ignore[attr-defined]  # an async generator


async def test_fenced_none_writes_unfenced_on_the_shared_channel(setup: Setup) -> None:
    await setup.api.create(pod("p"))
    held = await setup.lead()
    await setup.lock.release(held)  # the fenced client's token is stale now
    unfenced = setup.client.fenced(None)
    assert unfenced._channel is setup.client._channel
    assert unfenced.fencing is None and setup.client.fencing is setup.source

    await unfenced.create(pod("u"))
    bound = await unfenced.bind("p", "n1", "default")
    assert BOUND_BY not in bound.metadata.annotations  # type: ignore[attr-defined]
    with pytest.raises(PreconditionError, match="stale leader"):
        await setup.client.create(pod("v"))

    # And the other way round: a fenced view of an unfenced client.
    setup.source.token = None
    refused = unfenced.fenced(setup.source)
    with pytest.raises(PreconditionError, match="not the leader"):
        await refused.create(pod("w"))


@pytest.mark.parametrize(
    "token", ["nonsense", f"{KEY}@0", f"{KEY}@-3", "@5", f"{KEY}@x", f"{KEY}@"]
)
async def test_a_malformed_metadata_token_is_invalid_argument(setup: Setup, token: str) -> None:
    before = await setup.state()
    async with grpc.aio.insecure_channel(setup.address) as channel:
        stub = pb_grpc.ApiServerStub(channel)
        request = pb.CreateRequest(resource="pods", object=codec.pack(pod("m")))
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Create(request, metadata=((METADATA_KEY, token),), timeout=5)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "expected <election key>@<create_revision>" in (err.value.details() or "")
    assert f"metadata.{METADATA_KEY}" in (err.value.details() or "")
    assert await setup.state() == before


async def test_a_raw_metadata_token_fences_like_the_client(setup: Setup) -> None:
    await setup.api.create(pod("p"))
    held = await setup.lead()
    async with grpc.aio.insecure_channel(setup.address) as channel:
        stub = pb_grpc.ApiServerStub(channel)
        meta = ((METADATA_KEY, f"{KEY}@{held.create_revision}"),)
        resp = await stub.Bind(
            pb.BindRequest(namespace="default", name="p", node_name="n1"), metadata=meta
        )
        assert codec.unpack(resp.object).metadata.annotations[BOUND_BY] == (  # type: ignore[attr-defined]
            f"fenced {KEY}@{held.create_revision}"
        )
        await setup.lock.release(held)
        with pytest.raises(grpc.aio.AioRpcError) as err:
            await stub.Create(
                pb.CreateRequest(resource="pods", object=codec.pack(pod("m"))), metadata=meta
            )
    assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "stale leader" in (err.value.details() or "")
