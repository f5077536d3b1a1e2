"""The event recorder every component writes core/v1 Events through (client-go's
tools/record: a broadcaster in front of an EventCorrelator and one sink writer).

Why: an unschedulable storm (thousands of pods failing at once) used to become thousands
of concurrent Event creates that starved every other write to the apiserver. Upstream
bounds this three ways, and so does this recorder:

- `event()` never blocks and never fails: it puts the event on a bounded queue
  (upstream's broadcaster, maxQueuedEvents = 1000, DropIfChannelFull); when the queue
  is full the event is dropped and counted in `dropped`.
- One writer drains the queue, one write at a time (upstream's recordToSink runs on the
  broadcaster's single watcher goroutine), so a component has at most one event write
  in flight however many it reports.
- The `EventCorrelator` (events_cache.go) turns repeats into count/lastTimestamp patches
  of one Event (eventLogger), combines more than 10 distinct messages of one reason about
  one object in 10 minutes into one "(combined from similar events): ..." Event
  (EventAggregator), and lets a source write at most 25 events about one object, then
  one per 5 minutes (EventSourceObjectSpamFilter).
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import random
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.helpers.events import new_event
from services.api.machinery.errors import (
    ApiError,
    NotFoundError,
    UnavailableError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import object_meta
from services.client.client import Client
from services.clock import Clock, rfc3339

log = logging.getLogger(__name__)

#: client-go tools/record's constants (events_cache.go, event.go).
LRU_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL_S = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
MAX_QUEUED_EVENTS = 1000
MAX_TRIES_PER_EVENT = 12
SLEEP_BETWEEN_TRIES_S = 10.0

EVENTS = BY_KIND["Event"]


class _Lru:
    """groupcache's lru.Cache: `get` refreshes an entry, `add` evicts the oldest."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[Hashable, Any] = OrderedDict()

    def get(self, key: Hashable) -> Any:
        value = self._d.get(key)
        if value is not None:
            self._d.move_to_end(key)
        return value

    def add(self, key: Hashable, value: Any) -> None:
        self._d[key] = value
        self._d.move_to_end(key)
        while len(self._d) > self.size:
            self._d.popitem(last=False)

    def __len__(self) -> int:
        return len(self._d)


def _ref_key(ev: core_pb2.Event) -> tuple[str, ...]:
    o = ev.involved_object
    return (ev.source.component, ev.source.host, o.kind, o.namespace, o.name, o.uid, o.api_version)


def event_key(ev: core_pb2.Event) -> tuple[str, ...]:
    """getEventKey: source, involved object (with fieldPath), type, reason, message."""
    o = ev.involved_object
    return (
        ev.source.component,
        ev.source.host,
        o.kind,
        o.namespace,
        o.name,
        o.field_path,
        o.uid,
        o.api_version,
        ev.type,
        ev.reason,
        ev.message,
    )


def spam_key(ev: core_pb2.Event) -> tuple[str, ...]:
    """getSpamKey: source and involved object."""
    return _ref_key(ev)


def aggregate_key(ev: core_pb2.Event) -> tuple[tuple[str, ...], str]:
    """EventAggregatorByReasonFunc: (everything but the message, the message)."""
    return (
        (*_ref_key(ev), ev.type, ev.reason, ev.reporting_component, ev.reporting_instance),
        ev.message,
    )


class TokenBucket:
    """flowcontrol's token bucket on an injected clock: `burst` tokens, refilled at `qps`."""

    def __init__(self, qps: float, burst: int, now: float) -> None:
        self.qps = qps
        self.burst = burst
        self.tokens = float(burst)
        self.last = now

    def try_accept(self, now: float) -> bool:
        self.tokens = min(float(self.burst), self.tokens + max(0.0, now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


class Pacer:
    """A token bucket that waits (client-go's client-side rate limiter, flowcontrol's
    Wait): `wait()` returns once a token is taken. One pacer may be shared by several
    writers so that together they stay under `qps` after a burst of `burst`."""

    def __init__(self, clock: Clock, qps: float, burst: int) -> None:
        self.clock = clock
        self.bucket = TokenBucket(qps, burst, clock.monotonic())

    async def wait(self) -> None:
        for _ in range(1000):  # bounded: each sleep is the time one token takes
            if self.bucket.try_accept(self.clock.monotonic()):
                return
            await self.clock.sleep(max(1.0 - self.bucket.tokens, 0.0) / self.bucket.qps)
        self.bucket.tokens = 0.0


@dataclass(slots=True)
class _Aggregate:
    local_keys: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass(slots=True)
class _Observation:
    count: int
    first_timestamp: str
    name: str
    resource_version: str


@dataclass(slots=True)
class Correlation:
    """What to write: `event` (created, or patched with `patch` when `patch` is set), or
    nothing (`skip`, the spam filter refused it)."""

    event: core_pb2.Event | None
    patch: dict[str, Any] | None = None
    skip: bool = False


class EventCorrelator:
    """client-go's EventCorrelator with its default options, on an injected clock."""

    def __init__(
        self,
        clock: Clock,
        *,
        lru_entries: int = LRU_ENTRIES,
        max_events: int = AGGREGATE_MAX_EVENTS,
        max_interval: float = AGGREGATE_INTERVAL_S,
        burst: int = SPAM_BURST,
        qps: float = SPAM_QPS,
    ) -> None:
        self.clock = clock
        self.max_events = max_events
        self.max_interval = max_interval
        self.burst = burst
        self.qps = qps
        self._spam = _Lru(lru_entries)
        self._aggregates = _Lru(lru_entries)
        self._observed = _Lru(lru_entries)

    def correlate(self, new: core_pb2.Event) -> Correlation:
        """EventCorrelate: aggregate, then observe (count), then the spam filter."""
        ev, key = self._aggregate(new)
        ev, patch = self._observe(ev, key)
        if self._filter(ev):
            return Correlation(None, skip=True)
        return Correlation(ev, patch)

    def update_state(self, ev: core_pb2.Event) -> None:
        """The server's copy after a write: later repeats patch it (its name and version)."""
        self._observed.add(
            event_key(ev),
            _Observation(
                ev.count, ev.first_timestamp, ev.metadata.name, ev.metadata.resource_version
            ),
        )

    def _filter(self, ev: core_pb2.Event) -> bool:
        now = self.clock.now()
        key = spam_key(ev)
        bucket = self._spam.get(key)
        if bucket is None:
            bucket = TokenBucket(self.qps, self.burst, now)
        refused = not bucket.try_accept(now)
        self._spam.add(key, bucket)
        return refused

    def _aggregate(self, new: core_pb2.Event) -> tuple[core_pb2.Event, Hashable]:
        now = self.clock.now()
        agg_key, local_key = aggregate_key(new)
        record = self._aggregates.get(agg_key)
        # A record older than the interval (or none) starts afresh.
        if record is None or now - record.last > self.max_interval:
            record = _Aggregate()
        record.local_keys.add(local_key)
        record.last = now
        self._aggregates.add(agg_key, record)
        if len(record.local_keys) < self.max_events:
            return new, event_key(new)
        # Do not grow the set beyond the max (upstream pops an arbitrary key).
        record.local_keys.pop()
        stamp = rfc3339(now)
        combined = core_pb2.Event(
            involved_object=new.involved_object,
            message="(combined from similar events): " + new.message,
            type=new.type,
            reason=new.reason,
            source=new.source,
            first_timestamp=stamp,
            last_timestamp=stamp,
            count=1,
        )
        combined.metadata.name = f"{new.involved_object.name}.{int(now * 1e9):x}"
        combined.metadata.namespace = new.metadata.namespace
        return combined, agg_key

    def _observe(
        self, new: core_pb2.Event, key: Hashable
    ) -> tuple[core_pb2.Event, dict[str, Any] | None]:
        ev = core_pb2.Event()
        ev.CopyFrom(new)
        patch: dict[str, Any] | None = None
        last = self._observed.get(key)
        if last is not None and last.count > 0:
            ev.metadata.name = last.name
            ev.metadata.resource_version = last.resource_version
            ev.first_timestamp = last.first_timestamp
            ev.count = last.count + 1
            # The two-way merge patch upstream computes: exactly these three fields.
            patch = {
                "count": ev.count,
                "lastTimestamp": ev.last_timestamp,
                "message": ev.message,
            }
        self._observed.add(
            key,
            _Observation(
                ev.count, ev.first_timestamp, ev.metadata.name, ev.metadata.resource_version
            ),
        )
        return ev, patch


class EventRecorder:
    """Records core/v1 Events about objects for `component`: never blocks, never raises.

    `event()` queues (bounded; full → dropped and counted); one background writer
    correlates and writes them in order. Call `close()` when the component stops."""

    def __init__(
        self,
        client: Client,
        component: str,
        clock: Clock,
        *,
        enabled: bool = True,
        host: str = "",
        reporting_instance: str = "",
        queue_size: int = MAX_QUEUED_EVENTS,
        max_tries: int = MAX_TRIES_PER_EVENT,
        retry_sleep: float = SLEEP_BETWEEN_TRIES_S,
        correlator: EventCorrelator | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self.client = client
        self.component = component
        self.clock = clock
        self.enabled = enabled
        self.host = host
        self.reporting_instance = reporting_instance
        self.queue_size = queue_size
        self.max_tries = max_tries
        self.retry_sleep = retry_sleep
        self.correlator = correlator or EventCorrelator(clock)
        #: Paces the writes (a component's client QPS), shared with its other writers.
        self.pacer = pacer
        #: Events dropped because the queue was full (upstream's DropIfChannelFull).
        self.dropped = 0
        #: Events the spam filter refused, and writes the server refused or that ran out
        #: of tries.
        self.filtered = 0
        self.failed = 0
        self.written = 0
        self._queue: collections.deque[tuple[core_pb2.Event, asyncio.Future[bool] | None]] = (
            collections.deque()
        )
        self._wake = asyncio.Event()
        self._idle = asyncio.Event()
        self._idle.set()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    def event(
        self,
        obj: Message,
        type_: str,
        reason: str,
        message: str,
        *,
        action: str = "",
    ) -> None:
        """Record an event about `obj` (a Kubernetes object with metadata)."""
        if not self.enabled or self._closed:
            return
        meta = object_meta(obj)
        ev = new_event(
            self.clock.now(),
            kind=obj.kind or type(obj).__name__,  # type: ignore[attr-defined]
            name=meta.name,
            namespace=meta.namespace,
            uid=meta.uid,
            api_version=obj.api_version or "v1",  # type: ignore[attr-defined]
            resource_version=meta.resource_version,
            reason=reason,
            message=message,
            type_=type_,
            component=self.component,
            action=action,
            reporting_instance=self.reporting_instance,
        )
        self.record(ev)

    def record(self, ev: core_pb2.Event) -> None:
        """Queue a ready-made Event (its source host set to the recorder's)."""
        self._put(ev, None)

    def record_waitable(self, ev: core_pb2.Event) -> asyncio.Future[bool]:
        """`record`, and a future resolved once the event is handled: True when written,
        False when dropped, filtered, refused or the recorder closed (never cancelled)."""
        fut: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._put(ev, fut)
        return fut

    def _put(self, ev: core_pb2.Event, fut: asyncio.Future[bool] | None) -> None:
        if not self.enabled or self._closed or len(self._queue) >= self.queue_size:
            if self.enabled and not self._closed:
                self.dropped += 1
                log.debug(
                    "event queue full; dropping %s for %s", ev.reason, ev.involved_object.name
                )
            _resolve(fut, False)
            return
        if self.host and not ev.source.host:
            ev.source.host = self.host
        self._queue.append((ev, fut))
        self._idle.clear()
        self._wake.set()
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(
                self._run(), name=f"events-{self.component}"
            )

    @property
    def pending(self) -> int:
        return len(self._queue)

    async def flush(self) -> None:
        """Wait until every queued event is written, filtered or given up on."""
        if self._task is None:
            return
        await self._idle.wait()

    async def close(self) -> None:
        """Stop writing; events still queued are dropped (upstream's Shutdown)."""
        self._closed = True
        while self._queue:
            _resolve(self._queue.popleft()[1], False)
        self._idle.set()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            if not self._queue:
                self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            ev, fut = self._queue.popleft()
            written = False
            try:
                written = await self._record_to_sink(ev)
            except asyncio.CancelledError:
                _resolve(fut, False)
                raise
            except Exception:  # noqa: BLE001 - one bad event must not stop the writer
                self.failed += 1
                log.exception("could not record event %s", ev.reason)
            _resolve(fut, written)

    async def write_now(self, ev: core_pb2.Event) -> bool:
        """Correlate and write `ev` now, on the caller's task (paced and retried as the
        queued ones; for a caller that queues writes itself, the scheduler's API
        dispatcher): whether it was written. Never raises but for cancellation."""
        if not self.enabled or self._closed:
            return False
        if self.host and not ev.source.host:
            ev.source.host = self.host
        try:
            return await self._record_to_sink(ev)
        except asyncio.CancelledError:
            raise
        except Exception:  # noqa: BLE001 - as the writer: one bad event is logged
            self.failed += 1
            log.exception("could not record event %s", ev.reason)
            return False

    async def _record_to_sink(self, ev: core_pb2.Event) -> bool:
        result = self.correlator.correlate(ev)
        if result.skip or result.event is None:
            self.filtered += 1
            return False
        tries = 0
        written_before = self.written
        while True:
            if self.pacer is not None:
                await self.pacer.wait()
            if await self._write(result.event, result.patch):
                return self.written > written_before
            tries += 1
            if tries >= self.max_tries:
                self.failed += 1
                log.warning("could not write event %s (retry limit reached)", ev.reason)
                return False
            # The first sleep randomised, so clients do not retry in step.
            delay = self.retry_sleep * (random.random() if tries == 1 else 1.0)  # noqa: S311
            await self.clock.sleep(delay)

    async def _write(self, ev: core_pb2.Event, patch: dict[str, Any] | None) -> bool:
        """recordEvent: True when written or abandoned, False to retry."""
        obj = ev.involved_object
        try:
            written: core_pb2.Event | None = None
            if patch is not None:
                try:
                    written = await self.client.patch(
                        EVENTS, ev.metadata.name, json.dumps(patch), namespace=ev.metadata.namespace
                    )
                except NotFoundError:
                    written = None  # removed meanwhile: create it anew
            if written is None:
                ev.metadata.resource_version = ""
                written = await self.client.create(ev)
        except (UnavailableError, OSError) as e:
            # Only the apiserver out of reach is retried, holding the queue meanwhile
            # (upstream: "if we can't contact the server, then hold everything while we
            # keep trying"); every answer it gave is final.
            log.info("could not write event %s for %s %s: %s", ev.reason, obj.kind, obj.name, e)
            return False
        except ApiError as e:
            # A StatusError upstream, not retried: 429 TooManyRequests (retrying on the
            # single writer would hold every queued event through an overload) and
            # AlreadyExists (a concurrent create of the same event, even after a patch
            # found it gone) included.
            log.info("event %s for %s %s refused: %s", ev.reason, obj.kind, obj.name, e)
            self.failed += 1
            return True
        self.written += 1
        if isinstance(written, core_pb2.Event):
            self.correlator.update_state(written)
        return True


def _resolve(fut: asyncio.Future[bool] | None, value: bool) -> None:
    if fut is not None and not fut.done():
        fut.set_result(value)


__all__ = [
    "Correlation",
    "EventCorrelator",
    "EventRecorder",
    "Pacer",
    "TokenBucket",
    "aggregate_key",
    "event_key",
    "spam_key",
]
