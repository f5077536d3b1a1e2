"""Starting a replica (scheduler, controller-manager) on real etcd, without Ray: a start that
fails part way is undone and tried again with backoff, bounded (when every attempt failed,
the next start begins afresh: the node pool's rule), concurrent starts start once, and a
scheduler replica's metrics outlive its leadership terms.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.launch.etcd import EtcdProcess
from services.apiserver.registry import ApiServerConfig
from services.hosts.controllermanager import (
    ControllerManagerReplica,
    ControllerManagerReplicaConfig,
)
from services.hosts.replica import Replica, StartRetry, election_key
from services.hosts.scheduler import SchedulerReplica, SchedulerReplicaConfig
from services.leaderelection import LeaderElectionSettings, LeaseTimings, TimingOverrides
from services.storage import Delete
from services.storage.keys import replica_key
from tests.harness import control_plane, etcd_store
from tests.leaderelection.harness import ApiCluster
from tests.waiting import eventually

pytestmark = pytest.mark.integration

TIMINGS = {"lease_duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.5}
SCHEDULER_KEY = election_key("kube-system", "kube-scheduler")


@pytest.fixture
async def api(etcd_server: EtcdProcess) -> AsyncIterator[ApiCluster]:
    config = ApiServerConfig(watch_cache_capacity=200)
    async with etcd_store(etcd_server.endpoint) as storage, control_plane(storage, config) as cp:
        yield ApiCluster(cp.api, cp.address, etcd_server.endpoint)


class FailOnce:
    """Replica.register failing on its first `times` calls (a start that dies after the
    connections, servers and informers are up), recording the replicas it failed for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, times: int = 1) -> None:
        self.failed: list[Replica] = []
        real = Replica.register

        async def register(replica: Replica, **extra: Any) -> None:
            if len(self.failed) < times:
                self.failed.append(replica)
                raise RuntimeError("etcd went away during start")
            await real(replica, **extra)

        monkeypatch.setattr(Replica, "register", register)

    def undone(self) -> bool:
        """Whether every failed start's replica was closed: its relays and control server."""
        return bool(self.failed) and all(
            all(r._closed for r in replica.relays) and len(replica.relays) == 2
            for replica in self.failed
        )


#: One attempt per start: a failure is the caller's to see.
NO_RETRY = StartRetry(attempts=1)


async def test_a_scheduler_replica_whose_start_failed_part_way_starts_afresh(
    api: ApiCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail = FailOnce(monkeypatch)
    host = SchedulerReplica(
        SchedulerReplicaConfig(
            apiserver=api.address,
            etcd=api.etcd,
            election=TimingOverrides(**TIMINGS),
            start_retry=NO_RETRY,
        )
    )
    try:
        with pytest.raises(RuntimeError, match="went away"):
            await host.start()
        assert not host.started and host.replica is None and host.scheduler is None
        assert fail.undone()
        first_identity = fail.failed[0].identity

        address = await host.ensure_started()
        assert host.started and address == host.address != ""
        assert host.replica is not None and host.replica.identity != first_identity
        await eventually(lambda: host.leading, timeout=5)
        await api.node("n1")
        await api.pods("a", "b")
        await eventually(lambda: api.bound("a", "b"))
        assert await host.ensure_started() == address  # started once: nothing more happens
    finally:
        await host.stop()


async def test_a_controller_manager_replica_whose_start_failed_part_way_starts_afresh(
    api: ApiCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail = FailOnce(monkeypatch)
    election = LeaderElectionSettings(
        timings=LeaseTimings(**TIMINGS), lease_name="kube-controller-manager"
    )
    host = ControllerManagerReplica(
        ControllerManagerReplicaConfig(
            apiserver=api.address, etcd=api.etcd, election=election, start_retry=NO_RETRY
        )
    )
    try:
        with pytest.raises(RuntimeError, match="went away"):
            await host.ensure_started()
        assert not host.started and host.replica is None and host.terms == 0
        assert fail.undone()

        assert await host.start() == "running"
        assert host.started and host.replica is not None
        assert host.replica.identity != fail.failed[0].identity
        await eventually(lambda: host.leading and host.terms == 1, timeout=5)
    finally:
        await host.stop()


def _host(kind: str, api: ApiCluster, retry: StartRetry) -> Any:
    if kind == "scheduler":
        return SchedulerReplica(
            SchedulerReplicaConfig(
                apiserver=api.address,
                etcd=api.etcd,
                election=TimingOverrides(**TIMINGS),
                start_retry=retry,
            )
        )
    election = LeaderElectionSettings(
        timings=LeaseTimings(**TIMINGS), lease_name="kube-controller-manager"
    )
    return ControllerManagerReplica(
        ControllerManagerReplicaConfig(
            apiserver=api.address, etcd=api.etcd, election=election, start_retry=retry
        )
    )


class Waits:
    """The host's sleep between attempts, faked: records each wait, returns at once."""

    def __init__(self) -> None:
        self.waited: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waited.append(seconds)


def _retried(kind: str, api: ApiCluster, retry: StartRetry) -> tuple[Any, Waits]:
    """A replica host of `kind` retrying by `retry`, its waits faked."""
    host = _host(kind, api, retry)
    host.sleep = waits = Waits()
    return host, waits


@pytest.mark.parametrize("kind", ["scheduler", "controller-manager"])
async def test_a_replica_whose_start_fails_twice_retries_with_backoff_and_starts(
    api: ApiCluster, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    fail = FailOnce(monkeypatch, times=2)
    host, waits = _retried(kind, api, StartRetry(attempts=4, initial=0.5, factor=2.0, cap=8.0))
    try:
        await host.start()  # no error: the third attempt started it
        assert host.started and len(fail.failed) == 2 and fail.undone()
        assert waits.waited == [0.5, 1.0]
        assert host.replica is not None
        assert host.replica.identity not in {r.identity for r in fail.failed}
        health = await host.health()
        assert health["started"] is True and health["start_attempts"] == 3
        assert health["start_error"] == ""
        await eventually(lambda: host.leading, timeout=5)
    finally:
        await host.stop()


@pytest.mark.parametrize("kind", ["scheduler", "controller-manager"])
async def test_a_replica_gives_up_after_its_last_attempt_and_is_not_half_started(
    api: ApiCluster, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    fail = FailOnce(monkeypatch, times=3)
    host, waits = _retried(kind, api, StartRetry(attempts=3, initial=0.1, factor=3.0, cap=0.5))
    try:
        with pytest.raises(RuntimeError, match="went away"):
            await host.start()
        assert waits.waited == pytest.approx([0.1, 0.3])
        assert len(fail.failed) == 3 and fail.undone()
        assert not host.started and host.replica is None
        health = await host.health()
        assert health["started"] is False and health["start_attempts"] == 3
        assert "went away" in str(health["start_error"])
        # the supervisor's next ensure_started() begins afresh, and now it works
        await host.ensure_started()
        assert host.started and (await host.health())["start_attempts"] == 1
    finally:
        await host.stop()


def test_start_retry_waits_grow_to_their_cap() -> None:
    retry = StartRetry()
    assert [retry.delay(n) for n in range(1, retry.attempts)] == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert StartRetry(initial=1, factor=3, cap=5).delay(3) == 5
    with pytest.raises(ValueError):
        StartRetry(attempts=0)


async def test_concurrent_starts_start_a_replica_once(api: ApiCluster) -> None:
    hosts: list[Any] = [
        SchedulerReplica(
            SchedulerReplicaConfig(
                apiserver=api.address, etcd=api.etcd, election=TimingOverrides(**TIMINGS)
            )
        ),
        ControllerManagerReplica(
            ControllerManagerReplicaConfig(apiserver=api.address, etcd=api.etcd)
        ),
    ]
    try:
        for host in hosts:
            results = await asyncio.gather(host.start(), host.ensure_started(), host.start())
            assert len(set(results)) == 1 and host.started
            replica = host.replica
            await host.ensure_started()
            assert host.replica is replica
    finally:
        for host in hosts:
            await host.stop()


def attempts(host: SchedulerReplica) -> float:
    value = host.metrics.registry.get_sample_value(
        "scheduler_schedule_attempts_total",
        {"result": "scheduled", "profile": "default-scheduler"},
    )
    return value or 0.0


async def test_a_scheduler_replicas_metrics_outlive_its_terms(api: ApiCluster) -> None:
    host = SchedulerReplica(
        SchedulerReplicaConfig(
            apiserver=api.address, etcd=api.etcd, election=TimingOverrides(**TIMINGS)
        )
    )
    try:
        await host.start()
        registry, address = host.metrics.registry, host.metrics_address
        await eventually(lambda: host.leading, timeout=5)
        await api.node("n1")
        await api.pods("a0", "a1", "a2")
        await eventually(lambda: api.bound("a0", "a1", "a2"))
        first = host.scheduler
        assert first is not None and first.metrics is host.metrics
        # the attempt is counted once its binding cycle ends, after the bind is visible
        await eventually(lambda: attempts(host) == 3)

        # End the term from outside (the key is gone, so the renewal fails): the replica
        # builds a fresh Scheduler and leads again, recording on the same registry.
        assert api.api.storage is not None
        await api.api.storage.txn([], [Delete(SCHEDULER_KEY)])
        await eventually(lambda: host.terms == 2 and host.leading, timeout=10)
        assert host.scheduler is not first and host.scheduler is not None
        assert host.scheduler.metrics is host.metrics
        await api.pods("b0", "b1")
        await eventually(lambda: api.bound("b0", "b1"))
        # the first term's 3 attempts are still counted, beside the second term's 2
        await eventually(lambda: attempts(host) == 5)
        assert host.metrics.registry is registry and host.metrics_address == address
        active = registry.get_sample_value("scheduler_pending_pods", {"queue": "active"})
        assert active == 0
    finally:
        await host.stop()


async def test_a_leader_records_when_its_terms_steps_happened(api: ApiCluster) -> None:
    host = SchedulerReplica(
        SchedulerReplicaConfig(
            apiserver=api.address, etcd=api.etcd, election=TimingOverrides(**TIMINGS)
        )
    )
    try:
        await host.start()
        await eventually(lambda: host.leading, timeout=5)
        assert host.replica is not None
        token = host.replica.fencing_token()
        assert token is not None
        await api.node("n1")
        await api.pods("a")
        await eventually(lambda: api.bound("a"))
        key = replica_key("kube-system", "kube-scheduler", host.replica.identity)

        async def term() -> dict[str, float]:
            assert api.api.storage is not None
            kv = await api.api.storage.get(key)
            rec = json.loads(kv.value) if kv is not None else {}
            return rec.get("last_term", {})  # type: ignore[no-any-return]

        times = await eventually(term)
        assert times["token"] == token[1]
        steps = [times[f"{s}_at"] for s in ("free", "acquired", "started", "first_bind")]
        assert steps[0] > 0 and steps == sorted(steps)
    finally:
        await host.stop()


def _sample(host: SchedulerReplica, name: str, labels: dict[str, str] | None = None) -> float:
    return host.metrics.registry.get_sample_value(name, labels or {}) or 0.0


async def test_attempts_across_a_forced_leader_change_add_up_to_the_pods(
    api: ApiCluster,
) -> None:
    """A leader and a standby, each with its registry for the whole process: the term is
    ended from outside (the election key deleted) and a new term begins (whichever
    replica wins it); the attempts both registries counted add up to the pods scheduled,
    none lost with the old term's Scheduler."""
    hosts = [
        SchedulerReplica(
            SchedulerReplicaConfig(
                apiserver=api.address, etcd=api.etcd, election=TimingOverrides(**TIMINGS)
            )
        )
        for _ in range(2)
    ]

    def total(name: str, labels: dict[str, str] | None = None) -> float:
        return sum(_sample(h, name, labels) for h in hosts)

    scheduled = {"result": "scheduled", "profile": "default-scheduler"}
    try:
        for h in hosts:
            await h.start()
        await eventually(lambda: sum(h.leading for h in hosts) == 1, timeout=5)
        first = next(h for h in hosts if h.leading)
        assert first.replica is not None
        first_token = first.replica.fencing_token()
        await api.node("n1")
        await api.pods("a0", "a1", "a2")
        await eventually(lambda: api.bound("a0", "a1", "a2"))
        await eventually(lambda: total("scheduler_schedule_attempts_total", scheduled) == 3)

        assert api.api.storage is not None
        await api.api.storage.txn([], [Delete(SCHEDULER_KEY)])

        def new_term() -> SchedulerReplica | None:
            leaders = [h for h in hosts if h.leading]
            if len(leaders) != 1 or leaders[0].replica is None:
                return None
            token = leaders[0].replica.fencing_token()
            return leaders[0] if token is not None and token != first_token else None

        await eventually(new_term, timeout=10)
        await api.pods("b0", "b1", "b2", "b3")
        await eventually(lambda: api.bound("b0", "b1", "b2", "b3"))
        await eventually(lambda: total("scheduler_schedule_attempts_total", scheduled) == 7)
        await eventually(lambda: total("scheduler_pod_scheduling_attempts_count") == 7)
        assert total("scheduler_schedule_attempts_total", scheduled) == 7  # and no more
    finally:
        for h in hosts:
            await h.stop()
