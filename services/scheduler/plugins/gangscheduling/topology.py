"""Topology-aware placement of a PodGroup (scheduling.k8s.io/v1beta1
`spec.schedulingConstraints.topology`, upstream's TopologyAwareWorkloadScheduling): every pod
of the group in one domain (value) of a node label, the domain chosen for the whole group.

Upstream's pod-group cycle runs three steps, which this module keeps as pure functions:

    generate   TopologyPlacement.GeneratePlacements: one placement per domain of the key
               among the candidate nodes; once pods of the group are scheduled (assumed or
               bound) only their domain, and an Error when they sit in two domains, on a node
               outside the snapshot, or on a node without the key (`generate_placements`)
    evaluate   each placement: the group's unscheduled pods tried one by one on its nodes,
               each tentatively reserved so the next sees it; feasible when PlacementFeasible
               holds (scheduled + placed >= minCount, 1 for a basic group) (`evaluate`)
    select     the feasible placements scored by the PlacementScore plugins,
               PodGroupPodsCount (scheduled + proposed pods, normalised to the best) and
               PlacementBinPacking (the strategy over the summed requests and allocatable of
               the placement's nodes, the proposed pods included) (`choose`)

Differences, on purpose: kubera schedules pod by pod (GangScheduling's Permit holds the
quorum), so GangScheduling's PreFilter runs these steps for a group that has no scheduled pod
yet and narrows the pod to the chosen domain's nodes; later pods follow the domain of the
scheduled ones, as upstream's generator does. The evaluation tries pods by NodeResourcesFit's
arithmetic (pods, cpu, memory, ephemeral storage, scalar resources; each pod on the node with
the most free cpu), not by every Filter plugin: the pod's own Filter and Score inside the
domain are the ordinary cycle's; of the other Filters it applies the node-level ones
(NodeUnschedulable, TaintToleration, NodeAffinity's required part). PlacementBinPacking scores MostAllocated over cpu and
memory (weight 1 each), both scorers weigh 1, and ties go to the lowest domain name where
upstream draws at random.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from protos.kubera.v1 import core_pb2
from services.api.helpers.nodeaffinity import get_required_node_affinity
from services.api.helpers.resources import Resource
from services.api.helpers.taints import find_matching_untolerated_taint
from services.scheduler.framework.interface import MAX_NODE_SCORE, MIN_NODE_SCORE
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import NodeInfo, PodInfo
from services.scheduler.plugins.noderesources.fits_request import fits_request
from services.scheduler.plugins.noderesources.resource_allocation import (
    ResourceSpec,
    allocatable_and_requested,
    default_resources,
    pod_score_requests,
)
from services.scheduler.plugins.noderesources.strategies import MOST_ALLOCATED, Scorer
from services.scheduler.plugins.nodeunschedulable import tolerates_unschedulable

ERR_NO_KEY = "node(s) didn't have the pod group's topology key {key}"
ERR_OUTSIDE = "node(s) were outside the topology domain of the pod group's scheduled pods ({key})"
ERR_NO_PLACEMENT = "no placement of the pod group's {key} domains fits {want} of its pods"


@dataclass(frozen=True)
class Placement:
    """A set of nodes the whole group is tried on (upstream fwk.Placement); `name` is the
    domain (label value)."""

    name: str
    nodes: tuple[NodeInfo, ...]


@dataclass
class Evaluation:
    """One placement tried for the group: where each pod went (pod uid -> node name)."""

    placement: Placement
    proposed: dict[str, str] = field(default_factory=dict)
    feasible: bool = False


def generate_placements(
    key: str,
    parent: Sequence[NodeInfo],
    scheduled_on: Iterable[str],
    snapshot: Mapping[str, NodeInfo],
) -> tuple[list[Placement], Status]:
    """Upstream GeneratePlacements: a placement per domain of `key` among `parent`'s nodes,
    only the scheduled pods' domain once there are any (`scheduled_on`: their nodes, looked
    up in `snapshot`). Domains come sorted by name."""
    required: str | None = None
    for node_name in scheduled_on:
        info = snapshot.get(node_name)
        if info is None or info.node is None:
            return [], Status.as_error(
                LookupError(f'getting node for pod group pod: node "{node_name}" not found')
            )
        labels = info.node.metadata.labels
        if key not in labels:
            return [], Status.as_error(
                LookupError(f"no topology domain found for pod group pod on node {node_name}")
            )
        if required is not None and labels[key] != required:
            return [], Status.as_error(
                LookupError(f"more than 1 domain found for pod group: {required}, {labels[key]}")
            )
        required = labels[key]
    domains: dict[str, list[NodeInfo]] = {}
    for info in parent:
        if info.node is None:
            continue
        value = info.node.metadata.labels.get(key)
        if value is not None and (required is None or value == required):
            domains.setdefault(value, []).append(info)
    return [Placement(d, tuple(domains[d])) for d in sorted(domains)], Status.success()


class _Room:
    """What a node has left during an evaluation: its NodeInfo's numbers plus the pods
    proposed on it (fits_request reads `allocatable`, `requested` and `len(pods)`)."""

    __slots__ = ("allocatable", "name", "pods", "requested")

    def __init__(self, info: NodeInfo) -> None:
        self.name = info.name
        self.allocatable = info.allocatable
        r = info.requested
        self.requested = Resource(
            r.milli_cpu, r.memory, r.ephemeral_storage, r.allowed_pod_number, dict(r.scalar)
        )
        self.pods: list[None] = [None] * len(info.pods)

    def free_cpu(self) -> int:
        return self.allocatable.milli_cpu - self.requested.milli_cpu

    def take(self, req: Resource) -> None:
        self.requested.add(req)
        self.pods.append(None)


_NO_SCHEDULE = ("NoSchedule", "NoExecute")


def admits(pod: core_pb2.Pod, node: core_pb2.Node) -> bool:
    """The node-level Filters' verdict, without resources: NodeUnschedulable,
    TaintToleration (NoSchedule and NoExecute taints) and NodeAffinity's required part
    (nodeSelector and required terms)."""
    if node.spec.unschedulable and not tolerates_unschedulable(pod):
        return False
    untolerated = find_matching_untolerated_taint(
        node.spec.taints, pod.spec.tolerations, lambda t: t.effect in _NO_SCHEDULE
    )
    return untolerated is None and get_required_node_affinity(pod).match(node)


def evaluate(
    placement: Placement, pods: Sequence[PodInfo], *, scheduled: int, min_count: int
) -> Evaluation:
    """Try the group's unscheduled `pods` in order on the placement's nodes, each on the
    node with the most free cpu among those it fits and that admit it (reserved before the
    next is tried); feasible when scheduled + placed reaches the quorum (max(minCount, 1))."""
    out = Evaluation(placement)
    rooms = [_Room(n) for n in placement.nodes]
    heap = [(-r.free_cpu(), r.name, i) for i, r in enumerate(rooms)]
    heapq.heapify(heap)
    #: The nodes (indexes) that admit a pod spec: the pods of a group mostly share one.
    admitted: dict[bytes, frozenset[int]] = {}
    for pi in pods:
        key = pi.spec_bytes or pi.pod.spec.SerializeToString(deterministic=True)
        allowed = admitted.get(key)
        if allowed is None:
            allowed = admitted[key] = frozenset(
                i for i, n in enumerate(placement.nodes) if n.node and admits(pi.pod, n.node)
            )
        tried = []
        while heap:
            entry = heapq.heappop(heap)
            room = rooms[entry[2]]
            if entry[2] in allowed and not fits_request(pi.requests, room):  # type: ignore[arg-type]
                room.take(pi.requests)
                out.proposed[pi.pod.metadata.uid] = room.name
                heapq.heappush(heap, (-room.free_cpu(), room.name, entry[2]))
                break
            tried.append(entry)
        for entry in tried:
            heapq.heappush(heap, entry)
    out.feasible = bool(out.proposed) and scheduled + len(out.proposed) >= max(min_count, 1)
    return out


def pods_count_score(scheduled: int, proposed: int) -> int:
    """PodGroupPodsCount.ScorePlacement: the group's scheduled pods plus those proposed."""
    return scheduled + proposed


def normalize_pods_count(scores: Sequence[int]) -> tuple[list[int], Status]:
    """PodGroupPodsCount.NormalizePlacementScore: scaled to [MIN, MAX] by the highest count;
    an Error when no placement holds any pod."""
    top = max(scores, default=0)
    if top == 0:
        return [], Status.as_error(
            ValueError("no pods from pod group are assigned to any of the candidate placements")
        )
    return [MIN_NODE_SCORE + s * (MAX_NODE_SCORE - MIN_NODE_SCORE) // top for s in scores], (
        Status.success()
    )


def bin_packing_score(
    scorer: Scorer,
    resources: Sequence[ResourceSpec],
    proposed: Sequence[tuple[PodInfo, str]],
    nodes: Sequence[NodeInfo],
) -> int:
    """PlacementBinPacking.ScorePlacement: the strategy over the placement's summed
    allocatable and requested (its pods' and the proposed pods'); a scalar resource no
    proposed pod requests is left out."""
    pods_req = [0] * len(resources)
    for pi, _node in proposed:
        for i, q in enumerate(pod_score_requests(pi, resources, True)):
            pods_req[i] += q
    requested, allocatable = list(pods_req), [0] * len(resources)
    for info in nodes:
        for i, spec in enumerate(resources):
            alloc, with_pods = allocatable_and_requested(info, spec.name, pods_req[i], True)
            allocatable[i] += alloc
            if alloc:
                requested[i] += with_pods - pods_req[i]
    return scorer.score(requested, allocatable)


#: PlacementBinPacking's strategy as kubera runs it (see the module docstring).
BIN_PACKING_RESOURCES = default_resources()
BIN_PACKING = Scorer(MOST_ALLOCATED, BIN_PACKING_RESOURCES, ())


def choose(
    evaluations: Sequence[Evaluation], pods: Mapping[str, PodInfo], *, scheduled: int
) -> tuple[Evaluation | None, Status]:
    """The best feasible evaluation by PodGroupPodsCount + PlacementBinPacking (ties: the
    first, i.e. lowest domain name); None when none is feasible."""
    feasible = [e for e in evaluations if e.feasible]
    if len(feasible) <= 1:
        return (feasible[0] if feasible else None), Status.success()
    counts, st = normalize_pods_count(
        [pods_count_score(scheduled, len(e.proposed)) for e in feasible]
    )
    if not st.is_success():
        return None, st
    best, best_score = None, -1
    for e, count in zip(feasible, counts, strict=True):
        assigned = [(pods[uid], node) for uid, node in e.proposed.items()]
        total = count + bin_packing_score(
            BIN_PACKING, BIN_PACKING_RESOURCES, assigned, e.placement.nodes
        )
        if total > best_score:
            best, best_score = e, total
    return best, Status.success()


def place_group(
    key: str,
    nodes: Sequence[NodeInfo],
    scheduled_on: Iterable[str],
    unscheduled: Sequence[PodInfo],
    *,
    min_count: int,
    plugin: str,
) -> tuple[Placement | None, Status]:
    """The domain the group goes to: generate, evaluate, select (the module docstring).
    With scheduled pods the only placement is theirs, taken without evaluating (the group
    already holds its domain; the pod's own Filter decides within it)."""
    placed = set(scheduled_on)
    snapshot = {n.name: n for n in nodes}
    placements, st = generate_placements(key, nodes, sorted(placed), snapshot)
    if not st.is_success():
        return None, dataclasses.replace(st, plugin=plugin)
    if not placements:
        why = (ERR_OUTSIDE if placed else ERR_NO_KEY).format(key=key)
        return None, Status.unresolvable(why, plugin=plugin)
    if placed:
        return placements[0], Status.success()
    evaluations = [evaluate(p, unscheduled, scheduled=0, min_count=min_count) for p in placements]
    by_uid = {pi.pod.metadata.uid: pi for pi in unscheduled}
    best, st = choose(evaluations, by_uid, scheduled=0)
    if not st.is_success():
        return None, dataclasses.replace(st, plugin=plugin)
    if best is None:
        why = ERR_NO_PLACEMENT.format(key=key, want=max(min_count, 1))
        return None, Status(Code.UNSCHEDULABLE, (why,), plugin)
    return best.placement, Status.success()
