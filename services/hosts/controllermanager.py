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
from dataclasses import dataclass

from services.clock import clock_for
from services.controllers import ControllerManager, ControllerManagerConfig
from services.hosts.replica import Replica, host_leading
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
    #: etcd's CA and a client certificate (contents) when etcd serves TLS; None: plain.
    etcd_tls: EtcdTLS | None = None
    #: The controllers it runs, by name (services.controllers.ALL_CONTROLLERS); (): all.
    controllers: tuple[str, ...] = ()


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

    async def ensure_started(self) -> str:
        """start() unless started (Ray re-creates a killed actor without calling it)."""
        return await self.start()

    async def start(self) -> str:
        """Open the connections, register, and campaign (or run at once without an
        election). Idempotent; a start that fails part way is undone, so the next call
        starts afresh rather than finding a replica that claims to be started."""
        async with self._start_lock:
            if not self.started:
                try:
                    await self._start()
                except BaseException:
                    replica, self.replica = self.replica, None
                    if replica is not None:
                        with contextlib.suppress(Exception):
                            await replica.close()
                    raise
                self.started = True
        return "running"

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
            "terms": self.terms,
            "controllers": list(self.manager.controllers) if self.manager else [],
        }
        if self.replica is not None:
            out.update(self.replica.health())
        out["leading"] = self.leading
        return out
