"""The scheduler as a Ray actor: a client to the apiserver, the Scheduler, and its gRPC
API (traces). Leader election comes later: `start` leads at once through the same
`on_started_leading(stop)` seam an elector will call."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import prometheus_client
import ray

from services.client import Client
from services.scheduler import config as config_mod
from services.scheduler.scheduler import Scheduler
from services.scheduler.server import serve


@dataclass(frozen=True)
class SchedulerHostConfig:
    apiserver: str
    #: KubeSchedulerConfiguration YAML text ("" = the defaults).
    config_yaml: str = ""
    host: str = "127.0.0.1"
    seed: int | None = None


class SchedulerHost:
    """The plain part of the actor (unit-testable without Ray)."""

    def __init__(self, config: SchedulerHostConfig) -> None:
        self.config = config
        self.scheduler: Scheduler | None = None
        self.leading = False
        self.client: Client | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._server = None
        self._metrics_server = None
        self.address = ""
        self.metrics_address = ""

    async def start(self) -> str:
        cfg = (
            config_mod.load_config(self.config.config_yaml)
            if self.config.config_yaml
            else config_mod.default_config()
        )
        self.client = Client(self.config.apiserver)
        self.scheduler = Scheduler(self.client, cfg, seed=self.config.seed)
        self._server, port = await serve(self, self.config.host)
        self.address = f"{self.config.host}:{port}"
        # Prometheus metrics (kube-scheduler's names) on their own loopback port.
        self._metrics_server, _ = prometheus_client.start_http_server(
            0, addr=self.config.host, registry=self.scheduler.metrics.registry
        )
        self.metrics_address = f"{self.config.host}:{self._metrics_server.server_port}"
        self._task = asyncio.create_task(self.on_started_leading(self._stop))
        return self.address

    async def on_started_leading(self, stop: asyncio.Event) -> None:
        assert self.scheduler is not None
        self.leading = True
        try:
            await self.scheduler.run(stop)
        finally:
            self.leading = False

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 10)
        if self._server is not None:
            await self._server.stop(0.5)
        if self._metrics_server is not None:
            self._metrics_server.shutdown()
        if self.client is not None:
            await self.client.close()

    async def health(self) -> dict[str, object]:
        return {"address": self.address, "metrics": self.metrics_address, "leading": self.leading}


@ray.remote(max_restarts=0, max_concurrency=1000)
class SchedulerActor(SchedulerHost):
    pass
