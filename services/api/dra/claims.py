"""Which ResourceClaim a pod's spec.resourceClaims entry stands for, and reservations
(upstream k8s.io/dynamic-resource-allocation/resourceclaim: Name, IsForPod,
IsReservedForPod, CanBeReserved).

A pod's entry names a claim directly (resourceClaimName) or a template
(resourceClaimTemplateName); for a template the resourceclaim controller creates a claim
owned by the pod and records its name in the pod's status.resourceClaimStatuses.

PodGroup claims (DRAWorkloadResourceClaims, KEP-5729): a PodGroup's spec.resourceClaims
name claims (or templates) its pods share. A pod's entry that matches one of them exactly
(same name, same claim or template) stands for the group's claim: a template's claim is
made once for the group (owned by the PodGroup, its name in the group's
status.resourceClaimStatuses and copied into the pod's), and the claim is reserved for the
PodGroup (one reservedFor entry {scheduling.k8s.io, podgroups}) instead of for each pod, so
a group of any size shares it. A pod is taken to be a consumer of a claim reserved for its
own group (same namespace, the group's name in spec.schedulingGroup.podGroupName), and a
claim controlled by its PodGroup counts as made for it; the kubelet has no PodGroups and
matches by name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2, resource_pb2, schedulingv1beta1_pb2
from services.api.dra.pools import DeviceID

#: At most this many consumers in a claim's status.reservedFor (upstream ResourceClaimReservedForMaxSize).
RESERVED_FOR_MAX = 256
#: The namespace label that allows requests with adminAccess (upstream DRAAdminNamespaceLabelKey).
ADMIN_ACCESS_NAMESPACE_LABEL = "resource.kubernetes.io/admin-access"
#: The annotation a claim made from a template carries: "<pod's claim entry name>".
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
#: A reservedFor entry of a PodGroup: its API group and resource.
POD_GROUP_API_GROUP = "scheduling.k8s.io"
POD_GROUP_RESOURCE = "podgroups"

PodGroup = schedulingv1beta1_pb2.SchedulingPodGroup


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
    """upstream IsForPod: the claim is controlled by the pod (made from a template for it),
    or by the pod's own PodGroup (made from a template for the group)."""
    group = pod.spec.scheduling_group.pod_group_name
    for ref in claim.metadata.owner_references:
        if not ref.controller:
            continue
        if ref.uid == pod.metadata.uid:
            return True
        if (
            group
            and ref.kind == "PodGroup"
            and ref.api_version.startswith(POD_GROUP_API_GROUP + "/")
            and ref.name == group
            and claim.metadata.namespace == pod.metadata.namespace
        ):
            return True
    return False


def pod_group_entry(
    pod_group: PodGroup, entry: core_pb2.PodResourceClaim
) -> schedulingv1beta1_pb2.PodGroupResourceClaim | None:
    """The PodGroup's spec.resourceClaims entry the pod's `entry` matches exactly (same name,
    same claim or template), or None: then the entry is the pod's own."""
    for pg_entry in pod_group.spec.resource_claims:
        if (
            pg_entry.name == entry.name
            and pg_entry.HasField("resource_claim_name") == entry.HasField("resource_claim_name")
            and pg_entry.resource_claim_name == entry.resource_claim_name
            and pg_entry.HasField("resource_claim_template_name")
            == entry.HasField("resource_claim_template_name")
            and pg_entry.resource_claim_template_name == entry.resource_claim_template_name
        ):
            return pg_entry
    return None


def pod_group_claim_name(pod_group: PodGroup, name: str) -> str | None:
    """The claim the PodGroup's entry `name` stands for: its claim, or the one made from its
    template (status.resourceClaimStatuses; None while not made yet)."""
    for pg_entry in pod_group.spec.resource_claims:
        if pg_entry.name != name:
            continue
        if pg_entry.HasField("resource_claim_name"):
            return str(pg_entry.resource_claim_name)
        for st in pod_group.status.resource_claim_statuses:
            if st.name == name and st.HasField("resource_claim_name"):
                return str(st.resource_claim_name)
    return None


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
    """The claim is reserved for the pod, or for the pod's own PodGroup."""
    group = pod.spec.scheduling_group.pod_group_name
    return any(
        ref.uid == pod.metadata.uid
        or (
            group
            and ref.api_group == POD_GROUP_API_GROUP
            and ref.resource == POD_GROUP_RESOURCE
            and ref.name == group
            and claim.metadata.namespace == pod.metadata.namespace
        )
        for ref in claim.status.reserved_for
    )


def is_reserved_for(uid: str, claim: resource_pb2.ResourceClaim) -> bool:
    """The claim has a reservedFor entry of exactly this consumer."""
    return any(ref.uid == uid for ref in claim.status.reserved_for)


def can_be_reserved(claim: resource_pb2.ResourceClaim) -> bool:
    return len(claim.status.reserved_for) < RESERVED_FOR_MAX


def pod_reference(pod: core_pb2.Pod) -> resource_pb2.ResourceClaimConsumerReference:
    """The reservedFor entry for a pod."""
    return resource_pb2.ResourceClaimConsumerReference(
        resource="pods", name=pod.metadata.name, uid=pod.metadata.uid
    )


def pod_group_reference(pod_group: PodGroup) -> resource_pb2.ResourceClaimConsumerReference:
    """The reservedFor entry for a PodGroup (upstream: the group instead of its pods)."""
    return resource_pb2.ResourceClaimConsumerReference(
        api_group=POD_GROUP_API_GROUP,
        resource=POD_GROUP_RESOURCE,
        name=pod_group.metadata.name,
        uid=pod_group.metadata.uid,
    )


def is_pod_group_reference(ref: resource_pb2.ResourceClaimConsumerReference) -> bool:
    return ref.api_group == POD_GROUP_API_GROUP and ref.resource == POD_GROUP_RESOURCE


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


def allocation_shares(
    claim: resource_pb2.ResourceClaim,
) -> dict[DeviceID, dict[str, dict[str, str]]]:
    """The shares of devices that allow multiple allocations the claim's allocation holds
    (results with a shareID, DRAConsumableCapacity): device -> shareID -> the capacity it
    consumes (name -> quantity, status.allocation's consumedCapacity). What a
    shared-state claim write records per device and what the chaos checker sums against
    the device's capacity (`allocation_devices` are the exclusive rest)."""
    if not claim.status.HasField("allocation"):
        return {}
    out: dict[DeviceID, dict[str, dict[str, str]]] = {}
    for r in claim.status.allocation.devices.results:
        if r.admin_access or not r.HasField("share_id"):
            continue
        d = DeviceID(r.driver, r.pool, r.device)
        out.setdefault(d, {})[r.share_id] = dict(r.consumed_capacity)
    return out
