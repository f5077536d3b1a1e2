"""The servicer's side of per-item authorization (services/auth/grpcauth.py DENIED_ITEMS):
the denied items of a batch answer PERMISSION_DENIED in their places, the others are
applied in order. In-memory storage; the servicer called directly."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest

from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery import codec
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import ApiServerServicer
from services.auth.grpcauth import DENIED_ITEMS
from services.storage.memory import MemoryStorage
from tests.builders import pod

DENIED = grpc.StatusCode.PERMISSION_DENIED.value[0]


class NoMetadata:
    def invocation_metadata(self) -> tuple:
        return ()


@pytest.fixture
async def servicer() -> AsyncIterator[ApiServerServicer]:
    api = ApiServer(MemoryStorage(), ApiServerConfig(watch_cache_capacity=50))
    await api.start()
    try:
        yield ApiServerServicer(api)
    finally:
        await api.stop()
        DENIED_ITEMS.set(None)


async def test_denied_creates_answer_in_their_places(servicer: ApiServerServicer) -> None:
    DENIED_ITEMS.set({1: "item 1 is forbidden"})
    req = pb.BatchCreateRequest(
        resource="pods", objects=[codec.pack(pod(n)) for n in ("a", "b", "c")]
    )
    resp: Any = await servicer.BatchCreate(req, NoMetadata())
    assert [r.code for r in resp.results] == [0, DENIED, 0]
    assert resp.results[1].message == "item 1 is forbidden"
    assert await servicer.api.get_or_none(servicer.api.store.kind(pod("b")), "default", "b") is None


async def test_denied_binds_answer_in_their_places(servicer: ApiServerServicer) -> None:
    for n in ("a", "b"):
        await servicer.api.create(pod(n))
    DENIED_ITEMS.set({0: "no"})
    req = pb.BindBatchRequest(
        binds=[pb.BindRequest(namespace="default", name=n, node_name="n1") for n in ("a", "b")]
    )
    resp: Any = await servicer.BindBatch(req, NoMetadata())
    assert [r.code for r in resp.results] == [DENIED, 0]
    assert resp.results[0].reason == "Forbidden"
    assert resp.results[1].object.type_url.endswith("Pod")
