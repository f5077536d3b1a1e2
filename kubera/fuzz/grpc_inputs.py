"""The gRPC inputs the fuzz harness sends (hypothesis strategies: raw, random and crafted
requests for each method), and the loops that send them through a `Caller` into a
`Tally` (kubera/fuzz/harness.py)."""

from __future__ import annotations

import functools
import io
import json
from dataclasses import dataclass
from typing import Any

from google.protobuf import any_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kubera.fuzz.harness import METHODS, POD_URL, SERVICE, Caller, Tally, pod_doc, valid_pod_bytes
from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import meta_pb2, policy_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_TYPE_URL, KINDS
from services.api.machinery.kubeobject import object_meta

# ------------------------------------------------------------------ strategies

NAMES = ["", "fz-0", "fz-1", "default", "kube-system", "n1", "a" * 300, "Bad_Name", "ü"]
RESOURCES = [k.resource for k in KINDS]
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
    doc = pod_doc(
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
def example_texts() -> list[tuple[str, str]]:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "examples"
    return [
        (p.name, p.read_text())
        for p in sorted(root.rglob("*"))
        if p.suffix in (".yaml", ".yml", ".json")
    ]


@functools.cache
def example_objects() -> tuple[any_pb2.Any, ...]:
    """Every object of examples/ (nodes, namespaces, deployments, priority classes, pods
    of every scheduling feature), as a client would send it. Parsed once a process (each
    draw of an example object used to parse every manifest again: most of a fuzz run's
    time); callers read them and never change them."""
    from kubera.cli import manifests

    out = [codec.pack(codec.decode(pod_doc("fz-ex", "default", "", {}), validate="strict").obj)]
    for name, text in example_texts():
        try:
            docs = manifests.decode_all(manifests.parse(name, text), "strict", warn=io.StringIO())
        except Exception:  # noqa: BLE001, S112 - not every example is an apply manifest
            continue
        for m in docs:
            if m.kind.namespaced and not m.namespace:
                object_meta(m.obj).namespace = "default"
            out.append(codec.pack(m.obj))
    return tuple(out)


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


def bind_requests() -> st.SearchStrategy[pb.BindRequest]:
    """BindRequests around the seeded pods' names, fencing tokens good and bad."""
    return st.builds(
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
    elif method in ("Update", "UpdateStatus", "Finalize"):
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
        s = bind_requests()
    elif method == "BindBatch":
        one = bind_requests()
        s = st.one_of(
            st.builds(lambda binds: pb.BindBatchRequest(binds=binds), st.lists(one, max_size=8)),
            st.builds(
                lambda b, n: pb.BindBatchRequest(binds=[b] * n),
                one,
                st.one_of(st.just(size.max_batch), st.integers(0, size.max_batch)),
            ),
        )
    elif method in ("BatchCreate", "BatchUpdate"):
        if method == "BatchCreate":
            s = batch_requests(pb.BatchCreateRequest, size.max_batch)
        else:
            s = batch_requests(pb.BatchUpdateRequest, size.max_batch, status=st.booleans())
    elif method == "Evict":
        s = st.builds(
            lambda ns, n, g, dry, uid, rv: pb.EvictRequest(
                eviction=policy_pb2.Eviction(
                    metadata=meta_pb2.ObjectMeta(namespace=ns, name=n),
                    delete_options=policy_pb2.DeleteOptions(
                        dry_run=["All"] if dry else [],
                        preconditions=policy_pb2.Preconditions(
                            **({} if uid is None else {"uid": uid}),
                            **({} if rv is None else {"resource_version": rv}),
                        ),
                        **({} if g is None else {"grace_period_seconds": g}),
                    ),
                )
            ),
            names(),
            names(),
            st.one_of(st.none(), st.integers(*INT64), st.sampled_from([-1, 0, 1, INT64[1]])),
            st.booleans(),
            st.one_of(st.none(), st.text(max_size=40)),
            st.one_of(st.none(), resource_versions()),
        )
    elif method == "Health":
        s = st.just(pb.HealthRequest())
    elif method in ("Watch", "WatchBatches"):
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
