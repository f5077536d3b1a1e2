"""DynamicResources' queueing hints (upstream isSchedulableAfterClaimChange and
isSchedulableAfterPodChange) and the queue's narrowing of claim events to the waiting pods
that name the claim (ClusterEventWithHint.affected / pod_keys).

Why apart from the plugin: these run on every claim event for the waiting pods, not in a
scheduling cycle; they need only the pod's claims, which the plugin passes in as `claims`
(the pod's claims as the plugin's tracker sees them, or None when one is missing, not the
pod's or being deleted: upstream's foreachPodResourceClaim errors).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import claims as dra_claims
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from services.scheduler.plugins.dynamicresources import extended as extres

#: The pod's claims, or None when it cannot be scheduled as they are.
PodClaims = Callable[[core_pb2.Pod], "list[resource_pb2.ResourceClaim] | None"]


def deallocated(old: Any, new: Any) -> bool:
    """A claim update that took the allocation away: its devices are free for any pod."""
    return (
        old is not None
        and new is not None
        and old.status.HasField("allocation")
        and not new.status.HasField("allocation")
    )


def _claim_index_key(namespace: str, name: str) -> str:
    return f"ResourceClaim/{namespace}/{name}"


def claim_event_keys(old: Any, new: Any) -> list[str] | None:
    """The queue's narrowing of a claim event (see ClusterEventWithHint): the claim's own
    key, or None (any pod) for a delete or a deallocation, which may free devices for any
    pod whose claims are all made. Every other claim event is SKIP, in
    after_claim_change, for a pod that does not name this claim."""
    if new is None or deallocated(old, new):
        return None
    return [_claim_index_key(new.metadata.namespace, new.metadata.name)]


def pod_claim_keys(pod: core_pb2.Pod) -> list[str]:
    """The claims a waiting pod names (namespace/name); none while one of its claims is not
    made yet (or an entry is invalid): such a pod is SKIP for every claim event filed by
    claim_event_keys, and is woken by its own status update instead."""
    ns = pod.metadata.namespace
    keys: list[str] = []
    for entry in pod.spec.resource_claims:
        try:
            name = dra_claims.claim_name(pod, entry).name
        except (dra_claims.ClaimNotCreatedError, ValueError):
            return []
        if name is not None:
            keys.append(_claim_index_key(ns, name))
    return keys


def after_claim_change(pod: core_pb2.Pod, old: Any, new: Any, claims: PodClaims) -> QueueingHint:
    """upstream isSchedulableAfterClaimChange (add and update; never called for delete)."""
    if deallocated(old, new):
        # Its devices are free for any pod whose claims are all there.
        return QueueingHint.SKIP if claims(pod) is None else QueueingHint.QUEUE
    if new is None:  # not registered; a deleted claim may have held devices
        return QueueingHint.SKIP if claims(pod) is None else QueueingHint.QUEUE
    # Cheap first (every claim event asks this of every waiting pod it is filed under):
    # a claim the pod does not name (or a pod whose claims are not all made) is SKIP.
    if _claim_index_key(new.metadata.namespace, new.metadata.name) not in pod_claim_keys(pod):
        return QueueingHint.SKIP
    found = claims(pod)
    if found is None or not any(c.metadata.uid == new.metadata.uid for c in found):
        return QueueingHint.SKIP
    if old is None:
        return QueueingHint.QUEUE
    if old.status == new.status:
        return QueueingHint.SKIP  # e.g. a finalizer added
    return QueueingHint.QUEUE


def after_pod_change(pod: core_pb2.Pod, old: Any, new: Any, claims: PodClaims) -> QueueingHint:
    """upstream isSchedulableAfterPodChange: the pod's own claims got made."""
    if new is None or new.metadata.uid != pod.metadata.uid:
        return QueueingHint.SKIP
    return QueueingHint.SKIP if claims(new) is None else QueueingHint.QUEUE


def events(
    after_claim_change: Callable[[core_pb2.Pod, Any, Any], QueueingHint],
    after_pod_change: Callable[[core_pb2.Pod, Any, Any], QueueingHint],
    *,
    extended_resources: bool,
) -> list[ClusterEventWithHint]:
    """DynamicResources' EventsToRegister, with the plugin's two hints."""
    registered = [
        ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ClusterEventWithHint(
            ClusterEvent("ResourceClaim", ActionType.ADD | ActionType.UPDATE),
            after_claim_change,
            affected=claim_event_keys,
            pod_keys=pod_claim_keys,
        ),
        ClusterEventWithHint(
            ClusterEvent("Pod", ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM), after_pod_change
        ),
        ClusterEventWithHint(ClusterEvent("DeviceClass", ActionType.ADD | ActionType.UPDATE)),
        ClusterEventWithHint(ClusterEvent("ResourceSlice", ActionType.ADD | ActionType.UPDATE)),
        # drataints: a rule removed or changed may untaint a device.
        ClusterEventWithHint(ClusterEvent("DeviceTaintRule", ActionType.ALL)),
    ]
    if extended_resources:
        # draext: PostFilter deleted the pod's stale extended resource claim.
        registered.append(
            ClusterEventWithHint(
                ClusterEvent("ResourceClaim", ActionType.DELETE),
                extres.after_claim_delete,
                affected=extres.deleted_claim_keys,
                pod_keys=extres.pod_owner_keys,
            )
        )
    return registered
