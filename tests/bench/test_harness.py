"""The bench harness's node guard (`first_lifecycle_taint`, `unless`), with a fake client."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from kubera.bench import harness
from kubera.errors import CliError
from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import GoneError
from services.client import WatchEvent


def node(name: str, *taints: str) -> core_pb2.Node:
    n = core_pb2.Node()
    n.metadata.name = name
    for key in taints:
        n.spec.taints.add(key=key, effect="NoSchedule")
    return n


class FakeClient:
    """Watches replay `streams` in turn (a GoneError entry raises it)."""

    def __init__(self, *streams: list[Any]) -> None:
        self.streams = list(streams)

    async def watch(self, kind: Any, **kw: Any) -> AsyncIterator[WatchEvent]:
        for item in self.streams.pop(0):
            if item is GoneError:
                raise GoneError("too old")
            yield WatchEvent("MODIFIED", item)


async def test_first_lifecycle_taint_names_the_node_and_survives_a_gone_watch() -> None:
    client = FakeClient(
        [node("a"), node("b", "example.com/other"), GoneError],
        [node("a"), node("c", "node.kubernetes.io/unreachable")],
    )
    said = await harness.first_lifecycle_taint(client)
    assert said == "node c was tainted node.kubernetes.io/unreachable:NoSchedule"


async def test_unless_returns_the_waiter_result_or_raises_the_guard_finding() -> None:
    async def value(v: Any, delay: int) -> Any:
        for _ in range(delay):
            await asyncio.sleep(0)
        return v

    waiter = asyncio.create_task(value([1.0], 1))
    assert await harness.unless(waiter, asyncio.create_task(value("x", 50)), "h") == [1.0]
    assert await harness.unless(asyncio.create_task(value(2, 0)), None, "h") == 2

    slow = asyncio.create_task(asyncio.Event().wait())
    with pytest.raises(CliError, match="node n was tainted; rerun"):
        await harness.unless(slow, asyncio.create_task(value("node n was tainted", 0)), "rerun")
    assert slow.cancelled()


async def test_a_broken_guard_guards_nothing() -> None:
    async def broken() -> str:
        raise RuntimeError("watch broke")

    async def later() -> int:
        for _ in range(5):
            await asyncio.sleep(0)
        return 7

    assert (
        await harness.unless(asyncio.create_task(later()), asyncio.create_task(broken()), "") == 7
    )
