"""Claims shared inside a gang (review finding 1 of issue 16): the pods of one PodGroup
that name one unallocated claim. Coscheduling holds the first member's allocation pending
at Permit until the whole gang is assumed; refusing the siblings while it is pending
("in the process of being allocated") makes Coscheduling reject the gang, forever. So a
sibling takes the pending copy as allocated (its nodes are the allocation's), and its
PreBind, which may run before the first member's, waits for that allocation to be written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.helpers.podgroups import pod_group_full_name
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker

#: How long a sibling's PreBind waits for the allocating member's PreBind to write the
#: allocation, polling the tracker every SIBLING_POLL seconds.
SIBLING_WAIT = 30.0
SIBLING_POLL = 0.05


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def sibling_allocation(
    gang_pending: Mapping[str, tuple[str, resource_pb2.ResourceClaim]],
    tracker: ClaimTracker,
    pod: core_pb2.Pod,
    claim: resource_pb2.ResourceClaim,
) -> resource_pb2.ResourceClaim | None:
    """The pending copy of `claim` when Reserve allocated it for a pod of `pod`'s own
    PodGroup (`gang_pending`: claim uid -> (namespace/group, pending claim)) with a
    nodeSelector (node-local devices); else None."""
    entry = gang_pending.get(claim.metadata.uid)
    if entry is None or not tracker.has_pending_allocation(claim.metadata.uid):
        return None
    group, pending = entry
    if not group or group != pod_group_full_name(pod):
        return None
    return pending if pending.status.allocation.HasField("node_selector") else None


async def sibling_written(
    tracker: ClaimTracker, pending: resource_pb2.ResourceClaim
) -> resource_pb2.ResourceClaim:
    """The claim once the allocating member's PreBind wrote the allocation this pod was
    filtered with (bounded: SIBLING_WAIT seconds). Raises if the allocation was dropped
    (that member's Unreserve), another one was written, or the claim was deleted."""
    ns, name = pending.metadata.namespace, pending.metadata.name
    for _ in range(int(SIBLING_WAIT / SIBLING_POLL)):
        current = tracker.claim(ns, name)
        if current is None or current.metadata.uid != pending.metadata.uid:
            raise RuntimeError(f"claim {_key(pending)} got deleted in the meantime")
        if current.status.HasField("allocation"):
            if current.status.allocation != pending.status.allocation:
                raise RuntimeError(f"claim {_key(pending)} got allocated elsewhere in the meantime")
            return current
        if not tracker.has_pending_allocation(pending.metadata.uid):
            raise RuntimeError(f"claim {_key(pending)}: the gang's allocation was dropped")
        await asyncio.sleep(SIBLING_POLL)
    raise RuntimeError(f"claim {_key(pending)}: the gang's allocation was not written")
