"""The apiserver over real gRPC on real etcd: status codes, watch streams, relist on gone."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from kubera.launch.etcd import EtcdProcess
from services.api.machinery.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    PreconditionError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.client import Client
from services.storage.etcd import EtcdStorage
from tests.builders import pod

pytestmark = pytest.mark.integration
PODS = BY_KIND["Pod"]


@pytest.fixture
async def client(etcd_server: EtcdProcess) -> AsyncIterator[Client]:
    storage = EtcdStorage(etcd_server.endpoint)
    await storage.connect()
    items, _ = await storage.list("/registry/")
    from services.storage import Delete

    for kv in items:
        await storage.txn([], [Delete(kv.key)])
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=20, bookmark_interval=0.2))
    await api.start()
    server, port = await serve(api)
    c = Client(f"127.0.0.1:{port}", timeout=10)
    c.api = api  # type: ignore[attr-defined]  # lets a test wait for the watch cache
    try:
        yield c
    finally:
        await c.close()
        await server.stop(grace=0.5)
        await api.stop()
        await storage.close()


async def test_errors_cross_grpc_as_typed_status_codes(client: Client) -> None:
    await client.create(pod("a"))
    with pytest.raises(AlreadyExistsError, match='pods "a" already exists'):
        await client.create(pod("a"))
    with pytest.raises(NotFoundError, match='pods "zz" not found'):
        await client.get(PODS, "zz", "default")
    stale = await client.get(PODS, "a", "default")
    await client.patch(PODS, "a", '{"metadata":{"labels":{"x":"1"}}}', namespace="default")
    stale.metadata.labels["x"] = "2"
    with pytest.raises(ConflictError, match="the object has been modified"):
        await client.update(stale)
    bad = pod("Bad_Name")
    with pytest.raises(InvalidError, match="metadata.name"):
        await client.create(bad)
    with pytest.raises(BadRequestError, match="field label not supported"):
        await client.list(PODS, options=ListOptions(field_selector="spec.bogus=1"))
    await client.bind("a", "n1", "default")
    with pytest.raises(PreconditionError, match='already assigned to node "n1"'):
        await client.bind("a", "n2", "default")


async def test_fenced_bind_over_grpc(client: Client) -> None:
    await client.create(pod("f"))
    with pytest.raises(PreconditionError, match="stale leader"):
        await client.bind("f", "n1", "default", fencing=("/kubera/election/x", 12345))


async def test_watch_stream_resumes_and_relists_after_gone(client: Client) -> None:
    _, rv = await client.list(PODS)
    for i in range(30):  # more than the 20-event window
        await client.create(pod(f"p{i}"))
    _, now = await client.list(PODS)
    assert await client.api.caches["pods"].wait_revision(int(now), 10)  # type: ignore[attr-defined]

    async def first(rv: str):
        async for ev in client.watch(PODS, options=ListOptions(resource_version=rv)):
            return ev
        return None

    with pytest.raises(GoneError, match="too old resource version"):
        await asyncio.wait_for(first(rv), 10)
    items, rv2 = await client.list(PODS)
    assert len(items) == 30
    await client.create(pod("late"))
    ev = await asyncio.wait_for(first(rv2), 10)
    assert ev is not None and ev.type == "ADDED" and ev.object.metadata.name == "late"


async def test_batch_create_over_grpc(client: Client) -> None:
    res = await client.batch_create([pod(f"b{i}") for i in range(250)] + [pod("b0")])
    assert sum(r.error is None for r in res) == 250
    assert isinstance(res[-1].error, AlreadyExistsError)
