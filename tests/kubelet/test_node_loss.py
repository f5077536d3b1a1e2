"""The loops closed, in simulated time: a hollow node is lost → the node lifecycle
controller marks it unreachable → taint eviction deletes its pods once their
tolerationSeconds run out → the ReplicaSet replaces them → the scheduler puts the
replacements on other nodes → their kubelets run them. Everything real but Ray and etcd
(in-memory storage): apiserver over gRPC, scheduler, node pool, controller-manager."""

from __future__ import annotations

import asyncio
import contextlib

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.clock import ScaledClock, parse_rfc3339
from services.controllers.manager import ControllerManager
from services.kubelet.pool import PoolConfig
from services.kubelet.template import parse_template, plan_nodes
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler
from tests.harness import control_plane
from tests.waiting import eventually

PODS, RS = BY_KIND["Pod"], BY_KIND["ReplicaSet"]
SCALE = 50.0
TOLERATION_SECONDS = 30


async def test_a_lost_node_has_its_pods_evicted_after_toleration_and_replaced_elsewhere() -> None:
    async with control_plane() as cp:
        api, client = cp.api, cp.client
        clock = ScaledClock(SCALE)
        template = {
            "zones": 2,
            "nodes": [
                {
                    "name": "n",
                    "count": 4,
                    "stages": {"creatingDelay": "1s", "startDelay": "1s", "jitter": 0},
                }
            ],
        }
        pool = await cp.node_pool(
            plan_nodes(parse_template(template)), config=PoolConfig(seed=3), clock=clock
        )
        sched = Scheduler(client, SchedulerOptions(seed=5))
        cm = ControllerManager(client, clock=clock)
        stop = asyncio.Event()
        tasks = [asyncio.create_task(sched.run(stop)), asyncio.create_task(cm.run(stop))]
        try:
            rs = {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {
                    "replicas": 4,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": {
                        "metadata": {"labels": {"app": "web"}},
                        "spec": {
                            "tolerations": [
                                {
                                    "key": "node.kubernetes.io/unreachable",
                                    "operator": "Exists",
                                    "effect": "NoExecute",
                                    "tolerationSeconds": TOLERATION_SECONDS,
                                }
                            ],
                            "containers": [
                                {
                                    "name": "c",
                                    "image": "nginx",
                                    "resources": {"requests": {"cpu": "1"}},
                                }
                            ],
                        },
                    },
                },
            }
            await api.create(codec.decode(rs, validate="strict").obj)

            async def running() -> dict[str, str]:
                items, _ = await client.list(PODS, namespace="default")
                return {
                    p.metadata.name: p.spec.node_name
                    for p in items
                    if p.status.phase == "Running" and not p.metadata.deletion_timestamp
                }

            await eventually(lambda: _count(running(), 4), timeout=20)
            before = await running()
            lost = sorted(before.values())[0]
            victims = {name for name, node in before.items() if node == lost}
            t_lost = clock.now()
            pool.set_alive([lost], False)

            async def evicted() -> bool:
                items, _ = await client.list(PODS, namespace="default")
                gone = [p for p in items if p.metadata.name in victims]
                return all(p.metadata.deletion_timestamp for p in gone)

            await eventually(evicted, timeout=30)
            t_evicted = clock.now()
            node = await client.get(BY_KIND["Node"], lost)
            taint = next(
                t
                for t in node.spec.taints
                if t.key == "node.kubernetes.io/unreachable" and t.effect == "NoExecute"
            )
            # grace (50 s) before the taint, then at least the toleration before the deletion
            assert parse_rfc3339(taint.time_added) - t_lost >= 40
            assert t_evicted - parse_rfc3339(taint.time_added) >= TOLERATION_SECONDS - 1
            await eventually(lambda: _replaced(running(), victims, lost), timeout=30)
            got = await client.get(RS, "web", "default")
            assert got.spec.replicas == 4
        finally:
            stop.set()
            for t in tasks:
                with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError):
                    await asyncio.wait_for(t, 15)


async def _count(got, n: int) -> bool:
    return len(await got) == n


async def _replaced(got, victims: set[str], lost: str) -> bool:
    pods = await got
    return len(pods) == 4 and not victims & pods.keys() and lost not in pods.values()
