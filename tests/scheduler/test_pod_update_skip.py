"""Which updates of unassigned pods reach the queue: upstream's updatePodInSchedulingQueue
rule (same resourceVersion: skipped, kubernetes#96071), as a table, and through the
Scheduler's handler. An assumed pod's update is not skipped (unlike upstream, whose failure
handler re-reads the pod): the queue records it for the pod in flight, so a failed bind
requeues the newer object."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.scheduler import skip_unscheduled_update
from tests.builders import MakePod


def pod(rv: str, label: str = "a") -> core_pb2.Pod:
    b = MakePod().name("p").namespace("default").uid("u").label("x", label)
    p = b.scheduler_name("default-scheduler").obj()
    p.metadata.resource_version = rv
    return p


@pytest.mark.parametrize(
    ("old_rv", "new_rv", "label", "skipped"),
    [
        ("5", "5", "a", True),  # a replayed identical object (relist, resync)
        ("5", "5", "b", True),  # same rv: upstream compares nothing else
        ("5", "6", "a", False),  # a new version, however small the change
        ("5", "6", "b", False),
        ("", "", "b", False),  # no rv (never stored): not taken as identical
        ("5", "", "b", False),
    ],
)
def test_upstream_rule(old_rv: str, new_rv: str, label: str, skipped: bool) -> None:
    assert skip_unscheduled_update(pod(old_rv), pod(new_rv, label)) is skipped


def test_the_handler_leaves_skipped_updates_out_of_the_queue() -> None:
    from services.scheduler.scheduler import Scheduler

    calls: list[tuple[str, str]] = []

    class Queue:
        def update(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
            calls.append((old.metadata.resource_version, new.metadata.resource_version))

    class Cache:
        def is_assumed(self, p: core_pb2.Pod) -> bool:
            return True  # an assumed pod's update still reaches the queue

    class Nominator:
        def pod_seen(self, old: object, new: object) -> None:
            pass

    sched = Scheduler.__new__(Scheduler)
    sched.queue = Queue()  # type: ignore[assignment]
    sched.cache = Cache()  # type: ignore[assignment]
    sched.nominator = Nominator()  # type: ignore[assignment]
    sched.frameworks = {"default-scheduler": None}  # type: ignore[dict-item]
    sched.shared_state = None
    sched._pod_updated(pod("5"), pod("5", "b"))
    sched._pod_updated(pod("5"), pod("6", "b"))
    sched._pod_updated(pod("6"), pod("7", "c"))
    assert calls == [("5", "6"), ("6", "7")]
