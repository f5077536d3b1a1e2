from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import json_format

from services.api.machinery import codec
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.storage import Storage


@contextlib.asynccontextmanager
async def running_apiserver(storage: Storage) -> AsyncIterator[ApiServer]:
    """An apiserver on `storage` with a small watch cache and quick bookmarks."""
    server = ApiServer(storage, ApiServerConfig(watch_cache_capacity=50, bookmark_interval=0.2))
    await server.start()
    try:
        yield server
    finally:
        await server.stop()


@pytest.fixture
async def api(storage: Storage) -> AsyncIterator[ApiServer]:
    async with running_apiserver(storage) as server:
        yield server


def obj(doc: dict[str, Any]):
    """A message from a Kubernetes-shaped dict (through the real codec)."""
    return codec.decode(doc, validate="strict").obj


def as_dict(message) -> dict[str, Any]:
    return json_format.MessageToDict(message)
