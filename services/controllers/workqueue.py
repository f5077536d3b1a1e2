"""client-go's rate-limited work queue (k8s.io/client-go/util/workqueue), for asyncio.

Every controller funnels its informer events into one of these: handlers only `add` a key
(cheap, never blocking), and a fixed pool of workers `get` keys and reconcile them. The
queue guarantees what makes that safe:

- a key waiting to be processed is stored once, however many events name it (dedup);
- a key is never handed to two workers at once: re-added while being processed, it waits
  in `dirty` and is queued again only when its worker calls `done`;
- a key can come back later (`add_after`), or after a per-key exponential backoff
  (`add_rate_limited`, reset by `forget` once a sync succeeds).

One key's life (the dirty/processing state machine of client-go's Type):

        add                get                      done
    ────────► dirty+queue ─────► processing ──────────────────────► gone
                 ▲                   │  add (stays dirty only)          │
                 │                   ▼                                  │
                 └──────── dirty+processing ───── done: queued again ◄──┘

    add_after(d) ─► waiting (a heap ordered by ready time; a key keeps its earliest time)
                    ──ready──► add

After `shutdown` nothing new is accepted, waiting keys are dropped, and `get` hands out
what is still queued and then returns None (client-go's "quit").

Time comes from the injected Clock. Delayed keys are promoted whenever the queue is looked
at (`get`, `len`); a worker blocked in `get` arms one shared timer for the earliest ready
time, so on a FakeClock a blocked `get` moves time on to that instant (FakeClock.sleep),
and tests that do not block can `clock.advance()` and look.

Concurrency: all methods run on the event loop thread and only `get` suspends; no state is
half-updated across an await, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from services.api.machinery.errors import ApiError
from services.clock import Clock, RealClock

T = TypeVar("T", bound=Hashable)

log = logging.getLogger(__name__)

#: client-go's DefaultControllerRateLimiter: per-item 5 ms doubling to 1000 s, and an overall
#: token bucket of 10 qps with a burst of 100; the larger delay of the two wins.
DEFAULT_BASE_DELAY = 0.005
DEFAULT_MAX_DELAY = 1000.0
DEFAULT_QPS = 10.0
DEFAULT_BURST = 100


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """How long `item` should wait before its next try (and count this failure)."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (its sync succeeded)."""
        ...

    def num_requeues(self, item: Hashable) -> int: ...


@dataclass
class ItemExponentialFailureRateLimiter:
    """base × 2^failures, capped at max_delay, counted per item until `forget`."""

    base_delay: float = DEFAULT_BASE_DELAY
    max_delay: float = DEFAULT_MAX_DELAY
    _failures: dict[Hashable, int] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if not 0 < self.base_delay <= self.max_delay:
            raise ValueError(
                f"need 0 < base_delay <= max_delay, got {self.base_delay} and {self.max_delay}"
            )

    def when(self, item: Hashable) -> float:
        exp = self._failures.get(item, 0)
        self._failures[item] = exp + 1
        if exp >= 64:  # 2**64 × base is past any cap; avoid float overflow
            return self.max_delay
        return min(self.base_delay * 2.0**exp, self.max_delay)

    def forget(self, item: Hashable) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        return self._failures.get(item, 0)


@dataclass
class BucketRateLimiter:
    """An overall token bucket (golang.org/x/time/rate's Reserve): `burst` tokens, refilled
    at `qps`; each `when` takes one and waits for it when the bucket is empty."""

    qps: float = DEFAULT_QPS
    burst: int = DEFAULT_BURST
    clock: Clock = field(default_factory=RealClock)

    def __post_init__(self) -> None:
        if self.qps <= 0 or self.burst < 1:
            raise ValueError(f"need qps > 0 and burst >= 1, got {self.qps} and {self.burst}")
        self._tokens = float(self.burst)
        self._last = self.clock.monotonic()

    def when(self, item: Hashable) -> float:
        now = self.clock.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        pass

    def num_requeues(self, item: Hashable) -> int:
        return 0


@dataclass
class MaxOfRateLimiter:
    """The longest delay any of `limiters` asks for."""

    limiters: Sequence[RateLimiter]

    def when(self, item: Hashable) -> float:
        return max(limiter.when(item) for limiter in self.limiters)

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(
    clock: Clock | None = None,
    *,
    base_delay: float = DEFAULT_BASE_DELAY,
    max_delay: float = DEFAULT_MAX_DELAY,
) -> RateLimiter:
    """client-go's DefaultControllerRateLimiter (the delays are settable for tests)."""
    return MaxOfRateLimiter(
        [
            ItemExponentialFailureRateLimiter(base_delay, max_delay),
            BucketRateLimiter(DEFAULT_QPS, DEFAULT_BURST, clock or RealClock()),
        ]
    )


class WorkQueue(Generic[T]):
    """A deduplicating, delaying, rate-limited queue of keys (see the module docstring)."""

    def __init__(
        self,
        *,
        clock: Clock | None = None,
        rate_limiter: RateLimiter | None = None,
        name: str = "",
    ) -> None:
        self.name = name
        self._clock = clock or RealClock()
        self._limiter = rate_limiter or default_controller_rate_limiter(self._clock)
        self._queue: deque[T] = deque()
        self._dirty: set[T] = set()
        self._processing: set[T] = set()
        # Delayed keys: a heap of (ready_at, seq, key); `_ready_at` holds each key's live
        # entry, so entries superseded by an earlier time are skipped when popped.
        self._waiting: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._seq = itertools.count()
        self._shutting_down = False
        self._nonempty = asyncio.Event()
        self._getters = 0
        self._timer: asyncio.Task[None] | None = None
        self._timer_at = 0.0

    # ------------------------------------------------------------------ the queue (Type)

    def add(self, item: T) -> None:
        """Queue `item` unless it is already queued; if a worker holds it, it is queued
        again when that worker calls `done`."""
        if self._shutting_down or item in self._dirty:
            return
        self._dirty.add(item)
        if item in self._processing:
            return
        self._queue.append(item)
        self._nonempty.set()

    async def get(self) -> T | None:
        """The next key to process (blocking), or None once shut down and drained.
        The caller must call `done(key)` when finished with it."""
        while True:
            self._promote_ready()
            if self._queue:
                item = self._queue.popleft()
                self._processing.add(item)
                self._dirty.discard(item)
                return item
            if self._shutting_down:
                return None
            self._nonempty.clear()
            self._getters += 1
            try:
                self._arm_timer()
                await self._nonempty.wait()
            finally:
                self._getters -= 1

    def done(self, item: T) -> None:
        """The worker is finished with `item`; re-queue it if it was added meanwhile."""
        self._processing.discard(item)
        if item in self._dirty:
            self._queue.append(item)
            self._nonempty.set()

    def __len__(self) -> int:
        """Keys ready to be handed out (delayed keys count once their time has come)."""
        self._promote_ready()
        return len(self._queue)

    def shutdown(self) -> None:
        """Accept nothing more, drop delayed keys, wake every blocked `get`."""
        self._shutting_down = True
        self._waiting.clear()
        self._ready_at.clear()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._nonempty.set()

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    def is_processing(self, item: T) -> bool:
        return item in self._processing

    # ------------------------------------------------------------- delaying (DelayingQueue)

    def add_after(self, item: T, delay: float) -> None:
        """Add `item` once `delay` seconds have passed; a key already waiting keeps the
        earlier of its two ready times."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(item)
            return
        ready_at = self._clock.monotonic() + delay
        current = self._ready_at.get(item)
        if current is not None and current <= ready_at:
            return
        self._ready_at[item] = ready_at
        heapq.heappush(self._waiting, (ready_at, next(self._seq), item))
        self._arm_timer()

    def waiting(self) -> int:
        """Keys still waiting for their time."""
        return len(self._ready_at)

    def _promote_ready(self) -> None:
        now = self._clock.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            ready_at, _, item = heapq.heappop(self._waiting)
            if self._ready_at.get(item) == ready_at:
                del self._ready_at[item]
                self.add(item)

    def _arm_timer(self) -> None:
        # Only blocked workers need waking; with none, the next look promotes ready keys.
        if not self._waiting or self._getters == 0 or self._shutting_down:
            return
        at = self._waiting[0][0]
        if self._timer is not None and not self._timer.done():
            if self._timer_at <= at:
                return
            self._timer.cancel()
        self._timer_at = at
        self._timer = asyncio.get_running_loop().create_task(self._fire(at))

    async def _fire(self, at: float) -> None:
        await self._clock.sleep(max(0.0, at - self._clock.monotonic()))
        self._timer = None
        self._promote_ready()
        self._nonempty.set()  # let blocked getters look (and re-arm if it was early)

    # --------------------------------------------------------- rate limiting (RateLimiting)

    def add_rate_limited(self, item: T) -> None:
        """Add `item` after the rate limiter's delay (which counts this as a failure)."""
        self.add_after(item, self._limiter.when(item))

    def forget(self, item: T) -> None:
        """Reset `item`'s backoff (call when its sync succeeded)."""
        self._limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self._limiter.num_requeues(item)


def controller_queue(
    name: str, *, clock: Clock, base_delay: float, max_delay: float
) -> WorkQueue[str]:
    """The queue of object keys a reconciling controller's workers drain: failed keys
    back off per key from `base_delay` doubling to `max_delay`, under client-go's
    overall 10 qps bucket (DefaultControllerRateLimiter)."""
    return WorkQueue(
        clock=clock,
        rate_limiter=default_controller_rate_limiter(
            clock, base_delay=base_delay, max_delay=max_delay
        ),
        name=name,
    )


async def run_worker(
    queue: WorkQueue[T],
    sync: Callable[[T], Awaitable[None]],
    *,
    what: str,
    retry: Callable[[T, Exception], bool | None] | None = None,
) -> None:
    """A worker (client-go's processNextWorkItem + handleErr): take a key, sync it, and
    until the queue shuts down take the next. A sync that raises costs only its own key:
    the error is logged with the key and the key comes back after its per-key backoff
    (`add_rate_limited`), unless `retry(key, error)` says it should not (False: logged,
    then forgotten; None: forgotten without a word, the policy has said what it had to,
    as upstream's handleErr for a terminating namespace). A sync that succeeds resets the
    key's backoff (`forget`)."""
    while (key := await queue.get()) is not None:
        try:
            await sync(key)
            queue.forget(key)
        except asyncio.CancelledError:
            raise
        except Exception as e:  # noqa: BLE001 - one key's failure must not end the worker
            again = True if retry is None else retry(key, e)
            if again is None:
                queue.forget(key)
                continue
            bug = not isinstance(e, _EXPECTED)
            log.log(
                logging.ERROR if bug else logging.WARNING,
                "%s %s: sync failed: %s%s",
                what,
                key,
                e,
                f" (failure {queue.num_requeues(key) + 1}; retried with backoff)" if again else "",
                exc_info=bug,
            )
            if again:
                queue.add_rate_limited(key)
            else:
                queue.forget(key)
        finally:
            queue.done(key)


async def run_workers(
    queue: WorkQueue[T],
    sync: Callable[[T], Awaitable[None]],
    *,
    workers: int,
    stop: asyncio.Event,
    what: str,
    retry: Callable[[T, Exception], bool | None] | None = None,
    shutdown: bool = True,
) -> None:
    """`workers` workers (`run_worker`) on `queue` until `stop` is set, as every queue-driven
    controller runs them (upstream: `go wait.UntilWithContext(ctx, worker)` N times, then
    `<-ctx.Done()`). At stop the queue is shut down, unless `shutdown` is False (a queue
    that must keep working if its controller runs again), and the workers are cancelled
    (a cancelled worker's `finally` hands its key back) and awaited."""
    tasks = [
        asyncio.create_task(
            run_worker(queue, sync, what=what, retry=retry), name=f"{what}-worker-{i}"
        )
        for i in range(workers)
    ]
    try:
        await stop.wait()
    finally:
        if shutdown:
            queue.shutdown()
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


#: Errors that are the world's, not a bug: logged without a traceback.
_EXPECTED: tuple[type[Exception], ...] = (ApiError, ConnectionError, TimeoutError)


@dataclass
class WorkerSettings:
    """The settings a controller with one work queue shares: its workers and the per-key
    retry backoff. A controller's config subclasses it and may change the defaults."""

    workers: int = 1
    """Keys synced at once."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )
