"""What the benches share: a pod to create, bounded concurrency, batched creates and bind
timestamps from a watch. Each bench module imports this (and `kubera.testing.Cluster` for
its cluster), never another bench.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from kubera.errors import CliError
from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import GoneError
from services.api.machinery.kinds import BY_KIND


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
                # WatchBatches: one message for what is ready, not one per event (the
                # bench's own CPU per pod is on the same cores as what it measures).
                async for batch in client.watch_batches(
                    pods, namespace=namespace, label_selector=selector, resource_version=rv
                ):
                    now = time.perf_counter()
                    for ev in batch:
                        if ev.object.spec.node_name and ev.object.metadata.name not in bound:
                            bound[ev.object.metadata.name] = now
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


#: The taints the node lifecycle controller puts on a node it stopped hearing from.
LIFECYCLE_TAINTS = ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready")
#: How often a node watch that fell behind (GoneError) starts over before giving up.
WATCH_RESTARTS = 100


async def first_lifecycle_taint(client: Any) -> str:
    """Wait until some node carries one of LIFECYCLE_TAINTS; say which. The benches' API
    nodes have no kubelet and no lease: a controller-manager taints them once its startup
    grace period runs out, and pods stop binding to them."""
    nodes = BY_KIND["Node"]
    for _ in range(WATCH_RESTARTS):
        try:
            async for ev in client.watch(nodes):
                for t in ev.object.spec.taints:
                    if t.key in LIFECYCLE_TAINTS:
                        return f"node {ev.object.metadata.name} was tainted {t.key}:{t.effect}"
        except GoneError:
            continue
    raise CliError("bench: the node watch kept falling behind")


async def unless(waiter: asyncio.Task[Any], guard: asyncio.Task[str] | None, hint: str) -> Any:
    """`waiter`'s result, unless `guard` finishes first: then cancel `waiter` and raise a
    CliError with what the guard saw and `hint`. A guard that failed (its watch broke)
    guards nothing: `waiter` is awaited alone."""
    if guard is None:
        return await waiter
    await asyncio.wait({waiter, guard}, return_when=asyncio.FIRST_COMPLETED)
    if waiter.done() or guard.cancelled() or guard.exception() is not None:
        return await waiter
    waiter.cancel()
    with contextlib.suppress(BaseException):
        await waiter
    raise CliError(f"bench: {guard.result()}; {hint}")
