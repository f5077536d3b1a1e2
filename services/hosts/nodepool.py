"""A node pool's process: hundreds to thousands of hollow kubelets in one process
(services/kubelet/pool.py), and the pool's gRPC API for chaos and figures;
actors/nodepool.py runs one in a Ray actor."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import grpc

from services.auth.certs import KeyPair, server_credentials
from services.auth.grpcauth import CHAOS_STATUS, POOL_STATS, admin_only
from services.chaos import add_control, self_report
from services.client import Client
from services.clock import clock_for
from services.hosts.address import join, listen_hosts
from services.kubelet import (
    NodePool,
    NodeTemplate,
    PoolConfig,
    default_template,
    load_template,
    plan_nodes,
    serve,
)


@dataclass(frozen=True)
class NodePoolHostConfig:
    #: The apiserver's address (host:port).
    apiserver: str
    #: Node template YAML text ("" = the default template).
    template_yaml: str
    #: The whole cluster's node count and this pool's slice of it [first, first + count).
    total_nodes: int
    first: int
    count: int
    #: The pool's own settings (name, watches, leases, ordinals).
    pool: PoolConfig
    #: Simulated durations are divided by this; the simulated clock's epoch (0: now).
    time_scale: float = 1.0
    time_origin: float = 0.0
    #: Where the pool's gRPC API listens (actors/ sets the Ray node's address; see
    #: address.py for the environment's overrides).
    host: str = "127.0.0.1"
    #: Bearer token its calls to the apiserver carry (services/auth; "": none, for an
    #: apiserver without authentication).
    token: str = ""
    #: sha256 of the admin's token: its own server's writes (chaos control, SetAlive,
    #: InjectUsage) are the admin's only (services/auth/grpcauth.py `admin_only`; "":
    #: open, as in tests).
    admin_sha256: str = ""
    #: The CA of the apiserver's gRPC TLS (PEM contents; b"": it serves plaintext).
    apiserver_ca: bytes = b""
    #: Its server's (pool API, chaos control) TLS certificate and key, the cluster CA's
    #: (None: plaintext).
    serving_tls: KeyPair | None = None


class NodePoolHost:
    """The hollow nodes of one slice of the cluster (unit-testable without Ray).

    A pool comes back like every other component: Ray re-creates a killed actor (on
    another node when its node died) and the supervisor's `ensure_started()` starts it.
    A restarted pool takes its nodes over — their Node and Lease objects exist, and are
    written over — and adopts the pods bound to them from their status (a Running pod
    stays Running, a pending one replays its stages), so no pod is lost or bound again.
    It serves its gRPC API on a new address, which the supervisor records in the context.
    Hollow nodes that chaos had killed come back alive (their state was the process's).
    """

    def __init__(self, config: NodePoolHostConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.pool: NodePool | None = None
        self._server: grpc.aio.Server | None = None
        self.address = ""
        self.started = False
        self._lock = asyncio.Lock()

    async def ensure_started(self) -> dict[str, object]:
        """start() unless started (Ray re-creates a killed actor without calling it);
        health() either way."""
        async with self._lock:
            if not self.started:
                await self._start()
        return await self.health()

    async def start(self) -> str:
        async with self._lock:
            if not self.started:
                await self._start()
        return self.address

    async def _start(self) -> None:
        c = self.config
        template: NodeTemplate = (
            load_template(c.template_yaml) if c.template_yaml else default_template()
        )
        plans = plan_nodes(template, c.total_nodes)[c.first : c.first + c.count]
        self.client = Client(c.apiserver, timeout=120, token=c.token, ca=c.apiserver_ca)
        clock = clock_for(c.time_scale, c.time_origin or None)
        self.pool = NodePool(self.client, plans, config=c.pool, clock=clock)
        try:
            await self.pool.start()
            bind, advertise = listen_hosts(c.host)
            self._server, port = await serve(
                self.pool,
                bind,
                also=lambda s: add_control(s, [], c.pool.name, "node-pool"),
                interceptors=admin_only(c.admin_sha256, public=(CHAOS_STATUS, POOL_STATS)),
                credentials=server_credentials(c.serving_tls),
            )
        except BaseException:
            await self.stop()  # a half start is undone, so the next call starts afresh
            raise
        self.address = join(advertise, port)
        self.started = True

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0.5)
        if self.pool is not None:
            await self.pool.stop()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
        self._server = self.pool = self.client = None

    async def health(self) -> dict[str, object]:
        return {
            **self_report(),  # pid, CPU seconds, RSS bytes, host, boot id, PID namespace
            "address": self.address,
            "nodes": self.config.count,
            "started": self.started,
        }
