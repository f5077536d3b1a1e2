"""Zones and how fast each may be tainted (upstream ComputeZoneState, HealthyQPSFunc,
ReducedQPSFunc and handleDisruption).

Kept apart from the controller because the rule is a policy of its own: how many
not-Ready nodes make a zone disrupted, and what that does to the zone's NoExecute
tainting rate. `Zones` owns the zones' states and their tainting queues; the controller
queues nodes in them and drains them.

Zones are topology.kubernetes.io/region + zone; nodes labelled
node.kubernetes.io/exclude-disruption do not count towards a zone's health.

    FullDisruption     no node Ready
    PartialDisruption  more than 2 nodes not Ready and not-Ready / all >= unhealthy_zone_threshold
    Normal             otherwise

Normal and FullDisruption zones taint at node_eviction_rate; a PartialDisruption zone at
secondary_node_eviction_rate if it has more than large_cluster_size_threshold nodes, else
not at all. When *every* zone is FullDisruption the control plane is more likely cut off
than every node dead: all NoExecute taints are removed and tainting stops everywhere, until
some node is Ready again; then every node gets a fresh grace period.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum

from protos.kubera.v1 import core_pb2
from services.api.helpers.wellknown import LABEL_FAILURE_DOMAIN_BETA_REGION as LABEL_BETA_REGION
from services.api.helpers.wellknown import LABEL_FAILURE_DOMAIN_BETA_ZONE as LABEL_BETA_ZONE
from services.api.helpers.wellknown import LABEL_TOPOLOGY_REGION as LABEL_REGION
from services.api.helpers.wellknown import LABEL_TOPOLOGY_ZONE as LABEL_ZONE
from services.clock import Clock
from services.controllers.nodelifecycle.config import NodeLifecycleConfig
from services.controllers.nodelifecycle.health import HealthTracker
from services.controllers.nodelifecycle.ratelimit import RateLimitedTimedQueue
from services.controllers.nodelifecycle.taints import TRUE

log = logging.getLogger(__name__)


class ZoneState(StrEnum):
    """A zone's health (upstream ZoneState); Initial until a monitor pass has counted it."""

    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


def zone_key(node: core_pb2.Node) -> str:
    """upstream nodetopology.GetZoneKey: region and zone (GA labels, else beta ones)
    joined by ":\\0:", or "" when the node has neither."""
    labels = node.metadata.labels
    zone = labels[LABEL_ZONE] if LABEL_ZONE in labels else labels.get(LABEL_BETA_ZONE, "")
    region = labels[LABEL_REGION] if LABEL_REGION in labels else labels.get(LABEL_BETA_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def compute_zone_state(
    ready_conditions: Sequence[core_pb2.NodeCondition | None], unhealthy_zone_threshold: float
) -> tuple[int, ZoneState]:
    """(not-Ready nodes, state) of one zone from its nodes' Ready conditions (None: the
    node has none) (upstream ComputeZoneState)."""
    ready = sum(1 for c in ready_conditions if c is not None and c.status == TRUE)
    not_ready = len(ready_conditions) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, ZoneState.FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_zone_threshold:
        return not_ready, ZoneState.PARTIAL_DISRUPTION
    return not_ready, ZoneState.NORMAL


def tainting_rate(config: NodeLifecycleConfig, zone_size: int, state: ZoneState) -> float:
    """NoExecute taints a second in a zone of `zone_size` nodes in `state` while some
    zone is not fully disrupted (upstream HealthyQPSFunc / ReducedQPSFunc)."""
    if state == ZoneState.PARTIAL_DISRUPTION:
        if zone_size > config.large_cluster_size_threshold:
            return config.secondary_node_eviction_rate
        return 0.0
    return config.node_eviction_rate


class Zones:
    """Each zone's state and its NoExecute tainting queue (upstream zoneStates and
    zoneNoExecuteTainter). A zone's queue outlives its state: zones only come and go in
    states, so nodes queued in a zone that emptied stay queued."""

    def __init__(self, config: NodeLifecycleConfig, clock: Clock) -> None:
        self.config = config
        self.clock = clock
        self.states: dict[str, ZoneState] = {}
        self.tainters: dict[str, RateLimitedTimedQueue] = {}

    def add(self, node: core_pb2.Node) -> RateLimitedTimedQueue:
        """The tainting queue of the node's zone, the zone first noted (Initial) if new."""
        zone = zone_key(node)
        if zone not in self.states:
            self.states[zone] = ZoneState.INITIAL
        queue = self.tainters.get(zone)
        if queue is None:
            queue = RateLimitedTimedQueue(self.config.node_eviction_rate, clock=self.clock)
            self.tainters[zone] = queue
        return queue

    def knows(self, node: core_pb2.Node) -> bool:
        return zone_key(node) in self.states

    def remove_node(self, name: str) -> None:
        """Forget a deleted node in every zone's queue."""
        for queue in self.tainters.values():
            queue.remove(name)

    def queues(self) -> list[RateLimitedTimedQueue]:
        return list(self.tainters.values())

    def next_ready_in(self) -> float | None:
        """Seconds until some zone's queue may hand out a node; None when none can."""
        waits = [w for q in self.tainters.values() if (w := q.next_ready_in()) is not None]
        return min(waits) if waits else None

    async def handle_disruption(
        self,
        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]],
        nodes: Sequence[core_pb2.Node],
        *,
        health: HealthTracker,
        mark_reachable: Callable[[core_pb2.Node], Awaitable[bool]],
    ) -> None:
        """Move each zone to the state its nodes' Ready conditions (`zone_conditions`, from
        this monitor pass) put it in, and its tainting queue to that state's rate; enter or
        leave the mode where every zone is fully disrupted (entering it, `mark_reachable`
        removes each node's NoExecute taints; leaving it, `health` restarts every node's
        grace period)."""
        new_states: dict[str, ZoneState] = {}
        all_are_full = True
        for zone, conditions in zone_conditions.items():
            _, state = compute_zone_state(conditions, self.config.unhealthy_zone_threshold)
            if state != ZoneState.FULL_DISRUPTION:
                all_are_full = False
            new_states[zone] = state
            if zone not in self.states:
                self.states[zone] = ZoneState.INITIAL
                self.tainters.setdefault(
                    zone, RateLimitedTimedQueue(self.config.node_eviction_rate, clock=self.clock)
                )
        for zone in [z for z in self.states if z not in zone_conditions]:
            del self.states[zone]  # its queue stays: zones only come and go in states
        all_were_full = all(s == ZoneState.FULL_DISRUPTION for s in self.states.values())
        if all_are_full and all_were_full:
            return
        if all_are_full:
            log.warning(
                "node lifecycle: every node is not Ready; entering master disruption mode "
                "(NoExecute taints removed, tainting stopped)"
            )
            for node in nodes:
                await mark_reachable(node)
            for zone in self.states:
                self.tainters[zone].swap_limiter(0.0)
                self.states[zone] = ZoneState.FULL_DISRUPTION
            return
        if all_were_full:
            log.warning(
                "node lifecycle: some nodes are Ready again; leaving master disruption mode"
            )
            health.restart_grace(node.metadata.name for node in nodes)
            for zone in self.states:
                state = new_states[zone]
                self.tainters[zone].swap_limiter(
                    tainting_rate(self.config, len(zone_conditions[zone]), state)
                )
                self.states[zone] = state
            return
        for zone, old in self.states.items():
            state = new_states[zone]
            if state == old:
                continue
            log.info("node lifecycle: zone %r is now %s", zone.replace("\x00", ""), state)
            self.tainters[zone].swap_limiter(
                tainting_rate(self.config, len(zone_conditions[zone]), state)
            )
            self.states[zone] = state
