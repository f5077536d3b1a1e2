"""The event recorder (services/client/events.py) against client-go tools/record's
semantics, on an injected clock: the correlator's counting, aggregation and spam filter,
and the recorder's bounded queue, single writer and retries."""

from __future__ import annotations

import asyncio
import json

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.events import new_event
from services.api.machinery.errors import (
    AlreadyExistsError,
    BadRequestError,
    NotFoundError,
    TooManyRequestsError,
    UnavailableError,
)
from services.client.events import EventCorrelator, EventRecorder, TokenBucket
from services.clock import FakeClock


def ev(clock: FakeClock, name: str = "p", reason: str = "FailedScheduling", message: str = "m"):
    return new_event(
        clock.now(),
        kind="Pod",
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        reason=reason,
        message=message,
        type_="Warning",
        component="default-scheduler",
    )


def test_identical_events_become_count_patches_of_the_first() -> None:
    clock = FakeClock()
    c = EventCorrelator(clock)
    first = c.correlate(ev(clock))
    assert first.patch is None and not first.skip and first.event.count == 1
    name = first.event.metadata.name
    for n in (2, 3):
        clock.advance(1)
        r = c.correlate(ev(clock))
        assert r.event.metadata.name == name
        assert r.event.first_timestamp == first.event.first_timestamp
        assert r.patch == {"count": n, "lastTimestamp": r.event.last_timestamp, "message": "m"}


@pytest.mark.parametrize(
    ("distinct", "combined_from"),
    [(9, None), (10, 9), (12, 9)],  # the 10th distinct message in 10 minutes is combined
)
def test_similar_events_are_combined_after_ten(distinct: int, combined_from: int | None) -> None:
    clock = FakeClock()
    c = EventCorrelator(clock)
    results = [c.correlate(ev(clock, message=f"m{i}")) for i in range(distinct)]
    messages = [r.event.message for r in results]
    if combined_from is None:
        assert messages == [f"m{i}" for i in range(distinct)]
        return
    assert messages[:combined_from] == [f"m{i}" for i in range(combined_from)]
    tail = results[combined_from:]
    assert [r.event.message for r in tail] == [
        f"(combined from similar events): m{i}" for i in range(combined_from, distinct)
    ]
    # The first combined event is created, later ones patch it (count goes up).
    assert tail[0].patch is None and [r.event.count for r in tail] == list(range(1, len(tail) + 1))
    assert len({r.event.metadata.name for r in tail}) == 1


def test_aggregation_starts_afresh_after_the_interval() -> None:
    clock = FakeClock()
    c = EventCorrelator(clock)
    for i in range(9):
        c.correlate(ev(clock, message=f"m{i}"))
    clock.advance(601)
    assert c.correlate(ev(clock, message="m9")).event.message == "m9"


def test_the_spam_filter_allows_a_burst_of_25_then_one_per_5_minutes_per_object() -> None:
    clock = FakeClock()
    c = EventCorrelator(clock)
    kept = [not c.correlate(ev(clock, reason=f"R{i}")).skip for i in range(30)]
    assert kept == [True] * 25 + [False] * 5
    assert not c.correlate(ev(clock, name="other")).skip  # another object has its own bucket
    clock.advance(299)
    assert c.correlate(ev(clock, reason="late")).skip
    clock.advance(1)
    assert not c.correlate(ev(clock, reason="late")).skip
    assert c.correlate(ev(clock, reason="later")).skip


@pytest.mark.parametrize(
    ("qps", "burst", "steps", "expected"),
    [
        (1.0, 2, [0, 0, 0, 1, 0], [True, True, False, True, False]),
        (0.5, 1, [0, 1, 1, 0], [True, False, True, False]),
    ],
)
def test_token_bucket(qps: float, burst: int, steps: list[float], expected: list[bool]) -> None:
    b = TokenBucket(qps, burst, 0.0)
    now = 0.0
    got = []
    for s in steps:
        now += s
        got.append(b.try_accept(now))
    assert got == expected


class FakeClient:
    """Stores events; counts concurrent writes; fails as told."""

    def __init__(self) -> None:
        self.events: dict[str, core_pb2.Event] = {}
        self.calls: list[str] = []
        self.inflight = 0
        self.max_inflight = 0
        self.fail: list[Exception] = []
        self.gate: asyncio.Event | None = None
        self.rv = 0

    async def _enter(self) -> None:
        self.inflight += 1
        self.max_inflight = max(self.max_inflight, self.inflight)
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(0)
        self.inflight -= 1
        if self.fail:
            raise self.fail.pop(0)

    async def create(self, e: core_pb2.Event) -> core_pb2.Event:
        self.calls.append("create")
        await self._enter()
        out = core_pb2.Event()
        out.CopyFrom(e)
        self.rv += 1
        out.metadata.resource_version = str(self.rv)
        self.events[out.metadata.name] = out
        return out

    async def patch(self, kind, name: str, merge_patch: str, *, namespace: str = "", status=False):
        self.calls.append("patch")
        await self._enter()
        if name not in self.events:
            raise NotFoundError(f"events {name} not found")
        out = self.events[name]
        p = json.loads(merge_patch)
        out.count, out.last_timestamp, out.message = p["count"], p["lastTimestamp"], p["message"]
        return out


async def test_repeats_patch_the_event_and_a_vanished_one_is_created_again() -> None:
    clock = FakeClock()
    client = FakeClient()
    rec = EventRecorder(client, "c", clock)  # type: ignore[arg-type]
    pod = core_pb2.Pod(metadata={"name": "p", "namespace": "default", "uid": "u"})
    rec.event(pod, "Warning", "Failed", "boom")
    rec.event(pod, "Warning", "Failed", "boom")
    await rec.flush()
    assert client.calls == ["create", "patch"]
    assert [e.count for e in client.events.values()] == [2]
    client.events.clear()
    rec.event(pod, "Warning", "Failed", "boom")
    await rec.flush()
    assert client.calls == ["create", "patch", "patch", "create"]
    assert [e.count for e in client.events.values()] == [3]
    await rec.close()


async def test_a_full_queue_drops_and_counts_and_one_write_is_in_flight() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.gate = asyncio.Event()
    rec = EventRecorder(client, "c", clock, queue_size=3)  # type: ignore[arg-type]
    futs = [rec.record_waitable(ev(clock, name=f"p{i}")) for i in range(5)]
    assert rec.dropped == 2 and rec.pending == 3
    assert [f.done() and f.result() for f in futs[3:]] == [False, False]
    client.gate.set()
    await rec.flush()
    assert [f.result() for f in futs[:3]] == [True, True, True]
    assert client.max_inflight == 1 and len(client.events) == 3
    await rec.close()


@pytest.mark.parametrize(
    ("errors", "calls", "written"),
    [
        ([UnavailableError("down"), UnavailableError("down")], 3, True),  # retried
        ([BadRequestError("bad")], 1, False),  # refused: not retried
        ([TooManyRequestsError("slow down")], 1, False),  # an answer too (client-go)
        ([OSError("reset")], 2, True),  # transport: retried
        ([UnavailableError("down")] * 5, 3, False),  # gives up after max_tries
    ],
)
async def test_retries_only_what_may_succeed_later(errors, calls: int, written: bool) -> None:
    clock = FakeClock()
    client = FakeClient()
    client.fail = list(errors)
    rec = EventRecorder(client, "c", clock, max_tries=3)  # type: ignore[arg-type]
    fut = rec.record_waitable(ev(clock))
    await rec.flush()
    assert len(client.calls) == calls
    assert fut.result() is written
    await rec.close()


async def test_a_patch_then_create_that_finds_it_exists_is_not_retried() -> None:
    """client-go's recordEvent: the patch found the event gone (NotFound), the create
    found it back (AlreadyExists, a concurrent create): a StatusError, given up."""
    clock = FakeClock()
    client = FakeClient()
    rec = EventRecorder(client, "c", clock, max_tries=3)  # type: ignore[arg-type]
    assert await rec.record_waitable(ev(clock)) is True
    client.fail = [NotFoundError("gone"), AlreadyExistsError("exists")]
    fut = rec.record_waitable(ev(clock))
    await rec.flush()
    assert client.calls == ["create", "patch", "create"]
    assert fut.result() is False and rec.failed == 1
    await rec.close()


async def test_close_resolves_what_is_still_queued() -> None:
    clock = FakeClock()
    client = FakeClient()
    client.gate = asyncio.Event()
    rec = EventRecorder(client, "c", clock)  # type: ignore[arg-type]
    futs = [rec.record_waitable(ev(clock, name=f"p{i}")) for i in range(3)]
    await asyncio.sleep(0)
    await rec.close()
    assert all(f.done() and f.result() is False for f in futs)
    rec.event(core_pb2.Pod(metadata={"name": "x"}), "Normal", "R", "m")  # closed: ignored
    assert rec.pending == 0


async def test_a_pacer_lets_a_burst_through_then_qps() -> None:
    from services.client.events import Pacer

    clock = FakeClock()
    pacer = Pacer(clock, qps=2.0, burst=3)
    start = clock.monotonic()
    times = []
    for _ in range(7):
        await pacer.wait()
        times.append(round(clock.monotonic() - start, 6))
    assert times == [0.0, 0.0, 0.0, 0.5, 1.0, 1.5, 2.0]
