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
more, then ends with ResourceVersionTooLargeError ("Timeout: Too large resource version:
X, current: Y", Y being etcd's revision). The HTTP API's list and get with a
resourceVersion wait the same way (`wait_fresh`), as upstream's WaitUntilFreshAndList
and WaitUntilFreshAndGet do. One difference: upstream's cacher waits (and errs) only for a
watch that asks for its initial events (sendInitialEvents=true) and lets a plain watch
from a future resourceVersion wait for events silently; kubera answers every watch so,
which the client sees and relists on, instead of a stream that says nothing.

Fan-out (upstream's cacher dispatchEvents / cacheWatcher): each live watcher has its own
bounded buffer. The cache's intake (`_apply`) classifies every new event for every watcher
once and appends what matches to that watcher's buffer, never waiting: a slow watcher
delays neither the others nor the apiserver's writes. A watcher whose buffer is full
(`watcher_buffer` undelivered events) is terminated, as upstream's cacher closes an
unresponsive watcher: its stream ends and the client rewatches from its last
resourceVersion (served from the window, or "gone" and it relists). A watch first replays
the window from its resourceVersion, then serves its buffer. A filter that raises on a
live event ends its own watcher with InternalError (raised during the replay, it reaches
that watch's caller as is); the cache and the other watchers go on.

Revisions and resourceVersions: one etcd revision can hold many events (a batch txn:
BatchCreate, BindBatch, a node pool's status BatchUpdate), all carrying that revision as
their resourceVersion. In Kubernetes every write is its own txn, so each event has its
own resourceVersion and upstream's cacher replays from "the first event with
resourceVersion > rv"; we do the same (`bisect_right`), which is only right if a client
that holds rv R holds *every* event of R. Hence the invariant: a stream the cache ends
stops at a revision boundary. A terminated watcher (buffer full, or its filter raised)
keeps the buffered rest of the revision it has started sending (`_Watcher.sent`) and
drops the rest; its stream sends that rest, then ends; a replay broken off by the
termination runs to the end of its current revision first. If the rest cannot be kept
(a revision split across etcd watch responses and bigger than the space left; etcd sends
a revision whole unless asked to fragment) the stream ends with GoneError: the client
relists. A stream broken by anything else (the connection, the apiserver exiting) may
still end inside a revision: that is the client's to handle.

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
import collections
import contextlib
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, field

from google.protobuf.message import Message

from services.api.machinery.errors import (
    CorruptObjectError,
    GoneError,
    InternalError,
    ResourceVersionTooLargeError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.clock import Clock, RealClock
from services.storage import CompactedError, KeyValue, Storage, StorageUnavailableError, WatchBatch

log = logging.getLogger(__name__)

#: How long a watch from a resourceVersion beyond the store's waits for it (upstream's
#: cacher blockTimeout) before ResourceVersionTooLargeError.
TOO_LARGE_WAIT = 3.0

#: A batched watch's message (`WatchCache.watch_batches`, the WatchBatches RPC) stops
#: growing at the first revision boundary past this many events or serialized bytes. A
#: revision is never split, so a message can exceed them by one revision (at most one
#: etcd txn: MAX_BATCH_ITEMS objects within etcd's request limit), far below the
#: apiserver's 256 MiB response limit.
WATCH_BATCH_EVENTS = 1000
WATCH_BATCH_BYTES = 4 << 20


@dataclass(slots=True)
class Entry:
    """One version of one object; serialized once, however many watchers send it."""

    obj: Message
    _data: bytes | None = field(default=None, repr=False)
    _json: bytes | None = field(default=None, repr=False)

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = self.obj.SerializeToString()
        return self._data

    def json(self, encode: Callable[[Message], bytes]) -> bytes:
        """`encode(obj)`, computed once however many watchers send it: the HTTP API's
        JSON of the object (services/httpapi/watch.py), the same for every watcher of
        the kind, as upstream's watch cache keeps one serialization per encoder."""
        if self._json is None:
            self._json = encode(self.obj)
        return self._json


@dataclass(slots=True)
class CacheEvent:
    type: str  # PUT or DELETE, as etcd says it
    revision: int
    cur: Entry  # for DELETE: the last state, with resourceVersion = the delete's revision
    prev: Entry | None


class _Watcher:
    """One watch's buffer: (type, event) pairs already classified for its filter."""

    __slots__ = ("match", "buf", "capacity", "wake", "terminated", "sent", "error")

    def __init__(self, match: Callable[[Message], bool], capacity: int) -> None:
        self.match = match
        self.buf: collections.deque[tuple[str, CacheEvent]] = collections.deque()
        self.capacity = capacity
        self.wake = asyncio.Event()
        #: Why the cache ended this watch ("" while live): "gone" (relisted), "full",
        #: "error" (its filter raised: `error`), or "split" (see `WatchCache._end`).
        self.terminated = ""
        #: The revision of the last event handed to the client (0: none yet). Invariant
        #: once terminated: `buf` holds only events of this revision (the rest of it).
        self.sent = 0
        self.error: InternalError | None = None


def decode(kind: Kind, kv: KeyValue, revision: int | None = None) -> Message:
    """The stored object at `kv`, its resourceVersion set; CorruptObjectError naming the
    key (upstream storage.NewCorruptObjError) when the value does not decode."""
    obj = kind.message()
    try:
        obj.ParseFromString(kv.value)
    except Exception as e:  # noqa: BLE001 - DecodeError, or anything a bad value raises
        raise corrupt(kind, kv, e) from None
    object_meta(obj).resource_version = str(revision or kv.mod_revision)
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
        watcher_buffer: int | None = None,
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
        #: Undelivered events a watcher may hold before it is terminated (by default the
        #: window's size: a watcher that far behind could not have resumed from it either).
        self._watcher_buffer = watcher_buffer or capacity
        self._watchers: set[_Watcher] = set()
        #: Watchers ended because their buffer was full (upstream's
        #: apiserver_terminated_watchers_total).
        self.terminated_watchers = 0

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
        for w in self._watchers:
            w.terminated = "gone"
            w.wake.set()
        self._watchers.clear()
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
            cev = CacheEvent(ev.type, rev, cur, prev)
            self.events.append(cev)
            if self._watchers:
                self._dispatch(cev)
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
        for w in self._watchers:
            w.wake.set()
        self._wake()

    def _dispatch(self, ev: CacheEvent) -> None:
        """Hand `ev` to every watcher it concerns; never waits. A full buffer ends that
        watcher (its client rewatches from where it got to); so does a filter that raises
        (that watcher only: the cache and the others go on)."""
        ended: list[_Watcher] = []
        for w in self._watchers:
            try:
                out = _classify(ev, w.match)
            except Exception as e:  # noqa: BLE001 - one watcher's filter must not stop the cache
                log.exception(
                    "watch cache %s: a watcher's filter failed on %s (revision %d); ending it",
                    self.kind.resource,
                    object_meta(ev.cur.obj).name,
                    ev.revision,
                )
                w.terminated = "error"
                w.error = InternalError(
                    f"watch filter failed on {self.kind.resource} "
                    f"{object_meta(ev.cur.obj).name!r} at revision {ev.revision}: {e!r}"
                )
                ended.append(w)
                continue
            if out is None:
                continue
            if len(w.buf) >= w.capacity:
                log.warning(
                    "watch cache %s: terminating an unresponsive watcher (%d events undelivered)",
                    self.kind.resource,
                    len(w.buf),
                )
                self.terminated_watchers += 1
                w.terminated = "full"
                ended.append(w)
                continue
            w.buf.append((out, ev))
        for w in ended:
            self._end(w, ev)

    def _end(self, w: _Watcher, ev: CacheEvent) -> None:
        """End `w`, which could not take `ev`, at a revision boundary (module docstring):
        keep the buffered rest of the revision its client is inside, drop the newer ones
        (its client rewatches from that revision). If `ev` itself belongs to that
        revision, the rest cannot be delivered: "split", the stream ends with GoneError."""
        while w.buf and w.buf[-1][1].revision > w.sent:
            w.buf.pop()
        if ev.revision <= w.sent:
            w.terminated = "split"
        w.wake.set()
        self._watchers.discard(w)

    @property
    def watchers(self) -> int:
        return len(self._watchers)

    def state_at(self, revision: int) -> dict[str, Entry]:
        """Every object as of `revision` (from `oldest` to `revision`), by key: the store
        with the window's newer events undone. What a consistent paged list reads its
        later pages from (upstream reads etcd at the first page's revision); older than
        the window: GoneError, as upstream's continue token of a compacted revision."""
        if revision < self.oldest or revision > self.revision:
            raise GoneError(
                f"too old resource version: {revision} ({self.oldest}); the list must "
                "start again without its continue token"
            )
        state = dict(self.store)
        for ev in reversed(self.events):
            if ev.revision <= revision:
                break
            m = object_meta(ev.cur.obj)
            key = self.kind.key(m.namespace, m.name)
            if ev.prev is None:
                state.pop(key, None)
            else:
                state[key] = ev.prev
        return state

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
        # Batches of one event that may split a revision: the stream is checked between
        # any two events, as a stream of single events always was.
        # Closed with this generator, so the watcher unregisters when its caller closes.
        async with contextlib.aclosing(
            self.watch_batches(
                resource_version,
                match,
                bookmark_interval=bookmark_interval,
                max_events=1,
                whole_revisions=False,
            )
        ) as batches:
            async for batch in batches:
                for item in batch:
                    yield item

    async def watch_batches(
        self,
        resource_version: int | None,
        match: Callable[[Message], bool],
        *,
        bookmark_interval: float | None = None,
        max_events: int = WATCH_BATCH_EVENTS,
        max_bytes: int = WATCH_BATCH_BYTES,
        whole_revisions: bool = True,
    ) -> AsyncGenerator[list[tuple[str, Entry]], None]:
        """`watch`'s events, the same ones in the same order, as lists of what is ready:
        a list grows until the watcher has nothing more ready or it holds `max_events`
        events or `max_bytes` serialized bytes, and with `whole_revisions` (the
        default) only ever ends at a revision boundary, so a client that received a list
        holds every event of its last revision (the initial state of a watch from None
        excepted: it has no revisions and is chunked by the bounds alone). A BOOKMARK is
        a list of its own."""
        await self._ready.wait()
        if resource_version is not None and resource_version > self.revision:
            await self.wait_fresh(resource_version)
        w = _Watcher(match, self._watcher_buffer)
        # From here to the registration nothing awaits: the snapshot or the window's
        # replay ends exactly where the buffer's events begin.
        replay: list[CacheEvent]
        if resource_version is None:
            snapshot = [e for e in self.store.values() if match(e.obj)]
            replay = []
            progress = self.revision
        else:
            if resource_version < self.oldest:
                raise GoneError(
                    f"too old resource version: {resource_version} ({self.oldest}); "
                    "list again and watch from the list's resourceVersion"
                )
            snapshot = []
            revs = [e.revision for e in self.events]
            replay = self.events[bisect.bisect_right(revs, resource_version) :]
            progress = resource_version

        batches = _Batcher(max_events, max_bytes, whole_revisions=whole_revisions)
        self._watchers.add(w)
        try:
            for e in snapshot:  # no revisions here: bounded by count and bytes alone
                if batches.ends_before(None):
                    yield batches.take()
                batches.add("ADDED", e, None)
            if batches.items:
                yield batches.take()
            # Invariant: every change at or below `floor` is already known to the client
            # (its list). A list's revision may be ahead of the cache, so events that
            # arrive later at or below it are skipped, not replayed. `progress` is how far
            # this watch has sent; one revision can hold many events (a batch txn), so it
            # never filters.
            floor = progress
            i = 0
            while i < len(replay):
                while i < len(replay):
                    ev = replay[i]
                    # Ended meanwhile: stop, but not inside the revision the client is in.
                    if w.terminated and ev.revision > w.sent:
                        i = len(replay)
                        break
                    if batches.ends_before(ev.revision):
                        break
                    i += 1
                    if ev.revision <= floor:
                        continue
                    progress = ev.revision
                    out = _classify(ev, match)
                    if out is not None:
                        w.sent = ev.revision
                        batches.add(out, ev.cur, ev.revision)
                if batches.items:
                    yield batches.take()
            next_bookmark = (
                self._clock.monotonic() + bookmark_interval if bookmark_interval else 0.0
            )
            while True:
                if w.terminated == "gone":
                    raise GoneError(
                        "the watch cache was relisted (etcd history compacted); list again"
                    )
                if w.terminated == "split":
                    raise GoneError(
                        f"watch ended inside revision {w.sent}, the rest of which it could "
                        "not buffer; list again"
                    )
                if w.buf:  # once terminated: the rest of revision `w.sent` only
                    while w.buf:
                        out, ev = w.buf[0]
                        if batches.ends_before(ev.revision):
                            break
                        w.buf.popleft()
                        if ev.revision <= floor:
                            continue
                        progress = w.sent = ev.revision
                        batches.add(out, ev.cur, ev.revision)
                    if batches.items:
                        yield batches.take()
                    continue
                if w.error is not None:
                    raise w.error
                if w.terminated:
                    return  # too slow: the client rewatches from its resourceVersion
                # Caught up: everything the cache has seen is delivered.
                progress = max(progress, self.revision)
                w.wake.clear()
                if not bookmark_interval:
                    await w.wake.wait()
                    continue
                now = self._clock.monotonic()
                if now >= next_bookmark:
                    # Every interval, busy or not: the client learns how far it is and
                    # that the stream is alive.
                    next_bookmark = now + bookmark_interval
                    bm = self.kind.message()
                    object_meta(bm).resource_version = str(progress)
                    yield [("BOOKMARK", Entry(bm))]
                    continue
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(w.wake.wait(), next_bookmark - now)
        finally:
            self._watchers.discard(w)

    async def wait_fresh(self, resource_version: int) -> None:
        """Return once `resource_version` exists (see the module docstring), else raise
        ResourceVersionTooLargeError after waiting up to `too_large_wait` (upstream's
        waitUntilFreshAndBlock)."""
        if resource_version <= await self._storage.revision():
            return
        if await self.wait_revision(resource_version, self._too_large_wait):
            return
        current = await self._storage.revision()
        if resource_version <= current:
            return
        raise ResourceVersionTooLargeError.at(resource_version, current)


_EMPTY: frozenset[str] = frozenset()


class _Batcher:
    """The one rule `watch_batches` cuts its three streams by (the initial state, the
    replayed window, the live buffer): the open list ends before the next event once it
    holds `max_events` events or `max_bytes` serialized bytes, and, with
    `whole_revisions`, only where the revision changes (an event of the initial state has
    no revision: None, bounded by the counts alone). Bytes are counted only with
    `whole_revisions` (a watch of single events is bounded by `max_events` alone)."""

    __slots__ = ("max_events", "max_bytes", "whole_revisions", "items", "size", "revision")

    def __init__(self, max_events: int, max_bytes: int, *, whole_revisions: bool) -> None:
        self.max_events = max_events
        self.max_bytes = max_bytes
        self.whole_revisions = whole_revisions
        self.items: list[tuple[str, Entry]] = []
        self.size = 0
        #: The revision of the last event added (None: the initial state's, or none yet).
        self.revision: int | None = None

    def ends_before(self, revision: int | None) -> bool:
        """Whether the open list must be handed out before an event at `revision` joins."""
        if not self.items or (len(self.items) < self.max_events and self.size < self.max_bytes):
            return False
        if revision is None or self.revision is None or not self.whole_revisions:
            return True
        return revision > self.revision

    def add(self, type_: str, entry: Entry, revision: int | None) -> None:
        self.items.append((type_, entry))
        self.revision = revision
        if self.whole_revisions:
            self.size += len(entry.data)

    def take(self) -> list[tuple[str, Entry]]:
        """The open list, handed out; a new one opens empty."""
        out, self.items, self.size = self.items, [], 0
        return out


def _with_rv(obj: Message, rev: int) -> Message:
    out = type(obj)()
    out.CopyFrom(obj)
    object_meta(out).resource_version = str(rev)
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
