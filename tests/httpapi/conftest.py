"""Fixtures for the HTTP API: the app on an in-memory registry behind aiohttp's test
client (unit tests), and a real apiserver host (gRPC + HTTP on real etcd) in a background
thread for kubectl and the official Python client (end-to-end tests)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from services.api.machinery import codec
from services.apiserver import ApiServer, ApiServerConfig
from services.auth import ALLOW_ALL, Authenticator, Authorizer
from services.hosts.apiserver import ApiServerHost, ApiServerHostConfig
from services.httpapi.app import build_app
from services.storage.memory import MemoryStorage
from tests.harness import etcd_store

#: How long a resourceVersion past the store's is waited for (upstream's 3 s, shortened).
RV_WAIT = 0.3


@pytest.fixture
async def registry() -> AsyncIterator[ApiServer]:
    api = ApiServer(
        MemoryStorage(),
        ApiServerConfig(
            watch_cache_capacity=50, bookmark_interval=0.2, resource_version_wait=RV_WAIT
        ),
    )
    await api.start()
    try:
        yield api
    finally:
        await api.stop()


async def client_for(
    api: ApiServer, authn: Authenticator = ALLOW_ALL, authz: Authorizer = ALLOW_ALL
) -> TestClient:
    client = TestClient(TestServer(build_app(api, authn=authn, authz=authz)))
    await client.start_server()
    return client


@pytest.fixture
async def http(registry: ApiServer) -> AsyncIterator[TestClient]:
    """An HTTP client of the app over `registry` (no auth)."""
    client = await client_for(registry)
    try:
        yield client
    finally:
        await client.close()


def as_json(obj: Any) -> dict[str, Any]:
    """A builder's message as the JSON body a client sends."""
    return codec.encode(obj)


class HostThread:
    """A real ApiServerHost (gRPC and HTTP, on etcd) on its own loop in a thread, since
    kubectl and the Python client block the test's thread."""

    def __init__(self, etcd: str) -> None:
        self.host = ApiServerHost(
            ApiServerHostConfig(etcd=etcd, watch_cache_capacity=200, bookmark_interval=0.5)
        )
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def run(self, coro: Any, timeout: float = 60) -> Any:
        fut: Future[Any] = asyncio.run_coroutine_threadsafe(coro, self.loop)
        return fut.result(timeout=timeout)

    def start(self) -> str:
        self.thread.start()
        self.run(self.host.start())
        return self.host.http_address

    def stop(self) -> None:
        try:
            self.run(self.host.stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout=10)
            self.loop.close()


async def _wipe(endpoint: str) -> None:
    async with etcd_store(endpoint):
        pass  # wiped on connecting


@pytest.fixture(scope="module")
def host(etcd_server: Any) -> Iterator[HostThread]:
    """One real apiserver (HTTP on plain http://127.0.0.1) on a wiped etcd, per module."""
    asyncio.run(_wipe(etcd_server.endpoint))
    h = HostThread(etcd_server.endpoint)
    h.start()
    try:
        yield h
    finally:
        h.stop()


@pytest.fixture(scope="module")
def kubeconfig(host: HostThread, tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("kube") / "config"
    path.write_text(
        "apiVersion: v1\nkind: Config\n"
        f"clusters:\n- name: kubera\n  cluster:\n    server: {host.host.http_address}\n"
        "contexts:\n- name: kubera\n  context: {cluster: kubera, user: admin}\n"
        "current-context: kubera\n"
        "users:\n- name: admin\n  user: {token: unused}\n"
    )
    return path
