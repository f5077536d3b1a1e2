"""The UI's event stream (services/ui/stream.py) on an in-memory registry: the current
state first, then only what changes, from the watch caches."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import pytest
from aiohttp import ClientResponse
from aiohttp.test_utils import TestClient

from services.api.machinery.errors import GoneError
from services.apiserver import ApiServer
from services.clock import RealClock
from services.storage import Put
from services.storage.keys import REPLICAS_PREFIX
from services.ui.deltas import Coalescer
from services.ui.stream import Feed
from tests.builders import MakeNode, MakePod
from tests.ui.conftest import ui_client

#: Seconds a frame the test waits for may take.
DEADLINE = 10.0


@pytest.fixture
async def ui(registry: ApiServer) -> AsyncIterator[TestClient]:
    client = await ui_client(registry)
    resp = await client.post("/ui/api/tokens")
    token = (await resp.json())["token"]
    assert (await client.get(f"/ui/?token={token}", allow_redirects=False)).status == 303
    yield client
    await client.close()


async def next_frame(resp: ClientResponse) -> tuple[str, Any]:
    async with asyncio.timeout(DEADLINE):
        raw = await resp.content.readuntil(b"\n\n")
    head, data = raw.decode().strip("\n").split("\n")
    return head.removeprefix("event: "), json.loads(data.removeprefix("data: "))


async def frames_until(resp: ClientResponse, done: Any) -> list[tuple[str, Any]]:
    seen: list[tuple[str, Any]] = []
    while not seen or not done(seen):
        seen.append(await next_frame(resp))
    return seen


def synced(frames: list[tuple[str, Any]]) -> set[str]:
    return {data["resource"] for event, data in frames if event == "synced"}


async def test_the_stream_sends_the_state_then_only_the_changes(
    registry: ApiServer, ui: TestClient
) -> None:
    await registry.create(
        MakeNode().name("n1").allocatable({"cpu": "2", "pods": "10"}).typed().obj()
    )
    await registry.create(
        MakePod().typed().name("old").namespace("default").container("c", "pause").obj()
    )
    resp = await ui.get("/ui/api/stream")
    assert resp.status == 200
    assert resp.content_type == "text/event-stream"
    first = await frames_until(resp, lambda seen: synced(seen) >= {"nodes", "pods", "leases"})
    assert first[0][0] == "hello"
    snapshot = [d for event, data in first if event == "deltas" for d in data]
    assert {(d["t"], d["name"]) for d in snapshot} >= {("node", "n1"), ("pod", "old")}

    await registry.create(
        MakePod().typed().name("new").namespace("default").container("c", "pause").obj()
    )
    frames = await frames_until(
        resp,
        lambda seen: any(d.get("name") == "new" for e, data in seen if e == "deltas" for d in data),
    )
    live = [d for event, data in frames if event == "deltas" for d in data]
    pods = [d for d in live if d["t"] == "pod"]
    assert [d["name"] for d in pods] == ["new"]  # a delta, not the list again
    assert pods[0]["phase"] == "Pending"

    await registry.delete(registry_kind("pods"), "default", "new")
    frames = await frames_until(
        resp, lambda seen: any(d.get("gone") for e, data in seen if e == "deltas" for d in data)
    )
    gone = [d for e, data in frames if e == "deltas" for d in data if d.get("gone")]
    assert gone == [{"t": "pod", "ns": "default", "name": "new", "gone": True}]
    resp.close()


def registry_kind(resource: str) -> Any:
    from services.api.machinery.kinds import BY_RESOURCE

    return BY_RESOURCE[resource]


async def test_node_leases_are_not_streamed(registry: ApiServer, ui: TestClient) -> None:
    from protos.kubera.v1 import coordination_pb2

    for ns, name in (("kube-node-lease", "n1"), ("kube-system", "kube-scheduler")):
        lease = coordination_pb2.Lease(api_version="coordination.k8s.io/v1", kind="Lease")
        lease.metadata.name, lease.metadata.namespace = name, ns
        lease.spec.holder_identity = "someone"
        await registry.create(lease, system=True)
    resp = await ui.get("/ui/api/stream")
    frames = await frames_until(resp, lambda seen: "leases" in synced(seen))
    leases = [d for e, data in frames if e == "deltas" for d in data if d["t"] == "lease"]
    assert [(d["ns"], d["name"]) for d in leases] == [("kube-system", "kube-scheduler")]
    resp.close()


async def test_a_trace_without_a_scheduler_says_so(ui: TestClient) -> None:
    resp = await ui.get("/ui/api/trace?namespace=default&name=p")
    assert resp.status == 503
    assert (await resp.json())["message"] == "this cluster runs no scheduler"


async def test_a_trace_needs_a_pod_name(ui: TestClient) -> None:
    assert (await ui.get("/ui/api/trace?namespace=default")).status == 400


async def test_a_replica_whose_process_does_not_answer_is_shown_gone(
    registry: ApiServer, ui: TestClient
) -> None:
    record = {
        "identity": "sched-a",
        "component": "kube-scheduler",
        "pid": 4242,
        "control": "",
        "last_term": {"token": 17, "free_at": 100.0, "acquired_at": 100.5, "first_bind_at": 101.0},
    }
    key = f"{REPLICAS_PREFIX}kube-system/kube-scheduler/sched-a"
    await registry.storage.txn([], [Put(key, json.dumps(record).encode())])
    resp = await ui.get("/ui/api/replicas")
    assert resp.status == 200
    assert (await resp.json())["replicas"] == [
        {
            "lease": "kube-system/kube-scheduler",
            "identity": "sched-a",
            "component": "kube-scheduler",
            "pid": 4242,
            "host": "",
            "mode": "",
            "last_term": {
                "token": 17,
                "acquired_at": 100.5,
                "takeover_seconds": 0.5,
                "first_bind_seconds": 0.5,
            },
            "alive": False,
        }
    ]


class GoneOnceApi:
    """A registry whose pods watch cache holds one pod and whose first watch is answered
    410 Gone (history compacted), the second blocks until cancelled."""

    def __init__(self) -> None:
        self.watches = 0
        self.cache = SimpleNamespace(
            store={"k": SimpleNamespace(obj=MakePod().name("p").namespace("ns").obj())},
            revision=7,
        )

    async def fresh_cache(self, kind: Any) -> Any:
        return self.cache

    async def watch_batches(self, kind: Any, *, options: Any) -> AsyncIterator[list[Any]]:
        self.watches += 1
        if self.watches == 1:
            assert options.resource_version == "7"
            raise GoneError("too old resource version")
        await asyncio.Event().wait()
        yield []


async def test_a_feed_whose_watch_is_gone_resets_and_sends_its_snapshot_again() -> None:
    api = GoneOnceApi()
    frames: list[bytes] = []

    async def send(data: bytes) -> None:
        frames.append(data)

    feed = Feed(api, "pods", Coalescer(), send, RealClock())  # type: ignore[arg-type]
    task = asyncio.create_task(feed.run())
    try:
        async with asyncio.timeout(DEADLINE):
            while api.watches < 2:
                await asyncio.sleep(0.01)
    finally:
        task.cancel()
    events = [f.split(b"\n")[0].decode() for f in frames]
    assert events == [
        "event: deltas",
        "event: synced",
        "event: reset",
        "event: deltas",
        "event: synced",
    ]
    assert json.loads(frames[2].split(b"\n")[1][6:]) == {"resource": "pods"}
