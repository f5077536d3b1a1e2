"""A node pool's process: hundreds to thousands of hollow kubelets in one process
(services/kubelet/pool.py), and the pool's gRPC API for chaos and figures;
actors/nodepool.py runs one in a Ray actor."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import grpc

from services.client import Client
from services.clock import clock_for
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
    #: Where the pool's gRPC API listens.
    host: str = "127.0.0.1"


class NodePoolHost:
    """The hollow nodes of one slice of the cluster (unit-testable without Ray)."""

    def __init__(self, config: NodePoolHostConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.pool: NodePool | None = None
        self._server: grpc.aio.Server | None = None
        self.address = ""

    async def start(self) -> str:
        c = self.config
        template: NodeTemplate = (
            load_template(c.template_yaml) if c.template_yaml else default_template()
        )
        plans = plan_nodes(template, c.total_nodes)[c.first : c.first + c.count]
        self.client = Client(c.apiserver, timeout=120)
        clock = clock_for(c.time_scale, c.time_origin or None)
        self.pool = NodePool(self.client, plans, config=c.pool, clock=clock)
        await self.pool.start()
        self._server, port = await serve(self.pool, c.host)
        self.address = f"{c.host}:{port}"
        return self.address

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0.5)
        if self.pool is not None:
            await self.pool.stop()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()

    async def health(self) -> dict[str, object]:
        return {"address": self.address, "pid": os.getpid(), "nodes": self.config.count}
