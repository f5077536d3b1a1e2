"""One Scheduler driven a pod at a time, without an apiserver, for the batching tests: the
queue pops each pod (so every attempt is a new scheduling cycle), ScheduleOne runs its
cycles, binds succeed at once, and the test says when the informer would confirm a bind."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api import features
from services.clock import FakeClock
from services.scheduler import config as config_mod
from services.scheduler.options import SchedulerOptions
from services.scheduler.scheduler import Scheduler


class StubClient:
    """Answers every call the scheduler makes outside its informers (binds, events, pod
    status) with success; the informers are never started."""

    fencing = None

    def __getattr__(self, name: str) -> Any:
        async def call(*args: Any, **kwargs: Any) -> None:
            return None

        return call


@functools.cache
def _config(config_yaml: str) -> config_mod.SchedulerConfiguration:
    """The configuration of `config_yaml` ("": the default), read once (schedulers only
    read it)."""
    return config_mod.load_config(config_yaml) if config_yaml else config_mod.default_config()


class Harness:
    def __init__(self, config_yaml: str = "", *, batching: bool, seed: int = 1) -> None:
        self.clock = FakeClock()
        cfg = _config(config_yaml)
        options = SchedulerOptions(
            component_config=cfg,
            seed=seed,
            feature_gates={features.OPPORTUNISTIC_BATCHING: batching},
        )
        self.sched = Scheduler(StubClient(), options, clock=self.clock)  # type: ignore[arg-type]
        self.placed: dict[str, str] = {}

    @property
    def batched_pods(self) -> int:
        batching = self.sched.cycles.batching
        return batching.batched_pods if batching is not None else 0

    def add_node(self, node: core_pb2.Node) -> None:
        self.sched.cache.add_node(node)

    def remove_node(self, node: core_pb2.Node) -> None:
        self.sched.cache.remove_node(node)

    async def schedule(self, pod: core_pb2.Pod) -> str:
        """Run the pod's scheduling (and binding) cycle; its node, "" when unschedulable."""
        q = self.sched.queue
        q.add(pod)
        qpi = await q.pop()
        assert qpi is not None and qpi.pod.metadata.uid == pod.metadata.uid
        await self.sched.cycles.schedule_one(qpi)
        await asyncio.gather(*self.sched.cycles.tasks())
        q.delete(pod)  # an unschedulable pod waits no more: the next one is popped
        cached = self.sched.cache.get_pod(pod)
        node = cached.spec.node_name if cached is not None else ""
        if node:
            self.placed[pod.metadata.uid] = node
        return node

    def confirm(self, pod: core_pb2.Pod) -> None:
        """The informer brings the pod bound where it was assumed."""
        bound = core_pb2.Pod()
        bound.CopyFrom(pod)
        bound.spec.node_name = self.placed[pod.metadata.uid]
        self.sched.cache.add_pod(bound)

    def add_bound(self, pod: core_pb2.Pod) -> None:
        """A pod bound by someone else (spec.nodeName set)."""
        self.sched.cache.add_pod(pod)

    def remove_bound(self, pod: core_pb2.Pod) -> None:
        self.sched.cache.remove_pod(pod)

    def counter(self, name: str, **labels: str) -> float:
        value = self.sched.metrics.registry.get_sample_value(name, labels)
        return value or 0.0
