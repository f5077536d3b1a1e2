"""DynamicResources in the whole scheduler, against a real gRPC apiserver on real etcd and
the real Allocator and CEL: pods with claims land only where matching devices are free,
never share a device, and a pod that fits nowhere stays Pending with the claim named.

The resourceclaim controller is not running here: the tests make each pod's claim (owned by
the pod, as the controller makes it from a template) and record it in the pod's
status.resourceClaimStatuses themselves."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.cli.scheduling import render_attempts
from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import resource_pb2, scheduling_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.scheduler.options import SchedulerOptions
from services.scheduler.server import attempt_to_proto
from tests.builders import (
    MakePod,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_claim_template,
    resource_slice,
)
from tests.harness import control_plane, etcd_store
from tests.scheduler.test_scheduler_integration import Cluster
from tests.waiting import eventually

PODS, CLAIMS = BY_KIND["Pod"], BY_KIND["ResourceClaim"]
DRIVER = "gpu.example.com"
NS = "default"


@pytest.fixture
async def cluster(etcd_server: EtcdProcess) -> AsyncIterator[Cluster]:
    async with etcd_store(etcd_server.endpoint) as storage, control_plane(storage) as cp:
        yield Cluster(cp.api, cp.client, cp.scheduler(SchedulerOptions(seed=7)))


async def _devices(c: Cluster) -> None:
    """n1: two A100s, n2: two T4s, n3: no devices; the class `a100` selects by model."""
    await c.api.create(device_class("a100", f'device.driver == "{DRIVER}"'))
    for node, model in (("n1", "A100"), ("n2", "T4")):
        await c.api.create(
            resource_slice(
                f"{node}-gpu-example-com",
                driver=DRIVER,
                node=node,
                devices=[gpu(f"gpu-{i}", model=model, index=i) for i in range(2)],
            )
        )
    await c.api.create(
        resource_claim_template(
            "a100",
            NS,
            exact_request("gpu", "a100", f'device.attributes["{DRIVER}"].model == "A100"'),
        )
    )
    for n in ("n1", "n2", "n3"):
        await c.node(n)
    await eventually(lambda: len(c.sched.kind_informers["ResourceSlice"].store) == 2)


async def _template_pod(c: Cluster, name: str, priority_class: str = "") -> None:
    """A pod with a claim from template `a100`, then its claim (owned by it) and the status
    entry naming it, as the resourceclaim controller would make them."""
    pod = (
        MakePod()
        .typed()
        .name(name)
        .namespace(NS)
        .container("c", "i", requests={"cpu": "100m"})
        .resource_claim("gpu", template="a100")
        .container_claims("gpu")
        .obj()
    )
    if priority_class:
        pod.spec.priority_class_name = priority_class
    created = await c.api.create(pod)
    claim = resource_claim(
        f"{name}-gpu",
        NS,
        exact_request("gpu", "a100", f'device.attributes["{DRIVER}"].model == "A100"'),
    )
    claim.metadata.owner_references.add(
        api_version="v1", kind="Pod", name=name, uid=created.metadata.uid, controller=True
    )
    await c.api.create(claim)
    fresh: Any = await c.client.get(PODS, name, NS)
    fresh.status.resource_claim_statuses.add(name="gpu", resource_claim_name=f"{name}-gpu")
    await c.client.update_status(fresh)


async def _claim(c: Cluster, name: str) -> resource_pb2.ResourceClaim:
    return await c.client.get(CLAIMS, name, NS)  # type: ignore[return-value]


def _devices_of(claim: resource_pb2.ResourceClaim) -> set[tuple[str, str, str]]:
    return {(r.driver, r.pool, r.device) for r in claim.status.allocation.devices.results}


async def test_template_claims_land_only_on_free_matching_devices_and_never_share_one(
    cluster: Cluster,
) -> None:
    await _devices(cluster)
    for name in ("p1", "p2", "p3"):
        await _template_pod(cluster, name)
    placed = await cluster.wait_bound("p1", "p2", timeout=20)
    assert placed == {"p1": "n1", "p2": "n1"}

    c1, c2 = await _claim(cluster, "p1-gpu"), await _claim(cluster, "p2-gpu")
    assert _devices_of(c1) and _devices_of(c2)
    assert not _devices_of(c1) & _devices_of(c2)
    for claim, pod in ((c1, "p1"), (c2, "p2")):
        assert [r.name for r in claim.status.reserved_for] == [pod]
        assert list(
            claim.status.allocation.node_selector.node_selector_terms[0].match_fields[0].values
        ) == ["n1"]

    # Both A100s are taken: p3 fits nowhere, and its condition and event name its claim.
    msg = await cluster.wait_unschedulable("p3", timeout=20)
    assert msg.startswith("0/3 nodes are available: ")
    assert "cannot allocate all claims" in msg and "default/p3-gpu" in msg
    assert (await cluster.node_of("p3")) == ""
    events, _ = await cluster.client.list(
        BY_KIND["Event"], namespace=NS, options=ListOptions(field_selector="involvedObject.name=p3")
    )
    assert any(e.reason == "FailedScheduling" and "default/p3-gpu" in e.message for e in events)
    # `kubera explain pod` prints the trace: the DynamicResources rejections name the claim.
    attempts = cluster.sched.traces.get("default/p3")
    rejections = [r for r in attempts[-1].rejections if r.plugin == "DynamicResources"]
    assert sum(r.count for r in rejections) == 3
    assert all("default/p3-gpu" in r.reason for r in rejections)
    shown = render_attempts("default/p3", [attempt_to_proto(attempts[-1])])
    assert (
        "DynamicResources" in shown and "cannot allocate all claims: claim default/p3-gpu" in shown
    )

    # p1's claim is released (deallocated, as the controller does when p1 is gone): p3 fits.
    c1 = await _claim(cluster, "p1-gpu")
    c1.status.ClearField("allocation")
    del c1.status.reserved_for[:]
    await cluster.client.update_status(c1)
    assert await cluster.wait_bound("p3", timeout=20) == {"p3": "n1"}
    c3 = await _claim(cluster, "p3-gpu")
    assert _devices_of(c3) and not _devices_of(c3) & _devices_of(await _claim(cluster, "p2-gpu"))


async def test_a_shared_claim_is_allocated_once_and_reserved_for_every_pod(
    cluster: Cluster,
) -> None:
    await _devices(cluster)
    await cluster.api.create(
        resource_claim(
            "shared",
            NS,
            exact_request("gpu", "a100", f'device.attributes["{DRIVER}"].model == "A100"'),
        )
    )
    for name in ("s1", "s2"):
        pod = (
            MakePod()
            .typed()
            .name(name)
            .namespace(NS)
            .container("c", "i", requests={"cpu": "100m"})
            .resource_claim("gpu", claim="shared")
            .container_claims("gpu")
            .obj()
        )
        await cluster.api.create(pod)
    assert await cluster.wait_bound("s1", "s2", timeout=20) == {"s1": "n1", "s2": "n1"}
    claim = await _claim(cluster, "shared")
    assert len(claim.status.allocation.devices.results) == 1
    assert sorted(r.name for r in claim.status.reserved_for) == ["s1", "s2"]


async def test_a_pod_whose_claim_does_not_exist_waits_until_it_is_created(
    cluster: Cluster,
) -> None:
    await _devices(cluster)
    pod = (
        MakePod()
        .typed()
        .name("w")
        .namespace(NS)
        .container("c", "i", requests={"cpu": "100m"})
        .resource_claim("gpu", claim="later")
        .obj()
    )
    await cluster.api.create(pod)
    await eventually(lambda: cluster.sched.queue.get("default/w") is not None)
    assert (await cluster.node_of("w")) == ""
    # `kubera explain pod w` says who holds it and why, though no cycle has tried it.
    gated = cluster.sched.gated_attempt("default/w")
    assert gated is not None and gated.result == "gated"
    assert gated.message == 'DynamicResources: resourceclaim.resource.k8s.io "later" not found'
    shown = render_attempts("default/w", [attempt_to_proto(gated)])
    assert "gated" in shown and '"later" not found' in shown and "nodes:" not in shown
    await cluster.api.create(
        resource_claim(
            "later",
            NS,
            exact_request("gpu", "a100", f'device.attributes["{DRIVER}"].model == "A100"'),
        )
    )
    assert await cluster.wait_bound("w", timeout=20) == {"w": "n1"}


async def test_preemption_never_evicts_for_devices_the_victims_claims_still_hold(
    cluster: Cluster,
) -> None:
    # Upstream 1.34: every DynamicResources rejection is UnschedulableAndUnresolvable, so
    # preemption does not consider those nodes (evicting a pod does not deallocate its
    # claim; the controller does that later, and its update requeues the pod).
    for name, value in (("low", 0), ("high", 1000)):
        pc = scheduling_pb2.PriorityClass(value=value)
        pc.metadata.name = name
        await cluster.api.create(pc)
    await _devices(cluster)
    for name in ("v1", "v2"):
        await _template_pod(cluster, name, "low")
    assert await cluster.wait_bound("v1", "v2", timeout=20) == {"v1": "n1", "v2": "n1"}
    await _template_pod(cluster, "urgent", "high")
    msg = await cluster.wait_unschedulable("urgent", timeout=20)
    assert "cannot allocate all claims" in msg
    assert msg.endswith(
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    for victim in ("v1", "v2"):
        assert (await cluster.node_of(victim)) == "n1"  # still there, not evicted


async def test_a_device_tainted_by_a_rule_is_given_only_to_a_tolerating_claim(
    cluster: Cluster,
) -> None:
    """drataints: a DeviceTaintRule NoSchedule on both A100s of n1 keeps p1 Pending with the
    taints named; a claim tolerating the taint gets a device, its tolerations copied."""
    await _devices(cluster)
    await eventually(lambda: "DeviceTaintRule" in cluster.sched.kind_informers)
    rule = resource_pb2.DeviceTaintRule()
    rule.metadata.name = "maintenance"
    rule.spec.device_selector.driver = DRIVER
    rule.spec.device_selector.pool = "n1"
    rule.spec.taint.key = "example.com/maintenance"
    rule.spec.taint.effect = "NoSchedule"
    await cluster.api.create(rule)
    await eventually(lambda: len(cluster.sched.kind_informers["DeviceTaintRule"].store) == 1)
    await _template_pod(cluster, "p1")
    msg = await cluster.wait_unschedulable("p1", timeout=20)
    assert "taints the request does not tolerate" in msg, msg

    claim = await _claim(cluster, "p1-gpu")
    tolerating = resource_claim(
        "p2-gpu", NS, exact_request("gpu", "a100", f'device.attributes["{DRIVER}"].model == "A100"')
    )
    tolerating.spec.devices.requests[0].exactly.tolerations.add(
        key="example.com/maintenance", operator="Exists", effect="NoSchedule"
    )
    pod = (
        MakePod()
        .typed()
        .name("p2")
        .namespace(NS)
        .container("c", "i", requests={"cpu": "100m"})
        .resource_claim("gpu", claim="p2-gpu")
        .container_claims("gpu")
        .obj()
    )
    await cluster.api.create(tolerating)
    await cluster.api.create(pod)
    assert await cluster.wait_bound("p2", timeout=20) == {"p2": "n1"}
    got = await _claim(cluster, "p2-gpu")
    (res,) = got.status.allocation.devices.results
    assert [t.key for t in res.tolerations] == ["example.com/maintenance"]
    assert not claim.status.HasField("allocation")
