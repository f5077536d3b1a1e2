"""A PodGroup's PodGroupInitiallyScheduled condition (status.py), with the condition rows of
upstream's TestSubmitPodGroupAlgorithmResult (pkg/scheduler/schedule_one_podgroup_test.go)
as a table: the cycle's outcome and the condition the group had before -> the condition
written; then the writer's patch through a client and the plugin writing it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from protos.kubera.v1 import schedulingv1beta1_pb2
from services.clock import FakeClock
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins.gangscheduling.status import (
    INITIALLY_SCHEDULED,
    REASON_SCHEDULED,
    REASON_SCHEDULER_ERROR,
    REASON_UNSCHEDULABLE,
    StatusWriter,
    next_conditions,
)
from tests.scheduler.plugins.coscheduling._gang import GangHandle
from tests.scheduler.plugins.gangscheduling.test_podgroups import _plugin, pg, pg_pod

NOW = "2026-12-08T01:00:00Z"
SCHEDULED = ("True", REASON_SCHEDULED, "All pods scheduled")

#: name -> (the condition before or None, the cycle's (status, reason, message), the wanted
#: (status, reason, message) or None when nothing is written: the condition is kept)
ROWS = {
    "All pods feasible": (None, ("True", REASON_SCHEDULED, ""), ("True", REASON_SCHEDULED, "")),
    "All pods feasible, but podGroup unschedulable": (
        None,
        ("False", REASON_UNSCHEDULABLE, "not enough capacity for the gang"),
        ("False", REASON_UNSCHEDULABLE, "not enough capacity for the gang"),
    ),
    "All pods unschedulable": (
        None,
        ("False", REASON_UNSCHEDULABLE, "0/3 nodes are available: insufficient cpu"),
        ("False", REASON_UNSCHEDULABLE, "0/3 nodes are available: insufficient cpu"),
    ),
    "Error for one pod": (
        None,
        ("False", REASON_SCHEDULER_ERROR, "plugin returned error"),
        ("False", REASON_SCHEDULER_ERROR, "plugin returned error"),
    ),
    "Already Scheduled, successful cycle keeps condition": (
        SCHEDULED,
        ("True", REASON_SCHEDULED, ""),
        None,
    ),
    "Already Scheduled, rejected cycle does not regress condition": (
        SCHEDULED,
        ("False", REASON_UNSCHEDULABLE, "extra pods could not be placed"),
        None,
    ),
    "Already Scheduled, error cycle does not regress condition": (
        SCHEDULED,
        ("False", REASON_SCHEDULER_ERROR, ""),
        None,
    ),
}


def _group(before: tuple[str, str, str] | None) -> schedulingv1beta1_pb2.SchedulingPodGroup:
    group = pg("pg", "default", 3)
    group.metadata.generation = 2
    if before is not None:
        c = group.status.conditions.add()
        c.type, (c.status, c.reason, c.message) = INITIALLY_SCHEDULED, before
        c.last_transition_time = "2026-12-07T00:00:00Z"
    return group


@pytest.mark.parametrize(("before", "cycle", "want"), list(ROWS.values()), ids=list(ROWS))
def test_initially_scheduled_condition(
    before: tuple[str, str, str] | None,
    cycle: tuple[str, str, str],
    want: tuple[str, str, str] | None,
) -> None:
    got = next_conditions(_group(before), *cycle, NOW)
    if want is None:
        assert got is None
        return
    assert got is not None
    (c,) = got
    assert (c["type"], c["status"], c["reason"], c["message"]) == (INITIALLY_SCHEDULED, *want)
    assert (c["observedGeneration"], c["lastTransitionTime"]) == (2, NOW)


def test_a_false_condition_changes_its_reason_and_time_only_when_its_status_changes() -> None:
    before = ("False", REASON_UNSCHEDULABLE, "no room")
    (c,) = next_conditions(_group(before), "False", REASON_UNSCHEDULABLE, "other", NOW) or [{}]
    assert (c["message"], c["lastTransitionTime"]) == ("other", "2026-12-07T00:00:00Z")
    (c,) = next_conditions(_group(before), "True", REASON_SCHEDULED, "", NOW) or [{}]
    assert (c["status"], c["reason"], c["lastTransitionTime"]) == ("True", REASON_SCHEDULED, NOW)


def test_the_same_condition_is_not_written_twice() -> None:
    assert next_conditions(_group(SCHEDULED), *SCHEDULED, NOW) is None


class _Client:
    def __init__(self) -> None:
        self.patches: list[tuple[str, str, dict[str, Any], bool]] = []

    async def patch(self, kind: Any, name: str, body: str, *, namespace: str, status: bool) -> None:
        self.patches.append((namespace, name, json.loads(body), status))


async def test_the_writer_patches_the_status_once_per_change() -> None:
    client = _Client()
    writer = StatusWriter(client, FakeClock(0.0), {"default/pg": _group(None)})
    writer.unschedulable("default", "pg", "no room")
    writer.unschedulable("default", "pg", "no room")  # the same: not sent again
    writer.scheduled("default", "other")  # no such PodGroup in the lister: nothing
    await writer.flush()
    ((ns, name, body, status),) = client.patches
    assert (ns, name, status) == ("default", "pg", True)
    (c,) = body["status"]["conditions"]
    assert (c["type"], c["status"], c["reason"], c["message"]) == (
        INITIALLY_SCHEDULED, "False", REASON_UNSCHEDULABLE, "no room"
    )  # fmt: skip


async def test_a_gang_allowed_at_permit_is_reported_scheduled() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [pg("pg1", "ns1", 2)])
    client = _Client()
    pl.status = StatusWriter(client, FakeClock(0.0), pl.pod_groups)
    p1, p2 = pg_pod("p1", "pg1", namespace="ns1"), pg_pod("p2", "pg1", namespace="ns1")
    handle.add_pods([p1, p2])
    assert pl.reserve(CycleState(), PodInfo(p1), "n1").is_success()
    first, _ = pl.permit(CycleState(), PodInfo(p1), "n1")
    await pl.status.flush()
    assert first.is_wait() and not client.patches
    assert pl.reserve(CycleState(), PodInfo(p2), "n1").is_success()
    second, _ = pl.permit(CycleState(), PodInfo(p2), "n1")
    assert second.is_success()
    await pl.status.flush()
    ((_, name, body, _),) = client.patches
    assert name == "pg1"
    assert [(c["status"], c["reason"]) for c in body["status"]["conditions"]] == [
        ("True", REASON_SCHEDULED)
    ]
