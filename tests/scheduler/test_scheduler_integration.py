"""The whole scheduler against a real gRPC apiserver (in-memory storage): informers,
queue, cache, framework and plugins together, as users see the result — where pods land,
and the FailedScheduling words when they cannot."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer
from services.client import Client
from services.scheduler import config as config_mod
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler, merged_hints
from tests.builders import MakeNode, MakePod
from tests.harness import control_plane
from tests.waiting import eventually

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]


class Cluster:
    def __init__(self, api: ApiServer, client: Client, sched: Scheduler) -> None:
        self.api, self.client, self.sched = api, client, sched

    async def node(
        self,
        name: str,
        *,
        zone: str = "z1",
        cpu: str = "4",
        memory: str = "8Gi",
        labels: dict | None = None,
        taints: list | None = None,
    ) -> None:
        n = MakeNode().typed().name(name)
        n.labels(
            {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": zone, **(labels or {})}
        )
        size = {"cpu": cpu, "memory": memory, "pods": "110"}
        await self.api.create(n.taints(taints or []).allocatable(size).capacity(size).obj())
        # Node and pod events reach the scheduler on separate watches: let it see the node
        # before a test creates the pods that are meant to find it.
        await eventually(lambda: name in self.sched.nodes.store)

    async def pod(
        self, name: str, *, cpu: str = "100m", labels: dict | None = None, **spec: Any
    ) -> None:
        p = MakePod().typed().name(name).namespace("default").labels(labels or {})
        p.container("c", "i", requests={"cpu": cpu})
        await self.api.create(p.spec(spec).obj())

    async def wait_bound(self, *names: str, timeout: float = 10.0) -> dict[str, str]:
        """Wait (on the watch, not by sleeping) until every named pod is bound."""
        want = set(names)
        found: dict[str, str] = {}
        items, rv = await self.client.list(PODS, namespace="default")
        for p in items:
            if p.metadata.name in want and p.spec.node_name:
                found[p.metadata.name] = p.spec.node_name
        if want <= found.keys():
            return found

        async def follow() -> None:
            async for ev in self.client.watch(
                PODS, namespace="default", options=ListOptions(resource_version=rv)
            ):
                p = ev.object
                if p.metadata.name in want and p.spec.node_name:
                    found[p.metadata.name] = p.spec.node_name
                    if want <= found.keys():
                        return

        await asyncio.wait_for(follow(), timeout)
        return found

    async def wait_unschedulable(self, name: str, timeout: float = 10.0) -> str:
        """Wait until the pod carries PodScheduled=False; returns its message."""
        items, rv = await self.client.list(
            PODS, namespace="default", options=ListOptions(field_selector=f"metadata.name={name}")
        )

        def msg(p: core_pb2.Pod) -> str | None:
            for c in p.status.conditions:
                if c.type == "PodScheduled" and c.status == "False":
                    return c.message
            return None

        if items and msg(items[0]):
            return msg(items[0]) or ""

        async def follow() -> str:
            async for ev in self.client.watch(
                PODS,
                namespace="default",
                options=ListOptions(field_selector=f"metadata.name={name}", resource_version=rv),
            ):
                m = msg(ev.object)
                if m:
                    return m
            return ""

        return await asyncio.wait_for(follow(), timeout)

    async def node_of(self, name: str) -> str:
        return (await self.client.get(PODS, name, "default")).spec.node_name


async def _cluster(
    cfg: config_mod.SchedulerConfiguration | None = None, fencing=None, gates=None
) -> AsyncIterator[Cluster]:
    async with control_plane() as cp:
        options = SchedulerOptions(component_config=cfg, seed=7, feature_gates=gates or {})
        sched = cp.scheduler(options, fencing=fencing)
        yield Cluster(cp.api, cp.client, sched)


#: Each scheduling rule holds with the scheduler's writes sent inline and through the API
#: dispatcher (SchedulerAsyncAPICalls): nothing a user sees differs.
GATE_VALUES = [{}, {features.SCHEDULER_ASYNC_API_CALLS: True}]
GATE_IDS = ["sync-api-calls", "async-api-calls"]
GATES = pytest.mark.parametrize("gates", GATE_VALUES, ids=GATE_IDS)


@pytest.fixture(params=GATE_VALUES, ids=GATE_IDS)
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[Cluster]:
    async for c in _cluster(gates=request.param):
        yield c


async def test_a_pod_binds_to_a_node_that_fits(cluster: Cluster) -> None:
    await cluster.node("small", cpu="1")
    await cluster.node("big", cpu="8")
    await cluster.pod("p", cpu="2")
    assert await cluster.wait_bound("p") == {"p": "big"}


async def test_a_pod_that_fits_nowhere_stays_pending_with_kubernetes_words(
    cluster: Cluster,
) -> None:
    await cluster.node("n1", cpu="1")
    await cluster.node("n2", cpu="1")
    await cluster.pod("huge", cpu="3")
    msg = await cluster.wait_unschedulable("huge")
    assert msg == (
        "0/2 nodes are available: 2 Insufficient cpu. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    events, _ = await cluster.client.list(
        BY_KIND["Event"],
        namespace="default",
        options=ListOptions(field_selector="involvedObject.name=huge"),
    )
    assert [(e.reason, e.type, e.message) for e in events] == [("FailedScheduling", "Warning", msg)]
    assert [a.result for a in cluster.sched.traces.get("default/huge")][-1] == "unschedulable"


async def test_a_pending_pod_schedules_when_a_node_arrives(cluster: Cluster) -> None:
    await cluster.pod("waiting")
    assert (await cluster.wait_unschedulable("waiting")).startswith("0/0 nodes are available")
    await cluster.node("late")
    assert await cluster.wait_bound("waiting") == {"waiting": "late"}


async def test_taints_repel_pods_without_a_toleration(cluster: Cluster) -> None:
    await cluster.node(
        "tainted", taints=[{"key": "dedicated", "value": "accel", "effect": "NoSchedule"}]
    )
    await cluster.node("cordoned")
    await cluster.api.patch(NODES, "", "cordoned", '{"spec": {"unschedulable": true}}')
    await eventually(lambda: cluster.sched.nodes.store["cordoned"].spec.unschedulable)
    await cluster.pod("plain")
    msg = await cluster.wait_unschedulable("plain")
    assert (
        msg
        == "0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 node(s) were unschedulable. "
        "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    )
    await cluster.pod(
        "tolerant",
        tolerations=[
            {"key": "dedicated", "operator": "Equal", "value": "accel", "effect": "NoSchedule"}
        ],
    )
    assert await cluster.wait_bound("tolerant") == {"tolerant": "tainted"}


async def test_a_gated_pod_schedules_once_ungated(cluster: Cluster) -> None:
    await cluster.node("n1")
    await cluster.pod("gated", schedulingGates=[{"name": "example.com/hold"}])
    await cluster.pod("canary")
    await cluster.wait_bound("canary")
    assert await cluster.node_of("gated") == ""
    assert cluster.sched.queue.pending_pods()["gated"]
    await cluster.api.patch(PODS, "default", "gated", '{"spec": {"schedulingGates": null}}')
    assert await cluster.wait_bound("gated") == {"gated": "n1"}


async def test_preferred_node_affinity_weights_decide(cluster: Cluster) -> None:
    await cluster.node("a", labels={"label-1": "key-1"})
    await cluster.node("b", labels={"label-2": "key-2"})
    pref = [
        {
            "weight": 1,
            "preference": {
                "matchExpressions": [{"key": "label-1", "operator": "In", "values": ["key-1"]}]
            },
        },
        {
            "weight": 50,
            "preference": {
                "matchExpressions": [{"key": "label-2", "operator": "In", "values": ["key-2"]}]
            },
        },
    ]
    await cluster.pod(
        "p", affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": pref}}
    )
    assert await cluster.wait_bound("p") == {"p": "b"}


async def test_anti_affinity_spreads_and_affinity_colocates(cluster: Cluster) -> None:
    for n in ("n1", "n2", "n3"):
        await cluster.node(n)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "store"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    for i in range(3):
        await cluster.pod(f"cache-{i}", labels={"app": "store"}, affinity=anti)
    placed = await cluster.wait_bound("cache-0", "cache-1", "cache-2")
    assert sorted(placed.values()) == ["n1", "n2", "n3"]
    await cluster.pod("cache-3", labels={"app": "store"}, affinity=anti)
    msg = await cluster.wait_unschedulable("cache-3")
    assert "3 node(s) didn't match pod anti-affinity rules" in msg
    co = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "store"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    await cluster.pod("web", affinity=co)
    assert (await cluster.wait_bound("web"))["web"] in {"n1", "n2", "n3"}


async def test_topology_spread_by_zone_and_conflicting_constraints_stay_pending(
    cluster: Cluster,
) -> None:
    await cluster.node("a1", zone="za")
    await cluster.node("a2", zone="za")
    await cluster.node("b1", zone="zb")
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
    for i in range(4):
        await cluster.pod(f"w{i}", labels={"app": "web"}, topologySpreadConstraints=spread)
        await cluster.wait_bound(f"w{i}")
    zones = {"a1": "za", "a2": "za", "b1": "zb"}
    placed = [zones[await cluster.node_of(f"w{i}")] for i in range(4)]
    assert placed.count("za") == 2 and placed.count("zb") == 2
    # Pinned to zone zb while spreading over both zones (nodeAffinityPolicy Ignore): the
    # first fits (zb 3 vs za 2), the second would make the skew 2 and must stay Pending.
    pinned = [{**spread[0], "nodeAffinityPolicy": "Ignore"}]
    zb_only = {"topology.kubernetes.io/zone": "zb"}
    await cluster.pod(
        "fits", labels={"app": "web"}, topologySpreadConstraints=pinned, nodeSelector=zb_only
    )
    assert await cluster.wait_bound("fits") == {"fits": "b1"}
    await cluster.pod(
        "stuck", labels={"app": "web"}, topologySpreadConstraints=pinned, nodeSelector=zb_only
    )
    msg = await cluster.wait_unschedulable("stuck")
    assert msg == (
        "0/3 nodes are available: 1 node(s) didn't match pod topology spread constraints, "
        "2 node(s) didn't match Pod's node affinity/selector. "
        "preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, "
        "2 Preemption is not helpful for scheduling."
    )


async def test_pods_for_an_unknown_scheduler_are_left_alone(cluster: Cluster) -> None:
    await cluster.node("n1")
    await cluster.pod("other", schedulerName="someone-else")
    await cluster.pod("mine")
    await cluster.wait_bound("mine")
    assert await cluster.node_of("other") == ""
    assert cluster.sched.traces.get("default/other") == []


@GATES
async def test_binds_with_a_stale_fencing_token_bind_nothing(gates) -> None:
    stale = ("/kubera/election/kube-scheduler", 12345)
    async for c in _cluster(fencing=lambda: stale, gates=gates):
        await c.node("n1")
        await c.pod("p")

        def bind_refused(c: Cluster = c) -> bool:
            attempts = c.sched.traces.get("default/p")
            return bool(attempts) and attempts[-1].result == "error"

        await eventually(bind_refused)
        assert "stale leader" in c.sched.traces.get("default/p")[-1].message
        assert await c.node_of("p") == ""
        assert c.sched.cache.pod_count() == 0  # the assumed pod was forgotten


async def test_two_profiles_score_differently() -> None:
    yaml_text = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: spread-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
- schedulerName: pack-scheduler
  plugins:
    score:
      disabled:
      - name: NodeResourcesBalancedAllocation
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
"""
    async for c in _cluster(config_mod.load_config(yaml_text)):
        await c.node("busy", cpu="4")
        await c.node("idle", cpu="4")
        await c.pod("filler", cpu="2", nodeName="busy")
        await c.pod("spread", cpu="500m", schedulerName="spread-scheduler")
        await c.pod("pack", cpu="500m", schedulerName="pack-scheduler")
        placed = await c.wait_bound("spread", "pack")
        assert placed == {"spread": "idle", "pack": "busy"}
        # NodeResourcesFit's args differ, so the queue asks both instances' hints
        hints = merged_hints(c.sched.config.profiles, c.sched.frameworks)
        one = c.sched.frameworks["spread-scheduler"].events_to_register()
        assert len(hints["NodeResourcesFit"]) == 2 * len(one["NodeResourcesFit"])
        assert len(hints["NodeAffinity"]) == len(one["NodeAffinity"])


async def test_the_default_profiles_share_dra_state_and_hints(cluster: Cluster) -> None:
    """kubera's two default profiles (default-scheduler; scheduler-plugins-scheduler, with
    Coscheduling): one claim tracker for both DynamicResources (upstream's SharedDRAManager),
    and each default plugin's hints once in the queue, Coscheduling's added."""
    fwks = cluster.sched.frameworks
    assert list(fwks) == ["default-scheduler", "scheduler-plugins-scheduler"]
    default, gangs = (f.plugins["DynamicResources"] for f in fwks.values())
    assert default is not gangs and default.tracker is gangs.tracker
    hints = merged_hints(cluster.sched.config.profiles, fwks)
    one = fwks["default-scheduler"].events_to_register()
    cos = fwks["scheduler-plugins-scheduler"].events_to_register()["Coscheduling"]
    assert hints == {**one, "Coscheduling": cos}


async def test_filter_results_are_reused_until_the_node_changes(cluster: Cluster) -> None:
    for n in ("n1", "n2", "n3"):
        await cluster.node(n)
    for i in range(6):
        await cluster.pod(f"same-{i}")
        await cluster.wait_bound(f"same-{i}")
    eq = cluster.sched.equivalence
    assert eq is not None and eq.hits > 0  # identical pods: verdicts of unchanged nodes reused
    for n in ("n1", "n2", "n3"):  # every node changes: no stale "fits" may be reused
        await cluster.api.patch(
            NODES,
            "",
            n,
            '{"spec": {"taints": [{"key": "k", "value": "v", "effect": "NoSchedule"}]}}',
        )
    # the scheduler must have seen the taints (its node informer) before the pod arrives
    await eventually(lambda: all(n.spec.taints for n in cluster.sched.nodes.store.values()))
    await cluster.pod("same-after")
    assert (
        await cluster.wait_unschedulable("same-after")
        == "0/3 nodes are available: 3 node(s) had untolerated taint(s). "
        "preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )


def test_only_node_local_pods_share_filter_results() -> None:
    from services.scheduler.cache import equivalence
    from services.scheduler.framework.types import PodInfo

    def info(**spec: Any) -> PodInfo:
        return PodInfo(MakePod().name("p").namespace("default").container("c").spec(spec).obj())

    plugins = ["NodeResourcesFit", "TaintToleration"]
    assert equivalence.eligible(info(), plugins, False)
    assert not equivalence.eligible(
        info(), plugins, True
    )  # an existing pod's anti-affinity could reject it
    assert not equivalence.eligible(info(), [*plugins, "MyPlugin"], False)
    spread = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
    assert not equivalence.eligible(info(topologySpreadConstraints=spread), plugins, False)
    a, b = info(nodeSelector={"disk": "ssd"}), info(nodeSelector={"disk": "hdd"})
    assert equivalence.signature(a.pod) != equivalence.signature(b.pod)
    assert equivalence.signature(info().pod) == equivalence.signature(info().pod)
