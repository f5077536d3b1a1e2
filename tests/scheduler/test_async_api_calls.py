"""SchedulerAsyncAPICalls against a real gRPC apiserver (in-memory storage): with the
scheduler's writes on its API dispatcher, an apiserver that does not answer a write holds
up that write only. The scheduling loop goes on placing the next pods while a pod's
PodScheduled=False patch (or a bind) hangs, and what hung lands once released. States are
asserted, never durations."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.api import features
from services.client import Client
from services.scheduler.options import SchedulerOptions
from tests.harness import control_plane
from tests.scheduler.test_scheduler_integration import Cluster
from tests.waiting import eventually

ASYNC = {features.SCHEDULER_ASYNC_API_CALLS: True}


class SlowClient(Client):
    """Pods' status patches (`hang="patch"`) or binds (`hang="bind"`) of the pods named
    in `slow` wait until `release` is set; `waiting` counts those on the wire now."""

    hang = "patch"
    slow: frozenset[str] = frozenset()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.release = asyncio.Event()
        self.waiting = 0

    async def _hold(self, name: str, what: str) -> None:
        if what == self.hang and name in self.slow:
            self.waiting += 1
            try:
                await self.release.wait()
            finally:
                self.waiting -= 1

    async def patch(self, kind, name, merge_patch, *, namespace="", status=False):  # type: ignore[no-untyped-def]
        if kind.kind == "Pod" and status:
            await self._hold(name, "patch")
        return await super().patch(kind, name, merge_patch, namespace=namespace, status=status)

    async def bind(self, name, node_name, namespace="default", **kwargs):  # type: ignore[no-untyped-def]
        await self._hold(name, "bind")
        return await super().bind(name, node_name, namespace, **kwargs)


@contextlib.asynccontextmanager
async def _slow_cluster(hang: str, slow: set[str]) -> AsyncIterator[tuple[Cluster, SlowClient]]:
    cls = type("Slow", (SlowClient,), {"hang": hang, "slow": frozenset(slow)})
    async with control_plane() as cp:
        client = cp.new_client(cls)
        sched = cp.scheduler(SchedulerOptions(seed=7, feature_gates=ASYNC), client=client)
        yield Cluster(cp.api, cp.client, sched), client


async def test_the_loop_schedules_on_while_a_pods_status_patch_hangs() -> None:
    async with _slow_cluster("patch", {"huge"}) as (c, client):
        await c.node("n1", cpu="1")
        await c.pod("huge", cpu="3")
        await eventually(lambda: client.waiting == 1)  # its PodScheduled=False, stuck
        for i in range(3):
            await c.pod(f"small{i}")
        bound = await c.wait_bound("small0", "small1", "small2")
        assert bound == {"small0": "n1", "small1": "n1", "small2": "n1"}
        assert client.waiting == 1  # still stuck: nobody waited for it
        assert c.sched.dispatcher is not None and c.sched.dispatcher.in_flight >= 1
        client.release.set()
        assert "Insufficient cpu" in await c.wait_unschedulable("huge")


async def test_the_loop_schedules_on_while_a_bind_hangs() -> None:
    async with _slow_cluster("bind", {"first"}) as (c, client):
        await c.node("n1")
        # A term's first bind goes alone (the others wait for its answer: _Handle.bind).
        await c.pod("warm")
        await c.wait_bound("warm")
        await c.pod("first")
        await eventually(lambda: client.waiting == 1)
        await c.pod("second")
        assert await c.wait_bound("second") == {"second": "n1"}
        assert await c.node_of("first") == ""
        client.release.set()
        assert await c.wait_bound("first") == {"first": "n1"}


@pytest.mark.parametrize("gate", [False, True], ids=["off", "on"])
async def test_the_gate_decides_whether_the_scheduler_has_a_dispatcher(gate: bool) -> None:
    async with control_plane() as cp:
        options = SchedulerOptions(seed=7, feature_gates={features.SCHEDULER_ASYNC_API_CALLS: gate})
        sched = cp.scheduler(options, start=False)
        assert (sched.dispatcher is not None) == gate
        assert sched.cycles.dispatcher is sched.dispatcher
        assert sched.cycles.reporter.dispatcher is sched.dispatcher
    assert not features.enabled(None, features.SCHEDULER_ASYNC_API_CALLS)  # upstream's default
