"""Reusing filter results across pods with identical scheduling constraints.

Many pods (a Deployment's replicas, a load test) ask the same of a node. For a pod whose
Filter outcome depends only on itself and the one node — no inter-pod (anti-)affinity,
no topology spread, no existing pod with required anti-affinity in the cluster, and only
node-local filter plugins in its profile — the outcome on a node is a function of the
pod's scheduling signature and that NodeInfo's generation (bumped on every change to the
node or its pods). So it is cached under (signature, node) and reused while the
generation is unchanged; any change to the node makes the entry stale by construction.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import PodInfo

#: Filter plugins whose verdict needs nothing beyond the pod and the node (for an eligible
#: pod: InterPodAffinity and PodTopologySpread pass every node when the pod has no terms
#: or constraints and no existing pod has required anti-affinity).
NODE_LOCAL_FILTERS = frozenset(
    {
        "NodeName",
        "NodeUnschedulable",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "InterPodAffinity",
        "PodTopologySpread",
    }
)


def signature(pod: core_pb2.Pod) -> bytes:
    """Everything of the pod that a node-local filter reads, as bytes."""
    spec = core_pb2.PodSpec(
        node_name=pod.spec.node_name,
        node_selector=pod.spec.node_selector,
        tolerations=pod.spec.tolerations,
        scheduler_name=pod.spec.scheduler_name,
        overhead=pod.spec.overhead,
    )
    if pod.spec.affinity.HasField("node_affinity"):
        spec.affinity.node_affinity.CopyFrom(pod.spec.affinity.node_affinity)
    for src, dst in (
        (pod.spec.containers, spec.containers),
        (pod.spec.init_containers, spec.init_containers),
    ):
        for c in src:
            dst.add(resources=c.resources, ports=c.ports)
    return spec.SerializeToString(deterministic=True)


def eligible(
    pi: PodInfo, filter_plugins: Iterable[str], cluster_has_required_anti_affinity: bool
) -> bool:
    return (
        not pi.has_affinity()
        and not pi.pod.spec.topology_spread_constraints
        and not cluster_has_required_anti_affinity
        and set(filter_plugins) <= NODE_LOCAL_FILTERS
    )


class EquivalenceCache:
    """signature → node name → (node generation, filter Status); at most `max_classes`
    signatures, least recently used dropped first."""

    def __init__(self, max_classes: int = 256) -> None:
        self._max = max_classes
        self._classes: OrderedDict[bytes, dict[str, tuple[int, Status]]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def entries(self, sig: bytes) -> dict[str, tuple[int, Status]]:
        d = self._classes.pop(sig, None)
        if d is None:
            d = {}
        self._classes[sig] = d
        while len(self._classes) > self._max:
            self._classes.popitem(last=False)
        return d
