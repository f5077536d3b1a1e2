"""DynamicResources Score and NormalizeScore: prefer the node where a prioritized list
(`firstAvailable`) got an earlier alternative (upstream dynamicresources.go Score,
computeScore and NormalizeScore, with the DRAPrioritizedList gate).

    Score           per node that passed Filter: for every claim of the pod, its allocation
                    (an allocated claim's own status.allocation, else the one Filter made on
                    this node), and for every firstAvailable request of the claim whose
                    subrequest i (0-based) the allocation used, 8 - i points (8 is
                    FirstAvailableDeviceRequestMaxSize, so the first of 8 alternatives
                    gets 8, the last 1); 0 for a pod without claims, a node without
                    allocations or the gate off
    NormalizeScore  helper.DefaultNormalizeScore: the best node gets 100, others in
                    proportion, all 0 when nothing was scored

The points are summed over requests and claims, so a pod whose two lists both got their
first choice on node A (16) beats node B, where one got its second (15).
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import resource_pb2
from services.api.validation.resource import FIRST_AVAILABLE_MAX


def subrequest_points(
    claim: resource_pb2.ResourceClaim, allocation: resource_pb2.AllocationResult
) -> int:
    """One claim's points: 8 - i per firstAvailable request whose subrequest i was used."""
    used = {r.request for r in allocation.devices.results if "/" in r.request}
    points = 0
    for req in claim.spec.devices.requests:
        if req.HasField("exactly"):
            continue
        for i, sub in enumerate(req.first_available):
            if f"{req.name}/{sub.name}" in used:
                points += FIRST_AVAILABLE_MAX - i
    return points


def compute_score(
    claims: Sequence[resource_pb2.ResourceClaim],
    to_allocate: Sequence[resource_pb2.ResourceClaim],
    allocations: Sequence[resource_pb2.AllocationResult],
) -> int:
    """The node's raw score (upstream computeScore): `claims` all the pod's claims,
    `to_allocate` those Filter allocated (by identity, in `allocations`' order).
    Raises ValueError when Filter made fewer allocations than there are claims to allocate."""
    score = 0
    unallocated = 0
    pending = {id(c) for c in to_allocate}
    for claim in claims:
        if id(claim) not in pending and claim.status.HasField("allocation"):
            allocation = claim.status.allocation
        else:
            if unallocated >= len(allocations):
                raise ValueError(
                    f"number of allocations {len(allocations)} is smaller than number of "
                    "claims needing allocation"
                )
            allocation = allocations[unallocated]
            unallocated += 1
        score += subrequest_points(claim, allocation)
    return score
