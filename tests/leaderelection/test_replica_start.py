"""Starting a replica (scheduler, controller-manager) on real etcd, without Ray: a start that
fails part way is undone and the next start begins afresh (the node pool's rule), concurrent
starts start once, and a scheduler replica's metrics outlive its leadership terms.
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
from services.hosts.replica import Replica, election_key
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
    """Replica.register failing on its first call (a start that dies after the connections,
    servers and informers are up), recording the replica it failed for."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.failed: list[Replica] = []
        real = Replica.register

        async def register(replica: Replica, **extra: Any) -> None:
            if not self.failed:
                self.failed.append(replica)
                raise RuntimeError("etcd went away during start")
            await real(replica, **extra)

        monkeypatch.setattr(Replica, "register", register)

    def undone(self) -> bool:
        """Whether the failed start's replica was closed: its relays and control server."""
        (replica,) = self.failed
        return all(r._closed for r in replica.relays) and len(replica.relays) == 2


async def test_a_scheduler_replica_whose_start_failed_part_way_starts_afresh(
    api: ApiCluster, monkeypatch: pytest.MonkeyPatch
) -> None:
    fail = FailOnce(monkeypatch)
    host = SchedulerReplica(
        SchedulerReplicaConfig(
            apiserver=api.address, etcd=api.etcd, election=TimingOverrides(**TIMINGS)
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
        ControllerManagerReplicaConfig(apiserver=api.address, etcd=api.etcd, election=election)
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
