"""Informers: list + watch one resource into a local store, calling handlers on change,
and relisting when the watch says "gone" (client-go's reflector + indexer, in asyncio).

    list ──► replace store (diff → add/update/delete handlers) ──► watch from list's rv
      ▲                                                                 │
      └──────── GoneError (rv too old) / stream broken ◄───────────────┘

Handlers run synchronously in the informer's task, in event order; they must not block.

Events arrive in lists (the WatchBatches RPC: one message per list, not per event), each
ending at a revision boundary. One etcd revision can hold many events (BatchCreate,
BindBatch), all with that revision as resourceVersion, and the server replays a watch
from "every event after rv", so an informer that resumed from the resourceVersion of the
last event it handled, with only part of that revision handled, would never see the rest.
Hence `resource_version` is the last revision received *completely*: one a list ended
with, one a later event or a bookmark went past, or the list's. The events of the newer,
possibly partial revision (`_partial_rv`) are replayed on a resume and the ones already
handled (`_partial_keys`: a revision changes a key at most once, as etcd refuses a txn
that names a key twice) are skipped, so no event is applied twice.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field

from google.protobuf.message import Message

from services.api.machinery.errors import (
    ApiError,
    CorruptObjectError,
    GoneError,
    ResourceVersionTooLargeError,
    UnavailableError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.listoptions import LIST_ALL, ListOptions
from services.api.machinery.meta import object_key
from services.client.client import Client, UnimplementedError, WatchEvent
from services.clock import Clock, RealClock

log = logging.getLogger(__name__)

#: Retry delays after a failed list or watch: doubling from INITIAL_BACKOFF up to
#: MAX_BACKOFF, or up to UNAVAILABLE_MAX_BACKOFF when the apiserver is unreachable.
INITIAL_BACKOFF = 0.05
MAX_BACKOFF = 5.0
UNAVAILABLE_MAX_BACKOFF = 0.25


@dataclass
class Handlers:
    on_add: Callable[[Message], None] | None = None
    on_update: Callable[[Message, Message], None] | None = None
    on_delete: Callable[[Message], None] | None = None


@dataclass
class Informer:
    client: Client
    kind: Kind
    namespace: str = ""
    #: What the list and watch select (their selectors; the resourceVersion and
    #: bookmarks are the informer's own).
    options: ListOptions = LIST_ALL
    clock: Clock = field(default_factory=RealClock)
    handlers: list[Handlers] = field(default_factory=list)
    store: dict[str, Message] = field(default_factory=dict)
    #: The resourceVersion the store is complete up to: every event at or below it is
    #: applied (see the module docstring).
    resource_version: str = ""
    relists: int = 0
    #: Handler calls that raised (each logged with its object's key, then skipped).
    handler_errors: int = 0
    #: Which objects are this informer's (a client-side selector, for what a field
    #: selector cannot say: "bound to one of my nodes"). The others are neither stored nor
    #: handed to handlers; one that stops being kept is handed to them as deleted.
    keep: Callable[[Message], bool] | None = None
    #: Which updates (old, new) any handler acts on; the others still replace the stored
    #: object (handlers read the store) but reach no handler. None: every update does.
    wants_update: Callable[[Message, Message], bool] | None = None
    #: Watch with WatchBatches (many events per message); False: with Watch, one event
    #: per message (set when the apiserver has no WatchBatches).
    batched: bool = True

    def __post_init__(self) -> None:
        self.synced = asyncio.Event()
        #: object key -> the last handler failure logged for it (each logged once).
        self._failures: dict[str, str] = {}
        #: The revision of the newest events applied (0: none since the list or the last
        #: bookmark) and their keys. Invariant: `resource_version` <= `_partial_rv` (when
        #: not 0), and every event between them is at `_partial_rv`, applied, its key in
        #: `_partial_keys`.
        self._partial_rv = 0
        self._partial_keys: set[str] = set()

    def add_handlers(self, handlers: Handlers) -> None:
        self.handlers.append(handlers)

    # A handler that raises costs only the object it was handed: the error is logged once
    # per object and distinct error, with the object's key, and the other handlers and the
    # following events still run (a raise here would end `run` and leave every consumer
    # blind from then on).

    def _fire_add(self, obj: Message) -> None:
        for h in self.handlers:
            if h.on_add:
                try:
                    h.on_add(obj)
                except Exception as e:  # noqa: BLE001 - see above
                    self._handler_failed("add", obj, e)

    def _fire_update(self, old: Message, new: Message) -> None:
        for h in self.handlers:
            if h.on_update:
                try:
                    h.on_update(old, new)
                except Exception as e:  # noqa: BLE001 - see above
                    self._handler_failed("update", new, e)

    def _fire_delete(self, obj: Message) -> None:
        for h in self.handlers:
            if h.on_delete:
                try:
                    h.on_delete(obj)
                except Exception as e:  # noqa: BLE001 - see above
                    self._handler_failed("delete", obj, e)
        self._failures.pop(object_key(obj), None)

    def _handler_failed(self, event: str, obj: Message, exc: Exception) -> None:
        self.handler_errors += 1
        key = object_key(obj)
        message = f"{event}: {exc!r}"
        if self._failures.get(key) == message:
            return  # this object failed this way before; counted, not logged again
        self._failures[key] = message
        log.error(
            "informer %s: %s handler failed for %s; skipped it",
            self.kind.resource,
            event,
            key,
            exc_info=exc,
        )

    async def _list(self) -> None:
        items, rv = await self.client.list(
            self.kind, namespace=self.namespace, options=self.options
        )
        keep = self.keep
        fresh = {object_key(o): o for o in items if keep is None or keep(o)}
        old = self.store
        self.store = fresh
        self.resource_version = rv
        self._partial_rv = 0
        self._partial_keys = set()
        for key, obj in fresh.items():
            prev = old.get(key)
            if prev is None:
                self._fire_add(obj)
            elif object_meta(prev).resource_version != object_meta(obj).resource_version and (
                self.wants_update is None or self.wants_update(prev, obj)
            ):
                self._fire_update(prev, obj)
        for key, obj in old.items():
            if key not in fresh:
                self._fire_delete(obj)

    def _apply_batch(self, events: list[WatchEvent], *, whole: bool = True) -> None:
        """Apply one list of events; `whole`: it ends at a revision boundary (a
        WatchBatches message), so its last revision is complete once it is applied."""
        for ev in events:
            self._apply(ev.type, ev.object)
        if whole and self._partial_rv and str(self._partial_rv) != self.resource_version:
            self.resource_version = str(self._partial_rv)

    async def _watch(self) -> AsyncIterator[tuple[list[WatchEvent], bool]]:
        """The watch from `resource_version`, as (events, whether they end at a revision
        boundary): WatchBatches' lists, or Watch's single events from an apiserver that
        has no WatchBatches (`batched` turns False the first time it says so)."""
        options = dataclasses.replace(
            self.options, resource_version=self.resource_version, allow_bookmarks=True
        )
        if self.batched:
            try:
                async for batch in self.client.watch_batches(
                    self.kind, namespace=self.namespace, options=options
                ):
                    yield batch, True
                return
            except UnimplementedError as e:
                log.info("informer %s: %s; watching event by event", self.kind.resource, e)
                self.batched = False
        async for ev in self.client.watch(self.kind, namespace=self.namespace, options=options):
            yield [ev], False

    def _apply(self, type_: str, obj: Message) -> None:
        rv = object_meta(obj).resource_version
        if type_ == "BOOKMARK":
            # Everything at or below a bookmark's revision has been sent: nothing is partial
            # any more, and the resume point moves up to it (never down), as client-go's
            # reflector records a bookmark's resourceVersion.
            current = int(self.resource_version) if self.resource_version else 0
            if rv and int(rv) >= max(self._partial_rv, current):
                self.resource_version = rv
                self._partial_rv = 0
                self._partial_keys = set()
            return
        key = object_key(obj)
        revision = int(rv) if rv else 0
        if revision and revision == self._partial_rv:
            if key in self._partial_keys:
                return  # handled before the stream broke; replayed on the resume
            self._partial_keys.add(key)
        elif revision > self._partial_rv:
            # A newer revision: the one before it was received whole.
            if self._partial_rv:
                self.resource_version = str(self._partial_rv)
            self._partial_rv = revision
            self._partial_keys = {key}
        self._handle(type_, key, obj)

    def _handle(self, type_: str, key: str, obj: Message) -> None:
        if self.keep is not None and not self.keep(obj):
            prev = self.store.pop(key, None)
            if prev is not None:  # no longer ours: gone, as far as the handlers know
                self._fire_delete(prev)
        elif type_ == "DELETED":
            prev = self.store.pop(key, None)
            self._fire_delete(prev if prev is not None else obj)
        else:
            prev = self.store.get(key)
            self.store[key] = obj
            if prev is None:
                self._fire_add(obj)
            elif self.wants_update is None or self.wants_update(prev, obj):
                self._fire_update(prev, obj)

    async def run(self) -> None:
        """List, watch, relist on "gone"; runs until cancelled. Run again after a cancel,
        it resumes watching from where its store is (relisting only if that is gone)."""
        delay = INITIAL_BACKOFF
        need_list = not self.resource_version
        while True:
            try:
                if need_list:
                    await self._list()
                    self.synced.set()
                    need_list = False
                async for events, whole in self._watch():
                    self._apply_batch(events, whole=whole)
                    delay = INITIAL_BACKOFF
            except GoneError:
                log.info(
                    "informer %s: resourceVersion %s gone; relisting",
                    self.kind.resource,
                    self.resource_version,
                )
                self.relists += 1
                need_list = True
            except (ResourceVersionTooLargeError, CorruptObjectError) as e:
                # Too large: the server has not reached our resourceVersion (an etcd
                # restored from an older backup); client-go's reflector relists. Corrupt:
                # an event that does not decode; the list says what is there now. Both
                # after a backoff, so a server that keeps answering so is not hammered.
                log.warning(
                    "informer %s: %s; relisting in %.2fs", self.kind.resource, e.message, delay
                )
                self.relists += 1
                need_list = True
                await self.clock.sleep(delay)
                delay = min(delay * 2, MAX_BACKOFF)
            except ApiError as e:
                # A broken stream or a refused connection (the apiserver restarting) is
                # UnavailableError: retried at least every 0.25 s (as its channel redials,
                # services/client), so the informer is back at once; it resumes from its
                # resourceVersion (relisting if that is gone). Logged once per outage.
                unavailable = isinstance(e, UnavailableError)
                level = logging.WARNING if delay == INITIAL_BACKOFF else logging.DEBUG
                log.log(level, "informer %s: %s; retrying in %.2fs", self.kind.resource, e, delay)
                await self.clock.sleep(delay)
                delay = min(delay * 2, UNAVAILABLE_MAX_BACKOFF if unavailable else MAX_BACKOFF)
            # a watch that simply ended is resumed from the last complete revision


@dataclass
class SharedInformers:
    """One informer per (kind, namespace, selectors), shared by every controller of a
    process (client-go's SharedInformerFactory): ask with `get` before `start`."""

    client: Client
    clock: Clock = field(default_factory=RealClock)
    informers: dict[tuple[str, str, ListOptions], Informer] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._tasks: list[asyncio.Task[None]] = []

    def get(self, kind: Kind, *, namespace: str = "", options: ListOptions = LIST_ALL) -> Informer:
        key = (kind.resource, namespace, options)
        inf = self.informers.get(key)
        if inf is None:
            inf = Informer(
                self.client, kind, namespace=namespace, options=options, clock=self.clock
            )
            self.informers[key] = inf
            if self._tasks:  # started already: run the late one too
                self._tasks.append(asyncio.create_task(inf.run()))
        return inf

    def start(self) -> None:
        if not self._tasks:
            self._tasks = [asyncio.create_task(i.run()) for i in self.informers.values()]

    async def wait_synced(self) -> None:
        await asyncio.gather(*(i.synced.wait() for i in self.informers.values()))

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
