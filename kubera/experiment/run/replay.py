"""The `traceReplay` op: pods created and deleted when an Alibaba openb trace says.

The trace's nodes (when the op names a node list) are created first, as plain Node objects.
Then every pod is created at its `creation_time` and deleted at its `deletion_time`, both
offsets from the trace's first creation divided by the op's time scale
(kubera.experiment.spec.trace.schedule). Creates due at the same moment go in one batch; a
replay that falls behind (the apiserver slower than the trace) catches up in bigger
batches rather than stretching the trace. The op ends when every pod is created and every
deletion the trace gives has been done; it does not wait for binds (a trace holds pods no
node fits, which stay pending as they did in the real cluster).
"""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Awaitable, Callable
from typing import Any

from kubera.experiment.spec import trace
from kubera.experiment.spec.ops import TraceReplay

#: Creates objects from their documents (the executor's batched create).
Create = Callable[[list[dict[str, Any]]], Awaitable[object]]
#: Deletes a pod by namespace and name.
DeletePod = Callable[[str, str], Awaitable[None]]


class ReplayError(ValueError):
    """A trace that cannot be read; the message names file and line."""


#: The shortest pause of the replay loop (seconds).
TICK = 0.05


def plan_ticks(events: list[trace.ReplayEvent], now: float) -> tuple[list[Any], list[Any]]:
    """Split `events` (sorted by create_at) into those due at `now` and the rest."""
    i = 0
    while i < len(events) and events[i].create_at <= now:
        i += 1
    return events[:i], events[i:]


async def replay(op: TraceReplay, create: Create, delete_pod: DeletePod) -> None:
    try:
        pods = trace.read_pods(op.pod_trace_path)
        nodes = trace.read_nodes(op.node_trace_path) if op.node_trace_path else []
        events = trace.schedule(pods, time_scale=op.time_scale, limit=op.limit)
    except (trace.TraceError, OSError, ValueError) as e:
        raise ReplayError(f"{op.phase}: {e}") from None
    gpu = op.gpu_resource_name
    if nodes:
        await create([n.to_node(gpu_resource_name=gpu) for n in nodes])
    start = time.monotonic()
    deletes: list[tuple[float, str]] = []  # (due, pod name), a heap
    pending = list(events)
    while pending or deletes:
        now = time.monotonic() - start
        due, pending = plan_ticks(pending, now)
        if due:
            docs = [ev.pod.to_pod(op.namespace, gpu_resource_name=gpu) for ev in due]
            await create(docs)
            for ev in due:
                if ev.delete_at is not None:
                    heapq.heappush(deletes, (ev.delete_at, ev.pod.name))
        gone = []
        while deletes and deletes[0][0] <= now:
            gone.append(heapq.heappop(deletes)[1])
        if gone:
            await asyncio.gather(*(delete_pod(op.namespace, name) for name in gone))
        upcoming = ([pending[0].create_at] if pending else []) + (
            [deletes[0][0]] if deletes else []
        )
        wait = min(upcoming, default=now) - (time.monotonic() - start)
        await asyncio.sleep(min(1.0, max(TICK, wait)))
