"""DynamicResources PreBind's claim write (upstream dynamicresources.go bindClaim): record
the allocation Reserve made, if any, and the pod in status.reservedFor.

    not allocated by Reserve   the claim must still carry the allocation PreFilter saw
    allocated by Reserve       the claim must still be unallocated; the finalizer is added
                               with a normal update first, then status.allocation and
                               status.reservedFor with one status update
    conflict                   read the claim again and retry (retry.DefaultRetry: 5 tries);
                               an earlier try found written after all counts as done

Written, the claim is the tracker's assumed object (no longer pending); not written, it
stays pending until Unreserve, which the framework runs after a failed PreBind.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import claims as dra_claims
from services.api.machinery.errors import AllocationConflictError, ConflictError
from services.api.machinery.kinds import BY_KIND
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker

#: The finalizer the scheduler puts on a claim it allocates (upstream resourceapi.Finalizer);
#: the resourceclaim controller removes it when it deallocates the claim.
FINALIZER = "resource.kubernetes.io/delete-protection"
#: retry.DefaultRetry's steps: PreBind's tries of one claim's status update on conflict.
CONFLICT_RETRIES = 5


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


async def bind_claim(
    client: Any,
    tracker: ClaimTracker,
    claim: resource_pb2.ResourceClaim,
    allocation: resource_pb2.AllocationResult | None,
    pod: core_pb2.Pod,
    *,
    on_written: Callable[[resource_pb2.ResourceClaim], None] | None = None,
    check_allocation: bool = False,
    consumer: resource_pb2.ResourceClaimConsumerReference | None = None,
) -> resource_pb2.ResourceClaim:
    """Write `allocation` (None: the claim is allocated already) and the reservation of
    `pod` into `claim`; returns the claim as written. `on_written(claim)` runs once it is
    written, before the tracker assumes it. The write is fenced by the client's token;
    with `check_allocation` (shared-state mode) a new allocation is checked against the
    devices' records, and a device another replica holds fails the attempt at once.
    `consumer`: whom to reserve the claim for (the pod's PodGroup for a claim its group
    shares; None: the pod)."""
    if consumer is None:
        consumer = dra_claims.pod_reference(pod)
    current = resource_pb2.ResourceClaim()
    current.CopyFrom(claim)
    written: resource_pb2.ResourceClaim | None = None
    try:
        for attempt in range(CONFLICT_RETRIES):
            if attempt:
                got = await client.get(
                    BY_KIND["ResourceClaim"], claim.metadata.name, claim.metadata.namespace
                )
                current = resource_pb2.ResourceClaim()
                current.CopyFrom(got)
            if current.metadata.deletion_timestamp:
                raise RuntimeError(f"claim {_key(claim)} got deleted in the meantime")
            if allocation is None and current.status.allocation != claim.status.allocation:
                # Filter chose the node by the allocation PreFilter saw; a claim since
                # deallocated or allocated anew (maybe on another node) must not be
                # reserved for a pod bound there (the attempt fails and is retried).
                raise RuntimeError(
                    f"claim {_key(claim)} got deallocated or allocated differently in the meantime"
                )
            if (attempt or allocation is None) and dra_claims.is_reserved_for(
                consumer.uid, current
            ):
                # An earlier try was written though its answer was lost, or the consumer
                # (a PodGroup) already holds it: done.
                written = current
                return written
            if not dra_claims.can_be_reserved(current):
                raise RuntimeError(
                    f"claim {_key(claim)}: status.reservedFor: Too many: "
                    f"{len(current.status.reserved_for) + 1}: must have at most "
                    f"{dra_claims.RESERVED_FOR_MAX} items"
                )
            try:
                if allocation is not None:
                    if current.status.HasField("allocation"):
                        raise RuntimeError(
                            f"claim {_key(claim)} got allocated elsewhere in the meantime"
                        )
                    if FINALIZER not in current.metadata.finalizers:
                        current.metadata.finalizers.append(FINALIZER)
                        current = await client.update(current)
                    current.status.allocation.CopyFrom(allocation)
                current.status.reserved_for.append(consumer)
                checked = allocation is not None and check_allocation
                kw = {"check_allocation": True} if checked else {}
                written = await client.update_status(current, **kw)
                return written
            except AllocationConflictError:
                raise  # a device another shared-state replica holds: the attempt fails
            except ConflictError:
                if attempt == CONFLICT_RETRIES - 1:
                    raise
        raise AssertionError("not reached")
    finally:
        if written is not None:
            # Reserved again: a background removal from an earlier Unreserve must stop.
            tracker.unreserving_done(claim.metadata.uid, pod.metadata.uid)
            if on_written is not None:
                on_written(written)
            if allocation is not None:
                tracker.assume(written)
