"""Preemption end to end against a real gRPC apiserver (in-memory storage): a high-priority
pod that fits nowhere evicts the minimal victims on the node upstream's rules choose (a
PodDisruptionBudget steers it away), is nominated there and bound once they are gone; a
preemptionPolicy Never pod stays pending and evicts nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, policy_pb2, scheduling_pb2
from services.api.machinery.errors import NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.scheduler.options import SchedulerOptions
from tests.harness import control_plane
from tests.scheduler.test_scheduler_integration import Cluster
from tests.waiting import eventually

PODS = BY_KIND["Pod"]


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    async with control_plane() as cp:
        yield Cluster(cp.api, cp.client, cp.scheduler(SchedulerOptions(seed=7)))


async def gone(cluster: Cluster, name: str) -> bool:
    try:
        await cluster.client.get(PODS, name, "default")
    except NotFoundError:
        return True
    return False


async def get(cluster: Cluster, name: str) -> core_pb2.Pod:
    pod: Any = await cluster.client.get(PODS, name, "default")
    return pod


async def guarded_and_plain(cluster: Cluster) -> None:
    """Two 1-cpu nodes, each full with a 900m pod of PriorityClass "low": "guarded" on n1
    (a PodDisruptionBudget allows it no disruption) and "plain" on n2; the scheduler has
    seen them and the budget."""
    await cluster.node("n1", cpu="1")
    await cluster.node("n2", cpu="1")
    low = {"priorityClassName": "low", "terminationGracePeriodSeconds": 0}
    await cluster.pod("guarded", cpu="900m", labels={"app": "guarded"}, nodeName="n1", **low)
    await cluster.pod("plain", cpu="900m", labels={"app": "plain"}, nodeName="n2", **low)
    budget = policy_pb2.PodDisruptionBudget()
    budget.metadata.name, budget.metadata.namespace = "guard", "default"
    budget.spec.selector.match_labels["app"] = "guarded"
    budget.spec.min_available = "1"
    await cluster.api.create(budget)
    await eventually(lambda: cluster.sched.pdbs is not None and cluster.sched.pdbs.store)
    await eventually(
        lambda: sum(1 for p in cluster.sched.pods.store.values() if p.spec.node_name) == 2
    )


async def test_a_high_priority_pod_preempts_the_minimal_victims_the_pdb_allows(
    cluster: Cluster,
) -> None:
    for name, value, policy in (
        ("low", 0, "PreemptLowerPriority"),
        ("high", 1000, "PreemptLowerPriority"),
        ("high-never", 1000, "Never"),
    ):
        pc = scheduling_pb2.PriorityClass(value=value, preemption_policy=policy)
        pc.metadata.name = name
        await cluster.api.create(pc)
    await guarded_and_plain(cluster)

    await cluster.pod("never", cpu="900m", priorityClassName="high-never")
    msg = await cluster.wait_unschedulable("never")
    assert msg == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    assert not await gone(cluster, "plain") and not await gone(cluster, "guarded")

    await cluster.pod("urgent", cpu="900m", priorityClassName="high")
    assert await cluster.wait_bound("urgent", timeout=20) == {"urgent": "n2"}
    assert await gone(cluster, "plain")
    assert not await gone(cluster, "guarded")
    urgent = await get(cluster, "urgent")
    assert urgent.status.nominated_node_name in ("n2", "")
    events, _ = await cluster.client.list(
        BY_KIND["Event"],
        namespace="default",
        options=ListOptions(field_selector="involvedObject.name=plain"),
    )
    assert [e.reason for e in events] == ["Preempted"]
    trace = cluster.sched.traces.get("default/urgent")
    decision = next(a.preemption for a in trace if a.preemption is not None)
    assert decision.node == "n2" and decision.victims == ["default/plain"]
    # both nodes were candidates; the one whose victim violates no budget was chosen
    assert sorted((n, k) for n, _, k in decision.candidates) == [("n1", 1), ("n2", 0)]
    # the Never pod is still pending and evicted nothing
    assert not (await get(cluster, "never")).spec.node_name


async def test_the_preemptor_is_nominated_and_waits_while_its_victim_terminates(
    cluster: Cluster,
) -> None:
    for name, value in (("low", 0), ("high", 1000)):
        pc = scheduling_pb2.PriorityClass(value=value)
        pc.metadata.name = name
        await cluster.api.create(pc)
    await cluster.node("n1", cpu="1")
    graceful = {"priorityClassName": "low", "terminationGracePeriodSeconds": 30}
    await cluster.pod("victim", cpu="900m", nodeName="n1", **graceful)
    await eventually(lambda: any(p.spec.node_name for p in cluster.sched.pods.store.values()))
    await cluster.pod("urgent", cpu="900m", priorityClassName="high")

    async def nominated() -> bool:
        return (await get(cluster, "urgent")).status.nominated_node_name == "n1"

    for _ in range(100):
        if await nominated():
            break
        await asyncio.sleep(0.05)
    assert await nominated()
    victim = await get(cluster, "victim")
    assert victim.metadata.deletion_timestamp
    cond = next(c for c in victim.status.conditions if c.type == "DisruptionTarget")
    assert (cond.status, cond.reason, cond.message) == (
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    )
    assert not (await get(cluster, "urgent")).spec.node_name
    # the kubelet would confirm the deletion after the grace period: do it now
    await cluster.client.delete(PODS, "victim", "default", grace_period_seconds=0)
    assert await cluster.wait_bound("urgent", timeout=20) == {"urgent": "n1"}


async def test_with_default_preemption_disabled_the_pod_stays_pending_and_evicts_nothing() -> None:
    from services.scheduler.config import load

    cfg = load.load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "  plugins:\n"
        "    postFilter:\n"
        "      disabled:\n"
        "      - name: DefaultPreemption\n"
        # The default profile's other PostFilter plugin (it deallocates idle claims).
        "      - name: DynamicResources\n"
    )
    assert "DefaultPreemption" not in cfg.profiles[0].names("postFilter")
    async with control_plane() as cp:
        sched = cp.scheduler(SchedulerOptions(component_config=cfg, seed=7))
        cluster = Cluster(cp.api, cp.client, sched)
        for name, value in (("low", 0), ("high", 1000)):
            pc = scheduling_pb2.PriorityClass(value=value)
            pc.metadata.name = name
            await cp.api.create(pc)
        await cluster.node("n1", cpu="1")
        await cluster.pod(
            "victim",
            cpu="900m",
            nodeName="n1",
            priorityClassName="low",
            terminationGracePeriodSeconds=0,
        )
        await eventually(lambda: any(p.spec.node_name for p in sched.pods.store.values()))
        await cluster.pod("urgent", cpu="900m", priorityClassName="high")
        assert await cluster.wait_unschedulable("urgent") == (
            "0/1 nodes are available: 1 Insufficient cpu."
        )
        assert not await gone(cluster, "victim")
        assert sched.pdbs is None  # no PostFilter plugin: no PDB informer either
