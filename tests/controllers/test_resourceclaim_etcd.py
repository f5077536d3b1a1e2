"""The resourceclaim controller in the controller-manager, on a real etcd behind a real
gRPC apiserver: claims made from templates and recorded in the pods' status, reservations
of finished pods cleared (shared claims deallocated), claims deleted with their pods; and
with a hollow node pool, the kubelet's claim gate in between."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.machinery.errors import ConflictError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.clock import ScaledClock
from services.controllers.manager import ControllerManager, ControllerManagerConfig
from services.controllers.resourceclaim import DELETE_PROTECTION_FINALIZER
from services.kubelet.pool import NodePool, PoolConfig
from services.kubelet.template import parse_template, plan_nodes
from tests.builders import MakePod, exact_request, resource_claim, resource_claim_template
from tests.harness import control_plane, etcd_store
from tests.waiting import eventually

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
NS = "default"


@dataclass
class Cluster:
    client: Client

    async def claims(self) -> dict[str, resource_pb2.ResourceClaim]:
        items, _ = await self.client.list(CLAIMS, namespace=NS)
        return {c.metadata.name: c for c in items}  # type: ignore[attr-defined,misc]

    async def pod(self, name: str) -> core_pb2.Pod:
        return await self.client.get(PODS, name, NS)  # type: ignore[return-value]

    async def set_phase(self, name: str, phase: str) -> None:
        pod = await self.pod(name)
        pod.status.phase = phase
        await self.client.update_status(pod)

    async def reserve(self, claim_name: str, pod_name: str) -> None:
        pod = await self.pod(pod_name)
        claim: resource_pb2.ResourceClaim = await self.client.get(CLAIMS, claim_name, NS)  # type: ignore[assignment]
        if not claim.status.HasField("allocation"):
            # As the scheduler: the finalizer first (an update), then the allocation.
            if DELETE_PROTECTION_FINALIZER not in claim.metadata.finalizers:
                claim.metadata.finalizers.append(DELETE_PROTECTION_FINALIZER)
                try:
                    claim = await self.client.update(claim)  # type: ignore[assignment]
                except ConflictError:
                    await self.reserve(claim_name, pod_name)
                    return
            claim.status.allocation.devices.results.add(
                request="gpu", driver="gpu.example.com", pool="n1", device="gpu-0"
            )
        if any(r.uid == pod.metadata.uid for r in claim.status.reserved_for):
            return  # the controller reserved it already (a pod bound by hand)
        claim.status.reserved_for.add(resource="pods", name=pod_name, uid=pod.metadata.uid)
        try:
            await self.client.update_status(claim)
        except ConflictError:
            await self.reserve(claim_name, pod_name)  # the controller was faster


@pytest.fixture
async def cluster(etcd_server: EtcdProcess) -> AsyncIterator[Cluster]:
    async with etcd_store(etcd_server.endpoint) as storage, control_plane(storage) as cp:
        manager = ControllerManager(
            cp.client, ControllerManagerConfig(controllers=("resourceclaim",))
        )
        task = asyncio.create_task(manager.run(cp.stop_event))
        try:
            yield Cluster(cp.client)
        finally:
            cp.stop_event.set()
            await asyncio.wait_for(task, 15)


async def test_claims_from_templates_live_and_die_with_their_pods(cluster: Cluster) -> None:
    c = cluster.client
    await c.create(
        resource_claim_template("gpu-template", NS, exact_request("gpu", "gpu.example.com"))
    )
    for name in ("a", "b"):
        p = MakePod().typed().name(name).namespace(NS).container("c", "app:v1")
        await c.create(p.node("n1").resource_claim("gpu", template="gpu-template").obj())

    async def recorded() -> dict[str, str] | None:
        out = {}
        for name in ("a", "b"):
            pod = await cluster.pod(name)
            if not pod.status.resource_claim_statuses:
                return None
            out[name] = pod.status.resource_claim_statuses[0].resource_claim_name
        return out

    made = await eventually(recorded)
    claims = await cluster.claims()
    assert set(claims) == set(made.values())
    for pod_name, claim_name in made.items():
        assert claim_name.startswith(f"{pod_name}-gpu-")
        assert claims[claim_name].metadata.owner_references[0].name == pod_name
        await cluster.reserve(claim_name, pod_name)

    # a finishes: its claim loses the reservation and goes; b's claim stays
    await cluster.set_phase("a", "Succeeded")
    await eventually(lambda: _gone(cluster, made["a"]))
    assert made["b"] in await cluster.claims()

    # b is deleted outright: its claim goes with it (no garbage collector in kubera)
    await c.delete(PODS, "b", NS, grace_period_seconds=0)
    await eventually(lambda: _gone(cluster, made["b"]))


async def _gone(cluster: Cluster, claim_name: str) -> bool:
    return claim_name not in await cluster.claims()


async def test_shared_claim_is_released_by_finished_pods(cluster: Cluster) -> None:
    c = cluster.client
    await c.create(resource_claim("shared", NS, exact_request("gpu", "gpu.example.com")))
    for name in ("a", "b"):
        p = MakePod().typed().name(name).namespace(NS).container("c", "app:v1")
        await c.create(p.node("n1").resource_claim("gpu", claim="shared").obj())
        await cluster.reserve("shared", name)

    await cluster.set_phase("a", "Failed")

    async def only_b() -> bool:
        claim = (await cluster.claims())["shared"]
        return [r.name for r in claim.status.reserved_for] == ["b"]

    await eventually(only_b)
    assert (await cluster.claims())["shared"].status.HasField("allocation")

    await cluster.set_phase("b", "Succeeded")

    async def released() -> bool:
        claim = (await cluster.claims())["shared"]
        return not claim.status.reserved_for and not claim.status.HasField("allocation")

    await eventually(released)
    assert "shared" in await cluster.claims(), "a shared claim is deallocated, not deleted"


async def test_a_template_claim_through_the_kubelet_gate(cluster: Cluster) -> None:
    """The whole path but the scheduler (played here): a pod bound to a hollow GPU node
    waits Pending for its claim; the controller makes it from the template; once it is
    allocated and reserved the kubelet runs the pod; when the pod succeeds the claim goes."""
    c = cluster.client
    template = {
        "nodes": [
            {
                "name": "g",
                "count": 1,
                "stages": {
                    "creatingDelay": "1s",
                    "startDelay": "1s",
                    "runDuration": "2s",
                    "jitter": 0,
                },
                "devices": [{"driver": "gpu.example.com", "count": 2, "namePrefix": "gpu"}],
            }
        ]
    }
    pool = NodePool(
        c,
        plan_nodes(parse_template(template)),
        config=PoolConfig(seed=1),
        clock=ScaledClock(50),
    )
    await pool.start()
    try:
        node = pool.nodes[0].name
        items, _ = await c.list(BY_KIND["ResourceSlice"])
        assert [s.spec.node_name for s in items] == [node]  # type: ignore[attr-defined]
        await c.create(
            resource_claim_template("one-gpu", NS, exact_request("gpu", "gpu.example.com"))
        )
        p = MakePod().typed().name("job").namespace(NS).container("c", "app:v1")
        p.spec({"restartPolicy": "Never"})
        await c.create(p.node(node).resource_claim("gpu", template="one-gpu").obj())

        async def claim_made() -> str:
            pod = await cluster.pod("job")
            return (
                pod.status.resource_claim_statuses[0].resource_claim_name
                if pod.status.resource_claim_statuses
                else ""
            )

        name = await eventually(claim_made)
        uid = (await cluster.pod("job")).metadata.uid
        await eventually(lambda: uid in pool.waiting_for_claims)
        assert (await cluster.pod("job")).status.phase == "Pending"

        await cluster.reserve(name, "job")  # the scheduler's part

        async def succeeded() -> bool:
            return (await cluster.pod("job")).status.phase == "Succeeded"

        await eventually(succeeded)
        await eventually(lambda: _gone(cluster, name))
    finally:
        await pool.stop()
