"""NodePorts: a pod's hostPorts must be free on the node.

Upstream plugins/nodeports. Ports are (hostIP, protocol, hostPort) with "" read as 0.0.0.0
and TCP, from the regular containers and sidecars only (services/api/helpers/hostports.py, which
PodInfo.ports and so NodeInfo.used_ports read): an ordinary init container's hostPort is
never held while the pod runs. A wildcard 0.0.0.0 port conflicts with the same
protocol/port on any IP; a specific IP conflicts with itself and with the wildcard.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence, Set
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from protos.kubera.v1 import core_pb2
from services.api.helpers.hostports import DEFAULT_BIND_ALL_HOST_IP, HostPort, host_ports
from services.scheduler.cache.columns import columns_of
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.helpers import NODE, POD, Int64Array

NAME = "NodePorts"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
Port = HostPort


@dataclass
class Args:
    """NodePorts takes no arguments."""


def check_conflict(used: Set[Port], ip: str, protocol: str, port: int) -> bool:
    """HostPortInfo.CheckConflict."""
    if port <= 0:
        return False
    ip = ip or DEFAULT_BIND_ALL_HOST_IP
    protocol = protocol or "TCP"
    if ip == DEFAULT_BIND_ALL_HOST_IP:
        return any(u[1] == protocol and u[2] == port for u in used)
    return (DEFAULT_BIND_ALL_HOST_IP, protocol, port) in used or (ip, protocol, port) in used


def fits_ports(want: Iterable[Port], used: Set[Port]) -> bool:
    return not any(check_conflict(used, ip, proto, port) for ip, proto, port in want)


class NodePorts:
    """PreFilterPlugin, FilterPlugin, FilterRowsPlugin (the wanted ports checked once per
    distinct set of used ports), EnqueueExtensions. PreFilter returns Skip for a pod without
    host ports, as upstream's does."""

    name = NAME

    def __init__(self) -> None:
        self._reject = Status.unschedulable(ERR_REASON, plugin=NAME)

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod_info.ports:
            return None, Status.skip(NAME)
        state.write(PRE_FILTER_STATE_KEY, list(pod_info.ports))
        return None, Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        want = state.get(PRE_FILTER_STATE_KEY)
        if want is None:
            return Status.as_error(
                KeyError(f"reading {PRE_FILTER_STATE_KEY!r} from cycleState"), plugin=NAME
            )
        if not node_info.used_ports or fits_ports(want, node_info.used_ports):
            return Status.success()
        return self._reject

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: Int64Array
    ) -> npt.NDArray[np.bool_] | None:
        want = state.get(PRE_FILTER_STATE_KEY)
        cols = columns_of(snapshot)
        if want is None or cols is None:
            return None  # `filter` gives the error
        table = cols.ports.table(lambda used: not used or fits_ports(want, used))
        return table[cols.ports.ids[rows]]

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so pod updates never free a port.
            ClusterEventWithHint(
                ClusterEvent(POD, ActionType.DELETE), is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ]


def is_schedulable_after_pod_deleted(
    pod: core_pb2.Pod, old: core_pb2.Pod | None, new: Any
) -> QueueingHint:
    """Queue only when the deleted pod was (or was about to be) on a node and held a port
    the waiting pod wants."""
    if old is None:
        return QueueingHint.QUEUE
    if not old.spec.node_name and not old.status.nominated_node_name:
        return QueueingHint.SKIP
    freed = set(host_ports(old))
    if not freed or fits_ports(host_ports(pod), freed):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> NodePorts:
    return NodePorts()
