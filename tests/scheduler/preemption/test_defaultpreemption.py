"""DefaultPreemption's PostFilter, victims on a node and the choice of node, ported from
upstream's plugins/defaultpreemption/default_preemption_test.go (TestPostFilter,
TestDryRunPreemption / TestSelectCandidate, TestSelectBestCandidate,
TestPodEligibleToPreemptOthers) on a real Framework with NodeResourcesFit (and
InterPodAffinity / PodTopologySpread where a case needs them)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import PostFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.plugins import defaultpreemption
from services.scheduler.preemption import Candidate, pick_one_node_for_preemption
from services.scheduler.preemption.victims import pick_one_node_with_rule
from tests.scheduler.preemption._harness import (
    HIGH,
    LARGE,
    LOW,
    MEDIUM,
    MID,
    NEG,
    ONE_POD,
    SMALL,
    VERY_HIGH,
    VERY_LARGE,
    Harness,
    node,
    pdb,
    pod,
)

NODE_RES = {"cpu": "200m", "memory": "400"}
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def post_filter(h: Harness, p: core_pb2.Pod, statuses: dict[str, Status]) -> Any:
    state, pi = h.state_for(p)
    return asyncio.run(h.plugin.post_filter(state, pi, statuses))


# ===================================================================== TestPostFilter


@dataclass
class PostFilterCase:
    name: str
    pod: core_pb2.Pod
    pods: list[core_pb2.Pod]
    nodes: list[core_pb2.Node]
    statuses: dict[str, Code]
    want_node: str | None  # None: no result; "": a result clearing the nomination
    want_code: Code
    want_msg: str = ""
    pdbs: list[Any] = field(default_factory=list)
    test_plugin: bool = False


POST_FILTER_CASES = [
    PostFilterCase(
        "pod with higher priority can be made schedulable",
        pod("p", HIGH),
        [pod("p1", node_name="node1")],
        [node("node1", ONE_POD)],
        {"node1": U},
        "node1",
        Code.SUCCESS,
    ),
    PostFilterCase(
        "pod with tied priority is still unschedulable",
        pod("p"),
        [pod("p1", node_name="node1")],
        [node("node1", ONE_POD)],
        {"node1": U},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "preemption should respect filteredNodesStatuses",
        pod("p", HIGH),
        [pod("p1", node_name="node1")],
        [node("node1", ONE_POD)],
        {"node1": UU},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "preemption should respect an absent status meaning UnschedulableAndUnresolvable",
        pod("p", HIGH),
        [pod("p1", node_name="node1")],
        [node("node1", ONE_POD)],
        {},
        "",
        U,
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "pod can be made schedulable on one node",
        pod("p", MID),
        [pod("p1", HIGH, node_name="node1"), pod("p2", LOW, node_name="node2")],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
    ),
    PostFilterCase(
        "pod can be made schedulable on minHighestPriority node",
        pod("p", VERY_HIGH),
        [
            pod("p1", HIGH, node_name="node1", labels={"pdb": "non-violating"}),
            pod("p2", LOW, node_name="node1", labels={"pdb": "violating"}),
            pod("p3", MID, node_name="node2", labels={"pdb": "violating"}),
        ],
        [node("node1", ONE_POD), node("node2", ONE_POD)],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        pdbs=[
            pdb("violating-pdb", {"pdb": "violating"}, 0),
            pdb("non-violating-pdb", {"pdb": "non-violating"}, 2**31 - 1),
        ],
    ),
    PostFilterCase(
        "no candidate nodes found, no enough resource after removing low priority pods",
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
        [node("node1", NODE_RES), node("node2", NODE_RES)],
        {"node1": U, "node2": U},
        "",
        U,
        "preemption: 0/2 nodes are available: 2 Insufficient cpu.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU",
        pod("p", HIGH, req=LARGE),
        [
            pod("p1", HIGH, node_name="node1"),
            pod("p2", node_name="node2"),
            pod("p3", HIGH, node_name="node3"),
        ],
        [node("node1", ONE_POD), node("node2", NODE_RES), node("node3", ONE_POD)],
        {"node1": U, "node2": U, "node3": U},
        "",
        U,
        "preemption: 0/3 nodes are available: 1 Insufficient cpu, "
        "2 No preemption victims found for incoming pod.",
    ),
    PostFilterCase(
        "no candidate nodes found with mixed reason, 2 unresolvable nodes and 2 without CPU",
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2")],
        [node(f"node{i}", NODE_RES) for i in (1, 2, 3, 4)],
        {"node1": U, "node2": U, "node4": UU},
        "",
        U,
        "preemption: 0/4 nodes are available: 2 Insufficient cpu, "
        "2 Preemption is not helpful for scheduling.",
    ),
    PostFilterCase(
        "only one node but failed with TestPlugin",
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1")],
        [node("node1", LARGE, error="true")],
        {"node1": U},
        None,
        Code.ERROR,
        "preemption: running RemovePod on PreFilter plugin 'TestPlugin': failed to remove pod: p",
        test_plugin=True,
    ),
    PostFilterCase(
        "one failed with TestPlugin and the other pass",
        pod("p", HIGH, req=LARGE),
        [pod("p1", node_name="node1"), pod("p2", node_name="node2", req=MEDIUM)],
        [node("node1", LARGE, error="true"), node("node2", LARGE)],
        {"node1": U, "node2": U},
        "node2",
        Code.SUCCESS,
        test_plugin=True,
    ),
    PostFilterCase(
        "pod with preemptionPolicy Never is not eligible",
        pod("p", HIGH, preemptionPolicy="Never"),
        [pod("p1", node_name="node1")],
        [node("node1", ONE_POD)],
        {"node1": U},
        None,
        U,
        "preemption: not eligible due to preemptionPolicy=Never.",
    ),
]


@pytest.mark.parametrize("tc", POST_FILTER_CASES, ids=lambda tc: tc.name)
def test_post_filter(tc: PostFilterCase) -> None:
    h = Harness(tc.nodes, tc.pods, tc.pdbs, test_plugin=tc.test_plugin)
    statuses = {n: Status(c) for n, c in tc.statuses.items()}
    result, st = post_filter(h, tc.pod, statuses)
    assert st.code == tc.want_code
    assert st.message == tc.want_msg
    if tc.want_node is None:
        assert result is None
    else:
        assert result == PostFilterResult(tc.want_node)


# ============================================ TestDryRunPreemption / selectVictimsOnNode


def ts(sec: int) -> str:
    return f"2026-01-01T00:00:{sec:02d}Z"


@dataclass
class DryRunCase:
    name: str
    pod: core_pb2.Pod
    pods: list[core_pb2.Pod]
    nodes: list[core_pb2.Node]
    #: node -> (victim names, PDB violations), in candidate order
    want: list[tuple[str, list[str], int]]
    pdbs: list[Any] = field(default_factory=list)
    filters: tuple[str, ...] = ("NodeResourcesFit",)
    args: defaultpreemption.Args | None = None
    offset: int = 0


def five_nodes_each_with_a_low_pod(**labels: str) -> tuple[list[Any], list[Any]]:
    nodes = [node(f"node{i}", VERY_LARGE) for i in range(1, 6)]
    pods = [pod(f"p{i}", LOW, node_name=f"node{i}", req=LARGE, labels=labels) for i in range(1, 6)]
    return nodes, pods


_five_nodes, _five_pods = five_nodes_each_with_a_low_pod()
_five_pdb_nodes, _five_pdb_pods = five_nodes_each_with_a_low_pod(app="foo")
_anti = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {"matchLabels": {"app": "foo"}},
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}
_spread = [
    {
        "maxSkew": 1,
        "topologyKey": "kubernetes.io/hostname",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "foo"}},
    }
]

DRY_RUN_CASES = [
    DryRunCase(
        "a pod that does not fit on any node",
        pod("p", HIGH, req=VERY_LARGE),
        [pod("p1", LOW, node_name="node1", req=SMALL), pod("p2", LOW, node_name="node2")],
        [node("node1", LARGE), node("node2", LARGE)],
        [],
    ),
    DryRunCase(
        "a pod that fits on both nodes when lower priority pods are preempted",
        pod("p", HIGH, req=LARGE),
        [
            pod("p1", MID, node_name="node1", req=LARGE),
            pod("p2", MID, node_name="node2", req=LARGE),
        ],
        [node("node1", VERY_LARGE), node("node2", VERY_LARGE)],
        [("node1", ["p1"], 0), ("node2", ["p2"], 0)],
    ),
    DryRunCase(
        "a pod that would fit on the nodes, but other pods running are higher priority",
        pod("p", LOW, req=LARGE),
        [
            pod("p1", MID, node_name="node1", req=LARGE),
            pod("p2", MID, node_name="node2", req=LARGE),
        ],
        [node("node1", VERY_LARGE), node("node2", VERY_LARGE)],
        [],
    ),
    DryRunCase(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", LOW, node_name="node1", req=SMALL),
            pod("p1.2", MID, node_name="node1", req=LARGE),
            pod("p2", MID, node_name="node2", req=LARGE),
        ],
        [node("node1", VERY_LARGE), node("node2", VERY_LARGE)],
        [("node1", ["p1.2"], 0), ("node2", ["p2"], 0)],
    ),
    DryRunCase(
        "mixed priority pods are preempted",
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", MID, node_name="node1", req=SMALL),
            pod("p1.2", LOW, node_name="node1", req=SMALL),
            pod("p1.3", MID, node_name="node1", req=MEDIUM),
            pod("p1.4", HIGH, node_name="node1", req=SMALL),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.3", "p1.2"], 0)],
    ),
    DryRunCase(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        pod("p", HIGH, req=LARGE),
        [
            pod("p1.1", MID, node_name="node1", req=MEDIUM, start=ts(5)),
            pod("p1.2", MID, node_name="node1", req=MEDIUM, start=ts(1)),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1"], 0)],
    ),
    DryRunCase(
        "pod with anti-affinity is preempted",
        pod("p", HIGH, req=SMALL, affinity=_anti),
        [
            pod("p1.1", LOW, node_name="node1", req=SMALL, labels={"app": "foo"}, start=ts(1)),
            pod("p1.2", LOW, node_name="node1", req=SMALL),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1"], 0)],
        filters=("NodeResourcesFit", "InterPodAffinity"),
    ),
    DryRunCase(
        "preemption to resolve pod topology spread filter failure",
        pod("p", HIGH, req=SMALL, labels={"app": "foo"}, topologySpreadConstraints=_spread),
        [
            pod("a1", LOW, node_name="node-a", req=SMALL, labels={"app": "foo"}),
            pod("a2", LOW, node_name="node-a", req=SMALL, labels={"app": "foo"}),
            pod("a3", LOW, node_name="node-a", req=SMALL, labels={"app": "foo"}),
            pod("b1", VERY_HIGH, node_name="node-b", req=SMALL, labels={"app": "foo"}),
        ],
        [node("node-a", VERY_LARGE), node("node-b", SMALL)],
        [("node-a", ["a2", "a3"], 0)],
        filters=("NodeResourcesFit", "PodTopologySpread"),
    ),
    DryRunCase(
        "preemption with violation of same pdb",
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(1)),
            pod("p1.2", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(2)),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1", "p1.2"], 1)],
        pdbs=[pdb("pdb", {"app": "foo"}, 1)],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim doesn't belong to DisruptedPods",
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(1)),
            pod("p1.2", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(2)),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1", "p1.2"], 1)],
        pdbs=[pdb("pdb", {"app": "foo"}, 1, disrupted=["p2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim belongs to DisruptedPods",
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(1)),
            pod("p1.2", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(2)),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1", "p1.2"], 0)],
        pdbs=[pdb("pdb", {"app": "foo"}, 1, disrupted=["p1.2"])],
    ),
    DryRunCase(
        "preemption with violation of the pdb with pod whose eviction was processed, "
        "the victim which belongs to DisruptedPods is treated as nonViolating",
        pod("p", HIGH, req=VERY_LARGE),
        [
            pod("p1.1", LOW, node_name="node1", req=SMALL, labels={"app": "foo"}, start=ts(1)),
            pod("p1.2", LOW, node_name="node1", req=SMALL, labels={"app": "foo"}, start=ts(2)),
            pod("p1.3", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(3)),
        ],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1", "p1.2", "p1.3"], 1)],
        pdbs=[pdb("pdb", {"app": "foo"}, 1, disrupted=["p1.3"])],
    ),
    DryRunCase(
        "a pdb with an empty selector matches nothing",
        pod("p", HIGH, req=VERY_LARGE),
        [pod("p1.1", LOW, node_name="node1", req=MEDIUM, labels={"app": "foo"}, start=ts(1))],
        [node("node1", VERY_LARGE)],
        [("node1", ["p1.1"], 0)],
        pdbs=[pdb("pdb", {}, 0)],
    ),
    DryRunCase(
        "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2",
        pod("p", HIGH, req=LARGE),
        _five_pods,
        _five_nodes,
        [("node1", ["p1"], 0), ("node2", ["p2"], 0)],
        args=defaultpreemption.Args(40, 1),
    ),
    DryRunCase(
        "some nodes are not possible candidates, DefaultPreemptionArgs limits to 2",
        pod("p", HIGH, req=LARGE),
        [*_five_pods[:2], pod("p3", VERY_HIGH, node_name="node3", req=LARGE), *_five_pods[3:]],
        _five_nodes,
        [("node1", ["p1"], 0), ("node2", ["p2"], 0)],
        args=defaultpreemption.Args(40, 1),
    ),
    DryRunCase(
        "preemption offset across multiple scheduling cycles and wrap around",
        pod("p", HIGH, req=LARGE),
        _five_pods,
        _five_nodes,
        [("node4", ["p4"], 0), ("node5", ["p5"], 0), ("node1", ["p1"], 0)],
        args=defaultpreemption.Args(40, 3),
        offset=3,
    ),
    DryRunCase(
        "preemption looks past numCandidates until a non-PDB violating node is found",
        pod("p", HIGH, req=LARGE),
        [*_five_pdb_pods[:3], *_five_pods[3:]],
        _five_nodes,
        [("node4", ["p4"], 0), ("node1", ["p1"], 1), ("node2", ["p2"], 1), ("node3", ["p3"], 1)],
        pdbs=[pdb("pdb", {"app": "foo"}, 0)],
        args=defaultpreemption.Args(40, 1),
    ),
]


@pytest.mark.parametrize("tc", DRY_RUN_CASES, ids=lambda tc: tc.name)
def test_dry_run_preemption(tc: DryRunCase) -> None:
    h = Harness(tc.nodes, tc.pods, tc.pdbs, filters=tc.filters, args=tc.args, offset=tc.offset)
    statuses = {n.metadata.name: Status(U) for n in tc.nodes}
    state, pi = h.state_for(tc.pod)
    _, _, decision = h.plugin.evaluator.preempt(
        h.fwk, state, pi, statuses, list(h.snapshot().list()), h.pdbs(), h.nominator.pods_on
    )
    got = [(n, [v.split("/")[1] for v in vs], k) for n, vs, k in decision.candidates]
    assert got == tc.want


def test_dry_runs_leave_the_snapshot_and_the_cycle_state_untouched() -> None:
    h = Harness(
        [node("node1", VERY_LARGE)],
        [pod("p1", LOW, node_name="node1", req=LARGE)],
        filters=("NodeResourcesFit", "InterPodAffinity"),
    )
    before = [p.uid for p in h.snapshot().list()[0].pods]
    result, st = post_filter(h, pod("p", HIGH, req=LARGE), {"node1": Status(U)})
    assert st.is_success() and result == PostFilterResult("node1")
    assert [p.uid for p in h.snapshot().list()[0].pods] == before


def test_num_candidates_is_bounded_by_percentage_and_absolute() -> None:
    from services.scheduler.preemption import calculate_num_candidates

    # (nodes, percentage, absolute) -> candidates, as upstream's TestCalculateNumCandidates
    assert calculate_num_candidates(10, 10, 100) == 10  # nodes below the absolute
    assert calculate_num_candidates(10000, 10, 100) == 1000  # percentage above the absolute
    assert calculate_num_candidates(1000, 10, 150) == 150  # absolute above the percentage
    assert calculate_num_candidates(0, 10, 100) == 0


# ============================================ TestSelectBestCandidate (pickOneNode)


def victims(*prios_and_starts: tuple[int, int]) -> list[core_pb2.Pod]:
    out = [pod(f"v{i}-{p}", p, start=ts(s)) for i, (p, s) in enumerate(prios_and_starts)]
    out.sort(key=lambda v: (-v.spec.priority, v.status.start_time))
    return out


PICK_CASES = [
    (
        "fewest PDB violations wins over lower victim priority",
        [Candidate("node1", victims((LOW, 0)), 1), Candidate("node2", victims((MID, 0)), 0)],
        "node2",
    ),
    (
        "node with min highest priority pod is picked",
        [
            Candidate("node1", victims((MID, 0))),
            Candidate("node2", victims((LOW, 0))),
            Candidate("node3", victims((MID, 0))),
        ],
        "node2",
    ),
    (
        "when highest priorities are the same, minimum sum of lower priority pods is used",
        [
            Candidate("node1", victims((MID, 0), (MID, 0))),
            Candidate("node2", victims((MID, 0), (LOW, 0))),
        ],
        "node2",
    ),
    (
        "sum of adjusted priorities is considered",
        [
            Candidate("node1", victims((MID, 0), (NEG, 0), (NEG, 0))),
            Candidate("node2", victims((MID, 0), (LOW, 0))),
        ],
        "node2",
    ),
    (
        "when highest priority and sum are the same, minimum number of pods is used",
        [
            Candidate("node1", victims((MID, 0), (LOW, 0))),
            Candidate("node2", victims((MID, 0), (LOW, 0))),
            Candidate("node3", victims((MID, 0), (LOW, 0))),
        ],
        "node1",
    ),
    (
        "same priority, same number of victims, different start time for each node's pod",
        [
            Candidate("node1", victims((MID, 1), (MID, 2))),
            Candidate("node2", victims((MID, 3), (MID, 4))),
            Candidate("node3", victims((MID, 2), (MID, 5))),
        ],
        "node2",
    ),
    (
        "different priority, same number of victims, different start time for all pods",
        [
            Candidate("node1", victims((HIGH, 4), (LOW, 9))),
            Candidate("node2", victims((HIGH, 6), (LOW, 1))),
            Candidate("node3", victims((HIGH, 5), (LOW, 2))),
        ],
        "node2",
    ),
    ("a single candidate is picked", [Candidate("node1", victims((HIGH, 0)))], "node1"),
]


@pytest.mark.parametrize(("name", "candidates", "want"), PICK_CASES, ids=[c[0] for c in PICK_CASES])
def test_pick_one_node_for_preemption(name: str, candidates: list[Candidate], want: str) -> None:
    got = pick_one_node_for_preemption(candidates, now=2_000_000_000.0)
    assert got is not None and got.name == want


WHY_CASES = [(c[0], c[1]) for c in PICK_CASES]
WANT_WHY = [
    "fewest PDB violations",
    "lowest highest victim priority",
    "smallest sum of victim priorities",
    "smallest sum of victim priorities",
    "first of the tied candidates",
    "latest start time of the highest-priority victims",
    "latest start time of the highest-priority victims",
    "only candidate",
]


@pytest.mark.parametrize(
    ("case", "want"), list(zip(WHY_CASES, WANT_WHY, strict=True)), ids=[c[0] for c in PICK_CASES]
)
def test_pick_one_node_says_which_rule_decided(case: tuple, want: str) -> None:
    _, why = pick_one_node_with_rule(case[1], now=2_000_000_000.0)
    assert why == want


def test_pick_one_node_for_preemption_without_candidates() -> None:
    assert pick_one_node_for_preemption([], now=0.0) is None
