"""TaintToleration: NoSchedule/NoExecute must be tolerated; PreferNoSchedule is scored."""

from __future__ import annotations

import logging

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import tainttoleration
from tests.builders import MakeNode, MakePod

Json = dict[str, object]


def pod(tolerations: list[Json], uid: str = "p") -> core_pb2.Pod:
    return MakePod().name(uid).uid(uid).tolerations(tolerations).obj()


def node(name: str, taints: list[Json]) -> core_pb2.Node:
    return MakeNode().name(name).taints(taints).obj()


def t(key: str, value: str, effect: str) -> Json:
    return {"key": key, "value": value, "effect": effect}


FILTER = [
    ([], [], None, "no taints"),
    (
        [t("dedicated", "accel", "NoSchedule")],
        [],
        "node(s) had untolerated taint(s)",
        "untolerated NoSchedule",
    ),
    (
        [t("dedicated", "accel", "NoExecute")],
        [],
        "node(s) had untolerated taint(s)",
        "untolerated NoExecute",
    ),
    ([t("soft", "x", "PreferNoSchedule")], [], None, "PreferNoSchedule never filters"),
    (
        [t("dedicated", "accel", "NoSchedule")],
        [{"key": "dedicated", "operator": "Equal", "value": "accel", "effect": "NoSchedule"}],
        None,
        "tolerated by Equal",
    ),
    (
        [t("dedicated", "accel", "NoSchedule")],
        [{"key": "dedicated", "operator": "Exists"}],
        None,
        "tolerated by Exists with no effect",
    ),
    (
        [t("a", "1", "NoSchedule"), t("b", "2", "NoExecute")],
        [{"operator": "Exists"}],
        None,
        "empty key with Exists tolerates all",
    ),
    (
        [t("a", "1", "NoSchedule"), t("b", "2", "NoSchedule")],
        [{"key": "a", "operator": "Exists"}],
        "node(s) had untolerated taint(s)",
        "one untolerated taint among tolerated ones",
    ),
    (
        [
            t("key1", "value1", "NoSchedule"),
            t("key1", "value1", "NoExecute"),
            t("key2", "value2", "NoSchedule"),
        ],
        [
            {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"},
            {"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoExecute"},
        ],
        "node(s) had untolerated taint(s)",
        "the seeds' three-taint example",
    ),
    (
        [t("sla", "950", "NoSchedule")],
        [{"key": "sla", "operator": "Gt", "value": "900"}],
        None,
        "Gt toleration: 950 > 900",
    ),
    (
        [t("sla", "800", "NoSchedule")],
        [{"key": "sla", "operator": "Gt", "value": "900"}],
        "node(s) had untolerated taint(s)",
        "Gt toleration: 800 not > 900",
    ),
    (
        [t("sla", "950", "NoSchedule")],
        [{"key": "sla", "operator": "Lt", "value": "1000"}],
        None,
        "Lt toleration: 950 < 1000",
    ),
    (
        [t("sla", "high", "NoSchedule")],
        [{"key": "sla", "operator": "Gt", "value": "900"}],
        "node(s) had untolerated taint(s)",
        "Gt against a non-numeric taint value",
    ),
    ([t("k", "", "NoSchedule")], [], "node(s) had untolerated taint(s)", "empty taint value"),
]


@pytest.mark.parametrize(
    ("taints", "tolerations", "reason", "rule"), FILTER, ids=[c[3] for c in FILTER]
)
def test_filter(taints: list[Json], tolerations: list[Json], reason: str | None, rule: str) -> None:
    st = tainttoleration.new(None, None).filter(
        CycleState(), PodInfo(pod(tolerations)), NodeInfo(node("n", taints))
    )
    if reason is None:
        assert st.is_success()
    else:
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert st.reasons == (reason,)


def score_all(tolerations: list[Json], nodes: list[core_pb2.Node]) -> list[int]:
    pl = tainttoleration.new(None, None)
    state = CycleState()
    pi = PodInfo(pod(tolerations))
    infos = [NodeInfo(n) for n in nodes]
    assert pl.pre_score(state, pi, infos).is_success()
    scores = []
    for ni in infos:
        s, st = pl.score(state, pi, ni)
        assert st.is_success()
        scores.append(NodeScore(ni.name, s))
    assert pl.normalize_score(state, pi, scores).is_success()
    return [s.score for s in scores]


# Cases after upstream taint_toleration_test.go TestTaintTolerationScore.
SCORE = [
    (
        [{"key": "foo", "operator": "Equal", "value": "bar", "effect": "PreferNoSchedule"}],
        [[t("foo", "bar", "PreferNoSchedule")], [t("foo", "blah", "PreferNoSchedule")]],
        [100, 0],
        "node with tolerated taint outranks one with an intolerable taint",
    ),
    (
        [
            {
                "key": "cpu-type",
                "operator": "Equal",
                "value": "arm64",
                "effect": "PreferNoSchedule",
            },
            {"key": "disk-type", "operator": "Equal", "value": "ssd", "effect": "PreferNoSchedule"},
        ],
        [
            [],
            [t("cpu-type", "arm64", "PreferNoSchedule")],
            [t("cpu-type", "arm64", "PreferNoSchedule"), t("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 100, 100],
        "all tolerated: every node 100",
    ),
    (
        [],
        [
            [],
            [t("cpu-type", "arm64", "PreferNoSchedule")],
            [t("cpu-type", "arm64", "PreferNoSchedule"), t("disk-type", "ssd", "PreferNoSchedule")],
        ],
        [100, 50, 0],
        "more intolerable taints score lower, normalised and reversed",
    ),
    (
        [{"key": "cpu-type", "operator": "Equal", "value": "arm64", "effect": "NoSchedule"}],
        [[], [t("cpu-type", "arm64", "PreferNoSchedule")]],
        [100, 0],
        "a NoSchedule toleration does not tolerate PreferNoSchedule",
    ),
    (
        [{"key": "cpu-type", "operator": "Exists"}],
        [[], [t("cpu-type", "arm64", "PreferNoSchedule")]],
        [100, 100],
        "a toleration with no effect covers PreferNoSchedule",
    ),
    (
        [],
        [[t("cpu-type", "arm64", "NoSchedule")], [t("x", "y", "NoExecute")]],
        [100, 100],
        "only PreferNoSchedule taints count",
    ),
    (
        [{"key": "sla", "operator": "Gt", "value": "900"}],
        [[t("sla", "950", "PreferNoSchedule")], [t("sla", "800", "PreferNoSchedule")]],
        [100, 0],
        "Gt decides PreferNoSchedule scoring too",
    ),
]


@pytest.mark.parametrize(
    ("tolerations", "taints", "want", "rule"), SCORE, ids=[c[3] for c in SCORE]
)
def test_score(
    tolerations: list[Json], taints: list[list[Json]], want: list[int], rule: str
) -> None:
    nodes = [node(f"n{i}", ts) for i, ts in enumerate(taints)]
    assert score_all(tolerations, nodes) == want


def test_score_without_pre_score_is_an_error() -> None:
    _, st = tainttoleration.new(None, None).score(
        CycleState(), PodInfo(pod([])), NodeInfo(node("n", []))
    )
    assert st.code == Code.ERROR


NODE_HINTS = [
    (None, node("n", []), QueueingHint.QUEUE, "untainted node added"),
    (None, node("n", [t("k", "v", "NoSchedule")]), QueueingHint.SKIP, "tainted node added"),
    (node("n", [t("k", "v", "NoSchedule")]), node("n", []), QueueingHint.QUEUE, "taint removed"),
    (
        node("n", []),
        node("n", [t("soft", "", "PreferNoSchedule")]),
        QueueingHint.SKIP,
        "was already tolerated",
    ),
    (
        node("n", [t("k", "v", "NoSchedule")]),
        node("n", [t("k", "w", "NoSchedule")]),
        QueueingHint.SKIP,
        "still untolerated",
    ),
]


@pytest.mark.parametrize(("old", "new", "want", "rule"), NODE_HINTS, ids=[c[3] for c in NODE_HINTS])
def test_node_hint(
    old: core_pb2.Node | None, new: core_pb2.Node, want: QueueingHint, rule: str
) -> None:
    ev = tainttoleration.new(None, None).events_to_register()[0]
    assert ev.hint is not None and ev.hint(pod([]), old, new) == want


def test_pod_hint_only_for_own_toleration_change() -> None:
    ev = tainttoleration.new(None, None).events_to_register()[1]
    assert ev.hint is not None
    assert ev.hint(pod([]), pod([]), pod([{"operator": "Exists"}])) == QueueingHint.QUEUE
    assert ev.hint(pod([]), pod([], uid="x"), pod([], uid="x")) == QueueingHint.SKIP


@pytest.mark.parametrize(
    ("qos", "allowed"), [("BestEffort", False), ("Burstable", True), ("Guaranteed", True)]
)
def test_memory_pressure_keeps_only_best_effort_pods_off(qos: str, allowed: bool) -> None:
    p = pod([])
    p.status.qos_class = qos
    pressured = node("n", [t("node.kubernetes.io/memory-pressure", "", "NoSchedule")])
    st = tainttoleration.new(None, None).filter(CycleState(), PodInfo(p), NodeInfo(pressured))
    assert st.is_success() is allowed
    disk = node("d", [t("node.kubernetes.io/disk-pressure", "", "NoSchedule")])
    assert (
        not tainttoleration.new(None, None)
        .filter(CycleState(), PodInfo(p), NodeInfo(disk))
        .is_success()
    )


# A Gt/Lt toleration against a value that is not an int64: untolerated, and the parse error
# logged as upstream's compareNumericValues logs it (toleration value first, then taint's).
PARSE_ERRORS = [
    pytest.param(
        "sla",
        "high",
        "900",
        'failed to parse taint value as int64 err="must be a valid decimal integer in '
        'canonical form" taint="high"',
        id="non-numeric taint value",
    ),
    pytest.param(
        "sla",
        "0950",
        "900",
        'failed to parse taint value as int64 err="must be a valid decimal integer in '
        'canonical form" taint="0950"',
        id="taint value with a leading zero",
    ),
    pytest.param(
        "sla",
        "",
        "900",
        'failed to parse taint value as int64 err="must be non-empty" taint=""',
        id="empty taint value",
    ),
    pytest.param(
        "sla",
        "99999999999999999999",
        "900",
        'failed to parse taint value as int64 err="strconv.ParseInt: parsing '
        '"99999999999999999999": value out of range" taint="99999999999999999999"',
        id="taint value beyond int64",
    ),
    pytest.param(
        "sla",
        "950",
        "high",
        'failed to parse toleration value as int64 err="must be a valid decimal integer in '
        'canonical form" toleration="high"',
        id="non-numeric toleration value",
    ),
]


@pytest.mark.parametrize(("key", "taint_value", "toleration_value", "logged"), PARSE_ERRORS)
def test_gt_against_a_non_numeric_value_is_untolerated_and_logged(
    key: str,
    taint_value: str,
    toleration_value: str,
    logged: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="services.api.helpers.taints")
    st = tainttoleration.new(None, None).filter(
        CycleState(),
        PodInfo(pod([{"key": key, "operator": "Gt", "value": toleration_value}])),
        NodeInfo(node("n", [t(key, taint_value, "NoSchedule")])),
    )
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ("node(s) had untolerated taint(s)",)
    assert [r.getMessage() for r in caplog.records] == [logged]
