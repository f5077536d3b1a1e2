"""The apiserver's gRPC edge answers cleanly whatever arrives, and a corrupt stored object is
contained: a real in-process gRPC server on real etcd, requests sent as raw bytes where
the point is bytes no kubera client would send."""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest
from google.protobuf import any_pb2
from google.protobuf.message import Message

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery import codec
from services.api.machinery.errors import (
    BadRequestError,
    CorruptObjectError,
    NotFoundError,
    ResourceVersionTooLargeError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.limits import MAX_BATCH_ITEMS, MAX_DEPTH, MAX_REQUEST_BYTES
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import MAX_MESSAGE_CHARS
from services.client import Client
from services.client.informer import Informer
from services.storage import Put
from services.storage.etcd import EtcdStorage
from tests.builders import pod
from tests.harness import control_plane, etcd_store
from tests.waiting import eventually

pytestmark = pytest.mark.integration
PODS = BY_KIND["Pod"]
SERVICE = "/kubera.v1.ApiServer/"
METHODS = [m.name for m in pb.DESCRIPTOR.services_by_name["ApiServer"].methods]
#: Bytes that decode as no message: field 1, length-delimited, a length far past the end.
GARBAGE = b"\x0a\xff\xff\xff\xff\x0f"
#: How long a watch from a resourceVersion beyond the store's waits here (upstream: 3 s).
WAIT = 0.3


@dataclass
class Edge:
    api: ApiServer
    storage: EtcdStorage
    client: Client
    address: str
    warnings: list[str]

    async def raw(self, method: str, request: bytes | Message) -> grpc.StatusCode:
        """Send `request` (bytes as they are) to `method`; the status code it ends with.
        The details are kept in `self.details`."""
        data = request if isinstance(request, bytes) else request.SerializeToString()
        big = 64 * 1024 * 1024
        async with grpc.aio.insecure_channel(
            self.address, options=[("grpc.max_send_message_length", big)]
        ) as ch:
            try:
                if method == "Watch":
                    call = ch.unary_stream(SERVICE + method)
                    async for _ in call(data, timeout=5):
                        break
                else:
                    await ch.unary_unary(SERVICE + method)(data, timeout=10)
            except grpc.aio.AioRpcError as e:
                self.details = e.details() or ""
                return e.code()
        self.details = ""
        return grpc.StatusCode.OK

    async def pod_names(self) -> list[str]:
        items, _ = await self.client.list(PODS, namespace="default")
        return sorted(p.metadata.name for p in items)  # type: ignore[attr-defined]


@pytest.fixture
async def edge(etcd_server: EtcdProcess) -> AsyncIterator[Edge]:
    config = ApiServerConfig(
        watch_cache_capacity=50, bookmark_interval=0.2, resource_version_wait=WAIT
    )
    async with (
        etcd_store(etcd_server.endpoint, wipe_prefix="/registry/") as storage,
        control_plane(storage, config) as cp,
    ):
        warnings: list[str] = []
        client = cp.new_client(warning_handler=warnings.append)
        yield Edge(cp.api, storage, client, cp.address, warnings)


def _any(obj: Message) -> any_pb2.Any:
    return codec.pack(obj)


BAD_POD = any_pb2.Any(type_url=PODS.type_url, value=GARBAGE)


# ----------------------------------------------- undecodable requests and payloads


@pytest.mark.parametrize(
    ("method", "request_", "field"),
    [
        ("Create", pb.CreateRequest(resource="pods", object=BAD_POD), "object"),
        ("Update", pb.UpdateRequest(resource="pods", object=BAD_POD), "object"),
        ("UpdateStatus", pb.UpdateRequest(resource="pods", object=BAD_POD), "object"),
        (
            "BatchCreate",
            pb.BatchCreateRequest(resource="pods", objects=[_any(pod("ok")), BAD_POD]),
            "objects[1]",
        ),
        (
            "BatchUpdate",
            pb.BatchUpdateRequest(resource="pods", objects=[_any(pod("ok")), BAD_POD]),
            "objects[1]",
        ),
    ],
)
async def test_garbage_in_a_request_object_is_invalid_argument_naming_the_field(
    edge: Edge,
    method: str,
    request_: Message,
    field: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.ERROR):
        code = await edge.raw(method, request_)

    assert code == grpc.StatusCode.INVALID_ARGUMENT
    assert edge.details.startswith(f"{field}: the object does not decode as kubera.v1.Pod: ")
    assert await edge.pod_names() == []  # nothing of the request was done
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("data", [GARBAGE, b"\xff" * 16], ids=["truncated", "ff"])
async def test_a_request_that_does_not_decode_is_invalid_argument_for_every_method(
    edge: Edge, method: str, data: bytes
) -> None:
    code = await edge.raw(method, data)

    assert code == grpc.StatusCode.INVALID_ARGUMENT, edge.details
    assert edge.details.startswith(f"{SERVICE}{method}: the request does not decode: ")


async def test_random_bytes_as_a_request_never_end_unknown_or_internal(edge: Edge) -> None:
    rng = random.Random(10)
    codes: dict[grpc.StatusCode, int] = {}
    for method in METHODS:
        for _ in range(15):
            data = rng.randbytes(rng.randint(1, 48))
            code = await edge.raw(method, data)
            assert code not in (grpc.StatusCode.UNKNOWN, grpc.StatusCode.INTERNAL), (
                method,
                data,
                edge.details,
            )
            codes[code] = codes.get(code, 0) + 1
    assert codes.get(grpc.StatusCode.INVALID_ARGUMENT, 0) > 0


# -------------------------------------------------------------------- depth


@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 50_000])
async def test_a_merge_patch_nested_past_the_cap_is_invalid_argument(
    edge: Edge, depth: int
) -> None:
    await edge.client.create(pod("a"))
    patch = '{"metadata":' * (depth - 1) + "{}" + "}" * (depth - 1)

    with pytest.raises(BadRequestError) as e:
        await edge.client.patch(PODS, "a", patch, namespace="default")

    assert e.value.message == f"the patch is nested too deeply (more than {MAX_DEPTH} levels)"


async def test_a_merge_patch_at_the_cap_is_judged_on_its_fields(edge: Edge) -> None:
    await edge.client.create(pod("a"))
    patch = '{"metadata":{"labels":{"x":"1"}}}'
    assert (await edge.client.patch(PODS, "a", patch, namespace="default")).metadata.labels == {
        "x": "1"
    }
    deep = '{"x":' * (MAX_DEPTH - 1) + "{}" + "}" * (MAX_DEPTH - 1)
    with pytest.raises(BadRequestError, match='unknown field "x"'):
        await edge.client.patch(PODS, "a", deep, namespace="default")


# --------------------------------------------------------- resourceVersion


async def test_a_watch_from_far_in_the_future_ends_too_large_after_a_short_wait(
    edge: Edge,
) -> None:
    future = await edge.storage.revision() + 1_000_000
    loop = asyncio.get_running_loop()
    t0 = loop.time()

    with pytest.raises(ResourceVersionTooLargeError) as e:
        async for _ in edge.client.watch(PODS, options=ListOptions(resource_version=str(future))):
            pass

    assert loop.time() - t0 >= WAIT
    current = await edge.storage.revision()
    assert e.value.message == f"Timeout: Too large resource version: {future}, current: {current}"


async def test_a_watch_from_the_next_revision_is_served_when_it_comes(edge: Edge) -> None:
    nxt = await edge.storage.revision() + 1

    async def first() -> str:
        async for ev in edge.client.watch(PODS, options=ListOptions(resource_version=str(nxt))):
            return ev.object.metadata.name  # type: ignore[attr-defined,no-any-return]
        return ""

    task = asyncio.create_task(first())
    await edge.client.create(pod("at-next"))  # at that revision: not after it
    await edge.client.create(pod("after-next"))
    assert await asyncio.wait_for(task, 5) == "after-next"


async def test_a_watch_from_a_revision_etcd_has_but_the_cache_has_not_seen_stays_open(
    edge: Edge,
) -> None:
    # A write to another resource moves etcd's revision, not the pods cache's.
    ns = BY_KIND["Namespace"].new()
    ns.metadata.name = "elsewhere"  # type: ignore[attr-defined]
    await edge.client.create(ns)
    rev = await edge.storage.revision()
    assert edge.api.caches["pods"].revision < rev

    bookmarks = 0
    async for ev in edge.client.watch(
        PODS, options=ListOptions(resource_version=str(rev), allow_bookmarks=True)
    ):
        assert ev.type == "BOOKMARK"
        bookmarks += 1
        if bookmarks == 4:  # 4 bookmarks of 0.2 s: well past the too-large wait
            break


@pytest.mark.parametrize("rv", ["-5", "abc", "1.5", "+5", " 5", "0x10"])
async def test_a_negative_or_non_numeric_resource_version_is_invalid_argument(
    edge: Edge, rv: str
) -> None:
    with pytest.raises(BadRequestError) as e:
        async for _ in edge.client.watch(PODS, options=ListOptions(resource_version=rv)):
            pass

    assert e.value.message == (
        f'resourceVersion: Invalid value: "{rv}": must be a non-negative integer'
    )


async def test_an_informer_relists_when_its_resource_version_is_too_large(edge: Edge) -> None:
    await edge.client.create(pod("there"))
    inf = Informer(edge.client, PODS, resource_version="999999999")  # e.g. etcd restored
    task = asyncio.create_task(inf.run())
    try:
        await eventually(lambda: "default/there" in inf.store)
        assert inf.relists >= 1
        assert int(inf.resource_version) <= await edge.storage.revision()
        assert not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


# -------------------------------------------------------------- request size


async def test_a_batch_create_over_the_item_cap_is_refused_before_any_work(edge: Edge) -> None:
    n = 20_000
    request = pb.BatchCreateRequest(resource="pods", objects=[_any(pod(f"p{i}")) for i in range(n)])

    code = await edge.raw("BatchCreate", request)

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert edge.details == (
        f"BatchCreate: {n} objects sent, at most {MAX_BATCH_ITEMS} per call: send them in "
        "several calls"
    )
    assert await edge.pod_names() == []


async def test_a_batch_update_over_the_item_cap_is_refused(edge: Edge) -> None:
    request = pb.BatchUpdateRequest(
        resource="pods", objects=[_any(pod(f"p{i}")) for i in range(MAX_BATCH_ITEMS + 1)]
    )

    assert await edge.raw("BatchUpdate", request) == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert edge.details.startswith(f"BatchUpdate: {MAX_BATCH_ITEMS + 1} objects sent")


async def test_the_client_sends_a_batch_past_the_cap_in_several_calls(edge: Edge) -> None:
    n = MAX_BATCH_ITEMS + 200

    results = await edge.client.batch_create([pod(f"p{i}") for i in range(n)])

    assert [r.error for r in results] == [None] * n
    assert len(await edge.pod_names()) == n
    assert [r.object.metadata.name for r in results[-2:]] == [f"p{n - 2}", f"p{n - 1}"]  # type: ignore[union-attr]


async def test_a_message_over_the_size_cap_is_resource_exhausted_naming_both_sizes(
    edge: Edge,
) -> None:
    big = pod("big")
    big.metadata.annotations["a"] = "x" * MAX_REQUEST_BYTES  # type: ignore[attr-defined]
    request = pb.CreateRequest(resource="pods", object=_any(big))

    code = await edge.raw("Create", request)

    assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
    assert (
        f"Received message larger than max ({request.ByteSize()} vs. {MAX_REQUEST_BYTES})"
        in edge.details
    )


# ------------------------------------------------------------ corrupt objects


BAD_KEY = PODS.key("default", "bad")


async def _corrupt(edge: Edge, key: str = BAD_KEY) -> int:
    """Put bytes that do not decode under `key`, as etcdctl would; waits for the cache."""
    rev = (await edge.storage.txn([], [Put(key, GARBAGE)])).revision
    assert await edge.api.caches["pods"].wait_revision(rev, 5)
    return rev


async def test_a_get_of_a_corrupt_object_is_data_loss_naming_its_key(edge: Edge) -> None:
    await edge.client.create(pod("good"))
    rev = await _corrupt(edge)

    with pytest.raises(CorruptObjectError) as e:
        await edge.client.get(PODS, "bad", "default")

    assert e.value.message.startswith(
        f"corrupt object: key {BAD_KEY} (revision {rev}): object not decodable as kubera.v1.Pod"
    )
    assert (await edge.client.get(PODS, "good", "default")).metadata.name == "good"  # type: ignore[attr-defined]


async def test_a_list_answers_the_good_objects_and_warns_of_the_corrupt_key(edge: Edge) -> None:
    await edge.client.create(pod("good"))
    await _corrupt(edge)

    assert await edge.pod_names() == ["good"]
    assert len(edge.warnings) == 1
    assert f"key {BAD_KEY}" in edge.warnings[0]
    assert edge.warnings[0].endswith("(left out of the list)")


async def test_a_watch_skips_a_corrupt_value_and_the_cache_logs_it_once(
    edge: Edge, caplog: pytest.LogCaptureFixture
) -> None:
    await edge.client.create(pod("good"))
    seen: list[tuple[str, str]] = []

    async def follow() -> None:
        async for ev in edge.client.watch(PODS):
            seen.append((ev.type, ev.object.metadata.name))  # type: ignore[attr-defined]
            if ev.object.metadata.name == "after":  # type: ignore[attr-defined]
                return

    with caplog.at_level(logging.ERROR, logger="services.apiserver.watchcache"):
        task = asyncio.create_task(follow())
        await eventually(lambda: ("ADDED", "good") in seen)
        await _corrupt(edge)
        await _corrupt(edge, PODS.key("default", "good"))  # a good object turns corrupt
        await edge.client.create(pod("after"))
        await asyncio.wait_for(task, 5)
        # a new watcher sees only what decodes: the last good version of "good"
        fresh = []
        async for ev in edge.client.watch(PODS):
            fresh.append(ev.object.metadata.name)  # type: ignore[attr-defined]
            if len(fresh) == 2:
                break

    assert seen == [("ADDED", "good"), ("ADDED", "after")]
    assert sorted(fresh) == ["after", "good"]
    logged = [r.getMessage() for r in caplog.records if BAD_KEY in r.getMessage()]
    assert len(logged) == 1 and "skipping corrupt object" in logged[0]


async def test_a_corrupt_object_is_deleted_only_with_the_unsafe_option(edge: Edge) -> None:
    await _corrupt(edge)

    with pytest.raises(CorruptObjectError):
        await edge.client.delete(PODS, "bad", "default")
    gone = await edge.client.delete(PODS, "bad", "default", ignore_store_read_error=True)

    assert gone.metadata.name == "bad"  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        await edge.client.get(PODS, "bad", "default")
    assert await edge.pod_names() == [] and edge.warnings == []


async def test_the_unsafe_option_on_a_good_object_is_an_ordinary_delete(edge: Edge) -> None:
    p = pod("fin")
    p.metadata.finalizers.append("example.com/hold")  # type: ignore[attr-defined]
    await edge.client.create(p)

    held = await edge.client.delete(PODS, "fin", "default", ignore_store_read_error=True)

    assert held.metadata.deletion_timestamp  # type: ignore[attr-defined]
    assert await edge.pod_names() == ["fin"]  # finalizers still hold a decodable object


async def test_an_informer_keeps_running_past_a_corrupt_object(edge: Edge) -> None:
    await edge.client.create(pod("good"))
    await _corrupt(edge)
    inf = Informer(edge.client, PODS)
    task = asyncio.create_task(inf.run())
    try:
        await eventually(lambda: "default/good" in inf.store)
        await _corrupt(edge, PODS.key("default", "good"))
        await edge.client.create(pod("after"))
        await eventually(lambda: "default/after" in inf.store)
        assert "default/bad" not in inf.store and not task.done()
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_scheduler_keeps_binding_past_a_corrupt_pod_and_its_deletion(
    edge: Edge,
) -> None:
    from services.scheduler.options import SchedulerOptions
    from services.scheduler.scheduler import Scheduler
    from tests.scheduler.test_scheduler_integration import Cluster

    await _corrupt(edge)  # there before the scheduler's informers list
    sched = Scheduler(edge.client, SchedulerOptions(seed=7))
    stop = asyncio.Event()
    task = asyncio.create_task(sched.run(stop))
    cluster = Cluster(edge.api, edge.client, sched)
    try:
        await cluster.node("n1")
        await cluster.pod("p1")
        assert await cluster.wait_bound("p1") == {"p1": "n1"}
        await _corrupt(edge, PODS.key("default", "p1"))  # a bound pod turns corrupt
        await cluster.pod("p2")
        assert await cluster.wait_bound("p2") == {"p2": "n1"}
        for name in ("bad", "p1"):
            await edge.client.delete(PODS, name, "default", ignore_store_read_error=True)
        await cluster.pod("p3")
        assert await cluster.wait_bound("p3") == {"p3": "n1"}
        assert not task.done()
    finally:
        stop.set()
        await asyncio.wait_for(task, 10)


async def test_an_error_that_would_echo_a_huge_value_is_clipped_not_lost(edge: Edge) -> None:
    with pytest.raises(NotFoundError) as e:
        await edge.client.get(PODS, "x" * 2_000_000, "default")

    full = len('pods "') + 2_000_000 + len('" not found')
    assert e.value.message.startswith('pods "xxx')
    assert e.value.message.endswith(f"... ({full - MAX_MESSAGE_CHARS} more characters)")


async def test_a_batch_of_large_objects_is_written_under_etcds_request_limit(
    edge: Edge,
) -> None:
    # 20 pods of 100 KB: 2 MB in all, more than etcd takes in one txn (1.5 MiB)
    pods = [pod(f"big{i}") for i in range(20)]
    for p in pods:
        p.metadata.annotations["a"] = "x" * 100_000  # type: ignore[attr-defined]

    results = await edge.client.batch_create(pods)

    assert [r.error for r in results] == [None] * 20
    assert len(await edge.pod_names()) == 20


def _over_etcds_limit(name: str) -> Message:
    """A valid pod bigger than etcd takes in one request (1.5 MiB): long container args."""
    p = pod(name)
    p.spec.containers[0].args.extend(["a" * 900_000, "b" * 900_000])  # type: ignore[attr-defined]
    return p


async def test_an_object_over_etcds_limit_is_resource_exhausted_and_costs_only_itself(
    edge: Edge,
) -> None:
    from services.api.machinery.errors import RequestTooLargeError

    with pytest.raises(RequestTooLargeError, match="etcd refused the request as too large"):
        await edge.client.create(_over_etcds_limit("huge"))
    results = await edge.client.batch_create([pod("a"), _over_etcds_limit("huge"), pod("b")])

    assert [type(r.error).__name__ for r in results] == [
        "NoneType",
        "RequestTooLargeError",
        "NoneType",
    ]
    assert await edge.pod_names() == ["a", "b"]
