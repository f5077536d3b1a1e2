"""Does a request fit a node: the resource arithmetic behind NodeResourcesFit's Filter.

Upstream fit.go's fitsRequest / Fits, kept apart from the plugin so that the plugin module
reads as its extension points. It checks cpu, memory, ephemeral-storage, the pod count and
scalar (extended) resources: a request fits when it is at most allocatable - requested.
Reasons are upstream's ("Too many pods", "Insufficient cpu", "Insufficient <resource>"); a
shortfall is unresolvable when the request exceeds the node's whole allocatable (preemption
cannot help).
"""

from __future__ import annotations

from dataclasses import dataclass

from services.api.helpers.resources import (
    CPU,
    EPHEMERAL,
    MEMORY,
    PODS,
    Resource,
    is_extended_resource_name,
)
from services.scheduler.framework.types import NodeInfo, PodInfo


@dataclass(frozen=True)
class InsufficientResource:
    """A resource the node lacks for the pod (upstream InsufficientResource)."""

    resource_name: str
    reason: str
    requested: int
    used: int
    capacity: int
    #: The request exceeds the node's whole allocatable: preemption cannot help.
    unresolvable: bool = False


def requests_nothing(req: Resource) -> bool:
    return req.milli_cpu == 0 and req.memory == 0 and req.ephemeral_storage == 0 and not req.scalar


def checked_scalars(
    req: Resource, ignored: frozenset[str], ignored_groups: frozenset[str]
) -> list[tuple[str, int]]:
    """The scalar requests Filter checks, in a stable (sorted) order."""
    out = []
    for name in sorted(req.scalar):
        q = req.scalar[name]
        if q == 0:
            continue
        if is_extended_resource_name(name) and (
            name in ignored or name.split("/", 1)[0] in ignored_groups
        ):
            continue
        out.append((name, q))
    return out


def delegated_to_dra(name: str, allocatable: dict[str, int], dra: frozenset[str]) -> bool:
    """upstream shouldDelegateResourceToDRA: a DeviceClass maps the resource (`dra`, found at
    PreFilter with DRAExtendedResource on) and the node does not advertise it, so
    DynamicResources gives it through a claim instead."""
    return name in dra and allocatable.get(name, 0) <= 0


def fits_request(
    req: Resource,
    node_info: NodeInfo,
    ignored: frozenset[str] = frozenset(),
    ignored_groups: frozenset[str] = frozenset(),
    dra: frozenset[str] = frozenset(),
) -> list[InsufficientResource]:
    """What `node_info` lacks for a pod requesting `req` (upstream fitsRequest); `dra`: the
    requested resources a DeviceClass maps (see `delegated_to_dra`)."""
    out: list[InsufficientResource] = []
    alloc, used = node_info.allocatable, node_info.requested
    if len(node_info.pods) + 1 > alloc.allowed_pod_number:
        out.append(
            InsufficientResource(
                PODS, "Too many pods", 1, len(node_info.pods), alloc.allowed_pod_number
            )
        )
    if requests_nothing(req):
        return out
    if req.milli_cpu > 0 and req.milli_cpu > alloc.milli_cpu - used.milli_cpu:
        out.append(
            InsufficientResource(
                CPU,
                "Insufficient cpu",
                req.milli_cpu,
                used.milli_cpu,
                alloc.milli_cpu,
                req.milli_cpu > alloc.milli_cpu,
            )
        )
    if req.memory > 0 and req.memory > alloc.memory - used.memory:
        out.append(
            InsufficientResource(
                MEMORY,
                "Insufficient memory",
                req.memory,
                used.memory,
                alloc.memory,
                req.memory > alloc.memory,
            )
        )
    if (
        req.ephemeral_storage > 0
        and req.ephemeral_storage > alloc.ephemeral_storage - used.ephemeral_storage
    ):
        out.append(
            InsufficientResource(
                EPHEMERAL,
                "Insufficient ephemeral-storage",
                req.ephemeral_storage,
                used.ephemeral_storage,
                alloc.ephemeral_storage,
                req.ephemeral_storage > alloc.ephemeral_storage,
            )
        )
    for name, q in checked_scalars(req, ignored, ignored_groups):
        if delegated_to_dra(name, alloc.scalar, dra):
            continue
        a, u = alloc.scalar.get(name, 0), used.scalar.get(name, 0)
        if q > a - u:
            out.append(InsufficientResource(name, f"Insufficient {name}", q, u, a, q > a))
    return out


def fits(pod_info: PodInfo, node_info: NodeInfo) -> list[InsufficientResource]:
    """Upstream Fits: the node's shortfalls for this pod (no ignored resources)."""
    return fits_request(pod_info.requests, node_info)
