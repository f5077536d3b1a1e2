"""The rate limit on NoExecute tainting: a token bucket and a timed queue drained
through it (upstream pkg/controller/nodelifecycle/scheduler/rate_limited_queue.go).

Kept apart from the controller because it knows nothing of nodes: it queues strings by
the time they are due and hands them out no faster than its bucket allows. The node
lifecycle controller keeps one queue per zone and changes its rate (`swap_limiter`) as
the zone's state changes. Times are the injected clock's monotonic seconds.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from services.clock import Clock

#: Refills add up in floats (ten refills of 0.1 are 0.999...): a token this close is whole.
_TOKEN_EPSILON = 1e-9


class TokenBucket:
    """client-go flowcontrol's token bucket: at most `burst` tokens, refilled at `qps` a
    second of the clock's monotonic time, full at the start. qps <= 0 never accepts
    (upstream's "never" limiter)."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self.qps = qps if qps > 0 else 0.0
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst) if self.qps else 0.0
        self._at = clock.monotonic()

    def _refill(self) -> None:
        now = self.clock.monotonic()
        if self.qps:
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now

    def try_accept(self) -> bool:
        self._refill()
        if self._tokens >= 1.0 - _TOKEN_EPSILON:
            self._tokens -= 1.0
            return True
        return False

    def wait_time(self) -> float | None:
        """Seconds until a token is there (0: now), or None when none ever will be."""
        if not self.qps:
            return None
        self._refill()
        return max(0.0, (1.0 - _TOKEN_EPSILON - self._tokens) / self.qps)


@dataclass
class TimedValue:
    value: str
    uid: str
    added_at: float
    process_at: float
    seq: int


class RateLimitedTimedQueue:
    """upstream scheduler.RateLimitedTimedQueue: a heap of values by process time, each
    value at most once, drained through a token bucket of burst 1.

    A value is queued (`add`) → processed by `process` → kept in the member set even
    after it succeeded, so it is not added again until `remove` (the node became Ready,
    or its taint went away). Times are the clock's monotonic seconds."""

    BURST = 1

    def __init__(self, qps: float, *, clock: Clock) -> None:
        self.clock = clock
        self.limiter = TokenBucket(qps, self.BURST, clock)
        self._members: set[str] = set()
        self._queued: dict[str, TimedValue] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, value: object) -> bool:
        return value in self._queued

    def _push(self, tv: TimedValue) -> None:
        self._queued[tv.value] = tv
        heapq.heappush(self._heap, (tv.process_at, tv.seq, tv.value))

    def add(self, value: str, uid: str = "") -> bool:
        """Queue `value` to be processed now, unless it is a member already."""
        if value in self._members:
            return False
        now = self.clock.monotonic()
        self._members.add(value)
        self._push(TimedValue(value, uid, now, now, next(self._seq)))
        return True

    def remove(self, value: str) -> bool:
        """Drop `value` and let it be added again; whether it was a member."""
        if value not in self._members:
            return False
        self._members.discard(value)
        self._queued.pop(value, None)
        return True

    def head(self) -> TimedValue | None:
        while self._heap:
            _, seq, value = self._heap[0]
            tv = self._queued.get(value)
            if tv is not None and tv.seq == seq:
                return tv
            heapq.heappop(self._heap)
        return None

    async def process(self, fn: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        """Hand due values to `fn`, one token each, until none is due or no token is
        left. `fn` says (done, retry_after): not done → processed again retry_after later.
        (Upstream takes the token before looking at the time; here a value that is not
        due yet does not spend one.)"""
        while (tv := self.head()) is not None:
            now = self.clock.monotonic()
            if now < tv.process_at or not self.limiter.try_accept():
                return
            ok, retry_after = await fn(tv)
            current = self._queued.get(tv.value)
            if current is not tv:
                continue  # removed (or re-added) while fn ran
            del self._queued[tv.value]
            if not ok:
                tv.process_at = self.clock.monotonic() + retry_after
                tv.seq = next(self._seq)
                self._push(tv)

    def swap_limiter(self, qps: float) -> None:
        """Change the rate. A bucket that was empty leaves the new one empty too, so a
        change of state does not grant a burst (upstream SwapLimiter)."""
        qps = qps if qps > 0 else 0.0
        if self.limiter.qps == qps:
            return
        fresh = TokenBucket(qps, self.BURST, self.clock)
        if qps and not self.limiter.try_accept():
            fresh.try_accept()
        self.limiter = fresh

    def next_ready_in(self) -> float | None:
        """Seconds until `process` could do something, or None (empty, or never)."""
        tv = self.head()
        if tv is None:
            return None
        wait = self.limiter.wait_time()
        if wait is None:
            return None
        return max(wait, tv.process_at - self.clock.monotonic())


__all__ = ["RateLimitedTimedQueue", "TimedValue", "TokenBucket"]
