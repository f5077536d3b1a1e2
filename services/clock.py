"""The injected clock: logic never calls time.time() or asyncio.sleep directly, so tests
and the time scale can control time. Also the one place timestamps are written and read as
text (metav1.Time / MicroTime, RFC 3339).

One cluster clock. Under `kubera up --time-scale N` every component gets the same
`ScaledClock(N, origin)`: the supervisor takes `origin` (wall time) once, before it starts
anything, and hands it with the scale to each host config (apiserver, scheduler,
controller manager, node pools); `kubera get`/`describe` build it from the context file.
`now()` depends only on the wall clock, the origin and the scale, so every process reads
the same simulated time (across machines as far as their wall clocks agree, as upstream
relies on NTP), and every timestamp in an object is simulated time:
creationTimestamp and deletionTimestamp (apiserver), conditions and Events (all
writers), lastScheduleTime, startTime/completionTime, node Lease renewTime, PDB
disruptedPods, taints' timeAdded. Whoever compares such a timestamp with "now" (CronJob
schedules, activeDeadlineSeconds, ttlSecondsAfterFinished, podgc, node monitor grace,
tolerationSeconds, CrashLoopBackOff, the AGE of server-side tables) does it on that clock.

What stays on the wall clock (RealClock), and why — the rule: a duration from the
Kubernetes model (a spec field, a controller's or kubelet's period, upstream's backoffs
in the simulated components) is simulated; a mechanism that guards against real
failures of processes and networks, or that measures the real system, is not:
- leader election (lease duration, renew deadline, retry period) and the Lease objects
  the electors publish (their acquire/renew times): a paused process must lose its lease
  in real seconds, and failover is measured in them;
- gRPC deadlines, client timeouts, informers' reconnect backoff, etcd retries, the watch
  caches' bookmarks and resourceVersion waits;
- the scheduler's own pacing (queue backoff and flushes, the assume TTL, Permit waits)
  its write pacing and every latency metric: kube-scheduler is the system under study,
  its timing is measured, not simulated. It stamps and compares object times on the
  cluster clock (`Scheduler(cluster_clock=...)`);
- TLS certificates' validity.
A timestamp written on the wall clock (an elector's Lease renewTime) is never compared
with the cluster clock. (The controller manager and the kubelets run whole on the cluster
clock, their workqueue and event rate limits included: those limits are N times looser in
wall time; docs/differences.md.)
"""

from __future__ import annotations

import asyncio
import math
import re
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


#: The last second `rfc3339` formatted and its text: thousands of objects stamped within
#: one second share it (strftime costs ~5 µs, the lookup ~0.1 µs). A tuple, replaced whole.
_last_stamp: tuple[int, str] = (-(2**63), "")


def rfc3339(ts: float) -> str:
    """Kubernetes' metav1.Time text: second precision, UTC, 'Z'."""
    global _last_stamp
    second = int(ts)
    last = _last_stamp
    if last[0] == second:
        return last[1]
    text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    _last_stamp = (second, text)
    return text


def rfc3339_micro(ts: float) -> str:
    """Kubernetes' MicroTime text (leases): microsecond precision, UTC, 'Z'.

    The second's text comes from `rfc3339`'s cache; the microseconds are rounded as
    datetime.fromtimestamp rounds them (half to even on the fraction, a carry into the
    next second), so the text is the same as strftime's "%Y-%m-%dT%H:%M:%S.%fZ"."""
    frac, whole = math.modf(ts)
    micro = round(frac * 1e6)
    if micro >= 1_000_000:
        whole, micro = whole + 1.0, micro - 1_000_000
    elif micro < 0:
        whole, micro = whole - 1.0, micro + 1_000_000
    return f"{rfc3339(whole)[:-1]}.{micro:06d}Z"


#: The canonical texts `rfc3339` and `rfc3339_micro` write; parsed without strptime.
_CANONICAL = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?Z", re.ASCII
)


def parse_rfc3339(text: str) -> float:
    """Seconds since the epoch from a Time or MicroTime text (what `rfc3339` and
    `rfc3339_micro` write); a numeric offset instead of 'Z' is accepted too, as Go's
    time.RFC3339 does. Raises ValueError for anything else."""
    m = _CANONICAL.fullmatch(text)
    if m is not None:  # the common case, ~10x cheaper than strptime; the same result
        y, mo, d, h, mi, sec, frac = m.groups()
        micro = int(frac.ljust(6, "0")) if frac else 0
        return datetime(
            int(y), int(mo), int(d), int(h), int(mi), int(sec), micro, tzinfo=UTC
        ).timestamp()
    if text.endswith("Z"):
        fmt = "%Y-%m-%dT%H:%M:%S.%fZ" if "." in text else "%Y-%m-%dT%H:%M:%SZ"
        return datetime.strptime(text, fmt).replace(tzinfo=UTC).timestamp()
    fmt = "%Y-%m-%dT%H:%M:%S.%f%z" if "." in text else "%Y-%m-%dT%H:%M:%S%z"
    if text[-6:-5] not in ("+", "-") or text[-3:-2] != ":":
        raise ValueError(f"not an RFC 3339 time: {text!r}")
    return datetime.strptime(text, fmt).timestamp()
