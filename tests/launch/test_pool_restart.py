"""A node pool that comes back (as Ray re-creates a killed pool actor, on any node): a new
NodePoolHost with the same config takes its nodes over — no second Node or Lease — and
carries their pods on: a Running pod stays Running (same uid, same start time), a pod
bound while the pool was away starts. Against a real gRPC apiserver (in-memory storage)
in simulated time."""

from __future__ import annotations

import pytest

from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.hosts.nodepool import NodePoolHost, NodePoolHostConfig
from services.kubelet import PoolConfig
from services.storage.memory import MemoryStorage
from tests.builders import MakePod
from tests.waiting import eventually

PODS, NODES, LEASES = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]


async def test_a_restarted_pool_takes_its_nodes_and_pods_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a component listening on every interface advertises the host others dial
    monkeypatch.setenv("KUBERA_BIND_HOST", "0.0.0.0")
    monkeypatch.setenv("KUBERA_ADVERTISE_HOST", "127.0.0.1")
    api = ApiServer(MemoryStorage(), ApiServerConfig(bookmark_interval=0.5))
    await api.start()
    server, port = await serve(api)
    config = NodePoolHostConfig(
        apiserver=f"127.0.0.1:{port}",
        template_yaml="",
        total_nodes=2,
        first=0,
        count=2,
        pool=PoolConfig(name="pool-0"),
        time_scale=50.0,
    )

    async def phase(name: str) -> str:
        pod = await api.get_or_none(PODS, "default", name)
        return pod.status.phase if pod is not None else "<gone>"

    async def running(name: str) -> bool:
        return await phase(name) == "Running"

    async def bind(name: str, node: str) -> None:
        pod = MakePod().typed().name(name).namespace("default").node(node)
        await api.create(pod.container("c", "nginx:1.27").obj())

    first = NodePoolHost(config)
    try:
        health = await first.ensure_started()
        assert health["started"] is True
        assert str(health["address"]).startswith("127.0.0.1:")
        nodes = sorted(n.metadata.name for n in (await api.list(NODES))[0])
        await bind("before", nodes[0])
        await eventually(lambda: running("before"), timeout=20)
        before = await api.get_or_none(PODS, "default", "before")
        assert before is not None
    finally:
        await first.stop()  # the process is gone; what it wrote stays

    await bind("meanwhile", nodes[1])  # bound while no kubelet runs its node
    again = NodePoolHost(config)
    try:
        assert (await again.health())["started"] is False
        health = await again.ensure_started()
        assert health["started"] is True and health["address"] != first.address
        # idempotent: the same process, address and state (its CPU and memory move on)
        moving = ("cpu_seconds", "rss_bytes")
        same = {k: v for k, v in (await again.ensure_started()).items() if k not in moving}
        assert same == {k: v for k, v in (await again.health()).items() if k not in moving}
        assert sorted(n.metadata.name for n in (await api.list(NODES))[0]) == nodes
        assert len((await api.list(LEASES))[0]) == 2
        await eventually(lambda: running("meanwhile"), timeout=20)
        after = await api.get_or_none(PODS, "default", "before")
        assert after is not None and after.status.phase == "Running"
        assert after.metadata.uid == before.metadata.uid
        assert after.status.start_time == before.status.start_time
        assert again.pool is not None and len(again.pool.pods) == 2
    finally:
        await again.stop()
        await server.stop(0.2)
        await api.stop()
