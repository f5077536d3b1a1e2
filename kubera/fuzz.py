"""The fuzz harness: hypothesis over every gRPC method of a real apiserver, and over the
CLI's manifest decoder. The default suite runs it small (tests/fuzz/); `kubera bench
fuzz` (kubera/bench_fuzz.py) runs the same harness large and prints its figures. It
needs hypothesis (a test dependency), so only those two import it.

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
import functools
import io
import json
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
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import apiserver_pb2 as pb
from services.api import codec
from services.api.kinds import BY_TYPE_URL, KINDS
from services.apiserver.registry import ApiServer
from services.apiserver.server import serve
from services.storage import Storage
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


class ServerThread:
    """A real apiserver gRPC server on its own event loop in a background thread."""

    def __init__(self, storage_factory: Callable[[], Storage] = MemoryStorage) -> None:
        self.storage_factory = storage_factory
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.api: ApiServer | None = None
        self.server: grpc.aio.Server | None = None
        self.storage: Storage | None = None
        self.address = ""

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
        self.api = ApiServer(self.storage, watch_cache_capacity=200, bookmark_interval=0.5)
        await self.api.start()
        self.server, port = await serve(self.api)
        return port

    async def _stop(self) -> None:
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
        self, method: str, shape: str, code: str, message: str, request: bytes, logged: list[str]
    ) -> None:
        self.tried[method] += 1
        self.codes.setdefault(method, Counter())[code] += 1
        problems: list[tuple[str, str, str]] = []
        if code not in ALLOWED and code != OPEN:
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
        lines = [f"fuzz: {self.total} inputs over {len(self.tried)} methods"]
        for method in METHODS:
            if method not in self.tried:
                continue
            codes = ", ".join(f"{c} {n}" for c, n in sorted(self.codes[method].items()))
            lines.append(f"  {method:<13} {self.tried[method]:>6} tried: {codes}")
        if not self.failures:
            lines.append("no UNKNOWN, no INTERNAL, no hang, no traceback in the server's log")
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

    def __init__(self, address: str, errors: ErrorLog) -> None:
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
            self.unary[method](request, timeout=UNARY_TIMEOUT)
            return "OK", ""
        except grpc.RpcError as e:
            code = e.code()  # type: ignore[attr-defined]
            name = code.name if code is not None else "UNKNOWN"
            if name == "DEADLINE_EXCEEDED" and e.details() == _CLIENT_DEADLINE:  # type: ignore[attr-defined]
                name = "DEADLINE_EXCEEDED (hung)"
            return name, e.details() or ""  # type: ignore[attr-defined]

    def _watch(self, method: str, request: bytes) -> tuple[str, str]:
        call = self.stream[method](request, timeout=WATCH_READ_SECONDS)
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
        code, message = self.call(method, request)
        logged = [traceback_head(r) for r in self.errors.drain()]
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
        call = self.stream["Watch"](watch.SerializeToString(), timeout=5)
        try:
            next(iter(call))
            call.cancel()
        except (grpc.RpcError, StopIteration):
            broken.append("Watch")
        return broken


# ------------------------------------------------------------------ strategies

NAMES = ["", "fz-0", "fz-1", "default", "kube-system", "n1", "a" * 300, "Bad_Name", "ü"]
RESOURCES = [k.resource for k in KINDS]
POD_URL = next(k.type_url for k in KINDS if k.kind == "Pod")
INT64 = (-(2**63), 2**63 - 1)
INTERESTING_STRINGS = [
    "",
    "0",
    "-1",
    "-5",
    "1e400",
    "1e17",
    "99999999999999999999999999999999",
    "9223372036854775808",
    "NaN",
    "Infinity",
    "0x10",
    " 1",
    "١٢",
    "\x00",
    "a" * 70000,
]


def names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(NAMES[1:3]),
        st.sampled_from(NAMES),
        st.from_regex(r"[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?", fullmatch=True),
        st.text(max_size=80),
    )


def resources() -> st.SearchStrategy[str]:
    """Mostly pods (the objects below are pods, so requests get past the resource check)."""
    return st.one_of(
        st.just("pods"), st.just("pods"), st.sampled_from(RESOURCES), st.text(max_size=30)
    )


def resource_versions() -> st.SearchStrategy[str]:
    return st.one_of(
        st.just(""),
        st.integers(-(2**70), 2**70).map(str),
        st.integers(0, 10_000).map(str),
        st.sampled_from(INTERESTING_STRINGS[:13]),
        st.text(max_size=30),
    )


def selectors() -> st.SearchStrategy[str]:
    key = st.one_of(
        st.sampled_from(["app", "tier", "metadata.name", "spec.nodeName", "status.phase", "a/b"]),
        st.text(max_size=20),
    )
    value = st.one_of(st.sampled_from(["", "web", "x", "Running"]), st.text(max_size=20))
    term = st.one_of(
        st.builds(lambda k, op, v: f"{k}{op}{v}", key, st.sampled_from(["=", "==", "!="]), value),
        st.builds(
            lambda k, op, vs: f"{k} {op} ({','.join(vs)})",
            key,
            st.sampled_from(["in", "notin", "In"]),
            st.lists(value, max_size=4),
        ),
        st.builds(lambda k, neg: f"!{k}" if neg else k, key, st.booleans()),
    )
    return st.one_of(
        st.lists(term, max_size=5).map(",".join),
        st.text(max_size=200),
        st.integers(1, 5000).map(lambda n: "(" * n),
    )


def json_values(max_leaves: int = 20) -> st.SearchStrategy[Any]:
    scalars = st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**80), 2**80),
        st.floats(allow_nan=False, allow_infinity=False),
        st.sampled_from(INTERESTING_STRINGS[:14]),
        st.text(max_size=20),
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


POD_FIELDS = {
    "metadata": ["labels", "annotations", "name", "namespace", "resourceVersion", "finalizers"],
    "spec": ["containers", "nodeName", "priority", "tolerations", "overhead", "schedulingGates"],
    "status": ["phase", "conditions", "nominatedNodeName"],
}


def depths(max_depth: int) -> st.SearchStrategy[int]:
    """Nesting depths, the interesting ones (around Python's and the caps') often."""
    marks = [d for d in (10, 100, 999, 1000, 1001, 5000, 50_000) if d <= max_depth]
    return st.one_of(st.sampled_from([*marks, max_depth]), st.integers(1, max_depth))


def merge_patches(max_depth: int) -> st.SearchStrategy[str]:
    pod_shaped = st.builds(
        lambda top, f, v: json.dumps({top: {f: v}}),
        st.sampled_from(sorted(POD_FIELDS)),
        st.sampled_from(sorted({f for fs in POD_FIELDS.values() for f in fs})),
        json_values(),
    )
    deep = st.builds(
        lambda n, opener: (
            '{"metadata":{"labels":' + '{"a":' * n + "1" + "}" * n + "}}"
            if opener == "{"
            else '{"spec":{"containers":' + "[" * n + "]" * n + "}}"
        ),
        depths(max_depth),
        st.sampled_from(["{", "["]),
    )
    return st.one_of(
        pod_shaped,
        json_values().map(json.dumps),
        deep,
        st.text(max_size=100),
        depths(max_depth).map(lambda n: "[" * n),
    )


def _pod_doc(name: str, namespace: str, rv: str, spec_extra: dict[str, Any]) -> dict[str, Any]:
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
    return codec.decode(
        _pod_doc(name, namespace, rv, {}), validate="strict"
    ).obj.SerializeToString()


@st.composite
def mutated(draw: st.DrawFn, data: bytes) -> bytes:
    """`data` bent a few times: bit flips, truncation, insertion, deletion, duplication."""
    b = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "truncate", "insert", "delete", "duplicate"]))
        if not b:
            b.extend(draw(st.binary(min_size=1, max_size=8)))
            continue
        i = draw(st.integers(0, len(b) - 1))
        if op == "flip":
            b[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "truncate":
            del b[i:]
        elif op == "insert":
            b[i:i] = draw(st.binary(min_size=1, max_size=16))
        elif op == "delete":
            del b[i : i + draw(st.integers(1, 16))]
        else:
            b[i:i] = b[i : i + draw(st.integers(1, 32))]
    return bytes(b)


def quantities() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(
            [
                "100m",
                "1",
                "64Mi",
                "1e17",
                "1e400",
                "99999999999999999999999999999999",
                "-1",
                "0.0000000001",
                "1Ei",
                "9Ei",
                "NaN",
            ]
        ),
        st.from_regex(
            r"-?[0-9]{1,40}(\.[0-9]{1,10})?(m|k|M|G|Ki|Mi|Gi|Ei|e[0-9]{1,4})?", fullmatch=True
        ),
    )


@st.composite
def valid_pods(draw: st.DrawFn) -> bytes:
    """A pod that decodes, with random names, resourceVersions, quantities, priorities."""
    extra: dict[str, Any] = {}
    if draw(st.booleans()):
        extra["priority"] = draw(st.integers(-(2**31), 2**31 - 1))
    if draw(st.booleans()):
        extra["terminationGracePeriodSeconds"] = draw(st.integers(*INT64))
    if draw(st.booleans()):
        extra["nodeName"] = draw(names())
    doc = _pod_doc(
        draw(names()),
        draw(st.sampled_from(["default", "", "nope"])),
        draw(resource_versions()),
        extra,
    )
    if draw(st.booleans()):
        doc["spec"]["containers"][0]["resources"]["requests"] = {
            draw(st.sampled_from(["cpu", "memory", "pods", "x/y"])): draw(quantities())
        }
    try:
        obj = codec.decode(doc, validate="ignore").obj
    except (codec.DecodeError, ValueError):
        return valid_pod_bytes()
    return obj.SerializeToString()


def random_message(desc: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """A message of `desc` whose fields are random (nested messages to a small depth)."""
    from google.protobuf import message_factory

    cls = message_factory.GetMessageClass(desc)
    fields = [f for f in desc.fields if not (f.message_type and depth >= 3)]

    @st.composite
    def build(draw: st.DrawFn) -> Message:
        msg = cls()
        for f in (
            draw(st.lists(st.sampled_from(fields), max_size=len(fields), unique=True))
            if fields
            else []
        ):
            _set_random(draw, msg, f, depth)
        return msg

    return build()


def _scalar(draw: st.DrawFn, f: FieldDescriptor) -> Any:
    t = f.type
    if t == FieldDescriptor.TYPE_STRING:
        return draw(st.one_of(st.text(max_size=40), st.sampled_from(INTERESTING_STRINGS[:14])))
    if t == FieldDescriptor.TYPE_BYTES:
        return draw(st.binary(max_size=64))
    if t == FieldDescriptor.TYPE_BOOL:
        return draw(st.booleans())
    if t in (
        FieldDescriptor.TYPE_INT64,
        FieldDescriptor.TYPE_SINT64,
        FieldDescriptor.TYPE_SFIXED64,
    ):
        return draw(st.one_of(st.integers(*INT64), st.sampled_from([INT64[0], INT64[1], -1, 0])))
    if t in (FieldDescriptor.TYPE_UINT64, FieldDescriptor.TYPE_FIXED64):
        return draw(st.integers(0, 2**64 - 1))
    if t in (
        FieldDescriptor.TYPE_INT32,
        FieldDescriptor.TYPE_SINT32,
        FieldDescriptor.TYPE_SFIXED32,
    ):
        return draw(st.integers(-(2**31), 2**31 - 1))
    if t in (FieldDescriptor.TYPE_UINT32, FieldDescriptor.TYPE_FIXED32):
        return draw(st.integers(0, 2**32 - 1))
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        return draw(st.floats(width=32 if t == FieldDescriptor.TYPE_FLOAT else 64))
    if t == FieldDescriptor.TYPE_ENUM:
        return draw(st.sampled_from([v.number for v in f.enum_type.values]))
    raise AssertionError(f"unhandled field type {t}")


def _set_random(draw: st.DrawFn, msg: Message, f: FieldDescriptor, depth: int) -> None:
    value = getattr(msg, f.name)
    is_map = f.message_type is not None and f.message_type.GetOptions().map_entry
    if is_map:
        kf, vf = f.message_type.fields_by_name["key"], f.message_type.fields_by_name["value"]
        for _ in range(draw(st.integers(0, 3))):
            k = _scalar(draw, kf)
            if vf.message_type is not None:
                value[k].CopyFrom(draw(random_message(vf.message_type, depth + 1)))
            else:
                value[k] = _scalar(draw, vf)
        return
    if f.is_repeated:
        for _ in range(draw(st.integers(0, 3))):
            if f.message_type is not None:
                value.add().CopyFrom(
                    draw(
                        any_values()
                        if f.message_type.full_name == "google.protobuf.Any"
                        else random_message(f.message_type, depth + 1)
                    )
                )
            else:
                value.append(_scalar(draw, f))
        return
    if f.message_type is not None:
        if f.message_type.full_name == "google.protobuf.Any":
            value.CopyFrom(draw(any_values()))
        else:
            value.CopyFrom(draw(random_message(f.message_type, depth + 1)))
        return
    setattr(msg, f.name, _scalar(draw, f))


@functools.cache
def example_objects() -> list[any_pb2.Any]:
    """Every object of examples/ (nodes, namespaces, deployments, priority classes, pods
    of every scheduling feature), as a client would send it."""
    from kubera import manifests

    out = [codec.pack(codec.decode(_pod_doc("fz-ex", "default", "", {}), validate="strict").obj)]
    for name, text in example_texts():
        try:
            docs = manifests.decode_all(manifests.parse(name, text), "strict", warn=io.StringIO())
        except Exception:  # noqa: BLE001, S112 - not every example is an apply manifest
            continue
        for m in docs:
            if m.kind.namespaced and not m.namespace:
                m.obj.metadata.namespace = "default"  # type: ignore[attr-defined]
            out.append(codec.pack(m.obj))
    return out


@st.composite
def _example_object(draw: st.DrawFn, bend: bool) -> any_pb2.Any:
    a = draw(st.sampled_from(example_objects()))
    value = draw(mutated(a.value)) if bend else a.value
    return any_pb2.Any(type_url=a.type_url, value=value)


def any_values() -> st.SearchStrategy[any_pb2.Any]:
    """An `Any` as a request may carry it: a valid or bent pod or example object, a
    random message of a random kind, random bytes, under a right, wrong or random type
    URL."""

    @st.composite
    def build(draw: st.DrawFn) -> any_pb2.Any:
        kind = draw(st.sampled_from(KINDS))
        value = draw(
            st.one_of(
                valid_pods(),
                valid_pods(),
                mutated(valid_pod_bytes()),
                random_message(kind.message.DESCRIPTOR).map(lambda m: m.SerializeToString()),
                st.binary(max_size=200),
            )
        )
        url = draw(st.one_of(st.just(POD_URL), st.just(kind.type_url), st.text(max_size=40)))
        return any_pb2.Any(type_url=url, value=value)

    return st.one_of(build(), build(), _example_object(False), _example_object(True))


@st.composite
def resource_for(draw: st.DrawFn, a: any_pb2.Any) -> str:
    """Mostly the resource of the object's type URL (so requests get past that check)."""
    kind = BY_TYPE_URL.get(a.type_url)
    if kind is not None and draw(st.integers(0, 9)) < 7:
        return kind.resource
    return draw(resources())


@st.composite
def object_requests(
    draw: st.DrawFn, cls: type[Message], **fields: st.SearchStrategy[Any]
) -> Message:
    a = draw(any_values())
    return cls(resource=draw(resource_for(a)), object=a, **{k: draw(v) for k, v in fields.items()})


@st.composite
def batch_requests(
    draw: st.DrawFn, cls: type[Message], max_batch: int, **fields: st.SearchStrategy[Any]
) -> Message:
    a = draw(any_values())
    if draw(st.booleans()):
        objects = [a, *draw(st.lists(any_values(), max_size=7))]
    else:
        n = draw(st.one_of(st.just(max_batch), st.integers(0, max_batch)))
        objects = [a] * n
    return cls(
        resource=draw(resource_for(a)), objects=objects, **{k: draw(v) for k, v in fields.items()}
    )


@dataclass(frozen=True)
class Size:
    """How big a run is: examples per shape per method, and the input caps."""

    examples: int
    max_batch: int
    max_depth: int
    max_raw: int
    #: The same inputs every run (the default suite: a failure is reproducible, never
    #: flaky); a bench draws new ones each time.
    derandomize: bool = False


def crafted(method: str, size: Size) -> st.SearchStrategy[bytes]:
    """Method-specific, well-formed requests around valid objects, then bent."""
    if method == "Create":
        s: st.SearchStrategy[Message] = object_requests(pb.CreateRequest, dry_run=st.booleans())
    elif method == "Get":
        s = st.builds(pb.GetRequest, resource=resources(), namespace=names(), name=names())
    elif method == "List":
        s = st.builds(
            pb.ListRequest,
            resource=resources(),
            namespace=names(),
            label_selector=selectors(),
            field_selector=selectors(),
        )
    elif method in ("Update", "UpdateStatus"):
        s = object_requests(pb.UpdateRequest)
    elif method == "Patch":
        s = st.builds(
            pb.PatchRequest,
            resource=resources(),
            namespace=names(),
            name=names(),
            merge_patch=merge_patches(size.max_depth),
            status=st.booleans(),
        )
    elif method == "Delete":
        s = st.builds(
            lambda r, ns, n, g, uid, rv: pb.DeleteRequest(
                resource=r,
                namespace=ns,
                name=n,
                uid=uid,
                resource_version=rv,
                **({} if g is None else {"grace_period_seconds": g}),
            ),
            resources(),
            names(),
            names(),
            st.one_of(st.none(), st.integers(*INT64), st.sampled_from([-1, 0, 1, INT64[1]])),
            st.text(max_size=40),
            resource_versions(),
        )
    elif method == "Bind":
        s = st.builds(
            lambda ns, n, node, rv, uid, fencing, check: pb.BindRequest(
                namespace=ns,
                name=n,
                node_name=node,
                resource_version=rv,
                uid=uid,
                check_allocation=check,
                **({} if fencing is None else {"fencing": fencing}),
            ),
            names(),
            names(),
            names(),
            resource_versions(),
            st.text(max_size=40),
            st.one_of(
                st.none(),
                st.builds(
                    pb.FencingToken,
                    key=st.one_of(st.just("/kubera/election/x"), st.text(max_size=40)),
                    create_revision=st.integers(*INT64),
                ),
            ),
            st.booleans(),
        )
    elif method in ("BatchCreate", "BatchUpdate"):
        if method == "BatchCreate":
            s = batch_requests(pb.BatchCreateRequest, size.max_batch)
        else:
            s = batch_requests(pb.BatchUpdateRequest, size.max_batch, status=st.booleans())
    elif method == "Health":
        s = st.just(pb.HealthRequest())
    elif method == "Watch":
        s = st.builds(
            pb.WatchRequest,
            resource=resources(),
            namespace=names(),
            label_selector=selectors(),
            field_selector=selectors(),
            resource_version=resource_versions(),
            allow_watch_bookmarks=st.booleans(),
        )
    else:
        raise AssertionError(f"no crafted requests for {method}")
    return s.map(lambda m: m.SerializeToString())


def shapes(method: str, size: Size) -> dict[str, st.SearchStrategy[bytes]]:
    desc = SERVICE.methods_by_name[method].input_type
    return {
        "raw": st.binary(max_size=size.max_raw),
        "random": random_message(desc).map(lambda m: m.SerializeToString()),
        "crafted": crafted(method, size),
    }


def seed(caller: Caller) -> None:
    """A couple of objects for names in the strategies to find."""
    for name in ("fz-0", "fz-1"):
        req = pb.CreateRequest(
            resource="pods", object=any_pb2.Any(type_url=POD_URL, value=valid_pod_bytes(name))
        )
        caller.call("Create", req.SerializeToString())


def fuzz_method(caller: Caller, tally: Tally, method: str, shape: str, size: Size) -> None:
    """Run hypothesis over one method with one input shape; results go to `tally`."""
    strategy = shapes(method, size)[shape]

    @settings(
        max_examples=size.examples,
        deadline=None,
        database=None,
        derandomize=size.derandomize,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def run(request: bytes) -> None:
        caller.run(tally, method, shape, request)

    run()


def fuzz_all(caller: Caller, tally: Tally, size: Size, methods: tuple[str, ...] = METHODS) -> None:
    seed(caller)
    for method in methods:
        for shape in ("raw", "random", "crafted"):
            fuzz_method(caller, tally, method, shape, size)


# ------------------------------------------------------------- the CLI decoder


@dataclass
class DecoderTally:
    tried: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    failures: dict[str, tuple[str, str]] = field(default_factory=dict)

    def report(self) -> str:
        lines = [
            f"manifest fuzz: {self.tried} inputs: "
            + ", ".join(f"{k} {v}" for k, v in sorted(self.outcomes.items()))
        ]
        for head, (text, tb) in sorted(self.failures.items()):
            lines.append(f"  {head}\n      traceback: {tb}\n      input: {text[:200]!r}")
        if not self.failures:
            lines.append("every input decoded or ended in one CliError line")
        return "\n".join(lines)


def decode_text(tally: DecoderTally, name: str, text: str) -> None:
    """Parse and decode `text` as the CLI does; only a one-line CliError may escape."""
    from kubera import manifests
    from kubera.errors import CliError

    tally.tried += 1
    try:
        docs = manifests.parse(name, text)
        for validate in ("strict", "ignore"):
            manifests.decode_all(docs, validate, warn=io.StringIO())
        tally.outcomes["decoded"] += 1
    except CliError as e:
        if "\n" in str(e) or not str(e):
            _decoder_failure(tally, "CliError of more than one line", text, str(e)[:200])
        else:
            tally.outcomes["CliError"] += 1
    except Exception as e:  # noqa: BLE001 - the failure being looked for
        frames = traceback.extract_tb(e.__traceback__)
        where = (
            f"{frames[-1].filename.split('/kubera/')[-1]}:{frames[-1].lineno} in {frames[-1].name}"
            if frames
            else ""
        )
        _decoder_failure(
            tally, f"{type(e).__name__} @ {where}", text, f"{type(e).__name__}: {str(e)[:150]}"
        )


def _decoder_failure(tally: DecoderTally, head: str, text: str, tb: str) -> None:
    tally.outcomes["failure"] += 1
    old = tally.failures.get(head)
    if old is None or len(text) < len(old[0]):
        tally.failures[head] = (text, tb)


def example_texts() -> list[tuple[str, str]]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "examples"
    return [
        (p.name, p.read_text())
        for p in sorted(root.rglob("*"))
        if p.suffix in (".yaml", ".yml", ".json")
    ]


@st.composite
def mutated_text(draw: st.DrawFn, texts: list[tuple[str, str]]) -> tuple[str, str]:
    name, text = draw(st.sampled_from(texts))
    chars = list(text)
    for _ in range(draw(st.integers(1, 6))):
        op = draw(st.sampled_from(["replace", "delete", "insert", "duplicate-line", "indent"]))
        if not chars:
            chars.extend(draw(st.text(min_size=1, max_size=5)))
            continue
        i = draw(st.integers(0, len(chars) - 1))
        if op == "replace":
            chars[i] = draw(
                st.sampled_from(list(":-[]{}&*!|>'\"#%@`, \n\t0") + [draw(st.characters())])
            )
        elif op == "delete":
            del chars[i : i + draw(st.integers(1, 20))]
        elif op == "insert":
            chars[i:i] = list(
                draw(
                    st.one_of(
                        st.text(max_size=10),
                        st.sampled_from(
                            [
                                "&a ",
                                "*a",
                                "<<: ",
                                "!!binary ",
                                "!!python/object ",
                                "? ",
                                "---\n",
                                "1e400",
                                "99999999999999999999999",
                                "\x00",
                            ]
                        ),
                    )
                )
            )
        elif op == "duplicate-line":
            j = "".join(chars).find("\n", i)
            line_start = "".join(chars).rfind("\n", 0, i) + 1
            if j > 0:
                chars[j + 1 : j + 1] = chars[line_start : j + 1]
        else:
            chars[i:i] = list("  ")
    return (name, "".join(chars))


@st.composite
def alias_trees(draw: st.DrawFn) -> tuple[str, str]:
    """A pod whose labels, annotations or spec hold levels of anchors each aliasing the
    level below `fanout` times (a billion-laughs shape; most are over the budget)."""
    levels, fanout = draw(st.integers(1, 12)), draw(st.integers(1, 12))
    where, indent = draw(
        st.sampled_from(
            [
                ("metadata:\n  labels:\n", "    "),
                ("metadata:\n  annotations:\n", "    "),
                ("spec:\n", "  "),
            ]
        )
    )
    lines = [f"l0: &l0 [{', '.join(['x'] * fanout)}]"]
    for i in range(1, levels):
        lines.append(f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * fanout)}]")
    body = "".join(f"{indent}{line}\n" for line in lines)
    return ("bomb.yaml", f"apiVersion: v1\nkind: Pod\n{where}{body}")


def manifest_texts() -> st.SearchStrategy[tuple[str, str]]:
    texts = example_texts() or [("x.yaml", "apiVersion: v1\nkind: Pod\nmetadata: {name: a}\n")]
    yaml_docs = json_values(max_leaves=30)
    import yaml

    return st.one_of(
        mutated_text(texts),
        alias_trees(),
        st.tuples(st.sampled_from(["x.yaml", "x.json"]), st.text(max_size=300)),
        yaml_docs.map(lambda d: ("x.json", json.dumps(d))),
        yaml_docs.map(lambda d: ("x.yaml", yaml.safe_dump(d))),
        st.builds(
            lambda kind, body: (
                "x.yaml",
                yaml.safe_dump(
                    {"apiVersion": "v1", "kind": kind, "metadata": {"name": "a"}, "spec": body}
                ),
            ),
            st.sampled_from(["Pod", "Node", "Deployment", "List", "Namespace", "PriorityClass"]),
            json_values(max_leaves=30),
        ),
    )


def fuzz_decoder(tally: DecoderTally, examples: int, *, derandomize: bool = False) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=derandomize,
        suppress_health_check=list(HealthCheck),
    )
    @given(manifest_texts())
    def run(item: tuple[str, str]) -> None:
        decode_text(tally, *item)

    run()
