"""The API dispatcher: the scheduler's writes, queued and sent in the background (upstream
backend/api_dispatcher/api_dispatcher.go, SchedulerAsyncAPICalls).

    dispatcher = APIDispatcher(client, parallelism=N)
    dispatcher.start()                         the sending loop (one task), for one term
    dispatcher.add(call, on_finish)            returns at once: None, or why it was skipped
    await dispatcher.call(call)                add and wait: the call's error or None
    await dispatcher.send(call)                add and wait: raises the call's error
    dispatcher.sync_object(pod)                a newer pod from the informer
    await dispatcher.close()                   end of the term: every held call fails

The loop takes a slot (at most `parallelism` calls run at once), then the oldest pending
call (call_queue.py: one call per object, merged and superseded by upstream's rules), and
runs it on its own task; when it ends, the queue is told (a newer call for the same object
goes next) and then the caller (`on_finish`).

Binds still travel together: a PodBindingCall calls `Client.bind`, whose coalescer sends
the binds in flight as BindBatch calls (services/client/binds.py), so the default
parallelism is the scheduler's binding-cycle limit (upstream's 16 goroutines each carry one
request; here a slot is a coroutine and binds share calls).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from services.clock import Clock, RealClock
from services.scheduler.dispatcher.call_queue import (
    CallQueue,
    DispatcherClosed,
    OnFinish,
    QueuedCall,
    is_unexpected,
)
from services.scheduler.dispatcher.calls import RELEVANCES, APICall, PodStatusPatchCall

if TYPE_CHECKING:
    from services.scheduler.metrics import AsyncAPICallMetrics

log = logging.getLogger(__name__)

#: Calls in flight at most (SchedulerOptions.max_binding_tasks' default).
PARALLELISM = 256


class APIDispatcher:
    """Queues API calls and sends them in the background (see the module's docstring).
    `limits`: calls in flight at most per call type (call_queue.py)."""

    def __init__(
        self,
        client: Any,
        *,
        parallelism: int = PARALLELISM,
        relevances: Mapping[str, int] = RELEVANCES,
        limits: Mapping[str, int] | None = None,
        metrics: AsyncAPICallMetrics | None = None,
        clock: Clock | None = None,
    ) -> None:
        """`metrics`: upstream's async_api_call series to record into (None: none);
        `clock` times the calls for them (default: real time)."""
        if parallelism < 1:
            raise ValueError(f"parallelism must be positive, not {parallelism}")
        self.client = client
        self.parallelism = parallelism
        self.queue = CallQueue(relevances, limits)
        self.metrics = metrics
        self.clock = clock or RealClock()
        #: The metrics' label children, resolved once (a call's path stays cheap).
        self._pending_gauges = (
            {t: metrics.pending_calls.labels(call_type=t) for t in relevances} if metrics else {}
        )
        self._done_series: dict[tuple[str, str], tuple[Any, Any]] = {}
        self._slots = asyncio.Semaphore(parallelism)
        self._wake = asyncio.Event()
        #: Set whenever a call ends (drained() checks whether any is left).
        self._drained = asyncio.Event()
        self._loop: asyncio.Task[None] | None = None
        self._running: set[asyncio.Task[None]] = set()
        #: Calls sent, by (call type, "success" | "error") (upstream's
        #: scheduler_async_api_call_execution_total).
        self.executed: Counter[tuple[str, str]] = Counter()

    # ------------------------------------------------------------- callers

    def add(self, call: APICall, on_finish: OnFinish | None = None) -> Exception | None:
        """Queue `call`; None, or the error it was skipped with (also told to
        `on_finish`, which is called once with the call's outcome)."""
        err = self.queue.add(QueuedCall(call, on_finish))
        if err is None:
            self._wake.set()
        self._gauge()
        return err

    def call(self, call: APICall) -> asyncio.Future[BaseException | None]:
        """Queue `call`; a future resolved with its outcome (None, or the error) — upstream
        APICacher's onFinish channel, to wait on."""
        fut: asyncio.Future[BaseException | None] = asyncio.get_running_loop().create_future()

        def done(err: BaseException | None) -> None:
            if not fut.done():
                fut.set_result(err)

        self.add(call, done)
        return fut

    async def send(self, call: APICall) -> None:
        """Queue `call` and wait for it: returns when it was sent, raises its error (or
        why it was not sent: skipped, overwritten, the dispatcher closed)."""
        err = await self.call(call)
        if err is not None:
            raise err

    async def drained(self) -> None:
        """Wait until no call is held, pending or in flight (tests, flushes)."""
        for _ in range(100_000):  # bounded: each round is one call finishing
            if not self.queue.calls or self.queue.closed:
                return
            self._drained.clear()
            await self._drained.wait()

    def sync_object(self, obj: Any) -> Any:
        """A newer copy of an object (from the informer) with the pending call for it
        applied; the call takes it as its base (and is dropped if it became a no-op)."""
        synced = self.queue.sync_object(obj)
        self._drained.set()
        self._gauge()
        return synced

    def _gauge(self) -> None:
        """pending_async_api_calls from the queue (a few types: cheap)."""
        for call_type, gauge in self._pending_gauges.items():
            gauge.set(self.queue.pending(call_type))

    @property
    def pending(self) -> int:
        return len(self.queue)

    @property
    def in_flight(self) -> int:
        return len(self._running)

    # ------------------------------------------------------------- the loop

    def start(self) -> None:
        """Start sending (idempotent)."""
        if self._loop is None and not self.queue.closed:
            self._loop = asyncio.get_running_loop().create_task(self._run(), name="api-dispatcher")

    async def _run(self) -> None:
        while True:
            # A slot first, then the call: a popped call never waits for a slot.
            await self._slots.acquire()
            qc = self.queue.pop_nowait()
            while qc is None:
                if self.queue.closed:
                    self._slots.release()
                    return
                self._wake.clear()
                await self._wake.wait()
                qc = self.queue.pop_nowait()
            self._gauge()
            task = asyncio.get_running_loop().create_task(self._execute(qc))
            self._running.add(task)
            task.add_done_callback(self._running.discard)

    async def _execute(self, qc: QueuedCall) -> None:
        err: BaseException | None = None
        start = self.clock.monotonic()
        try:
            await qc.call.execute(self.client)
        except asyncio.CancelledError:
            err = DispatcherClosed("dispatcher closed while the call was in flight")
            raise
        except Exception as e:  # noqa: BLE001 - the call's error goes to its caller
            err = e
        finally:
            result = "error" if err else "success"
            self.executed[(qc.call.call_type, result)] += 1
            if self.metrics is not None:
                total, duration = self._series(qc.call.call_type, result)
                total.inc()
                duration.observe(self.clock.monotonic() - start)
            self.queue.finalize(qc)
            self._gauge()
            self._slots.release()
            self._wake.set()
            self._drained.set()
            qc.finish(err)

    def _series(self, call_type: str, result: str) -> tuple[Any, Any]:
        """execution_total and execution_duration_seconds children of (type, result)."""
        got = self._done_series.get((call_type, result))
        if got is None:
            assert self.metrics is not None
            labels = {"call_type": call_type, "result": result}
            got = (
                self.metrics.execution_total.labels(**labels),
                self.metrics.execution_duration_seconds.labels(**labels),
            )
            self._done_series[(call_type, result)] = got
        return got

    async def close(self) -> None:
        """Stop: every held call ends with DispatcherClosed (in-flight ones are
        cancelled: like a cancelled request, one may still have reached the apiserver,
        where a bind's fencing token decides); nothing more is sent."""
        self.queue.close()
        self._wake.set()
        self._drained.set()
        tasks = [*self._running, *([self._loop] if self._loop is not None else [])]
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._loop = None


def nominate(dispatcher: APIDispatcher, pod: Any, node: str) -> None:
    """status.nominatedNodeName of `pod` = `node` ("" clears it) through `dispatcher`, not
    waited for (upstream updatePod with the gate on); a failure is logged."""
    key = f"{pod.metadata.namespace}/{pod.metadata.name}"

    def done(err: BaseException | None) -> None:
        if is_unexpected(err) and not isinstance(err, DispatcherClosed):
            log.info("could not set the nominated node of %s: %s", key, err)

    dispatcher.add(PodStatusPatchCall(pod, [], node), done)
