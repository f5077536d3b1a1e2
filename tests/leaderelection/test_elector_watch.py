"""A standby learns the election key from its watch (memory store and real etcd): renewals
arrive as records, a released key is campaigned for at once, and a silent holder's key is
expired from the record the watch last told, all without reading the key (each read is a
round trip on the takeover's path). With its watch broken a standby still polls and takes
over.

The electors run on a ManualClock, so time moves only when a test moves it: a holder renews
exactly when the test advances one retry period (never late, however loaded the machine),
and while the clock stands still no pause ends, so no poll can happen and whatever a standby
does then it learnt from its watch. The timings are kube-scheduler's (15 s / 10 s / 2 s) on
that clock; the etcd lease under the key lasts 15 real seconds, longer than any test here.
Tests wait on callbacks and on the standby's watch calls, never on sleeps; GUARD only bounds
a wait that would otherwise hang.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.leaderelection import (
    JITTER_FACTOR,
    LeaderElectionConfig,
    LeaderElector,
    LeaseTimings,
)
from services.storage import Storage, StorageUnavailableError
from tests.leaderelection.test_elector import Candidate, Election, ManualClock, Probe

LEASE, RENEW, RETRY = 15.0, 10.0, 2.0
#: Real seconds a wait may take before the test fails instead of hanging.
GUARD = 10.0


class CountingStorage:
    """Delegates to a store, counting reads of single keys and noting where each watch
    starts; `watch_broken` makes every watch fail at once."""

    def __init__(self, inner: Storage) -> None:
        self._inner = inner
        self.gets = 0
        self.watch_broken = False
        #: The highest start revision a watch was opened at.
        self.watching_from = 0
        self._watched = asyncio.Event()

    async def get(self, key: str) -> Any:
        self.gets += 1
        return await self._inner.get(key)

    def watch(self, prefix: str, start_revision: int) -> Any:
        self.watching_from = max(self.watching_from, start_revision)
        self._watched.set()
        if self.watch_broken:
            return self._broken()
        return self._inner.watch(prefix, start_revision)

    async def _broken(self) -> AsyncIterator[Any]:
        raise StorageUnavailableError("injected: the watch broke")
        yield  # an async generator, like the real watch

    async def standing_by_after(self, revision: int) -> None:
        """Until the standby watches from past `revision`: it has taken in the key as
        written at `revision` and waits again, its pause already timed (the elector sets
        the pause's sleep before its watch task first runs)."""

        async def until() -> None:
            while self.watching_from <= revision:
                self._watched.clear()
                await self._watched.wait()

        await asyncio.wait_for(until(), GUARD)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture
async def election(storage: Storage) -> AsyncIterator[Election]:
    e = Election(storage)
    try:
        yield e
    finally:
        await e.close()


def start(election: Election, name: str, clock: ManualClock, storage: Any = None) -> Candidate:
    cfg = LeaderElectionConfig(
        timings=LeaseTimings(lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY),
        identity=name,
        key=election.key,
    )
    probe = Probe(name)
    elector = LeaderElector(storage or election.storage, cfg, probe.callbacks(), clock=clock)
    c = Candidate(elector, probe)
    election.candidates.append(c)
    return c


def standby(election: Election, name: str, clock: ManualClock) -> tuple[Candidate, CountingStorage]:
    counting = CountingStorage(election.storage)
    return start(election, name, clock, counting), counting


async def leader(election: Election, clock: ManualClock) -> Candidate:
    a = start(election, "a", clock)
    await a.probe.wait_for(lambda: bool(a.probe.led_at), GUARD)
    return a


async def revision(election: Election) -> int:
    """The election key's mod_revision (read past the standby's counting store)."""
    kv = await election.storage.get(election.key)
    assert kv is not None
    return int(kv.mod_revision)


async def stop(c: Candidate) -> None:
    c.stop.set()
    await asyncio.wait_for(c.task, GUARD)


async def test_a_standby_follows_renewals_without_reading_the_key(election: Election) -> None:
    clock = ManualClock()
    a = await leader(election, clock)
    b, counting = standby(election, "b", clock)
    await counting.standing_by_after(await revision(election))
    reads = counting.gets

    for _ in range(5):  # the holder renews on time: once every retry period
        renewals = len(a.probe.records)
        clock.advance(RETRY)
        await a.probe.wait_for(lambda n=renewals: len(a.probe.records) > n, GUARD)
        await counting.standing_by_after(await revision(election))
    assert counting.gets == reads, "every renewal came on the watch"
    assert b.elector.leader_identity == "a" and not b.probe.led_at


async def test_a_released_key_is_campaigned_for_without_reading_it(election: Election) -> None:
    clock = ManualClock()
    a = await leader(election, clock)
    b, counting = standby(election, "b", clock)
    await counting.standing_by_after(await revision(election))
    reads = counting.gets

    await stop(a)  # releases: the key is deleted
    # The clock stands still, so none of b's pauses ends: only its watch can tell it.
    await b.probe.wait_for(lambda: bool(b.probe.led_at), GUARD)
    assert counting.gets == reads
    assert b.elector.fencing_token is not None


async def test_a_silent_holders_key_is_expired_from_what_the_watch_told(
    election: Election,
) -> None:
    clock = ManualClock()
    a = await leader(election, clock)
    b, counting = standby(election, "b", clock)
    await counting.standing_by_after(await revision(election))

    # Kill a: no release, its key is left (to expire, or be expired).
    a.task.cancel()
    election.candidates.remove(a)
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    reads = counting.gets
    clock.advance(LEASE)  # a has been silent for lease_duration
    await b.probe.wait_for(lambda: bool(b.probe.led_at), GUARD)
    assert counting.gets == reads
    kv = await election.storage.get(election.key)
    assert kv is not None and kv.value == b"b"


async def test_with_its_watch_broken_a_standby_polls_and_takes_over(election: Election) -> None:
    clock = ManualClock()
    a = await leader(election, clock)
    b, counting = standby(election, "b", clock)
    counting.watch_broken = True
    await counting.standing_by_after(await revision(election))  # its watch tried, and broke

    await stop(a)  # releases: the key is deleted, and b's broken watch cannot say so
    reads = counting.gets
    assert not b.probe.led_at, "nothing told b yet: its pause has not ended"
    clock.advance(RETRY * (1 + JITTER_FACTOR))  # b's pause ends, however it was jittered
    await b.probe.wait_for(lambda: bool(b.probe.led_at), GUARD)
    assert counting.gets > reads, "b polled: it read the key and found it free"
    assert b.elector.fencing_token is not None
