"""Noticing that a node went quiet: the controller's own record of each node's last
signs of life (`HealthTracker`, which owns it), and the write that marks a silent node's
conditions Unknown.

Kept apart from the controller because it is the one place that decides *when* a node is
unhealthy (upstream tryUpdateNodeHealth); what follows from that (taints, pods, zone
states) stays with the controller and the zones. A node's signs of life are its Lease
(kube-node-lease/<node>, spec.renewTime) and its Ready condition's lastHeartbeatTime; the
tracker notes when *it* saw either change, on its injected clock, and never trusts the
kubelet's clock.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import coordination_pb2, core_pb2
from services.api.machinery.kubeobject import narrow, object_meta
from services.client import Client, Informer
from services.clock import Clock, parse_rfc3339, rfc3339
from services.controllers.nodelifecycle.config import NodeLifecycleConfig
from services.controllers.nodelifecycle.taints import (
    DISK_PRESSURE,
    MEMORY_PRESSURE,
    PID_PRESSURE,
    READY,
    UNKNOWN,
    get_condition,
)

log = logging.getLogger(__name__)

NODE_LEASE_NAMESPACE = "kube-node-lease"

#: The conditions set to Unknown when the kubelet goes quiet. NetworkUnavailable is left
#: alone: the network plugin, not the kubelet, owns it.
_UNKNOWN_ON_SILENCE = (READY, MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)


@dataclass
class NodeHealth:
    """What the controller last saw of a node, with its own clock's times."""

    #: When the Lease renewTime or the Ready heartbeat last changed (or the node appeared).
    probe: float
    #: When the Ready condition last changed its transition time.
    ready_transition: float
    #: The Ready condition last seen (a copy), or None when the node has none.
    ready: core_pb2.NodeCondition | None
    #: The Lease renewTime last seen.
    lease_renew: float | None


@dataclass(slots=True)
class Checked:
    """What `HealthTracker.check` found for one node in one pass: the Ready condition as
    observed and as it is, and what `finish` needs to mark the node Unknown."""

    observed: core_pb2.NodeCondition
    current: core_pb2.NodeCondition | None
    health: NodeHealth
    grace: float
    now: float
    renew: float | None

    @property
    def silent(self) -> bool:
        """Past its grace period: its conditions are to be written Unknown."""
        return self.now > self.health.probe + self.grace


def _copy_condition(c: core_pb2.NodeCondition) -> core_pb2.NodeCondition:
    out = core_pb2.NodeCondition()
    out.CopyFrom(c)
    return out


def _lease_renew_time(lease: Message | None) -> float | None:
    if lease is None:
        return None
    text = narrow(lease, coordination_pb2.Lease).spec.renew_time
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        log.warning("lease %s: unreadable renewTime %r", object_meta(lease).name, text)
        return None


class HealthTracker:
    """The controller's record of each node's health signals (`NodeHealth` by node name),
    and the update that marks a silent node Unknown. It owns the record: the controller
    asks it (`get`), drops deleted nodes (`forget`) and, when the cluster leaves the
    all-zones-disrupted mode, gives every node a fresh grace period (`restart_grace`)."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        leases: Informer,
        config: NodeLifecycleConfig,
    ) -> None:
        self.client = client
        self.clock = clock
        self.leases = leases
        self.config = config
        self.records: dict[str, NodeHealth] = {}
        #: node name -> (its Lease's renewTime text, that text parsed)
        self._renew_parsed: dict[str, tuple[str | None, float | None]] = {}

    def get(self, name: str) -> NodeHealth | None:
        return self.records.get(name)

    def forget(self, name: str) -> None:
        self.records.pop(name, None)
        self._renew_parsed.pop(name, None)

    def restart_grace(self, names: Iterable[str]) -> None:
        """Count each node's grace period from now (upstream, on leaving master
        disruption mode: the nodes could not have reported while the control plane was
        cut off)."""
        now = self.clock.now()
        for name in names:
            health = self.records.get(name)
            if health is not None:
                health.probe = health.ready_transition = now

    def _renew_time(self, name: str) -> float | None:
        """The node's Lease renewTime, parsed once per distinct text (a pass reads every
        node's lease; most have not changed since the last pass)."""
        lease = self.leases.store.get(f"{NODE_LEASE_NAMESPACE}/{name}")
        text = narrow(lease, coordination_pb2.Lease).spec.renew_time if lease is not None else None
        cached = self._renew_parsed.get(name)
        if cached is not None and cached[0] == text:
            return cached[1]
        value = _lease_renew_time(lease)
        self._renew_parsed[name] = (text, value)
        return value

    async def try_update(
        self, node: core_pb2.Node
    ) -> tuple[core_pb2.NodeCondition, core_pb2.NodeCondition | None]:
        """Refresh the node's health record and, past its grace period, write its
        conditions as Unknown (`node` is the caller's copy and is updated in place).
        Returns the Ready condition as observed and as it is now."""
        return await self.finish(node, self.check(node))

    def check(self, node: core_pb2.Node, *, copy_observed: bool = True) -> Checked:
        """The first half of `try_update`, which writes nothing: refresh the node's health
        record from `node` (not modified) and its Lease. Without `copy_observed` the
        observed condition is `node`'s own: only for a `node` nobody modifies (the
        informer's; `finish` is then handed a copy)."""
        name = node.metadata.name
        now = self.clock.now()
        health = self.records.get(name)
        current = get_condition(node, READY)
        if current is None:
            # Never reported: a synthetic Unknown from the creation time, and the longer
            # startup grace period.
            created = node.metadata.creation_timestamp
            observed = core_pb2.NodeCondition(
                type=READY,
                status=UNKNOWN,
                last_heartbeat_time=created,
                last_transition_time=created,
            )
            grace = self.config.node_startup_grace_period
            if health is not None:
                health.ready = None
            else:
                at = parse_rfc3339(created) if created else now
                health = NodeHealth(probe=at, ready_transition=at, ready=None, lease_renew=None)
        else:
            observed = _copy_condition(current) if copy_observed else current
            grace = self.config.node_monitor_grace_period

        saved = health.ready if health is not None else None
        saved_lease = health.lease_renew if health is not None else None
        if health is None or (saved is None and current is not None):
            health = NodeHealth(
                now, now, _copy_condition(current) if current else None, saved_lease
            )
        elif (
            saved is not None
            and current is not None
            and saved.last_heartbeat_time != current.last_heartbeat_time
        ):
            transition = (
                now
                if saved.last_transition_time != current.last_transition_time
                else health.ready_transition
            )
            health = NodeHealth(now, transition, _copy_condition(current), saved_lease)
        # A renewed lease always counts as a heartbeat (even with no Ready condition).
        renew = self._renew_time(name)
        if renew is not None and (saved_lease is None or saved_lease < renew):
            health.lease_renew = renew
            health.probe = now
        self.records[name] = health
        return Checked(observed, current, health, grace, now, renew)

    async def finish(
        self, node: core_pb2.Node, checked: Checked
    ) -> tuple[core_pb2.NodeCondition, core_pb2.NodeCondition | None]:
        """The second half of `try_update`: past its grace period, the node's conditions
        written Unknown (`node`, the caller's copy of what `check` saw, is updated in
        place)."""
        observed, current = checked.observed, checked.current
        if not checked.silent:
            return observed, current
        name, now, health = node.metadata.name, checked.now, checked.health
        stamp = rfc3339(now)
        for type_ in _UNKNOWN_ON_SILENCE:
            cond = get_condition(node, type_)
            if cond is None:
                node.status.conditions.append(
                    core_pb2.NodeCondition(
                        type=type_,
                        status=UNKNOWN,
                        reason="NodeStatusNeverUpdated",
                        message="Kubelet never posted node status.",
                        last_heartbeat_time=node.metadata.creation_timestamp,
                        last_transition_time=stamp,
                    )
                )
            elif cond.status != UNKNOWN:
                cond.status = UNKNOWN
                cond.reason = "NodeStatusUnknown"
                cond.message = "Kubelet stopped posting node status."
                cond.last_transition_time = stamp
        current = get_condition(node, READY)
        if current == observed:
            return observed, current
        log.info("node lifecycle: node %s stopped posting status; marking it Unknown", name)
        updated = await self.client.update_status(node)
        node.CopyFrom(updated)
        current = get_condition(node, READY)
        self.records[name] = NodeHealth(
            health.probe, now, _copy_condition(current) if current else None, checked.renew
        )
        return observed, current
