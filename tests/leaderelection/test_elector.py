"""LeaderElector on the in-memory store and on real etcd (the `storage` fixture runs both).

Timings are short (lease 1.2 s, renew 0.8 s, retry 0.2 s); the session's etcd runs with fast
election settings, so it grants the 2 s leases these round up to. Tests wait on callbacks,
never on sleeps: a Probe records each callback and wakes whoever waits for a condition.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable
from typing import Any, cast

import pytest

from services.clock import RealClock
from services.leaderelection import (
    JITTER_FACTOR,
    Callbacks,
    LeaderElectionConfig,
    LeaderElectionRecord,
    LeaderElector,
    LeaseTimings,
)
from services.storage import Storage, StorageUnavailableError

LEASE, RENEW, RETRY = 1.2, 0.8, 0.2
#: Scheduling and round-trip allowance on top of a bound the elector promises.
SLACK = 0.3
_keys = itertools.count()


class Probe:
    """One elector's callbacks, recorded with monotonic times."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.term_stops: list[asyncio.Event] = []
        self.led_at: list[float] = []
        self.stopped_at: list[float] = []
        self.leaders: list[str] = []
        self.records: list[LeaderElectionRecord] = []
        self._changed = asyncio.Condition()

    async def _work(self, stop: asyncio.Event) -> None:
        self.term_stops.append(stop)
        self.led_at.append(time.monotonic())
        await self._notify()
        await stop.wait()

    def _stopped(self) -> None:
        self.stopped_at.append(time.monotonic())
        asyncio.get_running_loop().create_task(self._notify())

    def _new_leader(self, identity: str) -> None:
        self.leaders.append(identity)
        asyncio.get_running_loop().create_task(self._notify())

    def _transition(self, record: LeaderElectionRecord) -> None:
        self.records.append(record)
        asyncio.get_running_loop().create_task(self._notify())

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(predicate), timeout)

    def callbacks(self) -> Callbacks:
        return Callbacks(
            on_started_leading=self._work,
            on_stopped_leading=self._stopped,
            on_new_leader=self._new_leader,
            on_transition=self._transition,
        )


class Candidate:
    def __init__(self, elector: LeaderElector, probe: Probe) -> None:
        self.elector = elector
        self.probe = probe
        self.stop = asyncio.Event()
        self.task = asyncio.create_task(elector.run(self.stop))

    async def shutdown(self) -> None:
        self.stop.set()
        await asyncio.wait_for(self.task, RENEW + RETRY + SLACK)


class Election:
    """Candidates for one fresh key on one store."""

    def __init__(self, storage: Storage) -> None:
        self.storage = storage
        self.key = f"/kubera/test-election/{next(_keys)}"
        self.candidates: list[Candidate] = []

    def start(self, name: str, *, storage: Storage | None = None, clock: Any = None) -> Candidate:
        cfg = LeaderElectionConfig(
            timings=LeaseTimings(lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY),
            identity=name,
            key=self.key,
        )
        probe = Probe(name)
        elector = LeaderElector(storage or self.storage, cfg, probe.callbacks(), clock=clock)
        c = Candidate(elector, probe)
        self.candidates.append(c)
        return c

    async def first_leader(self, timeout: float) -> Candidate:
        done = asyncio.Event()
        waits = [
            asyncio.create_task(c.probe.wait_for(lambda p=c.probe: bool(p.led_at), timeout))
            for c in self.candidates
        ]
        for w in waits:
            w.add_done_callback(lambda _t: done.set())
        try:
            await asyncio.wait_for(done.wait(), timeout)
        finally:
            for w in waits:
                w.cancel()
        return next(c for c in self.candidates if c.probe.led_at)

    async def close(self) -> None:
        for c in self.candidates:
            c.stop.set()
        await asyncio.gather(*(c.shutdown() for c in self.candidates), return_exceptions=True)


@pytest.fixture
async def election(storage: Storage) -> AsyncIterator[Election]:
    e = Election(storage)
    try:
        yield e
    finally:
        await e.close()


class FlakyStorage:
    """Delegates to a store until `broken`; then every call raises or hangs (a partition)."""

    def __init__(self, inner: Storage, mode: str) -> None:
        self._inner = inner
        self._mode = mode
        self.broken = False

    async def _gate(self) -> None:
        if not self.broken:
            return
        if self._mode == "raise":
            raise StorageUnavailableError("injected: etcd unreachable")
        await asyncio.Event().wait()

    async def get(self, key: str) -> Any:
        await self._gate()
        return await self._inner.get(key)

    async def txn(self, *args: Any, **kwargs: Any) -> Any:
        await self._gate()
        return await self._inner.txn(*args, **kwargs)

    async def grant_lease(self, ttl: int) -> int:
        await self._gate()
        return await self._inner.grant_lease(ttl)

    async def revoke_lease(self, lease_id: int) -> None:
        await self._gate()
        await self._inner.revoke_lease(lease_id)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ManualClock:
    """Time that moves only when the test calls `advance`; a sleep waits until then. Its
    deadline is set when sleep() is called (not when the awaitable first runs), so what an
    elector does right after a callback is timed from the moment the callback fired."""

    scale = 1.0

    def __init__(self) -> None:
        self._now = 1_800_000_000.0
        self._mono = 0.0
        self._sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self._now

    def monotonic(self) -> float:
        return self._mono

    def sleep(self, seconds: float) -> asyncio.Future[None]:
        done = asyncio.get_running_loop().create_future()
        if seconds <= 0:
            done.set_result(None)
        else:
            self._sleepers.append((self._mono + seconds, done))
        return done

    def advance(self, seconds: float) -> None:
        self._now += seconds
        self._mono += seconds
        due = [f for t, f in self._sleepers if t <= self._mono]
        self._sleepers = [(t, f) for t, f in self._sleepers if t > self._mono and not f.done()]
        for f in due:
            if not f.done():
                f.set_result(None)


class JumpClock(RealClock):
    """Real time whose monotonic reading can jump ahead, as after a SIGSTOP/SIGCONT."""

    def __init__(self) -> None:
        self.jumped = 0.0

    def monotonic(self) -> float:
        return super().monotonic() + self.jumped


async def test_one_of_three_leads_and_the_others_wait(election: Election) -> None:
    for name in ("a", "b", "c"):
        election.start(name)
    leader = await election.first_leader(timeout=3.0)
    standbys = [c for c in election.candidates if c is not leader]
    for c in standbys:
        await c.probe.wait_for(lambda p=c.probe: leader.probe.name in p.leaders, 2.0)
    await leader.probe.wait_for(lambda: len(leader.probe.records) >= 3, 2.0)  # renewed twice

    assert [c.elector.is_leader for c in election.candidates].count(True) == 1
    assert leader.elector.is_leader
    assert all(not c.probe.led_at and c.elector.fencing_token is None for c in standbys)
    assert all(c.elector.leader_identity == leader.probe.name for c in election.candidates)
    kv = await election.storage.get(election.key)
    assert kv is not None and kv.value.decode() == leader.probe.name

    for c in standbys:  # a standby that stops never led, so it never stopped leading
        await c.shutdown()
        assert c.probe.stopped_at == []


async def test_fencing_token_is_the_keys_create_revision_and_survives_renewals(
    election: Election,
) -> None:
    c = election.start("a")
    await c.probe.wait_for(lambda: bool(c.probe.led_at), 2.0)
    token = c.elector.fencing_token
    first = await election.storage.get(election.key)
    assert first is not None and token == (election.key, first.create_revision)

    await c.probe.wait_for(lambda: len(c.probe.records) >= 4, 2.0)
    later = await election.storage.get(election.key)
    assert later is not None
    assert later.create_revision == first.create_revision
    assert later.mod_revision > first.mod_revision  # renewals did write
    assert c.elector.fencing_token == token
    acquired = {r.acquire_time for r in c.probe.records}
    assert len(acquired) == 1, "acquire_time is fixed for the term"
    renews = [r.renew_time for r in c.probe.records]
    assert renews == sorted(renews) and renews[-1] > renews[0]
    assert all(r.holder == "a" and r.transitions == 0 for r in c.probe.records)


async def test_clean_stop_releases_and_a_standby_takes_over_promptly(election: Election) -> None:
    a = election.start("a")
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    old_token = a.elector.fencing_token
    b = election.start("b")
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)

    stopped = time.monotonic()
    await a.shutdown()
    assert a.probe.term_stops[0].is_set()
    assert len(a.probe.stopped_at) == 1
    assert a.probe.records[-1].holder == "", "the release is published"
    await b.probe.wait_for(lambda: bool(b.probe.led_at), LEASE)

    # Released, not expired: the standby waited one jittered retry, not a lease.
    assert b.probe.led_at[0] - stopped < RETRY * 2.2 + SLACK < LEASE
    assert b.probe.leaders == ["a", "b"]
    new_token = b.elector.fencing_token
    assert old_token is not None and new_token is not None
    assert new_token[1] > old_token[1]
    assert b.probe.records[0].transitions == 1  # b saw a's term before its own


@pytest.mark.parametrize("failure", ["raise", "hang"])
async def test_leader_whose_renewals_fail_steps_down_within_renew_deadline(
    election: Election, failure: str
) -> None:
    flaky = FlakyStorage(election.storage, failure)
    a = election.start("a", storage=cast(Storage, flaky))
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    old_token = a.elector.fencing_token
    assert old_token is not None
    b = election.start("b")
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)

    broken = time.monotonic()
    flaky.broken = True
    await a.probe.wait_for(lambda: bool(a.probe.stopped_at), RENEW + SLACK)
    assert a.probe.stopped_at[0] - broken <= RENEW + SLACK
    assert a.probe.term_stops[0].is_set(), "the leader's work was told to stop"
    assert not a.elector.is_leader and a.elector.fencing_token is None

    await b.probe.wait_for(lambda: bool(b.probe.led_at), LEASE + 2.0)
    assert b.probe.led_at[0] >= a.probe.stopped_at[0], "never two leaders at once"
    assert b.probe.leaders == ["a", "b"]
    kv = await election.storage.get(election.key)
    new_token = b.elector.fencing_token
    assert kv is not None and new_token == (election.key, kv.create_revision)
    assert kv.create_revision != old_token[1], "the deposed leader's token is stale"
    assert len(a.probe.stopped_at) == 1, "on_stopped_leading ran once for the one term"


async def test_a_leader_resumed_after_a_pause_is_deposed_at_once(election: Election) -> None:
    clock = JumpClock()
    a = election.start("a", clock=clock)
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    old_token = a.elector.fencing_token
    assert old_token is not None

    clock.jumped = RENEW  # the process was stopped for renew_deadline
    assert not a.elector.is_leader and a.elector.fencing_token is None
    await a.probe.wait_for(lambda: bool(a.probe.stopped_at), RETRY + SLACK)
    assert a.probe.term_stops[0].is_set()

    # It stands by like anyone else: its old key expires and it wins a new term.
    await a.probe.wait_for(lambda: len(a.probe.led_at) == 2, LEASE + 2.0)
    new_token = a.elector.fencing_token
    assert new_token is not None and new_token[1] > old_token[1]


async def test_work_that_returns_ends_the_term_and_releases(election: Election) -> None:
    probe = Probe("a")
    tokens: list[tuple[str, int] | None] = []

    async def work(stop: asyncio.Event) -> None:
        tokens.append(elector.fencing_token)
        if len(tokens) == 1:
            return  # the first term's work gives up at once
        await probe._work(stop)

    cfg = LeaderElectionConfig(
        timings=LeaseTimings(lease_duration=LEASE, renew_deadline=RENEW, retry_period=RETRY),
        identity="a",
        key=election.key,
    )
    callbacks = Callbacks(on_started_leading=work, on_stopped_leading=probe._stopped)
    elector = LeaderElector(election.storage, cfg, callbacks)
    election.candidates.append(Candidate(elector, probe))

    # Released, not left to expire: the next term starts one retry period later.
    await probe.wait_for(lambda: bool(probe.led_at), 2.0 + LEASE / 2)
    assert len(probe.stopped_at) == 1
    assert probe.led_at[0] - probe.stopped_at[0] < LEASE / 2
    first, second = tokens
    assert first is not None and second is not None and second[1] > first[1]


# -- takeover on real etcd: the standby's pause cut at the lease, and its watch ----------


def _start(election: Election, name: str, *, lease: float, renew: float, retry: float) -> Candidate:
    cfg = LeaderElectionConfig(
        timings=LeaseTimings(lease_duration=lease, renew_deadline=renew, retry_period=retry),
        identity=name,
        key=election.key,
    )
    probe = Probe(name)
    c = Candidate(LeaderElector(election.storage, cfg, probe.callbacks()), probe)
    election.candidates.append(c)
    return c


@pytest.mark.integration
@pytest.mark.parametrize("storage", ["etcd"], indirect=True)
async def test_a_standby_takes_over_a_killed_leader_at_the_end_of_its_lease(
    election: Election,
) -> None:
    # A retry period long next to the slack, so "on time" and "one poll late" differ.
    lease, renew, retry = 1.2, 0.8, 0.5
    polled = lease + retry * (1 + JITTER_FACTOR)  # the latest a polling standby could take it
    a = _start(election, "a", lease=lease, renew=renew, retry=retry)
    await a.probe.wait_for(lambda: bool(a.probe.led_at), 2.0)
    b = _start(election, "b", lease=lease, renew=renew, retry=retry)
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], 2.0)

    # Kill a right after a renewal (none in flight): no release, its key is left to expire.
    seen = len(a.probe.records)
    await a.probe.wait_for(lambda: len(a.probe.records) > seen, 2 * retry + SLACK)
    a.task.cancel()
    killed_mono, killed_wall = time.monotonic(), time.time()
    last_renewal = killed_mono - (killed_wall - a.probe.records[-1].renew_time)
    election.candidates.remove(a)
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    assert not a.elector.is_leader
    kv = await election.storage.get(election.key)
    assert kv is not None and kv.value == b"a", "a's key outlives it"

    await b.probe.wait_for(lambda: bool(b.probe.led_at), polled + SLACK)
    took = b.probe.led_at[0] - last_renewal
    assert lease - 0.05 <= took <= lease + SLACK < polled
    assert b.probe.leaders == ["a", "b"]
    kv = await election.storage.get(election.key)
    assert kv is not None and kv.value == b"b"


@pytest.mark.integration
@pytest.mark.parametrize("storage", ["etcd"], indirect=True)
async def test_a_released_key_is_taken_at_once_thanks_to_the_watch(election: Election) -> None:
    # A retry period far longer than the test's bounds: a standby that only polled would
    # first read the key `retry` after it last saw it, so a takeover within the waits below
    # (2 × guard < retry) can only come from the watch telling it the key was deleted.
    lease, renew, retry = 120.0, 90.0, 60.0
    guard = 10.0
    a = _start(election, "a", lease=lease, renew=renew, retry=retry)
    await a.probe.wait_for(lambda: bool(a.probe.led_at), guard)
    b = _start(election, "b", lease=lease, renew=renew, retry=retry)
    await b.probe.wait_for(lambda: b.probe.leaders == ["a"], guard)
    seen = time.monotonic()  # b has read the key: its first poll is a retry period away

    a.stop.set()
    await asyncio.wait_for(a.task, guard)  # releases: the key is deleted
    assert a.probe.records[-1].holder == ""
    await b.probe.wait_for(lambda: bool(b.probe.led_at), guard)
    assert b.probe.led_at[0] - seen < 2 * guard < retry
    assert b.probe.leaders == ["a", "b"]
