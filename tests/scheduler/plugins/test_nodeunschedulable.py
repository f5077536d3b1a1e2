"""NodeUnschedulable: cordoned nodes take only pods tolerating the unschedulable taint."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodeunschedulable
from tests.builders import MakeNode, MakePod

KEY = "node.kubernetes.io/unschedulable"


def pod(tolerations: list[dict[str, object]], uid: str = "p") -> core_pb2.Pod:
    return MakePod().name(uid).uid(uid).tolerations(tolerations).obj()


def node(unschedulable: bool) -> core_pb2.Node:
    return MakeNode().name("n").unschedulable(unschedulable).obj()


CASES = [
    (False, [], Code.SUCCESS, "schedulable node"),
    (True, [], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "cordoned node, no toleration"),
    (
        True,
        [{"key": KEY, "operator": "Exists", "effect": "NoSchedule"}],
        Code.SUCCESS,
        "Exists toleration of the unschedulable taint",
    ),
    (
        True,
        [{"key": KEY, "operator": "Equal", "value": "", "effect": "NoSchedule"}],
        Code.SUCCESS,
        "Equal toleration with the empty value",
    ),
    (True, [{"key": KEY, "operator": "Exists"}], Code.SUCCESS, "toleration with no effect"),
    (True, [{"operator": "Exists"}], Code.SUCCESS, "empty key with Exists tolerates everything"),
    (
        True,
        [{"key": KEY, "operator": "Exists", "effect": "NoExecute"}],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "NoExecute toleration does not cover NoSchedule",
    ),
    (
        True,
        [{"key": KEY, "operator": "Equal", "value": "true", "effect": "NoSchedule"}],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "Equal with another value",
    ),
]


@pytest.mark.parametrize(
    ("cordoned", "tolerations", "code", "rule"), CASES, ids=[c[3] for c in CASES]
)
def test_filter(
    cordoned: bool, tolerations: list[dict[str, object]], code: Code, rule: str
) -> None:
    st = nodeunschedulable.new(None, None).filter(
        CycleState(), PodInfo(pod(tolerations)), NodeInfo(node(cordoned))
    )
    assert st.code == code
    if code != Code.SUCCESS:
        assert st.reasons == ("node(s) were unschedulable",)


NODE_HINTS = [
    (None, node(False), QueueingHint.QUEUE, "schedulable node added"),
    (None, node(True), QueueingHint.SKIP, "cordoned node added"),
    (node(True), node(False), QueueingHint.QUEUE, "node uncordoned"),
    (node(False), node(False), QueueingHint.SKIP, "still schedulable"),
    (node(False), node(True), QueueingHint.SKIP, "node cordoned"),
]


@pytest.mark.parametrize(("old", "new", "want", "rule"), NODE_HINTS, ids=[c[3] for c in NODE_HINTS])
def test_node_hint(
    old: core_pb2.Node | None, new: core_pb2.Node, want: QueueingHint, rule: str
) -> None:
    node_ev = nodeunschedulable.new(None, None).events_to_register()[0]
    assert node_ev.event.resource == "Node"
    assert node_ev.hint is not None and node_ev.hint(pod([]), old, new) == want


def test_pod_hint_queues_only_own_pod_gaining_toleration() -> None:
    pod_ev = nodeunschedulable.new(None, None).events_to_register()[1]
    assert pod_ev.hint is not None
    tolerating = pod([{"key": KEY, "operator": "Exists"}])
    assert pod_ev.hint(pod([]), pod([]), tolerating) == QueueingHint.QUEUE
    assert pod_ev.hint(pod([]), pod([]), pod([])) == QueueingHint.SKIP
    other = pod([{"key": KEY, "operator": "Exists"}], uid="other")
    assert pod_ev.hint(pod([]), other, other) == QueueingHint.SKIP
