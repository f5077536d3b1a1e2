"""The pods of each PodGroup as the scheduler tracks them (WorkloadManager, kubera's
counterpart of upstream's queue bookkeeping), with upstream's newest
pkg/scheduler/backend/queue/pod_group_member_pods_test.go as tables (TestPodGroupMemberPods_
Add, _Get, _Has, _Update, _Delete). Upstream keeps a group's queued pods; kubera's manager
keeps every pod its Pod informer holds, so an update of a pod it never saw adds it (an
informer's update of an unknown object is its add), where upstream's returns nil; _Clear
and _Len have no counterpart (kubera's queue does not pop a group whole)."""

from __future__ import annotations

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.plugins.gangscheduling import PodGroupKey, WorkloadManager
from tests.builders import MakePod


def _pod(name: str, group: str, *, label: str = "") -> core_pb2.Pod:
    b = MakePod().name(name).namespace("ns1").uid(f"uid{name[-1]}").pod_group_name(group)
    if label:
        b.label("updated", label)
    return b.container("c", "pause").obj()


POD1, POD2, POD3 = _pod("pod1", "pg1"), _pod("pod2", "pg1"), _pod("pod3", "pg2")
POD3_PG1 = _pod("pod3", "pg1")


def _manager(pods: list[core_pb2.Pod]) -> WorkloadManager:
    m = WorkloadManager(clock=FakeClock(0.0))
    for p in pods:
        m.add_pod(p)
    return m


def _members(m: WorkloadManager, group: str) -> list[str] | None:
    info = m.get(PodGroupKey("ns1", "", group, ""))
    return None if info is None else sorted(p.metadata.name for p in info.all_pods.values())


def _has(m: WorkloadManager, pod: core_pb2.Pod) -> bool:
    info = m.get(PodGroupKey("ns1", "", pod.spec.scheduling_group.pod_group_name, ""))
    return info is not None and pod.metadata.uid in info.all_pods


ADD = {
    "pod group with multiple pods": ([POD1, POD2], {"pg1": ["pod1", "pod2"], "pg2": None}),
    "two pod groups": ([POD1, POD3], {"pg1": ["pod1"], "pg2": ["pod3"]}),
}


@pytest.mark.parametrize(("pods", "want"), list(ADD.values()), ids=list(ADD))
def test_add(pods: list[core_pb2.Pod], want: dict[str, list[str] | None]) -> None:
    m = _manager(pods)
    assert {g: _members(m, g) for g in want} == want


HAS = {
    # _Get and _Has share their rows: the pod is found, or not.
    "get existing pod in pod group": ([POD1, POD2], POD1, True),
    "get non-existent pod in existing pod group": ([POD1], POD2, False),
    "get non-existent pod in non-existing pod group": ([], _pod("pod3", "pg3"), False),
    "has existing pod in pod group": ([POD1, POD2], POD1, True),
    "doesn't have non-existent pod in existing pod group": ([POD1], POD2, False),
    "doesn't have non-existent pod in non-existing pod group": ([], POD2, False),
}


@pytest.mark.parametrize(("pods", "target", "want"), list(HAS.values()), ids=list(HAS))
def test_get_and_has(pods: list[core_pb2.Pod], target: core_pb2.Pod, want: bool) -> None:
    assert _has(_manager(pods), target) is want


def test_update_existing_pod() -> None:
    m = _manager([POD1])
    updated = _pod("pod1", "pg1", label="true")
    m.update_pod(POD1, updated)
    info = m.get(PodGroupKey("ns1", "", "pg1", ""))
    assert info is not None and info.all_pods["uid1"].metadata.labels["updated"] == "true"


def test_update_non_existent_pod_adds_it_as_the_informer_saw_it() -> None:
    m = _manager([POD1])
    m.update_pod(POD2, POD2)
    assert _members(m, "pg1") == ["pod1", "pod2"]  # upstream's queue: nil, not added


DELETE = {
    "delete non-existent pod from existing pod group": ([POD1], POD3_PG1, ["pod1"]),
    "delete pod from non-existent pod group": ([], POD3_PG1, None),
    "delete one pod from group with multiple pods": ([POD1, POD2], POD1, ["pod2"]),
    "delete last pod in group cleans up group key": ([POD1], POD1, None),
}


@pytest.mark.parametrize(("pods", "gone", "left"), list(DELETE.values()), ids=list(DELETE))
def test_delete(pods: list[core_pb2.Pod], gone: core_pb2.Pod, left: list[str] | None) -> None:
    m = _manager(pods)
    m.delete_pod(gone)
    assert _members(m, "pg1") == left
