"""Gang-aware preemption: a gang member may preempt only when the whole gang then fits.

Preempting for one member of a PodGroup whose other members cannot be placed afterwards
evicts victims for nothing: the member waits at Permit, times out, and the gang backs off
with the victims already gone. So Coscheduling's PreFilter writes, for a gang member, what
the rest of its gang still needs (`GangNeed`, under GANG_KEY in the CycleState), and
DefaultPreemption asks `gang_fits_after` about the candidate it chose before deleting anyone.

What the check simulates, on the preemption's snapshot: the candidate node without its
victims and with the preemptor; then the gang's unassigned siblings placed greedily, first
fit in snapshot order, by resource requests alone (cpu, memory, ephemeral storage, scalar
resources, pod count against allocatable). It does not run the other Filter plugins
(taints, affinity, ports, spreading), does not count nominated pods, does not consider
preempting more victims for the siblings, and tries only the candidate the evaluator
picked. Greedy first fit may miss a packing that exists (then nobody is preempted: the
safe side); ignoring the other filters may let a preemption through whose siblings are
then rejected by them (they wait at Permit and time out as before).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2
from services.api.helpers.resources import Resource
from services.scheduler.framework.types import NodeInfo, PodInfo

#: CycleState key of a gang member's GangNeed (written by Coscheduling's PreFilter).
GANG_KEY = "Coscheduling/gang"


@dataclass
class GangNeed:
    """What a gang member's group still needs besides the member itself."""

    #: namespace/name of the PodGroup.
    group: str
    #: How many more members must be placed (besides the preemptor) to reach minMember.
    needed: int
    #: The group's unassigned members other than the preemptor, by name; asked only when
    #: a preemption is checked (a gang's PreFilter runs once per member: no O(n^2) work).
    pending: Callable[[], Sequence[core_pb2.Pod]]

    def clone(self) -> GangNeed:
        """Immutable in practice; CycleState.clone shares it."""
        return self


def _free(ni: NodeInfo) -> Resource:
    free = ni.allocatable.clone()
    free.sub(ni.requested)
    free.allowed_pod_number = ni.allocatable.allowed_pod_number - len(ni.pods)
    return free


def _fits(req: Resource, free: Resource) -> bool:
    if req.milli_cpu > free.milli_cpu or req.memory > free.memory:
        return False
    if req.ephemeral_storage > free.ephemeral_storage or free.allowed_pod_number < 1:
        return False
    return all(v <= free.scalar.get(k, 0) for k, v in req.scalar.items() if v > 0)


def _take(req: Resource, free: Resource) -> None:
    free.sub(req)
    free.allowed_pod_number -= 1


def gang_fits_after(
    need: GangNeed,
    preemptor: PodInfo,
    node: str,
    victims: Sequence[core_pb2.Pod],
    nodes: Sequence[NodeInfo],
) -> str:
    """ "" when `need.needed` of the gang's pending siblings fit (see the module docstring)
    once `victims` are gone from `node` and the preemptor sits there; otherwise why not."""
    if need.needed <= 0:
        return ""
    free: list[Resource] = []
    for ni in nodes:
        if ni.node is None:
            continue
        f = _free(ni)
        if ni.name == node:
            for v in victims:
                f.add(PodInfo(v).requests)
                f.allowed_pod_number += 1
            _take(preemptor.requests, f)
        free.append(f)
    placed = 0
    for sibling in need.pending():
        req = PodInfo(sibling).requests
        for f in free:
            if _fits(req, f):
                _take(req, f)
                placed += 1
                break
        if placed >= need.needed:
            return ""
    return (
        f"PodGroup {need.group}: only {placed} of the {need.needed} other members it still "
        "needs would fit after preemption"
    )
