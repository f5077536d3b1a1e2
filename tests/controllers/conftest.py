"""A real gRPC apiserver (in-memory storage) for the workload controllers' tests, with
shared informers the controllers and the test both read.

There is no kubelet and no scheduler: the tests play them (bind pods, post phases and
Ready conditions). Waiting is done on informer events (`until`) or on a watch, never by
sleeping. The apiserver's clock is the wall clock plus an offset the test may move
(`api_clock.advance`), so creation timestamps can differ without waiting.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any, Protocol

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.listoptions import ListOptions
from services.apiserver.registry import ApiServer
from services.client import Client
from services.client.informer import Handlers, SharedInformers
from services.clock import RealClock, rfc3339
from services.controllers.controller_utils import controller_of, is_pod_active, is_pod_ready
from tests.builders import MakeNode, MakePod
from tests.harness import control_plane

PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
REPLICA_SETS, DEPLOYMENTS = BY_KIND["ReplicaSet"], BY_KIND["Deployment"]
NS = "default"


class Runnable(Protocol):
    async def run(self, stop: asyncio.Event) -> None: ...


class OffsetClock(RealClock):
    """Wall time plus an offset that only moves forward when the test says so."""

    def __init__(self) -> None:
        self.offset = 0.0

    def now(self) -> float:
        return time.time() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


def template(labels: dict[str, str], image: str = "app:v1", **spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": image}], **spec},
    }


class ControllerCluster:
    def __init__(self, api: ApiServer, client: Client, api_clock: OffsetClock) -> None:
        self.api, self.client, self.api_clock = api, client, api_clock
        self.informers = SharedInformers(client)
        self.pods = self.informers.get(PODS)
        self.replica_sets = self.informers.get(REPLICA_SETS)
        self.deployments = self.informers.get(DEPLOYMENTS)
        self.nodes = self.informers.get(NODES)
        self._changed = asyncio.Event()
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    # ------------------------------------------------------------------ lifecycle

    def bump_on(self, *kinds: Kind) -> None:
        """Make `until` re-check on events of these kinds' informers too (call before start)."""
        for kind in kinds:
            self.informers.get(kind).add_handlers(
                Handlers(
                    on_add=lambda o: self._changed.set(),
                    on_update=lambda o, n: self._changed.set(),
                    on_delete=lambda o: self._changed.set(),
                )
            )

    async def start(self, *controllers: Runnable) -> None:
        """Start the informers (after the controllers registered their handlers), wait
        for them to sync, then run the controllers, as the controller-manager does."""
        bump = Handlers(
            on_add=lambda o: self._changed.set(),
            on_update=lambda o, n: self._changed.set(),
            on_delete=lambda o: self._changed.set(),
        )
        for inf in (self.pods, self.replica_sets, self.deployments, self.nodes):
            inf.add_handlers(bump)
        self.informers.start()
        await asyncio.wait_for(self.informers.wait_synced(), 10)
        self._tasks = [asyncio.create_task(c.run(self._stop)) for c in controllers]

    async def stop(self) -> None:
        """Stop the controllers (they must return promptly) and the informers; idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        if self._tasks:
            done, pending = await asyncio.wait(self._tasks, timeout=5)
            assert not pending, "a controller did not return promptly after stop"
            for t in done:
                t.result()  # a controller that crashed fails the test
        await self.informers.stop()

    async def until(self, pred: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until `pred` holds: re-checked on every informer event, and every 20 ms
        for state no event announces (a controller's queue going idle)."""

        async def loop() -> None:
            while not pred():
                self._changed.clear()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.02)

        await asyncio.wait_for(loop(), timeout)

    # ------------------------------------------------------------------ objects

    async def create(self, doc: dict[str, Any]) -> Any:
        return await self.client.create(codec.decode(doc, validate="strict").obj)

    async def replica_set(
        self,
        name: str,
        replicas: int,
        labels: dict[str, str],
        *,
        template_labels: dict[str, str] | None = None,
        min_ready_seconds: int = 0,
    ) -> apps_pb2.ReplicaSet:
        return await self.create(  # type: ignore[no-any-return]
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "replicas": replicas,
                    "minReadySeconds": min_ready_seconds,
                    "selector": {"matchLabels": labels},
                    "template": template(template_labels or labels),
                },
            }
        )

    async def deployment(
        self,
        name: str,
        replicas: int,
        labels: dict[str, str],
        *,
        image: str = "app:v1",
        strategy: dict[str, Any] | None = None,
        **spec: Any,
    ) -> apps_pb2.Deployment:
        return await self.create(  # type: ignore[no-any-return]
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "namespace": NS},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": template(labels, image),
                    **({"strategy": strategy} if strategy else {}),
                    **spec,
                },
            }
        )

    async def pod(self, name: str, labels: dict[str, str], **spec: Any) -> core_pb2.Pod:
        p = MakePod().typed().name(name).namespace(NS).labels(labels).container("c", "app:v1")
        return await self.client.create(p.spec(spec).obj())  # type: ignore[return-value]

    async def node(
        self, name: str, *, ready: bool = True, taints: Sequence[dict[str, str]] = ()
    ) -> None:
        n = MakeNode().typed().name(name).taints(taints)
        n.capacity({"cpu": "4", "memory": "8Gi", "pods": "110"})
        await self.client.create(n.condition("Ready", "True" if ready else "False").obj())

    async def set_status(
        self,
        pod: core_pb2.Pod,
        *,
        phase: str = "Running",
        ready: bool | None = None,
        reason: str = "",
        restarts: int = 0,
        ready_since: float | None = None,
    ) -> core_pb2.Pod:
        """Play the kubelet: post a phase (and a Ready condition) for `pod`."""
        fresh: core_pb2.Pod = await self.client.get(PODS, pod.metadata.name, NS)  # type: ignore[assignment]
        fresh.status.phase = phase
        fresh.status.reason = reason
        if ready is not None:
            del fresh.status.conditions[:]
            fresh.status.conditions.add(
                type="Ready",
                status="True" if ready else "False",
                last_transition_time=rfc3339(ready_since or self.api_clock.now()),
            )
        if restarts:
            del fresh.status.container_statuses[:]
            fresh.status.container_statuses.add(name="c", restart_count=restarts, ready=bool(ready))
        return await self.client.update_status(fresh)

    async def bind(self, pod: core_pb2.Pod, node: str) -> None:
        await self.client.bind(pod.metadata.name, node, NS)

    # ------------------------------------------------------------------ views (cache)

    def pods_of(self, owner: Message, *, active_only: bool = True) -> list[core_pb2.Pod]:
        uid = owner.metadata.uid  # type: ignore[attr-defined]
        out = []
        for p in self.pods.store.values():
            ref = controller_of(p)
            if ref is not None and ref.uid == uid and (is_pod_active(p) or not active_only):  # type: ignore[arg-type]
                out.append(p)
        return sorted(out, key=lambda p: p.metadata.name)  # type: ignore[attr-defined,no-any-return]

    def selected(self, labels: dict[str, str]) -> list[core_pb2.Pod]:
        """Active pods carrying every label of `labels`."""
        out = []
        for p in self.pods.store.values():
            if is_pod_active(p) and all(p.metadata.labels.get(k) == v for k, v in labels.items()):  # type: ignore[attr-defined,arg-type]
                out.append(p)
        return out  # type: ignore[return-value]

    def rs(self, name: str) -> apps_pb2.ReplicaSet | None:
        return self.replica_sets.store.get(f"{NS}/{name}")  # type: ignore[return-value]

    def deploy(self, name: str) -> apps_pb2.Deployment | None:
        return self.deployments.store.get(f"{NS}/{name}")  # type: ignore[return-value]

    def replica_sets_of(self, d: Message) -> list[apps_pb2.ReplicaSet]:
        uid = d.metadata.uid  # type: ignore[attr-defined]
        return [
            rs  # type: ignore[misc]
            for rs in self.replica_sets.store.values()
            if (ref := controller_of(rs)) is not None and ref.uid == uid
        ]


class ReadinessDriver:
    """Plays the kubelet for the pods of a label set: each pod (for which `ready_if` holds)
    is marked Running and Ready as soon as it is seen Pending. `check` (if given) is called with the live pods after
    every watch event, i.e. on every state the cluster passes through, in order."""

    def __init__(
        self,
        cluster: ControllerCluster,
        labels: dict[str, str],
        check: Callable[[dict[str, core_pb2.Pod]], None] | None = None,
        *,
        ready_if: Callable[[core_pb2.Pod], bool] = lambda p: True,
    ) -> None:
        self.cluster, self.labels, self.check, self.ready_if = cluster, labels, check, ready_if
        self.live: dict[str, core_pb2.Pod] = {}
        self.created: list[str] = []
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> ReadinessDriver:
        selector = ",".join(f"{k}={v}" for k, v in self.labels.items())
        items, rv = await self.cluster.client.list(
            PODS, namespace=NS, options=ListOptions(label_selector=selector)
        )
        pods: list[core_pb2.Pod] = items  # type: ignore[assignment]
        for p in pods:
            if is_pod_active(p):
                self.live[p.metadata.name] = p
        self._task = asyncio.create_task(self._follow(selector, rv))
        for p in list(self.live.values()):
            await self._make_ready(p)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    async def _follow(self, selector: str, rv: str) -> None:
        async for ev in self.cluster.client.watch(
            PODS, namespace=NS, options=ListOptions(label_selector=selector, resource_version=rv)
        ):
            if ev.type not in ("ADDED", "MODIFIED", "DELETED"):
                continue
            pod: core_pb2.Pod = ev.object  # type: ignore[assignment]
            name = pod.metadata.name
            if ev.type == "ADDED":
                self.created.append(name)
            if ev.type == "DELETED" or not is_pod_active(pod):
                self.live.pop(name, None)
            else:
                self.live[name] = pod
            if self.check is not None:
                self.check(dict(self.live))
            if name in self.live:
                await self._make_ready(pod)

    async def _make_ready(self, pod: core_pb2.Pod) -> None:
        if pod.status.phase != "Pending" or is_pod_ready(pod) or not self.ready_if(pod):
            return
        target: core_pb2.Pod = codec.clone(pod)  # type: ignore[assignment]
        target.status.phase = "Running"
        del target.status.conditions[:]
        target.status.conditions.add(
            type="Ready", status="True", last_transition_time=rfc3339(self.cluster.api_clock.now())
        )
        # Gone or changed meanwhile: its next event brings it back here if still Pending.
        with contextlib.suppress(NotFoundError, ConflictError):
            await self.cluster.client.update_status(target)


@pytest.fixture
async def cluster() -> AsyncIterator[ControllerCluster]:
    api_clock = OffsetClock()
    async with control_plane(clock=api_clock) as cp:
        c = ControllerCluster(cp.api, cp.client, api_clock)
        try:
            yield c
        finally:
            await c.stop()
