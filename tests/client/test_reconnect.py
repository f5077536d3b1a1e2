"""Clients outlive their apiserver: when its process dies and a new one serves on the same
address (actors/apiserver.py), a client's calls and an informer's watch fail UNAVAILABLE
for the outage — retried, never fatal — and resume by themselves, directly or through a
replica's partition relay."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

import grpc
import pytest

from services.api.machinery.errors import UnavailableError
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.chaos.relay import Relay
from services.client import Client
from services.client.informer import Informer
from services.storage.memory import MemoryStorage
from tests.builders import pod
from tests.waiting import eventually

PODS = BY_KIND["Pod"]
#: How long the apiserver stays away: long enough that uncapped backoffs (the informer's
#: old 5 s cap, gRPC's default redial backoff of 1 s x1.6) would next retry seconds after
#: it is back, which CATCH_UP does not allow.
OUTAGE = 3.5
#: How soon after it is back every client must have noticed: retries and redials are
#: capped at 0.25 s; the rest is slack for a loaded machine.
CATCH_UP = 1.5


@dataclass
class Restartable:
    """An apiserver on one storage and one port that can die and come back."""

    storage: MemoryStorage
    api: ApiServer | None = None
    server: grpc.aio.Server | None = None
    port: int = 0

    async def start(self) -> None:
        self.api = ApiServer(
            self.storage, ApiServerConfig(watch_cache_capacity=10, bookmark_interval=0.1)
        )
        await self.api.start()
        self.server, self.port = await serve(self.api, port=self.port)

    async def kill(self) -> None:
        """Every connection dropped at once, the watch cache gone (a new process)."""
        assert self.server is not None and self.api is not None
        await self.server.stop(None)
        await self.api.stop()
        self.server = None

    async def stop(self) -> None:
        if self.server is not None:
            await self.kill()


@pytest.fixture
async def apiserver() -> AsyncIterator[Restartable]:
    a = Restartable(MemoryStorage())
    await a.start()
    try:
        yield a
    finally:
        await a.stop()


@contextlib.asynccontextmanager
async def dial(apiserver: Restartable, through_relay: bool) -> AsyncIterator[Client]:
    relay = await Relay.start("127.0.0.1", apiserver.port) if through_relay else None
    client = Client(relay.address if relay else f"127.0.0.1:{apiserver.port}", timeout=5)
    try:
        yield client
    finally:
        await client.close()
        if relay is not None:
            await relay.close()


@pytest.mark.parametrize("through_relay", [False, True], ids=["direct", "relay"])
async def test_informer_retries_a_broken_watch_and_catches_up_after_the_restart(
    apiserver: Restartable, through_relay: bool
) -> None:
    async with dial(apiserver, through_relay) as client:
        await client.create(pod("before"))
        await client.create(pod("doomed"))
        informer = Informer(client, PODS)
        task = asyncio.create_task(informer.run())
        try:
            await asyncio.wait_for(informer.synced.wait(), 10)
            await apiserver.kill()
            await asyncio.sleep(OUTAGE)  # the outage itself: nothing to wait for
            assert not task.done(), "the informer gave up while the apiserver was away"
            await apiserver.start()  # the new process, on the same port
            assert apiserver.api is not None
            back = time.monotonic()
            await apiserver.api.create(pod("after"))
            await apiserver.api.delete(PODS, "default", "doomed")
            await eventually(
                lambda: set(informer.store) == {"default/before", "default/after"}, CATCH_UP
            )
            assert time.monotonic() - back < CATCH_UP
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_calls_fail_unavailable_while_it_is_away_and_work_once_it_is_back(
    apiserver: Restartable,
) -> None:
    async with dial(apiserver, through_relay=False) as client:
        await client.health()
        await apiserver.kill()
        with pytest.raises(UnavailableError):
            await client.create(pod("lost"))
        await asyncio.sleep(OUTAGE)  # the outage itself: nothing to wait for
        await apiserver.start()

        async def created() -> bool:
            with contextlib.suppress(UnavailableError):
                return (await client.create(pod("back"))).metadata.name == "back"
            return False

        await eventually(created, CATCH_UP, interval=0.02)
