"""Bind coalescing: concurrent `Client.bind` calls travel as one BindBatch RPC.

Why this module exists: a scheduler runs many binding cycles at once, each awaiting one
bind. Sent one RPC each, they cost one apiserver request and two etcd round trips per pod;
gathered, a batch costs a few for all. The first bind after a quiet spell goes at once (no
added latency); binds that arrive while batches are in flight wait for the next one, up to
`max_batch` per call. Each caller gets its own result, or its own exception of the class a
single Bind would have raised (the server reports each bind's code, message and reason).

A call that fails as a whole (a deadline passed, the stream broke, the apiserver went
away after the request was sent) fails every bind it carried with that one error, and
some of them may have been applied: the server commits a batch in several txns. That is
the outcome of a single Bind failing so, once per bind: ambiguous, never a false success.
The scheduler handles it as it handles a single Bind's: it forgets the assumed pod and
requeues it with backoff; a bind that was applied reaches it through the pods watch (the
pod turns up bound, leaves the queue), and a retry of it ends "already assigned".
`MAX_BATCH` bounds how many binds one such failure makes ambiguous at once.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

import grpc

from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery.errors import ApiError

log = logging.getLogger("services.client")

#: Binds per BindBatch call: well under the apiserver's cap (MAX_BATCH_ITEMS, 1,000), and
#: few enough that a failed call leaves at most this many binds ambiguous; the server
#: commits them ~40 per txn (bindbatch.TXN_BINDS), so a call is a few txns.
MAX_BATCH = 128
#: BindBatch calls in flight at once: one being served while the next is sent.
MAX_IN_FLIGHT = 2

Send = Callable[[pb.BindBatchRequest], Awaitable[pb.BindBatchResponse]]
#: (code, message, reason) -> the ApiError a single call ending so would raise.
ErrorFor = Callable[[grpc.StatusCode, str, str], ApiError]
Decode = Callable[[Any, str], Any]


class BindCoalescer:
    """Queues binds and sends them in BindBatch calls (see the module's docstring)."""

    def __init__(
        self,
        send: Send,
        error_for: ErrorFor,
        decode: Decode,
        *,
        max_batch: int = MAX_BATCH,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        self._send = send
        self._error_for = error_for
        self._decode = decode
        self.max_batch = max_batch
        self.max_in_flight = max_in_flight
        self._queue: list[tuple[pb.BindRequest, asyncio.Future[Any]]] = []
        self._in_flight = 0
        self._tasks: set[asyncio.Task[None]] = set()
        #: Calls sent and binds carried (for tests and benchmarks).
        self.calls = 0
        self.binds = 0

    async def bind(self, request: pb.BindRequest) -> Any:
        """The bound pod, or the bind's own ApiError raised."""
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._queue.append((request, fut))
        self._kick()
        return await fut

    def _kick(self) -> None:
        while self._queue and self._in_flight < self.max_in_flight:
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
            batch = [(r, f) for r, f in batch if not f.done()]  # callers cancelled meanwhile
            if not batch:
                continue
            self._in_flight += 1
            task = asyncio.get_running_loop().create_task(self._flush(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _flush(self, batch: list[tuple[pb.BindRequest, asyncio.Future[Any]]]) -> None:
        try:
            self.calls += 1
            self.binds += len(batch)
            try:
                resp = await self._send(pb.BindBatchRequest(binds=[r for r, _ in batch]))
            except asyncio.CancelledError:
                for _, fut in batch:
                    fut.cancel()  # the call was abandoned (loop shutting down): so are its binds
                raise
            except Exception as e:  # noqa: BLE001 - the call failed: every bind in it did
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(_copy(e))
                return
            if len(resp.results) != len(batch):
                err = ApiError(f"BindBatch: {len(resp.results)} results for {len(batch)} binds")
                for _, fut in batch:
                    if not fut.done():
                        fut.set_exception(err)
                return
            for (req, fut), r in zip(batch, resp.results, strict=True):
                if fut.done():
                    continue
                got = outcome(r, req.name, self._error_for, self._decode)
                if isinstance(got, Exception):
                    fut.set_exception(got)
                else:
                    fut.set_result(got)
        finally:
            self._in_flight -= 1
            self._kick()


_CODES = {c.value[0]: c for c in grpc.StatusCode}


def outcome(r: pb.BindResult, name: str, error_for: ErrorFor, decode: Decode) -> Any:
    """One BindBatch result: the bound pod, or the exception (returned, not raised) that
    a single Bind ending so would raise."""
    if r.code != 0:
        return error_for(_CODES.get(r.code, grpc.StatusCode.UNKNOWN), r.message, r.reason)
    try:
        return decode(r.object, f"bind pod {name}")
    except Exception as e:  # noqa: BLE001 - CorruptObjectError from decode
        return e


def _copy(e: Exception) -> Exception:
    """One exception object per caller (each raise adds its own traceback)."""
    if isinstance(e, ApiError):
        return type(e).from_message(e.message)
    return e
