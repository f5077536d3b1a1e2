"""A controller-manager replica: node lifecycle, taint eviction, ReplicaSet,
Deployment and PodGC controllers over one set of informers (services/controllers).

Replicas elect a leader as kube-controller-manager does (Lease kube-system/
kube-controller-manager); only the leader runs the controllers, and every write it makes
carries its fencing token, so a deposed leader (paused, cut off) cannot evict, delete or
scale anything after its term. Each term starts a fresh ControllerManager (informers
included), as kube-controller-manager starts its controllers only once it leads.
actors/controllers.py runs one in a Ray actor.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from services.auth.certs import KeyPair
from services.clock import clock_for
from services.controllers import ControllerManager, ControllerManagerConfig
from services.hosts.replica import (
    Replica,
    StartAttempts,
    StartRetry,
    host_leading,
    start_with_retry,
)
from services.leaderelection import LeaderElectionSettings
from services.storage.etcd import EtcdTLS


@dataclass(frozen=True)
class ControllerManagerReplicaConfig:
    #: The apiserver's address (host:port).
    apiserver: str
    #: etcd endpoint (the election key; the replica's record).
    etcd: str = ""
    #: Simulated durations are divided by this (tolerations, grace periods, monitors).
    time_scale: float = 1.0
    #: The simulated clock's epoch (0: now).
    time_origin: float = 0.0
    #: None: no election, run at once (one replica).
    election: LeaderElectionSettings | None = None
    #: Where the replica's chaos control listens (actors/ sets the Ray node's address).
    host: str = "127.0.0.1"
    #: Bearer token its calls to the apiserver carry (services/auth; "": none, for an
    #: apiserver without authentication).
    token: str = ""
    #: sha256 of the admin's token: its own servers' writes (chaos control) are the
    #: admin's only (services/auth/grpcauth.py `admin_only`; "": open, as in tests).
    admin_sha256: str = ""
    #: The CA of the apiserver's gRPC TLS (PEM contents; b"": it serves plaintext).
    apiserver_ca: bytes = b""
    #: Its chaos control's TLS certificate and key, the cluster CA's (None: plaintext).
    serving_tls: KeyPair | None = None
    #: etcd's CA and a client certificate (contents) when etcd serves TLS; None: plain.
    etcd_tls: EtcdTLS | None = None
    #: The controllers it runs, by name (services.controllers.ALL_CONTROLLERS); (): all.
    controllers: tuple[str, ...] = ()
    #: How a failed start is tried again (replica.py `start_with_retry`).
    start_retry: StartRetry = field(default_factory=StartRetry)


class ControllerManagerReplica:
    """One kube-controller-manager replica (actors/controllers.py runs it in a Ray actor)."""

    def __init__(self, config: ControllerManagerReplicaConfig) -> None:
        self.config = config
        self.replica: Replica | None = None
        self.manager: ControllerManager | None = None
        self.started = False
        self.terms = 0
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        #: Held by start(): one start at a time (ensure_started() may race a start()).
        self._start_lock = asyncio.Lock()
        #: The last start's attempts (health); the wait between them (a fake in tests).
        self.start_attempts = StartAttempts()
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep

    async def ensure_started(self) -> str:
        """start() unless started (Ray re-creates a killed actor without calling it)."""
        return await self.start()

    async def start(self) -> str:
        """Open the connections, register, and campaign (or run at once without an
        election). Idempotent; an attempt that fails part way is undone and tried again
        (`config.start_retry`), so the replica is started or not, never half-started;
        when every attempt failed, the next call starts afresh."""
        async with self._start_lock:
            if not self.started:
                await start_with_retry(
                    self._start,
                    self._undo_start,
                    what="kube-controller-manager replica",
                    retry=self.config.start_retry,
                    record=self.start_attempts,
                    sleep=self.sleep,
                )
                self.started = True
        return "running"

    async def _undo_start(self) -> None:
        replica, self.replica = self.replica, None
        if replica is not None:
            with contextlib.suppress(Exception):
                await replica.close()

    async def _start(self) -> None:
        cfg = self.config
        election = cfg.election
        group = (
            (election.lease_namespace, election.lease_name)
            if election
            else ("kube-system", "kube-controller-manager")
        )
        self.replica = Replica(
            component="kube-controller-manager",
            etcd=cfg.etcd,
            apiserver=cfg.apiserver,
            group=group,
            election=election,
            client_timeout=60,
            host=cfg.host,
            token=cfg.token,
            admin_sha256=cfg.admin_sha256,
            etcd_tls=cfg.etcd_tls,
            apiserver_ca=cfg.apiserver_ca,
            serving_tls=cfg.serving_tls,
        )
        await self.replica.open()
        await self.replica.register()
        # Invariant: nothing after this point can fail, so a failed start never leaves an
        # elector campaigning or controllers running behind the undo above.
        if election is not None:
            self.replica.elect(self._run_term, lambda: None)
        else:
            self._task = asyncio.create_task(self._run_term(self._stop))

    async def _run_term(self, stop: asyncio.Event) -> None:
        assert self.replica is not None and self.replica.writer is not None
        clock = clock_for(self.config.time_scale, self.config.time_origin or None)
        self.terms += 1
        config = (
            ControllerManagerConfig(controllers=self.config.controllers)
            if self.config.controllers
            else None
        )
        self.manager = ControllerManager(self.replica.writer, config, clock=clock)
        await self.manager.run(stop)

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 15)
        if self.replica is not None:
            await self.replica.close()

    @property
    def leading(self) -> bool:
        return host_leading(self.replica, self._task)

    async def health(self) -> dict[str, object]:
        out: dict[str, object] = {
            "running": self.leading,
            "started": self.started,
            "start_attempts": self.start_attempts.attempts,
            "start_error": self.start_attempts.error,
            "terms": self.terms,
            "controllers": list(self.manager.controllers) if self.manager else [],
        }
        if self.replica is not None:
            out.update(self.replica.health())
        out["leading"] = self.leading
        return out
