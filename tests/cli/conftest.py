"""Fixtures for CLI tests: a real gRPC apiserver on in-memory storage, in a thread.

The CLI runs `asyncio.run` inside each command, so the server cannot share the test's
event loop: it gets its own loop in a background thread, started before the test and
stopped after it, and the tests talk to it over loopback exactly as users do.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import Future

import pytest

from services.apiserver.registry import ApiServer
from services.apiserver.server import serve
from services.storage.memory import MemoryStorage


class _ServerThread:
    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.api: ApiServer | None = None
        self.server = None

    def start(self) -> str:
        self.thread.start()
        fut: Future[int] = asyncio.run_coroutine_threadsafe(self._start(), self.loop)
        port = fut.result(timeout=30)
        return f"127.0.0.1:{port}"

    async def _start(self) -> int:
        self.api = ApiServer(MemoryStorage())
        await self.api.start()
        self.server, port = await serve(self.api)
        return port

    async def _stop(self) -> None:
        if self.server is not None:
            await self.server.stop(grace=None)
        if self.api is not None:
            await self.api.stop()

    def stop(self) -> None:
        try:
            asyncio.run_coroutine_threadsafe(self._stop(), self.loop).result(timeout=30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=30)
            self.loop.close()


@pytest.fixture
def apiserver() -> Iterator[str]:
    """The address ("127.0.0.1:PORT") of a fresh apiserver with empty storage."""
    s = _ServerThread()
    address = s.start()
    try:
        yield address
    finally:
        s.stop()


@pytest.fixture(scope="module")
def shared_apiserver() -> Iterator[str]:
    """One apiserver for a whole module, for tests that build on each other in order."""
    s = _ServerThread()
    address = s.start()
    try:
        yield address
    finally:
        s.stop()
