"""The fuzz harness: hypothesis over every gRPC method of a real apiserver, and over the
CLI's manifest decoder. The default suite runs it small (tests/fuzz/); `kubera bench
fuzz` (kubera/bench/fuzz.py) runs the same harness large and prints its figures. It
needs hypothesis (a test dependency), so only those two import it (and tests/cli, for
`ServerThread`).

The apiserver is the real one (`ApiServer` behind `services.apiserver.server.serve`),
on its own event loop in a thread, and every input crosses a real gRPC channel as bytes
(identity serializers), so a request the server cannot even decode is tried the same way
as a well-formed one. For each method three shapes of input:

- `raw`: random bytes as the whole request;
- `random`: a well-formed request whose every field is random (strings, int64 extremes,
  nested messages, `Any` objects with random type URLs and bytes);
- `crafted`: requests built around valid objects and then bent: bit flips, truncations
  and insertions in a valid serialized pod, random names, selectors in and out of their
  grammar, merge patches (JSON of every shape, nesting up to thousands of levels),
  huge, negative and non-numeric resourceVersions, grace periods, fencing tokens and
  batch sizes.

An answer is fine when it is OK or one of the status codes the API means (`ALLOWED`); it
is a failure when it is anything else (UNKNOWN, INTERNAL, a unary call that hangs past
its deadline), or when the server logged at ERROR while answering (a traceback). Each
failure is kept once per class (method, shape, code, first line of the message), with
the smallest input seen and the head of the traceback, so one run lists every class.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import traceback
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

import grpc
from google.protobuf import any_pb2

from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery import codec
from services.api.machinery.kinds import KINDS
from services.apiserver import ApiServer, ApiServerConfig, serve
from services.storage import Delete, Put, Storage
from services.storage.memory import MemoryStorage

SERVICE = pb.DESCRIPTOR.services_by_name["ApiServer"]
METHODS = tuple(m.name for m in SERVICE.methods)

#: Codes the API answers on purpose (protos/kubera/v1/apiserver.proto and the issue).
ALLOWED = frozenset(
    {
        "OK",
        "INVALID_ARGUMENT",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "RESOURCE_EXHAUSTED",
        "DATA_LOSS",
        "UNAVAILABLE",
        # Sent by the server (upstream's 504 Timeout: "Too large resource version"); the
        # client's own deadline running out is a hang instead (`_CLIENT_DEADLINE`).
        "DEADLINE_EXCEEDED",
    }
)
#: grpc's details when the caller's own deadline ran out (nothing the server said).
_CLIENT_DEADLINE = "Deadline Exceeded"
#: A watch still streaming when the client stopped reading (not an answer, not a failure).
OPEN = "OPEN (stream still open)"

UNARY_TIMEOUT = 20.0
WATCH_READ_SECONDS = 0.2
WATCH_MAX_EVENTS = 3
MAX_MESSAGE = 64 * 1024 * 1024


POD_URL = next(k.type_url for k in KINDS if k.kind == "Pod")


def pod_doc(name: str, namespace: str, rv: str, spec_extra: dict[str, Any]) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if rv:
        meta["resourceVersion"] = rv
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta,
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.k8s.io/pause:3.9",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                }
            ],
            **spec_extra,
        },
    }


def valid_pod_bytes(name: str = "fz-0", namespace: str = "default", rv: str = "") -> bytes:
    return codec.decode(pod_doc(name, namespace, rv, {}), validate="strict").obj.SerializeToString()


# ------------------------------------------------------------------ the server


class ErrorLog(logging.Handler):
    """Every record at ERROR or above, from any logger (the server's, grpc's, asyncio's)."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []
        self._lock = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        with self._lock:
            self.records.append(record)

    def drain(self) -> list[logging.LogRecord]:
        with self._lock:
            out, self.records = self.records, []
        return out


def traceback_head(record: logging.LogRecord) -> str:
    """`message | ExcType: text @ file:line in fn` for one logged record."""
    head = record.getMessage().splitlines()[0] if record.getMessage() else record.name
    if record.exc_info and record.exc_info[1] is not None:
        exc = record.exc_info[1]
        frames = traceback.extract_tb(exc.__traceback__)
        where = (
            f" @ {frames[-1].filename.split('/kubera/')[-1]}:{frames[-1].lineno} in {frames[-1].name}"
            if frames
            else ""
        )
        head += f" | {type(exc).__name__}: {str(exc)[:120]}{where}"
    return " ".join(head.split())[:300]


#: The fuzz run's apiserver: a small watch cache and frequent bookmarks, so watches opened
#: by the fuzz answer (or end) within its read window.
FUZZ_API_CONFIG = ApiServerConfig(watch_cache_capacity=200, bookmark_interval=0.5)


class RecordingStorage:
    """A Storage that keeps the keys of every write that committed, so the fuzz can tell
    whether a request answered with an error wrote anything (a partial write). The fuzz
    sends one request at a time and the apiserver writes nothing by itself, so the writes
    between a request's start and its answer are that request's."""

    def __init__(self, inner: Storage) -> None:
        self.inner = inner
        self.log: list[str] = []
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def txn(self, compares: Any, success: Any, failure: Any = ()) -> Any:
        result = await self.inner.txn(compares, success, failure)
        ops = success if result.succeeded else failure
        keys = [op.key for op in ops if isinstance(op, Put | Delete)]
        if keys:
            with self._lock:
                self.log.extend(keys)
        return result

    def mark(self) -> int:
        with self._lock:
            return len(self.log)

    def since(self, mark: int) -> list[str]:
        with self._lock:
            return self.log[mark:]


class ServerThread:
    """A real apiserver gRPC server on its own event loop in a background thread (the fuzz
    harness's, and the CLI tests'), built with `config` (ApiServerConfig's defaults if None)."""

    def __init__(
        self,
        storage_factory: Callable[[], Storage] = MemoryStorage,
        config: ApiServerConfig | None = None,
        *,
        http: bool = False,
        tokens: str = "",
        record_writes: bool = False,
    ) -> None:
        """`http`: also serve the Kubernetes HTTP API (services/httpapi); `tokens`: a
        static token file's text (services/auth/tokens.py), which both APIs then
        authenticate and authorize by (""): every caller is the admin); `record_writes`:
        wrap the storage in a RecordingStorage (`self.writes`)."""
        self.storage_factory = storage_factory
        self.config = config
        self.http = http
        self.tokens = tokens
        self.record_writes = record_writes
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.api: ApiServer | None = None
        self.server: grpc.aio.Server | None = None
        self.storage: Storage | None = None
        self.writes: RecordingStorage | None = None
        self.http_runner: Any = None
        self.address = ""
        self.url = ""

    def start(self) -> str:
        self.thread.start()
        fut: Future[int] = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        self.address = f"127.0.0.1:{fut.result(timeout=60)}"
        return self.address

    async def _start(self) -> int:
        self.storage = self.storage_factory()
        connect = getattr(self.storage, "connect", None)
        if connect is not None:
            await connect()
        storage: Storage = self.storage
        if self.record_writes:
            self.writes = RecordingStorage(self.storage)
            storage = self.writes  # type: ignore[assignment]
        self.api = ApiServer(storage, self.config)
        await self.api.start()
        kw: dict[str, Any] = {}
        if self.tokens:
            from services.apiserver import registry_lookup
            from services.auth.authorizer import KuberaAuthorizer
            from services.auth.tokens import TokenAuthenticator

            authn = TokenAuthenticator.from_text(self.tokens)
            kw = {"authn": authn, "authz": KuberaAuthorizer(registry_lookup(self.api))}
        self.server, port = await serve(self.api, authn=kw.get("authn"))
        if self.http:
            from services.httpapi import serve_http

            self.http_runner, http_port = await serve_http(self.api, "127.0.0.1", 0, **kw)
            self.url = f"http://127.0.0.1:{http_port}"
        return port

    async def _stop(self) -> None:
        if self.http_runner is not None:
            await self.http_runner.cleanup()
        if self.server is not None:
            await self.server.stop(grace=None)
        if self.api is not None:
            await self.api.stop()
        close = getattr(self.storage, "close", None)
        if close is not None:
            await close()

    def stop(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(timeout=60)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=60)
            self.loop.close()


# ------------------------------------------------------------------- the tally


@dataclass
class Failure:
    method: str
    shape: str
    code: str
    head: str
    count: int = 0
    example: bytes = b""
    traceback: str = ""


@dataclass
class Tally:
    """What was tried, what each method answered, and every failure class once."""

    tried: Counter[str] = field(default_factory=Counter)
    codes: dict[str, Counter[str]] = field(default_factory=dict)
    failures: dict[tuple[str, str, str, str], Failure] = field(default_factory=dict)

    def record(
        self,
        method: str,
        shape: str,
        code: str,
        message: str,
        request: bytes,
        logged: list[str],
        *,
        failed: bool | None = None,
    ) -> None:
        """One answer. `failed`: whether `code` is a failure (default: a gRPC code not in
        ALLOWED); `logged`: the server's ERROR records (and partial writes) meanwhile."""
        self.tried[method] += 1
        self.codes.setdefault(method, Counter())[code] += 1
        problems: list[tuple[str, str, str]] = []
        if failed is None:
            failed = code not in ALLOWED and code != OPEN
        if failed:
            problems.append((code, _first_line(message), ""))
        for head in logged:
            problems.append(("logged at ERROR", head, head))
        for code_, head, tb in problems:
            key = (method, shape, code_, _generalize(head))
            f = self.failures.get(key)
            if f is None:
                f = self.failures[key] = Failure(method, shape, code_, head, traceback=tb)
            f.count += 1
            if not f.example or len(request) < len(f.example):
                f.example = request
                f.head = head
                f.traceback = tb or f.traceback

    def dump(self, directory: str) -> None:
        """Each failure class's smallest input as `<n>-<method>-<shape>.bin`, with an
        index.txt naming the class of each (to replay with `Caller.call`)."""
        from pathlib import Path

        out = Path(directory)
        out.mkdir(parents=True, exist_ok=True)
        index = []
        for n, f in enumerate(self.failures.values()):
            name = f"{n:03d}-{f.method}-{f.shape}.bin"
            (out / name).write_bytes(f.example)
            index.append(f"{name}\t{f.code}\t{f.head}")
        (out / "index.txt").write_text("\n".join(index) + "\n")

    @property
    def total(self) -> int:
        return sum(self.tried.values())

    def report(self) -> str:
        lines = [f"fuzz: {self.total} inputs over {len(self.tried)} methods or routes"]
        order = [m for m in METHODS if m in self.tried] + sorted(set(self.tried) - set(METHODS))
        width = max((len(m) for m in order), default=13)
        for method in order:
            codes = ", ".join(f"{c} {n}" for c, n in sorted(self.codes[method].items()))
            lines.append(f"  {method:<{width}} {self.tried[method]:>6} tried: {codes}")
        if not self.failures:
            lines.append(
                "no UNKNOWN, INTERNAL or 500, no hang, no traceback in the server's log, "
                "no write by a request answered with an error"
            )
        else:
            lines.append(f"{len(self.failures)} failure classes:")
            for f in sorted(self.failures.values(), key=lambda f: (f.method, f.shape, f.code)):
                lines.append(
                    f"  {f.method} [{f.shape}] {f.code} x{f.count}: {f.head}"
                    + (f"\n      traceback: {f.traceback}" if f.traceback else "")
                    + f"\n      smallest input ({len(f.example)} bytes): {f.example[:160]!r}"
                )
        return "\n".join(lines)


def _first_line(message: str) -> str:
    """The message on one line (an embedded gRPC error's details included), cut short."""
    return " ".join((message or "").split())[:300]


def _generalize(head: str) -> str:
    """A failure's class: its first line with quoted values and numbers blanked, so one
    bug with many inputs is one class."""
    import re

    head = re.sub(r"'[^']*'|\"[^\"]*\"|0x[0-9a-f]+", "…", head)
    return re.sub(r"\d+", "N", head)[:160]


# ------------------------------------------------------------------- the calls


class Caller:
    """Sends raw request bytes to one method over a real channel and classifies the
    answer (a status code name, or OPEN for a watch still streaming)."""

    def __init__(
        self,
        address: str,
        errors: ErrorLog,
        *,
        token: str = "",
        writes: RecordingStorage | None = None,
    ) -> None:
        #: Sent as `authorization: Bearer` on every call (a server with a token file).
        self.metadata = (("authorization", f"Bearer {token}"),) if token else None
        #: The storage's write log: a call answered with an error must not have written.
        self.writes = writes
        self.channel = grpc.insecure_channel(
            address,
            options=[
                ("grpc.max_send_message_length", MAX_MESSAGE),
                ("grpc.max_receive_message_length", MAX_MESSAGE),
            ],
        )
        self.errors = errors
        self.unary = {
            m.name: self.channel.unary_unary(f"/{SERVICE.full_name}/{m.name}")
            for m in SERVICE.methods
            if not m.server_streaming
        }
        self.stream = {
            m.name: self.channel.unary_stream(f"/{SERVICE.full_name}/{m.name}")
            for m in SERVICE.methods
            if m.server_streaming
        }

    def close(self) -> None:
        self.channel.close()

    def call(self, method: str, request: bytes) -> tuple[str, str]:
        try:
            if method in self.stream:
                return self._watch(method, request)
            self.unary[method](request, timeout=UNARY_TIMEOUT, metadata=self.metadata)
            return "OK", ""
        except grpc.RpcError as e:
            code = e.code()  # type: ignore[attr-defined]
            name = code.name if code is not None else "UNKNOWN"
            if name == "DEADLINE_EXCEEDED" and e.details() == _CLIENT_DEADLINE:  # type: ignore[attr-defined]
                name = "DEADLINE_EXCEEDED (hung)"
            return name, e.details() or ""  # type: ignore[attr-defined]

    def _watch(self, method: str, request: bytes) -> tuple[str, str]:
        call = self.stream[method](request, timeout=WATCH_READ_SECONDS, metadata=self.metadata)
        seen = 0
        try:
            for _ in call:
                seen += 1
                if seen >= WATCH_MAX_EVENTS:
                    call.cancel()
                    return OPEN, ""
        except grpc.RpcError as e:
            code, details = e.code(), e.details() or ""  # type: ignore[attr-defined]
            if code == grpc.StatusCode.CANCELLED or (
                code == grpc.StatusCode.DEADLINE_EXCEEDED and details == _CLIENT_DEADLINE
            ):
                return OPEN, ""
            return code.name, details
        return "OK", ""

    def run(self, tally: Tally, method: str, shape: str, request: bytes) -> None:
        self.errors.drain()
        mark = self.writes.mark() if self.writes is not None else 0
        code, message = self.call(method, request)
        logged = [traceback_head(r) for r in self.errors.drain()]
        if self.writes is not None and code not in ("OK", OPEN):
            wrote = self.writes.since(mark)
            if wrote:
                logged.append(f"partial write: answered {code} but wrote {wrote[:3]}")
        tally.record(method, shape, code, message, request, logged)

    def healthy(self) -> bool:
        code, _ = self.call("Health", b"")
        return code == "OK"

    def serves(self, name: str) -> list[str]:
        """What no longer works after a run: Health, a create, a get of it, and a watch
        that delivers it (so the watch cache still runs). Empty when all do."""
        broken = []
        if not self.healthy():
            broken.append("Health")
        create = pb.CreateRequest(
            resource="pods", object=any_pb2.Any(type_url=POD_URL, value=valid_pod_bytes(name))
        )
        if self.call("Create", create.SerializeToString())[0] != "OK":
            broken.append("Create")
        get = pb.GetRequest(resource="pods", namespace="default", name=name)
        if self.call("Get", get.SerializeToString())[0] != "OK":
            broken.append("Get")
        watch = pb.WatchRequest(
            resource="pods", namespace="default", field_selector=f"metadata.name={name}"
        )
        call = self.stream["Watch"](watch.SerializeToString(), timeout=5, metadata=self.metadata)
        try:
            next(iter(call))
            call.cancel()
        except (grpc.RpcError, StopIteration):
            broken.append("Watch")
        return broken
