"""The work queue on a FakeClock: dedup, one worker per key, delays, per-key backoff,
the token bucket, and shutdown."""

from __future__ import annotations

import asyncio
import logging
import random

import pytest

from services.api.machinery.errors import ConflictError
from services.clock import FakeClock
from services.controllers.workqueue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    WorkQueue,
    default_controller_rate_limiter,
    run_worker,
)


def make_queue(clock: FakeClock | None = None) -> WorkQueue[str]:
    clock = clock or FakeClock()
    return WorkQueue(clock=clock, rate_limiter=default_controller_rate_limiter(clock))


async def get(q: WorkQueue[str]) -> str | None:
    return await asyncio.wait_for(q.get(), timeout=1.0)  # guards a hang; never waits


async def test_a_key_added_many_times_is_queued_once_in_first_added_order() -> None:
    q = make_queue()
    for key in ("a", "b", "a", "c", "b", "a"):
        q.add(key)
    assert len(q) == 3
    assert [await get(q), await get(q), await get(q)] == ["a", "b", "c"]
    assert len(q) == 0


async def test_a_key_re_added_while_processed_waits_for_done_and_runs_once_more() -> None:
    q = make_queue()
    q.add("a")
    assert await get(q) == "a"
    q.add("a")
    q.add("a")
    assert len(q) == 0, "no second worker may get a key that is being processed"
    q.done("a")
    assert len(q) == 1
    assert await get(q) == "a"
    q.done("a")
    assert len(q) == 0


async def test_concurrent_workers_never_process_the_same_key_at_once() -> None:
    q = make_queue()
    rng = random.Random(7)
    in_flight: set[str] = set()
    overlaps: list[str] = []
    processed = 0

    async def worker() -> None:
        nonlocal processed
        while (key := await q.get()) is not None:
            if key in in_flight:
                overlaps.append(key)
            in_flight.add(key)
            for _ in range(rng.randint(0, 3)):
                await asyncio.sleep(0)
                q.add(rng.choice("abc"))  # events keep arriving for keys being processed
            in_flight.discard(key)
            processed += 1
            q.done(key)

    workers = [asyncio.create_task(worker()) for _ in range(4)]
    for _ in range(200):
        q.add(rng.choice("abc"))
        await asyncio.sleep(0)
    while len(q) or any(q.is_processing(k) for k in "abc"):
        await asyncio.sleep(0)
    q.shutdown()
    await asyncio.wait_for(asyncio.gather(*workers), 1.0)
    assert processed > 0
    assert overlaps == []


@pytest.mark.parametrize(
    ("adds", "ready_at"),
    [
        ([5.0], 5.0),
        ([10.0, 2.0], 2.0),  # an earlier time wins
        ([2.0, 10.0], 2.0),  # a later one never postpones
    ],
)
async def test_add_after_makes_a_key_ready_at_its_earliest_time(
    adds: list[float], ready_at: float
) -> None:
    clock = FakeClock()
    q = make_queue(clock)
    for delay in adds:
        q.add_after("a", delay)
    clock.advance(ready_at - 0.001)
    assert len(q) == 0
    assert q.waiting() == 1
    clock.advance(0.001)
    assert len(q) == 1
    assert q.waiting() == 0
    assert await get(q) == "a"


async def test_add_after_with_no_delay_adds_at_once() -> None:
    q = make_queue()
    q.add_after("a", 0)
    assert len(q) == 1


async def test_a_blocked_get_wakes_when_the_first_delayed_key_is_due() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_after("late", 30.0)
    q.add_after("soon", 5.0)
    assert await get(q) == "soon"
    assert clock.monotonic() == pytest.approx(5.0)
    assert await get(q) == "late"
    assert clock.monotonic() == pytest.approx(30.0)


async def test_a_blocked_get_wakes_on_add() -> None:
    q = make_queue()
    getter = asyncio.create_task(q.get())
    await asyncio.sleep(0)
    assert not getter.done()
    q.add("a")
    assert await asyncio.wait_for(getter, 1.0) == "a"


@pytest.mark.parametrize(
    ("failures", "delay"),
    [(1, 0.005), (2, 0.01), (3, 0.02), (10, 2.56), (18, 655.36), (19, 1000.0), (100, 1000.0)],
)
def test_per_key_backoff_doubles_from_5ms_and_caps_at_1000s(failures: int, delay: float) -> None:
    limiter = ItemExponentialFailureRateLimiter()
    for _ in range(failures - 1):
        limiter.when("a")
    assert limiter.when("a") == pytest.approx(delay)
    assert limiter.num_requeues("a") == failures
    assert limiter.when("b") == pytest.approx(0.005), "backoff is per key"


async def test_add_rate_limited_backs_off_per_key_until_forget() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add_rate_limited("a")  # 5 ms
    q.add_rate_limited("a")  # the live entry stays the earlier one
    assert q.num_requeues("a") == 2
    clock.advance(0.005)
    assert await get(q) == "a"
    q.done("a")
    q.add_rate_limited("a")  # third failure: 20 ms
    clock.advance(0.019)
    assert len(q) == 0
    clock.advance(0.001)
    assert len(q) == 1
    q.forget("a")
    assert q.num_requeues("a") == 0


def test_the_overall_bucket_allows_a_burst_then_paces_at_qps() -> None:
    clock = FakeClock()
    bucket = BucketRateLimiter(qps=10, burst=100, clock=clock)
    assert [bucket.when(i) for i in range(100)] == [0.0] * 100
    assert bucket.when("x") == pytest.approx(0.1)
    assert bucket.when("y") == pytest.approx(0.2)
    clock.advance(1.0)  # ten tokens back: the debt of two is paid, eight remain
    assert [bucket.when(i) for i in range(8)] == [0.0] * 8
    assert bucket.when("z") == pytest.approx(0.1)


async def test_shutdown_hands_out_what_is_queued_then_none_and_accepts_nothing() -> None:
    clock = FakeClock()
    q = make_queue(clock)
    q.add("a")
    q.add_after("later", 1.0)
    q.shutdown()
    q.add("b")
    q.add_after("c", 0.5)
    assert await get(q) == "a"
    clock.advance(2.0)
    assert await get(q) is None
    assert q.shutting_down


async def test_shutdown_wakes_every_blocked_get() -> None:
    q = make_queue()
    getters = [asyncio.create_task(q.get()) for _ in range(3)]
    await asyncio.sleep(0)
    q.shutdown()
    assert await asyncio.wait_for(asyncio.gather(*getters), 1.0) == [None, None, None]


@pytest.mark.parametrize(
    ("base", "cap"),
    [(0.0, 1.0), (2.0, 1.0), (-1.0, 1.0)],
)
def test_backoff_settings_must_be_positive_and_ordered(base: float, cap: float) -> None:
    with pytest.raises(ValueError, match="base_delay"):
        ItemExponentialFailureRateLimiter(base, cap)


@pytest.mark.parametrize(
    ("error", "traceback"),
    [
        pytest.param(OverflowError("int too large"), True, id="a-bug-logs-its-traceback"),
        pytest.param(ConflictError("the object changed"), False, id="an-api-error-does-not"),
    ],
)
async def test_a_raising_sync_costs_only_its_key(
    error: Exception, traceback: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """client-go's handleErr: the poison key is logged with its name and retried after a
    doubling per-key backoff; the other keys are synced meanwhile; the worker goes on."""
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0)
    )
    synced: list[tuple[float, str]] = []
    start = clock.monotonic()

    async def sync(key: str) -> None:
        synced.append((clock.monotonic() - start, key))
        if key == "poison":
            raise error
        if len([k for _, k in synced if k == "poison"]) < 4:
            q.add_after(key, 0.5)  # healthy keys keep coming back

    for key in ("a", "poison", "b"):
        q.add(key)
    worker = asyncio.create_task(run_worker(q, sync, what="widget"))
    try:
        # FakeClock: a blocked get moves time on to the next ready key
        while len([k for _, k in synced if k == "poison"]) < 4:
            await asyncio.sleep(0)
        poison_times = [t for t, k in synced if k == "poison"]
        assert poison_times == [0.0, 1.0, 3.0, 7.0]  # 1 s, 2 s, 4 s of backoff
        assert {"a", "b"} <= {k for t, k in synced if t > 0.0}
        assert q.num_requeues("poison") == 4 and q.num_requeues("a") == 0
        failures = [r for r in caplog.records if r.name == "services.controllers.workqueue"]
        assert [r.getMessage() for r in failures[:2]] == [
            f"widget poison: sync failed: {error} (failure 1; retried with backoff)",
            f"widget poison: sync failed: {error} (failure 2; retried with backoff)",
        ]
        assert all(bool(r.exc_info) == traceback for r in failures)
        assert {r.levelno for r in failures} == {logging.ERROR if traceback else logging.WARNING}
    finally:
        q.shutdown()
        await asyncio.wait_for(worker, 1.0)


@pytest.mark.parametrize(
    ("decision", "requeued", "logged"),
    [
        pytest.param(True, True, True, id="true-retries-with-backoff-and-logs"),
        pytest.param(False, False, True, id="false-forgets-and-logs"),
        pytest.param(None, False, False, id="none-forgets-without-a-word"),
    ],
)
async def test_the_retry_policy_decides_requeue_and_logging(
    decision: bool | None, requeued: bool, logged: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A controller's handleErr: None is upstream's silent Forget (a terminating
    namespace, or a drop the policy has already logged)."""
    clock = FakeClock()
    q: WorkQueue[str] = WorkQueue(
        clock=clock, rate_limiter=ItemExponentialFailureRateLimiter(1.0, 60.0)
    )
    calls: list[str] = []

    async def sync(key: str) -> None:
        calls.append(key)
        raise ConflictError("the object changed")

    q.add("k")
    worker = asyncio.create_task(run_worker(q, sync, what="widget", retry=lambda _k, _e: decision))
    try:
        while not calls:
            await asyncio.sleep(0)
        await asyncio.sleep(0)
        assert q.num_requeues("k") == (1 if requeued else 0)
        failures = [r for r in caplog.records if r.name == "services.controllers.workqueue"]
        assert bool(failures) == logged
    finally:
        q.shutdown()
        await asyncio.wait_for(worker, 1.0)
