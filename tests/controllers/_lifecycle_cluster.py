"""A real gRPC apiserver (in-memory storage) with the node lifecycle and taint eviction
controllers over shared informers, for their tests. There is no kubelet: the tests play
it (register nodes, renew leases, post conditions, bind pods) with the helpers here.

Two ways to drive time:
- `ScaledClock` (the cluster's --time-scale) with the controllers' `run` loops: simulated
  seconds pass `scale` times faster than real ones;
- `FakeClock` without `run`: the test advances time and calls the passes itself
  (`settle` first, so the informers have seen every write).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.api.machinery.meta import object_key
from services.apiserver.registry import ApiServer, ApiServerConfig
from services.apiserver.server import serve
from services.client import Client
from services.client.informer import Informer, SharedInformers
from services.clock import Clock, parse_rfc3339, rfc3339, rfc3339_micro
from services.controllers.nodelifecycle import NodeLifecycleConfig, NodeLifecycleController
from services.controllers.nodelifecycle.health import NODE_LEASE_NAMESPACE
from services.controllers.tainteviction import TaintEvictionConfig, TaintEvictionController
from services.storage.memory import MemoryStorage
from tests.builders import MakeNode, MakePod
from tests.waiting import eventually

NODES, PODS, LEASES, EVENTS = BY_KIND["Node"], BY_KIND["Pod"], BY_KIND["Lease"], BY_KIND["Event"]


def taint_keys(node: core_pb2.Node, effect: str | None = None) -> set[str]:
    return {t.key for t in node.spec.taints if effect is None or t.effect == effect}


def condition(node: core_pb2.Node, type_: str) -> core_pb2.NodeCondition | None:
    return next((c for c in node.status.conditions if c.type == type_), None)


@dataclass
class LifecycleCluster:
    api: ApiServer
    client: Client
    clock: Clock
    informers: SharedInformers
    lifecycle: NodeLifecycleController | None
    eviction: TaintEvictionController | None
    _kubelets: dict[str, asyncio.Task[None]] = field(default_factory=dict)

    # ----------------------------------------------------------- playing kubelet

    def now(self) -> str:
        return rfc3339(self.clock.now())

    async def node(
        self,
        name: str,
        *,
        zone: str = "z1",
        region: str = "r1",
        ready: str = "True",
        labels: dict[str, str] | None = None,
        taints: list[dict[str, Any]] | None = None,
        lease: bool = True,
    ) -> core_pb2.Node:
        """Register a node with a Ready condition (and the pressure conditions False) and
        its Lease, both fresh."""
        now = self.now()
        n = MakeNode().typed().name(name)
        n.labels(
            {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": region,
                **(labels or {}),
            }
        )
        size = {"cpu": "4", "memory": "8Gi", "pods": "110"}
        n.taints(taints or []).capacity(size).allocatable(size)
        for t, s in (
            ("Ready", ready),
            ("MemoryPressure", "False"),
            ("DiskPressure", "False"),
            ("PIDPressure", "False"),
        ):
            n.condition(t, s, last_heartbeat_time=now, last_transition_time=now)
        node = await self.client.create(n.obj())
        if lease:
            await self.renew(name)
        return node  # type: ignore[return-value]

    async def renew(self, name: str) -> None:
        """Renew (or create) the node's Lease now, as the kubelet does every 10 s."""
        renew_time = rfc3339_micro(self.clock.now())
        try:
            lease = await self.client.get(LEASES, name, NODE_LEASE_NAMESPACE)
        except Exception:
            lease = LEASES.new()
            lease.metadata.name = name  # type: ignore[attr-defined]
            lease.metadata.namespace = NODE_LEASE_NAMESPACE  # type: ignore[attr-defined]
            lease.spec.holder_identity = name  # type: ignore[attr-defined]
            lease.spec.lease_duration_seconds = 40  # type: ignore[attr-defined]
            lease.spec.renew_time = renew_time  # type: ignore[attr-defined]
            await self.client.create(lease)
            return
        lease.spec.renew_time = renew_time  # type: ignore[attr-defined]
        await self.client.update(lease)

    def keep_alive(self, *names: str, every: float = 10.0) -> None:
        """Renew the nodes' leases every `every` simulated seconds until `stop_kubelet`."""
        for name in names:

            async def loop(name: str = name) -> None:
                while True:
                    await self.renew(name)
                    await self.clock.sleep(every)

            self._kubelets[name] = asyncio.create_task(loop())

    async def stop_kubelet(self, name: str) -> None:
        task = self._kubelets.pop(name, None)
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def post_status(self, name: str, **statuses: str) -> core_pb2.Node:
        """Post node conditions (type=status) with a fresh heartbeat on every condition,
        as the kubelet's status update does."""
        node: core_pb2.Node = await self.client.get(NODES, name)  # type: ignore[assignment]
        now = self.now()
        for type_, status in statuses.items():
            c = condition(node, type_)
            if c is None:
                c = node.status.conditions.add(type=type_, last_transition_time=now)
            if c.status != status:
                c.last_transition_time = now
            c.status = status
            c.reason = c.message = ""
        for c in node.status.conditions:
            c.last_heartbeat_time = now
        return await self.client.update_status(node)  # type: ignore[return-value]

    async def set_unschedulable(self, name: str, value: bool) -> None:
        await self.client.patch(NODES, name, json.dumps({"spec": {"unschedulable": value}}))

    async def set_taints(self, name: str, taints: list[dict[str, Any]]) -> None:
        await self.client.patch(NODES, name, json.dumps({"spec": {"taints": taints or None}}))

    async def pod(
        self,
        name: str,
        node: str,
        *,
        tolerations: list[dict[str, Any]] | None = None,
        ready: bool = False,
    ) -> core_pb2.Pod:
        """A pod bound to `node` (created with spec.nodeName, as a DaemonSet pod is)."""
        p = MakePod().typed().name(name).namespace("default").node(node).container("c", "i")
        pod: core_pb2.Pod = await self.client.create(p.tolerations(tolerations or []).obj())  # type: ignore[assignment]
        if ready:
            pod.status.phase = "Running"
            pod.status.conditions.add(type="Ready", status="True", last_transition_time=self.now())
            pod = await self.client.update_status(pod)  # type: ignore[assignment]
        return pod

    # ----------------------------------------------------------- looking

    async def get_node(self, name: str) -> core_pb2.Node:
        return await self.client.get(NODES, name)  # type: ignore[return-value]

    async def get_pod(self, name: str) -> core_pb2.Pod | None:
        try:
            return await self.client.get(PODS, name, "default")  # type: ignore[return-value]
        except Exception:
            return None

    async def wait_node(
        self, name: str, pred: Callable[[core_pb2.Node], bool], timeout: float = 10.0
    ) -> core_pb2.Node:
        """Follow the node's watch until `pred` holds; returns the node then."""
        items, rv = await self.client.list(
            NODES, options=ListOptions(field_selector=f"metadata.name={name}")
        )
        if items and pred(items[0]):  # type: ignore[arg-type]
            return items[0]  # type: ignore[return-value]

        async def follow() -> core_pb2.Node:
            async for ev in self.client.watch(
                NODES,
                options=ListOptions(field_selector=f"metadata.name={name}", resource_version=rv),
            ):
                if ev.type != "BOOKMARK" and pred(ev.object):  # type: ignore[arg-type]
                    return ev.object  # type: ignore[return-value]
            raise AssertionError("watch ended")

        return await asyncio.wait_for(follow(), timeout)

    async def wait_pod_deleting(self, name: str, timeout: float = 10.0) -> core_pb2.Pod:
        """Follow the pod until it carries a deletionTimestamp (no kubelet finishes it)."""
        items, rv = await self.client.list(
            PODS, namespace="default", options=ListOptions(field_selector=f"metadata.name={name}")
        )
        if items and items[0].metadata.deletion_timestamp:  # type: ignore[attr-defined]
            return items[0]  # type: ignore[return-value]

        async def follow() -> core_pb2.Pod:
            async for ev in self.client.watch(
                PODS,
                namespace="default",
                options=ListOptions(field_selector=f"metadata.name={name}", resource_version=rv),
            ):
                if ev.object.metadata.deletion_timestamp:  # type: ignore[attr-defined]
                    return ev.object  # type: ignore[return-value]
            raise AssertionError("watch ended")

        return await asyncio.wait_for(follow(), timeout)

    def deleted_at(self, pod: core_pb2.Pod) -> float:
        """When the delete call came (the deletionTimestamp minus the grace period)."""
        return (
            parse_rfc3339(pod.metadata.deletion_timestamp)
            - pod.metadata.deletion_grace_period_seconds
        )

    async def events(self, name: str) -> list[tuple[str, str]]:
        items, _ = await self.client.list(
            EVENTS,
            namespace="default",
            options=ListOptions(field_selector=f"involvedObject.name={name}"),
        )
        return [(e.reason, e.message) for e in items]  # type: ignore[attr-defined]

    async def settle(self, timeout: float = 10.0) -> None:
        """Wait until every informer's store matches the apiserver (FakeClock tests call
        this between writes and passes)."""
        for inf in list(self.informers.informers.values()):
            items, _ = await self.client.list(inf.kind, namespace=inf.namespace)
            want = {object_key(o): o.metadata.resource_version for o in items}  # type: ignore[attr-defined]

            def caught_up(inf: Informer = inf, want: dict[str, str] = want) -> bool:
                have = {k: v.metadata.resource_version for k, v in inf.store.items()}  # type: ignore[attr-defined]
                return have == want

            await eventually(caught_up, timeout)


@contextlib.asynccontextmanager
async def lifecycle_cluster(
    clock: Clock,
    *,
    lifecycle: NodeLifecycleConfig | None | bool = True,
    eviction: TaintEvictionConfig | None | bool = True,
    run: bool = True,
) -> AsyncIterator[LifecycleCluster]:
    """The apiserver and the controllers asked for (True: default config, False: none),
    informers started and synced; with `run` the controllers' loops run too."""
    api = ApiServer(MemoryStorage(), ApiServerConfig(bookmark_interval=0.5), clock=clock)
    await api.start()
    server, port = await serve(api)
    client = Client(f"127.0.0.1:{port}", timeout=10)
    informers = SharedInformers(client, clock=clock)
    nlc = (
        NodeLifecycleController(
            client, informers, config=None if lifecycle is True else lifecycle, clock=clock
        )
        if lifecycle is not False
        else None
    )
    tec = (
        TaintEvictionController(
            client, informers, config=None if eviction is True else eviction, clock=clock
        )
        if eviction is not False
        else None
    )
    informers.start()
    await informers.wait_synced()
    cluster = LifecycleCluster(api, client, clock, informers, nlc, tec)
    stop = asyncio.Event()
    tasks = [asyncio.create_task(c.run(stop)) for c in (nlc, tec) if c is not None and run]
    try:
        yield cluster
    finally:
        stop.set()
        for name in list(cluster._kubelets):
            await cluster.stop_kubelet(name)
        # run() must return promptly once stop is set.
        done, pending = await asyncio.wait(tasks, timeout=5) if tasks else (set(), set())
        for t in pending:
            t.cancel()
        await informers.stop()
        await client.close()
        await server.stop(0.2)
        await api.stop()
        assert not pending, "a controller did not stop promptly"
        for t in done:
            t.result()
