"""Coscheduling's extension points, with upstream's test tables (scheduler-plugins
pkg/coscheduling/coscheduling_test.go and core/core_test.go) where they fit."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock, rfc3339
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    CycleState,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
)
from services.scheduler.plugins.coscheduling import Args, Coscheduling
from services.scheduler.plugins.coscheduling.core import check_cluster_resource
from services.scheduler.preemption.gang import GANG_KEY, GangNeed
from tests.builders import MakeNode
from tests.scheduler.plugins.coscheduling._gang import NOW, GangHandle, group, member, plugin


def _nodes(cpu: str, *names: str, pods: Any = ()) -> list[NodeInfo]:
    infos = []
    for n in names:
        ni = NodeInfo(MakeNode().name(n).allocatable({"cpu": cpu, "pods": "110"}).obj())
        for p in pods:
            if p.spec.node_name == n:
                ni.add_pod(PodInfo(p))
        infos.append(ni)
    return infos


# ============================================================ PreEnqueue / PreFilter
# core_test.go TestPreFilter: (pod, other pods, groups, minResources cpu, passes).
PRE_FILTER_CASES = [
    ("pod does not belong to any pg", member("p", group=""), [], [], True),
    # Upstream PreFilter lets a pod of a missing group through (Permit refuses it);
    # PreEnqueue gates it here (see test_pre_enqueue_gates_until_the_group_exists).
    ("pod count less than minMember", member("p"), [member("pg2-1", "pg2")], [2], False),
    ("pod count equal minMember", member("p1a"), [member("p1b")], [2], True),
    ("pod count more than minMember", member("p1a"), [member("p1b"), member("p1c")], [2], True),
    (
        "gated pods but still meeting quorum (minMember < replicas)",
        member("p1a"),
        [member("p1b"), member("p1c", gates=["example-gate"])],
        [2],
        True,
    ),
    (
        "gated pods push group below quorum",
        member("p1a"),
        [member("p1b", gates=["example-gate"]), member("p1c")],
        [3],
        False,
    ),
    (
        "all sibling pods are gated",
        member("p1a"),
        [member("p1b", gates=["g"]), member("p1c", gates=["g"])],
        [2],
        False,
    ),
]


@pytest.mark.parametrize(
    "name,pod,others,min_member,passes", PRE_FILTER_CASES, ids=[c[0] for c in PRE_FILTER_CASES]
)
def test_pre_enqueue_and_pre_filter_need_min_member_ungated_pods(
    name: str, pod: core_pb2.Pod, others: list[core_pb2.Pod], min_member: list[int], passes: bool
) -> None:
    h = GangHandle()
    cs = plugin(h)
    for m in min_member:
        h.add_group(group("pg1", min_member=m))
        h.add_group(group("pg2", min_member=m))
    h.add_pods([pod, *others])
    assert cs.pre_enqueue(pod).is_success() is passes
    _, st = cs.pre_filter(CycleState(), PodInfo(pod), _nodes("4", "node-a", "node-b"))
    assert st.is_success() is passes
    if not passes:
        assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE and st.plugin == "Coscheduling"


@pytest.mark.parametrize(
    "cpu,passes",
    [("6", True), ("10", False)],
    ids=["cluster's resource satisfies minResource", "cluster's resource cannot satisfy it"],
)
def test_pre_filter_checks_min_resources_against_the_clusters_free_total(
    cpu: str, passes: bool
) -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=2, minResources={"cpu": cpu}))
    pods = [member("p1a"), member("p1b"), member("p1c")]
    h.add_pods(pods)
    _, st = cs.pre_filter(CycleState(), PodInfo(pods[0]), _nodes("4", "node-a", "node-b"))
    assert st.is_success() is passes
    if not passes:
        assert st.message.startswith("resource gap: cpu")


def test_pre_enqueue_gates_until_the_group_exists() -> None:
    h = GangHandle()
    cs = plugin(h)
    pod = member("p")
    h.add_pods([pod])
    st = cs.pre_enqueue(pod)
    assert not st.is_success() and 'PodGroup "ns/pg1" not found' in st.message
    h.add_group(group(min_member=1))
    assert cs.pre_enqueue(pod).is_success()


def test_a_deleted_member_no_longer_counts_towards_the_quorum() -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=2))
    a, b = member("a"), member("b")
    h.add_pods([a, b])
    assert cs.pre_enqueue(a).is_success()
    for hd in h.pods.handlers:
        assert hd.on_delete is not None
        hd.on_delete(b)
    assert not cs.pre_enqueue(a).is_success()


def test_the_member_that_completes_a_large_gangs_quorum_activates_the_group_once() -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=1000))
    pods = [member(f"p{i:04}") for i in range(1001)]
    h.add_pods(pods[:999])
    assert h.activated == [] and not cs.pre_enqueue(pods[0]).is_success()
    h.add_pods(pods[999:])  # the 1000th completes the quorum; the 1001st changes nothing
    assert h.activated == [[p.metadata.name for p in pods[:1000]]]
    assert cs.pre_enqueue(pods[0]).is_success()


def test_removing_the_last_scheduling_gate_of_a_quorum_activates_the_group() -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=2))
    a, b = member("a", gates=["hold"]), member("b", gates=["hold"])
    h.add_pods([a, b])
    a2, b2 = member("a"), member("b")
    h.update_pod(a, a2)
    assert h.activated == [] and not cs.pre_enqueue(a2).is_success()
    assert cs.pre_enqueue(b2).is_success()  # the queue's newer copy of b counts as ungated
    h.update_pod(b, b2)
    assert h.activated == [["a", "b"]]
    assert cs.pre_enqueue(a2).is_success()
    h.update_pod(b2, member("b", gates=["hold"]))  # gated again: the quorum is lost
    assert not cs.pre_enqueue(a2).is_success()


def test_a_backed_off_group_is_refused_at_pre_filter_until_its_backoff_ends() -> None:
    h = GangHandle()
    cs = plugin(h, Args(pod_group_backoff_seconds=5))
    h.add_group(group(min_member=2))
    a, b = member("a"), member("b")
    h.add_pods([a, b])
    asyncio.run(cs.post_filter(CycleState(), PodInfo(a), {}))
    _, st = cs.pre_filter(CycleState(), PodInfo(b), _nodes("4", "n1"))
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message == "podGroup ns/pg1 failed recently"
    h.clock.advance(5.1)
    assert cs.pre_filter(CycleState(), PodInfo(b), _nodes("4", "n1"))[1].is_success()


# core_test.go TestCheckClusterResource: two nodes of 3 cpu, minResources cpu 4.
CLUSTER_RESOURCE_CASES = [
    ("Cluster resource enough", [member("p1", "", node="node-a", cpu="2")], True),
    (
        "Cluster resource not enough",
        [member("p1", "", node="node-a", cpu="2"), member("p2", "", node="node-b", cpu="1")],
        False,
    ),
    (
        "Cluster resource enough as p1's resource needs to be excluded from minResources",
        [member("p1", "pg1", node="node-a", cpu="2"), member("p2", "", node="node-b", cpu="1")],
        True,
    ),
]


@pytest.mark.parametrize(
    "name,pods,want", CLUSTER_RESOURCE_CASES, ids=[c[0] for c in CLUSTER_RESOURCE_CASES]
)
def test_check_cluster_resource_counts_the_groups_own_pods_as_free(
    name: str, pods: list[core_pb2.Pod], want: bool
) -> None:
    from services.api.helpers.resources import Resource

    nodes = _nodes("3", "node-a", "node-b", pods=pods)
    assert (check_cluster_resource(nodes, Resource(milli_cpu=4000), "ns/pg1") == "") is want


# ================================================================== QueueSort
LOW, HIGH = 10, 100


def _q(pod: core_pb2.Pod, at: float) -> QueuedPodInfo:
    return QueuedPodInfo(PodInfo(pod), timestamp=at, initial_attempt_timestamp=at)


# coscheduling_test.go TestLess: (p1, p1 queued at, p2, p2 queued at, groups
# (name, ns, created), expected less(p1, p2)).
LESS_CASES = [
    (
        "p1.priority less than p2.priority",
        member("p1", "", "ns1", priority=LOW), 0, member("p2", "", "ns2", priority=HIGH), 0,
        [], False,
    ),
    (
        "p1.priority greater than p2.priority",
        member("p1", "", "ns1", priority=HIGH), 0, member("p2", "", "ns2", priority=LOW), 0,
        [], True,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2",
        member("p1", "", "ns1", priority=HIGH), 1, member("p2", "", "ns2", priority=HIGH), 2,
        [], True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1",
        member("p1", "", "ns1", priority=HIGH), 2, member("p2", "", "ns2", priority=HIGH), 1,
        [], False,
    ),
    (
        "p1.priority less than p2.priority, p1 belongs to pg1",
        member("p1", "pg1", "ns1", priority=LOW), 0, member("p2", "", "ns2", priority=HIGH), 0,
        [("pg1", "ns1", 1)], False,
    ),
    (
        "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
        member("p1", "pg1", "ns1", priority=HIGH), 1, member("p2", "", "ns2", priority=HIGH), 2,
        [("pg1", "ns1", 1)], True,
    ),
    (
        "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
        member("p1", "pg1", "ns1", priority=HIGH), 2, member("p2", "", "ns2", priority=HIGH), 1,
        [("pg1", "ns1", 2)], False,
    ),
    (
        "equal priority. p1 is added earlier than p2, p1 belongs to pg1 and p2 to pg2",
        member("p1", "pg1", "ns1", priority=HIGH), 1, member("p2", "pg2", "ns2", priority=HIGH), 2,
        [("pg1", "ns1", 1), ("pg2", "ns2", 2)], True,
    ),
    (
        "equal priority. p2 is added earlier than p1, p1 belongs to pg2 and p2 to pg1",
        member("p1", "pg2", "ns", priority=HIGH), 1, member("p2", "pg1", "ns", priority=HIGH), 2,
        [("pg1", "ns", 1), ("pg2", "ns", 2)], False,
    ),
    (
        "equal priority and creation time, p1 and p2 belong to pg2: namespace/name decides",
        member("p1", "pg2", "ns1", priority=HIGH), 1, member("p2", "pg2", "ns2", priority=HIGH), 1,
        [("pg1", "ns1", 1), ("pg2", "ns2", 2)], True,
    ),
]  # fmt: skip


@pytest.mark.parametrize(
    "name,p1,t1,p2,t2,groups,expected", LESS_CASES, ids=[c[0] for c in LESS_CASES]
)
def test_less_orders_by_priority_then_group_creation_then_name(
    name: str,
    p1: core_pb2.Pod,
    t1: float,
    p2: core_pb2.Pod,
    t2: float,
    groups: list[tuple[str, str, float]],
    expected: bool,
) -> None:
    h = GangHandle()
    cs = plugin(h)
    for g, ns, created in groups:
        h.add_group(group(g, ns), created=NOW + created)
    assert cs.less(_q(p1, NOW + t1), _q(p2, NOW + t2)) is expected


def test_less_keeps_a_gangs_pods_adjacent_between_other_pods() -> None:
    """Pods of one group share its creation time, so another pod queued between them
    does not split them."""
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group("pg1", "ns"), created=NOW)
    qs = [
        _q(member("g-a"), NOW + 1),
        _q(member("solo", ""), NOW + 2),
        _q(member("g-b"), NOW + 3),
    ]
    import functools

    order = sorted(
        qs,
        key=functools.cmp_to_key(lambda a, b: -1 if cs.less(a, b) else (1 if cs.less(b, a) else 0)),
    )
    assert [q.pod.metadata.name for q in order] == ["g-a", "g-b", "solo"]


def test_less_puts_a_group_that_failed_behind_its_peers() -> None:
    """coscheduling_test.go TestLessAfterScheduleFailure: a failure time replaces the
    creation time until the group is permitted again."""
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group("pg1"), created=NOW)
    h.add_group(group("pg2"), created=NOW + 1)
    a, b = _q(member("a", "pg1"), NOW), _q(member("b", "pg2"), NOW)
    assert cs.less(a, b)
    h.clock.advance(10)
    asyncio.run(cs.post_filter(CycleState(), a.pod_info, {}))
    assert not cs.less(a, b)
    assert cs.less(b, a)


def test_a_failure_time_is_the_cluster_clocks_as_the_creation_times_are() -> None:
    """Under the time scale the scheduler paces on the wall clock, far behind the
    simulated creation timestamps: a failed group's time must still be the cluster's, or
    it would sort ahead of every group instead of behind its peers."""
    h = GangHandle()
    h.cluster_clock = FakeClock(NOW)  # type: ignore[attr-defined]
    h.clock = FakeClock(NOW - 86_400)  # the wall, a simulated day behind
    cs = plugin(h)
    h.add_group(group("pg1"), created=NOW)
    h.add_group(group("pg2"), created=NOW + 1)
    a, b = _q(member("a", "pg1"), NOW), _q(member("b", "pg2"), NOW)
    h.cluster_clock.advance(10)  # type: ignore[attr-defined]
    asyncio.run(cs.post_filter(CycleState(), a.pod_info, {}))
    assert cs.less(b, a)


# ===================================================================== Permit
# coscheduling_test.go TestPermit: (pod, members (bound or not), min member, code).
PERMIT_CASES = [
    ("pod does not belong to any pg, allow", member("p", ""), [], 2, Code.SUCCESS),
    ("pod belongs to a pg that doesn't have quorum", member("p"), [], 2, Code.WAIT),
    (
        "pod belongs to a pg that has quorum satisfied",
        member("p1a"),
        [member("p1b", node="node")],
        2,
        Code.SUCCESS,
    ),
]


@pytest.mark.parametrize(
    "name,pod,members,min_member,code", PERMIT_CASES, ids=[c[0] for c in PERMIT_CASES]
)
def test_permit_waits_until_min_member_are_assigned(
    name: str, pod: core_pb2.Pod, members: list[core_pb2.Pod], min_member: int, code: Code
) -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=min_member))
    h.add_pods([pod, *members])
    st, _ = cs.permit(CycleState(), PodInfo(pod), "node")
    assert st.code == code


def test_permit_refuses_a_pod_whose_group_does_not_exist() -> None:
    h = GangHandle()
    cs = plugin(h)
    st, _ = cs.permit(CycleState(), PodInfo(member("p", "pg-non-existent")), "node")
    assert st.code == Code.UNSCHEDULABLE and st.message == "PodGroup not found"


def test_the_member_that_completes_the_quorum_allows_its_waiting_siblings() -> None:
    h = GangHandle()
    cs = plugin(h)
    h.add_group(group(min_member=3))
    a, b, c = member("a"), member("b"), member("c")
    other = member("x", "pg2")
    h.add_group(group("pg2", min_member=2))
    h.add_pods([a, b, c, other])
    waiting = []
    for p in (a, b):
        st, _ = cs.permit(CycleState(), PodInfo(p), "n1")
        assert st.is_wait()
        waiting.append(h.wait(p))
    assert cs.permit(CycleState(), PodInfo(other), "n1")[0].is_wait()
    stranger = h.wait(other)
    st, _ = cs.permit(CycleState(), PodInfo(c), "n1")
    assert st.is_success()
    assert all(wp.result is not None and wp.result.is_success() for wp in waiting)
    assert stranger.result is None  # another gang's waiting pod is not touched


@pytest.mark.parametrize(
    "pg_timeout,args_wait,expected",
    [(None, 60, 60.0), (5, 60, 5.0), (None, 0, 60.0), (0, 30, 0.0)],
    ids=["args default", "PodGroup scheduleTimeoutSeconds", "upstream DefaultWaitTime", "zero"],
)
def test_permit_waits_for_the_groups_timeout_or_the_args(
    pg_timeout: int | None, args_wait: int, expected: float
) -> None:
    h = GangHandle()
    cs = plugin(h, Args(permit_waiting_time_seconds=args_wait))
    h.add_group(group(min_member=2, timeout=pg_timeout))
    st, timeout = cs.permit(CycleState(), PodInfo(member("a")), "n1")
    assert st.is_wait() and timeout == expected


# ============================================================ PostFilter / Unreserve
def _waiting_gang(
    h: GangHandle, n: int, min_member: int
) -> tuple[Coscheduling, list[core_pb2.Pod], list[Any]]:
    h.add_group(group(min_member=min_member))
    cs = plugin(h)
    pods = [member(f"p{i}") for i in range(n)]
    h.add_pods(pods)
    wps = []
    for p in pods[:-1]:
        assert cs.permit(CycleState(), PodInfo(p), "n1")[0].is_wait()
        wps.append(h.wait(p))
    return cs, pods, wps


def test_post_filter_rejects_every_waiting_sibling_of_a_failed_member() -> None:
    h = GangHandle()
    cs, pods, wps = _waiting_gang(h, 3, 3)
    _, st = asyncio.run(cs.post_filter(CycleState(), PodInfo(pods[-1]), {}))
    assert st.code == Code.UNSCHEDULABLE
    assert st.message == (
        "PodGroup ns/pg1 gets rejected due to Pod p2 is unschedulable even after PostFilter"
    )
    for wp in wps:
        assert wp.result is not None and wp.result.code == Code.UNSCHEDULABLE
        assert wp.result.message == "optimistic rejection in PostFilter"


# coscheduling_test.go TestPostFilterRejectThreshold: (minMember, assigned, percentage,
# siblings rejected).
THRESHOLD_CASES = [
    (10, 9, 10, False),  # 10% missing <= 10%: keep waiting
    (10, 8, 10, True),  # 20% missing > 10%
    (4, 3, 0, True),  # threshold 0: always reject
    (4, 1, 100, False),  # threshold 100: never reject
]


@pytest.mark.parametrize("min_member,assigned,pct,rejected", THRESHOLD_CASES)
def test_post_filter_leaves_siblings_waiting_when_only_a_small_part_is_missing(
    min_member: int, assigned: int, pct: int, rejected: bool
) -> None:
    h = GangHandle()
    h.add_group(group(min_member=min_member))
    cs = plugin(h, Args(pod_group_reject_percentage=pct))
    pods = [member(f"p{i}") for i in range(min_member)]
    h.add_pods(pods)
    wps = []
    for p in pods[:assigned]:
        cs.permit(CycleState(), PodInfo(p), "n1")
        wps.append(h.wait(p))
    _, st = asyncio.run(cs.post_filter(CycleState(), PodInfo(pods[-1]), {}))
    assert st.code == Code.UNSCHEDULABLE
    assert all((wp.result is not None) is rejected for wp in wps)


def test_post_filter_of_a_pod_without_group_says_so() -> None:
    h = GangHandle()
    _, st = asyncio.run(plugin(h).post_filter(CycleState(), PodInfo(member("p")), {}))
    assert st.code == Code.UNSCHEDULABLE and st.message == "can not find pod group"


def test_unreserve_of_one_member_rejects_its_waiting_siblings_and_uncounts_it() -> None:
    h = GangHandle()
    h.add_group(group(min_member=3))
    cs = plugin(h)
    a, b, c = member("a"), member("b"), member("c")
    h.add_pods([a, b, c])
    cs.permit(CycleState(), PodInfo(a), "n1")
    wa = h.wait(a)
    cs.permit(CycleState(), PodInfo(b), "n1")
    cs.unreserve(CycleState(), PodInfo(b), "n1")
    assert wa.result is not None and wa.result.message == "rejection in Unreserve"
    assert cs.manager.assigned_count("ns/pg1") == 1  # a: its own Unreserve follows


def test_reserve_always_succeeds() -> None:
    assert plugin(GangHandle()).reserve(CycleState(), PodInfo(member("a")), "n1").is_success()


# ================================================================ gang preemption
def test_pre_filter_leaves_what_the_rest_of_the_gang_needs_for_preemption() -> None:
    h = GangHandle()
    h.add_group(group(min_member=3))
    cs = plugin(h)
    a, b, c, bound = member("a"), member("b"), member("c"), member("d", node="n1")
    h.add_pods([a, b, c, bound])
    state = CycleState()
    assert cs.pre_filter(state, PodInfo(a), _nodes("4", "n1"))[1].is_success()
    need: GangNeed = state.read(GANG_KEY)
    assert need.group == "ns/pg1"
    assert need.needed == 1  # 3 - 1 bound - the preemptor
    assert [p.metadata.name for p in need.pending()] == ["b", "c"]


def test_a_pod_without_group_leaves_no_gang_need() -> None:
    state = CycleState()
    plugin(GangHandle()).pre_filter(state, PodInfo(member("a", "")), _nodes("4", "n1"))
    assert state.get(GANG_KEY) is None


# ============================================================== queueing hints
def test_events_wake_only_the_pods_they_can_help() -> None:
    cs = plugin(GangHandle())
    hints = {str(e.event): e.hint for e in cs.events_to_register()}
    pod = member("a")
    pod_add = hints[str(ClusterEvent("Pod", ActionType.ADD))]
    assert pod_add is not None
    assert pod_add(pod, None, member("b")) == QueueingHint.QUEUE
    assert pod_add(pod, None, member("b", "pg2")) == QueueingHint.SKIP
    assert pod_add(pod, None, member("b", "pg1", "other-ns")) == QueueingHint.SKIP
    pg_hint = hints[str(ClusterEvent("PodGroup", ActionType.ADD | ActionType.UPDATE))]
    assert pg_hint is not None
    g = group(min_member=2)
    assert pg_hint(pod, None, g) == QueueingHint.QUEUE
    assert pg_hint(pod, None, group("pg2")) == QueueingHint.SKIP
    status_only = group(min_member=2)
    status_only.status.phase = "Scheduling"
    assert pg_hint(pod, g, status_only) == QueueingHint.SKIP
    assert pg_hint(pod, g, group(min_member=1)) == QueueingHint.QUEUE


def test_a_pod_without_the_label_passes_every_point_untouched() -> None:
    h = GangHandle()
    cs = plugin(h)
    pod = member("solo", "")
    state = CycleState()
    assert cs.pre_enqueue(pod).is_success()
    assert cs.pre_filter(state, PodInfo(pod), _nodes("4", "n1")) == (None, cs.pre_enqueue(pod))
    assert cs.permit(state, PodInfo(pod), "n1")[0].is_success()
    cs.unreserve(state, PodInfo(pod), "n1")
    assert state.get(GANG_KEY) is None
    assert rfc3339(NOW)  # the handle's clock is untouched by a pod without a group


def test_post_filter_of_a_pod_without_the_label_adds_no_reason() -> None:
    result, st = asyncio.run(
        plugin(GangHandle()).post_filter(CycleState(), PodInfo(member("solo", "")), {})
    )
    assert result is None and st.code == Code.UNSCHEDULABLE and st.reasons == ()
