"""What the benches share: a pod to create, bounded concurrency, batched creates and bind
timestamps from a watch. Each bench module imports this (and `kubera.testing.Cluster` for
its cluster), never another bench.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from kubera.errors import CliError
from protos.kubera.v1 import core_pb2
from services.api.errors import GoneError
from services.api.kinds import BY_KIND


def pod(name: str, namespace: str = "default") -> core_pb2.Pod:
    """A pause pod requesting 100m CPU and 64Mi, labelled app=bench."""
    return json_format.ParseDict(
        {
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": "bench"}},
            "spec": {
                "containers": [
                    {
                        "name": "app",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
                    }
                ]
            },
        },
        core_pb2.Pod(),
    )


async def bounded(n: int, inflight: int, op: Callable[[int], Awaitable[object]]) -> None:
    """`op(0)` … `op(n - 1)`, at most `inflight` at a time."""
    sem = asyncio.Semaphore(inflight)

    async def one(i: int) -> None:
        async with sem:
            await op(i)

    await asyncio.gather(*(one(i) for i in range(n)))


async def create_all(client: Any, objs: list[Message], chunk: int = 500) -> None:
    """Create `objs` in batches of `chunk`; the first failure raises."""
    for i in range(0, len(objs), chunk):
        res = await client.batch_create(objs[i : i + chunk])
        bad = [r.error for r in res if r.error is not None]
        if bad:
            raise CliError(f"bench: create failed: {bad[0]}")


async def count_binds(
    client: Any,
    group: str,
    n: int,
    timeout: float,
    started: asyncio.Event,
    namespace: str = "default",
) -> list[float]:
    """Timestamps of the binds of `n` pods labelled group=<group>. A watch that falls
    behind the watch cache's window (GoneError, e.g. 20,000 initial pods at once) lists
    again, as a reflector does: binds found by that list are stamped with the list's time."""
    pods = BY_KIND["Pod"]
    selector = f"group={group}"
    bound: dict[str, float] = {}

    async def relist() -> str:
        items, rv = await client.list(pods, namespace=namespace, label_selector=selector)
        now = time.perf_counter()
        for p in items:
            if p.spec.node_name and p.metadata.name not in bound:
                bound[p.metadata.name] = now
        return str(rv)

    rv = await relist()
    started.set()

    async def follow() -> None:
        nonlocal rv
        while len(bound) < n:
            try:
                async for ev in client.watch(
                    pods, namespace=namespace, label_selector=selector, resource_version=rv
                ):
                    if ev.object.spec.node_name and ev.object.metadata.name not in bound:
                        bound[ev.object.metadata.name] = time.perf_counter()
                        if len(bound) >= n:
                            return
            except GoneError:
                rv = await relist()

    try:
        await asyncio.wait_for(follow(), timeout)
    except TimeoutError:
        raise CliError(
            f"bench: only {len(bound)} of {n} pods bound within {timeout:.0f}s"
        ) from None
    return sorted(bound.values())
