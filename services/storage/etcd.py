"""Storage on a real etcd v3, through aetcd's connection and etcd's own gRPC stubs.

aetcd manages the channel; transactions and watches use the raw KV/Watch stubs it
carries so we keep what its convenience layer drops: the response header revision of
a txn, whole multi-event watch responses, progress notifications and compaction.

TLS with client certificates (etcd's --client-cert-auth, what `kubera up` runs): aetcd
0.x only opens plaintext channels (`rpc.insecure_channel` in `Client.connect`), so
`_TlsClient` swaps the channel it just made (lazy: nothing was dialled yet) for a
grpc.aio.secure_channel with the CA and the client certificate, and rebuilds the stubs
aetcd made on it. The swap happens in the same step as aetcd's connect (no await in
between), so no call ever goes out on the plaintext channel. `EtcdTLS.from_env()` reads
the files etcdctl-style from $KUBERA_ETCD_CAFILE / _CERTFILE / _KEYFILE (the kubera CLI
sets them from the context `kubera up` wrote).
"""

from __future__ import annotations

import asyncio
import functools
import os
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import aetcd
import aetcd.watcher
import grpc
from aetcd import rpc

from services.grpcserver import RECONNECT_OPTIONS
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


#: The environment variables `EtcdTLS.from_env` reads (PEM file paths).
ENV_CAFILE, ENV_CERTFILE, ENV_KEYFILE = (
    "KUBERA_ETCD_CAFILE",
    "KUBERA_ETCD_CERTFILE",
    "KUBERA_ETCD_KEYFILE",
)


@dataclass(frozen=True)
class EtcdTLS:
    """What a client needs to reach an etcd serving TLS: the CA that signed etcd's serving
    certificate, and a client certificate with its key (PEM contents, not paths, so a
    config carrying them works on any machine)."""

    ca: bytes
    cert: bytes = b""
    key: bytes = b""

    @classmethod
    def from_files(cls, ca_file: str, cert_file: str = "", key_file: str = "") -> EtcdTLS:
        return cls(
            Path(ca_file).read_bytes(),
            Path(cert_file).read_bytes() if cert_file else b"",
            Path(key_file).read_bytes() if key_file else b"",
        )

    @classmethod
    def from_env(cls) -> EtcdTLS | None:
        ca = os.environ.get(ENV_CAFILE, "")
        if not ca:
            return None
        return cls.from_files(ca, os.environ.get(ENV_CERTFILE, ""), os.environ.get(ENV_KEYFILE, ""))

    def credentials(self) -> grpc.ChannelCredentials:
        return grpc.ssl_channel_credentials(
            root_certificates=self.ca,
            private_key=self.key or None,
            certificate_chain=self.cert or None,
        )


class _TlsClient(aetcd.Client):
    """aetcd's client on a TLS channel (see the module docstring)."""

    def __init__(self, *, tls: EtcdTLS, **kwargs: object) -> None:
        super().__init__(**kwargs)  # type: ignore[arg-type]
        self._tls = tls

    async def connect(self) -> None:
        if self._connected.is_set():
            return
        await super().connect()
        plain: grpc.aio.Channel | None = self.channel  # type: ignore[has-type]
        if plain is None or getattr(self, "_tls_channel", None) is plain:
            return
        self.channel = grpc.aio.secure_channel(
            f"{self._host}:{self._port}", self._tls.credentials(), options=self._options.items()
        )
        self._tls_channel = self.channel
        self.kvstub = rpc.KVStub(self.channel)
        self.clusterstub = rpc.ClusterStub(self.channel)
        self.leasestub = rpc.LeaseStub(self.channel)
        self.maintenancestub = rpc.MaintenanceStub(self.channel)
        self._watcher = aetcd.watcher.Watcher(
            rpc.WatchStub(self.channel), timeout=self._timeout, metadata=self.metadata
        )
        await plain.close()


class EtcdStorage:
    def __init__(self, endpoint: str, *, timeout: float = 10.0, tls: EtcdTLS | None = None) -> None:
        """`tls`: reach etcd over TLS (None: from the environment, `EtcdTLS.from_env`,
        when `endpoint` is https://; else plaintext)."""
        host, port = parse_endpoint(endpoint)
        self.endpoint = endpoint
        self._timeout = timeout
        if tls is None and endpoint.startswith("https://"):
            tls = EtcdTLS.from_env()
        self.tls = tls
        client_cls = functools.partial(_TlsClient, tls=tls) if tls is not None else aetcd.Client
        self._client = client_cls(
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
                **dict(RECONNECT_OPTIONS),
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
