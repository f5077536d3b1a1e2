"""The apiserver as a Ray actor: builds EtcdStorage + ApiServer + the gRPC server inside
the actor's event loop and exposes start/stop/health. All logic is in services/."""

from __future__ import annotations

from dataclasses import dataclass

import ray

from services.apiserver.registry import ApiServer
from services.apiserver.server import serve
from services.storage.etcd import EtcdStorage


@dataclass(frozen=True)
class ApiServerConfig:
    etcd: str
    host: str = "127.0.0.1"
    port: int = 0
    watch_cache_capacity: int = 10_000
    bookmark_interval: float = 5.0


class ApiServerHost:
    """The plain part of the actor (unit-testable without Ray)."""

    def __init__(self, config: ApiServerConfig) -> None:
        self.config = config
        self.storage: EtcdStorage | None = None
        self.api: ApiServer | None = None
        self.server = None
        self.address = ""

    async def start(self) -> str:
        self.storage = EtcdStorage(self.config.etcd)
        await self.storage.connect()
        self.api = ApiServer(
            self.storage,
            watch_cache_capacity=self.config.watch_cache_capacity,
            bookmark_interval=self.config.bookmark_interval,
        )
        await self.api.start()
        self.server, port = await serve(self.api, self.config.host, self.config.port)
        self.address = f"{self.config.host}:{port}"
        return self.address

    async def stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=1.0)
        if self.api is not None:
            await self.api.stop()
        if self.storage is not None:
            await self.storage.close()

    async def health(self) -> dict[str, object]:
        rev = await self.storage.revision() if self.storage else 0
        return {"address": self.address, "etcd": self.config.etcd, "revision": rev}


@ray.remote(max_restarts=0, max_concurrency=10_000)
class ApiServerActor(ApiServerHost):
    pass
