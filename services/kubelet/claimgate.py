"""Whether a hollow kubelet may start a pod's containers: every ResourceClaim the pod names
(and the one the scheduler made for its extended resources, named in
status.extendedResourceClaimStatus) must exist, be allocated (to devices the pod's node can
use) and be reserved for the pod
(upstream kubelet's DRA manager, PrepareResources, which fails the pod's sync until then;
the pod stays Pending and the kubelet retries on its next sync).

The pool keeps the allocated claims usable on its nodes (the only ones that can pass),
from one informer, and asks `unprepared` before it takes a pod to ContainerCreating; a pod that
waits is retried when a claim reserved for it changes or the pod itself changes (its
status.resourceClaimStatuses arriving from the resourceclaim controller).
"""

from __future__ import annotations

from collections.abc import Callable, Container

from protos.kubera.v1 import core_pb2, resource_pb2
from services.api.dra.claims import (
    ClaimNotCreatedError,
    claim_name,
    is_for_pod,
    is_reserved_for_pod,
)
from services.api.helpers.nodeaffinity import NodeSelector
from services.api.helpers.wellknown import LABEL_HOSTNAME

#: The reason of upstream's event when PrepareResources fails.
REASON_FAILED_PREPARE = "FailedPrepareDynamicResources"


#: Node selector keys that name a node (the allocator selects node-local devices by
#: metadata.name, as upstream's does; a hostname label names it as well).
_NODE_NAME_KEYS = frozenset({"metadata.name", LABEL_HOSTNAME})


def usable_on(claim: resource_pb2.ResourceClaim, nodes: Container[str]) -> bool:
    """Whether a pool running `nodes` must keep the claim: it is allocated (an unallocated
    claim holds a pod back just as its absence does) and its allocation may be used on one
    of them. A node selector whose every term names nodes by name, none of them ours, rules
    the claim out; any other selector (labels) or none at all (devices reachable from
    every node) keeps it."""
    if not claim.status.HasField("allocation"):
        return False
    allocation = claim.status.allocation
    if not allocation.HasField("node_selector"):
        return True
    terms = allocation.node_selector.node_selector_terms
    if not terms:
        return True
    for term in terms:
        reqs = [*term.match_fields, *term.match_expressions]
        named = [r for r in reqs if r.key in _NODE_NAME_KEYS and r.operator == "In"]
        if len(named) != len(reqs) or not named:
            return True  # selects by something else: cannot rule it out
        if any(v in nodes for r in named for v in r.values):
            return True
    return False


def usable_by(claim: resource_pb2.ResourceClaim, node: core_pb2.Node) -> bool:
    """Whether the claim's allocation may be used on `node` (its name and labels): no node
    selector (devices reachable from every node) or one that matches the node."""
    allocation = claim.status.allocation
    if not allocation.HasField("node_selector"):
        return True
    return NodeSelector(allocation.node_selector).match(node)


def unprepared(
    pod: core_pb2.Pod,
    lookup: Callable[[str], resource_pb2.ResourceClaim | None],
    node: core_pb2.Node,
) -> str | None:
    """None when the pod may run on `node` (the pod's own, with its labels); else why not
    (upstream's wording). `lookup` takes "<namespace>/<name>" and gives the claim, or None
    when it is not known (or not allocated).

    Unlike upstream's kubelet, the claim's allocation must also select `node`: a pool runs
    many nodes and keeps the claims of all of them, so a pod bound to one node while its
    claim was re-allocated on another (the scheduler's race, review finding 4) must wait
    rather than start with devices it cannot reach."""
    for entry in pod.spec.resource_claims:
        try:
            ref = claim_name(pod, entry)
        except ClaimNotCreatedError:
            return f'waiting for the ResourceClaim of "{entry.name}" to be created'
        except ValueError as e:
            return str(e)
        if ref.name is None:
            continue  # no claim needed for this entry
        why = _unusable(pod, ref.name, ref.check_owner, lookup, node)
        if why is not None:
            return why
    # DRAExtendedResource: the claim the scheduler made for the pod's extended resources
    # (upstream's kubelet prepares it beside the pod's own, by name).
    extended = pod.status.extended_resource_claim_status.resource_claim_name
    if extended:
        return _unusable(pod, extended, False, lookup, node)
    return None


def _unusable(
    pod: core_pb2.Pod,
    name: str,
    check_owner: bool,
    lookup: Callable[[str], resource_pb2.ResourceClaim | None],
    node: core_pb2.Node,
) -> str | None:
    """Why the claim `name` keeps the pod from running on `node`, or None."""
    claim = lookup(f"{pod.metadata.namespace}/{name}")
    if claim is None:
        return f"ResourceClaim {name} referenced by pod {pod.metadata.name}: not found or not allocated"
    if check_owner and not is_for_pod(pod, claim):
        return f"ResourceClaim {name} was not created for pod {pod.metadata.name}"
    if not claim.status.HasField("allocation"):
        return f"ResourceClaim {name}: not allocated"
    if not usable_by(claim, node):
        return (
            f"ResourceClaim {name} is allocated to devices that node "
            f"{node.metadata.name} cannot use"
        )
    if not is_reserved_for_pod(pod, claim):
        return (
            f"pod {pod.metadata.name} ({pod.metadata.uid}) is not allowed to use "
            f"ResourceClaim {name} ({claim.metadata.uid})"
        )
    return None


__all__ = ["REASON_FAILED_PREPARE", "unprepared", "usable_by", "usable_on"]
