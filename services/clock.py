"""The injected clock: logic never calls time.time() or asyncio.sleep directly, so tests
and the time scale can control time. Also the one place timestamps are written and read as
text (metav1.Time / MicroTime, RFC 3339)."""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    #: Simulated seconds per wall second (1 for real time).
    scale: float

    def now(self) -> float:
        """Seconds since the epoch."""
        ...

    def monotonic(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...


class RealClock:
    scale = 1.0

    def now(self) -> float:
        return time.time()

    def monotonic(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


class FakeClock:
    """A clock for tests: time moves only when `advance` is called."""

    scale = 1.0

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self._now = start
        self._mono = 0.0

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._mono += seconds

    async def sleep(self, seconds: float) -> None:
        self.advance(seconds)
        await asyncio.sleep(0)


class ScaledClock:
    """Simulated time that runs `scale` times faster than the wall clock from `origin`
    (seconds since the epoch; every component of one cluster shares it, so their
    timestamps agree). Durations in the logic are simulated seconds: `sleep(300)` takes
    300 / scale real seconds and `now()` moves on by 300. Timestamps written with it are
    simulated time, equal to wall time at `origin` and ahead of it afterwards."""

    def __init__(self, scale: float, origin: float | None = None) -> None:
        if not scale > 0:
            raise ValueError(f"time scale must be positive, got {scale}")
        self.scale = float(scale)
        self.origin = time.time() if origin is None else origin
        self._mono0 = time.monotonic()

    def now(self) -> float:
        return self.origin + (time.time() - self.origin) * self.scale

    def monotonic(self) -> float:
        return (time.monotonic() - self._mono0) * self.scale

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds) / self.scale)


def clock_for(scale: float, origin: float | None = None) -> Clock:
    """The clock components use: real time at scale 1, simulated time otherwise."""
    if scale == 1:
        return RealClock()
    return ScaledClock(scale, origin)


def rfc3339(ts: float) -> str:
    """Kubernetes' metav1.Time text: second precision, UTC, 'Z'."""
    return datetime.fromtimestamp(int(ts), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def rfc3339_micro(ts: float) -> str:
    """Kubernetes' MicroTime text (leases): microsecond precision, UTC, 'Z'."""
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch from a Time or MicroTime text (what `rfc3339` and
    `rfc3339_micro` write); a numeric offset instead of 'Z' is accepted too, as Go's
    time.RFC3339 does. Raises ValueError for anything else."""
    if text.endswith("Z"):
        fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
        return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    fmt = "%Y-%m-%dT%H:%M:%S.%f%z" if "." in text else "%Y-%m-%dT%H:%M:%S%z"
    if text[-6:-5] not in ("+", "-") or text[-3:-2] != ":":
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    return datetime.strptime(text, fmt).timestamp()
