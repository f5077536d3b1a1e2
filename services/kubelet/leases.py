"""A node pool's heartbeats: every node and its Lease registered at start, the leases renewed
slot by slot (one lease loop for the whole pool), and node status posted when it changed or
once per report frequency. The writes go through the pool's batchers, which the pool runs.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Protocol

from google.protobuf.message import Message

from services.api.machinery.errors import AlreadyExistsError
from services.client import Client
from services.clock import Clock
from services.kubelet.batcher import Batcher
from services.kubelet.nodestatus import lease_object, node_object, node_status_object
from services.kubelet.state import HollowNode

log = logging.getLogger(__name__)

#: Lease renewals are spread over this many slots of the renew interval (one batch each).
LEASE_SLOTS = 10


class LeaseSettings(Protocol):
    """What the heartbeats read of the pool's configuration (PoolConfig has it)."""

    @property
    def name(self) -> str: ...

    @property
    def lease_duration_seconds(self) -> int: ...

    @property
    def lease_renew_interval(self) -> float: ...

    @property
    def node_status_report_frequency(self) -> float: ...

    @property
    def max_batch(self) -> int: ...


class NodeLeases:
    """The heartbeats of `nodes`: their registration, lease renewals and status posts."""

    def __init__(
        self,
        client: Client,
        nodes: Sequence[HollowNode],
        clock: Clock,
        config: LeaseSettings,
        *,
        node_batcher: Batcher,
        lease_batcher: Batcher,
    ) -> None:
        self.client = client
        self.nodes = nodes
        self.clock = clock
        self.config = config
        self.node_batcher = node_batcher
        self.lease_batcher = lease_batcher

    async def register(self) -> None:
        now = self.clock.now()
        await self._create_or_take_over(
            [node_object(n, self.config.name, now) for n in self.nodes], self.node_batcher
        )
        duration = self.config.lease_duration_seconds
        await self._create_or_take_over(
            [lease_object(n, duration, now) for n in self.nodes], self.lease_batcher
        )
        for n in self.nodes:
            n.registered = True
            n.last_status_post = n.lease_renewed = now

    async def _create_or_take_over(self, objs: Sequence[Message], batcher: Batcher) -> None:
        """Create the objects; one that exists (ours from before a restart) is written
        over through `batcher` instead."""
        for start in range(0, len(objs), self.config.max_batch):
            chunk = objs[start : start + self.config.max_batch]
            results = await self.client.batch_create(chunk)
            for obj, r in zip(chunk, results, strict=True):
                if isinstance(r.error, AlreadyExistsError):
                    batcher.put(obj)
                elif r.error is not None:
                    raise r.error

    async def run(self) -> None:
        """Renew the leases slot by slot: node i is in slot i % LEASE_SLOTS, and one slot
        is renewed every renew_interval / LEASE_SLOTS, so every lease is still renewed
        once per renew_interval (the first time within it after registration) but the
        apiserver sees a steady trickle of batches instead of the whole pool at once."""
        slots = min(LEASE_SLOTS, max(1, len(self.nodes)))
        tick = self.config.lease_renew_interval / slots
        slot = 0
        due = self.clock.monotonic()
        while True:
            # On a fixed grid, so the time each slot takes does not add up into lateness;
            # after a stall (more than a tick behind) the grid restarts from now.
            due += tick
            now = self.clock.monotonic()
            if due < now - tick:
                due = now
            await self.clock.sleep(due - now)
            self.renew_slot(slot, slots)
            slot = (slot + 1) % slots

    def renew_slot(self, slot: int, slots: int) -> None:
        """Renew the leases of the live nodes in `slot` (of `slots`), and post the status
        of those whose last one is older than the report frequency."""
        now = self.clock.now()
        report = self.config.node_status_report_frequency
        for n in self.nodes[slot::slots]:
            if not n.alive:
                continue
            try:
                self.renew(n, now)
                if now - n.last_status_post >= report:
                    self.post_node_status(n)
            except Exception:  # noqa: BLE001 - one node's failure costs only its lease
                log.exception("node %s: lease renewal failed", n.plan.name)

    def renew(self, node: HollowNode, now: float) -> None:
        self.lease_batcher.put(lease_object(node, self.config.lease_duration_seconds, now))
        node.lease_renewed = now

    def post_node_status(self, node: HollowNode) -> None:
        node.last_status_post = self.clock.now()
        self.node_batcher.put(node_status_object(node, node.last_status_post))
