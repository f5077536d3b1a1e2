"""DynamicResources for extended resources backed by DRA (DRAExtendedResource; upstream
extendeddynamicresources.go). The vocabulary (which class serves a name, the claim's
requests and the container mappings) is in services/api/dra/extended.py; this is what each
extension point does with it:

    PreFilter    the pod requests an extended resource a DeviceClass maps: the claim an
                 earlier attempt made for the pod (annotated, owned by it) or a new one in
                 memory, named "<extended-resources>" with a temporary uid, no requests
    Filter       a claim from an earlier attempt is stale: Unschedulable, PostFilter
                 deletes it; else the resources the node does not advertise (allocatable
                 0) become this node's requests, allocated with the pod's other claims;
                 a resource neither advertised nor mapped does not fit
    PostFilter   delete the stale claim (its delete event brings the pod back)
    Reserve      the node's allocation is pending under the temporary uid
    Unreserve    drop it; delete the claim if PreBind created it
    PreBind      create the claim (generateName "<pod>-extended-resources-"), write its
                 allocation and the pod's reservation, then the pod's
                 status.extendedResourceClaimStatus (merge patch)

Difference from upstream: the claim is not waited for in the informer after its creation
(upstream polls its assume cache for up to 120 s): the tracker takes the written claim as
assumed at once.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra import extended
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import NodeInfo, QueueingHint
from services.scheduler.plugins.dynamicresources.bindclaim import CONFLICT_RETRIES

#: The plugin's name (plugin.NAME, which imports this module).
NAME = "DynamicResources"
#: The in-memory claim's name: not a valid object name, so it names no stored claim.
IN_MEMORY_NAME = "<extended-resources>"
ERR_STALE = "cannot schedule extended resource claim"


@dataclass
class NodeClaim:
    """What one node needs: the claim with its requests, and the container mappings."""

    claim: resource_pb2.ResourceClaim
    mappings: list[core_pb2.ContainerExtendedResourceRequest]
    key: tuple[extended.Request, ...]
    allocation: resource_pb2.AllocationResult | None = None


@dataclass
class ExtendedClaim:
    """One attempt's extended resource claim (upstream's special claim in stateData)."""

    claim: resource_pb2.ResourceClaim
    #: the pod's requests a DeviceClass maps, and which class serves each name
    requests: dict[str, int]
    mapping: dict[str, resource_pb2.DeviceClass]
    #: every requested scalar resource (a name neither advertised nor mapped does not fit)
    scalars: dict[str, int]
    #: Filter's claim per node name (None: the node gives every resource itself)
    nodes: dict[str, NodeClaim | None] = field(default_factory=dict)
    #: the uid Reserve's pending allocation is kept under
    pending_uid: str = ""
    #: the claim as PreBind created it (Unreserve deletes it)
    created: resource_pb2.ResourceClaim | None = None
    pod: core_pb2.Pod = field(default_factory=core_pb2.Pod)

    @property
    def stale(self) -> bool:
        """Made by an earlier attempt (it has requests): deleted, then tried anew."""
        return len(self.claim.spec.devices.requests) > 0

    def for_node(self, node_info: NodeInfo) -> tuple[Status | None, NodeClaim | None]:
        """upstream filterExtendedResources: (a rejection, or None) and this node's claim
        (None: nothing to allocate through DRA here)."""
        if self.stale:
            return Status.unresolvable(ERR_STALE, plugin=NAME), None
        alloc = node_info.allocatable.scalar
        through_dra: list[str] = []
        for name, q in sorted(self.scalars.items()):
            if not q or not extended.is_dra_extended_resource_name(name):
                continue
            if name in self.mapping and alloc.get(name, 0) <= 0:
                through_dra.append(name)
            elif name not in alloc:
                return Status.unresolvable(f"cannot fit resource {name}", plugin=NAME), None
        if not through_dra or self.claim.status.HasField("allocation"):
            return None, None
        requests, mappings = extended.requests_and_mappings(self.pod, through_dra, self.mapping)
        node_claim = NodeClaim(
            extended.claim_for_node(self.claim, requests), mappings, tuple(requests)
        )
        self.nodes[node_info.name] = node_claim
        return None, node_claim


def pre_filter(
    pod: core_pb2.Pod,
    scalars: Mapping[str, int],
    classes: Mapping[str, resource_pb2.DeviceClass],
    claims: Callable[[], Any],
) -> ExtendedClaim | None:
    """upstream preFilterExtendedResources: None when no request is mapped to a class."""
    if not scalars:
        return None
    mapping = extended.resolve(classes.values())
    requests = extended.mapped_requests(scalars, mapping)
    if not requests:
        return None
    claim = extended.find_claim(pod, claims())
    if claim is None:
        claim = extended.new_claim(pod)
        claim.metadata.name = IN_MEMORY_NAME
        claim.metadata.uid = str(uuid.uuid4())
    return ExtendedClaim(claim, requests, mapping, dict(scalars), pod=pod)


def _owner_key(namespace: str, pod_uid: str) -> str:
    return f"ExtendedResourceClaim/{namespace}/{pod_uid}"


def deleted_claim_keys(old: Any, new: Any) -> list[str]:
    """The queue's narrowing of a claim delete (ClusterEventWithHint.affected): the pod
    owning a deleted extended resource claim; no pod for any other claim."""
    claim = old if old is not None else new
    if not isinstance(claim, resource_pb2.ResourceClaim):
        return []
    if not extended.is_extended_resource_claim(claim):
        return []
    ns = claim.metadata.namespace
    return [_owner_key(ns, r.uid) for r in claim.metadata.owner_references if r.controller]


def pod_owner_keys(pod: core_pb2.Pod) -> list[str]:
    """ClusterEventWithHint.pod_keys for deleted_claim_keys: the pod itself."""
    return [_owner_key(pod.metadata.namespace, pod.metadata.uid)]


def after_claim_delete(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's own extended resource claim was deleted (by PostFilter): try again."""
    claim = old if old is not None else new
    if isinstance(claim, resource_pb2.ResourceClaim) and extended.find_claim(pod, [claim]):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def pending(ext: ExtendedClaim, node: NodeClaim, finalizer: str) -> resource_pb2.ResourceClaim:
    """Reserve: the node's claim with its allocation, as the tracker keeps it pending."""
    claim = resource_pb2.ResourceClaim()
    claim.CopyFrom(node.claim)
    if finalizer not in claim.metadata.finalizers:
        claim.metadata.finalizers.append(finalizer)
    if node.allocation is not None:
        claim.status.allocation.CopyFrom(node.allocation)
    ext.pending_uid = claim.metadata.uid
    return claim


async def create(client: Any, node: NodeClaim) -> resource_pb2.ResourceClaim:
    """PreBind: the node's claim, stored (without name, uid or allocation)."""
    claim = resource_pb2.ResourceClaim()
    claim.CopyFrom(node.claim)
    claim.metadata.name = ""
    claim.metadata.uid = ""
    claim.ClearField("status")
    created: resource_pb2.ResourceClaim = await client.create(claim)
    return created


async def patch_pod_status(
    client: Any, pod: core_pb2.Pod, claim_name: str, node: NodeClaim
) -> None:
    """PreBind: the pod's status.extendedResourceClaimStatus."""
    if not node.mappings:
        raise RuntimeError(
            f"nil or empty request mappings, no update of pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} ExtendedResourceClaimStatus"
        )
    status = {
        "requestMappings": [
            {
                "containerName": m.container_name,
                "resourceName": m.resource_name,
                "requestName": m.request_name,
            }
            for m in node.mappings
        ],
        "resourceClaimName": claim_name,
    }
    await client.patch(
        BY_KIND["Pod"],
        pod.metadata.name,
        json.dumps({"status": {"extendedResourceClaimStatus": status}}),
        namespace=pod.metadata.namespace,
        status=True,
    )


async def delete(client: Any, claim: resource_pb2.ResourceClaim, finalizer: str) -> None:
    """upstream deleteClaim: drop the scheduler's finalizer (re-read on conflict), then
    delete; a claim already gone is fine."""
    kind = BY_KIND["ResourceClaim"]
    current = claim
    for attempt in range(CONFLICT_RETRIES):
        try:
            if attempt:
                current = await client.get(kind, claim.metadata.name, claim.metadata.namespace)
            if finalizer in current.metadata.finalizers:
                edited = resource_pb2.ResourceClaim()
                edited.CopyFrom(current)
                edited.metadata.finalizers.remove(finalizer)
                await client.update(edited)
            break
        except NotFoundError:
            return
        except ConflictError:
            if attempt == CONFLICT_RETRIES - 1:
                raise
    try:
        await client.delete(kind, claim.metadata.name, claim.metadata.namespace)
    except NotFoundError:
        return
