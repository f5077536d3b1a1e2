"""What `kubera get nodes -o wide` adds to a node's row: the requests of the pods bound to
it (non-terminated), against its allocatable, as `kubectl describe node` sums them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from protos.kubera.v1 import core_pb2
from services.api.helpers.resources import CPU, MEMORY, PODS, Resource, pod_requests
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.quantity import (
    BINARY_SI,
    DECIMAL_SI,
    Quantity,
    QuantityError,
    canonicalize,
)
from services.api.printers.columns import (
    NONE,
    UNKNOWN,
)

TERMINATED_PHASES = ("Succeeded", "Failed")


def bound_pods_selector(nodes: Sequence[str]) -> str:
    """The field selector of the pods that count against `nodes`: bound there and not
    finished. One list serves any number of nodes; one node narrows it to its own pods."""
    node = f"spec.nodeName={nodes[0]}" if len(nodes) == 1 else "spec.nodeName!="
    return f"{node},status.phase!=Succeeded,status.phase!=Failed"


def is_byte_resource(name: str) -> bool:
    return name in (MEMORY, "ephemeral-storage") or name.startswith("hugepages-")


def format_amount(name: str, amount: int) -> str:
    """An amount in the scheduler's units (milli-CPU for cpu, bytes, counts) as a canonical
    quantity: cpu 3500 → `3500m`, 4000 → `4`; bytes in binary suffixes when a whole number
    of Ki (`6Gi`), else decimal (`1500M`). kubectl prints a sum in the suffix family of its
    first term, which agrees unless a node's pods mix `Gi` and `G`."""
    if name == CPU:
        return Quantity(Decimal(amount).scaleb(-3), DECIMAL_SI).canonical()
    if is_byte_resource(name) and amount % 1024 == 0:
        return Quantity(Decimal(amount), BINARY_SI).canonical()
    return Quantity(Decimal(amount), DECIMAL_SI).canonical()


def allocatable(node: core_pb2.Node) -> Mapping[str, str]:
    """Allocatable, or capacity when the node reports no allocatable (kubectl's fallback)."""
    return node.status.allocatable or node.status.capacity


@dataclass
class NodeUsage:
    """What the non-terminated pods bound to one node request."""

    pods: int = 0
    requested: Resource = field(default_factory=Resource)


def is_terminated(pod: core_pb2.Pod) -> bool:
    return pod.status.phase in TERMINATED_PHASES


def node_usage(pods: Iterable[core_pb2.Pod]) -> dict[str, NodeUsage]:
    """Per node name, from one list of pods on any nodes: how many non-terminated pods are
    bound there and the sum of their effective requests (the scheduler's `pod_requests`:
    max(sum of containers, largest init container) + overhead)."""
    usage: dict[str, NodeUsage] = {}
    for pod in pods:
        node = pod.spec.node_name
        if not node or is_terminated(pod):
            continue
        u = usage.setdefault(node, NodeUsage())
        u.pods += 1
        u.requested.add(pod_requests(pod))
    return usage


def used_of(name: str, requested: int, node: core_pb2.Node) -> str:
    """`3500m/4`: requested / allocatable, `<none>` for an allocatable the node lacks."""
    total = allocatable(node).get(name)
    if total is None:
        shown = NONE
    else:
        try:
            shown = canonicalize(total)
        except QuantityError:
            shown = total
    return f"{format_amount(name, requested)}/{shown}"


def usage_cells(node: core_pb2.Node, usage: Mapping[str, NodeUsage] | None) -> list[str]:
    if usage is None:  # the caller did not list the pods: say so rather than print 0
        return [UNKNOWN, UNKNOWN, UNKNOWN]
    u = usage.get(object_meta(node).name) or NodeUsage()
    return [
        used_of(CPU, u.requested.milli_cpu, node),
        used_of(MEMORY, u.requested.memory, node),
        used_of(PODS, u.pods, node),
    ]
