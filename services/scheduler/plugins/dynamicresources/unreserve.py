"""DynamicResources' Unreserve of an allocated claim: the pod is taken out of the claim's
status.reservedFor in the background (upstream sends a strategic-merge patch; kubera gets,
edits and updates with the resourceVersion, retried on conflict). The allocation stays:
the resourceclaim controller deallocates a claim nobody reserves."""

from __future__ import annotations

import logging
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.machinery.errors import ConflictError
from services.api.machinery.kinds import BY_KIND
from services.scheduler.plugins.dynamicresources.bindclaim import CONFLICT_RETRIES
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker

log = logging.getLogger("services.scheduler.scheduler")


def _key(claim: resource_pb2.ResourceClaim) -> str:
    return f"{claim.metadata.namespace}/{claim.metadata.name}"


async def remove_reservation(
    tracker: ClaimTracker, client: Any, claim: resource_pb2.ResourceClaim, pod: core_pb2.Pod
) -> None:
    """Take the pod out of the claim's reservedFor; a later attempt retries on failure."""
    uid = pod.metadata.uid
    current: Any = claim
    for _ in range(CONFLICT_RETRIES):
        if not tracker.is_unreserving(claim.metadata.uid, uid):
            return  # a later attempt's PreBind reserved the claim again
        if current.metadata.uid != claim.metadata.uid:
            tracker.unreserving_done(claim.metadata.uid, uid)
            return
        edited = resource_pb2.ResourceClaim()
        edited.CopyFrom(current)
        kept = [r for r in edited.status.reserved_for if r.uid != uid]
        if len(kept) == len(edited.status.reserved_for):
            tracker.unreserving_done(claim.metadata.uid, uid)
            return
        del edited.status.reserved_for[:]
        edited.status.reserved_for.extend(kept)
        try:
            written = await client.update_status(edited)
            tracker.assume(written)
            return
        except ConflictError:
            try:
                current = await client.get(
                    BY_KIND["ResourceClaim"], claim.metadata.name, claim.metadata.namespace
                )
            except Exception as e:  # noqa: BLE001
                log.info("unreserve %s for pod %s: %s", _key(claim), pod.metadata.name, e)
                tracker.unreserving_done(claim.metadata.uid, uid)
                return
        except Exception as e:  # noqa: BLE001 - retried with the pod's next attempt
            log.info("unreserve %s for pod %s: %s", _key(claim), pod.metadata.name, e)
            tracker.unreserving_done(claim.metadata.uid, uid)
            return
    tracker.unreserving_done(claim.metadata.uid, uid)
