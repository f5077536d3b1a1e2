"""The controller-manager as a Ray actor: node lifecycle, taint eviction, ReplicaSet,
Deployment and PodGC controllers over one set of informers (services/controllers)."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass

import ray

from services.client import Client
from services.clock import clock_for
from services.controllers.manager import ControllerManager


@dataclass(frozen=True)
class ControllerManagerHostConfig:
    apiserver: str
    time_scale: float = 1.0
    time_origin: float = 0.0


class ControllerManagerHost:
    """The plain part of the actor (unit-testable without Ray)."""

    def __init__(self, config: ControllerManagerHostConfig) -> None:
        self.config = config
        self.client: Client | None = None
        self.manager: ControllerManager | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> str:
        self.client = Client(self.config.apiserver, timeout=60)
        clock = clock_for(self.config.time_scale, self.config.time_origin or None)
        self.manager = ControllerManager(self.client, clock=clock)
        self._task = asyncio.create_task(self.manager.run(self._stop))
        return "running"

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._task, 15)
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()

    async def health(self) -> dict[str, object]:
        running = self._task is not None and not self._task.done()
        return {
            "running": running,
            "controllers": list(self.manager.controllers) if self.manager else [],
        }


@ray.remote(max_restarts=0, max_concurrency=1000)
class ControllerManagerActor(ControllerManagerHost):
    pass
