"""A kube-scheduler replica: the Scheduler, its gRPC API (traces), its metrics, its
configuration, and — through replica.py — leader election with fencing. actors/scheduler.py
runs one in a Ray actor.

Modes:
- leader election (the default, as kube-scheduler's leaderElect): every replica keeps
  informers, cache and queue warm; only the leader schedules, and its binds and writes
  carry its fencing token. When a term ends the replica builds a fresh Scheduler and warms
  it again (kube-scheduler exits for the same reason: its queue and assumed pods belong to
  the old term) and campaigns again.
- no election (leaderElection.leaderElect: false): schedule at once, unfenced.
- shared-state (Omega): K replicas all schedule, pods split by hash or all competing; each
  bind is checked against the node's allocation record instead of a token.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

import grpc
import prometheus_client

from services.auth.certs import KeyPair, server_credentials
from services.clock import clock_for
from services.hosts.address import join, listen_hosts
from services.hosts.replica import (
    Replica,
    StartAttempts,
    StartRetry,
    host_leading,
    start_with_retry,
)
from services.leaderelection import LeaderElectionSettings, TimingOverrides
from services.scheduler import (
    Partition,
    Scheduler,
    SchedulerMetrics,
    SchedulerOptions,
    SharedState,
    serve,
    settle_gc,
    tune_gc,
)
from services.scheduler import config as config_mod
from services.storage.etcd import EtcdTLS

log = logging.getLogger(__name__)

#: "leader": one elected replica per deployment schedules, fenced; "shared-state" (Omega):
#: every replica schedules, each bind checked against the node's allocation record.
SchedulerMode = Literal["leader", "shared-state"]


@dataclass(frozen=True)
class SchedulerReplicaConfig:
    #: The apiserver's address (host:port).
    apiserver: str
    #: etcd endpoint (the election key; the replica's record).
    etcd: str = ""
    #: KubeSchedulerConfiguration YAML text ("" = the defaults).
    config_yaml: str = ""
    #: Where the replica's gRPC API, metrics and chaos control listen (actors/ sets the
    #: Ray node's address; see address.py for the environment's overrides).
    host: str = "127.0.0.1"
    #: Seeds the scheduler's tie-breaking (None: random).
    seed: int | None = None
    #: Feature gate overrides (services/api/features.py; `kubera up --feature-gates`).
    feature_gates: dict[str, bool] = field(default_factory=dict)
    #: `kubera up --leader-elect-*` flags; an unset one keeps the configuration's value.
    election: TimingOverrides = field(default_factory=TimingOverrides)
    mode: SchedulerMode = "leader"
    #: shared-state: this replica's index among `replicas`.
    replica: int = 0
    replicas: int = 1
    #: shared-state: "hash" (pods split by UID hash) or "none" (all compete).
    partition: Partition = "none"
    #: Bearer token its calls to the apiserver carry (services/auth; "": none, for an
    #: apiserver without authentication).
    token: str = ""
    #: sha256 of the admin's token: its own servers' writes (chaos control) are the
    #: admin's only (services/auth/grpcauth.py `admin_only`; "": open, as in tests).
    admin_sha256: str = ""
    #: The CA of the apiserver's gRPC TLS (PEM contents; b"": it serves plaintext).
    apiserver_ca: bytes = b""
    #: Its own servers' (API, chaos control) TLS certificate and key, the cluster CA's
    #: (services/auth/certs.py `issue_serving`; None: plaintext).
    serving_tls: KeyPair | None = None
    #: etcd's CA and a client certificate (contents) when etcd serves TLS; None: plain.
    etcd_tls: EtcdTLS | None = None
    #: The cluster clock (services/clock.py): the time the scheduler stamps on objects
    #: and compares them with; its own pacing and metrics stay on the wall clock.
    time_scale: float = 1.0
    time_origin: float = 0.0
    #: How a failed start is tried again (replica.py `start_with_retry`).
    start_retry: StartRetry = field(default_factory=StartRetry)


def load_config(cfg: SchedulerReplicaConfig) -> config_mod.SchedulerConfiguration:
    """The KubeSchedulerConfiguration of `cfg` ("" = the defaults)."""
    return (
        config_mod.load_config(cfg.config_yaml) if cfg.config_yaml else config_mod.default_config()
    )


def election_for(
    sc: config_mod.SchedulerConfiguration, mode: SchedulerMode, overrides: TimingOverrides
) -> LeaderElectionSettings | None:
    """The deployment's election: the configuration's leaderElection block with the command
    line's timings applied (and checked together); None when it does not elect."""
    le = sc.leader_election
    if mode != "leader" or not le.leader_elect:
        return None
    return LeaderElectionSettings(
        timings=le.timings,
        lease_name=le.resource_name,
        lease_namespace=le.resource_namespace,
    ).with_timings(overrides)


class SchedulerReplica:
    """One kube-scheduler replica (actors/scheduler.py runs it in a Ray actor)."""

    #: Tune the process's garbage collector for a scheduler (gctune.py): only where the
    #: replica owns its process (the actor), not in a test or tool process.
    gc_tuned = False

    def __init__(self, config: SchedulerReplicaConfig) -> None:
        if self.gc_tuned:
            tune_gc()
        self.config = config
        self.scheduler: Scheduler | None = None
        #: The process's metrics, shared by every term's Scheduler (see _serve_metrics).
        self.metrics = SchedulerMetrics()
        self.replica: Replica | None = None
        self.started = False
        self.terms = 0
        self._sc: config_mod.SchedulerConfiguration | None = None
        self._closing = False
        self._ready: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        #: Held by start(): one start at a time (ensure_started() may race a start()).
        self._start_lock = asyncio.Lock()
        self._server: grpc.aio.Server | None = None
        self._metrics_server: Any = None
        self.address = ""
        self.metrics_address = ""
        #: The last start's attempts (health); the wait between them (a fake in tests).
        self.start_attempts = StartAttempts()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def ensure_started(self) -> str:
        """start() unless started (Ray re-creates a killed actor without calling it)."""
        return await self.start()

    async def start(self) -> str:
        """Open the connections, serve the API and metrics, warm the Scheduler, register,
        and campaign (or schedule at once without an election). Idempotent; an attempt
        that fails part way is undone and tried again (`config.start_retry`), so the
        replica is started or not, never one that claims to be started and never
        campaigns; when every attempt failed, the next call starts afresh."""
        async with self._start_lock:
            if not self.started:
                await start_with_retry(
                    self._start,
                    self._undo_start,
                    what="kube-scheduler replica",
                    retry=self.config.start_retry,
                    record=self.start_attempts,
                    sleep=self.sleep,
                )
                self.started = True
        return self.address

    async def _start(self) -> None:
        cfg = self.config
        self._sc = sc = load_config(cfg)
        election = election_for(sc, cfg.mode, cfg.election)
        le = sc.leader_election
        group = (le.resource_namespace, le.resource_name)
        if cfg.mode == "shared-state":
            group = ("kube-system", sc.profiles[0].scheduler_name)
        self.replica = Replica(
            component="kube-scheduler",
            etcd=cfg.etcd,
            apiserver=cfg.apiserver,
            group=group,
            election=election,
            host=cfg.host,
            token=cfg.token,
            admin_sha256=cfg.admin_sha256,
            etcd_tls=cfg.etcd_tls,
            apiserver_ca=cfg.apiserver_ca,
            serving_tls=cfg.serving_tls,
        )
        await self.replica.open()
        self.scheduler = self._build()
        bind, advertise = listen_hosts(cfg.host)
        self._server, port = await serve(
            self, bind, credentials=server_credentials(cfg.serving_tls)
        )
        self.address = join(advertise, port)
        self._serve_metrics()
        await self.scheduler.warm()
        if self.gc_tuned:
            settle_gc()
        await self.replica.register(
            scheduler=self.address, metrics=self.metrics_address, mode=cfg.mode
        )
        loop = asyncio.get_running_loop()
        self._ready = loop.create_future()
        self._ready.set_result(None)
        if election is not None:
            self.replica.elect(self._on_started_leading, self._on_stopped_leading)
        else:
            self._task = asyncio.create_task(self.scheduler.lead(self._stop))

    async def _undo_start(self) -> None:
        """Close whatever a failed _start() opened (it never got as far as campaigning or
        scheduling, which are its last steps) and forget it."""
        replica, scheduler, server = self.replica, self.scheduler, self._server
        self.replica = self.scheduler = self._server = None
        self._ready = None
        self.address = ""
        if scheduler is not None:
            with contextlib.suppress(Exception):
                await scheduler.close()
        if server is not None:
            with contextlib.suppress(Exception):
                await server.stop(0)
        if replica is not None:
            with contextlib.suppress(Exception):
                await replica.close()

    def _build(self) -> Scheduler:
        assert self.replica is not None and self._sc is not None
        cfg = self.config
        kwargs: dict[str, Any] = {}
        if cfg.mode == "shared-state":
            kwargs["shared_state"] = SharedState(
                replica=cfg.replica, replicas=cfg.replicas, partition=cfg.partition
            )
        elected = self.replica.election is not None
        client = self.replica.writer if elected else self.replica.client
        assert client is not None
        # The last term's queue is gone: its pending pods are not this term's.
        self.metrics.reset_pending()
        return Scheduler(
            client,
            SchedulerOptions(
                component_config=self._sc,
                seed=cfg.seed,
                identity=self.replica.identity,
                feature_gates=dict(cfg.feature_gates),
                **kwargs,
            ),
            cluster_clock=clock_for(cfg.time_scale, cfg.time_origin or None),
            fencing=self.replica.fencing_token if elected else None,
            metrics=self.metrics,
        )

    def _serve_metrics(self) -> None:
        """Prometheus metrics (kube-scheduler's names) from the replica's one registry,
        served once per process: the registry outlives the terms, so what a term observed
        after the last scrape of it is still there at the next scrape."""
        if self._metrics_server is not None:
            return
        bind, advertise = listen_hosts(self.config.host)
        self._metrics_server, _ = prometheus_client.start_http_server(
            0, addr=bind, registry=self.metrics.registry
        )
        self.metrics_address = join(advertise, self._metrics_server.server_port)

    async def _on_started_leading(self, term_over: asyncio.Event) -> None:
        assert self._ready is not None
        await self._ready  # the fresh Scheduler of this term is warm
        assert self.scheduler is not None
        self.terms += 1
        report = asyncio.create_task(self._report_term(self.scheduler, time.time()))
        try:
            await self.scheduler.lead(term_over)
        finally:
            report.cancel()

    async def _report_term(self, sched: Scheduler, started_at: float) -> None:
        """Once the term's first bind is accepted, add when the term's steps happened to
        this replica's record (wall clock): the key found free, the term won, the
        Scheduler leading, the first bind — off the scheduling path, for `kubera bench
        failover` to divide a takeover by."""
        replica = self.replica
        elector = replica.elector if replica is not None else None
        token = replica.fencing_token() if replica is not None else None
        if replica is None or elector is None or token is None:
            return
        await sched.first_bind.wait()
        term = {
            "token": token[1],
            "free_at": elector.free_at,
            "acquired_at": elector.acquired_at,
            "started_at": started_at,
            "first_bind_at": sched.first_bind_at,
        }
        try:
            await replica.register(last_term=term)
        except Exception as e:  # noqa: BLE001 - figures only
            log.debug("recording the term's times failed: %s", e)

    def _on_stopped_leading(self) -> None:
        if not self._closing:
            self._ready = asyncio.ensure_future(self._rebuild())

    async def _rebuild(self) -> None:
        old = self.scheduler
        if old is not None:
            await old.close()
        self.scheduler = self._build()
        await self.scheduler.warm()
        if self.gc_tuned:
            settle_gc()

    async def stop(self) -> None:
        self._closing = True
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        if self.replica is not None:
            await self.replica.close()  # releases the lease if held
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()
        if self.scheduler is not None:
            await self.scheduler.close()
        if self._server is not None:
            await self._server.stop(0.5)
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
            self._metrics_server.server_close()

    @property
    def leading(self) -> bool:
        return host_leading(self.replica, self._task)

    @property
    def mode(self) -> SchedulerMode:
        return self.config.mode

    @property
    def leader_identity(self) -> str:
        """The holder of the election this replica observes ("" when it does not elect
        or has seen none): a standby names it when it refuses a leader-only call."""
        elector = self.replica.elector if self.replica is not None else None
        return elector.leader_identity if elector is not None else ""

    async def health(self) -> dict[str, object]:
        out: dict[str, object] = {
            "address": self.address,
            "metrics": self.metrics_address,
            "leading": self.leading,
            "mode": self.config.mode,
            "started": self.started,
            "start_attempts": self.start_attempts.attempts,
            "start_error": self.start_attempts.error,
            "terms": self.terms,
            "scheduled": self.scheduler.scheduled if self.scheduler else 0,
        }
        omega = getattr(self.scheduler, "omega", None)
        if omega is not None:
            out["shared_state"] = omega.summary()
        if self.replica is not None:
            out.update(self.replica.health())
        out["leading"] = self.leading
        return out
