"""Replicated control-plane components on real etcd, without Ray: two SchedulerReplicas and
two ControllerManagerReplicas against one apiserver (EtcdStorage, served over gRPC in this
process), each replica dialling etcd and the apiserver through its own partition relays.

What must hold, whatever the timing: one replica leads and the Lease names it; the
standby is warm and writes nothing; a partitioned leader is replaced within about a lease;
and no write made under a term's token lands after the next term began (the apiserver
records every fenced txn it commits, and the pods' bound-by annotations say the same).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import pytest

from kubera.launch.etcd import EtcdProcess
from services.api.helpers.fencing import BOUND_BY, Fencing, parse_bound_by
from services.api.machinery import codec
from services.api.machinery.errors import NotFoundError, PreconditionError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver import fencing as fencing_mod
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.client import Client
from services.hosts.controllermanager import (
    ControllerManagerReplica,
    ControllerManagerReplicaConfig,
)
from services.hosts.replica import Replica, election_key
from services.hosts.scheduler import SchedulerReplica, SchedulerReplicaConfig
from services.leaderelection import LeaderElectionSettings, LeaseTimings, TimingOverrides
from services.storage import Delete, Get
from services.storage.etcd import EtcdStorage
from tests.leaderelection.harness import ApiCluster, new_pod
from tests.waiting import eventually

pytestmark = pytest.mark.integration

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
LEASES, RS, DEPLOYMENTS = BY_KIND["Lease"], BY_KIND["ReplicaSet"], BY_KIND["Deployment"]
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 2.0, 1.5, 0.5
PARTITION = 3.0
#: A partitioned leader is replaced once its key has been silent for a lease (plus the
#: standby's round trips); the partition itself heals later.
TAKEOVER = LEASE_DURATION + 2.0


@dataclass(frozen=True)
class FencedWrite:
    token: Fencing
    revision: int
    keys: tuple[str, ...]


class RecordingApiServer(ApiServer):
    """The apiserver, keeping every fenced txn it committed and every one it refused."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.committed: list[FencedWrite] = []
        self.refused: list[Fencing] = []
        self.store_txn = self.store.txn
        self.store.txn = self.txn  # type: ignore[method-assign]

    async def txn(self, compares, success, failure=(), *, fencing=None, what=""):  # type: ignore[no-untyped-def]
        token = fencing or fencing_mod.CURRENT.get()
        writes = tuple(op.key for op in success if not isinstance(op, Get))
        try:
            res = await self.store_txn(compares, success, failure, fencing=fencing, what=what)
        except PreconditionError as e:
            if token is not None and "stale leader" in str(e):
                self.refused.append(token)
            raise
        if token is not None and writes and res.succeeded:
            self.committed.append(FencedWrite(token, res.revision, writes))
        return res


@dataclass
class Cluster(ApiCluster):
    api: RecordingApiServer

    async def lease_names(self, name: str, host: Host) -> bool:
        """Whether the Lease kube-system/<name> names `host` as its holder."""
        try:
            lease = await self.api.get(LEASES, "kube-system", name)
        except NotFoundError:
            return False
        return lease.spec.holder_identity == replica(host).identity  # type: ignore[attr-defined,no-any-return]

    async def term_began(self, key: str) -> int:
        kv = await self.api.storage.get(key)
        assert kv is not None, f"nobody holds {key}"
        return kv.create_revision

    def check_fencing(self, old: tuple[str, int], new_term_began: int) -> None:
        """No write under the old token was committed at or after the new term's start."""
        late = [
            w
            for w in self.api.committed
            if w.token.create_revision == old[1] and w.revision >= new_term_began
        ]
        assert late == [], f"writes of the deposed leader after the new term began: {late}"


@pytest.fixture
async def cluster(etcd_server: EtcdProcess) -> AsyncIterator[Cluster]:
    storage = EtcdStorage(etcd_server.endpoint)
    await storage.connect()
    items, _ = await storage.list("/")
    for kv in items:
        await storage.txn([], [Delete(kv.key)])
    api = RecordingApiServer(
        storage, ApiServerConfig(watch_cache_capacity=200, bookmark_interval=0.2)
    )
    await api.start()
    server, port = await serve(api)
    try:
        yield Cluster(api, f"127.0.0.1:{port}", etcd_server.endpoint)
    finally:
        await server.stop(0.5)
        await api.stop()
        await storage.close()


class Host(Protocol):
    replica: Replica | None

    @property
    def leading(self) -> bool: ...

    async def start(self) -> str: ...

    async def stop(self) -> None: ...


class Hosts:
    """Started hosts, each stopped once (in the test, or at the end of it)."""

    def __init__(self, hosts: Sequence[Host]) -> None:
        self.all = list(hosts)
        self._running: list[Host] = []

    async def start(self) -> None:
        for h in self.all:
            self._running.append(h)
            await h.start()

    async def stop(self, host: Host) -> None:
        if host in self._running:
            self._running.remove(host)
            await host.stop()

    async def stop_all(self) -> None:
        for h in list(self._running):
            with contextlib.suppress(Exception):
                await self.stop(h)

    def leader(self) -> Host | None:
        leading = [h for h in self.all if h.leading]
        return leading[0] if len(leading) == 1 else None

    def other(self, host: Host) -> Host:
        return next(h for h in self.all if h is not host)


def replica(host: Host) -> Replica:
    assert host.replica is not None
    return host.replica


def token(host: Host) -> tuple[str, int]:
    t = replica(host).fencing_token()
    assert t is not None, "not leading"
    return t


async def late_write(host: Host, write: Callable[[Client], Awaitable[object]]) -> object:
    """A write through the host's own fenced writer, made while it still leads."""
    assert host.leading
    writer = replica(host).writer
    assert writer is not None
    return await write(writer)


def partition(host: Host) -> None:
    for relay in replica(host).relays:
        relay.partition(PARTITION)


async def test_scheduler_replicas_one_leads_and_a_partitioned_leader_is_replaced(
    cluster: Cluster,
) -> None:
    config = SchedulerReplicaConfig(
        apiserver=cluster.address,
        etcd=cluster.etcd,
        election=TimingOverrides(
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        ),
    )
    hosts = Hosts([SchedulerReplica(config), SchedulerReplica(config)])
    key = election_key("kube-system", "kube-scheduler")
    loop = asyncio.get_running_loop()
    late: asyncio.Task[object] | None = None
    try:
        await hosts.start()
        first: Any = await eventually(hosts.leader, timeout=5)
        standby: Any = hosts.other(first)
        first_token = token(first)
        assert first_token == (key, await cluster.term_began(key))
        assert standby.replica.fencing_token() is None
        await eventually(lambda: cluster.lease_names("kube-scheduler", first), timeout=5)

        # The standby is warm: its informers and cache see what the leader sees.
        await cluster.node("n1")
        await eventually(
            lambda: all("n1" in h.scheduler.cache.node_names() for h in (first, standby))
        )
        await cluster.pods("a0", "a1", "a2")
        await eventually(lambda: cluster.bound("a0", "a1", "a2"))
        for name in ("a0", "a1", "a2"):
            p = await cluster.pod(name)
            assert p.metadata.annotations[BOUND_BY] == f"fenced {key}@{first_token[1]}"
        await eventually(
            lambda: {"default/a0", "default/a1", "default/a2"} <= set(standby.scheduler.pods.store)
        )
        assert standby.scheduler.scheduled == 0 and first.scheduler.scheduled == 3
        assert all(w.token.create_revision == first_token[1] for w in cluster.api.committed)

        # Cut the leader off: the standby takes over once the key has been silent a lease.
        # A bind the leader sends now, under its still-current token, is held in flight
        # (of a pod no scheduler here serves, so the successor leaves it alone).
        await cluster.api.create(new_pod("late", scheduler="elsewhere"))
        partition(first)
        late = asyncio.create_task(late_write(first, lambda w: w.bind("late", "n1", "default")))
        await eventually(lambda: standby.leading, timeout=TAKEOVER)
        assert not first.leading, "the deposed leader stepped down before the takeover"
        second_token = token(standby)
        second_began = await cluster.term_began(key)
        assert second_token == (key, second_began) and second_began > first_token[1]
        await cluster.pods("b0", "b1", "b2")
        await eventually(lambda: cluster.bound("b0", "b1", "b2"))
        for name in ("b0", "b1", "b2"):
            p = await cluster.pod(name)
            assert parse_bound_by(p.metadata.annotations[BOUND_BY]) == ("fenced", key, second_began)
            assert int(p.metadata.resource_version) > second_began

        # After the heal the old leader stands by; nothing of its term landed late: the
        # bind it sent in its term arrives now and is refused.
        await eventually(lambda: not any(r.partitioned for r in replica(first).relays), timeout=5)
        with pytest.raises(PreconditionError, match="stale leader"):
            await asyncio.wait_for(late, 10)
        assert Fencing(*first_token) in cluster.api.refused
        late_pod = await cluster.pod("late")
        assert late_pod.spec.node_name == "" and BOUND_BY not in late_pod.metadata.annotations
        await eventually(
            lambda: replica(first).elector.leader_identity == replica(standby).identity,  # type: ignore[union-attr]
            timeout=5,
        )
        assert not first.leading and standby.leading
        await eventually(lambda: cluster.lease_names("kube-scheduler", standby), timeout=5)
        pods, _ = await cluster.api.list(PODS, "default")
        for p in pods:
            if not p.spec.node_name:  # type: ignore[attr-defined]
                continue
            mode, _, rev = parse_bound_by(p.metadata.annotations[BOUND_BY])  # type: ignore[attr-defined]
            assert mode == "fenced"
            if rev == first_token[1]:
                assert int(p.metadata.resource_version) < second_began  # type: ignore[attr-defined]
        cluster.check_fencing(first_token, second_began)

        # A clean stop releases the key: the old leader (warm again) takes it at once,
        # well before the released key could have expired.
        began = loop.time()
        stopping = asyncio.create_task(hosts.stop(standby))
        await eventually(lambda: first.leading, timeout=LEASE_DURATION)
        assert loop.time() - began < 1.5
        await stopping
        third_began = await cluster.term_began(key)
        assert token(first) == (key, third_began)
        await cluster.pods("c0")
        await eventually(lambda: cluster.bound("c0"))
        c0 = await cluster.pod("c0")
        assert parse_bound_by(c0.metadata.annotations[BOUND_BY]) == ("fenced", key, third_began)
        cluster.check_fencing(second_token, third_began)
    finally:
        if late is not None:
            late.cancel()
        await hosts.stop_all()


async def _deployment(cluster: Cluster, name: str, replicas: int) -> None:
    labels = {"app": name}
    doc = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "image": "app:v1"}]},
            },
        },
    }
    await cluster.api.create(codec.decode(doc, validate="strict").obj)


async def _pod_keys(cluster: Cluster, app: str) -> set[str]:
    pods, _ = await cluster.api.list(
        PODS, "default", options=ListOptions(label_selector=f"app={app}")
    )
    return {PODS.key("default", p.metadata.name) for p in pods}  # type: ignore[attr-defined]


def _written_by_term(cluster: Cluster, keys: set[str]) -> dict[int, set[str]] | None:
    """Which term's fenced txns wrote `keys` (by the token's create_revision); None until
    the apiserver has recorded a write of each of them."""
    out: dict[int, set[str]] = {}
    for w in cluster.api.committed:
        for k in keys.intersection(w.keys):
            out.setdefault(w.token.create_revision, set()).add(k)
    return out if set().union(*out.values()) == keys else None


async def test_controller_manager_replicas_fence_their_writes_and_hand_over(
    cluster: Cluster,
) -> None:
    election = LeaderElectionSettings(
        timings=LeaseTimings(
            lease_duration=LEASE_DURATION,
            renew_deadline=RENEW_DEADLINE,
            retry_period=RETRY_PERIOD,
        ),
        lease_name="kube-controller-manager",
    )
    config = ControllerManagerReplicaConfig(
        apiserver=cluster.address, etcd=cluster.etcd, election=election
    )
    hosts = Hosts([ControllerManagerReplica(config), ControllerManagerReplica(config)])
    key = election_key("kube-system", "kube-controller-manager")
    late: asyncio.Task[object] | None = None
    try:
        await hosts.start()
        first: Any = await eventually(hosts.leader, timeout=5)
        standby: Any = hosts.other(first)
        first_token = token(first)
        assert first_token == (key, await cluster.term_began(key))
        await eventually(
            lambda: cluster.lease_names("kube-controller-manager", first),
            timeout=5,
        )
        assert first.terms == 1 and standby.terms == 0 and standby.manager is None

        # The leader's controllers act, every write under its token.
        await _deployment(cluster, "web", 2)
        await eventually(lambda: _count(cluster, "web", 2))
        sets, _ = await cluster.api.list(RS, "default")
        assert len(sets) == 1
        rs_key = RS.key("default", sets[0].metadata.name)  # type: ignore[attr-defined]
        first_pods = await _pod_keys(cluster, "web")
        by_term = await eventually(lambda: _written_by_term(cluster, {rs_key, *first_pods}))
        assert set(by_term) == {first_token[1]}
        assert {w.token.create_revision for w in cluster.api.committed} == {first_token[1]}

        # Cut the leader off: the standby's fresh controllers take over. A write the
        # leader sends now, under its still-current token, is held in flight.
        partition(first)
        late = asyncio.create_task(late_write(first, lambda w: w.create(new_pod("late"))))
        await eventually(lambda: standby.leading, timeout=TAKEOVER)
        second_began = await cluster.term_began(key)
        assert token(standby) == (key, second_began) and standby.terms == 1
        await cluster.api.patch(DEPLOYMENTS, "default", "web", '{"spec":{"replicas":4}}')
        await eventually(lambda: _count(cluster, "web", 4), timeout=10)
        new_pods = await _pod_keys(cluster, "web") - first_pods
        assert len(new_pods) == 2
        by_term = await eventually(lambda: _written_by_term(cluster, new_pods))
        assert by_term.get(second_began) == new_pods, "the new pods were made by the new term"

        await eventually(lambda: not any(r.partitioned for r in replica(first).relays), timeout=5)
        with pytest.raises(PreconditionError, match="stale leader"):
            await asyncio.wait_for(late, 10)
        with pytest.raises(NotFoundError):
            await cluster.pod("late")
        await eventually(
            lambda: replica(first).elector.leader_identity == replica(standby).identity,  # type: ignore[union-attr]
            timeout=5,
        )
        assert not first.leading and standby.leading
        await eventually(
            lambda: cluster.lease_names("kube-controller-manager", standby),
            timeout=5,
        )
        cluster.check_fencing(first_token, second_began)
    finally:
        if late is not None:
            late.cancel()
        await hosts.stop_all()


async def _count(cluster: Cluster, app: str, n: int) -> bool:
    return len(await _pod_keys(cluster, app)) == n
