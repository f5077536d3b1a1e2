"""The UI's live feed: one server-sent-event stream per open page, fed by the apiserver's
watch caches (nodes, pods, leases, events), never by polling lists.

    per resource: snapshot of its watch cache (no I/O) ──► "snapshot" deltas, then
                  watch_batches from the snapshot's revision ──► Coalescer
    writer: every FLUSH_SECONDS, what the Coalescer holds ──► one "deltas" event

The frames, in order (services/ui/deltas.py says what a delta holds):

    event: hello     {"user": name}                        the stream starts
    event: deltas    [delta, ...] with "snapshot": resource  a resource's current state
                                                              (several frames for a big one)
    event: synced    {"resource": R}                         R's snapshot is complete
    event: deltas    [delta, ...]                            what changed since the last frame
    event: schedulers [{identity, leading, mode, scheduled, pending: {queue: pods}, terms}]
                                                              every 2 s, from the schedulers'
                                                              own API (their Health)
    event: reset     {"resource": R}                         R is being sent anew (its watch
                                                              was too far behind: drop R's
                                                              objects, a snapshot follows)

(ResourceSlices and ResourceClaims too: the heatmap counts DRA devices per node.)

A watch that ends (the cache ended a watcher that fell behind, or its timeout) is taken
up again from the last revision this stream saw; one answered 410 Gone (history
compacted) starts over with a reset and a new snapshot, as an informer relists. Node
Leases (namespace kube-node-lease: one per node, renewed every few seconds) are not
watched: the leaders panel is about the elections, and 5,000 heartbeats a renewal period
would be most of the stream. Events are sent from the moment the page opened.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from services.api.machinery.errors import GoneError
from services.api.machinery.kinds import BY_RESOURCE
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.listoptions import ListOptions
from services.apiserver import ApiServer
from services.clock import Clock
from services.ui.deltas import ENCODERS, Coalescer, delta, frame
from services.ui.traces import scheduler_health

log = logging.getLogger(__name__)

#: Seconds between two frames of deltas (at most ~4 frames a second reach the page).
FLUSH_SECONDS = 0.25
#: Deltas per snapshot frame (encoding one takes the event loop for ~50 ms at most; the
#: loop is given back between frames, so a page opening on 50,000 pods stalls nothing).
SNAPSHOT_FRAME = 2000
#: The resources fed, with the field selector each is watched with.
FEEDS: dict[str, str] = {
    "nodes": "",
    "pods": "",
    "leases": "metadata.namespace!=kube-node-lease",
    "events": "",
    "resourceslices": "",
    "resourceclaims": "",
}
#: Resources whose current state is sent when the stream opens (events: only new ones).
SNAPSHOT = ("nodes", "pods", "leases", "resourceslices", "resourceclaims")
#: Seconds between two "schedulers" frames (queues and counters of each replica).
SCHEDULER_SECONDS = 2.0
#: Seconds a feed waits before watching again after an unexpected error.
RETRY_SECONDS = 1.0

Send = Callable[[bytes], Awaitable[None]]


class Feed:
    """One resource's part of one stream: its snapshot, then its watch, into `pending`."""

    def __init__(
        self, api: ApiServer, resource: str, pending: Coalescer, send: Send, clock: Clock
    ) -> None:
        self.api = api
        self.resource = resource
        self.kind = BY_RESOURCE[resource]
        self.pending = pending
        self.send = send
        self.clock = clock
        self.field_selector = FEEDS[resource]
        self.revision = 0

    async def snapshot(self) -> None:
        """Send the cache's current state (or, for events, nothing) and note its revision."""
        cache = await self.api.fresh_cache(self.kind)
        if cache is None:
            raise GoneError(f"the {self.resource} watch cache is not ready")
        # No await between reading the store and its revision: one consistent state.
        entries = list(cache.store.values())
        self.revision = cache.revision
        if self.resource not in SNAPSHOT:
            return
        selected = [e.obj for e in entries if self._selected(e.obj)]
        for i in range(0, max(len(selected), 1), SNAPSHOT_FRAME):
            part = [delta(self.resource, "ADDED", o) for o in selected[i : i + SNAPSHOT_FRAME]]
            await self.send(frame("deltas", part))
            await asyncio.sleep(0)  # a yield, not a wait: the apiserver's other work goes on
        await self.send(frame("synced", {"resource": self.resource}))

    def _selected(self, obj: Any) -> bool:
        return not (self.resource == "leases" and object_meta(obj).namespace == "kube-node-lease")

    async def run(self) -> None:
        await self.snapshot()
        while True:
            try:
                await self._watch()
            except GoneError:
                self.pending.drop(ENCODERS[self.resource][0])
                await self.send(frame("reset", {"resource": self.resource}))
                await self.snapshot()
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - a broken watch is retried, the page stays
                log.exception("UI feed %s failed; watching again", self.resource)
                await self.clock.sleep(RETRY_SECONDS)

    async def _watch(self) -> None:
        options = ListOptions(
            field_selector=self.field_selector,
            resource_version=str(self.revision or ""),
            allow_bookmarks=True,  # the revision moves on while nothing matches
        )
        batches = self.api.watch_batches(self.kind, options=options)
        async with contextlib.aclosing(batches):  # type: ignore[type-var]
            async for batch in batches:
                for event_type, entry in batch:
                    if event_type != "BOOKMARK":
                        self.pending.add(delta(self.resource, event_type, entry.obj))
                    rv = object_meta(entry.obj).resource_version
                    if rv.isdigit():
                        self.revision = max(self.revision, int(rv))


async def follow_schedulers(api: ApiServer, bearer: str, send: Send, clock: Clock) -> None:
    """Every `SCHEDULER_SECONDS`, the scheduler replicas' queues and counters (their
    `Health`, a few numbers each) as one "schedulers" frame."""
    while True:
        try:
            found = await scheduler_health(api.storage, bearer)
        except Exception:  # noqa: BLE001 - figures only: the next round tries again
            log.debug("UI: scheduler health failed", exc_info=True)
        else:
            await send(frame("schedulers", found))
        await clock.sleep(SCHEDULER_SECONDS)


async def serve_stream(
    request: web.Request, api: ApiServer, user: str, clock: Clock, bearer: str = ""
) -> web.StreamResponse:
    """The event stream of one page, until the page goes away (`bearer`: the session's
    token, which the schedulers' API is asked with)."""
    resp = web.StreamResponse(
        status=200,
        headers={
            "Content-Type": "text/event-stream",
            "Cache-Control": "no-store",
            "X-Accel-Buffering": "no",
        },
    )
    await resp.prepare(request)
    lock = asyncio.Lock()  # frames never interleave

    async def send(data: bytes) -> None:
        async with lock:
            await resp.write(data)

    pending = Coalescer()
    await send(frame("hello", {"user": user}))
    feeds = [Feed(api, r, pending, send, clock) for r in FEEDS]
    tasks = [asyncio.create_task(f.run(), name=f"ui-feed-{f.resource}") for f in feeds]
    tasks.append(
        asyncio.create_task(follow_schedulers(api, bearer, send, clock), name="ui-schedulers")
    )
    try:
        while True:
            await clock.sleep(FLUSH_SECONDS)
            for t in tasks:
                if t.done() and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
            if len(pending):
                await send(frame("deltas", pending.take()))
    except ConnectionResetError:
        pass
    finally:
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
    return resp
