"""PrioritySort: higher priority first, then the earlier queue timestamp."""

from __future__ import annotations

import pytest

from services.scheduler.framework.interface import QueueSortPlugin
from services.scheduler.framework.types import PodInfo, QueuedPodInfo
from services.scheduler.plugins import prioritysort
from tests.builders import MakePod


def qpi(priority: int | None, ts: float) -> QueuedPodInfo:
    pod = MakePod().name("p").container("c")
    if priority is not None:
        pod.priority(priority)
    return QueuedPodInfo(PodInfo(pod.obj()), timestamp=ts)


CASES = [
    (qpi(10, 2.0), qpi(5, 1.0), True, "higher priority first despite later timestamp"),
    (qpi(5, 1.0), qpi(10, 2.0), False, "lower priority after"),
    (qpi(5, 1.0), qpi(5, 2.0), True, "equal priority: earlier first"),
    (qpi(5, 2.0), qpi(5, 1.0), False, "equal priority: later after"),
    (qpi(5, 1.0), qpi(5, 1.0), False, "identical is not less"),
    (qpi(None, 1.0), qpi(0, 2.0), True, "unset priority counts as zero"),
    (qpi(-1, 1.0), qpi(None, 2.0), False, "negative priority below unset"),
]


@pytest.mark.parametrize(("a", "b", "want", "rule"), CASES, ids=[c[3] for c in CASES])
def test_less(a: QueuedPodInfo, b: QueuedPodInfo, want: bool, rule: str) -> None:
    assert prioritysort.new(None, None).less(a, b) is want


def test_is_a_queue_sort_plugin_named_like_upstream() -> None:
    pl = prioritysort.new(prioritysort.Args(), None)
    assert isinstance(pl, QueueSortPlugin)
    assert pl.name == prioritysort.NAME == "PrioritySort"
