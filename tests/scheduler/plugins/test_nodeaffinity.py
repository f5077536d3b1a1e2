"""NodeAffinity: nodeSelector, required terms (ORed terms, ANDed expressions, every operator),
PreFilter narrowing by metadata.name, preferred weights, and the profile's addedAffinity."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import NodeScore, PreFilterResult
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodeaffinity
from tests.builders import MakeNode, MakePod

Json = dict[str, Any]
REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"


def expr(key: str, op: str, *values: str) -> Json:
    return {"key": key, "operator": op, "values": list(values)}


def required(*terms: Json) -> Json:
    return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}


def pod(node_affinity: Json | None = None, node_selector: dict[str, str] | None = None) -> PodInfo:
    p = MakePod().name("p").spec({})
    if node_affinity is not None:
        p.affinity({"nodeAffinity": node_affinity})
    if node_selector:
        p.node_selector(node_selector)
    return PodInfo(p.obj())


def node(labels: dict[str, str], name: str = "node1") -> core_pb2.Node:
    return MakeNode().name(name).labels(labels).obj()


def run_filter(pl: nodeaffinity.NodeAffinity, pi: PodInfo, n: core_pb2.Node) -> tuple[Any, Any]:
    state = CycleState()
    result, st = pl.pre_filter(state, pi, [])
    if not st.is_success():
        return result, st
    return result, pl.filter(state, pi, NodeInfo(n))


ZONE = "topology.kubernetes.io/zone"

FILTER = [
    # (pod, node labels, matches, rule)
    (pod(node_selector={"foo": "bar"}), {"foo": "bar", "x": "y"}, True, "nodeSelector subset"),
    (pod(node_selector={"foo": "bar"}), {"foo": "baz"}, False, "nodeSelector other value"),
    (pod(node_selector={"foo": ""}), {}, False, "nodeSelector needs the label even for ''"),
    (
        pod(required({"matchExpressions": [expr(ZONE, "In", "east", "west")]})),
        {ZONE: "west"},
        True,
        "In: value in the set",
    ),
    (
        pod(required({"matchExpressions": [expr(ZONE, "In", "east")]})),
        {ZONE: "west"},
        False,
        "In: value not in the set",
    ),
    (
        pod(required({"matchExpressions": [expr(ZONE, "In", "east")]})),
        {},
        False,
        "In: label missing",
    ),
    (
        pod(required({"matchExpressions": [expr(ZONE, "NotIn", "east")]})),
        {ZONE: "west"},
        True,
        "NotIn: other value",
    ),
    (
        pod(required({"matchExpressions": [expr(ZONE, "NotIn", "east")]})),
        {},
        True,
        "NotIn: label missing matches",
    ),
    (
        pod(required({"matchExpressions": [expr(ZONE, "NotIn", "east")]})),
        {ZONE: "east"},
        False,
        "NotIn: excluded value",
    ),
    (
        pod(required({"matchExpressions": [expr("gpu", "Exists")]})),
        {"gpu": ""},
        True,
        "Exists: label present",
    ),
    (
        pod(required({"matchExpressions": [expr("gpu", "Exists")]})),
        {},
        False,
        "Exists: label missing",
    ),
    (
        pod(required({"matchExpressions": [expr("gpu", "DoesNotExist")]})),
        {},
        True,
        "DoesNotExist: label missing",
    ),
    (
        pod(required({"matchExpressions": [expr("gpu", "DoesNotExist")]})),
        {"gpu": "1"},
        False,
        "DoesNotExist: label present",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Gt", "8")]})),
        {"cores": "16"},
        True,
        "Gt: 16 > 8",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Gt", "8")]})),
        {"cores": "8"},
        False,
        "Gt is strict",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Gt", "8")]})),
        {"cores": "many"},
        False,
        "Gt: non-integer label never matches",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Gt", "8")]})),
        {},
        False,
        "Gt: label missing",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Lt", "8")]})),
        {"cores": "4"},
        True,
        "Lt: 4 < 8",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Lt", "8")]})),
        {"cores": "-20"},
        True,
        "Lt: negative label",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Lt", "8")]})),
        {"cores": "9"},
        False,
        "Lt: 9 not < 8",
    ),
    (
        pod(required({"matchExpressions": [expr("a", "In", "1"), expr("b", "In", "2")]})),
        {"a": "1"},
        False,
        "expressions in a term are ANDed",
    ),
    (
        pod(required({"matchExpressions": [expr("a", "In", "1"), expr("b", "In", "2")]})),
        {"a": "1", "b": "2"},
        True,
        "all ANDed expressions hold",
    ),
    (
        pod(
            required(
                {"matchExpressions": [expr("a", "In", "1")]},
                {"matchExpressions": [expr("b", "In", "2")]},
            )
        ),
        {"b": "2"},
        True,
        "terms are ORed",
    ),
    (
        pod(
            required(
                {"matchExpressions": [expr("a", "In", "1")]},
                {"matchExpressions": [expr("b", "In", "2")]},
            )
        ),
        {"c": "3"},
        False,
        "no term matches",
    ),
    (pod(required({})), {"a": "1"}, False, "an empty term matches nothing"),
    (pod(required()), {"a": "1"}, False, "required with no terms matches nothing"),
    (
        pod(
            required(
                {"matchExpressions": [expr("a", "Bogus", "1")]},
                {"matchExpressions": [expr("b", "Exists")]},
            )
        ),
        {"a": "1", "b": ""},
        True,
        "a term that fails to parse does not spoil the others",
    ),
    (
        pod(required({"matchExpressions": [expr("cores", "Gt", "eight")]})),
        {"cores": "9"},
        False,
        "Gt with a non-integer value is a parse error: no match",
    ),
    (
        pod(required({"matchExpressions": [expr("a", "In", "1")]}), node_selector={"b": "2"}),
        {"a": "1"},
        False,
        "nodeSelector and affinity must both hold",
    ),
    (
        pod(required({"matchExpressions": [expr("a", "In", "1")]}), node_selector={"b": "2"}),
        {"a": "1", "b": "2"},
        True,
        "nodeSelector and affinity both hold",
    ),
    (
        pod(required({"matchFields": [expr("metadata.name", "In", "node1")]})),
        {},
        True,
        "matchFields metadata.name In",
    ),
    (
        pod(required({"matchFields": [expr("metadata.name", "NotIn", "node1")]})),
        {},
        False,
        "matchFields metadata.name NotIn",
    ),
    (
        pod(required({"matchFields": [expr("metadata.name", "In", "node1", "node2")]})),
        {},
        False,
        "matchFields In with two values is a parse error",
    ),
    (
        pod(
            required(
                {
                    "matchExpressions": [expr("a", "In", "1")],
                    "matchFields": [expr("metadata.name", "In", "node1")],
                }
            )
        ),
        {"a": "2"},
        False,
        "matchExpressions and matchFields in a term are ANDed",
    ),
]


@pytest.mark.parametrize(("pi", "labels", "matches", "rule"), FILTER, ids=[c[3] for c in FILTER])
def test_filter(pi: PodInfo, labels: dict[str, str], matches: bool, rule: str) -> None:
    _, st = run_filter(nodeaffinity.new(None, None), pi, node(labels))
    if matches:
        assert st.is_success()
    else:
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert st.reasons == (REASON_POD,)


def name_term(*names: str) -> Json:
    return {"matchFields": [expr("metadata.name", "In", *names)]}


PRE_FILTER = [
    # (pod, result node names or None, code, rule) -- cases after upstream TestNodeAffinity
    (pod(), None, Code.SKIP, "nothing to check: Skip"),
    (pod(node_selector={"a": "b"}), None, Code.SUCCESS, "nodeSelector alone: no narrowing"),
    (pod(required(name_term("node1"))), {"node1"}, Code.SUCCESS, "metadata.name In pins the node"),
    (
        pod(required(name_term("node1"), name_term("node2"))),
        {"node1", "node2"},
        Code.SUCCESS,
        "pinned names of ORed terms are united",
    ),
    (
        pod(required(name_term("node1"), {"matchExpressions": [expr("a", "Exists")]})),
        None,
        Code.SUCCESS,
        "a term without a name pin means every node",
    ),
    (
        pod(
            required(
                {
                    "matchFields": [
                        expr("metadata.name", "In", "node1"),
                        expr("metadata.name", "In", "node1"),
                    ]
                }
            )
        ),
        {"node1"},
        Code.SUCCESS,
        "pins within a term are intersected",
    ),
    (
        pod(
            required(
                {
                    "matchFields": [
                        expr("metadata.name", "In", "node1"),
                        expr("metadata.name", "In", "node2"),
                    ]
                }
            )
        ),
        None,
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "disjoint pins conflict",
    ),
    (
        pod(required({"matchFields": [expr("metadata.name", "NotIn", "node1")]})),
        None,
        Code.SUCCESS,
        "NotIn does not narrow",
    ),
]


@pytest.mark.parametrize(
    ("pi", "names", "code", "rule"), PRE_FILTER, ids=[c[3] for c in PRE_FILTER]
)
def test_pre_filter(pi: PodInfo, names: set[str] | None, code: Code, rule: str) -> None:
    result, st = nodeaffinity.new(None, None).pre_filter(CycleState(), pi, [])
    assert st.code == code
    if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert st.reasons == ("pod affinity terms conflict",)
    if names is None:
        assert result is None
    else:
        assert result == PreFilterResult(frozenset(names))


def test_filter_without_pre_filter_computes_the_affinity() -> None:
    pl = nodeaffinity.new(None, None)
    pi = pod(node_selector={"a": "1"})
    assert pl.filter(CycleState(), pi, NodeInfo(node({"a": "1"}))).is_success()
    assert not pl.filter(CycleState(), pi, NodeInfo(node({"a": "2"}))).is_success()


def preferred(*weighted: tuple[int, list[Json]]) -> Json:
    return {
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": w, "preference": {"matchExpressions": exprs}} for w, exprs in weighted
        ]
    }


def scores(pl: nodeaffinity.NodeAffinity, pi: PodInfo, nodes: list[core_pb2.Node]) -> list[int]:
    state = CycleState()
    infos = [NodeInfo(n) for n in nodes]
    st = pl.pre_score(state, pi, infos)
    assert st.is_success()
    out = []
    for ni in infos:
        s, st = pl.score(state, pi, ni)
        assert st.is_success()
        out.append(NodeScore(ni.name, s))
    assert pl.normalize_score(state, pi, out).is_success()
    return [s.score for s in out]


def test_preferred_weights_sum_and_normalise() -> None:
    # Upstream TestNodeAffinityPriority, "all nodes matches the preferred scheduling
    # requirements of pod ...": raw 2, 11, 4 -> 2*100/11 = 18, 100, 4*100/11 = 36.
    pi = pod(
        preferred(
            (2, [expr("foo", "In", "bar")]),
            (4, [expr("key", "In", "value")]),
            (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
        )
    )
    nodes = [
        node({"foo": "bar"}, "node1"),
        node({"foo": "bar", "key": "value", "az": "az1"}, "node5"),
        node({"key": "value"}, "node2"),
    ]
    assert scores(nodeaffinity.new(None, None), pi, nodes) == [18, 100, 36]


def test_preferred_zero_weight_and_empty_terms_are_ignored() -> None:
    pi = pod(
        {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 0, "preference": {"matchExpressions": [expr("a", "Exists")]}},
                {"weight": 7, "preference": {}},
                {"weight": 3, "preference": {"matchExpressions": [expr("b", "Exists")]}},
            ]
        }
    )
    assert scores(nodeaffinity.new(None, None), pi, [node({"a": ""}), node({"b": ""})]) == [0, 100]


def test_pre_score_skips_without_preferences() -> None:
    st = nodeaffinity.new(None, None).pre_score(CycleState(), pod(), [])
    assert st.is_skip()


ADDED = required({"matchExpressions": [expr("scheduler-profile", "In", "foo")]})


def test_added_affinity_required_is_enforced_with_its_own_reason() -> None:
    pl = nodeaffinity.new(nodeaffinity.Args(added_affinity=ADDED), None)
    _, st = run_filter(pl, pod(), node({"scheduler-profile": "bar"}))
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == (REASON_ENFORCED,)
    _, st = run_filter(pl, pod(), node({"scheduler-profile": "foo"}))
    assert st.is_success()


def test_added_affinity_and_pod_affinity_must_both_match() -> None:
    pl = nodeaffinity.new(nodeaffinity.Args.from_dict({"addedAffinity": ADDED}), None)
    pi = pod(required({"matchExpressions": [expr("zone", "In", "a")]}))
    _, st = run_filter(pl, pi, node({"scheduler-profile": "foo", "zone": "b"}))
    assert st.reasons == (REASON_POD,)
    _, st = run_filter(pl, pi, node({"scheduler-profile": "foo", "zone": "a"}))
    assert st.is_success()


def test_added_affinity_preferred_adds_to_the_score() -> None:
    added = preferred((5, [expr("fast", "Exists")]))
    pl = nodeaffinity.new(nodeaffinity.Args(added_affinity=added), None)
    pi = pod(preferred((5, [expr("zone", "In", "a")])))
    nodes = [node({"fast": ""}, "n1"), node({"fast": "", "zone": "a"}, "n2"), node({}, "n3")]
    assert scores(pl, pi, nodes) == [50, 100, 0]
    # With only the added preferences, PreScore still runs (not Skip).
    assert scores(pl, pod(), nodes) == [100, 100, 0]


def test_added_affinity_accepts_a_proto() -> None:
    proto = json_format.ParseDict(ADDED, core_pb2.NodeAffinity())
    pl = nodeaffinity.new(nodeaffinity.Args(added_affinity=proto), None)
    assert pl.added_node_selector is not None


@pytest.mark.parametrize(
    "bad",
    [
        required({"matchExpressions": [expr("a", "Bogus", "1")]}),
        preferred((1, [expr("a", "Gt", "x")])),
        {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": "nope"}},
    ],
    ids=["unknown operator", "Gt with a non-integer", "not a NodeAffinity"],
)
def test_invalid_added_affinity_is_rejected_at_construction(bad: Json) -> None:
    with pytest.raises(ValueError):
        nodeaffinity.new(nodeaffinity.Args(added_affinity=bad), None)


def hint(pl: nodeaffinity.NodeAffinity, pi: PodInfo, old: Any, new: Any) -> QueueingHint:
    [ev] = pl.events_to_register()
    assert ev.event.resource == "Node"
    assert ev.hint is not None
    return ev.hint(pi.pod, old, new)


HINTS = [
    (None, node({"a": "1"}), QueueingHint.QUEUE, "matching node added"),
    (None, node({"a": "2"}), QueueingHint.SKIP, "non-matching node added"),
    (node({}), node({"a": "1"}), QueueingHint.QUEUE, "label update makes it match"),
    (node({"a": "1", "x": ""}), node({"a": "1"}), QueueingHint.SKIP, "already matched"),
    (node({}), node({"a": "2"}), QueueingHint.SKIP, "still does not match"),
]


@pytest.mark.parametrize(("old", "new", "want", "rule"), HINTS, ids=[c[3] for c in HINTS])
def test_hint(old: Any, new: Any, want: QueueingHint, rule: str) -> None:
    pi = pod(required({"matchExpressions": [expr("a", "In", "1")]}))
    assert hint(nodeaffinity.new(None, None), pi, old, new) == want


def test_hint_skips_nodes_outside_added_affinity() -> None:
    pl = nodeaffinity.new(nodeaffinity.Args(added_affinity=ADDED), None)
    assert hint(pl, pod(), None, node({})) == QueueingHint.SKIP
    assert hint(pl, pod(), None, node({"scheduler-profile": "foo"})) == QueueingHint.QUEUE
