"""The apiserver's watch cache: one etcd watch per resource, fanned out to every watcher.

    etcd ──watch(prefix, rev+1)──► WatchCache ──┬─► watcher (filter, from rv)
                                    store        ├─► watcher
                                    event window └─► ...

State: `store` is the current object of every key (as of `revision`); `events` is a
window of the most recent changes, oldest first, absolute index `base` for events[0].
A watch from resourceVersion rv is served from the window when rv >= `oldest` (the
list's revision, or the revision of the newest event dropped from the window); older is
"gone" and the client relists. A watcher never receives an event at or below its rv.
If the cache's own etcd watch is compacted away (it fell behind, or etcd restarted with
a compacted history) it relists and bumps `epoch`, ending every watcher with "gone".

A watch from beyond the store's revision (upstream's cacher: waitUntilFreshAndBlock)
first asks etcd: a revision etcd has reached is served as usual (the cache's own revision
moves only with events under its prefix, so it may lag one that exists). Otherwise it
waits up to `TOO_LARGE_WAIT` (upstream's 3 s) for the cache to reach it, asks etcd once
more, then ends with ResourceVersionTooLargeError ("Too large resource version: X,
current: Y", Y being etcd's revision).

Corrupt values: every value is decoded at intake (list, watch events), never later, so a
watcher is only ever sent bytes that decode. A value that does not decode is skipped and
logged once naming its key and revision (upstream names corrupt objects by key, KEP-3926):
the key keeps its last good version in `store` until it is deleted or rewritten, and its
deletion is sent as DELETED with that version. Reads straight from etcd (get, list,
update, ...) raise CorruptObjectError naming the key (`decode`).
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from google.protobuf.message import Message

from services.api.errors import CorruptObjectError, GoneError, ResourceVersionTooLargeError
from services.api.kinds import Kind
from services.clock import Clock, RealClock
from services.storage import CompactedError, KeyValue, Storage, StorageUnavailableError, WatchBatch

log = logging.getLogger(__name__)

#: How long a watch from a resourceVersion beyond the store's waits for it (upstream's
#: cacher blockTimeout) before ResourceVersionTooLargeError.
TOO_LARGE_WAIT = 3.0


@dataclass(slots=True)
class Entry:
    """One version of one object; serialized once, however many watchers send it."""

    obj: Message
    _data: bytes | None = field(default=None, repr=False)

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = self.obj.SerializeToString()
        return self._data


@dataclass(slots=True)
class CacheEvent:
    type: str  # PUT or DELETE, as etcd says it
    revision: int
    cur: Entry  # for DELETE: the last state, with resourceVersion = the delete's revision
    prev: Entry | None


def decode(kind: Kind, kv: KeyValue, revision: int | None = None) -> Message:
    """The stored object at `kv`, its resourceVersion set; CorruptObjectError naming the
    key (upstream storage.NewCorruptObjError) when the value does not decode."""
    obj = kind.message()
    try:
        obj.ParseFromString(kv.value)
    except Exception as e:  # noqa: BLE001 - DecodeError, or anything a bad value raises
        raise corrupt(kind, kv, e) from None
    obj.metadata.resource_version = str(revision or kv.mod_revision)  # type: ignore[attr-defined]
    return obj


def corrupt(kind: Kind, kv: KeyValue, cause: Exception | str) -> CorruptObjectError:
    return CorruptObjectError(
        f"corrupt object: key {kv.key} (revision {kv.mod_revision}): object not decodable "
        f"as {kind.message.DESCRIPTOR.full_name}: {cause}; delete it with "
        "ignore_store_read_error_with_cluster_breaking_potential (kubera delete "
        "--ignore-store-read-error-with-cluster-breaking-potential)"
    )


class WatchCache:
    def __init__(
        self,
        kind: Kind,
        storage: Storage,
        *,
        capacity: int = 10_000,
        clock: Clock | None = None,
        too_large_wait: float = TOO_LARGE_WAIT,
    ) -> None:
        self.kind = kind
        self._storage = storage
        self._capacity = capacity
        self._clock = clock or RealClock()
        self._too_large_wait = too_large_wait
        #: (key, mod_revision) of every corrupt value already logged (logged once each).
        self.corrupt: set[tuple[str, int]] = set()
        self.store: dict[str, Entry] = {}
        self.events: list[CacheEvent] = []
        self.base = 0
        self.revision = 0
        self.oldest = 0
        self.epoch = 0
        self.events_dropped_last = 0
        self._changed = asyncio.Event()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Secondary indexes of `store` (client-go's Indexers): name -> (fn, value -> keys).
        self._indexes: dict[str, tuple[Callable[[Message], str], dict[str, set[str]]]] = {}

    async def start(self) -> None:
        await self._relist()
        self._task = asyncio.create_task(self._run(), name=f"watchcache-{self.kind.resource}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._wake()

    async def _relist(self) -> None:
        items, rev = await self._storage.list(self.kind.prefix())
        store = {}
        for kv in items:
            obj = self._intake(kv)
            if obj is not None:
                store[kv.key] = Entry(obj)
        self.store = store
        for name, (fn, _) in self._indexes.items():
            self._indexes[name] = (fn, self._build_index(fn))
        self.base += len(self.events)
        self.events = []
        self.revision = self.oldest = rev
        self.epoch += 1
        self._ready.set()
        self._wake()

    async def _run(self) -> None:
        delay = 0.05
        while True:
            try:
                async for batch in self._storage.watch(self.kind.prefix(), self.revision + 1):
                    self._apply(batch)
                    delay = 0.05
            except CompactedError:
                log.warning("watch cache %s: history compacted; relisting", self.kind.resource)
                await self._relist_retrying()
            except (StorageUnavailableError, OSError) as e:
                log.warning("watch cache %s: %s; retrying in %.2fs", self.kind.resource, e, delay)
                await self._clock.sleep(delay)
                delay = min(delay * 2, 2.0)
            except Exception:  # noqa: BLE001 - a dead cache would stall every watcher
                log.exception("watch cache %s: unexpected error; relisting", self.kind.resource)
                await self._clock.sleep(delay)
                delay = min(delay * 2, 2.0)
                await self._relist_retrying()

    def _intake(self, kv: KeyValue, revision: int | None = None) -> Message | None:
        """The decoded value, or None (logged once per key and revision) if corrupt."""
        try:
            return decode(self.kind, kv, revision)
        except CorruptObjectError as e:
            if (kv.key, kv.mod_revision) not in self.corrupt:
                self.corrupt.add((kv.key, kv.mod_revision))
                log.error("watch cache %s: skipping %s", self.kind.resource, e)
            return None

    async def _relist_retrying(self) -> None:
        delay = 0.05
        while True:
            try:
                await self._relist()
                return
            except (StorageUnavailableError, OSError):
                await self._clock.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _apply(self, batch: WatchBatch) -> None:
        for ev in batch.events:
            key = ev.kv.key
            prev = self.store.get(key)
            rev = ev.kv.mod_revision
            if ev.type == "PUT":
                obj = self._intake(ev.kv)
                if obj is None:  # corrupt: skipped; the last good version stays
                    self.revision = max(self.revision, rev)
                    continue
                cur = Entry(obj)
                self.store[key] = cur
            else:
                last = self._intake(ev.prev, rev) if ev.prev is not None else None
                if last is None:  # no previous value, or a corrupt one: the last good one
                    if prev is None:
                        self.revision = max(self.revision, rev)
                        continue
                    last = _with_rv(prev.obj, rev)
                cur = Entry(last)
                self.store.pop(key, None)
            if self._indexes:
                self._reindex(key, prev, cur if ev.type == "PUT" else None)
            self.events.append(CacheEvent(ev.type, rev, cur, prev))
            self.revision = max(self.revision, rev)
        if not batch.events:
            self.revision = max(self.revision, batch.revision)
        if len(self.events) > self._capacity:
            drop = len(self.events) - self._capacity
            self.events_dropped_last = self.events[drop - 1].revision
            self.base += drop
            del self.events[:drop]
            # A revision can span many events (a batch txn); a watch from just below a
            # partly dropped revision would miss some, so the whole revision counts as gone.
            self.oldest = self.events_dropped_last
        self._wake()

    def add_index(self, name: str, fn: Callable[[Message], str]) -> None:
        """Keep `store` indexed by `fn(obj)` from now on (built once, then kept as events
        apply); "" means not indexed. Idempotent per name."""
        if name not in self._indexes:
            self._indexes[name] = (fn, self._build_index(fn))

    def by_index(self, name: str, value: str) -> frozenset[str] | set[str]:
        """The keys in `store` whose index `name` is `value` (do not modify)."""
        return self._indexes[name][1].get(value, _EMPTY)

    def _build_index(self, fn: Callable[[Message], str]) -> dict[str, set[str]]:
        index: dict[str, set[str]] = {}
        for key, entry in self.store.items():
            value = fn(entry.obj)
            if value:
                index.setdefault(value, set()).add(key)
        return index

    def _reindex(self, key: str, prev: Entry | None, cur: Entry | None) -> None:
        for fn, index in self._indexes.values():
            old = fn(prev.obj) if prev is not None else ""
            new = fn(cur.obj) if cur is not None else ""
            if old == new:
                continue
            if old:
                keys = index.get(old)
                if keys is not None:
                    keys.discard(key)
                    if not keys:
                        del index[old]
            if new:
                index.setdefault(new, set()).add(key)

    @property
    def started(self) -> bool:
        return self._ready.is_set()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_ready(self) -> None:
        await self._ready.wait()

    async def wait_revision(self, revision: int, timeout: float) -> bool:
        """Wait until the cache has seen `revision` (for read-your-writes in tests and lists)."""
        deadline = self._clock.monotonic() + timeout
        while self.revision < revision:
            left = deadline - self._clock.monotonic()
            if left <= 0:
                return False
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), left)
        return True

    async def watch(
        self,
        resource_version: int | None,
        match: Callable[[Message], bool],
        *,
        bookmark_interval: float | None = None,
    ) -> AsyncIterator[tuple[str, Entry]]:
        """(ADDED|MODIFIED|DELETED|BOOKMARK, entry) from `resource_version` on, filtered by
        `match` with Kubernetes' semantics (an object leaving the filter is DELETED, one
        entering it ADDED). None: the current state as ADDED first."""
        await self._ready.wait()
        if resource_version is not None and resource_version > self.revision:
            await self._wait_fresh(resource_version)
        epoch = self.epoch
        if resource_version is None:
            snapshot = [e for e in self.store.values() if match(e.obj)]
            idx = self.base + len(self.events)
            progress = self.revision
            for e in snapshot:
                yield "ADDED", e
        else:
            if resource_version < self.oldest:
                raise GoneError(
                    f"too old resource version: {resource_version} ({self.oldest}); "
                    "list again and watch from the list's resourceVersion"
                )
            revs = [e.revision for e in self.events]
            idx = self.base + bisect.bisect_right(revs, resource_version)
            progress = resource_version
        # Invariant: every change at or below `floor` is already known to the client (its
        # list). A list's revision may be ahead of the cache, so events that arrive later at
        # or below it are skipped, not replayed. `progress` is how far this watch has sent;
        # one revision can hold many events (a batch txn), so it never filters.
        floor = progress
        next_bookmark = self._clock.monotonic() + bookmark_interval if bookmark_interval else 0.0
        while True:
            if epoch != self.epoch:
                raise GoneError("the watch cache was relisted (etcd history compacted); list again")
            if idx < self.base:
                raise GoneError("watcher fell behind the watch cache window; list again")
            if idx < self.base + len(self.events):
                ev = self.events[idx - self.base]
                idx += 1
                if ev.revision <= floor:
                    continue
                progress = ev.revision
                out = _classify(ev, match)
                if out is not None:
                    yield out, ev.cur
                continue
            # Caught up: everything the cache has seen is delivered.
            progress = max(progress, self.revision)
            changed = self._changed
            if not bookmark_interval:
                await changed.wait()
                continue
            now = self._clock.monotonic()
            if now >= next_bookmark:
                # Every interval, busy or not: the client learns how far it is and that
                # the stream is alive.
                next_bookmark = now + bookmark_interval
                bm = self.kind.message()
                bm.metadata.resource_version = str(progress)  # type: ignore[attr-defined]
                yield "BOOKMARK", Entry(bm)
                continue
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(changed.wait(), next_bookmark - now)

    async def _wait_fresh(self, resource_version: int) -> None:
        """Return once `resource_version` exists (see the module docstring), else raise
        ResourceVersionTooLargeError after waiting up to `too_large_wait`."""
        if resource_version <= await self._storage.revision():
            return
        if await self.wait_revision(resource_version, self._too_large_wait):
            return
        current = await self._storage.revision()
        if resource_version <= current:
            return
        raise ResourceVersionTooLargeError(
            f"Too large resource version: {resource_version}, current: {current}"
        )


_EMPTY: frozenset[str] = frozenset()


def _with_rv(obj: Message, rev: int) -> Message:
    out = type(obj)()
    out.CopyFrom(obj)
    out.metadata.resource_version = str(rev)  # type: ignore[attr-defined]
    return out


def _classify(ev: CacheEvent, match: Callable[[Message], bool]) -> str | None:
    was = ev.prev is not None and match(ev.prev.obj)
    if ev.type == "DELETE":
        return "DELETED" if was else None
    now = match(ev.cur.obj)
    if now and was:
        return "MODIFIED"
    if now:
        return "ADDED"
    if was:
        return "DELETED"
    return None
