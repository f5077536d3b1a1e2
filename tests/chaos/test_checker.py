"""`kubera check`: the checker replays etcd's history of a run and proves it safe.

Runs are made with a real ApiServer (fenced binds, status updates, graceful deletion) on
the in-memory fake and on real etcd; violations are forged with raw etcd txns, the way a
buggy or deposed component would write them. The session etcd is shared, so each test
replays only from the revision it started at.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from kubera.cli import main as cli
from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import core_pb2
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.fencing import BOUND_BY, Fencing, bound_by_allocation, bound_by_fenced
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.chaos import checker as ck
from services.chaos.checker import Checker
from services.chaos.history import (
    HistoryCompactedError,
    check_history,
    read_history,
    wait_settled,
)
from services.chaos.verdict import Verdict
from services.clock import FakeClock
from services.leaderelection.lock import LockRecord, StorageLock
from services.storage import Event, KeyValue, Put, Storage
from services.storage.etcd import EtcdStorage
from tests.builders import PAUSE_IMAGE, MakeNode, MakePod

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
ELECTION = "/kubera/leaderelection/kube-system/kube-scheduler"


# ------------------------------------------------------------------ helpers


def node(name: str, **allocatable: str) -> core_pb2.Node:
    alloc = {"cpu": "2", "memory": "4Gi", "pods": "110", **allocatable}
    return MakeNode().typed().name(name).allocatable(alloc).capacity(alloc).obj()


def pod(
    name: str,
    *,
    cpu: str = "500m",
    memory: str = "",
    extra: dict[str, str] | None = None,
    node_name: str = "",
    finalizers: list[str] | None = None,
) -> core_pb2.Pod:
    requests = {"cpu": cpu, **({"memory": memory} if memory else {}), **(extra or {})}
    # extended resources cannot be overcommitted by a pod's own limits: limit = request
    limits = {k: v for k, v in requests.items() if "/" in k}
    p = MakePod().typed().name(name).namespace("default").finalizers(finalizers or [])
    p.container("c", PAUSE_IMAGE, requests=requests, limits=limits or None)
    if node_name:
        p.node(node_name)
    return p.obj()


class Run:
    """A run under test: an ApiServer over the storage and the revision it started at."""

    def __init__(self, storage: Storage, api: ApiServer, start: int) -> None:
        self.storage, self.api, self.start = storage, api, start
        self.lock = StorageLock(storage, ELECTION, lease_duration=30)

    async def elect(self, identity: str) -> tuple[LockRecord, Fencing]:
        rec, _ = await self.lock.create(identity)
        assert rec is not None, "the election key is held"
        return rec, Fencing(ELECTION, rec.create_revision)

    async def get(self, name: str) -> core_pb2.Pod:
        return await self.api.get(PODS, "default", name)  # type: ignore[return-value]

    async def raw_put(self, p: core_pb2.Pod, *extra: Put) -> int:
        """Write a pod straight to etcd (no apiserver rules), with other puts in the txn."""
        p.metadata.ClearField("resource_version")
        key = PODS.key(p.metadata.namespace, p.metadata.name)
        res = await self.storage.txn([], [Put(key, p.SerializeToString()), *extra])
        return res.revision

    async def set_status(self, name: str, *, phase: str = "", unschedulable: str = "") -> None:
        p = await self.get(name)
        if phase:
            p.status.phase = phase
        if unschedulable:
            update_pod_condition(p.status, "PodScheduled", "False", 0, reason=unschedulable)
        await self.api.update_status(p)

    async def verdict(self, **kw: Any) -> Verdict:
        return await check_history(self.storage, start_revision=self.start, **kw)


@pytest.fixture
async def run(storage: Storage) -> AsyncIterator[Run]:
    start = await storage.revision() + 1  # the session etcd has other tests' history
    api = ApiServer(storage, ApiServerConfig(watch_cache_capacity=50, bookmark_interval=0.2))
    await api.start()
    try:
        yield Run(storage, api, start)
    finally:
        await api.stop()


def only(v: Verdict, check: str) -> ck.Violation:
    assert [x.check for x in v.violations] == [check], v.lines()
    assert not v.ok
    return v.violations[0]


# ------------------------------------------------------------- a clean run


async def test_clean_run_with_a_leader_change_passes_with_its_counts(run: Run) -> None:
    api = run.api
    rec_a, token_a = await run.elect("sched-a")
    await api.create(node("n1"))
    await api.create(node("n2"))
    for name in ("a", "b", "c", "d"):
        await api.create(pod(name))
    await api.create(pod("static", node_name="n1"))  # created bound: not a bind
    await api.bind("default", "a", "n1", fencing=token_a)
    await api.bind("default", "b", "n2", fencing=token_a)
    await run.set_status("a", phase="Running")
    await run.set_status("c", unschedulable="Unschedulable")
    # the leader steps down; another replica wins a new term and binds under it
    assert await run.lock.release(rec_a)
    _, token_b = await run.elect("sched-b")
    await api.bind("default", "d", "n2", fencing=token_b)
    await api.delete(PODS, "default", "b", grace_period_seconds=0)
    await api.delete(PODS, "default", "a")  # graceful: still counts, not lost

    v = await run.verdict()

    assert v.ok, v.lines()
    c = v.counts
    assert (c.pods_created, c.pods_deleted, c.pods_at_end, c.pods_bound_at_end) == (5, 1, 4, 3)
    assert (c.binds, c.binds_fenced, c.binds_allocation, c.binds_unfenced) == (3, 3, 0, 0)
    assert c.nodes == 2
    assert c.leader_terms == {ELECTION: 2}
    assert c.binds_by_holder == {"sched-a": 2, "sched-b": 1}
    assert c.first_revision >= run.start and c.last_revision == await run.storage.revision()
    assert c.events >= c.revisions > 10
    assert v.lines()[-1].startswith("OK: 3 binds of 5 pods")


# -------------------------------------------------------------- violations


async def test_a_pod_moved_to_another_node_is_a_double_bind(run: Run) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("n1"))
    await run.api.create(node("n2"))
    p = await run.api.create(pod("p"))
    first = await run.api.bind("default", "p", "n1", fencing=token)
    bind_rev = int(first.metadata.resource_version)
    first.spec.node_name = "n2"
    rev = await run.raw_put(first)

    bad = only(await run.verdict(), ck.DOUBLE_BIND)

    assert bad.pods == (ck.PodRef("default", "p", p.metadata.uid),)
    assert bad.node == "n2" and bad.revision == rev
    assert bad.revisions == (bind_rev, rev)
    assert "bound to node n1" in bad.message and "bound again to node n2" in bad.message


async def test_unbinding_and_binding_again_is_a_double_bind(run: Run) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("n1"))
    await run.api.create(pod("p"))
    bound = await run.api.bind("default", "p", "n1", fencing=token)
    bound.spec.node_name = ""
    await run.raw_put(bound)
    bound.spec.node_name = "n1"
    rev = await run.raw_put(bound)

    bad = only(await run.verdict(), ck.DOUBLE_BIND)
    assert bad.revision == rev and "after being unbound" in bad.message


@pytest.mark.parametrize(
    ("allocatable", "requests", "resource", "shown"),
    [
        ({"cpu": "1"}, {"cpu": "600m"}, "cpu", "cpu requested 1200m > allocatable 1000m"),
        (
            {"memory": "1Gi"},
            {"cpu": "0", "memory": "600Mi"},
            "memory",
            f"memory requested {1200 * 2**20} > allocatable {2**30}",
        ),
        ({"pods": "1"}, {"cpu": "0"}, "pods", "pods requested 2 > allocatable 1"),
        (
            {"example.com/gpu": "1"},
            {"cpu": "0", "example.com/gpu": "1"},
            "example.com/gpu",
            "example.com/gpu requested 2 > allocatable 1",
        ),
        (
            {"ephemeral-storage": "1Gi"},
            {"cpu": "0", "ephemeral-storage": "600Mi"},
            "ephemeral-storage",
            "ephemeral-storage requested",
        ),
    ],
)
async def test_requests_beyond_allocatable_are_an_overcommit(
    run: Run, allocatable: dict[str, str], requests: dict[str, str], resource: str, shown: str
) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("small", **allocatable))
    requests = dict(requests)
    cpu = requests.pop("cpu")
    memory = requests.pop("memory", "")
    for name in ("p1", "p2"):
        await run.api.create(pod(name, cpu=cpu, memory=memory, extra=requests))
    await run.api.bind("default", "p1", "small", fencing=token)
    second = await run.api.bind("default", "p2", "small", fencing=token)

    bad = only(await run.verdict(), ck.OVERCOMMIT)

    assert bad.node == "small" and bad.revision == int(second.metadata.resource_version)
    assert bad.pods == (ck.PodRef("default", "p2", second.metadata.uid),)
    assert shown in bad.message and resource in bad.message


async def test_an_overcommitted_node_is_reported_once_until_it_recovers(run: Run) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("small", cpu="1"))
    for name in ("p1", "p2", "p3"):
        await run.api.create(pod(name, cpu="600m"))
        await run.api.bind("default", name, "small", fencing=token)
    v = await run.verdict()
    assert v.violation_counts[ck.OVERCOMMIT] == 1, v.lines()


@pytest.mark.parametrize("finish", ["Succeeded", "Failed", "deleted"])
async def test_a_finished_or_deleted_pod_frees_its_requests(run: Run, finish: str) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("small", cpu="1"))
    await run.api.create(pod("old", cpu="600m"))
    await run.api.bind("default", "old", "small", fencing=token)
    if finish == "deleted":
        await run.api.delete(PODS, "default", "old", grace_period_seconds=0)
    else:
        await run.set_status("old", phase=finish)
    await run.api.create(pod("new", cpu="600m"))
    await run.api.bind("default", "new", "small", fencing=token)

    v = await run.verdict()
    assert v.ok, v.lines()


async def test_pods_bound_to_a_node_that_does_not_exist_are_not_an_overcommit(run: Run) -> None:
    _, token = await run.elect("sched-a")
    for name in ("p1", "p2"):
        await run.api.create(pod(name, cpu="2"))
        await run.api.bind("default", name, "ghost", fencing=token)
    v = await run.verdict()
    assert v.ok, v.lines()


async def test_a_bind_under_a_superseded_term_is_a_stale_leader_bind(run: Run) -> None:
    rec_a, token_a = await run.elect("sched-a")
    await run.api.create(node("n1"))
    p = await run.api.create(pod("p"))
    await run.lock.release(rec_a)
    _, token_b = await run.elect("sched-b")
    # sched-a, paused through its term's end, wakes up and writes the bind itself
    p.spec.node_name = "n1"
    p.metadata.annotations[BOUND_BY] = bound_by_fenced(token_a)
    rev = await run.raw_put(p)

    bad = only(await run.verdict(), ck.STALE_LEADER_BIND)

    assert bad.pods == (ck.PodRef("default", "p", p.metadata.uid),)
    assert bad.node == "n1" and bad.revision == rev
    assert f"{ELECTION}@{token_a.create_revision}" in bad.message
    assert "the term of sched-a" in bad.message
    assert f"held by sched-b since revision {token_b.create_revision}" in bad.message


async def test_a_fenced_bind_while_nobody_leads_is_a_stale_leader_bind(run: Run) -> None:
    rec, token = await run.elect("sched-a")
    await run.api.create(pod("p"))
    await run.lock.release(rec)
    p = await run.get("p")
    p.spec.node_name = "n1"
    p.metadata.annotations[BOUND_BY] = bound_by_fenced(token)
    await run.raw_put(p)

    bad = only(await run.verdict(), ck.STALE_LEADER_BIND)
    assert "nobody held the election key" in bad.message


async def test_an_unfenced_bind_is_a_violation_unless_allowed(run: Run) -> None:
    await run.api.create(node("n1"))
    p = await run.api.create(pod("p"))
    bound = await run.api.bind("default", "p", "n1")

    bad = only(await run.verdict(), ck.UNFENCED_BIND)
    assert bad.pods == (ck.PodRef("default", "p", p.metadata.uid),)
    assert bad.revision == int(bound.metadata.resource_version) and bad.node == "n1"

    allowed = await run.verdict(allow_unfenced=True)
    assert allowed.ok, allowed.lines()
    assert allowed.counts.binds_unfenced == 1
    assert "unfenced binds allowed" in allowed.lines()[-1]


@pytest.mark.parametrize("with_allocation", [True, False])
async def test_an_allocation_bind_needs_its_allocation_key_in_the_same_revision(
    run: Run, with_allocation: bool
) -> None:
    await run.api.create(node("n1"))
    p = await run.api.create(pod("p"))
    key = "/kubera/allocations/n1"
    p.spec.node_name = "n1"
    p.metadata.annotations[BOUND_BY] = bound_by_allocation(key)
    extra = (Put(key, b"{}"),) if with_allocation else ()
    if not with_allocation:
        await run.storage.txn([], [Put(key, b"{}")])  # written, but not by the bind's txn
    rev = await run.raw_put(p, *extra)

    v = await run.verdict()

    assert v.counts.binds_allocation == 1
    if with_allocation:
        assert v.ok, v.lines()
    else:
        bad = only(v, ck.ALLOCATION_BIND)
        assert bad.revision == rev and bad.node == "n1" and key in bad.message


async def test_a_bound_by_change_on_a_bound_pod_is_ignored(run: Run) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("n1"))
    await run.api.create(pod("p"))
    bound = await run.api.bind("default", "p", "n1", fencing=token)
    bound.metadata.annotations[BOUND_BY] = "fenced /somewhere/else@1"
    await run.raw_put(bound)
    v = await run.verdict()
    assert v.ok, v.lines()
    assert v.counts.binds == 1


@pytest.mark.parametrize(
    ("reason", "deleting", "lost"),
    [
        ("", False, True),
        ("Unschedulable", False, False),
        ("SchedulingGated", False, False),
        ("", True, False),  # held by a finalizer while being deleted
    ],
)
async def test_an_unbound_pod_without_a_reason_is_lost(
    run: Run, reason: str, deleting: bool, lost: bool
) -> None:
    p = await run.api.create(pod("p", finalizers=["example.com/hold"] if deleting else None))
    if reason:
        await run.set_status("p", unschedulable=reason)
    if deleting:
        await run.api.delete(PODS, "default", "p")
    last = (await run.get("p")).metadata.resource_version

    v = await run.verdict()

    if not lost:
        assert v.ok, v.lines()
        return
    bad = only(v, ck.LOST_POD)
    assert bad.pods == (ck.PodRef("default", "p", p.metadata.uid),)
    assert bad.revision == int(last)


async def test_a_pod_recreated_under_the_same_name_is_a_new_pod(run: Run) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("n1"))
    await run.api.create(node("n2"))
    await run.api.create(pod("p"))
    await run.api.bind("default", "p", "n1", fencing=token)
    await run.api.delete(PODS, "default", "p", grace_period_seconds=0)
    await run.api.create(pod("p"))
    await run.api.bind("default", "p", "n2", fencing=token)
    # and replaced in place by a raw write with yet another UID
    third = await run.get("p")
    third.metadata.uid = "another-uid"
    third.spec.node_name = "n1"
    await run.raw_put(third)

    v = await run.verdict()

    assert v.ok, v.lines()
    assert (v.counts.pods_created, v.counts.binds) == (3, 2)


# ----------------------------------------------------------------- history


async def test_the_replay_stops_at_the_revision_current_when_it_started(storage: Storage) -> None:
    start = await storage.revision() + 1
    first = await storage.txn([], [Put("/t/a", b"1"), Put("/t/b", b"1")])
    end = await storage.revision()
    await storage.txn([], [Put("/t/c", b"1")])

    got = [
        (rev, [e.kv.key for e in events])
        async for rev, events in read_history(storage, start_revision=start, end_revision=end)
    ]

    assert got == [(first.revision, ["/t/a", "/t/b"])]


@pytest.mark.parametrize(("window", "parallel"), [(1, 1), (2, 3), (1000, 32)])
async def test_the_replay_reads_windows_in_order_and_keeps_each_txn_whole(
    storage: Storage, window: int, parallel: int
) -> None:
    start = await storage.revision() + 1
    want = []
    for i in range(7):
        keys = [f"/t/{i}/{j}" for j in range(i % 3 + 1)]
        res = await storage.txn([], [Put(k, b"v") for k in keys])
        want.append((res.revision, keys))

    got = [
        (rev, [e.kv.key for e in events])
        async for rev, events in read_history(
            storage, start_revision=start, window=window, parallel=parallel
        )
    ]

    assert got == want


async def test_a_compacted_history_cannot_be_checked(storage: Storage) -> None:
    start = await storage.revision() + 1
    await storage.txn([], [Put("/t/a", b"1")])
    res = await storage.txn([], [Put("/t/a", b"2")])
    await storage.compact(res.revision)
    with pytest.raises(HistoryCompactedError, match="uncompacted history"):
        await check_history(storage, start_revision=start)


async def test_settling_waits_for_pending_pods_up_to_the_timeout(run: Run) -> None:
    await run.api.create(pod("p"))
    clock = FakeClock()
    pending = await wait_settled(run.storage, 5.0, clock=clock)
    assert [p.name for p in pending] == ["p"] and clock.monotonic() == 5.0
    await run.set_status("p", unschedulable="Unschedulable")
    assert await wait_settled(run.storage, 5.0, clock=clock) == []


def test_history_must_be_fed_in_revision_order() -> None:
    c = Checker()
    kv = KeyValue("/t/x", b"", 3, 3, 1)
    c.apply(3, [Event("PUT", kv, None)])
    with pytest.raises(ValueError, match="increasing revision order"):
        c.apply(3, [Event("PUT", kv, None)])


# ------------------------------------------------------------ corrupt values

#: Bytes that do not decode as any kubera object: field 1, length-delimited, a length
#: far past the end.
GARBAGE = b"\x0a\xff\xff\xff\xff\x0f"


@pytest.mark.parametrize("kind", [PODS, NODES], ids=["pod", "node"])
async def test_a_value_that_does_not_decode_is_a_corrupt_object_finding_not_a_crash(
    run: Run, kind: Any
) -> None:
    _, token = await run.elect("sched-a")
    await run.api.create(node("n1"))
    await run.api.create(pod("p"))
    key = kind.key("default" if kind is PODS else "", "p" if kind is PODS else "n1")
    res = await run.storage.txn([], [Put(key, GARBAGE)])
    # the replay goes on past it: a later bind of another pod is still judged
    await run.api.create(pod("q"))
    await run.api.bind("default", "q", "n1", fencing=token)

    v = await run.verdict(allow_unfenced=True)

    bad = [x for x in v.violations if x.check == ck.CORRUPT_OBJECT]
    assert len(bad) == 1, v.lines()
    assert bad[0].key == key and bad[0].revision == res.revision
    assert f"key {key} was written at revision {res.revision}" in bad[0].message
    assert not v.ok and v.violation_counts[ck.CORRUPT_OBJECT] == 1
    assert v.counts.binds == 1
    assert v.to_dict()["violations"][0]["key"] == key


async def test_settling_skips_a_corrupt_pod(run: Run) -> None:
    await run.api.create(pod("p"))
    await run.storage.txn([], [Put(PODS.key("default", "bad"), GARBAGE)])

    pending = await wait_settled(run.storage, 0)

    assert [p.name for p in pending] == ["p"]


# --------------------------------------------------------------------- CLI


@pytest.fixture
def own_etcd(tmp_path: Path) -> Iterator[EtcdProcess]:
    """An etcd of the test's own: the CLI replays from revision 1."""
    proc = EtcdProcess(tmp_path / "etcd", log_path=tmp_path / "etcd.log").start()
    try:
        yield proc
    finally:
        proc.stop()


async def _a_run(endpoint: str, *, unfenced: bool) -> None:
    storage = EtcdStorage(endpoint)
    api = ApiServer(storage)
    await api.start()
    try:
        rec, _ = await StorageLock(storage, ELECTION, lease_duration=30).create("sched-a")
        assert rec is not None
        await api.create(node("n1"))
        await api.create(pod("p"))
        fencing = None if unfenced else Fencing(ELECTION, rec.create_revision)
        await api.bind("default", "p", "n1", fencing=fencing)
    finally:
        await api.stop()
        await storage.close()


def test_cli_check_passes_a_clean_run(
    own_etcd: EtcdProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_a_run(own_etcd.endpoint, unfenced=False))

    assert cli.main(["check", "--etcd", own_etcd.endpoint, "--settle", "0s"]) == 0
    out = capsys.readouterr().out
    assert "binds: 1 (1 fenced, 0 allocation, 0 unfenced)" in out
    assert f"leader terms: {ELECTION}: 1" in out
    assert out.splitlines()[-1].startswith("OK: 1 binds of 1 pods")

    assert cli.main(["check", "--etcd", own_etcd.endpoint, "--settle", "0s", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["violations"] == []
    assert doc["counts"]["binds_fenced"] == 1 and doc["counts"]["first_revision"] == 2


def test_cli_check_fails_an_unsafe_run_with_exit_code_1(
    own_etcd: EtcdProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_a_run(own_etcd.endpoint, unfenced=True))

    assert cli.main(["check", "--etcd", own_etcd.endpoint, "--settle", "0s"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("[unfenced-bind] revision ") for line in lines)
    assert lines[-1] == "FAILED: 1 violations (1 unfenced-bind)"

    args = ["check", "--etcd", own_etcd.endpoint, "--settle", "0s", "--allow-unfenced"]
    assert cli.main(args) == 0


def test_cli_check_reports_a_corrupt_revision_instead_of_crashing(
    own_etcd: EtcdProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(_a_run(own_etcd.endpoint, unfenced=False))

    async def corrupt() -> int:
        storage = EtcdStorage(own_etcd.endpoint)
        try:
            return (await storage.txn([], [Put(PODS.key("default", "p"), GARBAGE)])).revision
        finally:
            await storage.close()

    rev = asyncio.run(corrupt())

    assert cli.main(["check", "--etcd", own_etcd.endpoint, "--settle", "0s"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert f"[corrupt-object] revision {rev}: corrupt object: key /registry/pods/default/p" in (
        "\n".join(lines)
    )
    assert lines[-1] == "FAILED: 1 violations (1 corrupt-object)"


def test_cli_check_refuses_a_compacted_history(
    own_etcd: EtcdProcess, capsys: pytest.CaptureFixture[str]
) -> None:
    async def compact() -> None:
        storage = EtcdStorage(own_etcd.endpoint)
        await storage.txn([], [Put("/t/a", b"1")])
        await storage.compact((await storage.txn([], [Put("/t/a", b"2")])).revision)
        await storage.close()

    asyncio.run(compact())
    assert cli.main(["check", "--etcd", own_etcd.endpoint, "--settle", "0s"]) == 1
    assert "needs the run's uncompacted history" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (["check", "--settle", "soon", "--etcd", "127.0.0.1:1"], "--settle: invalid duration"),
        (["check", "--settle=-1s", "--etcd", "127.0.0.1:1"], "must not be negative"),
        (["check", "--etcd", "nowhere"], "expected host:port"),
        (["check"], "run `kubera up` first"),
    ],
)
def test_cli_check_usage_errors(
    argv: list[str],
    error: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("KUBERA_HOME", str(tmp_path))  # no cluster here
    assert cli.main(argv) == 1
    assert error in capsys.readouterr().err
