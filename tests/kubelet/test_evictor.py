"""The pool's eviction loop (services/kubelet/evictor.py) on its own: no apiserver, the
nodes of a planned template, a fake clock."""

from __future__ import annotations

from typing import Any

from services.clock import FakeClock
from services.kubelet import eviction as ev
from services.kubelet.evictor import PoolEvictor
from services.kubelet.state import HollowNode, PodState
from services.kubelet.template import parse_template, plan_nodes
from services.kubelet.usage import UsageTable


def _nodes(count: int = 2) -> list[HollowNode]:
    template = {
        "nodes": [
            {
                "name": "n",
                "count": count,
                "capacity": {"cpu": "4", "memory": "4Gi", "ephemeral-storage": "20Gi"},
            }
        ]
    }
    nodes = []
    for i, plan in enumerate(plan_nodes(parse_template(template))):
        cfg = ev.EvictionConfig.from_dict(plan.kind.eviction)
        node = HollowNode(i, i, plan, ev.EvictionManager(cfg), cfg)
        node.registered = True
        nodes.append(node)
    return nodes


def _evictor(nodes: list[HollowNode], posted: list[str]) -> PoolEvictor:
    pods: dict[str, PodState] = {}
    return PoolEvictor(
        nodes,
        pods,
        UsageTable(),
        FakeClock(),
        post_node_status=lambda n: posted.append(n.name),
        after=lambda st, delay, step: None,
    )


def test_one_nodes_eviction_failure_costs_only_that_node() -> None:
    nodes = _nodes()
    evictor = _evictor(nodes, [])
    synchronized: list[str] = []

    def synchronize(node: Any, now: float, stats: Any) -> None:
        if node.index == 0:
            raise ZeroDivisionError("division by zero")
        synchronized.append(node.plan.name)

    evictor.synchronize = synchronize  # type: ignore[method-assign]
    evictor.pressure.near = lambda used: [True] * len(nodes)  # type: ignore[method-assign]
    evictor.tick()
    assert synchronized == [nodes[1].name]


def test_a_killed_or_unregistered_node_is_not_synchronized() -> None:
    nodes = _nodes(3)
    nodes[0].alive = False
    nodes[1].registered = False
    evictor = _evictor(nodes, [])
    synchronized: list[str] = []
    evictor.synchronize = lambda node, now, stats: synchronized.append(node.name)  # type: ignore[method-assign]
    evictor.pressure.near = lambda used: [True] * len(nodes)  # type: ignore[method-assign]
    evictor.tick()
    assert synchronized == [nodes[2].name]


def test_a_quiet_node_far_from_its_thresholds_is_left_alone() -> None:
    nodes = _nodes()
    posted: list[str] = []
    evictor = _evictor(nodes, posted)
    synchronized: list[str] = []
    evictor.synchronize = lambda node, now, stats: synchronized.append(node.name)  # type: ignore[method-assign]
    evictor.tick()
    assert synchronized == [] and posted == []
