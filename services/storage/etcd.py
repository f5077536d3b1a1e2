"""Storage on a real etcd v3, through aetcd's connection and etcd's own gRPC stubs.

aetcd manages the channel; transactions and watches use the raw KV/Watch stubs it
carries so we keep what its convenience layer drops: the response header revision of
a txn, whole multi-event watch responses, progress notifications and compaction.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import aetcd
import grpc
from aetcd import rpc

from services.storage import (
    CompactedError,
    Compare,
    Delete,
    Event,
    KeyValue,
    Op,
    Put,
    StorageRequestTooLargeError,
    StorageUnavailableError,
    TxnResult,
    WatchBatch,
    prefix_end,
)

_TARGETS = {
    "create": rpc.Compare.CREATE,
    "mod": rpc.Compare.MOD,
    "version": rpc.Compare.VERSION,
    "value": rpc.Compare.VALUE,
}
_OPS = {
    "==": rpc.Compare.EQUAL,
    "!=": rpc.Compare.NOT_EQUAL,
    "<": rpc.Compare.LESS,
    ">": rpc.Compare.GREATER,
}
_RETRYABLE = {grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED}


def _kv(m: rpc.KeyValue) -> KeyValue:
    return KeyValue(m.key.decode(), m.value, m.create_revision, m.mod_revision, m.version, m.lease)


def parse_endpoint(url: str) -> tuple[str, int]:
    """'http://127.0.0.1:2379' or '127.0.0.1:2379' → ('127.0.0.1', 2379)."""
    rest = url.split("://", 1)[-1].rstrip("/")
    host, _, port = rest.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"etcd endpoint {url!r}: expected host:port or http://host:port")
    return host, int(port)


class EtcdStorage:
    def __init__(self, endpoint: str, *, timeout: float = 10.0) -> None:
        host, port = parse_endpoint(endpoint)
        self.endpoint = endpoint
        self._timeout = timeout
        self._client = aetcd.Client(
            host=host,
            port=port,
            options={
                "grpc.max_receive_message_length": 256 * 1024 * 1024,
                # A half-open connection (etcd stopped, a partition) must surface as an
                # error, not a watch that waits forever. etcd answers pings more often than
                # --grpc-keepalive-min-time (5 s), or pings with no stream open, with
                # GOAWAY "too_many_pings": so 30 s, and only while calls are open.
                "grpc.keepalive_time_ms": 30_000,
                "grpc.keepalive_timeout_ms": 10_000,
                "grpc.keepalive_permit_without_calls": 0,
            },
        )
        self._kv: rpc.KVStub | None = None
        self._watch: rpc.WatchStub | None = None

    async def connect(self) -> None:
        await self._client.connect()
        self._kv = rpc.KVStub(self._client.channel)
        self._watch = rpc.WatchStub(self._client.channel)

    async def _call(self, method, request):
        if self._kv is None:
            await self.connect()
        try:
            return await method(request, timeout=self._timeout)
        except grpc.aio.AioRpcError as e:
            if e.code() in _RETRYABLE:
                raise StorageUnavailableError(f"etcd at {self.endpoint}: {e.details()}") from e
            if "request is too large" in (e.details() or ""):
                raise StorageRequestTooLargeError(
                    f"etcd refused the request as too large ({e.details()}; its "
                    f"--max-request-bytes is 1.5 MiB by default): {len(request.SerializeToString())} bytes"
                ) from None
            raise

    async def get(self, key: str) -> KeyValue | None:
        if self._kv is None:
            await self.connect()
        resp = await self._call(self._kv.Range, rpc.RangeRequest(key=key.encode()))  # type: ignore[union-attr]
        return _kv(resp.kvs[0]) if resp.kvs else None

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        if self._kv is None:
            await self.connect()
        req = rpc.RangeRequest(key=prefix.encode(), range_end=prefix_end(prefix).encode("latin-1"))
        resp = await self._call(self._kv.Range, req)  # type: ignore[union-attr]
        return [_kv(m) for m in resp.kvs], resp.header.revision

    @staticmethod
    def _compare(c: Compare) -> rpc.Compare:
        m = rpc.Compare(key=c.key.encode(), target=_TARGETS[c.target], result=_OPS[c.op])
        if c.target == "create":
            m.create_revision = int(c.value)  # type: ignore[arg-type]
        elif c.target == "mod":
            m.mod_revision = int(c.value)  # type: ignore[arg-type]
        elif c.target == "version":
            m.version = int(c.value)  # type: ignore[arg-type]
        else:
            m.value = c.value  # type: ignore[assignment]
        return m

    @staticmethod
    def _op(op: Op) -> rpc.RequestOp:
        if isinstance(op, Put):
            return rpc.RequestOp(
                request_put=rpc.PutRequest(key=op.key.encode(), value=op.value, lease=op.lease)
            )
        if isinstance(op, Delete):
            return rpc.RequestOp(request_delete_range=rpc.DeleteRangeRequest(key=op.key.encode()))
        return rpc.RequestOp(request_range=rpc.RangeRequest(key=op.key.encode()))

    async def txn(
        self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult:
        if self._kv is None:
            await self.connect()
        req = rpc.TxnRequest(
            compare=[self._compare(c) for c in compares],
            success=[self._op(o) for o in success],
            failure=[self._op(o) for o in failure],
        )
        resp = await self._call(self._kv.Txn, req)  # type: ignore[union-attr]
        gets = tuple(
            (_kv(r.response_range.kvs[0]) if r.response_range.kvs else None)
            for r in resp.responses
            if r.WhichOneof("response") == "response_range"
        )
        return TxnResult(resp.succeeded, resp.header.revision, gets)

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchBatch]:
        if self._watch is None:
            await self.connect()
        create = rpc.WatchCreateRequest(
            key=prefix.encode(),
            range_end=prefix_end(prefix).encode("latin-1"),
            start_revision=start_revision,
            progress_notify=True,
            prev_kv=True,
        )
        requests: asyncio.Queue[rpc.WatchRequest | None] = asyncio.Queue()
        await requests.put(rpc.WatchRequest(create_request=create))

        async def request_iter():
            while True:
                r = await requests.get()
                if r is None:
                    return
                yield r

        call = self._watch.Watch(request_iter())  # type: ignore[union-attr]
        try:
            async for resp in call:
                if resp.compact_revision:
                    raise CompactedError(resp.compact_revision)
                if resp.canceled:
                    raise StorageUnavailableError(f"etcd canceled the watch: {resp.cancel_reason}")
                if resp.created and not resp.events:
                    continue
                events = tuple(
                    Event(
                        "PUT" if e.type == rpc.Event.PUT else "DELETE",
                        _kv(e.kv),
                        _kv(e.prev_kv) if e.HasField("prev_kv") else None,
                    )
                    for e in resp.events
                )
                yield WatchBatch(events, resp.header.revision)
        except grpc.aio.AioRpcError as e:
            raise StorageUnavailableError(f"etcd watch at {self.endpoint}: {e.details()}") from e
        finally:
            await requests.put(None)
            call.cancel()

    async def revision(self) -> int:
        if self._kv is None:
            await self.connect()
        resp = await self._call(self._kv.Range, rpc.RangeRequest(key=b"\0", limit=1))  # type: ignore[union-attr]
        return resp.header.revision

    async def compact(self, revision: int) -> None:
        await self._client.compact(revision, physical=True)

    async def grant_lease(self, ttl: int) -> int:
        lease = await self._client.lease(ttl)
        return lease.id

    async def revoke_lease(self, lease_id: int) -> None:
        await self._client.revoke_lease(lease_id)

    async def close(self) -> None:
        await self._client.close()
        self._kv = self._watch = None
