"""WatchBatches == Watch: for the same history (single writes, and batch txns that put
many events at one revision: BatchCreate, BindBatch), the batched stream carries the same
events in the same order, with the same errors, on the in-memory store and on real etcd;
and no message ends inside a revision."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import BadRequestError, GoneError, ResourceVersionTooLargeError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer, ApiServerConfig, BindItem
from services.apiserver.server import serve
from services.apiserver.watchcache import WatchCache
from services.client import Client
from services.storage import Storage
from tests.builders import pod

PODS = BY_KIND["Pod"]

#: (namespace, label selector, field selector) of the watches compared.
FILTERS = [
    ("", "", ""),
    ("b", "", ""),
    ("", "app=web", ""),
    ("", "", "spec.nodeName=n1"),
]

#: Batch bounds of the batched cache watch: a revision spans up to 5 events here, so a
#: bound of 1 or 2 events is exceeded to keep it whole.
BOUNDS = [(1, 1 << 30), (2, 1 << 30), (1000, 1 << 30), (1000, 1)]


@contextlib.asynccontextmanager
async def apiserver(storage: Storage) -> AsyncIterator[tuple[ApiServer, Client]]:
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=1000, bookmark_interval=0.2))
    await api.start()
    for name in ("a", "b"):
        ns = core_pb2.Namespace()
        ns.metadata.name = name
        await api.create(ns)
    server, port = await serve(api)
    client = Client(f"127.0.0.1:{port}", timeout=10)
    try:
        yield api, client
    finally:
        await client.close()
        await server.stop(0.2)
        await api.stop()


def _pod(name: str, namespace: str = "a", app: str = "web") -> Any:
    p = pod(name, namespace)
    p.metadata.labels["app"] = app
    return p


async def write_history(api: ApiServer) -> int:
    """Single creates, a BatchCreate (5 events at one revision), a BindBatch (4 at one),
    updates and deletes, in two namespaces; returns the last revision written."""
    await api.create(_pod("s0"))
    await api.create(_pod("s1", "b", app="db"))
    created = await api.batch_create(
        [_pod(f"p{i}", "a" if i % 2 else "b", "web" if i % 3 else "db") for i in range(5)]
    )
    assert all(r.error is None for r in created)
    outcomes = await api.bind_batch(
        [BindItem("a", "p1", "n1"), BindItem("b", "p2", "n1"), BindItem("a", "p3", "n2")]
        + [BindItem("b", "p4", "n1")]
    )
    assert all(o.error is None for o in outcomes)
    relabelled = await api.get(PODS, "a", "s0")
    relabelled.metadata.labels["app"] = "db"  # type: ignore[attr-defined]
    await api.update(relabelled)  # leaves the app=web filter: DELETED there
    await api.bind_batch([BindItem("a", "s0", "n1")])
    await api.delete(PODS, "b", "p2", grace_period_seconds=0)
    await api.delete(PODS, "a", "p1", grace_period_seconds=0)
    # The end, in every filter's view: pod "end" bound (namespace b, app=web, node n1).
    await api.create(_pod("end", "b"))
    await api.bind_batch([BindItem("b", "end", "n1"), BindItem("a", "p3", "n9")])
    return await api.storage.revision()


def _is_end(obj: Any) -> bool:
    return bool(obj.metadata.name == "end" and obj.spec.node_name == "n1")


def _key(type_: str, obj: Any) -> tuple[str, str, str, str, str]:
    m = obj.metadata
    return type_, m.namespace, m.name, m.resource_version, obj.spec.node_name


async def _collect(stream: Any, batched: bool) -> list[Any]:
    """Items of `stream` up to pod "end" bound (bookmarks left out)."""
    out: list[Any] = []
    async with contextlib.aclosing(stream):
        async for item in stream:
            events = item if batched else [item]
            out.append([e for e in events if e[0] != "BOOKMARK"] if batched else item)
            if any(_is_end(e[1].obj) for e in events):
                break
    return [x for x in out if x] if batched else out


def _rv(entry: Any) -> int:
    return int(entry.obj.metadata.resource_version)


def _assert_whole_revisions(batches: list[list[Any]]) -> None:
    """No revision continues from one batch into the next."""
    for before, after in zip(batches, batches[1:], strict=False):
        assert _rv(before[-1][1]) < _rv(after[0][1])


@pytest.mark.parametrize(("namespace", "labels", "fields"), FILTERS)
@pytest.mark.parametrize(("max_events", "max_bytes"), BOUNDS)
async def test_cache_batches_replay_the_same_events_as_the_plain_watch(
    storage: Storage, namespace: str, labels: str, fields: str, max_events: int, max_bytes: int
) -> None:
    from services.apiserver.objects import Filter

    async with apiserver(storage) as (api, _):
        start = await api.storage.revision()
        last = await write_history(api)
        cache: WatchCache = api.store.caches["pods"]
        assert await cache.wait_revision(last, 10)
        flt = Filter(PODS, namespace, ListOptions(label_selector=labels, field_selector=fields))
        plain = await _collect(cache.watch(start, flt), batched=False)
        batches = await _collect(
            cache.watch_batches(start, flt, max_events=max_events, max_bytes=max_bytes),
            batched=True,
        )
        assert [_key(t, e.obj) for b in batches for t, e in b] == [_key(t, e.obj) for t, e in plain]
        assert plain  # every filter sees some of the history
        _assert_whole_revisions(batches)
        if max_events == 1:  # a revision of many events still travels in one batch
            assert max(len(b) for b in batches) > 1


async def _grpc_events(
    client: Client, batched: bool, rv: str, namespace: str = "", **sel: str
) -> list:
    """The messages of a Watch or WatchBatches from `rv`, up to pod "end" bound."""
    out: list[Any] = []
    if batched:
        stream: Any = client.watch_batches(
            PODS, namespace=namespace, options=ListOptions(resource_version=rv, **sel)
        )
    else:
        stream = client.watch(
            PODS, namespace=namespace, options=ListOptions(resource_version=rv, **sel)
        )
    async with contextlib.aclosing(stream):
        async for item in stream:
            events = item if batched else [item]
            out.append([(e.type, _Entry(e.object)) for e in events])
            if any(_is_end(e.object) for e in events):
                break
    return out


class _Entry:
    def __init__(self, obj: Any) -> None:
        self.obj = obj


def _keys(messages: list[list[Any]]) -> list[tuple[str, str, str, str, str]]:
    return [_key(t, e.obj) for m in messages for t, e in m]


@pytest.mark.parametrize(("namespace", "labels", "fields"), FILTERS)
async def test_watch_batches_over_grpc_equals_watch_replayed_and_live(
    storage: Storage, namespace: str, labels: str, fields: str
) -> None:
    sel = {"namespace": namespace, "label_selector": labels, "field_selector": fields}
    async with apiserver(storage) as (api, client):
        start = str(await api.storage.revision())
        # Live: both streams open before the history is written (served from buffers).
        live = [asyncio.create_task(_grpc_events(client, b, start, **sel)) for b in (False, True)]
        cache = api.store.caches["pods"]
        while cache.watchers < 2:
            await asyncio.sleep(0.01)
        await write_history(api)
        # Replayed: both opened afterwards (served from the window).
        plain = await _grpc_events(client, False, start, **sel)
        batched = await _grpc_events(client, True, start, **sel)
        live_plain, live_batched = await asyncio.wait_for(asyncio.gather(*live), 20)
        want = _keys(plain)
        assert want
        assert _keys(batched) == want
        assert _keys(live_plain) == want
        assert _keys(live_batched) == want
        _assert_whole_revisions(batched)
        _assert_whole_revisions(live_batched)
        assert len(batched) < len(plain)  # BatchCreate's and BindBatch's revisions


@pytest.mark.parametrize("batched", [False, True])
async def test_watch_batches_ends_with_the_same_errors_as_watch(
    storage: Storage, batched: bool
) -> None:
    async with apiserver(storage) as (api, client):
        cache = api.store.caches["pods"]
        cache._too_large_wait = 0.05  # noqa: SLF001 - the 3 s wait is not under test
        watch = client.watch_batches if batched else client.watch

        async def first(rv: str) -> None:
            async for _ in watch(PODS, options=ListOptions(resource_version=rv)):
                return

        with pytest.raises(BadRequestError, match="resourceVersion"):
            await first("-1")
        rev = await api.storage.revision()
        with pytest.raises(ResourceVersionTooLargeError, match="Too large resource version"):
            await first(str(rev + 1000))
        for n in range(2):  # the window (1,000 events) moves past the start
            await api.batch_create([_pod(f"g{n}-{i}") for i in range(501)])
        assert await cache.wait_revision(await api.storage.revision(), 10)
        with pytest.raises(GoneError, match="too old resource version"):
            await first(str(rev))


async def test_watch_batches_sends_bookmarks_and_the_initial_state(storage: Storage) -> None:
    async with apiserver(storage) as (api, client):
        await api.batch_create([_pod(f"i{i}") for i in range(3)])
        rev = await api.storage.revision()
        assert await api.store.caches["pods"].wait_revision(rev, 10)
        seen: list[list[str]] = []
        async for batch in client.watch_batches(PODS, options=ListOptions(allow_bookmarks=True)):
            seen.append([e.type for e in batch])
            if batch[0].type == "BOOKMARK":
                assert batch[0].object.metadata.resource_version == str(rev)
                break
        assert seen == [["ADDED"] * 3, ["BOOKMARK"]]


@pytest.mark.parametrize(
    ("max_events", "max_bytes", "sizes"),
    [(1000, 1 << 30, [5]), (2, 1 << 30, [2, 2, 1]), (1000, 1, [1, 1, 1, 1, 1])],
)
async def test_the_initial_state_is_chunked_by_the_bounds(
    storage: Storage, max_events: int, max_bytes: int, sizes: list[int]
) -> None:
    async with apiserver(storage) as (api, _):
        await api.batch_create([_pod(f"i{i}") for i in range(5)])
        cache: WatchCache = api.store.caches["pods"]
        assert await cache.wait_revision(await api.storage.revision(), 10)
        plain = cache.watch(None, lambda o: True)
        want = [(await anext(plain))[1].obj.metadata.name for _ in range(5)]
        await plain.aclose()
        batches = cache.watch_batches(
            None, lambda o: True, max_events=max_events, max_bytes=max_bytes
        )
        got = [await anext(batches) for _ in sizes]
        await batches.aclose()
        assert [len(b) for b in got] == sizes
        assert [e.obj.metadata.name for b in got for _, e in b] == want
        assert cache.watchers == 0
