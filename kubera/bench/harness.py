"""What the micro-benchmarks share: a pod to create and bounded concurrency; and the guard
that names the node lifecycle controller when it taints API-created nodes (no kubelet, no
lease) past its startup grace period. Each bench module imports this (and
`kubera.testing.Cluster` for its cluster), never another bench. The scheduling scenarios
are experiment files (`kubera bench NAME`, kubera.experiment.run.bench).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf import json_format

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
