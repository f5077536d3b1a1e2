"""Hollow kubelets against a real gRPC apiserver (in-memory storage), in simulated time
(ScaledClock, fast): registration, leases, pod stages, graceful deletion, chaos, node
pressure eviction and the kubelet's admission."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf import json_format

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.apiserver.registry import ApiServer
from services.client import Client
from services.clock import ScaledClock, parse_rfc3339
from services.kubelet.pool import NodePool, PoolConfig
from services.kubelet.template import parse_template, plan_nodes
from tests.builders import MakePod
from tests.harness import control_plane
from tests.waiting import eventually

PODS, NODES, LEASES = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]
SCALE = 50.0


class Env:
    def __init__(self, api: ApiServer, client: Client, pool: NodePool, clock: ScaledClock) -> None:
        self.api, self.client, self.pool, self.clock = api, client, pool, clock

    async def pod(self, name: str, node: str, **extra: Any) -> None:
        p = MakePod().typed().name(name).namespace("default")
        p.annotations(extra.pop("annotations", {})).labels(extra.pop("labels", {}))
        image = extra.pop("image", "nginx:1.27")
        p.node(node).container("c", image, requests=extra.pop("requests", None))
        await self.api.create(p.spec(extra).obj())

    async def get(self, name: str):
        return await self.api.get_or_none(PODS, "default", name)

    async def phase(self, name: str) -> str:
        p = await self.get(name)
        return p.status.phase if p is not None else "<gone>"


def _template(**kind: Any) -> dict:
    base = {
        "name": "n",
        "count": 2,
        "capacity": {"cpu": "4", "memory": "4Gi", "ephemeral-storage": "20Gi", "pods": "10"},
        "stages": {"creatingDelay": "1s", "startDelay": "1s", "jitter": 0},
        "system": {"memory": "100Mi", "ephemeral-storage": "1Gi", "inodes": 1000, "pids": 100},
    }
    base.update(kind)
    return {"zones": 2, "nodes": [base]}


@contextlib.asynccontextmanager
async def running(template: dict, **pool_config: Any) -> AsyncIterator[Env]:
    async with control_plane() as cp:
        clock = ScaledClock(SCALE)
        plans = plan_nodes(parse_template(template))
        pool = await cp.node_pool(plans, config=PoolConfig(seed=1, **pool_config), clock=clock)
        yield Env(cp.api, cp.client, pool, clock)


@pytest.fixture
async def env() -> AsyncIterator[Env]:
    async with running(_template()) as e:
        yield e


async def test_nodes_register_ready_with_template_capacity_zone_labels_and_leases(env: Env) -> None:
    nodes, _ = await env.client.list(NODES)
    assert sorted(n.metadata.name for n in nodes) == ["kubera-node-00000", "kubera-node-00001"]
    zones = sorted(n.metadata.labels["topology.kubernetes.io/zone"] for n in nodes)
    assert zones == ["region-1-a", "region-1-b"]
    for n in nodes:
        ready = {c.type: c.status for c in n.status.conditions}
        assert ready == {
            "Ready": "True",
            "MemoryPressure": "False",
            "DiskPressure": "False",
            "PIDPressure": "False",
        }
        assert n.status.allocatable["cpu"] == "4" and n.status.allocatable["pods"] == "10"
        assert n.metadata.labels["kubernetes.io/hostname"] == n.metadata.name
    leases, _ = await env.client.list(LEASES, namespace="kube-node-lease")
    assert sorted(lease.spec.holder_identity for lease in leases) == sorted(
        n.metadata.name for n in nodes
    )


async def test_leases_are_renewed_every_renew_interval(env: Env) -> None:
    first = await env.api.get(LEASES, "kube-node-lease", "kubera-node-00000")
    t0 = parse_rfc3339(first.spec.renew_time)

    async def renewed() -> bool:
        lease = await env.api.get(LEASES, "kube-node-lease", "kubera-node-00000")
        return parse_rfc3339(lease.spec.renew_time) >= t0 + 10

    await eventually(renewed)


async def test_a_pod_bound_by_node_name_plays_its_stages_to_running(env: Env) -> None:
    await env.pod("web", "kubera-node-00000", requests={"cpu": "100m", "memory": "64Mi"})
    seen: list[str] = []

    async def running_now() -> bool:
        p = await env.get("web")
        states = [json_format.MessageToDict(cs.state) for cs in p.status.container_statuses]
        waiting = [st.get("waiting", {}).get("reason") for st in states]
        if waiting and waiting[0] and waiting[0] not in seen:
            seen.append(waiting[0])
        return p.status.phase == "Running"

    await eventually(running_now)
    p = await env.get("web")
    assert "ContainerCreating" in seen
    assert p.status.host_ip.startswith("10.") and p.status.pod_ip
    assert p.status.start_time and p.status.qos_class == "Burstable"
    assert {c.type: c.status for c in p.status.conditions}["Ready"] == "True"
    assert (
        p.status.container_statuses[0].ready and "running" in p.status.container_statuses[0].state
    )


async def test_a_pod_asking_for_an_extended_resource_its_node_lacks_is_admitted(env: Env) -> None:
    """DRAExtendedResource: the scheduler may have given the resource through a claim (a
    DeviceClass maps it), so the kubelet's admission does not check it against the node
    (upstream's predicate admission delegates such a resource to DRA)."""
    gpu = {"example.com/gpu": "1"}
    p = MakePod().typed().name("gpu").namespace("default").node("kubera-node-00000")
    await env.api.create(p.container("c", "nginx:1.27", requests=gpu, limits=gpu).obj())

    async def running() -> bool:
        return await env.phase("gpu") == "Running"

    await eventually(running)


async def test_deletion_waits_for_the_grace_period_then_removes_the_object(env: Env) -> None:
    await env.pod("g", "kubera-node-00001", terminationGracePeriodSeconds=20)
    await eventually(lambda: _eq(env.phase("g"), "Running"))
    t0 = env.clock.now()
    await env.api.delete(PODS, "default", "g")
    assert (await env.get("g")).metadata.deletion_timestamp  # Terminating first
    await eventually(lambda: _eq(env.phase("g"), "<gone>"))
    assert env.clock.now() - t0 >= 20


@pytest.mark.parametrize(
    ("restart_policy", "failure_rate", "phase"),
    [("Never", 0.0, "Succeeded"), ("Never", 1.0, "Failed"), ("OnFailure", 0.0, "Succeeded")],
)
async def test_run_duration_ends_pods_that_do_not_restart(
    env: Env, restart_policy: str, failure_rate: float, phase: str
) -> None:
    stages = {"runDuration": "5s", "failureRate": failure_rate, "jitter": 0}
    await env.pod(
        "job",
        "kubera-node-00000",
        restartPolicy=restart_policy,
        annotations={"kubera.io/stages": json.dumps(stages)},
    )
    await eventually(lambda: _eq(env.phase("job"), phase))


async def test_an_always_restarting_pod_counts_restarts_and_keeps_running(env: Env) -> None:
    stages = {"runDuration": "3s", "jitter": 0}
    await env.pod("svc", "kubera-node-00000", annotations={"kubera.io/stages": json.dumps(stages)})

    async def restarted() -> bool:
        p = await env.get("svc")
        return (
            bool(p.status.container_statuses) and p.status.container_statuses[0].restart_count >= 2
        )

    await eventually(restarted)
    assert await env.phase("svc") == "Running"


async def test_a_killed_node_stops_renewing_and_its_pods_stop_progressing(env: Env) -> None:
    name = "kubera-node-00001"
    assert env.pool.set_alive([name], False) == ([name], [])
    before = (await env.api.get(LEASES, "kube-node-lease", name)).spec.renew_time
    await env.pod("stuck", name)
    await env.clock.sleep(15)  # past one renew interval and both stage delays
    assert (await env.api.get(LEASES, "kube-node-lease", name)).spec.renew_time == before
    assert (await env.get("stuck")).status.phase == "Pending"
    assert not (await env.get("stuck")).status.container_statuses
    env.pool.set_alive([name], True)
    await eventually(lambda: _eq(env.phase("stuck"), "Running"))
    assert (await env.api.get(LEASES, "kube-node-lease", name)).spec.renew_time != before


async def test_a_leaking_pod_is_evicted_before_a_higher_priority_well_behaved_one() -> None:
    tpl = _template(
        count=1,
        eviction={"evictionHard": {"memory.available": "500Mi"}, "evictionMonitoringPeriod": "2s"},
    )
    tpl["nodes"][0]["eviction"]["evictionHard"]["memory.available"] = "<500Mi"
    async with running(tpl) as env:
        node = "kubera-node-00000"
        leak = {"memory": {"start": "100Mi", "ratePerSecond": "100Mi"}}
        steady = {"memory": {"start": "1Gi"}}
        await env.pod(
            "leaky",
            node,
            requests={"memory": "100Mi"},
            annotations={"kubera.io/usage": json.dumps(leak)},
        )
        high = {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
        await env.api.create(codec.decode(high, validate="strict").obj)
        await env.pod(
            "steady",
            node,
            requests={"memory": "2Gi"},
            priorityClassName="high",
            annotations={"kubera.io/usage": json.dumps(steady)},
        )
        await eventually(lambda: _eq(env.phase("leaky"), "Failed"), timeout=20)
        p = await env.get("leaky")
        assert p.status.reason == "Evicted"
        assert p.status.message.startswith("The node was low on resource: memory.")
        assert await env.phase("steady") == "Running"
        n = await env.api.get(NODES, "", node)
        assert {c.type: c.status for c in n.status.conditions}["MemoryPressure"] == "True"


async def test_a_best_effort_pod_is_rejected_by_a_node_under_memory_pressure() -> None:
    tpl = _template(
        count=1,
        eviction={"evictionHard": {"memory.available": "<500Mi"}, "evictionMonitoringPeriod": "2s"},
    )
    async with running(tpl) as env:
        node = "kubera-node-00000"
        env.pool.inject([node], {"memory": 3900 * 2**20})  # a runaway daemon: no pod to blame

        async def pressured() -> bool:
            n = await env.api.get(NODES, "", node)
            return {c.type: c.status for c in n.status.conditions}["MemoryPressure"] == "True"

        await eventually(pressured, timeout=20)
        await env.pod("be", node)
        await eventually(lambda: _eq(env.phase("be"), "Failed"))
        p = await env.get("be")
        assert (p.status.reason, p.status.message) == (
            "Evicted",
            "The node had condition: [MemoryPressure]. ",
        )
        await env.pod("burst", node, requests={"memory": "10Mi"})

        async def admitted() -> bool:
            # a Burstable pod is admitted and runs; the pressure may then evict it (it
            # is the only pod to blame), but never with the admission words
            p = await env.get("burst")
            return bool(p.status.start_time) and "The node had condition" not in p.status.message

        await eventually(admitted)


async def _eq(got: Any, want: Any) -> bool:
    return (await got) == want


async def test_steps_faster_than_the_watch_lose_nothing_of_the_earlier_status(env: Env) -> None:
    stages = {"creatingDelay": 0, "startDelay": 0, "jitter": 0}
    await env.pod(
        "quick", "kubera-node-00000", annotations={"kubera.io/stages": json.dumps(stages)}
    )
    await eventually(lambda: _eq(env.phase("quick"), "Running"))
    p = await env.get("quick")
    assert p.status.start_time and p.status.qos_class == "BestEffort"
    assert {c.type for c in p.status.conditions} >= {"PodScheduled", "Initialized", "Ready"}


async def test_a_pod_whose_handling_raises_costs_only_that_pod(
    env: Env, caplog: pytest.LogCaptureFixture
) -> None:
    """A bug met with one pod (here: admission raises for it) is logged once with the pod's
    key; the pod next to it on the same node plays its stages; the pool's loops go on."""
    real_admit = env.pool._admit

    def admit(st: Any) -> Any:
        if st.pod.metadata.name == "poison":
            raise OverflowError("int too large to convert")
        return real_admit(st)

    env.pool._admit = admit  # type: ignore[method-assign]
    await env.pod("poison", "kubera-node-00000")
    await env.pod("ok", "kubera-node-00000")
    await eventually(lambda: _eq(env.phase("ok"), "Running"))
    await env.api.patch(PODS, "default", "poison", '{"metadata": {"labels": {"again": "1"}}}')
    await env.pod("later", "kubera-node-00001")
    await eventually(lambda: _eq(env.phase("later"), "Running"))
    failures = [r.getMessage() for r in caplog.records if r.name == "services.kubelet.pool"]
    assert failures == ["pod default/poison: update failed"]
    assert all(not t.done() for t in env.pool._tasks)
