"""PodTopologySpread: skew arithmetic (with minDomains), which nodes count (missing keys,
nodeAffinityPolicy, nodeTaintsPolicy), matchLabelKeys, several constraints, ScheduleAnyway
scoring and its normalisation, cluster default constraints, args validation, queueing hints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo, QueueingHint
from services.scheduler.plugins import podtopologyspread as pts
from tests.builders import MakeNode, MakePod
from tests.scheduler.plugins._fakes import FakeHandle, fake_handle

Json = dict[str, Any]
HOST = "kubernetes.io/hostname"
ZONE_STD = "topology.kubernetes.io/zone"
SKEW = pts.ERR_REASON_CONSTRAINTS_NOT_MATCH
NO_LABEL = pts.ERR_REASON_NODE_LABEL_NOT_MATCH


# --------------------------------------------------------------------------- fixtures


def exists(key: str) -> Json:
    return {"matchExpressions": [{"key": key, "operator": "Exists"}]}


FOO = exists("foo")
BAR = exists("bar")


def spread(
    max_skew: int,
    key: str,
    when: str = "DoNotSchedule",
    selector: Json | None = FOO,
    **extra: Any,
) -> Json:
    c: Json = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when, **extra}
    if selector is not None:
        c["labelSelector"] = selector
    return c


def mk_pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    *,
    node: str = "",
    ns: str = "default",
    constraints: Sequence[Json] = (),
    spec: Json | None = None,
    owner: str = "",
    terminating: bool = False,
) -> core_pb2.Pod:
    p = MakePod().name(name).namespace(ns).uid(f"uid-{ns}-{name}").labels(labels or {})
    if owner:
        p.owner_references([{"kind": owner, "name": "rs", "uid": "rs-uid"}])
    if terminating:
        p.deletion_timestamp("2024-01-01T00:00:00Z")
    p.node(node).spec(spec or {})
    if constraints:
        p.topology_spread_constraints(constraints)
    return p.obj()


def foo_pods(**per_node: int) -> list[core_pb2.Pod]:
    """`node_a=2` -> two pods labelled foo on node-a."""
    return [
        mk_pod(f"p-{n}-{i}", {"foo": ""}, node=n.replace("_", "-"))
        for n, k in per_node.items()
        for i in range(k)
    ]


def mk_node(name: str, labels: dict[str, str], taints: Sequence[Json] = ()) -> core_pb2.Node:
    return MakeNode().name(name).labels(labels).taints(taints).obj()


def zn(name: str, zone: str, **extra: str) -> core_pb2.Node:
    """The upstream tests' nodes: labels zone=<zone>, node=<name>."""
    return mk_node(name, {"zone": zone, "node": name, **extra})


FOUR = [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2"), zn("node-y", "zone2")]
OK = (Code.SUCCESS, "")
SKEWED = (Code.UNSCHEDULABLE, SKEW)
UNLABELLED = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, NO_LABEL)


def run_filter(
    handle: FakeHandle, pod: core_pb2.Pod, args: pts.Args | None = None
) -> tuple[Status, dict[str, tuple[Code, str]]]:
    pl = pts.new(args, handle)
    state = CycleState()
    pi = PodInfo(pod)
    nodes = handle.snapshot().list()
    _, st = pl.pre_filter(state, pi, nodes)
    out = {}
    for ni in nodes:
        s = pl.filter(state, pi, ni)
        out[ni.name] = (s.code, s.message)
    return st, out


# ----------------------------------------------------------------------------- Filter

FILTER_CASES = [
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK, "node-y": SKEWED},
        # Upstream filtering_test.go TestSingleConstraint.
        id="upstream: pods spread across nodes as 2/1/0/3, only node-x fits",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(2, "node")]),
        {"node-a": SKEWED, "node-b": OK, "node-x": OK, "node-y": SKEWED},
        id="skew = count + self - min: 2/1/0/3 with maxSkew 2 admits counts up to 1",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(labels={"bar": ""}, constraints=[spread(1, "node")]),
        {"node-a": SKEWED, "node-b": OK, "node-x": OK, "node-y": SKEWED},
        id="a pod not matching its own selector adds no self count",
    ),
    pytest.param(
        [zn("node-a", "zone1"), mk_node("node-b", {"zon": "zone1"}), *FOUR[2:]],
        foo_pods(node_a=1, node_b=1, node_x=1, node_y=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone")]),
        {"node-a": OK, "node-b": UNLABELLED, "node-x": SKEWED, "node-y": SKEWED},
        # Upstream TestSingleConstraint: node-b's pods do not count, node-b is unresolvable.
        id="upstream: zones spread 1/2 because node-b lacks the zone key (missing label)",
    ),
    pytest.param(
        FOUR,
        # Counting the other namespace's pod would make it 1/1 and admit every node.
        [*foo_pods(node_a=1), mk_pod("o", {"foo": ""}, node="node-x", ns="other")],
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK, "node-y": OK},
        id="only pods in the incoming pod's namespace count",
    ),
    pytest.param(
        FOUR,
        [*foo_pods(node_b=1), mk_pod("t", {"foo": ""}, node="node-a", terminating=True)],
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node")]),
        {"node-a": OK, "node-b": SKEWED, "node-x": OK, "node-y": OK},
        id="terminating pods do not count",
    ),
    pytest.param(
        FOUR[:1] + FOUR[2:3],
        foo_pods(node_a=1, node_x=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", minDomains=3)]),
        {"node-a": SKEWED, "node-x": SKEWED},
        id="2 domains < minDomains 3: global minimum treated as 0, 1+1-0 > 1 everywhere",
    ),
    pytest.param(
        FOUR[:1] + FOUR[2:3],
        foo_pods(node_a=1, node_x=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", minDomains=2)]),
        {"node-a": OK, "node-x": OK},
        id="2 domains >= minDomains 2: global minimum is the real minimum 1",
    ),
    pytest.param(
        FOUR[:1] + FOUR[2:3],
        foo_pods(node_a=2, node_x=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", minDomains=3)]),
        {"node-a": SKEWED, "node-x": SKEWED},
        id="minDomains unmet: 2/1 with maxSkew 1 rejects even the emptier zone (min is 0)",
    ),
    pytest.param(
        [zn("node-a", "zone1"), zn("node-x", "zone2"), zn("node-q", "zone3")],
        foo_pods(node_a=1, node_x=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", minDomains=3)]),
        {"node-a": SKEWED, "node-x": SKEWED, "node-q": OK},
        id="an empty domain counts as eligible: 3 domains meet minDomains 3, min is 0",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "node")],
            spec={"nodeSelector": {"node": "node-a"}},
        ),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="nodeAffinityPolicy Honor (default): only node-a is a domain, min is its own 2",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "node", nodeAffinityPolicy="Ignore")],
            spec={"nodeSelector": {"node": "node-a"}},
        ),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK, "node-y": SKEWED},
        id="nodeAffinityPolicy Ignore: every node counts despite the nodeSelector",
    ),
    # Upstream TestSingleConstraint, "incoming pod has nodeAffinity, pods spread as
    # 2/~1~/~0~/3, hence node-a fits" (node-b / node-x pass here; NodeAffinity rejects them).
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "node")],
            spec={
                "affinity": {
                    "nodeAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {
                                            "key": "node",
                                            "operator": "In",
                                            "values": ["node-a", "node-y"],
                                        }
                                    ]
                                }
                            ]
                        }
                    }
                }
            },
        ),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": SKEWED},
        id="upstream: required node affinity honoured, pods spread 2/~1~/~0~/3, node-a fits",
    ),
    pytest.param(
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mk_node("node-x", {"node": "node-x"}, [{"key": "k", "effect": "NoSchedule"}]),
        ],
        foo_pods(node_a=2, node_b=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK},
        id="nodeTaintsPolicy Ignore (default): the tainted empty node sets the minimum 0",
    ),
    pytest.param(
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mk_node("node-x", {"node": "node-x"}, [{"key": "k", "effect": "NoSchedule"}]),
        ],
        foo_pods(node_a=2, node_b=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", nodeTaintsPolicy="Honor")]),
        {"node-a": SKEWED, "node-b": OK, "node-x": OK},
        id="nodeTaintsPolicy Honor: untolerated tainted node is not a domain, min is 1",
    ),
    pytest.param(
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mk_node("node-x", {"node": "node-x"}, [{"key": "k", "effect": "NoSchedule"}]),
        ],
        foo_pods(node_a=2, node_b=1),
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "node", nodeTaintsPolicy="Honor")],
            spec={"tolerations": [{"key": "k", "operator": "Exists"}]},
        ),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK},
        id="nodeTaintsPolicy Honor: a tolerated taint keeps the node a domain",
    ),
    pytest.param(
        [
            zn("node-a", "zone1"),
            zn("node-b", "zone1"),
            mk_node("node-x", {"node": "node-x"}, [{"key": "k", "effect": "PreferNoSchedule"}]),
        ],
        foo_pods(node_a=2, node_b=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", nodeTaintsPolicy="Honor")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK},
        id="nodeTaintsPolicy Honor ignores PreferNoSchedule taints",
    ),
    pytest.param(
        FOUR,
        [
            mk_pod("v1-a", {"foo": "", "hash": "v1"}, node="node-a"),
            mk_pod("v1-b", {"foo": "", "hash": "v1"}, node="node-a"),
            mk_pod("v2-b", {"foo": "", "hash": "v2"}, node="node-b"),
        ],
        mk_pod(
            labels={"foo": "", "hash": "v2"},
            constraints=[spread(1, "node", matchLabelKeys=["hash"])],
        ),
        {"node-a": OK, "node-b": SKEWED, "node-x": OK, "node-y": OK},
        id="matchLabelKeys merge key=value into the selector: only this revision counts",
    ),
    # Upstream filtering_test.go TestMultipleConstraints.
    pytest.param(
        FOUR,
        foo_pods(node_a=2, node_b=1, node_y=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone"), spread(1, "node")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK, "node-y": SKEWED},
        id="upstream: two constraints on zone and node, spreads [3/3, 2/1/0/3]: node-x",
    ),
    pytest.param(
        # zone: 1/2 -> only zone1 (node-a); node: 1/2/0 -> only node-x (zone2).
        [zn("node-a", "zone1"), zn("node-b", "zone2"), zn("node-x", "zone2")],
        foo_pods(node_a=1, node_b=2),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone"), spread(1, "node")]),
        {"node-a": SKEWED, "node-b": SKEWED, "node-x": SKEWED},
        id="conflicting zone and node constraints leave no node",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", "ScheduleAnyway")]),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="ScheduleAnyway constraints never filter",
    ),
    pytest.param(
        FOUR,
        foo_pods(node_a=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "node", selector={})]),
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
        id="empty labelSelector counts no pods (upstream countPodsMatchSelector)",
    ),
]


@pytest.mark.parametrize("nodes,pods,incoming,want", FILTER_CASES)
def test_filter(
    nodes: list[core_pb2.Node],
    pods: list[core_pb2.Pod],
    incoming: core_pb2.Pod,
    want: dict[str, tuple[Code, str]],
) -> None:
    _, got = run_filter(fake_handle(nodes, pods), incoming)
    assert got == want


def test_pre_filter_skips_pods_without_hard_constraints() -> None:
    st, got = run_filter(fake_handle(FOUR, foo_pods(node_a=3)), mk_pod(labels={"foo": ""}))
    assert st.is_skip()
    assert set(got.values()) == {OK}


def test_remove_pod_rebalances_for_preemption() -> None:
    pods = foo_pods(node_a=2, node_b=1, node_y=3)
    handle = fake_handle(FOUR, pods)
    pl = pts.new(None, handle)
    pi = PodInfo(mk_pod(labels={"foo": ""}, constraints=[spread(1, "node")]))
    state = CycleState()
    pl.pre_filter(state, pi, handle.snapshot().list())
    b = handle.snapshot().get("node-b")
    x = handle.snapshot().get("node-x")
    assert b is not None and x is not None
    assert pl.filter(state, pi, b).code == Code.UNSCHEDULABLE
    trial = state.clone()
    # node-x gets a pod: min becomes 1, node-b (1 + 1 - 1) fits.
    extra = PodInfo(mk_pod("extra", {"foo": ""}, node="node-x"))
    assert pl.add_pod(trial, pi, extra, x).is_success()
    assert pl.filter(trial, pi, b).is_success()
    assert pl.filter(state, pi, b).code == Code.UNSCHEDULABLE  # the clone is independent
    assert pl.remove_pod(trial, pi, extra, x).is_success()
    assert pl.filter(trial, pi, b).code == Code.UNSCHEDULABLE


# ------------------------------------------------------------------------------ Score


def run_score(
    nodes: Sequence[core_pb2.Node],
    failed: Sequence[core_pb2.Node],
    pods: Sequence[core_pb2.Pod],
    pod: core_pb2.Pod,
    args: pts.Args | None = None,
) -> tuple[Status, dict[str, int]]:
    """PreScore over the candidate `nodes` (the cluster also holds `failed` ones), then
    Score + NormalizeScore."""
    handle = fake_handle([*nodes, *failed], pods)
    pl = pts.new(args, handle)
    snap = handle.snapshot()
    candidates = [ni for n in nodes if (ni := snap.get(n.metadata.name)) is not None]
    state = CycleState()
    pi = PodInfo(pod)
    st = pl.pre_score(state, pi, candidates)
    if not st.is_success():
        return st, {}
    scores = []
    for ni in candidates:
        raw, s = pl.score(state, pi, ni)
        assert s.is_success()
        scores.append(NodeScore(ni.name, raw))
    assert pl.normalize_score(state, pi, scores).is_success()
    return st, {ns.name: ns.score for ns in scores}


def hn(name: str, **extra: str) -> core_pb2.Node:
    return mk_node(name, {HOST: name, **extra})


SCORE_CASES = [
    # Upstream scoring_test.go TestPodTopologySpreadScore (expected values copied).
    pytest.param(
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        foo_pods(node_a=2, node_b=1, node_d=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(2, HOST, "ScheduleAnyway")]),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
        id="upstream: one constraint on node, 4 candidates 2/1/0/3, maxSkew=2",
    ),
    pytest.param(
        [zn("node-a", "zone1"), zn("node-b", "zone1"), zn("node-x", "zone2")],
        [zn("node-y", "zone2")],
        foo_pods(node_a=4, node_b=2, node_x=1, node_y=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, "zone", "ScheduleAnyway")]),
        {"node-a": 75, "node-b": 75, "node-x": 100},
        id="upstream: one constraint on zone, 3 of 4 nodes candidates, counts from all nodes",
    ),
    pytest.param(
        [
            mk_node("node-a", {"zone": "zone1", HOST: "node-a"}),
            mk_node("node-x", {"zone": "zone2", HOST: "node-x"}),
        ],
        [
            mk_node("node-b", {"zone": "zone1", HOST: "node-b"}),
            mk_node("node-y", {"zone": "zone2", HOST: "node-y"}),
        ],
        foo_pods(node_a=2, node_b=1, node_x=2, node_y=4),
        mk_pod(
            labels={"foo": ""},
            constraints=[spread(1, "zone", "ScheduleAnyway"), spread(1, HOST, "ScheduleAnyway")],
        ),
        {"node-a": 100, "node-x": 63},
        id="upstream: two constraints on zone and node, 2 of 4 nodes candidates",
    ),
    pytest.param(
        [hn("node-a"), mk_node("node-b", {"n": "node-b"}), hn("node-x")],
        [hn("node-y")],
        foo_pods(node_a=4, node_b=2, node_x=1, node_y=3),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway")]),
        {"node-a": 16, "node-b": 0, "node-x": 100},
        id="upstream: a candidate without the topology key scores 0",
    ),
    pytest.param(
        [hn("node-a"), hn("node-b")],
        [],
        foo_pods(node_a=1, node_b=1),
        mk_pod(labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway")]),
        {"node-a": 100, "node-b": 100},
        id="equal counts: every node scores 100",
    ),
    pytest.param(
        [hn("node-a"), hn("node-b")],
        [],
        [],
        mk_pod(labels={"foo": ""}, constraints=[spread(1, HOST, "ScheduleAnyway")]),
        {"node-a": 100, "node-b": 100},
        id="all raw scores 0: every node scores 100",
    ),
    # Upstream scoring_test.go, "system defaulting, nodes don't have zone, pods match service":
    # 4/3/2/1 with the hostname default (maxSkew 3) and no zone labels anywhere.
    pytest.param(
        [hn("node-a"), hn("node-b"), hn("node-c"), hn("node-d")],
        [],
        foo_pods(node_a=4, node_b=3, node_c=2, node_d=1),
        mk_pod(labels={"foo": ""}, owner="ReplicaSet"),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        id="upstream: system defaults score like one hostname constraint without zone labels",
    ),
]


@pytest.mark.parametrize("nodes,failed,pods,incoming,want", SCORE_CASES)
def test_score(
    nodes: list[core_pb2.Node],
    failed: list[core_pb2.Node],
    pods: list[core_pb2.Pod],
    incoming: core_pb2.Pod,
    want: dict[str, int],
) -> None:
    st, got = run_score(nodes, failed, pods, incoming)
    assert st.is_success()
    assert got == want


def test_do_not_schedule_constraints_are_not_scored() -> None:
    st, _ = run_score(
        [hn("node-a")], [], [], mk_pod(labels={"foo": ""}, constraints=[spread(1, HOST)])
    )
    assert st.is_skip()


# -------------------------------------------------------------------- default constraints

OWNED = {"owner": "ReplicaSet"}


@pytest.mark.parametrize(
    "args,pod_kwargs,skips",
    [
        pytest.param(None, OWNED, False, id="System defaults apply to a ReplicaSet's pod"),
        pytest.param(None, {"owner": "StatefulSet"}, False, id="System defaults: StatefulSet"),
        pytest.param(
            None, {"owner": "ReplicationController"}, False, id="System defaults: RC's pod"
        ),
        pytest.param(None, {}, True, id="System defaults skip pods without a controller"),
        pytest.param(None, {"owner": "Job"}, True, id="System defaults skip a Job's pods"),
        pytest.param(
            pts.Args(defaulting_type="List"), OWNED, True, id="List with no constraints: none"
        ),
        pytest.param(
            None,
            {**OWNED, "constraints": [spread(1, HOST)]},
            True,
            id="defaults never apply to a pod with its own constraints",
        ),
    ],
)
def test_default_constraints_apply(
    args: pts.Args | None, pod_kwargs: dict[str, Any], skips: bool
) -> None:
    st, _ = run_score(
        [hn("node-a"), hn("node-b")], [], [], mk_pod(labels={"foo": ""}, **pod_kwargs), args
    )
    assert st.is_skip() == skips


def test_default_group_is_pods_carrying_all_the_pods_labels() -> None:
    # The group stands in for the owner's selector: pods with all of the incoming pod's labels
    # (extra labels allowed) count on node-a; node-b's differently labelled pods do not.
    pods = [
        *[mk_pod(f"a{i}", {"app": "web", "extra": "x"}, node="node-a") for i in range(3)],
        *[mk_pod(f"b{i}", {"app": "other"}, node="node-b") for i in range(3)],
    ]
    st, got = run_score(
        [hn("node-a"), hn("node-b")], [], pods, mk_pod(labels={"app": "web"}, owner="ReplicaSet")
    )
    assert st.is_success()
    assert got["node-b"] == 100 and got["node-a"] < 100


def test_list_defaulting_with_do_not_schedule_filters_owned_pods() -> None:
    args = pts.Args(
        defaulting_type="List",
        default_constraints=[
            {"maxSkew": 1, "topologyKey": "node", "whenUnsatisfiable": "DoNotSchedule"}
        ],
    )
    st, got = run_filter(
        fake_handle(FOUR, foo_pods(node_a=2, node_b=1, node_y=3)),
        mk_pod(labels={"foo": ""}, owner="ReplicaSet"),
        args,
    )
    assert st.is_success()
    assert got == {"node-a": SKEWED, "node-b": SKEWED, "node-x": OK, "node-y": SKEWED}


@pytest.mark.parametrize(
    "kwargs,message",
    [
        pytest.param(
            {"defaulting_type": "Other"},
            'defaultingType: Unsupported value: "Other"',
            id="defaultingType must be System or List",
        ),
        pytest.param(
            {"default_constraints": [spread(1, HOST, selector=None)]},
            "when .defaultConstraints are not empty",
            id="System defaulting forbids defaultConstraints",
        ),
        pytest.param(
            {"defaulting_type": "List", "default_constraints": [spread(1, HOST)]},
            "must not define a selector",
            id="default constraints must not set labelSelector",
        ),
        pytest.param(
            {"defaulting_type": "List", "default_constraints": [spread(0, HOST, selector=None)]},
            "maxSkew: Invalid value: 0",
            id="default constraints need maxSkew > 0",
        ),
        pytest.param(
            {
                "defaulting_type": "List",
                "default_constraints": [
                    spread(1, HOST, selector=None),
                    spread(2, HOST, selector=None),
                ],
            },
            "Duplicate value",
            id="default constraints unique per topologyKey and whenUnsatisfiable",
        ),
    ],
)
def test_args_validation(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        pts.Args(**kwargs)


# ----------------------------------------------------------------------------- hints

TARGET = mk_pod(
    "target",
    {"foo": ""},
    constraints=[spread(1, "zone", nodeTaintsPolicy="Honor")],
)


@pytest.mark.parametrize(
    "old,new,want",
    [
        pytest.param(
            None,
            mk_pod("n", {"foo": ""}, node="node-a"),
            QueueingHint.QUEUE,
            id="bound matching pod added in the namespace: queue",
        ),
        pytest.param(
            None,
            mk_pod("n", {"foo": ""}, node="node-a", ns="other"),
            QueueingHint.SKIP,
            id="pod in another namespace: skip",
        ),
        pytest.param(None, mk_pod("n", {"foo": ""}), QueueingHint.SKIP, id="unscheduled pod: skip"),
        pytest.param(
            mk_pod("n", {"bar": ""}, node="node-a"),
            None,
            QueueingHint.SKIP,
            id="deleted pod not matching any selector: skip",
        ),
        pytest.param(
            mk_pod("n", {"foo": ""}, node="node-a"),
            mk_pod("n", {"bar": ""}, node="node-a"),
            QueueingHint.QUEUE,
            id="label change flips a selector match: queue",
        ),
        pytest.param(
            mk_pod("target", {"foo": ""}),
            mk_pod("target", {"foo": ""}, spec={"tolerations": [{"operator": "Exists"}]}),
            QueueingHint.QUEUE,
            id="the pod itself gains a toleration under nodeTaintsPolicy Honor: queue",
        ),
    ],
)
def test_pod_change_hint(
    old: core_pb2.Pod | None, new: core_pb2.Pod | None, want: QueueingHint
) -> None:
    pl = pts.new(None, fake_handle([]))
    assert pl.is_schedulable_after_pod_change(TARGET, old, new) == want


@pytest.mark.parametrize(
    "old,new,want",
    [
        pytest.param(None, zn("n", "z9"), QueueingHint.QUEUE, id="node with the key added"),
        pytest.param(None, mk_node("n", {}), QueueingHint.SKIP, id="node without the key added"),
        pytest.param(zn("n", "z1"), zn("n", "z2"), QueueingHint.QUEUE, id="zone value changed"),
        pytest.param(zn("n", "z1"), None, QueueingHint.QUEUE, id="node with the key deleted"),
        pytest.param(
            zn("n", "z1"), zn("n", "z1", other="x"), QueueingHint.SKIP, id="unrelated label"
        ),
        pytest.param(
            zn("n", "z1"),
            mk_node("n", {"zone": "z1", "node": "n"}, [{"key": "k", "effect": "NoSchedule"}]),
            QueueingHint.QUEUE,
            id="taints changed on a node with the key",
        ),
    ],
)
def test_node_change_hint(
    old: core_pb2.Node | None, new: core_pb2.Node | None, want: QueueingHint
) -> None:
    pl = pts.new(None, fake_handle([]))
    assert pl.is_schedulable_after_node_change(TARGET, old, new) == want
