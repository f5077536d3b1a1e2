"""The what-if over the wire: the scheduler's WhatIf RPC (leader only, sessions by id) and
the apiserver's POST /apis/kubera.io/v1/whatif, which admits the objects (a dry-run
create) and finds the leader through the replicas' records, past a standby."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
import yaml
from aiohttp.test_utils import TestClient, TestServer

from protos.kubera.v1 import scheduler_pb2 as pb
from protos.kubera.v1 import scheduler_pb2_grpc as pb_grpc
from services.auth import Decision, RequestAttributes
from services.httpapi.app import build_app
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler
from services.scheduler.server import serve
from services.scheduler.whatif import remote
from services.storage import Put
from services.storage.keys import election_key, replica_key
from tests.harness import ControlPlane, control_plane
from tests.scheduler.test_scheduler_integration import Cluster


@dataclass
class Host:
    """What the scheduler's server reads of its replica."""

    scheduler: Scheduler
    leading: bool
    mode: str = "leader"
    terms: int = 1
    leader_identity: str = "the-leader"


def pod_doc(name: str, cpu: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": cpu}}}],
            **spec,
        },
    }


async def admitted(wired: Wired, doc: dict[str, Any]) -> pb.WhatIfStep:
    """A Schedule step of the pod as the apiserver admits it (remote.admit)."""
    step = remote.schedule_step(remote.decode_manifest(yaml.safe_dump(doc)))
    request = await remote.admit(pb.WhatIfRequest(steps=[step]), wired.cp.api.create)
    return request.steps[0]


class Wired:
    def __init__(self, cp: ControlPlane, sched: Scheduler) -> None:
        self.cp, self.sched = cp, sched
        self.servers: list[grpc.aio.Server] = []
        self.leader = ""

    async def replica(self, identity: str, *, leading: bool) -> str:
        server, port = await serve(Host(self.sched, leading))
        self.servers.append(server)
        address = f"127.0.0.1:{port}"
        record = {"identity": identity, "component": "kube-scheduler", "scheduler": address}
        key = replica_key("kube-system", "kube-scheduler", identity)
        await self.cp.storage.txn([], [Put(key, json.dumps(record).encode())])
        return address

    async def elect(self, identity: str) -> None:
        key = election_key("kube-system", "kube-scheduler")
        await self.cp.storage.txn([], [Put(key, identity.encode())])


@pytest.fixture
async def wired() -> AsyncIterator[Wired]:
    async with control_plane() as cp:
        sched = cp.scheduler(SchedulerOptions(seed=7))
        w = Wired(cp, sched)
        c = Cluster(cp.api, cp.client, sched)
        await c.node("n1", cpu="2")
        await c.node("n2", cpu="2")
        try:
            yield w
        finally:
            for s in w.servers:
                await s.stop(0)


async def test_only_the_leader_answers_and_sessions_continue_by_id(wired: Wired) -> None:
    standby = await wired.replica("standby", leading=False)
    leader = await wired.replica("leader", leading=True)
    step = await admitted(wired, pod_doc("p", "1"))
    request = pb.WhatIfRequest(steps=[step], keep=True)
    async with grpc.aio.insecure_channel(standby) as ch:
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await pb_grpc.SchedulerStub(ch).WhatIf(request)
    assert e.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert "is not the leader (the-leader is)" in (e.value.details() or "")
    async with grpc.aio.insecure_channel(leader) as ch:
        stub = pb_grpc.SchedulerStub(ch)
        first = await stub.WhatIf(request)
        assert first.session and [p.result for p in first.steps[0].pods] == ["scheduled"]
        more = await stub.WhatIf(pb.WhatIfRequest(session=first.session, steps=[step]))
    # the session goes on from step 1: the same pod again is refused as existing
    assert [s.step for s in more.steps] == [1, 2] and more.session == first.session
    assert more.steps[1].pods[0].result == "error"
    assert "already exists" in more.steps[1].pods[0].reasons[0]


async def test_a_refused_step_leaves_the_session_as_it_was(wired: Wired) -> None:
    leader = await wired.replica("leader", leading=True)
    pod = await admitted(wired, pod_doc("p", "1"))
    async with grpc.aio.insecure_channel(leader) as ch:
        stub = pb_grpc.SchedulerStub(ch)
        first = await stub.WhatIf(pb.WhatIfRequest(steps=[pod], keep=True))
        node = first.steps[0].pods[0].node
        bad = pb.WhatIfRequest(
            session=first.session,
            steps=[pb.WhatIfStep(delete_node=node), pb.WhatIfStep(delete_node="nope")],
        )
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.WhatIf(bad)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert 'node "nope" not found' in (e.value.details() or "")
        same = await stub.WhatIf(pb.WhatIfRequest(session=first.session))
        assert [s.op for s in same.steps] == ["schedule"]  # the delete-node was undone
        closed = await stub.WhatIf(pb.WhatIfRequest(session=first.session, close=True))
        assert closed.session == ""
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.WhatIf(pb.WhatIfRequest(session=first.session))
        assert e.value.code() == grpc.StatusCode.NOT_FOUND


class DenyPods:
    """Allows everything but creating pods in namespace "locked"."""

    def authorize(self, attrs: RequestAttributes) -> Decision:
        if attrs.resource == "pods" and attrs.namespace == "locked":
            return Decision(False, "no")
        return Decision(True)


async def test_the_http_endpoint_admits_the_pods_and_asks_the_leader(wired: Wired) -> None:
    await wired.replica("standby", leading=False)
    await wired.replica("leader", leading=True)
    await wired.elect("standby")  # a stale holder: its replica refuses, the next answers
    client = TestClient(TestServer(build_app(wired.cp.api, authz=DenyPods())))
    await client.start_server()
    try:
        revision = await wired.cp.storage.revision()
        manifest = yaml.safe_dump_all([pod_doc("a", "1500m"), pod_doc("b", "1500m")])
        r = await client.post("/apis/kubera.io/v1/whatif", json={"manifest": manifest})
        assert r.status == 200, await r.text()
        doc = await r.json()
        assert doc["kind"] == "WhatIfResult" and doc["leader"]
        pods = doc["steps"][0]["pods"]
        assert [p["result"] for p in pods] == ["scheduled", "scheduled"]
        assert {p["node"] for p in pods} == {"n1", "n2"}  # 1.5 of 2 cpu: one each
        assert pods[0]["attempt"]["nodesTotal"] == 2
        assert await wired.cp.storage.revision() == revision

        locked = {
            "steps": [
                {
                    "schedule": {
                        "pods": [
                            {**pod_doc("x", "1"), "metadata": {"name": "x", "namespace": "locked"}}
                        ]
                    }
                }
            ]
        }
        r = await client.post("/apis/kubera.io/v1/whatif", json=locked)
        assert r.status == 403
        bad = {"manifest": yaml.safe_dump(pod_doc("y", "1", containers=[]))}
        r = await client.post("/apis/kubera.io/v1/whatif", json=bad)
        assert r.status == 422, await r.text()
        r = await client.post("/apis/kubera.io/v1/whatif", json={"session": "gone"})
        assert r.status == 404
        r = await client.get("/apis/kubera.io/v1/whatif")
        assert r.status == 405
    finally:
        await client.close()
