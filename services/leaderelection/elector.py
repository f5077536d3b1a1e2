"""The leader elector: client-go's LeaderElector loop on an etcd key, with a fencing token.

client-go says of itself that it does not fence: a paused leader may act after its lease is
gone. Here every term has a token — (key, create_revision of the key) — that the apiserver
checks in the same txn as the write, so a deposed leader's writes fail however late they land.

One run() goes through terms until `stop` is set:

    standby ──campaign won──▶ leading ──renewals fail for renew_deadline / key lost──┐
       ▲                         │ stop set, or the work returned                    │
       │                         ▼                                                   │
       │                    released (key deleted, lease revoked)                    │
       └────────────── on_stopped_leading() ◀────────────────────────────────────────┘

Invariants:
- `is_leader` and `fencing_token` hold only while the last successful renewal *started*
  less than renew_deadline ago on this elector's monotonic clock; a process resumed after a
  pause sees itself deposed before its loop runs again.
- The etcd lease under the key lasts ≥ lease_duration > renew_deadline from a renewal's
  start, so the leader stops believing it leads before its key can expire.
- on_started_leading's work has ended (returned, or cancelled one retry_period after its
  stop event was set) before the lock is released and before on_stopped_leading runs.

Differences from client-go, on purpose: run() campaigns again after losing a term instead of
returning, so on_stopped_leading runs once per term rather than once per run(); the lock is
always released on a clean stop (ReleaseOnCancel); if the work returns while we lead, the
term ends, since a leader that does no work stalls the standbys; an elector never adopts a
key left by an earlier process with the same identity, it waits for it to expire; a standby
follows the key on a watch rather than reading it every retry period (client-go polls): a
renewal arrives as a record, a deleted key is campaigned for at once, and a holder silent
for lease_duration has its key expired from the record the watch last told, so a takeover
costs the expire and create round trips only (polling remains the fallback without a watch).

Stop run() by setting its event: that releases the lock. Cancelling run()'s task still ends
the term (work stopped, on_stopped_leading called) but leaves the key to expire.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from services.api.helpers.fencing import Fencing
from services.clock import Clock, RealClock
from services.leaderelection.config import Callbacks, LeaderElectionConfig, LeaderElectionRecord
from services.leaderelection.lock import Lock, LockRecord, StorageLock
from services.leaderelection.timings import JITTER_FACTOR
from services.storage import Storage

log = logging.getLogger(__name__)

T = TypeVar("T")


class _Stopped(Exception):
    """The run's stop event fired while waiting."""


class _Unseen:
    """A standby's wait ended without news of the key (its pause ran out, or no watch)."""


UNSEEN = _Unseen()


class LeaderElector:
    def __init__(
        self,
        storage: Storage,
        config: LeaderElectionConfig,
        callbacks: Callbacks,
        *,
        clock: Clock | None = None,
        lock: Lock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.config = config
        self._callbacks = callbacks
        self._clock: Clock = clock or RealClock()
        self._lock: Lock = lock or StorageLock(
            storage, config.key, lease_duration=config.timings.lease_duration
        )
        self._rng = rng or random.Random()
        # The current term; None while standing by.
        self._held: LockRecord | None = None
        self._renew_started = 0.0  # monotonic start of the last successful renewal
        self._acquire_time = 0.0
        #: When (clock.now()) this elector last found the key free while campaigning: the
        #: watch saw it deleted, a read found none, or its own expire deleted it. With
        #: `acquired_at`, how a takeover's time divides (kubera bench failover reports it).
        self.free_at = 0.0
        # What a standby last saw of the key, and when (monotonic) it last changed.
        self._observed: LockRecord | None = None
        self._observed_at = 0.0
        #: The record an expire was last refused for (it had changed): not to be taken
        #: for the key's state again without reading it.
        self._expire_refused: LockRecord | None = None
        self._reported_leader = ""
        self._last_term = 0  # create_revision of the last term seen, to count transitions
        self._transitions = 0

    # -- what callers read ------------------------------------------------------------

    @property
    def is_leader(self) -> bool:
        return self._held is not None and (
            self._clock.monotonic() - self._renew_started < self.config.timings.renew_deadline
        )

    @property
    def fencing_token(self) -> Fencing | None:
        """(election key, its create_revision) while leading; carried by every fenced write."""
        held = self._held
        if held is None or not self.is_leader:
            return None
        return Fencing(held.key, held.create_revision)

    @property
    def acquired_at(self) -> float:
        """When (clock.now()) this elector's latest term began (0: never led)."""
        return self._acquire_time

    @property
    def leader_identity(self) -> str:
        """The holder this elector last observed ('' when none)."""
        if self._held is not None:
            return self._held.holder
        return self._observed.holder if self._observed else ""

    # -- the loop ---------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> None:
        """Campaign, lead, step down, campaign again, until `stop` is set."""
        while not stop.is_set():
            try:
                held = await self._acquire(stop)
            except _Stopped:
                return
            await self._lead(held, stop)
            # One retry period between terms, so work that fails at once cannot spin the
            # loop and a standby gets its turn at a key we just released.
            await self._pause(self.config.timings.retry_period, stop)

    async def _acquire(self, stop: asyncio.Event) -> LockRecord:
        log.info("%s: campaigning for %s", self.config.identity, self.config.key)
        news: LockRecord | None | _Unseen = UNSEEN
        while True:
            held = await self._try_acquire(stop, news)
            if held is not None:
                return held
            news = await self._standby_wait(stop)
            if stop.is_set():
                raise _Stopped

    async def _try_acquire(
        self, stop: asyncio.Event, news: LockRecord | None | _Unseen = UNSEEN
    ) -> LockRecord | None:
        """One campaign attempt. `news`: the key as the standby's watch just saw it (None:
        deleted), so no read is needed."""
        deadline = self.config.timings.renew_deadline
        try:
            current = await self._current(news, stop)
            if current is not None:
                self._observe(current)
                silent = self._clock.monotonic() - self._observed_at
                if silent < self.config.timings.lease_duration:
                    return None
                log.info(
                    "%s: holder %s silent for %.1fs; expiring its key",
                    self.config.identity,
                    current.holder,
                    silent,
                )
                if not await self._bounded(self._lock.expire(current), deadline, stop):
                    self._expire_refused = current  # it changed: read it next time
                    return None
            self.free_at = self._clock.now()
            started = self._clock.monotonic()
            won, holder = await self._bounded(
                self._lock.create(self.config.identity), deadline, stop
            )
        except _Stopped:
            raise
        except Exception as e:  # noqa: BLE001 - storage trouble: retry next period
            log.warning("%s: campaign on %s failed: %s", self.config.identity, self.config.key, e)
            return None
        if won is None:
            if holder is not None:
                self._observe(holder)
            return None
        self._renew_started = started
        self._acquire_time = self._clock.now()
        self._held = won
        self._observe(won)
        return won

    async def _current(
        self, news: LockRecord | None | _Unseen, stop: asyncio.Event
    ) -> LockRecord | None:
        """The key as it stands: what the standby's wait found out, else a read."""
        if not isinstance(news, _Unseen):
            return news
        return await self._bounded(self._lock.get(), self.config.timings.renew_deadline, stop)

    async def _standby_wait(self, stop: asyncio.Event) -> LockRecord | None | _Unseen:
        """Wait out the standby's pause (see _standby_pause) and say what the key is now:
        its new state as soon as the watch sees it change (released, expired, renewed,
        taken) after what this standby last saw; when the pause runs out with the watch
        quiet, that last record itself (unchanged, so a silent holder's key is expired
        without reading it first: the expire txn checks it is still that record). UNSEEN
        — read the key — without a watch, after a broken one (which falls back to the
        timer for the rest of the pause, so a store that is down cannot spin the
        campaign), or when an expire was just refused for the record seen."""
        seen = self._observed
        wait_change = getattr(self._lock, "wait_change", None)
        pause = self._standby_pause()
        if seen is None or wait_change is None:
            await self._pause(pause, stop)
            return UNSEEN
        until = self._clock.monotonic() + pause
        watch: asyncio.Task[LockRecord | None] = asyncio.ensure_future(
            wait_change(seen.mod_revision)
        )
        try:
            await self._pause(pause, stop, watch)
        finally:
            told = watch.done()
            if not told:
                watch.cancel()
        if told:
            error = watch.exception()
            if error is None:
                return watch.result()
            log.debug("%s: watch on %s broke: %s", self.config.identity, self.config.key, error)
            await self._pause(max(0.0, until - self._clock.monotonic()), stop)
            return UNSEEN
        return seen if seen is not self._expire_refused else UNSEEN

    def _standby_pause(self) -> float:
        """client-go's jittered retry period, cut short at the moment the observed holder
        has been silent for lease_duration, so a dead leader's key is taken over on time
        rather than up to one retry period late."""
        pause = self.config.timings.retry_period * (1 + self._rng.random() * JITTER_FACTOR)
        if self._observed is not None:
            silent_at = self._observed_at + self.config.timings.lease_duration
            pause = min(pause, max(0.0, silent_at - self._clock.monotonic()))
        return pause

    async def _lead(self, held: LockRecord, stop: asyncio.Event) -> None:
        cfg = self.config
        log.info("%s: leading %s (token %d)", cfg.identity, cfg.key, held.create_revision)
        self._publish(held.holder)
        term_over = asyncio.Event()
        work = asyncio.create_task(self._callbacks.on_started_leading(term_over))
        clean = False
        try:
            while True:
                remaining = cfg.timings.renew_deadline - (
                    self._clock.monotonic() - self._renew_started
                )
                if remaining <= 0:
                    log.warning("%s: no renewal within renew_deadline", cfg.identity)
                    break
                await self._pause(min(cfg.timings.retry_period, remaining), stop, work)
                if stop.is_set():
                    clean = True
                    break
                if work.done():
                    log.warning("%s: leader work ended; stepping down", cfg.identity)
                    clean = True
                    break
                remaining = cfg.timings.renew_deadline - (
                    self._clock.monotonic() - self._renew_started
                )
                if remaining <= 0:
                    log.warning("%s: no renewal within renew_deadline", cfg.identity)
                    break
                started = self._clock.monotonic()
                try:
                    renewed = await self._bounded(self._lock.renew(held), remaining, stop)
                except _Stopped:
                    raise
                except Exception as e:  # noqa: BLE001 - retried until renew_deadline
                    log.warning("%s: renewal failed: %s", cfg.identity, e)
                    continue
                if renewed is None:
                    log.warning("%s: lost %s to another holder", cfg.identity, cfg.key)
                    break
                held = self._held = renewed
                self._renew_started = started
                self._observe(renewed)
                self._publish(held.holder)
        except _Stopped:
            clean = True
        finally:
            self._held = None
            term_over.set()
            await self._finish(work)
            if clean:
                await self._release(held)
            self._call(self._callbacks.on_stopped_leading)
            log.info("%s: stopped leading %s", cfg.identity, cfg.key)

    async def _finish(self, work: asyncio.Task[None]) -> None:
        """Give the work one retry_period to notice its stop event, then cancel it."""
        if not work.done():
            timer = asyncio.ensure_future(self._clock.sleep(self.config.timings.retry_period))
            try:
                await asyncio.wait({work, timer}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                timer.cancel()
        if not work.done():
            work.cancel()
        try:
            await work
        except asyncio.CancelledError:
            pass
        except Exception:
            log.exception("%s: on_started_leading raised", self.config.identity)

    async def _release(self, held: LockRecord) -> None:
        try:
            released = await self._bounded(
                self._lock.release(held), self.config.timings.renew_deadline, None
            )
        except Exception as e:  # noqa: BLE001 - the lease runs out on its own
            log.warning("%s: release of %s failed: %s", self.config.identity, held.key, e)
            return
        if released and self._callbacks.on_transition is not None:
            now = self._clock.now()
            record = LeaderElectionRecord("", now, now, 1, self._transitions)
            self._call(self._callbacks.on_transition, record)

    # -- observation ------------------------------------------------------------------

    def _observe(self, record: LockRecord) -> None:
        seen = self._observed
        if seen is None or (seen.create_revision, seen.mod_revision) != (
            record.create_revision,
            record.mod_revision,
        ):
            self._observed = record
            self._observed_at = self._clock.monotonic()
        if record.create_revision != self._last_term:
            if self._last_term:
                self._transitions += 1
            self._last_term = record.create_revision
        if record.holder != self._reported_leader:
            self._reported_leader = record.holder
            if self._callbacks.on_new_leader is not None:
                self._call(self._callbacks.on_new_leader, record.holder)

    def _publish(self, holder: str) -> None:
        if self._callbacks.on_transition is None:
            return
        record = LeaderElectionRecord(
            holder,
            self._acquire_time,
            self._clock.now(),
            max(1, int(self.config.timings.lease_duration)),
            self._transitions,
        )
        self._call(self._callbacks.on_transition, record)

    def _call(self, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception:
            log.exception("%s: callback %s raised", self.config.identity, fn)

    # -- waiting on the injected clock ------------------------------------------------

    async def _bounded(self, aw: Awaitable[T], seconds: float, stop: asyncio.Event | None) -> T:
        """`aw`'s result; TimeoutError after `seconds` of the injected clock; _Stopped when
        `stop` is set first. An unfinished `aw` is cancelled, so a hung call cannot linger."""
        op = asyncio.ensure_future(aw)
        others: list[asyncio.Future[Any]] = [asyncio.ensure_future(self._clock.sleep(seconds))]
        if stop is not None:
            others.append(asyncio.ensure_future(stop.wait()))
        try:
            await asyncio.wait({op, *others}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in others:
                t.cancel()
            if not op.done():
                op.cancel()
        if op.done() and not op.cancelled():
            return op.result()
        if stop is not None and stop.is_set():
            raise _Stopped
        raise TimeoutError

    async def _pause(
        self,
        seconds: float,
        stop: asyncio.Event,
        work: asyncio.Task[Any] | Awaitable[Any] | None = None,
    ) -> None:
        """Sleep on the injected clock; wake early when `stop` is set or `work` ends (a
        task is left running; any other awaitable is cancelled with the sleep)."""
        others: list[asyncio.Future[Any]] = [
            asyncio.ensure_future(self._clock.sleep(seconds)),
            asyncio.ensure_future(stop.wait()),
        ]
        if work is not None and not isinstance(work, asyncio.Task):
            others.append(asyncio.ensure_future(work))
            work = None
        waiters: set[asyncio.Future[Any]] = {*others}
        if work is not None:
            waiters.add(work)
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for t in others:
                t.cancel()
