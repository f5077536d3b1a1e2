"""DynamicResources' claim allocations are fenced and, in shared-state mode, recorded
(issue 29), in the whole scheduler against a real gRPC apiserver (in-memory storage):

* a scheduler whose fencing token is stale allocates nothing: PreBind's claim writes
  carry the token and are refused ("stale leader"), as its binds are;
* two shared-state replicas splitting pods whose claims all want one of two network
  devices (a pool on every node, which no node's allocation record covers) never give a
  device twice: the device allocation records refuse the later writer, whose pod is
  retried; the history checker agrees."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.machinery.kinds import BY_KIND
from services.chaos.history import check_history
from services.scheduler import config as config_mod
from services.scheduler.omega import SharedState
from services.scheduler.options import SchedulerOptions
from services.storage.keys import DEVICE_ALLOCATIONS_PREFIX
from tests.builders import (
    MakeNode,
    MakePod,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_slice,
)
from tests.harness import ControlPlane, control_plane
from tests.waiting import eventually

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
DRIVER = "gpu.example.com"
NS = "default"
ELECTION = "/kubera/leaderelection/kube-system/kube-scheduler"


async def _network_gpus(cp: ControlPlane, nodes: int, devices: int) -> None:
    """`nodes` nodes and one pool of `devices` GPUs reachable from all of them."""
    await cp.api.create(device_class("gpu", f'device.driver == "{DRIVER}"'))
    await cp.api.create(
        resource_slice(
            "fabric",
            driver=DRIVER,
            pool="fabric",
            devices=[gpu(f"gpu-{i}", index=i) for i in range(devices)],
            allNodes=True,
        )
    )
    alloc = {"cpu": "8", "memory": "16Gi", "pods": "110"}
    for i in range(nodes):
        await cp.api.create(
            MakeNode().typed().name(f"n{i}").allocatable(alloc).capacity(alloc).obj()
        )


async def _claimed_pod(cp: ControlPlane, name: str) -> None:
    await cp.api.create(resource_claim(f"{name}-gpu", NS, exact_request("gpu", "gpu")))
    pod = (
        MakePod()
        .typed()
        .name(name)
        .namespace(NS)
        .container("c", "i", requests={"cpu": "100m"})
        .resource_claim("gpu", claim=f"{name}-gpu")
        .container_claims("gpu")
        .obj()
    )
    await cp.api.create(pod)


async def _claims(cp: ControlPlane) -> list[resource_pb2.ResourceClaim]:
    items, _ = await cp.client.list(CLAIMS, namespace=NS)
    return items  # type: ignore[return-value]


def _held(claim: resource_pb2.ResourceClaim) -> list[str]:
    return [r.device for r in claim.status.allocation.devices.results]


async def test_a_scheduler_with_a_stale_token_allocates_no_device() -> None:
    async with control_plane() as cp:
        await _network_gpus(cp, nodes=1, devices=1)
        sched = cp.scheduler(fencing=lambda: (ELECTION, 12345))  # a term nobody holds
        await _claimed_pod(cp, "p")

        def refused() -> Any:
            attempts = sched.traces.get("default/p")
            return attempts and attempts[-1].result == "error" and attempts[-1]

        attempt = await eventually(refused)
        assert "DynamicResources" in attempt.message and "stale leader" in attempt.message
        (claim,) = await _claims(cp)
        assert not claim.status.HasField("allocation") and not claim.status.reserved_for
        assert not claim.metadata.finalizers  # PreBind's first write was refused too
        pod: Any = await cp.client.get(PODS, "p", NS)
        assert pod.spec.node_name == ""


@pytest.fixture
async def omega() -> AsyncIterator[ControlPlane]:
    async with control_plane() as cp:
        cfg = config_mod.default_config()
        cfg.pod_initial_backoff_seconds = cfg.pod_max_backoff_seconds = 0.2
        clients = [cp.client, cp.new_client()]
        scheds = [
            cp.scheduler(
                SchedulerOptions(
                    component_config=cfg, seed=i, shared_state=SharedState(i, 2, "hash")
                ),
                client=c,
                start=False,
            )
            for i, c in enumerate(clients)
        ]
        cp.run(*scheds)
        yield cp


async def test_two_shared_state_replicas_never_give_one_device_twice(
    omega: ControlPlane,
) -> None:
    cp = omega
    await _network_gpus(cp, nodes=3, devices=2)
    names = [f"p{i}" for i in range(6)]
    for name in names:
        await _claimed_pod(cp, name)

    async def settled() -> Any:
        pods, _ = await cp.client.list(PODS, namespace=NS)
        bound = [p for p in pods if p.spec.node_name]  # type: ignore[attr-defined]
        waiting = [
            p
            for p in pods
            if any(
                c.type == "PodScheduled" and c.status == "False"
                for c in p.status.conditions  # type: ignore[attr-defined]
            )
        ]
        return len(bound) == 2 and len(waiting) == 4 and bound

    await eventually(settled, timeout=30)
    held = [d for c in await _claims(cp) for d in _held(c)]
    assert sorted(held) == ["gpu-0", "gpu-1"]  # each device once, to a bound pod's claim
    records, _ = await cp.storage.list(DEVICE_ALLOCATIONS_PREFIX)
    assert sorted(kv.key.rsplit("/", 1)[1] for kv in records) == ["gpu-0", "gpu-1"]
    verdict = await check_history(cp.storage, start_revision=1)
    assert verdict.ok, verdict.lines()
    assert verdict.counts.device_allocations >= 2
