"""The watch cache's fan-out: a stalled watcher delays neither the other watchers nor the
writes; once its buffer is full it is terminated (its stream ends, as upstream's cacher
closes an unresponsive watcher) and it can resume from its resourceVersion."""

from __future__ import annotations

import asyncio

import pytest

from services.api.machinery.errors import GoneError, InternalError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.watchcache import WatchCache
from services.storage import Event, KeyValue, Put, WatchBatch
from services.storage.memory import MemoryStorage
from tests.builders import pod
from tests.waiting import eventually

PODS = BY_KIND["Pod"]


def _everything(_obj) -> bool:
    return True


async def _put(storage: MemoryStorage, *names: str) -> int:
    """Write `names` in one txn (one revision, as BatchCreate does); returns it."""
    await storage.txn(
        [], [Put(f"{PODS.prefix()}default/{n}", pod(n).SerializeToString()) for n in names]
    )
    return await storage.revision()


async def _names(stream, n: int) -> list[str]:
    return [(await asyncio.wait_for(anext(stream), 10))[1].obj.metadata.name for _ in range(n)]


async def test_a_stalled_watcher_is_terminated_and_the_others_get_everything() -> None:
    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100, watcher_buffer=5)
    await cache.start()
    try:
        start = cache.revision
        live = cache.watch(start, _everything)
        stalled = cache.watch(start, _everything)
        # Both registered (each generator runs to its first wait), then one stalls.
        first_live = asyncio.ensure_future(anext(live))
        first_stalled = asyncio.ensure_future(anext(stalled))
        await eventually(lambda: cache.watchers == 2)
        got: list[str] = []
        for i in range(20):  # four times the buffer: no write ever waits on a watcher
            await _put(storage, f"p{i}")
            nxt = first_live if i == 0 else anext(live)
            _, entry = await asyncio.wait_for(nxt, 10)
            got.append(entry.obj.metadata.name)
        assert got == [f"p{i}" for i in range(20)]
        # The stalled one got its first event, then its buffer filled: it was ended.
        assert cache.terminated_watchers == 1
        _, entry = await asyncio.wait_for(first_stalled, 10)
        assert entry.obj.metadata.name == "p0"
        rest = [e async for _, e in stalled]  # its stream ends (no error): rewatch
        assert rest == []
        assert cache.watchers == 1
        # Resuming from where it got to replays the rest from the window.
        resumed = cache.watch(int(entry.obj.metadata.resource_version), _everything)
        names = [
            (await asyncio.wait_for(anext(resumed), 10))[1].obj.metadata.name for _ in range(19)
        ]
        assert names == [f"p{i}" for i in range(1, 20)]
        await resumed.aclose()
        await live.aclose()
    finally:
        await cache.stop()


async def test_a_watcher_only_buffers_what_its_filter_matches() -> None:
    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100, watcher_buffer=2)
    await cache.start()
    try:
        only_p7 = cache.watch(cache.revision, lambda o: o.metadata.name == "p7")
        nxt = asyncio.ensure_future(anext(only_p7))
        await eventually(lambda: cache.watchers == 1)
        last = 0
        for i in range(10):  # nine others pass by without filling its buffer of two
            last = await _put(storage, f"p{i}")
        assert await cache.wait_revision(last, 10)
        kind, entry = await asyncio.wait_for(nxt, 10)
        assert (kind, entry.obj.metadata.name) == ("ADDED", "p7")
        assert cache.terminated_watchers == 0
        await only_p7.aclose()
        assert cache.watchers == 0
    finally:
        await cache.stop()


async def test_a_relist_ends_live_watchers_with_gone() -> None:
    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100)
    await cache.start()
    try:
        w = cache.watch(cache.revision, _everything)
        nxt = asyncio.ensure_future(anext(w))
        await eventually(lambda: cache.watchers == 1)
        await cache._relist()  # what a compacted etcd watch makes it do
        with pytest.raises(GoneError):
            await asyncio.wait_for(nxt, 10)
    finally:
        await cache.stop()


# A batch txn puts many events at one revision, all with that resourceVersion: a client
# resumes after the whole revision, so a stream the cache ends must not stop inside one.


async def test_a_watcher_ended_inside_a_revision_first_gets_the_rest_of_it() -> None:
    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100, watcher_buffer=3)
    await cache.start()
    try:
        w = cache.watch(cache.revision, _everything)
        first = asyncio.ensure_future(anext(w))
        await eventually(lambda: cache.watchers == 1)
        await _put(storage, "a0", "a1", "a2")
        _, a0 = await asyncio.wait_for(first, 10)
        assert a0.obj.metadata.name == "a0"
        # It stalls holding a1, a2; two more writes overflow its buffer of three.
        await _put(storage, "p0")
        assert await cache.wait_revision(await _put(storage, "p1"), 10)
        assert cache.terminated_watchers == 1
        # Its stream still sends the rest of a0's revision, then ends (no error) ...
        rest = await asyncio.wait_for(_drain(w), 10)
        assert rest == ["a1", "a2"]
        # ... and resuming from a0's resourceVersion (its client's) gets the rest.
        resumed = cache.watch(int(a0.obj.metadata.resource_version), _everything)
        assert await _names(resumed, 2) == ["p0", "p1"]
        await resumed.aclose()
    finally:
        await cache.stop()


async def test_a_watcher_ended_during_its_replay_first_gets_the_rest_of_the_revision() -> None:
    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100, watcher_buffer=2)
    await cache.start()
    try:
        start = cache.revision
        assert await cache.wait_revision(await _put(storage, "a0", "a1", "a2"), 10)
        w = cache.watch(start, _everything)
        _, a0 = await asyncio.wait_for(anext(w), 10)  # from the window; registered now
        assert a0.obj.metadata.name == "a0"
        for name in ("p0", "p1"):
            await _put(storage, name)
        assert await cache.wait_revision(await _put(storage, "p2"), 10)
        assert cache.terminated_watchers == 1
        rest = await asyncio.wait_for(_drain(w), 10)
        assert rest == ["a1", "a2"]
        resumed = cache.watch(int(a0.obj.metadata.resource_version), _everything)
        assert await _names(resumed, 3) == ["p0", "p1", "p2"]
        await resumed.aclose()
    finally:
        await cache.stop()


async def test_a_revision_that_overflows_a_watcher_it_is_inside_ends_it_with_gone() -> None:
    """A revision split across two etcd watch responses (etcd sends a revision whole
    unless asked to fragment; the cache does not rely on it): the client has part of it,
    the rest does not fit, and no resume from its resourceVersion could deliver the
    rest, so it relists."""
    cache = WatchCache(PODS, MemoryStorage(), capacity=100, watcher_buffer=2)
    await cache._relist()  # no etcd watch: the batches come from the test
    rev = cache.revision + 1

    def batch(*names: str) -> WatchBatch:
        kvs = [
            KeyValue(f"{PODS.prefix()}default/{n}", pod(n).SerializeToString(), rev, rev, 1)
            for n in names
        ]
        return WatchBatch(tuple(Event("PUT", kv, None) for kv in kvs), rev)

    w = cache.watch(cache.revision, _everything)
    first = asyncio.ensure_future(anext(w))
    await eventually(lambda: cache.watchers == 1)
    cache._apply(batch("a0", "a1"))
    _, a0 = await asyncio.wait_for(first, 10)
    assert a0.obj.metadata.name == "a0"
    cache._apply(batch("a2", "a3"))  # a1, a2 buffered: a3 does not fit
    with pytest.raises(GoneError):
        await asyncio.wait_for(_drain(w), 10)
    assert cache.watchers == 0


async def test_a_raising_filter_ends_only_its_own_watcher() -> None:
    def picky(obj) -> bool:
        if obj.metadata.name == "bad":
            raise ValueError("boom")
        return True

    storage = MemoryStorage()
    cache = WatchCache(PODS, storage, capacity=100)
    await cache.start()
    try:
        epoch = cache.epoch
        good = cache.watch(cache.revision, _everything)
        bad = cache.watch(cache.revision, picky)
        first_good = asyncio.ensure_future(anext(good))
        first_bad = asyncio.ensure_future(anext(bad))
        await eventually(lambda: cache.watchers == 2)
        await _put(storage, "ok0")
        await _put(storage, "bad")
        await _put(storage, "ok1")
        _, entry = await asyncio.wait_for(first_good, 10)
        assert [entry.obj.metadata.name, *await _names(good, 2)] == ["ok0", "bad", "ok1"]
        # Ended at the boundary of what it was sent (nothing yet): ok0 is dropped with
        # the rest, its client rewatches from its resourceVersion.
        with pytest.raises(InternalError, match="boom"):
            await asyncio.wait_for(first_bad, 10)
        # The cache went on: no relist, the other watcher stays.
        assert cache.epoch == epoch
        assert cache.watchers == 1
        await good.aclose()
    finally:
        await cache.stop()


async def _drain(stream) -> list[str]:
    return [e.obj.metadata.name async for _, e in stream]
