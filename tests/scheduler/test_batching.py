"""Opportunistic batching (services/scheduler/batching.py).

Two of upstream's tables as data: TestBatchScenarios (test/integration/scheduler/batch:
pods created one at a time on nodes of maxPods 1 or 2, which are batched and where each
lands) and TestBatchBasic (framework/runtime/batch_test.go: a first pod stores its results,
does the second get a hint, and the flush reasons). Its two rows on pods of one PodGroup
cycle (GenericWorkload) are left out: kubera schedules a gang a pod per cycle.

Every row also runs with the gate off and must place every pod alike; a property does the
same for random pod streams, nodes and informer confirmations.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.api import features
from services.scheduler import batching
from services.scheduler.framework.types import PodInfo
from tests.builders import MakeNode, MakePod
from tests.profiles import examples
from tests.scheduler.batching_harness import Harness

ATTEMPTS = "scheduler_batch_attempts_total"
FLUSHED = "scheduler_batch_cache_flushed_total"

NO_TOPOLOGY = """  pluginConfig:
  - name: PodTopologySpread
    args: {defaultingType: List, defaultConstraints: []}
"""

#: upstream's runScenario profiles: the default one without default spreading, a copy
#: named mysched, and copies with a Filter that cannot sign (nosign) or refuses (emptysign).
SCENARIO_CONFIG = (
    "apiVersion: kubescheduler.config.k8s.io/v1\n"
    "kind: KubeSchedulerConfiguration\n"
    "outOfTreePlugins:\n"
    "- tests.scheduler.batching_plugins:NO_SIGN\n"
    "- tests.scheduler.batching_plugins:EMPTY_SIGN\n"
    "- tests.scheduler.batching_plugins:BATCH_TEST\n"
    "profiles:\n"
    "- schedulerName: default-scheduler\n" + NO_TOPOLOGY + "- schedulerName: mysched\n"
    "" + NO_TOPOLOGY + "- schedulerName: nosign\n"
    "  plugins: {filter: {enabled: [{name: nosign}]}}\n" + NO_TOPOLOGY + ""
    "- schedulerName: emptysign\n"
    "  plugins: {filter: {enabled: [{name: emptysign}]}}\n" + NO_TOPOLOGY + ""
    "- schedulerName: batchtest\n"
    "  plugins: {filter: {enabled: [{name: batchTest}]}}\n" + NO_TOPOLOGY
)


# ------------------------------------------------------------ TestBatchScenarios


@dataclass
class PodDef:
    name: str
    expected: str
    node_selector: dict[str, str] = field(default_factory=dict)
    node_affinity: list[str] = field(default_factory=list)
    batched: bool = False
    scheduler: str = ""


@dataclass
class NodeDef:
    name: str
    max_pods: int
    labels: dict[str, str] = field(default_factory=dict)


def _affinity(p: str, *nodes: str, batched: bool = False, expected: str = "") -> PodDef:
    return PodDef(p, expected, node_affinity=list(nodes), batched=batched)


SCENARIOS: list[tuple[str, list[PodDef], list[NodeDef]]] = [
    ("one pod one node", [PodDef("1ppn-p1", "1ppn-n1")], [NodeDef("1ppn-n1", 1)]),
    (
        "distinct pods on distinct nodes",
        [
            PodDef("dpdn-p1", "dpdn-n1", node_selector={"forpod": "1"}),
            PodDef("dpdn-p2", "dpdn-n2", node_selector={"forpod": "2"}),
            PodDef("dpdn-p3", "dpdn-n3", node_selector={"forpod": "3"}),
        ],
        [NodeDef(f"dpdn-n{i}", 10, {"forpod": str(i)}) for i in (3, 2, 1)],
    ),
    (
        "three pod batch",
        [
            _affinity("tpb-p1", "tpb-n1", "tpb-n2", "tpb-n3", expected="tpb-n1"),
            _affinity("tpb-p2", "tpb-n1", "tpb-n2", "tpb-n3", expected="tpb-n2", batched=True),
            _affinity("tpb-p3", "tpb-n1", "tpb-n2", "tpb-n3", expected="tpb-n3", batched=True),
        ],
        [NodeDef(f"tpb-n{i}", 1) for i in (3, 2, 1)],
    ),
    (
        "two consecutive batches",
        [
            _affinity("tcb-p1", "tcb-n1", "tcb-n2", expected="tcb-n1"),
            _affinity("tcb-p2", "tcb-n1", "tcb-n2", expected="tcb-n2", batched=True),
            _affinity("tcb-p3", "tcb-n4", "tcb-n3", expected="tcb-n4"),
            _affinity("tcb-p4", "tcb-n4", "tcb-n3", expected="tcb-n3", batched=True),
        ],
        [NodeDef(f"tcb-n{i}", 1) for i in (4, 3, 2, 1)],
    ),
    (
        "multiple pods per node means no batching",
        [
            _affinity("mppn-p1", "mppn-n1", "mppn-n2", expected="mppn-n1"),
            _affinity("mppn-p2", "mppn-n1", "mppn-n2", expected="mppn-n1"),
            _affinity("mppn-p3", "mppn-n4", "mppn-n3", expected="mppn-n4"),
            _affinity("mppn-p4", "mppn-n4", "mppn-n3", expected="mppn-n4"),
        ],
        [NodeDef(f"mppn-n{i}", 2) for i in (4, 3, 2, 1)],
    ),
    (
        "no batching between schedulers",
        [
            _affinity("bts-p1", "bts-n1", "bts-n2", "bts-n3", expected="bts-n1"),
            PodDef(
                "bts-p2",
                "bts-n2",
                node_affinity=["bts-n1", "bts-n2", "bts-n3"],
                scheduler="mysched",
            ),
        ],
        [NodeDef(f"bts-n{i}", 1) for i in (3, 2, 1)],
    ),
    (
        "no batching missing sign",
        [
            PodDef(
                "nsg-p1", "nsg-n1", node_affinity=["nsg-n1", "nsg-n2", "nsg-n3"], scheduler="nosign"
            ),
            PodDef(
                "nsg-p2", "nsg-n2", node_affinity=["nsg-n1", "nsg-n2", "nsg-n3"], scheduler="nosign"
            ),
        ],
        [NodeDef(f"nsg-n{i}", 1) for i in (3, 2, 1)],
    ),
    (
        "no batching empty sign",
        [
            PodDef(
                "esg-p1",
                "esg-n1",
                node_affinity=["esg-n1", "esg-n2", "esg-n3"],
                scheduler="emptysign",
            ),
            PodDef(
                "esg-p2",
                "esg-n2",
                node_affinity=["esg-n1", "esg-n2", "esg-n3"],
                scheduler="emptysign",
            ),
        ],
        [NodeDef(f"esg-n{i}", 1) for i in (3, 2, 1)],
    ),
]


def _scenario_pod(d: PodDef) -> core_pb2.Pod:
    b = MakePod().name(d.name).namespace("default").uid(f"uid-{d.name}")
    b.req({"cpu": "10", "memory": str(4 * 1024 * 1024)})
    if d.scheduler:
        b.scheduler_name(d.scheduler)
    else:
        b.scheduler_name("default-scheduler")
    if d.node_selector:
        b.node_selector(d.node_selector)
    if d.node_affinity:
        n = len(d.node_affinity)
        terms = [
            {
                "weight": n - i,
                "preference": {
                    "matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]
                },
            }
            for i, node in enumerate(d.node_affinity)
        ]
        b.affinity({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": terms}})
    return b.obj()


def _scenario_node(d: NodeDef) -> core_pb2.Node:
    res = {"cpu": "100", "memory": str(4 * 1024**3), "pods": str(d.max_pods)}
    return MakeNode().name(d.name).labels(d.labels).capacity(res).allocatable(res).obj()


async def _run_scenario(
    pods: list[PodDef], nodes: list[NodeDef], *, on: bool
) -> tuple[list[str], list[bool]]:
    h = Harness(SCENARIO_CONFIG, batching=on)
    for n in nodes:
        h.add_node(_scenario_node(n))
    placed, batched = [], []
    for d in pods:
        before = h.batched_pods
        pod = _scenario_pod(d)
        placed.append(await h.schedule(pod))
        h.confirm(pod)  # upstream's test waits until the pod is scheduled
        batched.append(h.batched_pods > before)
    return placed, batched


@pytest.mark.parametrize(
    ("pods", "nodes"), [(p, n) for _, p, n in SCENARIOS], ids=[s[0] for s in SCENARIOS]
)
def test_batch_scenarios(pods: list[PodDef], nodes: list[NodeDef]) -> None:
    placed, batched = asyncio.run(_run_scenario(pods, nodes, on=True))
    assert placed == [d.expected for d in pods]
    assert batched == [d.batched for d in pods]
    unbatched, never = asyncio.run(_run_scenario(pods, nodes, on=False))
    assert unbatched == placed
    assert not any(never)


# ------------------------------------------------------------ TestBatchBasic


@dataclass
class BasicRow:
    """The first pod runs through, then the second (upstream TestBatchBasic, with kubera's
    cluster standing in for its fake lister and hand-made signatures)."""

    first_uid: str = "b-1"
    second_uid: str = "b-2"
    #: The second pod asks for something the first does not (another signature).
    second_differs: bool = False
    #: The first pod finds no node (every node blocked until the second comes).
    first_fails: bool = False
    #: Nodes (n1..nN) and how many are blocked by a pod before the first pod.
    nodes: int = 3
    blocked: int = 0
    #: A pod of another profile is scheduled between them.
    skip_pod: bool = False
    #: The second pod carries status.nominatedNodeName.
    second_nominated: bool = False
    #: The clock moves on this much between them.
    wait: float = 0.0
    #: A third pod of the same signature after the second.
    third: bool = False
    #: Expected: the second (and third) pod placed from a batch.
    hint: bool = False
    third_hint: bool = False
    flushes: dict[str, int] = field(default_factory=dict)


BASIC: list[tuple[str, BasicRow]] = [
    ("a second pod with the same signature gets a hint", BasicRow(hint=True)),
    (
        "a second pod with a different signature doesn't get a hint",
        BasicRow(
            first_uid="a-1",
            second_uid="a-2",
            second_differs=True,
            flushes={batching.POD_INCOMPATIBLE: 1},
        ),
    ),
    (
        "a second pod doesn't get a hint if it's not 1-pod-per-node",
        BasicRow(first_uid="a-1", second_uid="a-2", flushes={batching.NODE_NOT_FULL: 1}),
    ),
    (
        # 1.35 counts a store without other feasible nodes as the empty_list flush (the
        # newest upstream moved it to store_schedule_results_total).
        "pod doesn't get hint if previous pod didn't scheduled",
        BasicRow(first_fails=True, flushes={batching.EMPTY_LIST: 1}),
    ),
    (
        "empty list",
        BasicRow(nodes=2, blocked=1, flushes={batching.EMPTY_LIST: 2}),
    ),
    (
        "pod doesn't get hint because the previous pod is to a different profile",
        BasicRow(skip_pod=True, flushes={batching.POD_SKIPPED: 1}),
    ),
    (
        "pod uses batch from preceding pod and leaves remaining batch to next pod",
        BasicRow(third=True, hint=True, third_hint=True),
    ),
    (
        "a second pod with a nominated node does not get a hint",
        # It goes to its nominated node, a store without other feasible nodes.
        BasicRow(
            second_nominated=True,
            flushes={batching.POD_NOMINATED: 1, batching.EMPTY_LIST: 1},
        ),
    ),
    # kubera's own: the batch is too old (upstream maxBatchAge).
    ("a batch older than 500ms is not used", BasicRow(wait=0.6, flushes={batching.EXPIRED: 1})),
]


def _basic_pod(uid: str, *, scheduler: str = "batchtest", differs: bool = False) -> core_pb2.Pod:
    b = MakePod().name(f"pod-{uid}").namespace("default").uid(uid).scheduler_name(scheduler)
    b.req({"cpu": "100m"})
    if differs:
        b.tolerations([{"key": "k", "operator": "Exists"}])
    return b.obj()


def _basic_node(i: int) -> core_pb2.Node:
    res = {"cpu": "4", "memory": "8Gi", "pods": "110"}
    return MakeNode().name(f"n{i}").capacity(res).allocatable(res).obj()


async def _run_basic(row: BasicRow, *, on: bool) -> tuple[Harness, list[str]]:
    h = Harness(SCENARIO_CONFIG, batching=on)
    for i in range(1, row.nodes + 1):
        h.add_node(_basic_node(i))
    blockers = [
        MakePod()
        .name(f"blocker-{i}")
        .namespace("default")
        .uid(f"b-blocker-{i}")
        .node(f"n{i}")
        .obj()
        for i in range(1, row.nodes + 1)
    ]
    for blocker in blockers[: row.nodes if row.first_fails else row.blocked]:
        h.add_bound(blocker)
    placed = []
    first = _basic_pod(row.first_uid)
    placed.append(await h.schedule(first))
    if placed[-1]:
        h.confirm(first)
    if row.first_fails:
        h.remove_bound(blockers[0])
    if row.skip_pod:
        other = _basic_pod("a-other", scheduler="mysched")
        placed.append(await h.schedule(other))
    h.clock.advance(row.wait)
    if row.nodes == 2 and row.blocked:
        h.add_node(_basic_node(4))  # upstream's second pod goes to n4
    second = _basic_pod(row.second_uid, differs=row.second_differs)
    if row.second_nominated:  # a node the first pod left free
        free = [f"n{i}" for i in range(1, row.nodes + 1) if f"n{i}" != placed[0]]
        second.status.nominated_node_name = free[0]
    placed.append(await h.schedule(second))
    if row.third:
        h.confirm(second)
        placed.append(await h.schedule(_basic_pod("b-3")))
    return h, placed


@pytest.mark.parametrize("row", [r for _, r in BASIC], ids=[n for n, _ in BASIC])
def test_batch_basic(row: BasicRow) -> None:
    h, placed = asyncio.run(_run_basic(row, on=True))
    hints = 1 if row.hint else 0
    hints += 1 if row.third_hint else 0
    assert h.batched_pods == hints
    profile = "batchtest"
    assert h.counter(ATTEMPTS, profile=profile, result=batching.HINT_USED) == hints
    pods = 2 + (1 if row.third else 0)
    assert h.counter(ATTEMPTS, profile=profile, result=batching.NO_HINT) == pods - hints
    seen = {
        reason: int(h.counter(FLUSHED, profile=profile, reason=reason))
        for reason in (
            batching.POD_FAILED,
            batching.POD_SKIPPED,
            batching.NODE_MISSING,
            batching.NODE_NOT_FULL,
            batching.EMPTY_LIST,
            batching.EXPIRED,
            batching.POD_INCOMPATIBLE,
            batching.POD_NOT_BATCHABLE,
            batching.POD_NOMINATED,
            batching.NOT_EXACT,
        )
    }
    assert {k: v for k, v in seen.items() if v} == row.flushes
    _, unbatched = asyncio.run(_run_basic(row, on=False))
    assert unbatched == placed


# ------------------------------------------------------------ signatures


def _signature(pod: core_pb2.Pod, scheduler: str = "default-scheduler") -> bytes | None:
    h = Harness(SCENARIO_CONFIG, batching=True)
    fwk = h.sched.frameworks[scheduler]
    return batching.OpportunisticBatch(fwk, h.clock).signature(PodInfo(pod))


def _base() -> MakePod:
    return MakePod().name("p").namespace("default").uid("u").req({"cpu": "1"})


SIGNABLE = [
    ("a plain pod is signable", _base().obj(), True),
    (
        "a pod with topology spread constraints is not signable",
        _base()
        .topology_spread_constraints(
            [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]
        )
        .obj(),
        False,
    ),
    (
        "a pod with pod affinity is not signable",
        _base()
        .affinity(
            {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"a": "b"}}, "topologyKey": "zone"}
                    ]
                }
            }
        )
        .obj(),
        False,
    ),
    (
        "a pod with resource claims is not signable",
        _base().resource_claim("c", claim="claim").obj(),
        False,
    ),
]


@pytest.mark.parametrize(
    ("pod", "signable"), [(p, s) for _, p, s in SIGNABLE], ids=[n for n, _, _ in SIGNABLE]
)
def test_which_pods_are_signable(pod: core_pb2.Pod, signable: bool) -> None:
    assert (_signature(pod) is not None) == signable


def test_default_spreading_makes_the_default_profile_unsignable() -> None:
    """upstream PodTopologySpread.SignPod: the system's default constraints sign no pod."""
    h = Harness(batching=True)
    fwk = h.sched.frameworks["default-scheduler"]
    assert batching.OpportunisticBatch(fwk, h.clock).signature(PodInfo(_base().obj())) is None


def test_signatures_ignore_names_and_labels_but_not_requests() -> None:
    a = _signature(_base().obj())
    b = _signature(
        MakePod().name("q").namespace("x").uid("v").label("l", "1").req({"cpu": "1"}).obj()
    )
    c = _signature(_base().req({"memory": "1Gi"}).obj())
    assert a == b
    assert a != c


def test_a_profile_with_a_plugin_without_signer_signs_nothing() -> None:
    assert _signature(_base().obj(), "nosign") is None


# ------------------------------------------------------------ the gate


@pytest.mark.parametrize(
    ("spec", "want"),
    [
        ("", {}),
        ("OpportunisticBatching=false", {"OpportunisticBatching": False}),
        (
            " OpportunisticBatching = True , NodeDeclaredFeatures=1",
            {"OpportunisticBatching": True, "NodeDeclaredFeatures": True},
        ),
    ],
)
def test_feature_gates_parse(spec: str, want: dict[str, bool]) -> None:
    assert features.parse(spec) == want


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("OpportunisticBatching", "missing bool value for OpportunisticBatching"),
        ("OpportunisticBatching=yes", "invalid value of OpportunisticBatching=yes"),
    ],
)
def test_feature_gates_refused_as_component_base_does(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        features.parse(spec)


def test_batching_is_on_by_default_as_upstream_since_1_35() -> None:
    assert features.enabled(None, features.OPPORTUNISTIC_BATCHING)


# ------------------------------------------------------------ equivalence


@dataclass
class Stream:
    nodes: list[tuple[int, int, str, bool]]
    pods: list[tuple[int, int, bool, bool]]
    confirm: list[bool]
    events: list[int]


TEMPLATES = 3

streams = st.builds(
    Stream,
    # (cpu cores, max pods, zone, tainted PreferNoSchedule)
    nodes=st.lists(
        st.tuples(st.integers(1, 4), st.integers(1, 3), st.sampled_from("ab"), st.booleans()),
        min_size=1,
        max_size=8,
    ),
    # (template, cpu millis, host port 80, preferred zone a)
    pods=st.lists(
        st.tuples(
            st.integers(0, TEMPLATES - 1),
            st.sampled_from([100, 1500, 3000]),
            st.booleans(),
            st.booleans(),
        ),
        min_size=1,
        max_size=16,
    ),
    confirm=st.lists(st.booleans(), min_size=16, max_size=16),
    # after pod i: 0 nothing, 1 a node is added, 2 the first placed pod is deleted
    events=st.lists(st.sampled_from([0, 0, 0, 1, 2]), min_size=16, max_size=16),
)


def _stream_pod(i: int, spec: tuple[int, int, bool, bool]) -> core_pb2.Pod:
    template, millis, port, zone_a = spec
    b = MakePod().name(f"p{i}").namespace("default").uid(f"u{i}")
    b.scheduler_name("default-scheduler")
    ports: list[dict[str, Any]] = [{"containerPort": 80, "hostPort": 80}] if port else []
    b.container("c", requests={"cpu": f"{millis}m"}, ports=ports)
    if template:
        b.label("app", str(template))
    if zone_a:
        b.affinity(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 5,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "zone", "operator": "In", "values": ["a"]}
                                ]
                            },
                        }
                    ]
                }
            }
        )
    return b.obj()


def _stream_node(i: int, spec: tuple[int, int, str, bool]) -> core_pb2.Node:
    cores, max_pods, zone, tainted = spec
    res = {"cpu": str(cores), "memory": "8Gi", "pods": str(max_pods)}
    b = MakeNode().name(f"n{i}").labels({"zone": zone}).capacity(res).allocatable(res)
    if tainted:
        b.taints([{"key": "t", "value": "v", "effect": "PreferNoSchedule"}])
    return b.obj()


async def _run_stream(s: Stream, *, on: bool) -> tuple[list[str], int]:
    h = Harness(SCENARIO_CONFIG, batching=on, seed=7)
    for i, n in enumerate(s.nodes):
        h.add_node(_stream_node(i, n))
    extra = len(s.nodes)
    placed: list[str] = []
    pods: list[core_pb2.Pod] = []
    for i, spec in enumerate(s.pods):
        pod = _stream_pod(i, spec)
        node = await h.schedule(pod)
        placed.append(node)
        if node:
            pods.append(pod)
            if s.confirm[i]:
                h.confirm(pod)
        if s.events[i] == 1:
            h.add_node(_stream_node(extra, s.nodes[extra % len(s.nodes)]))
            extra += 1
        elif s.events[i] == 2 and pods:
            gone = pods.pop(0)
            cached = h.sched.cache.get_pod(gone)
            assert cached is not None
            if not h.sched.cache.is_assumed(gone):
                h.remove_bound(cached)
    return placed, h.batched_pods


@settings(max_examples=examples(300), deadline=None)
@given(streams)
def test_batched_and_unbatched_scheduling_place_pods_alike(s: Stream) -> None:
    on, _ = asyncio.run(_run_stream(s, on=True))
    off, never = asyncio.run(_run_stream(s, on=False))
    assert on == off
    assert never == 0


def test_a_one_pod_per_node_stream_is_batched() -> None:
    """The property's streams do batch: host port 80 on every pod, one node each."""
    s = Stream(
        nodes=[(4, 3, "ab"[i % 2], False) for i in range(6)],
        pods=[(0, 100, True, False)] * 6,
        confirm=[True] * 16,
        events=[0] * 16,
    )
    on, batched = asyncio.run(_run_stream(s, on=True))
    off, _ = asyncio.run(_run_stream(s, on=False))
    assert on == off
    assert len(set(on)) == 6
    assert batched == 5


@pytest.mark.parametrize(
    ("percentage", "batched"),
    [
        ("50", 0),  # 120 nodes, 100 to find: an ordinary cycle samples, nothing is batched
        ("100", 2),  # every node filtered: the second and third pods are batched
    ],
)
def test_batching_only_when_every_node_is_filtered(percentage: str, batched: int) -> None:
    config = (
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        f"percentageOfNodesToScore: {percentage}\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n" + NO_TOPOLOGY
    )

    async def run(on: bool) -> tuple[list[str], Harness]:
        h = Harness(config, batching=on)
        for i in range(120):
            h.add_node(_stream_node(i, (4, 3, "ab"[i % 2], False)))
        placed = []
        for i in range(3):
            pod = _stream_pod(i, (0, 100, True, False))
            placed.append(await h.schedule(pod))
            h.confirm(pod)
        return placed, h

    on, h = asyncio.run(run(True))
    off, _ = asyncio.run(run(False))
    assert on == off
    assert h.batched_pods == batched
    flushed = h.counter(FLUSHED, profile="default-scheduler", reason=batching.NOT_EXACT)
    assert flushed == (3 if not batched else 0)
