"""The API calls waiting for the dispatcher, one per object (upstream backend/api_dispatcher
call_queue.go).

At most one call per object (its key, `APICall.uid`) is held, pending or in flight, so the
writes to one object go out in order and a newer write can take the place of an older one
that was not sent yet. A call added for an object that already has one:

    new call less relevant than the held one     the new one is skipped (CallSkipped)
    another type, the held one pending           the held one is overwritten (CallOverwritten)
    another type, the held one in flight         the new one waits; it goes out when the
                                                 in-flight one is finalized
    the same type                                new.merge(old); the old one is overwritten
                                                 (if it is in flight it still runs; the
                                                 merged one follows it)
    then: the call is a no-op (and nothing       it is skipped (CallSkipped), and a held
          for the object is in flight)           pending one is dropped with it

    add ──► pending (FIFO) ──pop──► in flight ──finalize──► gone
                                         └── a newer call arrived meanwhile ──► pending again

Relevance (calls.RELEVANCES): a binding (2) supersedes a status patch (1) of the same pod.
Types of equal relevance are for different kinds of objects (an Event's key is not its
pod's).

Kubera's addition: `limits` caps how many calls of one type are in flight. The reports
(PodScheduled conditions, events) are paced at the scheduler's client QPS; capped, a storm
of them takes a few of the dispatcher's slots while binds keep the rest. The pending keys
are kept in a heap per type by their sequence number (a key overwritten by a call of
another type keeps its number, so its place), and `pop` takes the oldest key of a type
under its cap: without caps in the way this is upstream's one FIFO.

Single-threaded (asyncio): no locks; `pop_nowait` never waits (the dispatcher waits).
"""

from __future__ import annotations

import collections
import heapq
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from services.scheduler.dispatcher.calls import APICall

log = logging.getLogger(__name__)


class CallSkipped(Exception):
    """The call was not sent: it has no effect, or a more relevant one is held."""


class CallOverwritten(Exception):
    """The call was not sent (or its result is not the last word): a newer call for the
    same object took its place."""


class DispatcherClosed(Exception):
    """The dispatcher closed (the term ended) before the call finished."""


def is_unexpected(err: BaseException | None) -> bool:
    """Upstream IsUnexpectedError: an error other than the call being skipped or
    overwritten (those are the queue's normal outcomes)."""
    return err is not None and not isinstance(err, CallSkipped | CallOverwritten)


#: Called once with the call's outcome: None (done), or the error.
OnFinish = Callable[[BaseException | None], None]


@dataclass(eq=False)
class QueuedCall:
    """A call and what the queue needs of it."""

    call: APICall
    on_finish: OnFinish | None = None
    #: Which add() this is: finalize() tells the call that ran from a newer one.
    call_id: int = 0
    _finished: bool = field(default=False, repr=False)

    def finish(self, err: BaseException | None) -> None:
        """Tell the caller the outcome; only the first outcome is told (upstream's
        non-blocking send on a channel of one)."""
        if self._finished:
            return
        self._finished = True
        if self.on_finish is None:
            return
        try:
            self.on_finish(err)
        except Exception:  # noqa: BLE001 - a caller's callback must not break the queue
            log.exception("on_finish of a %s call failed", self.call.call_type)


class CallQueue:
    """The pending and in-flight calls (see the module's docstring)."""

    def __init__(self, relevances: Mapping[str, int], limits: Mapping[str, int] | None = None):
        self.relevances = dict(relevances)
        self.limits = dict(limits or {})
        self.closed = False
        self._counter = 0
        #: Every held call, pending or in flight, by object key.
        self.calls: dict[str, QueuedCall] = {}
        #: Pending object keys: key -> (sequence number, call type); the heaps below may
        #: hold stale entries (a key removed or moved to another type), skipped at pop.
        self._pending: dict[str, tuple[int, str]] = {}
        self._heaps: dict[str, list[tuple[int, str]]] = {}
        self._pending_types: collections.Counter[str] = collections.Counter()
        #: Keys whose call is running now, and how many run per type.
        self.in_flight: set[str] = set()
        self._running: collections.Counter[str] = collections.Counter()

    # ------------------------------------------------------------- reading

    def __len__(self) -> int:
        """Pending calls (not in flight)."""
        return len(self._pending)

    def pending(self, call_type: str) -> int:
        """Pending calls of `call_type` (upstream's pending_async_api_calls gauge)."""
        return self._pending_types[call_type]

    # ------------------------------------------------------------- adding

    def add(self, qc: QueuedCall) -> Exception | None:
        """Hold `qc`, or skip it (the error returned is also told to its on_finish)."""
        if self.closed:
            closed = DispatcherClosed("api dispatcher is closed")
            qc.finish(closed)
            return closed
        qc.call_id = self._counter
        self._counter += 1
        old = self.calls.get(qc.call.uid)
        if old is not None:
            err = self._merge(old, qc)
            if err is not None:
                return err
        return self._enqueue(qc, old)

    def _less_relevant(self, old: APICall, new: APICall) -> bool:
        return self.relevances.get(new.call_type, 0) < self.relevances.get(old.call_type, 0)

    def _merge(self, old: QueuedCall, new: QueuedCall) -> Exception | None:
        if self._less_relevant(old.call, new.call):
            skipped = CallSkipped("a more relevant call is already enqueued for this object")
            new.finish(skipped)
            return skipped
        if old.call.call_type != new.call.call_type:
            if old.call.uid in self.in_flight:
                return None  # the new call follows the running one
            old.finish(CallOverwritten("a more relevant call was enqueued for this object"))
            return None
        try:
            new.call.merge(old.call)
        except Exception as e:  # noqa: BLE001 - the calls do not fit together: keep the old
            err = Exception(f"failed to merge API calls: {e}")
            new.finish(err)
            return err
        old.finish(CallOverwritten("a call of the same type was enqueued for this object"))
        return None

    def _enqueue(self, qc: QueuedCall, old: QueuedCall | None) -> Exception | None:
        uid = qc.call.uid
        if qc.call.is_noop() and uid not in self.in_flight:
            if old is not None:
                self._remove_pending(uid)
            skipped = CallSkipped("call does not need to be executed because it has no effect")
            qc.finish(skipped)
            return skipped
        self.calls[uid] = qc
        if old is None:
            self._push(uid, qc.call.call_type)
        elif uid not in self.in_flight and old.call.call_type != qc.call.call_type:
            # Overwritten while pending: the key keeps its place, under the new type.
            seq, _ = self._unpend(uid)
            self._push(uid, qc.call.call_type, seq)
        return None

    def _push(self, uid: str, call_type: str, seq: int | None = None) -> None:
        if seq is None:
            seq = self._counter
            self._counter += 1
        self._pending[uid] = (seq, call_type)
        self._pending_types[call_type] += 1
        heapq.heappush(self._heaps.setdefault(call_type, []), (seq, uid))

    def _unpend(self, uid: str) -> tuple[int, str]:
        seq, call_type = self._pending.pop(uid)
        self._pending_types[call_type] -= 1
        return seq, call_type

    def _remove_pending(self, uid: str) -> None:
        qc = self.calls.pop(uid, None)
        if qc is None or uid in self.in_flight:
            return
        if uid in self._pending:
            self._unpend(uid)

    # ------------------------------------------------------------- running

    def pop_nowait(self) -> QueuedCall | None:
        """The oldest pending call of a type under its limit, now in flight; None when
        there is none (or the queue is closed). Every call popped must be finalized."""
        if self.closed:
            return None
        best: tuple[int, str] | None = None
        for call_type, heap in self._heaps.items():
            while heap and self._pending.get(heap[0][1]) != (heap[0][0], call_type):
                heapq.heappop(heap)  # stale: removed, or moved to another type
            if not heap:
                continue
            limit = self.limits.get(call_type)
            if limit is not None and self._running[call_type] >= limit:
                continue
            if best is None or heap[0][0] < best[0]:
                best = (heap[0][0], call_type)
        if best is None:
            return None
        _, uid = heapq.heappop(self._heaps[best[1]])
        self._unpend(uid)
        qc = self.calls[uid]
        self.in_flight.add(uid)
        self._running[qc.call.call_type] += 1
        return qc

    def finalize(self, qc: QueuedCall) -> None:
        """`qc` (popped) has run: forget it, or queue the newer call for its object."""
        uid = qc.call.uid
        self._running[qc.call.call_type] -= 1
        self.in_flight.discard(uid)
        newer = self.calls.get(uid)
        if newer is None:
            return
        if newer.call_id == qc.call_id:
            del self.calls[uid]
        elif not self.closed:
            self._push(uid, newer.call.call_type)

    def sync_object(self, obj: Any) -> Any:
        """The object with the pending call for it applied (the call also takes the
        object's newer state as its base); a call the object makes a no-op is dropped."""
        uid = obj.metadata.uid
        qc = self.calls.get(uid)
        if qc is None:
            return obj
        synced = qc.call.sync(obj)
        if qc.call.is_noop() and uid not in self.in_flight:
            self._remove_pending(uid)
            qc.finish(
                CallSkipped("call does not need to be executed because after sync it has no effect")
            )
        return synced

    def close(self) -> None:
        """Every held call, pending or in flight, ends with DispatcherClosed."""
        if self.closed:
            return
        self.closed = True
        for qc in list(self.calls.values()):
            qc.finish(DispatcherClosed("dispatcher closed"))
        self._pending.clear()
        self._heaps.clear()
        self._pending_types.clear()
