"""Node conditions, the taints they call for, and the one way the node lifecycle
controller writes taints.

Kept apart from the controller so that the vocabulary (condition types, taint keys, which
condition gets which taint) and the read-modify-write of spec.taints are in one place:
the monitor pass, the NoExecute tainting pass and the NoSchedule tainting pass all go
through `swap_taints` (upstream controller/util/node SwapNodeControllerTaint).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import NO_EXECUTE, NO_SCHEDULE
from services.api.helpers.wellknown import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_NETWORK_UNAVAILABLE,
    TAINT_NOT_READY,
    TAINT_PID_PRESSURE,
    TAINT_UNREACHABLE,
    TAINT_UNSCHEDULABLE,
)
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.client import Client
from services.clock import Clock, rfc3339

log = logging.getLogger(__name__)

NODES = BY_KIND["Node"]

READY = "Ready"
MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
NETWORK_UNAVAILABLE = "NetworkUnavailable"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"

UNREACHABLE_NO_EXECUTE = core_pb2.Taint(key=TAINT_UNREACHABLE, effect=NO_EXECUTE)
NOT_READY_NO_EXECUTE = core_pb2.Taint(key=TAINT_NOT_READY, effect=NO_EXECUTE)

#: Which condition status gets which NoSchedule taint ("taint nodes by condition").
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    READY: {FALSE: TAINT_NOT_READY, UNKNOWN: TAINT_UNREACHABLE},
    MEMORY_PRESSURE: {TRUE: TAINT_MEMORY_PRESSURE},
    DISK_PRESSURE: {TRUE: TAINT_DISK_PRESSURE},
    NETWORK_UNAVAILABLE: {TRUE: TAINT_NETWORK_UNAVAILABLE},
    PID_PRESSURE: {TRUE: TAINT_PID_PRESSURE},
}
#: The NoSchedule taint keys the conditions own (with TAINT_UNSCHEDULABLE, the ones the
#: NoSchedule pass adds and removes; any other taint is left alone).
CONDITION_TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())


def get_condition(node: core_pb2.Node, type_: str) -> core_pb2.NodeCondition | None:
    return next((c for c in node.status.conditions if c.type == type_), None)


def same_taint(a: core_pb2.Taint, b: core_pb2.Taint) -> bool:
    """Taints are unique by key and effect (upstream Taint.MatchTaint)."""
    return a.key == b.key and a.effect == b.effect


def has_taint(node: core_pb2.Node, taint: core_pb2.Taint) -> bool:
    return any(same_taint(t, taint) for t in node.spec.taints)


def condition_taints(node: core_pb2.Node) -> list[core_pb2.Taint]:
    """The NoSchedule taints a node's conditions and spec.unschedulable call for."""
    out = []
    for c in node.status.conditions:
        key = CONDITION_TAINTS.get(c.type, {}).get(c.status)
        if key:
            out.append(core_pb2.Taint(key=key, effect=NO_SCHEDULE))
    if node.spec.unschedulable:
        out.append(core_pb2.Taint(key=TAINT_UNSCHEDULABLE, effect=NO_SCHEDULE))
    return out


async def swap_taints(
    client: Client,
    node: core_pb2.Node,
    *,
    add: Sequence[core_pb2.Taint],
    remove: Sequence[core_pb2.Taint],
    clock: Clock,
    retries: int,
) -> bool:
    """Add `add` (stamped with timeAdded; a taint with the same key and effect stays
    as it is) and remove `remove` in one write, at most `retries` times. A merge patch
    replaces the whole list, so it is pinned to the resourceVersion it was computed from
    and redone from a fresh read on conflict (upstream SwapNodeControllerTaint)."""
    name = node.metadata.name
    current = node
    for _ in range(retries):
        taints = list(current.spec.taints)
        kept = [t for t in taints if not any(same_taint(t, r) for r in remove)]
        stamp = rfc3339(clock.now())
        for t in add:
            if not any(same_taint(t, k) for k in kept):
                fresh = core_pb2.Taint()
                fresh.CopyFrom(t)
                fresh.time_added = stamp
                kept.append(fresh)
        if kept == taints:
            return True
        patch = {
            "metadata": {"resourceVersion": current.metadata.resource_version},
            "spec": {"taints": [codec.encode(t) for t in kept] or None},
        }
        try:
            await client.patch(NODES, name, json.dumps(patch))
            return True
        except NotFoundError:
            return False
        except ConflictError:
            pass
        except ApiError as e:
            log.warning("node lifecycle: cannot update taints of %s: %s", name, e)
            return False
        try:
            current = await client.get(NODES, name)  # type: ignore[assignment]
        except ApiError as e:
            log.info("node lifecycle: cannot get node %s: %s", name, e)
            return False
    return False
