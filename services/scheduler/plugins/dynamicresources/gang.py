"""Claims shared inside a gang (review finding 1 of issue 16): the pods of one PodGroup
(scheduler-plugins', or a scheduling.k8s.io one's shared resourceClaims) that name one
unallocated claim. Coscheduling holds the first member's allocation pending
at Permit until the whole gang is assumed; refusing the siblings while it is pending
("in the process of being allocated") makes Coscheduling reject the gang, forever. So a
sibling takes the pending copy as allocated (its nodes are the allocation's), and its
PreBind, which may run before the first member's, waits for that allocation to be written.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import claims as dra_claims
from services.api.helpers.podgroups import pod_group_full_name
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker

#: How long a sibling's PreBind waits for the allocating member's PreBind to write the
#: allocation, polling the tracker every SIBLING_POLL seconds.
SIBLING_WAIT = 30.0
SIBLING_POLL = 0.05


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


def group_key(pod: core_pb2.Pod) -> str:
    """The pod's group for sharing a pending allocation ("" when none): a scheduler-plugins
    PodGroup (label) or a scheduling.k8s.io PodGroup (spec.schedulingGroup)."""
    group = pod.spec.scheduling_group.pod_group_name
    if group:
        return f"podgroups.scheduling.k8s.io:{pod.metadata.namespace}/{group}"
    return pod_group_full_name(pod)


def group_consumers(
    pod_groups: Mapping[str, Any],
    pod: core_pb2.Pod,
    claims: Sequence[resource_pb2.ResourceClaim],
) -> dict[str, resource_pb2.ResourceClaimConsumerReference]:
    """claim uid -> its PodGroup's reservedFor reference, for the claims the pod names
    through an entry of its scheduling.k8s.io PodGroup (`pod_groups`: "ns/name" -> group);
    PreBind reserves those for the group instead of the pod."""
    group = pod.spec.scheduling_group.pod_group_name
    pg = pod_groups.get(f"{pod.metadata.namespace}/{group}") if group else None
    if pg is None or not pg.spec.resource_claims:
        return {}
    names = set()
    for entry in pod.spec.resource_claims:
        if dra_claims.pod_group_entry(pg, entry) is None:
            continue
        with contextlib.suppress(LookupError, ValueError):
            name = dra_claims.claim_name(pod, entry).name
            if name:
                names.add(name)
    ref = dra_claims.pod_group_reference(pg)
    return {c.metadata.uid: ref for c in claims if c.metadata.name in names}


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
    if not group or group != group_key(pod):
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
