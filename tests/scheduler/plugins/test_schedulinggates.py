"""SchedulingGates: gated pods wait outside activeQ; only their own ungating requeues them."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import EnqueueExtensions, PreEnqueuePlugin
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import ActionType, QueueingHint
from services.scheduler.plugins import schedulinggates
from tests.builders import MakePod


def pod(uid: str, gates: list[str]) -> core_pb2.Pod:
    return MakePod().name(uid).uid(uid).scheduling_gates(gates).obj()


PRE_ENQUEUE = [
    ([], Code.SUCCESS, "", "no gates: enqueue"),
    (["a"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting for scheduling gates: [a]", "one gate"),
    (
        ["a", "b"],
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "waiting for scheduling gates: [a b]",
        "gates listed in order, space separated",
    ),
]


@pytest.mark.parametrize(
    ("gates", "code", "message", "rule"), PRE_ENQUEUE, ids=[c[3] for c in PRE_ENQUEUE]
)
def test_pre_enqueue(gates: list[str], code: Code, message: str, rule: str) -> None:
    pl = schedulinggates.new(None, None)
    assert isinstance(pl, PreEnqueuePlugin)
    st = pl.pre_enqueue(pod("p", gates))
    assert st.code == code
    assert st.message == message


HINTS = [
    (pod("p", []), QueueingHint.QUEUE, "own update removing the last gate"),
    (pod("p", ["b"]), QueueingHint.SKIP, "own update leaving a gate"),
    (pod("other", []), QueueingHint.SKIP, "another pod's update"),
]


@pytest.mark.parametrize(("new", "want", "rule"), HINTS, ids=[c[2] for c in HINTS])
def test_queueing_hint(new: core_pb2.Pod, want: QueueingHint, rule: str) -> None:
    pl = schedulinggates.new(None, None)
    assert isinstance(pl, EnqueueExtensions)
    [ev] = pl.events_to_register()
    assert ev.event.resource == "Pod"
    assert ev.event.action == ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    assert ev.hint is not None
    assert ev.hint(pod("p", ["a", "b"]), pod("p", ["a", "b"]), new) == want
