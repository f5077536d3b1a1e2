"""A gang member may preempt only when its whole gang then fits (preemption/gang.py):
DefaultPreemption on a real Framework, with the GangNeed Coscheduling's PreFilter leaves."""

from __future__ import annotations

import asyncio

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import PostFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import NodeInfo, PodInfo
from services.scheduler.preemption.gang import GANG_KEY, GangNeed, gang_fits_after
from tests.scheduler.preemption._harness import HIGH, LOW, Harness, node, pod

CPU1 = {"cpu": "1", "memory": "1Gi"}


def _gang(n: int) -> list[core_pb2.Pod]:
    return [
        pod(f"g{i}", HIGH, req=CPU1, labels={"scheduling.x-k8s.io/pod-group": "pg"})
        for i in range(n)
    ]


# (name, nodes: (name, [low-priority pods' node]), gang size, needed others, preempts)
CASES = [
    ("the rest of the gang fits on a free node: preempt", ["n1"], 2, 1, True),
    ("the rest of the gang fits nowhere: preempt nobody", ["n1", "n2"], 2, 1, False),
    ("only part of the rest fits: preempt nobody", ["n1"], 3, 2, False),
    ("nothing else is needed: preempt", ["n1", "n2"], 1, 0, True),
]


@pytest.mark.parametrize("name,busy,size,needed,preempts", CASES, ids=[c[0] for c in CASES])
def test_a_gang_member_preempts_only_when_the_whole_gang_then_fits(
    name: str, busy: list[str], size: int, needed: int, preempts: bool
) -> None:
    nodes = [node("n1", CPU1), node("n2", CPU1)]
    victims = [pod(f"low-{n}", LOW, node_name=n, req=CPU1) for n in busy]
    gang = _gang(size)
    h = Harness(nodes, victims)
    state, pi = h.state_for(gang[0])
    state.write(GANG_KEY, GangNeed("default/pg", needed, lambda: gang[1:]))
    # Only n1 is worth preempting on (n2 is refused for some other reason).
    statuses = {"n1": Status(Code.UNSCHEDULABLE), "n2": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}
    result, st = asyncio.run(h.plugin.post_filter(state, pi, statuses))
    if preempts:
        assert st.is_success() and result == PostFilterResult("n1")
        assert h.client.deleted == ["low-n1"]
    else:
        assert st.code == Code.UNSCHEDULABLE
        assert st.message.startswith("preemption: PodGroup default/pg: only ")
        assert result is None
        assert h.client.deleted == []  # nobody preempted
        assert h.client.patches == []


def test_gang_fits_after_counts_victims_as_freed_and_the_preemptor_as_placed() -> None:
    n1 = NodeInfo(node("n1", {"cpu": "2", "memory": "2Gi"}))
    low = pod("low", LOW, node_name="n1", req={"cpu": "2", "memory": "1Gi"})
    n1.add_pod(PodInfo(low))
    gang = _gang(2)
    need = GangNeed("default/pg", 1, lambda: [gang[1]])
    assert gang_fits_after(need, PodInfo(gang[0]), "n1", [low], [n1]) == ""
    assert gang_fits_after(need, PodInfo(gang[0]), "n1", [], [n1]).endswith(
        "only 0 of the 1 other members it still needs would fit after preemption"
    )
