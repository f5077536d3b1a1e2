"""NodeResourcesFit and NodeResourcesBalancedAllocation: fit rules and reasons, the three
scoring strategies' arithmetic (cases from upstream's tests), balanced allocation, and the
vectorised paths agreeing with the per-node ones."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import BatchFilterPlugin
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import noderesources as nr
from tests.builders import MakeNode, MakePod

Json = dict[str, Any]


def pod(
    *requests: dict[str, str],
    node: str = "",
    uid: str = "p",
    init: Sequence[dict[str, str]] = (),
    overhead: dict[str, str] | None = None,
) -> PodInfo:
    """One container per request map (like upstream st.MakePod().Req(...))."""
    p = MakePod().name(uid).uid(uid).node(node)
    for r in requests:
        p.req(r)
    for i, r in enumerate(init):
        p.init_container(f"i{i}", requests=r)
    if overhead:
        p.overhead(overhead)
    return PodInfo(p.obj())


def node_proto(name: str, allocatable: dict[str, str]) -> core_pb2.Node:
    return MakeNode().name(name).allocatable(allocatable).capacity(allocatable).obj()


def node(name: str, allocatable: dict[str, str], *existing: PodInfo) -> NodeInfo:
    ni = NodeInfo(node_proto(name, allocatable))
    for e in existing:
        ni.add_pod(e)
    return ni


class FakeSnapshot:
    """The snapshot shape filter_batch / score_batch read: per-node int64 arrays."""

    def __init__(self, infos: list[NodeInfo], non_zero: bool = True) -> None:
        self._infos = infos
        self._index = {ni.name: i for i, ni in enumerate(infos)}
        self.alloc = np.array(
            [
                [
                    ni.allocatable.milli_cpu,
                    ni.allocatable.memory,
                    ni.allocatable.ephemeral_storage,
                    ni.allocatable.allowed_pod_number,
                ]
                for ni in infos
            ],
            dtype=np.int64,
        ).reshape(-1, 4)
        self.requested = np.array(
            [
                [
                    ni.requested.milli_cpu,
                    ni.requested.memory,
                    ni.requested.ephemeral_storage,
                    len(ni.pods),
                ]
                for ni in infos
            ],
            dtype=np.int64,
        ).reshape(-1, 4)
        if non_zero:
            self.non_zero = np.array(
                [[ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory] for ni in infos],
                dtype=np.int64,
            ).reshape(-1, 2)

    def list(self) -> list[NodeInfo]:
        return self._infos

    def get(self, name: str) -> NodeInfo | None:
        i = self._index.get(name)
        return None if i is None else self._infos[i]

    def index_of(self, name: str) -> int:
        return self._index[name]


class FakeHandle:
    def __init__(self, snap: Any) -> None:
        self._snap = snap

    def snapshot(self) -> Any:
        return self._snap


# ============================================================================ Filter

ALLOC = {
    "cpu": "4",
    "memory": "4Gi",
    "ephemeral-storage": "10Gi",
    "pods": "3",
    "example.com/gpu": "2",
}

FILTER = [
    # (pod, existing pods, reasons, code, rule)
    (pod({"cpu": "1", "memory": "1Gi"}), [], (), Code.SUCCESS, "fits"),
    (pod({"cpu": "4"}), [], (), Code.SUCCESS, "exactly the free cpu fits"),
    (
        pod({"cpu": "2"}),
        [pod({"cpu": "3"}, uid="e")],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE,
        "cpu short but within allocatable: Unschedulable (preemption may help)",
    ),
    (
        pod({"cpu": "5"}),
        [],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "cpu beyond allocatable: UnschedulableAndUnresolvable",
    ),
    (
        pod({"memory": "3Gi"}),
        [pod({"memory": "2Gi"}, uid="e")],
        ("Insufficient memory",),
        Code.UNSCHEDULABLE,
        "memory short",
    ),
    (
        pod({"ephemeral-storage": "11Gi"}),
        [],
        ("Insufficient ephemeral-storage",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "ephemeral-storage beyond allocatable",
    ),
    (
        pod({}),
        [pod({}, uid=f"e{i}") for i in range(3)],
        ("Too many pods",),
        Code.UNSCHEDULABLE,
        "pod count full, even for a pod requesting nothing",
    ),
    (
        pod({"example.com/gpu": "1"}),
        [pod({"example.com/gpu": "2"}, uid="e")],
        ("Insufficient example.com/gpu",),
        Code.UNSCHEDULABLE,
        "extended resource short",
    ),
    (
        pod({"example.com/fpga": "1"}),
        [],
        ("Insufficient example.com/fpga",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "extended resource the node lacks entirely",
    ),
    (
        pod({"cpu": "5", "memory": "5Gi", "example.com/gpu": "1"}),
        [pod({}, uid=f"e{i}") for i in range(3)],
        ("Too many pods", "Insufficient cpu", "Insufficient memory"),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "all reasons, pods first, then cpu, memory",
    ),
    (
        pod({"cpu": "1"}, init=[{"cpu": "5"}]),
        [],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "an init container's larger request counts",
    ),
    (
        pod({"cpu": "3"}, overhead={"cpu": "2"}),
        [],
        ("Insufficient cpu",),
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "pod overhead counts",
    ),
    (
        pod({"cpu": "0", "memory": "0"}),
        [pod({"cpu": "4", "memory": "4Gi"}, uid="e")],
        (),
        Code.SUCCESS,
        "zero requests fit a full node",
    ),
]


@pytest.mark.parametrize(
    ("pi", "existing", "reasons", "code", "rule"), FILTER, ids=[c[4] for c in FILTER]
)
def test_filter(
    pi: PodInfo, existing: list[PodInfo], reasons: tuple[str, ...], code: Code, rule: str
) -> None:
    pl = nr.new(None, None)
    state = CycleState()
    _, st = pl.pre_filter(state, pi, [])
    assert st.is_success()
    got = pl.filter(state, pi, node("n", ALLOC, *existing))
    assert got.code == code
    assert got.reasons == reasons


@pytest.mark.parametrize(
    ("args", "fits"),
    [
        (nr.Args(), False),
        (nr.Args(ignored_resources=["example.com/fpga"]), True),
        (nr.Args(ignored_resource_groups=["example.com"]), True),
        (nr.Args(ignored_resource_groups=["other.io"]), False),
    ],
    ids=[
        "extended resource checked",
        "ignoredResources skips it",
        "ignoredResourceGroups skips it",
        "another group does not",
    ],
)
def test_ignored_extended_resources(args: nr.Args, fits: bool) -> None:
    pl = nr.new(args, None)
    state = CycleState()
    pi = pod({"example.com/fpga": "1"})
    pl.pre_filter(state, pi, [])
    assert pl.filter(state, pi, node("n", ALLOC)).is_success() is fits


def test_filter_without_pre_filter_is_an_error() -> None:
    st = nr.new(None, None).filter(CycleState(), pod({"cpu": "1"}), node("n", ALLOC))
    assert st.code == Code.ERROR


# ============================================================================ filter_batch


def random_requests(rng: random.Random, scale: float) -> dict[str, str]:
    r: dict[str, str] = {}
    if rng.random() < 0.8:
        r["cpu"] = f"{rng.randint(0, int(4000 * scale))}m"
    if rng.random() < 0.8:
        r["memory"] = f"{rng.randint(0, int(8 * scale))}Gi"
    if rng.random() < 0.3:
        r["ephemeral-storage"] = f"{rng.randint(0, int(20 * scale))}Gi"
    if rng.random() < 0.2:
        r["example.com/gpu"] = str(rng.randint(0, 2))
    return r


def random_nodes(rng: random.Random, n: int) -> list[NodeInfo]:
    infos = []
    for i in range(n):
        alloc = {
            "cpu": f"{rng.choice([0, 1000, 2000, 4000, 8000])}m",
            "memory": f"{rng.choice([0, 2, 8, 16])}Gi",
            "ephemeral-storage": f"{rng.choice([0, 10, 50])}Gi",
            "pods": str(rng.randint(0, 6)),
        }
        if rng.random() < 0.5:
            alloc["example.com/gpu"] = str(rng.randint(0, 4))
        existing = [
            pod(
                *[random_requests(rng, 0.5) for _ in range(rng.randint(0, 2))],
                uid=f"n{i}-p{j}",
                node=f"n{i}",
            )
            for j in range(rng.randint(0, 4))
        ]
        infos.append(node(f"n{i}", alloc, *existing))
    return infos


@pytest.mark.parametrize("seed", range(8))
def test_filter_batch_equals_filter_on_random_nodes(seed: int) -> None:
    rng = random.Random(seed)
    infos = random_nodes(rng, 60)
    pl = nr.new(nr.Args(ignored_resource_groups=["ignored.io"]), FakeHandle(FakeSnapshot(infos)))
    assert isinstance(pl, BatchFilterPlugin)
    subset = rng.sample(infos, 25)
    for k in range(30):
        reqs = [random_requests(rng, 1.0) for _ in range(rng.randint(0, 3))]
        if k % 7 == 0:
            reqs.append({"ignored.io/thing": "5"})
        pi = pod(*reqs, uid=f"incoming{k}")
        state = CycleState()
        pl.pre_filter(state, pi, infos)
        for nodes in (infos, subset):
            want = [pl.filter(state, pi, ni) for ni in nodes]
            got = pl.filter_batch(state, pi, nodes)
            assert got == want
            assert [s.plugin for s in got if not s.is_success()] == [
                "NodeResourcesFit" for s in want if not s.is_success()
            ]


def test_filter_batch_without_arrays_loops() -> None:
    infos = random_nodes(random.Random(1), 10)
    pi = pod({"cpu": "3"})
    for handle in (None, FakeHandle(object.__new__(FakeSnapshot))):
        pl = nr.new(None, handle)
        state = CycleState()
        pl.pre_filter(state, pi, infos)
        assert pl.filter_batch(state, pi, infos) == [pl.filter(state, pi, ni) for ni in infos]


# ============================================================================ scoring


def fit_scores(
    strategy: str,
    pi: PodInfo,
    nodes: list[NodeInfo],
    resources: list[nr.ResourceSpec] | None = None,
    shape: list[nr.UtilizationShapePoint] | None = None,
) -> list[int]:
    ss = nr.ScoringStrategy(type=strategy, shape=shape or [])
    if resources is not None:
        ss.resources = resources
    pl = nr.new(nr.Args(scoring_strategy=ss), FakeHandle(FakeSnapshot(nodes)))
    state = CycleState()
    assert pl.pre_score(state, pi, nodes).is_success()
    out = []
    for ni in nodes:
        s, st = pl.score(state, pi, ni)
        assert st.is_success()
        out.append(s)
    batch, st = pl.score_batch(state, pi, nodes)
    assert st.is_success() and batch == out
    return out


def upstream_nodes(
    cap1: tuple[str, str],
    cap2: tuple[str, str],
    on1: list[dict[str, str]],
    on2: list[dict[str, str]],
) -> list[NodeInfo]:
    """Two nodes like upstream's st.MakeNode().Capacity({cpu, memory}) with pods on them."""
    return [
        node(
            "node1",
            {"cpu": cap1[0], "memory": cap1[1]},
            *[pod(r, node="node1", uid=f"a{i}") for i, r in enumerate(on1)],
        ),
        node(
            "node2",
            {"cpu": cap2[0], "memory": cap2[1]},
            *[pod(r, node="node2", uid=f"b{i}") for i, r in enumerate(on2)],
        ),
    ]


REQ = pod({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
MEM2_CPU1 = [nr.ResourceSpec("memory", 2), nr.ResourceSpec("cpu", 1)]

STRATEGY_CASES = [
    # least_allocated_test.go "resources requested, pods scheduled with resources":
    # node1 ((10000-6000)*100/10000 + (20000-5000)*100/20000)/2 = (40+75)/2 = 57; node2 45.
    (
        nr.LEAST_ALLOCATED,
        REQ,
        upstream_nodes(
            ("10000", "20000"),
            ("10000", "20000"),
            [{"cpu": "3000", "memory": "0"}],
            [{"cpu": "3000", "memory": "5000"}],
        ),
        None,
        None,
        [57, 45],
        "LeastAllocated: upstream pods scheduled with resources",
    ),
    # least_allocated_test.go "requested resources exceed node capacity": cpu 0, memory 100/50.
    (
        nr.LEAST_ALLOCATED,
        pod({"cpu": "3000", "memory": "0"}),
        upstream_nodes(
            ("4000", "10000"),
            ("4000", "10000"),
            [{"cpu": "3000", "memory": "0"}],
            [{"cpu": "3000", "memory": "5000"}],
        ),
        None,
        None,
        [50, 25],
        "LeastAllocated: over capacity scores 0 for that resource",
    ),
    # least_allocated_test.go "... different weight on CPU and memory ...": (25+50*2)/3 = 41.
    (
        nr.LEAST_ALLOCATED,
        REQ,
        upstream_nodes(("4000", "10000"), ("6000", "10000"), [], []),
        MEM2_CPU1,
        None,
        [41, 50],
        "LeastAllocated: weighted mean",
    ),
    # most_allocated_test.go "resources requested, pods scheduled with resources": 42 / 55.
    (
        nr.MOST_ALLOCATED,
        REQ,
        upstream_nodes(
            ("10000", "20000"),
            ("10000", "20000"),
            [{"cpu": "3000", "memory": "0"}],
            [{"cpu": "3000", "memory": "5000"}],
        ),
        None,
        None,
        [42, 55],
        "MostAllocated: upstream pods scheduled with resources",
    ),
    # most_allocated_test.go "resources requested equal node capacity": (100+90)/2, (50+100)/2.
    (
        nr.MOST_ALLOCATED,
        pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
        upstream_nodes(("5000", "10000"), ("10000", "9000"), [], []),
        None,
        None,
        [95, 75],
        "MostAllocated: requests equal to capacity",
    ),
    # most_allocated_test.go "no resources requested, pods scheduled, nonzero request for
    # resource": 100m/200Mi defaults; node1 cpu 300m/250m capped at 100, memory 600/1000 -> 80.
    (
        nr.MOST_ALLOCATED,
        pod({}),
        upstream_nodes(("250m", "1000Mi"), ("250m", "1000Mi"), [{}, {}], []),
        None,
        None,
        [80, 30],
        "MostAllocated: non-zero defaults for containers without requests",
    ),
    # most_allocated_test.go "... different weight ...": (75 + 50*2)/3 = 58.
    (
        nr.MOST_ALLOCATED,
        REQ,
        upstream_nodes(("4000", "10000"), ("6000", "10000"), [], []),
        MEM2_CPU1,
        None,
        [58, 50],
        "MostAllocated: weighted mean",
    ),
]


@pytest.mark.parametrize(
    ("strategy", "pi", "nodes", "resources", "shape", "want", "rule"),
    STRATEGY_CASES,
    ids=[c[6] for c in STRATEGY_CASES],
)
def test_strategy_scores(
    strategy: str,
    pi: PodInfo,
    nodes: list[NodeInfo],
    resources: list[nr.ResourceSpec] | None,
    shape: list[nr.UtilizationShapePoint] | None,
    want: list[int],
    rule: str,
) -> None:
    assert fit_scores(strategy, pi, nodes, resources, shape) == want


LEAST_SHAPE = [nr.UtilizationShapePoint(0, 10), nr.UtilizationShapePoint(100, 0)]
BIN_PACK_SHAPE = [nr.UtilizationShapePoint(0, 0), nr.UtilizationShapePoint(100, 1)]


def test_rtcr_least_shape_rounds_the_weighted_mean() -> None:
    # requested_to_capacity_ratio_test.go "nothing scheduled, resources requested, differently
    # sized nodes": node1 cpu 75% -> 25, memory 50% -> 50, round(37.5) = 38; node2 50.
    nodes = upstream_nodes(("4000", "10000"), ("6000", "10000"), [], [])
    assert fit_scores(nr.REQUESTED_TO_CAPACITY_RATIO, REQ, nodes, shape=LEAST_SHAPE) == [38, 50]


def gpu_node(name: str, gpus: int, *existing: PodInfo) -> NodeInfo:
    return node(name, {"cpu": "4", "memory": "10000Mi", "intel.com/foo": str(gpus)}, *existing)


@pytest.mark.parametrize(
    ("pi", "on2", "want"),
    [
        (pod({}), [], [0, 0]),
        (pod({"intel.com/foo": "2"}), [], [2, 5]),
        (
            pod({"intel.com/foo": "2"}),
            [pod({"intel.com/foo": "2"}, node="node2", uid="e")],
            [2, 10],
        ),
        (pod({"intel.com/foo": "4"}), [], [5, 10]),
    ],
    ids=[
        "pod not requesting the resource scores 0",
        "2 of 8 and 2 of 4",
        "node2 becomes full",
        "4 of 8 and 4 of 4",
    ],
)
def test_rtcr_single_extended_resource(pi: PodInfo, on2: list[PodInfo], want: list[int]) -> None:
    # requested_to_capacity_ratio_test.go TestResourceBinPackingSingleExtended: shape
    # {0,0},{100,1} scaled to 0..10; only intel.com/foo is scored.
    nodes = [gpu_node("node1", 8), gpu_node("node2", 4, *on2)]
    got = fit_scores(
        nr.REQUESTED_TO_CAPACITY_RATIO,
        pi,
        nodes,
        [nr.ResourceSpec("intel.com/foo", 1)],
        BIN_PACK_SHAPE,
    )
    assert got == want


def test_rtcr_seeds_bin_packing_example() -> None:
    # The seeds' "resource bin packing" worked example (shape {0,0},{100,10}; weights foo 5,
    # memory 1, cpu 3), with scores on the scheduler's 0..100 scale rather than the doc's 0..10:
    # node1 foo 75, memory 50, cpu 3*100/8 = 37 -> round((375+50+111)/9) = 60
    # node2 foo 50, memory 75, cpu 100       -> round((250+75+300)/9) = 69
    shape = [nr.UtilizationShapePoint(0, 0), nr.UtilizationShapePoint(100, 10)]
    resources = [
        nr.ResourceSpec("intel.com/foo", 5),
        nr.ResourceSpec("memory", 1),
        nr.ResourceSpec("cpu", 3),
    ]
    pi = pod({"intel.com/foo": "2", "memory": "256Mi", "cpu": "2"})
    nodes = [
        node(
            "node1",
            {"intel.com/foo": "4", "memory": "1Gi", "cpu": "8"},
            pod({"intel.com/foo": "1", "memory": "256Mi", "cpu": "1"}, node="node1", uid="u1"),
        ),
        node(
            "node2",
            {"intel.com/foo": "8", "memory": "1Gi", "cpu": "8"},
            pod({"intel.com/foo": "2", "memory": "512Mi", "cpu": "6"}, node="node2", uid="u2"),
        ),
    ]
    assert fit_scores(nr.REQUESTED_TO_CAPACITY_RATIO, pi, nodes, resources, shape) == [60, 69]


# upstream requested_to_capacity_ratio_test.go TestBrokenLinearFunction
BROKEN_LINEAR = [
    (
        [(10, 1), (90, 9)],
        [
            (-10, 1),
            (0, 1),
            (9, 1),
            (10, 1),
            (15, 1),
            (19, 1),
            (20, 2),
            (89, 8),
            (90, 9),
            (99, 9),
            (100, 9),
            (110, 9),
        ],
    ),
    (
        [(0, 2), (40, 10), (100, 0)],
        [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)],
    ),
    ([(0, 2), (40, 2), (100, 2)], [(-10, 2), (0, 2), (20, 2), (40, 2), (70, 2), (110, 2)]),
]


@pytest.mark.parametrize(
    ("shape", "points"), BROKEN_LINEAR, ids=["rising", "rising then falling", "flat"]
)
def test_broken_linear(shape: list[tuple[int, int]], points: list[tuple[int, int]]) -> None:
    for p, want in points:
        assert nr.broken_linear(shape, p) == want


def test_broken_linear_falling_segment_truncates_toward_zero() -> None:
    # 100 + (0-100)*(33-0)/100 = 100 - 33 (Go truncation), not 100 - 33 - 1 (floor).
    assert nr.broken_linear([(0, 100), (100, 0)], 33) == 67
    s = nr.Scorer(nr.REQUESTED_TO_CAPACITY_RATIO, [nr.ResourceSpec("cpu")], LEAST_SHAPE)
    p = np.array([33, 0, 100, 7], dtype=np.int64)
    assert s._broken_linear_v(p).tolist() == [nr.broken_linear(s.shape, int(x)) for x in p]


def test_extended_resource_not_requested_is_left_out() -> None:
    # least_allocated_test.go "bypass extended resource if the pod does not request" -> 50, 50;
    # "honor extended resource if the pod requests": node2 foo (10-2)/10 -> 80, (50+50+80)/3 = 60.
    resources = [
        nr.ResourceSpec("cpu"),
        nr.ResourceSpec("memory"),
        nr.ResourceSpec("intel.com/foo"),
    ]
    nodes = [
        node("node1", {"cpu": "6000", "memory": "10000"}),
        node("node2", {"cpu": "6000", "memory": "10000", "intel.com/foo": "4"}),
    ]
    assert fit_scores(nr.LEAST_ALLOCATED, REQ, nodes, resources) == [50, 50]
    nodes = [
        node("node1", {"cpu": "6000", "memory": "10000", "intel.com/foo": "4"}),
        node("node2", {"cpu": "6000", "memory": "10000", "intel.com/foo": "10"}),
    ]
    pi = pod({"cpu": "3000", "memory": "5000", "intel.com/foo": "2"})
    assert fit_scores(nr.LEAST_ALLOCATED, pi, nodes, resources) == [50, 60]


def balanced_scores(
    pi: PodInfo, nodes: list[NodeInfo], resources: list[nr.ResourceSpec] | None = None
) -> list[int]:
    args = (
        nr.BalancedAllocationArgs() if resources is None else nr.BalancedAllocationArgs(resources)
    )
    pl = nr.new_balanced_allocation(args, FakeHandle(FakeSnapshot(nodes)))
    state = CycleState()
    assert pl.pre_score(state, pi, nodes).is_success()
    out = [pl.score(state, pi, ni)[0] for ni in nodes]
    batch, _ = pl.score_batch(state, pi, nodes)
    assert batch == out
    # Without PreScore the same scores are computed on the fly.
    assert [pl.score(CycleState(), pi, ni)[0] for ni in nodes] == out
    return out


CPU_ONLY = ({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})
CPU_AND_MEMORY = ({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})


def ba_nodes(cap1: tuple[str, str], cap2: tuple[str, str]) -> list[NodeInfo]:
    """upstream's cpuOnly pod on node1 and cpuAndMemory pod on node2 (makeNode(milliCPU, mem))."""
    return [
        node("node1", {"cpu": cap1[0], "memory": cap1[1]}, pod(*CPU_ONLY, node="node1", uid="a")),
        node(
            "node2",
            {"cpu": cap2[0], "memory": cap2[1]},
            pod(*CPU_AND_MEMORY, node="node2", uid="b"),
        ),
    ]


BALANCED = [
    # balanced_allocation_test.go "nothing scheduled, resources requested, differently sized
    # nodes": std (0.75-0.5)/2 = 0.125 -> 87; node2 equal fractions -> 100.
    (
        pod(*CPU_AND_MEMORY),
        [
            node("node1", {"cpu": "4000m", "memory": "10000"}),
            node("node2", {"cpu": "6000m", "memory": "10000"}),
        ],
        None,
        [87, 100],
        "std of two fractions is half their difference",
    ),
    # "resources requested, pods scheduled with resources": 0.6/0.25 -> 82; 0.6/0.5 -> 95.
    (
        pod(*CPU_AND_MEMORY),
        ba_nodes(("10000m", "20000"), ("10000m", "20000")),
        None,
        [82, 95],
        "existing requests count (plain requests, no defaults)",
    ),
    # "requested resources at node capacity": fractions 1/0 -> 50; 1/0.5 -> 75.
    (
        pod(*CPU_ONLY),
        ba_nodes(("6000m", "10000"), ("6000m", "10000")),
        None,
        [50, 75],
        "fractions at capacity",
    ),
    # fractions over capacity are capped at 1: cpu 9000/6000 -> 1, memory 0 -> 50.
    (
        pod({"cpu": "6000m", "memory": "0"}),
        ba_nodes(("6000m", "10000"), ("6000m", "10000")),
        None,
        [50, 75],
        "fraction capped at 1",
    ),
    # "node without the scalar resource should skip the scalar resource": (0.857-0.125)/2 -> 63.
    (
        pod(*CPU_AND_MEMORY),
        [
            node("node1", {"cpu": "3500m", "memory": "40000", "nvidia.com/gpu": "8"}),
            node("node2", {"cpu": "3500m", "memory": "40000"}),
        ],
        [nr.ResourceSpec("cpu"), nr.ResourceSpec("memory"), nr.ResourceSpec("nvidia.com/gpu")],
        [63, 63],
        "unrequested scalar resource is skipped",
    ),
    # Three fractions 0.5, 0.25, 0.75: mean 0.5, variance 0.125/3, std 0.2041 -> 79.
    (
        pod({"cpu": "2000m", "memory": "1000", "nvidia.com/gpu": "6"}),
        [node("node1", {"cpu": "4000m", "memory": "4000", "nvidia.com/gpu": "8"})],
        [nr.ResourceSpec("cpu"), nr.ResourceSpec("memory"), nr.ResourceSpec("nvidia.com/gpu")],
        [79],
        "three resources use the full standard deviation",
    ),
    # Zero allocatable leaves a resource out: one fraction left, std 0 -> 100.
    (
        pod(*CPU_AND_MEMORY),
        [node("node1", {"cpu": "4000m"})],
        None,
        [100],
        "a resource the node lacks is left out",
    ),
]


@pytest.mark.parametrize(
    ("pi", "nodes", "resources", "want", "rule"), BALANCED, ids=[c[4] for c in BALANCED]
)
def test_balanced_allocation(
    pi: PodInfo,
    nodes: list[NodeInfo],
    resources: list[nr.ResourceSpec] | None,
    want: list[int],
    rule: str,
) -> None:
    assert balanced_scores(pi, nodes, resources) == want


def test_balanced_allocation_skips_best_effort_pods() -> None:
    # balanced_allocation_test.go "nothing scheduled, nothing requested, skip in PreScore".
    pl = nr.new_balanced_allocation(None, None)
    nodes = [node("node1", {"cpu": "4000m", "memory": "10000"})]
    assert pl.pre_score(CycleState(), pod({}), nodes).code == Code.SKIP
    assert pl.score(CycleState(), pod({}), nodes[0]) == (0, Status.success())


@pytest.mark.parametrize("strategy", nr.STRATEGIES)
@pytest.mark.parametrize("with_non_zero_array", [True, False], ids=["arrays", "gathered"])
def test_score_batch_equals_score_on_random_nodes(strategy: str, with_non_zero_array: bool) -> None:
    rng = random.Random(hash(strategy) % 1000)
    infos = random_nodes(rng, 50)
    shape = [
        nr.UtilizationShapePoint(0, 3),
        nr.UtilizationShapePoint(40, 10),
        nr.UtilizationShapePoint(100, 1),
    ]
    resources = [
        nr.ResourceSpec("cpu", 2),
        nr.ResourceSpec("memory", 1),
        nr.ResourceSpec("ephemeral-storage", 3),
        nr.ResourceSpec("example.com/gpu", 5),
    ]
    ss = nr.ScoringStrategy(type=strategy, resources=resources, shape=shape)
    handle = FakeHandle(FakeSnapshot(infos, non_zero=with_non_zero_array))
    fit = nr.new(nr.Args(scoring_strategy=ss), handle)
    ba = nr.new_balanced_allocation(nr.BalancedAllocationArgs(resources), handle)
    subset = rng.sample(infos, 20)
    for k in range(20):
        pi = pod(*[random_requests(rng, 0.5) for _ in range(rng.randint(0, 3))], uid=f"q{k}")
        for pl in (fit, ba):
            state = CycleState()
            pl.pre_score(state, pi, infos)
            for nodes in (infos, subset):
                want = [pl.score(state, pi, ni)[0] for ni in nodes]
                got, st = pl.score_batch(state, pi, nodes)
                assert st.is_success() and got == want


@pytest.mark.parametrize("strategy", nr.STRATEGIES)
def test_scores_stay_exact_on_the_largest_node_validation_admits(strategy: str) -> None:
    """cpu 9223372036854775 is 2^63-1 milli-units rounded down: times 100 it would wrap
    in int64, so the vectorised scores must still equal the exact per-node ones."""
    infos = [
        node(
            "huge",
            {"cpu": "9223372036854775", "memory": "8Pi", "pods": "110"},
            pod({"cpu": "4611686018427387", "memory": "4Pi"}, uid="half"),
        ),
        node("small", {"cpu": "4", "memory": "8Gi", "pods": "110"}),
    ]
    shape = [nr.UtilizationShapePoint(0, 0), nr.UtilizationShapePoint(100, 10)]
    resources = [nr.ResourceSpec("cpu", 1), nr.ResourceSpec("memory", 1)]
    ss = nr.ScoringStrategy(type=strategy, resources=resources, shape=shape)
    handle = FakeHandle(FakeSnapshot(infos))
    fit = nr.new(nr.Args(scoring_strategy=ss), handle)
    ba = nr.new_balanced_allocation(nr.BalancedAllocationArgs(resources), handle)
    pi = pod({"cpu": "1", "memory": "1Gi"}, uid="q")
    for pl in (fit, ba):
        state = CycleState()
        pl.pre_score(state, pi, infos)
        want = [pl.score(state, pi, ni)[0] for ni in infos]
        got, st = pl.score_batch(state, pi, infos)
        assert st.is_success() and got == want
        assert all(0 <= s <= 100 for s in got)


# ============================================================================ args


def test_args_from_dict_applies_v1_defaults() -> None:
    args = nr.Args.from_dict(
        {
            "scoringStrategy": {
                "type": "RequestedToCapacityRatio",
                "resources": [{"name": "intel.com/foo", "weight": 3}, {"name": "cpu"}],
                "requestedToCapacityRatio": {
                    "shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
                },
            },
            "ignoredResourceGroups": ["example.com"],
        }
    )
    ss = args.scoring_strategy
    assert ss.type == nr.REQUESTED_TO_CAPACITY_RATIO
    assert ss.resources == [nr.ResourceSpec("intel.com/foo", 3), nr.ResourceSpec("cpu", 1)]
    assert ss.shape == [nr.UtilizationShapePoint(0, 0), nr.UtilizationShapePoint(100, 10)]
    assert args.ignored_resource_groups == ["example.com"]
    default = nr.Args.from_dict(None).scoring_strategy
    assert default.type == nr.LEAST_ALLOCATED
    assert default.resources == [nr.ResourceSpec("cpu", 1), nr.ResourceSpec("memory", 1)]
    assert nr.BalancedAllocationArgs.from_dict({}).resources == default.resources


@pytest.mark.parametrize(
    ("ss", "fragment"),
    [
        (nr.ScoringStrategy(type="Bogus"), "scoringStrategy.type"),
        (nr.ScoringStrategy(resources=[nr.ResourceSpec("cpu", 0)]), "resources[0].weight"),
        (
            nr.ScoringStrategy(
                resources=[nr.ResourceSpec("memory", 1), nr.ResourceSpec("cpu", 101)]
            ),
            "resources[1].weight",
        ),
        (nr.ScoringStrategy(type=nr.REQUESTED_TO_CAPACITY_RATIO), "shape: Required value"),
        (
            nr.ScoringStrategy(
                type=nr.REQUESTED_TO_CAPACITY_RATIO,
                shape=[nr.UtilizationShapePoint(50, 1), nr.UtilizationShapePoint(10, 2)],
            ),
            "increasing order",
        ),
        (
            nr.ScoringStrategy(
                type=nr.REQUESTED_TO_CAPACITY_RATIO, shape=[nr.UtilizationShapePoint(0, 11)]
            ),
            "score",
        ),
    ],
    ids=[
        "unknown strategy",
        "zero weight",
        "weight above 100",
        "missing shape",
        "shape not increasing",
        "shape score above 10",
    ],
)
def test_invalid_args_are_rejected(ss: nr.ScoringStrategy, fragment: str) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        nr.new(nr.Args(scoring_strategy=ss), None)


# ============================================================================ queueing hints


def raw_pod(requests: dict[str, str], uid: str, node_name: str = "") -> core_pb2.Pod:
    return pod(requests, uid=uid, node=node_name).pod


POD_HINTS = [
    (raw_pod({"cpu": "1"}, "d", "n1"), None, QueueingHint.QUEUE, "bound pod deleted"),
    (raw_pod({"cpu": "1"}, "d"), None, QueueingHint.SKIP, "unbound pod deleted"),
    (
        raw_pod({"cpu": "2"}, "o", "n1"),
        raw_pod({"cpu": "1"}, "o", "n1"),
        QueueingHint.QUEUE,
        "bound pod scaled down a requested resource",
    ),
    (
        raw_pod({"memory": "2Gi"}, "o", "n1"),
        raw_pod({"memory": "1Gi"}, "o", "n1"),
        QueueingHint.SKIP,
        "scaled down a resource the pod does not request",
    ),
    (
        raw_pod({"cpu": "2"}, "p"),
        raw_pod({"cpu": "1"}, "p"),
        QueueingHint.QUEUE,
        "the pod itself scaled down",
    ),
]


@pytest.mark.parametrize(("old", "new", "want", "rule"), POD_HINTS, ids=[c[3] for c in POD_HINTS])
def test_pod_hint(
    old: core_pb2.Pod, new: core_pb2.Pod | None, want: QueueingHint, rule: str
) -> None:
    ev = nr.new(None, None).events_to_register()[0]
    assert ev.hint is not None
    assert ev.hint(raw_pod({"cpu": "1"}, "p"), old, new) == want


NODE_HINTS = [
    (None, node_proto("n", {"cpu": "2", "pods": "10"}), QueueingHint.QUEUE, "fitting node added"),
    (
        None,
        node_proto("n", {"cpu": "500m", "pods": "10"}),
        QueueingHint.SKIP,
        "too small node added",
    ),
    (
        node_proto("n", {"cpu": "500m", "pods": "10"}),
        node_proto("n", {"cpu": "2", "pods": "10"}),
        QueueingHint.QUEUE,
        "requested resource grew",
    ),
    (
        node_proto("n", {"cpu": "2", "memory": "1Gi", "pods": "10"}),
        node_proto("n", {"cpu": "2", "memory": "2Gi", "pods": "10"}),
        QueueingHint.SKIP,
        "only an unrequested resource grew",
    ),
    (
        node_proto("n", {"cpu": "2", "pods": "1"}),
        node_proto("n", {"cpu": "2", "pods": "5"}),
        QueueingHint.QUEUE,
        "pod capacity grew",
    ),
]


@pytest.mark.parametrize(("old", "new", "want", "rule"), NODE_HINTS, ids=[c[3] for c in NODE_HINTS])
def test_node_hint(
    old: core_pb2.Node | None, new: core_pb2.Node, want: QueueingHint, rule: str
) -> None:
    ev = nr.new(None, None).events_to_register()[1]
    assert ev.hint is not None
    assert ev.hint(raw_pod({"cpu": "1"}, "p"), old, new) == want


def test_batch_rows_follow_a_reordered_snapshot() -> None:
    # Rows remembered for a NodeInfo are re-checked against the snapshot's list, so a new
    # snapshot ordering the same NodeInfos differently still reads the right rows.
    infos = random_nodes(random.Random(3), 30)
    handle = FakeHandle(FakeSnapshot(infos))
    pl = nr.new(None, handle)
    pi = pod({"cpu": "1500m", "memory": "3Gi"})
    state = CycleState()
    pl.pre_filter(state, pi, infos)
    subset = infos[5:20]
    want = [pl.filter(state, pi, ni) for ni in subset]
    assert pl.filter_batch(state, pi, subset) == want
    handle._snap = FakeSnapshot(list(reversed(infos)))
    assert pl.filter_batch(state, pi, subset) == want
    fit_score = [pl.score(state, pi, ni)[0] for ni in subset]
    assert pl.score_batch(state, pi, subset)[0] == fit_score
