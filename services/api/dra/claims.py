"""Which ResourceClaim a pod's spec.resourceClaims entry stands for, and reservations
(upstream k8s.io/dynamic-resource-allocation/resourceclaim: Name, IsForPod,
IsReservedForPod, CanBeReserved).

A pod's entry names a claim directly (resourceClaimName) or a template
(resourceClaimTemplateName); for a template the resourceclaim controller creates a claim
owned by the pod and records its name in the pod's status.resourceClaimStatuses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.pools import DeviceID

#: At most this many consumers in a claim's status.reservedFor (upstream ResourceClaimReservedForMaxSize).
RESERVED_FOR_MAX = 256
#: The namespace label that allows requests with adminAccess (upstream DRAAdminNamespaceLabelKey).
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
#: The annotation a claim made from a template carries: "<pod's claim entry name>".
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"


class ClaimNotCreatedError(LookupError):
    """The pod names a template but its claim has not been created yet (no status entry)."""


@dataclass(frozen=True)
class ClaimRef:
    """The ResourceClaim a pod's entry resolves to. `check_owner`: the claim was made from a
    template, so it must be owned by the pod (else it is someone else's claim of that name)."""

    name: str | None  # None: the template controller decided no claim is needed
    check_owner: bool


def claim_name(pod: core_pb2.Pod, entry: core_pb2.PodResourceClaim) -> ClaimRef:
    """upstream resourceclaim.Name: the claim for one of the pod's spec.resourceClaims.

    Raises ClaimNotCreatedError for a template entry with no status entry yet, ValueError
    for an entry with neither source."""
    if entry.HasField("resource_claim_name"):
        return ClaimRef(entry.resource_claim_name, False)
    if entry.HasField("resource_claim_template_name"):
        for status in pod.status.resource_claim_statuses:
            if status.name == entry.name:
                name = (
                    status.resource_claim_name if status.HasField("resource_claim_name") else None
                )
                return ClaimRef(name, True)
        raise ClaimNotCreatedError(
            f'pod "{pod.metadata.name}": no claim made yet for "{entry.name}"'
        )
    raise ValueError(
        f'pod "{pod.metadata.name}": resourceClaims entry "{entry.name}" names no claim'
    )


def is_for_pod(pod: core_pb2.Pod, claim: resource_pb2.ResourceClaim) -> bool:
    """upstream IsForPod: the claim is controlled by the pod (made from a template for it)."""
    return any(
        ref.uid == pod.metadata.uid and ref.controller for ref in claim.metadata.owner_references
    )


def existing_pod_claims(
    pod: core_pb2.Pod, lookup: Callable[[str], resource_pb2.ResourceClaim | None]
) -> Iterator[resource_pb2.ResourceClaim]:
    """The claims of the pod's entries that exist (`lookup` by "namespace/name") and are
    the pod's: made, and owned by the pod when made from a template. Entries without a claim
    yet, or whose claim is not needed, are skipped."""
    for entry in pod.spec.resource_claims:
        try:
            ref = claim_name(pod, entry)
        except (ClaimNotCreatedError, ValueError):
            continue
        if ref.name is None:
            continue
        claim = lookup(f"{pod.metadata.namespace}/{ref.name}")
        if claim is not None and not (ref.check_owner and not is_for_pod(pod, claim)):
            yield claim


def is_reserved_for_pod(pod: core_pb2.Pod, claim: resource_pb2.ResourceClaim) -> bool:
    return any(ref.uid == pod.metadata.uid for ref in claim.status.reserved_for)


def can_be_reserved(claim: resource_pb2.ResourceClaim) -> bool:
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX


def pod_reference(pod: core_pb2.Pod) -> resource_pb2.ResourceClaimConsumerReference:
    """The reservedFor entry for a pod."""
    return resource_pb2.ResourceClaimConsumerReference(
        resource="pods", name=pod.metadata.name, uid=pod.metadata.uid
    )


def allocation_devices(claim: resource_pb2.ResourceClaim) -> list[DeviceID]:
    """The devices a claim's allocation holds exclusively (admin-access results and shares
    of devices that allow multiple allocations do not): what the scheduler counts as in
    use, what a shared-state claim write records (services/apiserver/allocation.py)
    and what the chaos checker proves is never held twice."""
    if not claim.status.HasField("allocation"):
        return []
    return [
        DeviceID(r.driver, r.pool, r.device)
        for r in claim.status.allocation.devices.results
        if not r.admin_access and not r.HasField("share_id")
    ]
