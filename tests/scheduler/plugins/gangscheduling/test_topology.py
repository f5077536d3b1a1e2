"""Topology-aware placement of a PodGroup (topology.py), with upstream's tables as data:
TestGeneratePlacements (pkg/scheduler/framework/plugins/topologyaware/
topology_placement_test.go, its 9 rows without a CompositePodGroup), TestScorePlacement and
TestNormalizePlacementScore (plugins/podgrouppodscount/podgroup_pods_count_test.go, 4 + 5
rows), TestPlacementBinPackingScore and TestPlacementBinPackingScore_Strategies
(plugins/noderesources/placement_bin_packing_test.go, 7 + 5 rows); then the domain a gang
goes to through GangScheduling's PreFilter."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins.gangscheduling import topology
from services.scheduler.plugins.gangscheduling.topology import (
    bin_packing_score,
    generate_placements,
    normalize_pods_count,
    pods_count_score,
)
from services.scheduler.plugins.noderesources.resource_allocation import ResourceSpec
from services.scheduler.plugins.noderesources.strategies import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    Scorer,
    UtilizationShapePoint,
)
from tests.builders import MakeNode, MakePod
from tests.scheduler.plugins.coscheduling._gang import GangHandle
from tests.scheduler.plugins.gangscheduling.test_podgroups import _plugin, pg, pg_pod

# ------------------------------------------------------------- TestGeneratePlacements

#: name -> (key or None, placement nodes {name: labels}, other nodes, scheduled pods' nodes,
#: the placements wanted {domain: [nodes]} or None for an Error)
GENERATE = {
    "without constraint returns placement matching all nodes": (
        None,
        {"node1": {}, "node2": {"foo": "bar"}},
        {"node3": {}},
        [],
        {"test-placement": ["node1", "node2"]},
    ),
    "with topology key constraint, returns placement for each topology domain": (
        "topology1",
        {
            "node0": {"topology2": "d1"},
            "node1": {"topology2": "d4"},
            "node2": {"topology1": "d1"},
            "node3": {"topology1": "d2"},
            "node4": {"topology1": "d1"},
            "node5": {"topology1": "d3"},
        },
        {},
        [],
        {"d1": ["node2", "node4"], "d2": ["node3"], "d3": ["node5"]},
    ),
    "without matching topology label, returns empty": (
        "topology3",
        {
            "node0": {"topology2": "d1"},
            "node1": {"topology2": "d4"},
            "node2": {"topology1": "d1"},
            "node3": {"topology1": "d2"},
            "node4": {"topology1": "d1"},
            "node5": {"topology1": "d3"},
        },
        {},
        [],
        {},
    ),
    "with pods already scheduled in a single domain, returns that domain": (
        "topology",
        {"node0": {"topology": "d2"}, "node1": {"topology": "d1"}},
        {"node2": {"topology": "d1"}, "node3": {"topology": "d1"}},
        ["node2", "node3"],
        {"d1": ["node1"]},
    ),
    "with pods already scheduled in a single domain not present in current placement, "
    "returns empty": (
        "topology",
        {"node0": {"topology": "d2"}},
        {"node2": {"topology": "d1"}, "node3": {"topology": "d1"}},
        ["node2", "node3"],
        {},
    ),
    "with pods already scheduled in conflicting domains, returns error": (
        "topology",
        {"node0": {"topology": "d2"}, "node1": {"topology": "d1"}},
        {"node2": {"topology": "d0"}, "node3": {"topology": "d1"}},
        ["node2", "node3"],
        None,
    ),
    "with pods already scheduled in the empty string domain, returns that domain": (
        "topology",
        {"node0": {"topology": "d1"}, "node1": {"topology": ""}},
        {"node2": {"topology": ""}, "node3": {"topology": ""}},
        ["node2", "node3"],
        {"": ["node1"]},
    ),
    "with already scheduled pod on node outside of snapshot, returns error": (
        "topology",
        {"node0": {"topology": "d2"}, "node1": {"topology": "d1"}},
        {"node2": {"topology": "d1"}, "node3": {"topology": "d1"}},
        ["node2", "node4"],
        None,
    ),
    "with already scheduled pod on node without topology label, returns error": (
        "topology",
        {"node1": {"topology": "d2"}},
        {"node2": {"foo": "bar"}},
        ["node2"],
        None,
    ),
}


def _infos(nodes: Mapping[str, Mapping[str, str]]) -> list[NodeInfo]:
    return [NodeInfo(MakeNode().name(n).labels(labels).obj()) for n, labels in nodes.items()]


@pytest.mark.parametrize(
    ("key", "placement_nodes", "other_nodes", "scheduled_on", "want"),
    list(GENERATE.values()),
    ids=list(GENERATE),
)
def test_generate_placements(
    key: str | None,
    placement_nodes: Mapping[str, Mapping[str, str]],
    other_nodes: Mapping[str, Mapping[str, str]],
    scheduled_on: list[str],
    want: dict[str, list[str]] | None,
) -> None:
    parent = _infos(placement_nodes)
    if key is None:
        # No constraint: upstream returns the parent placement itself; GangScheduling's
        # PreFilter skips such a group (it is never asked to generate).
        pl = _plugin(GangHandle(), [pg("pg", "default", 1)])
        result, st = pl.pre_filter(CycleState(), PodInfo(pg_pod("p")), parent)
        assert (result, st.is_skip()) == (None, True)
        assert want == {"test-placement": [n.name for n in parent]}
        return
    snapshot = {n.name: n for n in parent + _infos(other_nodes)}
    placements, st = generate_placements(key, parent, scheduled_on, snapshot)
    if want is None:
        assert st.code == Code.ERROR
        return
    assert st.is_success()
    assert {p.name: [n.name for n in p.nodes] for p in placements} == want


# ---------------------------------------------------- PodGroupPodsCount (score, normalize)

#: name -> (assigned, assumed, proposed, wanted score)
POD_COUNTS = {
    "existing assigned and assumed pods": (2, 1, 2, 5),
    "no assumed pods": (1, 0, 2, 3),
    "no assigned pods": (0, 1, 2, 3),
    "no assigned pods, no assumed pods": (0, 0, 2, 2),
}


@pytest.mark.parametrize(
    ("assigned", "assumed", "proposed", "want"), list(POD_COUNTS.values()), ids=list(POD_COUNTS)
)
def test_pods_count_score_counts_scheduled_and_proposed_pods(
    assigned: int, assumed: int, proposed: int, want: int
) -> None:
    assert pods_count_score(assigned + assumed, proposed) == want


NORMALIZE = {
    "distinct scores": ([10, 50, 110], [9, 45, 100]),
    "equal scores": ([50, 50], [100, 100]),
    "single score": ([50], [100]),
    "some minimal score that is far from a group of scores located closely": (
        [11, 100, 101, 102],
        [10, 98, 99, 100],
    ),
    "zero scores": ([0, 0], None),
}


@pytest.mark.parametrize(("scores", "want"), list(NORMALIZE.values()), ids=list(NORMALIZE))
def test_normalize_pods_count(scores: list[int], want: list[int] | None) -> None:
    got, st = normalize_pods_count(scores)
    if want is None:
        assert st.code == Code.ERROR
        assert (
            st.message == "no pods from pod group are assigned to any of the candidate placements"
        )
        return
    assert (got, st.is_success()) == (want, True)


# ------------------------------------------------------------------- PlacementBinPacking

CPU_MEM = [ResourceSpec("cpu", 1), ResourceSpec("memory", 1)]
GPU = "nvidia.com/gpu"


def _res(cpu: str, mem: str, gpu: str | None = None) -> dict[str, str]:
    out = {"cpu": cpu, "memory": mem}
    if gpu is not None:
        out[GPU] = gpu
    return out


def _node(name: str, alloc: Mapping[str, str], pods: Sequence[Mapping[str, str]] = ()) -> NodeInfo:
    info = NodeInfo(MakeNode().name(name).allocatable(alloc).capacity(alloc).obj())
    for i, req in enumerate(pods):
        info.add_pod(
            PodInfo(MakePod().name(f"{name}-x{i}").uid(f"{name}-x{i}").req(req).node(name).obj())
        )
    return info


def _pod(uid: str, req: Mapping[str, str]) -> PodInfo:
    return PodInfo(MakePod().name(uid).uid(uid).req(req).obj())


#: foo on node1 and bar on node2, with these (cpu, memory, gpu) requests.
def _two(foo: tuple[str, ...], bar: tuple[str, ...], bar_on: str = "node2") -> list[Any]:
    return [("foo", _res(*foo), "node1"), ("bar", _res(*bar), bar_on)]


TWO_NODES = {"node1": [], "node2": []}
FOO_BAR = _two(("1000m", "0"), ("2000m", "2000"))
CPU4_MEM1 = [ResourceSpec("cpu", 4), ResourceSpec("memory", 1)]
WITH_GPU = [*CPU_MEM, ResourceSpec(GPU, 1)]

BIN_PACKING = {
    "Computes score based on total requests": (TWO_NODES, ["node1", "node2"], FOO_BAR, CPU_MEM, 25),
    "Computes score using weights": (TWO_NODES, ["node1", "node2"], FOO_BAR, CPU4_MEM1, 28),
    "Handles multiple pods per node": (
        TWO_NODES,
        ["node1", "node2"],
        _two(("1000m", "0"), ("2000m", "2000"), bar_on="node1"),
        CPU4_MEM1,
        28,
    ),
    "Does not include nodes from outside of placement": (
        {**TWO_NODES, "node3": []},
        ["node1", "node2"],
        FOO_BAR,
        CPU_MEM,
        25,
    ),
    "Includes pre-existing pods from outside of pod group": (
        {"node1": [_res("1000m", "0")], "node2": []},
        ["node1", "node2"],
        FOO_BAR,
        CPU_MEM,
        30,
    ),
    "Includes scalar resources if any pod in pod group has nonzero requests": (
        {"node1": [_res("1000m", "0", "0")], "node2": []},
        ["node1", "node2"],
        _two(("1000m", "0", "0"), ("1000m", "2000", "1")),
        WITH_GPU,
        20,
    ),
    "Does not include scalar resources if all pods in pod group have zero requests": (
        {"node1": [_res("1000m", "0", "1")], "node2": []},
        ["node1", "node2"],
        _two(("1000m", "0", "0"), ("1000m", "2000", "0")),
        WITH_GPU,
        25,
    ),
}


@pytest.mark.parametrize(
    ("existing", "placement", "assignments", "resources", "want"),
    list(BIN_PACKING.values()),
    ids=list(BIN_PACKING),
)
def test_placement_bin_packing_score(
    existing: Mapping[str, list[Mapping[str, str]]],
    placement: list[str],
    assignments: list[tuple[str, Mapping[str, str], str]],
    resources: list[ResourceSpec],
    want: int,
) -> None:
    gpu = any(GPU in r.name for r in resources)
    alloc = _res("5000m", "5000", "5" if gpu else None)
    nodes = {n: _node(n, alloc, pods) for n, pods in existing.items()}
    proposed = [(_pod(uid, req), node) for uid, req, node in assignments]
    scorer = Scorer(MOST_ALLOCATED, resources, ())
    assert bin_packing_score(scorer, resources, proposed, [nodes[n] for n in placement]) == want


def _shape(*points: tuple[int, int]) -> list[UtilizationShapePoint]:
    return [UtilizationShapePoint(u, s) for u, s in points]


STRATEGIES = {
    "LeastAllocated": (LEAST_ALLOCATED, [], 70),
    "MostAllocated": (MOST_ALLOCATED, [], 30),
    "RequestedToCapacityRatio with shape equivalent to LeastAllocated": (
        REQUESTED_TO_CAPACITY_RATIO,
        _shape((0, 10), (100, 0)),
        70,
    ),
    "RequestedToCapacityRatio with shape equivalent to MostAllocated": (
        REQUESTED_TO_CAPACITY_RATIO,
        _shape((0, 0), (100, 10)),
        30,
    ),
    "RequestedToCapacityRatio with custom shape": (
        REQUESTED_TO_CAPACITY_RATIO,
        _shape((0, 0), (50, 10), (100, 0)),
        60,
    ),
}


@pytest.mark.parametrize(
    ("strategy", "shape", "want"), list(STRATEGIES.values()), ids=list(STRATEGIES)
)
def test_placement_bin_packing_strategies(
    strategy: str, shape: list[UtilizationShapePoint], want: int
) -> None:
    nodes = [_node(f"node{i}", _res(f"{i}00m", f"{i}00")) for i in (1, 2, 3)]
    proposed = [
        (_pod("foo", _res("100m", "0")), "node1"),
        (_pod("bar", _res("200m", "60")), "node2"),
    ]
    scorer = Scorer(strategy, CPU_MEM, shape)
    assert bin_packing_score(scorer, CPU_MEM, proposed, nodes) == want


# ------------------------------------------- the domain of a gang, through PreFilter

RACK = "topology.kubernetes.io/rack"
SMALL, BIG = _res("1", "4Gi"), _res("4", "16Gi")


def _rack_nodes(
    racks: Mapping[str, Sequence[Mapping[str, str]]], tainted: str = ""
) -> list[NodeInfo]:
    out = []
    for rack, allocs in racks.items():
        for i, alloc in enumerate(allocs):
            b = MakeNode().name(f"{rack}-{i}")
            if rack == tainted:
                b.taints([{"key": "dedicated", "value": "other", "effect": "NoSchedule"}])
            out.append(NodeInfo(b.label(RACK, rack).allocatable({**alloc, "pods": "110"}).obj()))
    return out


def _gang_pod(i: int) -> object:
    return (
        MakePod()
        .name(f"p{i}")
        .namespace("ns1")
        .uid(f"p{i}")
        .pod_group_name("pg1")
        .req({"cpu": "1", "memory": "1Gi"})
        .obj()
    )


def _domain(
    racks: Mapping[str, Sequence[Mapping[str, str]]],
    min_count: int | None = 3,
    tainted: str = "",
) -> tuple[set[str] | None, str]:
    handle = GangHandle()
    group = pg("pg1", "ns1", min_count, schedulingConstraints={"topology": [{"key": RACK}]})
    pl = _plugin(handle, [group])
    pods = [_gang_pod(i) for i in range(3)]
    handle.add_pods(pods)
    result, st = pl.pre_filter(CycleState(), PodInfo(pods[0]), _rack_nodes(racks, tainted))  # type: ignore[arg-type]
    names = None if result is None or result.node_names is None else set(result.node_names)
    return names, st.message if not st.is_success() else ""


def test_a_gang_goes_to_the_only_domain_that_fits_all_of_its_pods() -> None:
    # rack-a holds 2 of the 3 pods (1 cpu each), rack-b all 3: upstream's placement step
    # finds rack-a infeasible for minCount 3.
    assert _domain({"rack-a": [SMALL, SMALL], "rack-b": [SMALL, SMALL, SMALL]}) == (
        {"rack-b-0", "rack-b-1", "rack-b-2"},
        "",
    )


def test_a_gang_prefers_the_domain_it_packs_tightest() -> None:
    # Both fit: PodGroupPodsCount ties (3 pods each), PlacementBinPacking favours the rack
    # the pods fill most (3 of 3 cpus over 3 of 16).
    assert _domain({"rack-a": [BIG, BIG, BIG, BIG], "rack-b": [SMALL, SMALL, SMALL]})[0] == {
        "rack-b-0",
        "rack-b-1",
        "rack-b-2",
    }


def test_a_basic_group_may_go_where_fewer_than_all_its_pods_fit() -> None:
    # A quorum of 1: rack-a holds 2 of 3, rack-b 1; PodGroupPodsCount prefers rack-a.
    assert _domain({"rack-a": [SMALL, SMALL], "rack-b": [SMALL]}, min_count=None)[0] == {
        "rack-a-0",
        "rack-a-1",
    }


def test_a_domain_whose_nodes_the_pods_do_not_tolerate_holds_none_of_them() -> None:
    # rack-b would pack tightest, but its taint is not tolerated: rack-a it is.
    racks = {"rack-a": [BIG, BIG, BIG, BIG], "rack-b": [SMALL, SMALL, SMALL]}
    assert _domain(racks, tainted="rack-b")[0] == {"rack-a-0", "rack-a-1", "rack-a-2", "rack-a-3"}
    assert _domain(racks, tainted="rack-a")[0] == {"rack-b-0", "rack-b-1", "rack-b-2"}


def test_a_gang_no_domain_fits_is_unschedulable() -> None:
    names, why = _domain({"rack-a": [SMALL, SMALL], "rack-b": [SMALL]})
    assert names is None
    assert why == topology.ERR_NO_PLACEMENT.format(key=RACK, want=3)


def test_room_freed_or_nodes_changed_requeue_only_topology_constrained_groups() -> None:
    handle = GangHandle()
    racked = pg("pg1", "ns1", 3, schedulingConstraints={"topology": [{"key": RACK}]})
    pl = _plugin(handle, [racked, pg("plain", "ns1", 3)])
    gone = MakePod().name("x").namespace("ns1").node("rack-a-0").obj()
    assert pl.hint_room_changed(_gang_pod(0), gone, None) == QueueingHint.QUEUE  # type: ignore[arg-type]
    plain = MakePod().name("q").namespace("ns1").pod_group_name("plain").obj()
    assert pl.hint_room_changed(plain, gone, None) == QueueingHint.SKIP
    assert pl.hint_room_changed(MakePod().name("solo").obj(), gone, None) == QueueingHint.SKIP
    never_placed = MakePod().name("y").namespace("ns1").obj()
    assert pl.hint_room_changed(_gang_pod(0), never_placed, None) == QueueingHint.SKIP  # type: ignore[arg-type]
    node = MakeNode().name("rack-c-0").label(RACK, "rack-c").obj()
    assert pl.hint_room_changed(_gang_pod(0), None, node) == QueueingHint.QUEUE  # type: ignore[arg-type]
