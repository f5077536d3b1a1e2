"""BindBatch conformance: every bind in a batch ends exactly as the same bind sent alone
(single Binds in request order), on the in-memory fake and on real etcd, through the real
gRPC edge and client; and the history it writes passes `kubera check`."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import apiserver_pb2 as pb
from protos.kubera.v1 import apiserver_pb2_grpc as pb_grpc
from protos.kubera.v1 import core_pb2
from services.api.helpers.fencing import BOUND_BY
from services.api.machinery.errors import ApiError, ConflictError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.limits import MAX_BATCH_ITEMS
from services.apiserver import bindbatch
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.chaos.checker import LOST_POD
from services.chaos.history import check_history
from services.client import Client
from services.leaderelection.lock import StorageLock
from services.storage import Storage, StorageUnavailableError
from services.storage.memory import MemoryStorage
from tests.builders import MakeNode, pod
from tests.harness import control_plane, wipe

PODS = BY_KIND["Pod"]
KEY = "/kubera/leaderelection/kube-system/kube-scheduler"


@dataclass
class Cluster:
    api: ApiServer
    client: Client
    address: str
    token: tuple[str, int]
    start: int


@contextlib.asynccontextmanager
async def cluster(storage: Storage) -> AsyncIterator[Cluster]:
    """A fresh apiserver (uids uid-1, uid-2, ... so messages repeat run after run), served
    over gRPC, with the scheduler's election key won."""
    if isinstance(storage, MemoryStorage):
        storage = MemoryStorage()
    else:
        await wipe(storage)
    start = await storage.revision() + 1
    counter = itertools.count(1)
    config = ApiServerConfig(watch_cache_capacity=200, bookmark_interval=0.2)
    async with control_plane(
        storage, config, new_uid=lambda: f"uid-{next(counter)}", client_timeout=20
    ) as cp:
        held, _ = await StorageLock(storage, KEY, lease_duration=15).create("a")
        assert held is not None
        yield Cluster(cp.api, cp.client, cp.address, (KEY, held.create_revision), start)


async def node(api: ApiServer, name: str, cpu: str) -> None:
    alloc = {"cpu": cpu, "memory": "1Gi", "pods": "110"}
    await api.create(MakeNode().typed().name(name).allocatable(alloc).capacity(alloc).obj())


def sized(name: str, cpu: str = "", **spec: Any) -> core_pb2.Pod:
    requests = {"cpu": cpu} if cpu else {}
    resources = {"requests": requests}
    return pod(name, containers=[{"name": "c", "image": "i", "resources": resources}], **spec)


async def scene(c: Cluster) -> None:
    for name, cpu in [("n1", "1"), ("n2", "4"), ("small", "500m")]:
        await node(c.api, name, cpu)
    for p in [
        sized("ok1"),
        sized("ok2"),
        sized("ok3"),
        sized("uid"),
        sized("rv"),
        sized("rvok"),
        sized("bound", nodeName="n2"),
        sized("stale"),
        sized("big", "600m"),
        sized("fit1", "600m"),
        sized("fit2", "600m"),
        sized("dup"),
        sized("dupa", "100m"),
        sized("nonode"),
        sized("gated", schedulingGates=[{"name": "wait"}]),
    ]:
        await c.api.create(p)


#: (pod, node, flags): one row per refusal the single Bind knows, among successes.
CASES: list[tuple[str, str, set[str]]] = [
    ("ok1", "n1", set()),  # fenced, bound
    ("ghost", "n1", set()),  # not found
    ("uid", "n1", {"uid-wrong"}),  # deleted and recreated
    ("rv", "n1", {"rv-wrong"}),  # conflict
    ("rvok", "n2", {"rv-right", "uid-right"}),  # bound at the version read
    ("ok2", "n2", {"unfenced"}),  # bound without a token
    ("bound", "n1", set()),  # already assigned
    ("stale", "n1", {"stale"}),  # stale leader
    ("big", "small", {"alloc"}),  # does not fit the node's record
    ("fit1", "n1", {"alloc"}),  # fits
    ("fit2", "n1", {"alloc"}),  # over capacity once fit1 is counted
    ("dup", "n2", set()),  # bound
    ("dup", "n1", set()),  # the same pod again: already assigned
    ("dupa", "n2", {"alloc"}),  # bound
    ("dupa", "n2", {"alloc"}),  # again, shared-state: already assigned
    ("nonode", "missing", {"alloc"}),  # no such node
    ("gated", "n1", set()),  # scheduling gates
    ("ok3", "", set()),  # no node: invalid
    ("ok3", "n2", {"bad-token"}),  # malformed token: invalid
    ("ok3", "n2", set()),  # bound
]


async def requests(c: Cluster) -> list[pb.BindRequest]:
    out = []
    for name, node_name, flags in CASES:
        req = pb.BindRequest(namespace="default", name=name, node_name=node_name)
        if flags & {"rv-right", "uid-right"}:
            current: Any = await c.api.get(PODS, "default", name)
            req.resource_version = current.metadata.resource_version
            req.uid = current.metadata.uid
        if "uid-wrong" in flags:
            req.uid = "uid-999"
        if "rv-wrong" in flags:
            req.resource_version = "1"
        if "alloc" in flags:
            req.check_allocation = True
        elif "stale" in flags:
            req.fencing.key, req.fencing.create_revision = c.token[0], c.token[1] + 1000
        elif "bad-token" in flags:
            req.fencing.key, req.fencing.create_revision = c.token[0], 0
        elif "unfenced" not in flags:
            req.fencing.key, req.fencing.create_revision = c.token
        out.append(req)
    return out


def _words(text: str) -> str:
    return re.sub(r"\d+", "#", text)


def summary(result: Any) -> tuple[str, str]:
    if isinstance(result, ApiError):
        return type(result).__name__, _words(result.message)
    return "bound", f"{result.spec.node_name} {_words(result.metadata.annotations[BOUND_BY])}"


async def stored(c: Cluster) -> dict[str, tuple[str, str]]:
    pods, _ = await c.client.list(PODS, namespace="default")
    return {
        p.metadata.name: (p.spec.node_name, _words(p.metadata.annotations.get(BOUND_BY, "")))  # type: ignore[attr-defined]
        for p in pods
    }


async def assert_checked(c: Cluster) -> None:
    verdict = await check_history(c.api.storage, start_revision=c.start, allow_unfenced=True)
    assert [v for v in verdict.violations if v.check != LOST_POD] == []
    assert verdict.counts.binds > 0


async def run(storage: Storage, batched: bool) -> tuple[list[tuple[str, str]], dict]:
    async with cluster(storage) as c:
        await scene(c)
        reqs = await requests(c)
        if batched:
            results: list[Any] = await c.client.bind_batch(reqs)
        else:
            results = []
            for r in reqs:
                try:
                    results.append(await c.client.bind_single(r))
                except ApiError as e:
                    results.append(e)
        await assert_checked(c)
        return [summary(r) for r in results], await stored(c)


async def test_a_batch_ends_each_bind_as_single_binds_in_order_do(storage: Storage) -> None:
    single, single_state = await run(storage, batched=False)
    batch, batch_state = await run(storage, batched=True)
    for case, s, b in zip(CASES, single, batch, strict=True):
        assert b == s, case
    assert batch_state == single_state
    # The table covers what it says: each refusal once at least.
    kinds = {s[0] for s in single}
    assert kinds >= {
        "bound",
        "NotFoundError",
        "PreconditionError",
        "ConflictError",
        "AllocationConflictError",
        "InvalidError",
    }
    assert any("stale leader" in s[1] for s in single)


async def test_the_client_coalesces_concurrent_binds(storage: Storage) -> None:
    async with cluster(storage) as c:
        await node(c.api, "n1", "64")
        results = await c.api.batch_create([sized(f"p{i}") for i in range(60)])
        assert all(r.error is None for r in results)
        got = await asyncio.gather(
            *(c.client.bind(f"p{i}", "n1", fencing=c.token) for i in range(60)),
            c.client.bind("ghost", "n1", fencing=c.token),
            return_exceptions=True,
        )
        assert [type(g).__name__ for g in got] == ["Pod"] * 60 + ["NotFoundError"]
        assert all(g.spec.node_name == "n1" for g in got[:60])  # type: ignore[union-attr]
        assert c.client.binds.binds == 61 and c.client.binds.calls < 61
        await assert_checked(c)


async def test_a_large_batch_goes_in_few_txns(storage: Storage) -> None:
    async with cluster(storage) as c:
        await node(c.api, "big", "64")
        for i in range(45):
            await node(c.api, f"n{i}", "1")
        pods = [sized(f"f{i}") for i in range(90)] + [sized(f"a{i}", "100m") for i in range(45)]
        pods += [sized(f"s{i}", "300m") for i in range(3)]
        assert all(r.error is None for r in await c.api.batch_create(pods))
        reqs = [
            pb.BindRequest(
                namespace="default",
                name=f"f{i}",
                node_name="big",
                fencing=pb.FencingToken(key=c.token[0], create_revision=c.token[1]),
            )
            for i in range(90)
        ]
        reqs += [
            pb.BindRequest(
                namespace="default", name=f"a{i}", node_name=f"n{i}", check_allocation=True
            )
            for i in range(45)
        ]
        # Three shared-state binds to one node: one round each, each counted by the next.
        reqs += [
            pb.BindRequest(namespace="default", name=f"s{i}", node_name="n0", check_allocation=True)
            for i in range(3)
        ]
        got = await c.client.bind_batch(reqs)
        assert all(not isinstance(g, ApiError) for g in got), [
            g for g in got if isinstance(g, ApiError)
        ]
        revisions = {g.metadata.resource_version for g in got}  # type: ignore[union-attr]
        assert len(revisions) <= 8  # 3 + 2 txns, then one per extra round on n0
        await assert_checked(c)


async def test_a_txn_that_fails_as_a_whole_falls_back_to_each_bind_alone(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with cluster(storage) as c:
        await node(c.api, "n1", "8")
        for name in ("p1", "p2", "p3"):
            await c.api.create(sized(name))
        p3: Any = await c.api.get(PODS, "default", "p3")
        calls: list[str] = []

        def hooked(real: Any) -> Any:
            async def prepare(store: Any, item: Any, *args: Any) -> Any:
                # After the round read its pods, p2 and p3 change: their compares fail.
                if not calls:
                    for name in ("p2", "p3"):
                        patch = '{"metadata":{"labels":{"x":"1"}}}'
                        await c.api.patch(PODS, "default", name, patch)
                calls.append(item.name)
                return await real(store, item, *args)

            return prepare

        # From etcd (`prepare`) or from the watch cache (`prepare_pod`).
        monkeypatch.setattr(bindbatch, "prepare", hooked(bindbatch.prepare))
        monkeypatch.setattr(bindbatch, "prepare_pod", hooked(bindbatch.prepare_pod))
        token = pb.FencingToken(key=c.token[0], create_revision=c.token[1])
        got = await c.client.bind_batch(
            [
                pb.BindRequest(namespace="default", name="p1", node_name="n1", fencing=token),
                pb.BindRequest(namespace="default", name="p2", node_name="n1", fencing=token),
                pb.BindRequest(
                    namespace="default",
                    name="p3",
                    node_name="n1",
                    fencing=token,
                    resource_version=p3.metadata.resource_version,
                ),
            ]
        )
        assert [type(g).__name__ for g in got[:2]] == ["Pod", "Pod"]
        assert isinstance(got[2], ConflictError)  # read before the change: as a single Bind
        state = await stored(c)
        assert state["p1"][0] == state["p2"][0] == "n1" and state["p3"][0] == ""
        assert calls[:3] == ["p1", "p2", "p3"]  # the batch's round, then the fallbacks
        await assert_checked(c)


async def test_a_batch_over_the_cap_is_refused_before_any_bind(storage: Storage) -> None:
    async with cluster(storage) as c:
        await node(c.api, "n1", "8")
        await c.api.create(sized("p"))
        n = MAX_BATCH_ITEMS + 1
        req = pb.BindBatchRequest(
            binds=[pb.BindRequest(namespace="default", name="p", node_name="n1")] * n
        )
        async with grpc.aio.insecure_channel(c.address) as ch:
            with pytest.raises(grpc.aio.AioRpcError) as err:
                await pb_grpc.ApiServerStub(ch).BindBatch(req)
        assert err.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert f"{n} binds sent, at most {MAX_BATCH_ITEMS} per call" in (err.value.details() or "")
        assert (await stored(c))["p"][0] == ""


async def test_a_chunk_whose_txn_breaks_fails_its_own_binds_only(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with cluster(storage) as c:
        await node(c.api, "n1", "8")
        for name in ("f1", "f2", "u1", "u2"):
            await c.api.create(sized(name))
        real = c.api.store.txn

        async def txn(compares: Any, success: Any, *args: Any, **kw: Any) -> Any:
            if any(op.key.endswith("/f1") for op in success):
                raise StorageUnavailableError("etcd: connection reset")
            return await real(compares, success, *args, **kw)

        monkeypatch.setattr(c.api.store, "txn", txn)
        token = pb.FencingToken(key=c.token[0], create_revision=c.token[1])
        # Fenced and unfenced binds go in separate txns: only the fenced one breaks.
        got = await c.client.bind_batch(
            [
                pb.BindRequest(namespace="default", name="f1", node_name="n1", fencing=token),
                pb.BindRequest(namespace="default", name="u1", node_name="n1"),
                pb.BindRequest(namespace="default", name="f2", node_name="n1", fencing=token),
                pb.BindRequest(namespace="default", name="u2", node_name="n1"),
            ]
        )
        assert [type(g).__name__ for g in got] == [
            "UnavailableError",
            "Pod",
            "UnavailableError",
            "Pod",
        ]
        assert "storage unavailable: etcd: connection reset" in got[0].message  # type: ignore[union-attr]
        state = await stored(c)
        assert [state[n][0] for n in ("f1", "u1", "f2", "u2")] == ["", "n1", "", "n1"]


async def test_a_chunk_with_one_stale_pod_gives_every_other_pod_its_single_bind(
    storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One stale pod fails its whole chunk's txn: the chunk's items fall back to single
    binds, all at once (they are distinct pods), and each ends as its single Bind does."""
    n = bindbatch.TXN_BINDS
    async with cluster(storage) as c:
        await node(c.api, "n1", "64")
        names = [f"p{i}" for i in range(n)]
        assert all(r.error is None for r in await c.api.batch_create([sized(x) for x in names]))
        p7: Any = await c.api.get(PODS, "default", "p7")
        token = pb.FencingToken(key=c.token[0], create_revision=c.token[1])
        reqs = [
            pb.BindRequest(namespace="default", name=x, node_name="n1", fencing=token)
            for x in names
        ]
        reqs[7].resource_version = p7.metadata.resource_version
        changed: list[str] = []

        def hooked(real: Any) -> Any:
            async def prepare(store: Any, item: Any, *args: Any) -> Any:
                if not changed:  # after the round read its pods, p7 changes
                    changed.append("p7")
                    await c.api.patch(PODS, "default", "p7", '{"metadata":{"labels":{"x":"1"}}}')
                return await real(store, item, *args)

            return prepare

        real_bind_one = bindbatch.bind_one
        entered: list[str] = []
        waited_out: list[str] = []
        all_in = asyncio.Event()

        async def bind_one(store: Any, item: Any) -> Any:
            # A barrier: the fallbacks pass it only when all of them are in flight at once.
            entered.append(item.name)
            if len(entered) == n:
                all_in.set()
            try:
                await asyncio.wait_for(all_in.wait(), 10)
            except TimeoutError:  # one after another: let the rest through, and fail below
                waited_out.append(item.name)
                all_in.set()
            return await real_bind_one(store, item)

        monkeypatch.setattr(bindbatch, "prepare", hooked(bindbatch.prepare))
        monkeypatch.setattr(bindbatch, "prepare_pod", hooked(bindbatch.prepare_pod))
        monkeypatch.setattr(bindbatch, "bind_one", bind_one)
        got = await c.client.bind_batch(reqs)
        assert sorted(entered) == sorted(names)  # one chunk, every item fell back
        assert waited_out == []
        # The same binds sent alone: a fresh pod, and p7 at the version read.
        await c.api.create(sized("ref"))
        ref = await c.client.bind_single(
            pb.BindRequest(namespace="default", name="ref", node_name="n1", fencing=token)
        )
        with pytest.raises(ConflictError) as alone:
            await c.client.bind_single(reqs[7])
        want = [summary(ref)] * n
        want[7] = summary(alone.value)
        assert [summary(g) for g in got] == want
        state = await stored(c)
        assert [state[x][0] for x in names] == ["n1"] * 7 + [""] + ["n1"] * (n - 8)
        await assert_checked(c)
