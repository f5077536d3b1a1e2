"""The call queue's rules (upstream backend/api_dispatcher/call_queue_test.go, its cases as
data): one call per object; a less relevant call is skipped, a more relevant one overwrites
a pending one and follows an in-flight one; the same type merges; a no-op is skipped;
FIFO pops; finalize re-queues a call that arrived while its object's call was in flight;
sync_object applies and cancels; close ends every held call. Plus kubera's per-type caps."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.dispatcher import (
    CallOverwritten,
    CallQueue,
    CallSkipped,
    DispatcherClosed,
    QueuedCall,
    is_unexpected,
)
from tests.scheduler.dispatcher.mock_call import HIGH, LOW, RELEVANCES, MockCall

Outcomes = dict[int, Any]


def queued(step: tuple[Any, ...], outcomes: Outcomes, i: int) -> QueuedCall:
    uid, call_type, *opts = step
    flags = {o: True for o in opts}
    return QueuedCall(
        MockCall(uid, call_type, name=f"c{i}", **flags),
        lambda err, i=i: outcomes.__setitem__(i, err),
    )


def state(q: CallQueue) -> tuple[dict[str, int], list[str]]:
    pending = {t: q.pending(t) for t in (LOW, HIGH) if q.pending(t)}
    held = sorted(qc.call.name for qc in q.calls.values())
    return pending, held


#: (rule, adds: (uid, type, *flags), what each add returned, pending per type, held calls,
#: what each finished call was told). upstream TestCallQueueAdd.
ADD_CASES = [
    ("first call is added without collision", [("u1", LOW)], [None], {LOW: 1}, ["c0"], {}),
    (
        "a no-op call is skipped",
        [("u1", LOW, "noop")],
        [CallSkipped],
        {},
        [],
        {0: CallSkipped},
    ),
    (
        "two calls for different objects do not collide",
        [("u1", LOW), ("u2", HIGH)],
        [None, None],
        {LOW: 1, HIGH: 1},
        ["c0", "c1"],
        {},
    ),
    (
        "a new call overwrites a less relevant pending call",
        [("u1", LOW), ("u1", HIGH)],
        [None, None],
        {HIGH: 1},
        ["c1"],
        {0: CallOverwritten},
    ),
    (
        "a new call less relevant than the held one is skipped",
        [("u1", HIGH), ("u1", LOW)],
        [None, CallSkipped],
        {HIGH: 1},
        ["c0"],
        {1: CallSkipped},
    ),
    (
        "a call of the same type merges the old one and is skipped once it is a no-op",
        [("u1", LOW), ("u1", LOW), ("u1", LOW, "noop_after_merge")],
        [None, None, CallSkipped],
        {},
        [],
        {0: CallOverwritten, 1: CallOverwritten, 2: CallSkipped},
    ),
]


@pytest.mark.parametrize(
    ("adds", "returns", "pending", "held", "told"),
    [c[1:] for c in ADD_CASES],
    ids=[c[0] for c in ADD_CASES],
)
def test_add(adds, returns, pending, held, told) -> None:
    q = CallQueue(RELEVANCES)
    outcomes: Outcomes = {}
    got = [q.add(queued(step, outcomes, i)) for i, step in enumerate(adds)]
    assert [type(e) if e is not None else None for e in got] == returns
    assert state(q) == (pending, held)
    assert {i: type(e) for i, e in outcomes.items()} == told
    assert len(q) == sum(pending.values())


#: While the object's call is in flight (popped, not finalized): (rule, the second add,
#: pending right after it, pending after the first is finalized, held after it, told).
IN_FLIGHT_CASES = [
    (
        "another type waits for the call in flight, then goes",
        (HIGH,),
        {},
        {HIGH: 1},
        ["c1"],
        {},
    ),
    (
        "the same type merges and is re-queued when the call in flight finalizes",
        (LOW,),
        {},
        {LOW: 1},
        ["c1"],
        {0: CallOverwritten},
    ),
    (
        "a no-op is held while a call for the object is in flight (it may undo it)",
        (LOW, "noop"),
        {},
        {LOW: 1},
        ["c1"],
        {0: CallOverwritten},
    ),
]


@pytest.mark.parametrize(
    ("second", "pending_while", "pending_after", "held_after", "told"),
    [c[1:] for c in IN_FLIGHT_CASES],
    ids=[c[0] for c in IN_FLIGHT_CASES],
)
def test_a_call_added_while_its_objects_call_is_in_flight(
    second, pending_while, pending_after, held_after, told
) -> None:
    q = CallQueue(RELEVANCES)
    outcomes: Outcomes = {}
    assert q.add(queued(("u1", LOW), outcomes, 0)) is None
    popped = q.pop_nowait()
    assert popped is not None and q.in_flight == {"u1"}
    assert q.add(queued(("u1", *second), outcomes, 1)) is None
    assert state(q)[0] == pending_while
    assert q.pop_nowait() is None  # one call per object on the wire
    q.finalize(popped)
    assert state(q) == (pending_after, held_after)
    assert q.in_flight == set()
    assert {i: type(e) for i, e in outcomes.items()} == told


def test_calls_pop_in_fifo_order_and_stay_held_while_in_flight() -> None:
    q = CallQueue(RELEVANCES)
    q.add(QueuedCall(MockCall("u1", LOW, name="c0")))
    q.add(QueuedCall(MockCall("u2", LOW, name="c1")))
    assert q.pending(LOW) == 2
    first = q.pop_nowait()
    assert first is not None and first.call.name == "c0"
    assert (q.pending(LOW), q.in_flight, len(q.calls)) == (1, {"u1"}, 2)
    second = q.pop_nowait()
    assert second is not None and second.call.name == "c1"
    assert (q.pending(LOW), q.in_flight, len(q.calls)) == (0, {"u1", "u2"}, 2)
    assert q.pop_nowait() is None


def test_fifo_holds_across_types_and_an_overwritten_call_keeps_its_place() -> None:
    q = CallQueue(RELEVANCES)
    q.add(QueuedCall(MockCall("u1", LOW, name="a")))
    q.add(QueuedCall(MockCall("u2", HIGH, name="b")))
    q.add(QueuedCall(MockCall("u1", HIGH, name="a2")))  # overwrites a, keeps u1's place
    popped = [q.pop_nowait(), q.pop_nowait()]
    assert [p.call.name for p in popped if p is not None] == ["a2", "b"]


def test_finalize_forgets_a_call_with_no_newer_one() -> None:
    q = CallQueue(RELEVANCES)
    q.add(QueuedCall(MockCall("u", LOW)))
    popped = q.pop_nowait()
    assert popped is not None
    q.finalize(popped)
    assert (len(q), q.calls, q.in_flight) == (0, {}, set())


SYNC_CASES = [
    ("the object is synced with the pending call", "u1", False, True, True, None),
    ("a pending call the sync makes a no-op is dropped", "u1", True, True, False, CallSkipped),
    ("an object without a call is returned as it is", "u2", False, False, True, None),
]


@pytest.mark.parametrize(
    ("uid", "noop_after_sync", "synced", "still_held", "told"),
    [c[1:] for c in SYNC_CASES],
    ids=[c[0] for c in SYNC_CASES],
)
def test_sync_object(uid, noop_after_sync, synced, still_held, told) -> None:
    q = CallQueue(RELEVANCES)
    outcomes: Outcomes = {}
    q.add(
        QueuedCall(
            MockCall("u1", LOW, noop_after_sync=noop_after_sync),
            lambda err: outcomes.__setitem__(0, err),
        )
    )
    obj = core_pb2.Pod(metadata={"uid": uid})
    got = q.sync_object(obj)
    assert (got.metadata.annotations.get("synced") == "true") == synced
    assert ("u1" in q.calls) == still_held
    assert q.pending(LOW) == (1 if still_held else 0)
    assert type(outcomes.get(0)) is (told or type(None))


def test_close_ends_pending_and_in_flight_calls_and_stops_popping() -> None:
    q = CallQueue(RELEVANCES)
    outcomes: Outcomes = {}
    q.add(QueuedCall(MockCall("u1"), lambda err: outcomes.__setitem__(1, err)))
    q.add(QueuedCall(MockCall("u2"), lambda err: outcomes.__setitem__(2, err)))
    popped = q.pop_nowait()
    assert popped is not None and popped.call.uid == "u1"
    q.close()
    assert {i: type(e) for i, e in outcomes.items()} == {1: DispatcherClosed, 2: DispatcherClosed}
    assert q.pop_nowait() is None
    late: Outcomes = {}
    err = q.add(QueuedCall(MockCall("u3"), lambda e: late.__setitem__(3, e)))
    assert isinstance(err, DispatcherClosed) and isinstance(late[3], DispatcherClosed)
    popped.finish(None)  # the in-flight call's own end comes after: the first word stands
    assert isinstance(outcomes[1], DispatcherClosed)


def test_a_capped_type_waits_while_other_types_go() -> None:
    q = CallQueue(RELEVANCES, limits={LOW: 1})
    for name, uid, t in [("l1", "u1", LOW), ("l2", "u2", LOW), ("h3", "u3", HIGH)]:
        q.add(QueuedCall(MockCall(uid, t, name=name)))
    first, second = q.pop_nowait(), q.pop_nowait()
    assert first is not None and second is not None
    assert [first.call.name, second.call.name] == ["l1", "h3"]
    assert q.pop_nowait() is None  # l2 waits for l1
    q.finalize(first)
    third = q.pop_nowait()
    assert third is not None and third.call.name == "l2"


@pytest.mark.parametrize(
    ("err", "unexpected"),
    [
        (None, False),
        (CallSkipped("x"), False),
        (CallOverwritten("x"), False),
        (DispatcherClosed("x"), True),
        (RuntimeError("x"), True),
    ],
)
def test_skipped_and_overwritten_are_expected_outcomes(err, unexpected: bool) -> None:
    assert is_unexpected(err) == unexpected
