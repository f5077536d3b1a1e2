"""The `memoryPressure` op (hollow nodes): how fast the eviction managers react, as
`kubera bench nodes` measured it.

`nodes` nodes, spread over the sorted names, get at once a node-level usage (the pools'
InjectUsage) that leaves `leave` bytes of memory available: capacity − the system's share
(the node template's first kind, as the old bench read its template) − the memory the
node's pods use (their usage annotations) − leave. With the default 50Mi under the 100Mi
hard threshold one 100Mi pod's eviction resolves it. The reaction is the time from the
injection until every one of them has a pod Failed with reason Evicted (a pod watch from
before the injection); also in monitoring periods (the kubelets' clock: `time_scale`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Sequence
from typing import Any

from kubera.experiment.measure.nodes import reaction_periods
from kubera.launch.credentials import admin_channel
from services.api.helpers.usage import USAGE_ANNOTATION, UsageSpecError, parse_usage
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.listoptions import ListOptions
from services.api.machinery.quantity import parse_quantity
from services.client import Client
from services.kubelet import default_template, load_template

RPC_TIMEOUT = 30.0


def targets(names: Iterable[str], count: int) -> list[str]:
    """`count` of the node names, spread evenly over them sorted."""
    ordered = sorted(names)
    k = min(count, len(ordered))
    if k <= 0:
        return []
    return ordered[:: max(1, len(ordered) // k)][:k]


def system_memory(template_text: str | None) -> int:
    """The system's memory on a node of the template (its first kind; kubera's default
    template when none)."""
    template = load_template(template_text) if template_text else default_template()
    return int(template.kinds[0].system["memory"])


def pod_memory(pod: Any) -> int:
    """The memory a pod uses now by its usage annotation (0 without one)."""
    text = pod.metadata.annotations.get(USAGE_ANNOTATION, "")
    if not text:
        return 0
    try:
        usage = parse_usage(text).get("memory")
    except UsageSpecError:
        return 0
    return usage.at(0.0) if usage is not None else 0


def injections(
    nodes: Sequence[Any], pods: Iterable[Any], chosen: Iterable[str], system: int, leave: int
) -> dict[str, int]:
    """Node name → the node-level memory usage that leaves `leave` bytes available."""
    want = set(chosen)
    used = dict.fromkeys(want, 0)
    for p in pods:
        node = p.spec.node_name
        if node in want and p.status.phase not in ("Succeeded", "Failed"):
            used[node] += pod_memory(p)
    out: dict[str, int] = {}
    for n in nodes:
        name = n.metadata.name
        if name in want:
            cap = parse_quantity(n.status.capacity["memory"]).int_value()
            out[name] = max(0, cap - system - used[name] - leave)
    return out


async def inject(pools: Sequence[dict], usage: dict[str, int]) -> None:
    """Set each node's extra memory usage through every pool (a pool ignores the nodes it
    does not hold); nodes of equal usage in one request."""
    from protos.kubera.v1 import nodepool_pb2 as npb
    from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc

    groups: dict[int, list[str]] = {}
    for name, amount in usage.items():
        groups.setdefault(amount, []).append(name)

    async def one(address: str) -> None:
        async with admin_channel(address) as ch:
            stub = npb_grpc.NodePoolStub(ch)
            for amount, names in groups.items():
                await stub.InjectUsage(
                    npb.InjectUsageRequest(nodes=names, usage={"memory": str(amount)}),
                    timeout=RPC_TIMEOUT,
                )

    await asyncio.gather(*(one(str(p["address"])) for p in pools))


async def eviction_reaction(
    client: Client,
    pools: Sequence[dict],
    *,
    count: int,
    leave: str,
    template_text: str | None,
    time_scale: float = 1.0,
    timeout: float = 300.0,
) -> dict[str, float]:
    """Inject the pressure and wait for every chosen node's first eviction: the figures
    `pressure_nodes`, `eviction_reaction_s`, `eviction_reaction_periods`."""
    node_list, _ = await client.list(BY_KIND["Node"])
    chosen = targets((n.metadata.name for n in node_list), count)
    if not chosen:
        return {}
    pods, rv = await client.list(BY_KIND["Pod"])
    usage = injections(
        node_list, pods, chosen, system_memory(template_text), parse_quantity(leave).int_value()
    )
    evicted: set[str] = set()
    want = set(chosen)

    async def evictions() -> None:
        async for ev in client.watch(BY_KIND["Pod"], options=ListOptions(resource_version=str(rv))):
            p = ev.object
            if p.status.phase == "Failed" and p.status.reason == "Evicted":
                evicted.add(p.spec.node_name)
                if evicted >= want:
                    return

    watcher = asyncio.create_task(evictions())
    t = time.monotonic()
    try:
        await inject(pools, usage)
        await asyncio.wait_for(watcher, timeout)
    finally:
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
    reaction = time.monotonic() - t
    return {
        "pressure_nodes": len(chosen),
        "eviction_reaction_s": round(reaction, 3),
        "eviction_reaction_periods": round(reaction_periods(reaction, time_scale), 3),
    }
