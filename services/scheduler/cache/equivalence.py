"""Reusing filter results across pods with identical scheduling constraints.

Many pods (a Deployment's replicas, a load test) ask the same of a node. For a pod whose
Filter outcome depends only on itself and the one node — no inter-pod (anti-)affinity,
no topology spread, no existing pod with required anti-affinity in the cluster, and only
node-local filter plugins in its profile — the outcome on a node is a function of the
pod's scheduling signature and that NodeInfo's generation (bumped on every change to the
node or its pods). So it is cached under (signature, node) and reused while the
generation is unchanged; any change to the node makes the entry stale by construction.
Verdicts are kept per snapshot row (arrays beside the snapshot's `row_gen`), so a cycle
looks up all of its candidate rows at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from protos.kubera.v1 import core_pb2
from services.api.dra.extended import is_dra_extended_resource_name
from services.api.helpers.podvolumes import has_scheduling_volumes
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import PodInfo

#: Filter plugins whose verdict needs nothing beyond the pod and the node (for an eligible
#: pod: InterPodAffinity and PodTopologySpread pass every node when the pod has no terms
#: or constraints and no existing pod has required anti-affinity).
#: (DynamicResources passes every node for a pod without resource claims or extended
#: resources, so a profile with it is node-local too: `node_local`; `eligible_pod` leaves
#: out pods with claims or extended resources.
#: The same holds for the volume plugins and a pod without claims, ephemeral volumes or
#: in-tree disks: `PASS_WITHOUT_VOLUMES`, and `eligible_pod` leaves out such pods.)
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


#: Filter plugins that pass every node for a pod without claims, ephemeral volumes or
#: in-tree disks (podvolumes.has_scheduling_volumes).
PASS_WITHOUT_VOLUMES = frozenset(
    {"VolumeRestrictions", "NodeVolumeLimits", "VolumeZone", "VolumeBinding"}
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
            # restartPolicy: an init container with Always is a sidecar, whose requests and
            # host ports count beside the containers' instead of at their maximum.
            dst.add(resources=c.resources, ports=c.ports, restart_policy=c.restart_policy)
    return spec.SerializeToString(deterministic=True)


def pod_signature(pi: PodInfo) -> bytes:
    """`signature(pi.pod)`, computed once per PodInfo and once per distinct spec: a pod
    retried, or another pod of the same template, does not build it again. PodInfos made
    for a changed spec (PodInfo.assigned, .updated) do not inherit it (PodInfo.signature)."""
    sig = pi.signature
    if sig is None:
        spec = pi.spec_bytes
        if spec is None:
            sig = signature(pi.pod)
        else:
            # The signature is a function of the spec alone: pods of one template share it.
            sig = _BY_SPEC.get(spec)
            if sig is None:
                sig = signature(pi.pod)
                if len(_BY_SPEC) >= SIGNATURE_MEMO_SIZE:
                    _BY_SPEC.clear()
                _BY_SPEC[spec] = sig
        pi.signature = sig
    return sig


#: signature by the spec's deterministic bytes (PodInfo.spec_bytes); cleared when full.
_BY_SPEC: dict[bytes, bytes] = {}
SIGNATURE_MEMO_SIZE = 4096


def node_local(filter_plugins: Iterable[str]) -> bool:
    """Whether a profile with these Filter plugins has only node-local ones."""
    return set(filter_plugins) <= NODE_LOCAL_FILTERS | {"DynamicResources"} | PASS_WITHOUT_VOLUMES


def eligible(
    pi: PodInfo, filter_plugins: Iterable[str], cluster_has_required_anti_affinity: bool
) -> bool:
    return eligible_pod(pi, cluster_has_required_anti_affinity) and node_local(filter_plugins)


def eligible_pod(pi: PodInfo, cluster_has_required_anti_affinity: bool) -> bool:
    """`eligible` without the profile's half (`node_local`, fixed per profile)."""
    return (
        not pi.has_affinity()
        and not pi.pod.spec.topology_spread_constraints
        and not cluster_has_required_anti_affinity
        and not pi.pod.spec.resource_claims
        and not has_scheduling_volumes(pi.pod)
        # draext: an extended resource a DeviceClass may map is given by DRA, whose devices
        # and classes change no NodeInfo generation.
        and not any(is_dra_extended_resource_name(n) for n in pi.requests.scalar)
    )


class Verdicts:
    """One signature's Filter verdicts per snapshot row: the NodeInfo generation each was
    computed at (-1: none) and the verdict (0: the node passes; k > 0: `statuses[k]`).
    Valid for one snapshot layout (`Snapshot.layout_version`): rows renumbered, it starts
    over."""

    __slots__ = ("layout", "gen", "verdict", "statuses", "_ids")

    def __init__(self, layout: int, n: int) -> None:
        self.layout = layout
        self.gen = np.full(n, -1, dtype=np.int64)
        self.verdict = np.zeros(n, dtype=np.int32)
        self.statuses: list[Status] = [Status.success()]
        self._ids: dict[Status, int] = {}

    def hits(self, rows: np.ndarray, row_gen: np.ndarray) -> np.ndarray:
        """bool aligned with `rows`: a verdict computed at the row's current generation."""
        return self.gen[rows] == row_gen[rows]

    def store(
        self,
        rows: np.ndarray,
        row_gen: np.ndarray,
        ok: np.ndarray,
        rejected: dict[int, Status],
    ) -> None:
        """Remember the verdicts of `rows` (ok, aligned with rows; position -> Status of
        the others). An Error says nothing about the node: not remembered."""
        keep = np.ones(len(rows), dtype=bool)
        verdict = np.zeros(len(rows), dtype=np.int32)
        for j, st in rejected.items():
            if st.code == Code.ERROR:
                keep[j] = False
                continue
            k = self._ids.get(st)
            if k is None:
                k = self._ids[st] = len(self.statuses)
                self.statuses.append(st)
            verdict[j] = k
        if not keep.all():
            rows, verdict = rows[keep], verdict[keep]
        self.gen[rows] = row_gen[rows]
        self.verdict[rows] = verdict


class EquivalenceCache:
    """signature → Verdicts; at most `max_classes` signatures, least recently used dropped
    first."""

    def __init__(self, max_classes: int = 256) -> None:
        self._max = max_classes
        self._classes: OrderedDict[bytes, Verdicts] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def entries(self, sig: bytes, layout: int, n: int) -> Verdicts:
        """The verdicts of `sig` for a snapshot of `n` rows at layout `layout` (empty when
        the layout changed since they were stored)."""
        d = self._classes.pop(sig, None)
        if d is None or d.layout != layout or len(d.gen) != n:
            d = Verdicts(layout, n)
        self._classes[sig] = d
        while len(self._classes) > self._max:
            self._classes.popitem(last=False)
        return d
