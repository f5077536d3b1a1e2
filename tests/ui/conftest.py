"""Fixtures of the web UI's unit tests: the apiserver's HTTP app with the UI mounted, on
an in-memory registry, behind aiohttp's test client (no browser: tests/e2e/test_ui_e2e.py
has the browser)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.apiserver import ApiServer, ApiServerConfig
from services.auth import ALLOW_ALL, Authenticator, Authorizer
from services.clock import Clock, FakeClock
from services.httpapi.app import build_app
from services.storage.memory import MemoryStorage
from services.ui import build_ui


@pytest.fixture
async def registry() -> AsyncIterator[ApiServer]:
    api = ApiServer(MemoryStorage(), ApiServerConfig(watch_cache_capacity=100))
    await api.start()
    try:
        yield api
    finally:
        await api.stop()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


async def ui_client(
    api: ApiServer,
    *,
    authn: Authenticator = ALLOW_ALL,
    authz: Authorizer = ALLOW_ALL,
    clock: Clock | None = None,
) -> TestClient:
    """The HTTP API with the UI at /ui, as the apiserver host serves them."""
    ui = build_ui(api, authn=authn, authz=authz, clock=clock)
    client = TestClient(TestServer(build_app(api, authn=authn, authz=authz, subapps={"/ui": ui})))
    await client.start_server()
    return client
