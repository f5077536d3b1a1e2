"""The node pool's eviction loop: one monitoring period for every node of the pool at once
(upstream: each kubelet's eviction manager runs its own synchronize every
evictionMonitoringPeriod).

    eviction loop ──► usage totals for all nodes at once (pressure.py, numpy) ──► the
                      managers of the nodes near a threshold (eviction/) ──► conditions
                      (posted with the node's status), image GC, one eviction each

The decisions are eviction/'s (pure, `now` given); this module feeds them the pool's pods
and usage and carries the decisions out through what the pool hands it: the node status
poster and the pool's delay queue (an evicted pod's kill is a step `evict:<message>` due
after its grace period). It holds no pool, so the pool imports it and not the reverse.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping, Sequence

from services.api.helpers.resources import pod_requests
from services.clock import Clock
from services.kubelet import eviction as ev
from services.kubelet.pressure import IMAGE_BYTES_PER_INODE, PoolPressure
from services.kubelet.state import HollowNode, PodState
from services.kubelet.usage import UsageTable

log = logging.getLogger(__name__)


class PoolEvictor:
    """Node-pressure eviction for the nodes of one pool (see the module docstring)."""

    def __init__(
        self,
        nodes: Sequence[HollowNode],
        pods: Mapping[str, PodState],
        usage: UsageTable,
        clock: Clock,
        *,
        post_node_status: Callable[[HollowNode], None],
        after: Callable[[PodState, float, str], None],
    ) -> None:
        self.nodes = nodes
        self.pods = pods
        self.usage = usage
        self.clock = clock
        self.pressure = PoolPressure(nodes)
        self.post_node_status = post_node_status
        self.after = after
        self.ticks = 0
        self.tick_seconds = 0.0

    async def run(self) -> None:
        period = min((n.eviction.monitoring_period for n in self.nodes), default=10.0)
        while True:
            await self.clock.sleep(period)
            t0 = asyncio.get_running_loop().time()
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - one bad tick must not stop eviction
                log.exception("eviction tick failed")
            self.ticks += 1
            self.tick_seconds = asyncio.get_running_loop().time() - t0
            await asyncio.sleep(0)

    def tick(self) -> None:
        """One monitoring period for every live node: observe all at once, then let the
        managers of the nodes near a threshold (or under pressure) decide."""
        now = self.clock.now()
        used = self.pressure.used(self.usage, now)
        near = self.pressure.near(used)
        for node in self.nodes:
            if not node.alive or not node.registered:
                continue
            if not near[node.index] and not any(node.conditions.values()) and node.manager.idle():
                continue
            try:
                self.synchronize(node, now, self.pressure.node_stats(node.index, used))
            except Exception:  # noqa: BLE001 - one node's failure costs only that node
                log.exception("node %s: eviction synchronize failed", node.plan.name)

    def pod_stats(self, st: PodState, now: float) -> ev.PodStats:
        u = self.usage.pod_usage(st.uid, now)
        req = pod_requests(st.pod)
        return ev.PodStats(
            key=st.uid,
            uid=st.uid,
            priority=st.pod.spec.priority,
            qos=st.pod.status.qos_class or "BestEffort",
            memory_request=req.memory,
            ephemeral_storage_request=req.ephemeral_storage,
            memory=int(u.get("memory", 0)),
            ephemeral_storage=int(u.get("ephemeral-storage", 0)),
            inodes=int(u.get("inodes", 0)),
            pids=int(u.get("pids", 0)),
            termination_grace_period_seconds=int(
                st.pod.spec.termination_grace_period_seconds or 30
            ),
            containers=[c.name for c in st.pod.spec.containers],
        )

    def synchronize(self, node: HollowNode, now: float, stats: ev.NodeStats) -> None:
        """One node's eviction manager decides; its conditions, image deletions and
        evictions are carried out."""
        running: list[PodState] = []
        in_use: set[str] = set()
        for uid in node.pods:
            st = self.pods.get(uid)
            if st is None or st.phase not in ("Running", "Creating") or st.evicted:
                continue
            in_use.update(c.image for c in st.pod.spec.containers)
            if st.phase == "Running":
                running.append(st)
        images = [
            ev.ImageStats(name, size, name in in_use, inodes=size // IMAGE_BYTES_PER_INODE)
            for name, size in node.images.items()
        ]
        # the manager asks for the pods only when it has to rank them
        decision = node.manager.synchronize(
            now, stats, lambda: [self.pod_stats(st, now) for st in running], images
        )
        for name in decision.images_to_delete:
            node.images.pop(name, None)
        if decision.conditions != node.conditions:
            node.conditions = dict(decision.conditions)
            self.post_node_status(node)
        for uid, grace, message, _signal in decision.evict:
            st = self.pods.get(uid)
            if st is None or st.evicted:
                continue
            st.evicted = True
            st.gen += 1
            node.evictions += 1
            self.usage.remove(uid)  # the kill starts now; usage is reclaimed with it
            self.after(st, float(grace), "evict:" + message)


__all__ = ["PoolEvictor"]
