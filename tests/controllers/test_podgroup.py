"""The PodGroup controller's status rules (services/controllers/podgroup.py), with the
cases of scheduler-plugins' pkg/controllers/podgroup_controller_test.go where kubera's
state machine agrees, and the cases where it says otherwise marked so."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.podgroups import POD_GROUP_LABEL
from services.clock import rfc3339
from services.controllers.podgroup import PodGroupConfig, compute_status
from tests.builders import MakePod, pod_group

NOW = 1_800_000_000.0


def _pods(names: list[str], phase: str, *, bound: bool) -> list[core_pb2.Pod]:
    out = []
    for n in names:
        b = MakePod().name(n).namespace("ns").uid(n).label(POD_GROUP_LABEL, "pg").phase(phase)
        if bound:
            b.node("n1")
        out.append(b.obj())
    return out


# (name, minMember, pods, pod phase, bound, previous phase, expected phase)
CASES = [
    ("Group running", 2, ["pod1", "pod2"], "Running", True, "Scheduling", "Running"),
    (
        "Group running, more than min member",
        2,
        ["pod11", "pod21", "pod31", "pod41"],
        "Running",
        True,
        "Scheduling",
        "Running",
    ),
    ("Group failed", 2, ["pod1", "pod2"], "Failed", True, "Scheduling", "Failed"),
    ("Group finished", 2, ["pod1", "pod2"], "Succeeded", True, "Scheduling", "Finished"),
    # upstream: Pending -> Scheduling once minMember pods exist; here Scheduling means
    # some of them are bound.
    ("unbound pods keep the group pending", 2, ["pod1", "pod2"], "Pending", False, "", "Pending"),
    ("Group status convert from pending to scheduling", 3, ["pod1"], "Pending", True, "Pending", "Scheduling"),
    ("minMember bound: scheduled", 2, ["pod1", "pod2"], "Pending", True, "Scheduling", "Scheduled"),
    ("Group status convert from pending to finished", 2, ["pod1", "pod2"], "Succeeded", True, "Pending", "Finished"),
    ("Group min member more than Pod number", 3, ["pod91", "pod92"], "Pending", False, "Pending", "Pending"),
    ("Group status convert from running to pending", 4, ["pod101", "pod102"], "Pending", False, "Running", "Pending"),
    ("a finished group stays finished", 2, ["pod1"], "Failed", True, "Finished", "Finished"),
    ("a failed group stays failed", 2, ["pod1", "pod2"], "Running", True, "Failed", "Failed"),
    ("any failed member fails the group", 3, ["pod1", "pod2"], "Failed", True, "Running", "Failed"),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,min_member,names,phase,bound,previous,expected", CASES, ids=[c[0] for c in CASES]
)
def test_phase_follows_the_members(
    name: str,
    min_member: int,
    names: list[str],
    phase: str,
    bound: bool,
    previous: str,
    expected: str,
) -> None:
    pg = pod_group("pg", "ns", min_member=min_member)
    pg.status.phase = previous
    status = compute_status(pg, _pods(names, phase, bound=bound), NOW)
    assert status.phase == expected


def test_counts_follow_pod_phases_and_binding() -> None:
    pg = pod_group("pg", "ns", min_member=4)
    pods = [
        *_pods(["r1", "r2"], "Running", bound=True),
        *_pods(["s1"], "Succeeded", bound=True),
        *_pods(["p1"], "Pending", bound=True),
        *_pods(["u1"], "Pending", bound=False),
    ]
    st = compute_status(pg, pods, NOW)
    assert (st.scheduled, st.running, st.succeeded, st.failed) == (4, 2, 1, 0)
    assert st.phase == "Scheduled"


def test_schedule_start_time_is_set_once_when_the_group_leaves_pending() -> None:
    pg = pod_group("pg", "ns", min_member=2)
    assert compute_status(pg, _pods(["a"], "Pending", bound=False), NOW).schedule_start_time == ""
    first = compute_status(pg, _pods(["a"], "Pending", bound=True), NOW)
    assert first.schedule_start_time == rfc3339(NOW)
    pg.status.CopyFrom(first)
    later = compute_status(pg, _pods(["a", "b"], "Running", bound=True), NOW + 60)
    assert later.phase == "Running" and later.schedule_start_time == rfc3339(NOW)


def test_occupied_by_names_the_owners_of_the_first_pod_once_min_member_exist() -> None:
    pg = pod_group("pg", "ns", min_member=2)
    pods = _pods(["a", "b"], "Pending", bound=False)
    pods[0].metadata.owner_references.add(name="job-b", kind="Job")
    pods[0].metadata.owner_references.add(name="job-a", kind="Job")
    assert compute_status(pg, pods[:1], NOW).occupied_by == ""
    assert compute_status(pg, pods, NOW).occupied_by == "ns/job-a,ns/job-b"


def test_config_refuses_impossible_settings() -> None:
    with pytest.raises(ValueError, match="workers"):
        PodGroupConfig(workers=0)
    with pytest.raises(ValueError, match="base_backoff"):
        PodGroupConfig(base_backoff=2, max_backoff=1)
