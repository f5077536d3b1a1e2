"""NodeName: spec.nodeName pins the pod to one node."""

from __future__ import annotations

import pytest

from services.scheduler.framework.interface import FilterPlugin
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodename
from tests.builders import MakeNode, MakePod

CASES = [
    ("", "n1", Code.SUCCESS, "no nodeName fits every node"),
    ("n1", "n1", Code.SUCCESS, "nodeName equal to the node"),
    ("n2", "n1", Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "nodeName of another node"),
]


@pytest.mark.parametrize(("want", "name", "code", "rule"), CASES, ids=[c[3] for c in CASES])
def test_filter(want: str, name: str, code: Code, rule: str) -> None:
    pl = nodename.new(None, None)
    assert isinstance(pl, FilterPlugin)
    st = pl.filter(
        CycleState(),
        PodInfo(MakePod().name("p").node(want).obj()),
        NodeInfo(MakeNode().name(name).obj()),
    )
    assert st.code == code
    if code != Code.SUCCESS:
        assert st.reasons == ("node(s) didn't match the requested node name",)
        assert st.plugin == "NodeName"


@pytest.mark.parametrize(
    ("added", "want"),
    [("n1", QueueingHint.QUEUE), ("n2", QueueingHint.SKIP)],
    ids=["the named node appears", "another node appears"],
)
def test_hint_node_added(added: str, want: QueueingHint) -> None:
    [ev] = nodename.new(None, None).events_to_register()
    assert (
        ev.hint is not None
        and ev.hint(MakePod().name("p").node("n1").obj(), None, MakeNode().name(added).obj())
        == want
    )
