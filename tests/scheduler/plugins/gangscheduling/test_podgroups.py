"""GangScheduling over upstream 1.37's PodGroup API (scheduling.k8s.io/v1beta1, a pod's
spec.schedulingGroup), with upstream's newest
pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go as tables: the rows of
Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterPodGroupAdded,
Test_isSchedulableAfterPodGroupUpdated, TestPreEnqueue and TestPlacementFeasible that run
with the CompositePodGroup gate off (kubera serves no CompositePodGroup: a PodGroup's
parentCompositePodGroupName is ignored by the plugin, as upstream's with the gate off).
Then the Permit flow of a PodGroup gang through the same plugin the Workload API uses."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from protos.kubera.v1 import core_pb2, schedulingv1beta1_pb2
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins.gangscheduling import Args, GangScheduling, new
from services.scheduler.plugins.gangscheduling.plugin import (
    MSG_MIN_COUNT_NOT_PRESENT,
    MSG_WAITING_ON_PERMIT,
    POD_GROUP_KIND,
    hint_pod_added,
    hint_pod_group_added,
    hint_pod_group_updated,
    placement_feasible,
)
from tests.builders import MakeNode, MakePod, scheduling_pod_group
from tests.scheduler.plugins.coscheduling._gang import GangHandle

Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def pg_pod(
    name: str = "", group: str | None = "pg", *, namespace: str = "default", node: str = ""
) -> core_pb2.Pod:
    """st.MakePod().Namespace(ns).Name(n).UID(n).PodGroupName(group).Node(node)."""
    b = MakePod().name(name).namespace(namespace).uid(name).container("c", "pause")
    if group is not None:
        b.pod_group_name(group)
    if node:
        b.node(node)
    return b.obj()


def pg(
    name: str, namespace: str = "default", min_count: int | None = None, **spec: object
) -> schedulingv1beta1_pb2.SchedulingPodGroup:
    return scheduling_pod_group(name, namespace, min_count=min_count, **spec)


WREF = {"workloadRef": {"workloadName": "w", "templateName": "t"}}

# ------------------------------------------------------- Test_isSchedulableAfterPodAdded

POD_ADDED = {
    "add a newPod which matches the pod's scheduling group": (pg_pod("p"), pg_pod(), Q),
    "add a newPod with NodeName set which matches the pod's scheduling group": (
        pg_pod("p"),
        pg_pod(node="node1"),
        Q,
    ),
    "add a newPod which doesn't match the pod's namespace": (
        pg_pod("p"),
        pg_pod(namespace="foo"),
        S,
    ),
    "add a newPod which doesn't match the pod's pod group name": (
        pg_pod("p", "pg1"),
        pg_pod(group="pg2"),
        S,
    ),
    # CPG disabled: a shared parent CompositePodGroup does not make two groups one.
    "add a newPod which belongs to a different scheduling group but matches the root CPG, "
    "but CPG is ignored": (pg_pod("p1", "pg1"), pg_pod("p2", "pg2"), S),
    "add a newPod which belongs to a different scheduling group and does not match the root CPG": (
        pg_pod("p1", "pg1"),
        pg_pod("p2", "pg2"),
        S,
    ),
}


@pytest.mark.parametrize(("pod", "added", "want"), list(POD_ADDED.values()), ids=list(POD_ADDED))
def test_is_schedulable_after_pod_added(
    pod: core_pb2.Pod, added: core_pb2.Pod, want: QueueingHint
) -> None:
    assert hint_pod_added(pod, None, added) == want


# -------------------------------------------------- Test_isSchedulableAfterPodGroupAdded

POD_GROUP_ADDED = {
    "add a pod group which matches the pod's pod group name": (
        pg_pod("p"),
        pg("pg", min_count=1, **WREF),
        Q,
    ),
    "add a pod group which doesn't match the pod's scheduling group name": (
        pg_pod("p", "pg1"),
        pg("pg2", min_count=1, **WREF),
        S,
    ),
    "add a pod group which doesn't match the pod's scheduling group namespace": (
        pg_pod("p", namespace="ns1"),
        pg("pg", "ns2", min_count=1, **WREF),
        S,
    ),
    "add a pod group which doesn't match the pod's scheduling group but matches the root CPG, "
    "but CPG is ignored": (
        pg_pod("p", "pg1"),
        pg("pg2", min_count=1, parentCompositePodGroupName="cpg-root"),
        S,
    ),
    "add a pod group which doesn't match the pod's scheduling group and doesn't match the "
    "root CPG": (
        pg_pod("p", "pg1"),
        pg("pg2", min_count=1, parentCompositePodGroupName="cpg-root2"),
        S,
    ),
}


@pytest.mark.parametrize(
    ("pod", "added", "want"), list(POD_GROUP_ADDED.values()), ids=list(POD_GROUP_ADDED)
)
def test_is_schedulable_after_pod_group_added(
    pod: core_pb2.Pod, added: schedulingv1beta1_pb2.SchedulingPodGroup, want: QueueingHint
) -> None:
    assert hint_pod_group_added(pod, None, added) == want


# ------------------------------------------------ Test_isSchedulableAfterPodGroupUpdated

POD_GROUP_UPDATED = {
    "minCount decreased matches target pod": (
        pg_pod("p", namespace="ns1"),
        pg("pg", "ns1", 4, **WREF),
        pg("pg", "ns1", 3, **WREF),
        Q,
    ),
    "update Basic policy": (
        pg_pod("p", namespace="ns1"),
        pg("pg", "ns1", **WREF),
        pg("pg", "ns1"),
        S,
    ),
    "minCount increased matches target pod": (
        pg_pod("p", namespace="ns1"),
        pg("pg", "ns1", 3, **WREF),
        pg("pg", "ns1", 4, **WREF),
        S,
    ),
    "minCount unchanged matches target pod": (
        pg_pod("p", namespace="ns1"),
        pg("pg", "ns1", 3, **WREF),
        pg("pg", "ns1", 3, **WREF),
        S,
    ),
    "minCount decreased but pod group name doesn't match target pod": (
        pg_pod("p", "pg-other", namespace="ns1"),
        pg("pg", "ns1", 4, **WREF),
        pg("pg", "ns1", 3, **WREF),
        S,
    ),
    "minCount decreased but pod group namespace doesn't match target pod": (
        pg_pod("p", namespace="ns-other"),
        pg("pg", "ns1", 4, **WREF),
        pg("pg", "ns1", 3, **WREF),
        S,
    ),
    "pod without a scheduling group is skipped": (
        pg_pod("p", None, namespace="ns1"),
        pg("pg", "ns1", 4, **WREF),
        pg("pg", "ns1", 3, **WREF),
        S,
    ),
}


@pytest.mark.parametrize(
    ("pod", "old", "new_pg", "want"), list(POD_GROUP_UPDATED.values()), ids=list(POD_GROUP_UPDATED)
)
def test_is_schedulable_after_pod_group_updated(
    pod: core_pb2.Pod,
    old: schedulingv1beta1_pb2.SchedulingPodGroup,
    new_pg: schedulingv1beta1_pb2.SchedulingPodGroup,
    want: QueueingHint,
) -> None:
    assert hint_pod_group_updated(pod, old, new_pg) == want


# ------------------------------------------------------------------------ TestPreEnqueue

GANG_PG1 = pg("pg1", "ns1", 3, workloadRef={"workloadName": "gang-wl", "templateName": "t1"})
GANG_PG2 = pg("pg2", "ns1", 4, workloadRef={"workloadName": "gang-wl", "templateName": "t2"})
BASIC_PG = pg("pg3", "ns1", workloadRef={"workloadName": "basic-wl", "templateName": "1"})
P1, P2, P3 = (pg_pod(n, "pg1", namespace="ns1") for n in ("p1", "p2", "p3"))
P4, P5 = (pg_pod(n, "pg2", namespace="ns1") for n in ("p4", "p5"))
BASIC_POD = pg_pod("basic-pod", "pg3", namespace="ns1")
NON_GANG = pg_pod("non-gang", None, namespace="ns1")


def _cpg_child(
    name: str, parent: str, min_count: int | None
) -> schedulingv1beta1_pb2.SchedulingPodGroup:
    return pg(name, "ns1", min_count, parentCompositePodGroupName=parent)


CPG_GROUPS = [
    _cpg_child("pg1-cpg", "cpg-sub1", 1),
    _cpg_child("pg2-cpg", "cpg-sub1", 1),
    _cpg_child("pg3-cpg", "cpg-sub1", 1),
    _cpg_child("pg4-cpg", "cpg-sub2", None),
    _cpg_child("pg5-cpg", "cpg-sub2", 1),
    _cpg_child("pg6-cpg", "cpg-sub3", 1),
    _cpg_child("pg7-cpg", "cpg-sub3", 1),
]
P1_CPG, P2_CPG, P4_CPG, P6_CPG = (
    pg_pod(f"p{i}-cpg", f"pg{i}-cpg", namespace="ns1") for i in (1, 2, 4, 6)
)
BASIC_CPG_GROUPS = [
    _cpg_child("pg-basic-1", "cpg-basic-root", 2),
    _cpg_child("pg-basic-2", "cpg-basic-root", 2),
]
P1_1, P1_2 = (pg_pod(n, "pg-basic-1", namespace="ns1") for n in ("p1_1", "p1_2"))
P2_1 = pg_pod("p2_1", "pg-basic-2", namespace="ns1")

PRE_ENQUEUE = {
    "non-gang pod succeeds immediately": (NON_GANG, [], [GANG_PG1, GANG_PG2, BASIC_PG], None),
    "basic policy pod succeeds immediately": (
        BASIC_POD,
        [],
        [GANG_PG1, GANG_PG2, BASIC_PG],
        None,
    ),
    "gang pod fails PreEnqueue when pod group is not yet created": (
        P1,
        [P2, P3, P4, P5],
        [],
        (UNRESOLVABLE, 'waiting for pod\'s pod group "pg1" to appear in scheduling queue'),
    ),
    "gang pod fails PreEnqueue when quorum is not met": (
        P1,
        [P2, P4, P5],
        [GANG_PG1, GANG_PG2],
        (UNRESOLVABLE, MSG_MIN_COUNT_NOT_PRESENT),
    ),
    "gang pod passes PreEnqueue": (P1, [P2, P3, P4, P5], [GANG_PG1, GANG_PG2], None),
    "CPG Hierarchical Stage 1: No pods, ready, as CPGs are ignored": (
        P1_CPG,
        [],
        CPG_GROUPS,
        None,
    ),
    "CPG Hierarchical Stage 2: Add p6, already ready": (P6_CPG, [P1_CPG, P2_CPG], CPG_GROUPS, None),
    "CPG Hierarchical Stage 3: Add p4, already ready": (
        P4_CPG,
        [P1_CPG, P2_CPG, P6_CPG],
        CPG_GROUPS,
        None,
    ),
    "CPG Basic With Gang Stage 1: pg1 ready, root ready, pg2 not ready": (
        P2_1,
        [P1_1, P1_2],
        BASIC_CPG_GROUPS,
        (UNRESOLVABLE, MSG_MIN_COUNT_NOT_PRESENT),
    ),
}


def _plugin(
    handle: GangHandle, groups: Sequence[schedulingv1beta1_pb2.SchedulingPodGroup]
) -> GangScheduling:
    plugin = new(Args(), handle)
    store = handle.informer(POD_GROUP_KIND).store
    for g in groups:
        store[f"{g.metadata.namespace}/{g.metadata.name}"] = g
    return plugin


def _status(st: Status) -> tuple[Code, str] | None:
    return None if st.is_success() else (st.code, st.message)


@pytest.mark.parametrize(
    ("pod", "others", "groups", "want"), list(PRE_ENQUEUE.values()), ids=list(PRE_ENQUEUE)
)
def test_pre_enqueue(
    pod: core_pb2.Pod,
    others: list[core_pb2.Pod],
    groups: list[schedulingv1beta1_pb2.SchedulingPodGroup],
    want: tuple[Code, str] | None,
) -> None:
    handle = GangHandle()
    pl = _plugin(handle, groups)
    handle.add_pods([*others, pod])
    assert _status(pl.pre_enqueue(pod)) == want


# ------------------------------------------------------------------ TestPlacementFeasible

W, OK, U = Code.WAIT, Code.SUCCESS, Code.UNSCHEDULABLE
PLACEMENT = {
    # name: (minCount, children, pod outcomes, expected codes, initially scheduled)
    "All pods succeed, minCount met at end": (2, 2, [OK, OK], [W, OK], 0),
    "First pod fails, minCount not satisfiable": (3, 3, [U], [U], 0),
    "Second pod fails, minCount not satisfiable": (2, 2, [OK, U], [W, U], 0),
    "Non-gang pod group with 0 scheduled pods fails": (0, 1, [U], [U], 0),
    "Non-gang pod group with succeeds once 1 pod is scheduled": (0, 1, [OK], [OK], 0),
    "Non-gang pod group with 1 initially scheduled pod succeeds": (0, 1, [U], [OK], 1),
    "More than minCount pods, all succeed": (2, 3, [OK, OK, OK], [W, OK, OK], 0),
    "More than minCount pods, first fails": (2, 3, [U, OK, OK], [W, W, OK], 0),
    "More than minCount pods, minCount not satisfiable": (2, 3, [U, U], [W, U], 0),
    "1 pod scheduled, 2 unscheduled pods succeed, minCount 3 met": (3, 2, [OK, OK], [W, OK], 1),
    "minCount already met by scheduled pods": (2, 1, [U], [OK], 2),
    "1 pod scheduled, minCount 3, first unscheduled fails, not enough remaining": (
        3,
        2,
        [U],
        [U],
        1,
    ),
    "1 pod scheduled, minCount 4, first unscheduled succeeds, not enough remaining": (
        4,
        2,
        [OK],
        [U],
        1,
    ),
}


@pytest.mark.parametrize(
    ("min_count", "children", "outcomes", "want", "initially"),
    list(PLACEMENT.values()),
    ids=list(PLACEMENT),
)
def test_placement_feasible(
    min_count: int, children: int, outcomes: list[Code], want: list[Code], initially: int
) -> None:
    """Upstream's loop: after the i-th pod's outcome, `children - (i + 1)` remain."""
    scheduled = initially
    got = []
    for i, outcome in enumerate(outcomes):
        scheduled += outcome == OK
        got.append(placement_feasible(min_count, scheduled, children - (i + 1)).code)
    assert got == want


# ------------------------------------------------------------------ kubera's Permit flow


def test_a_pod_group_gang_waits_at_permit_until_min_count_pods_are_assumed() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [GANG_PG1])
    handle.add_pods([P1, P2, P3])
    state = CycleState()
    for pod in (P1, P2):
        assert pl.pre_enqueue(pod).is_success()
        assert pl.reserve(state, PodInfo(pod), "n1").is_success()
        st, timeout = pl.permit(state, PodInfo(pod), "n1")
        assert (st.code, st.message) == (Code.WAIT, MSG_WAITING_ON_PERMIT)
        assert timeout > 0
    assert pl.reserve(state, PodInfo(P3), "n1").is_success()
    st, _ = pl.permit(state, PodInfo(P3), "n1")
    assert st.is_success()


def test_a_basic_pod_group_passes_permit_at_once() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [BASIC_PG])
    handle.add_pods([BASIC_POD])
    state = CycleState()
    assert pl.reserve(state, PodInfo(BASIC_POD), "n1").is_success()
    assert pl.permit(state, PodInfo(BASIC_POD), "n1")[0].is_success()


def test_a_pod_group_gang_that_lost_its_pods_is_refused_at_permit() -> None:
    """1.37's PlacementFeasible: two pods left of a gang of three cannot make it."""
    handle = GangHandle()
    pl = _plugin(handle, [GANG_PG1])
    handle.add_pods([P1, P2])
    st, _ = pl.permit(CycleState(), PodInfo(P1), "n1")
    assert st.code == Code.UNSCHEDULABLE
    assert st.message == "minCount (3) cannot be satisfied: 0 scheduled, 2 remaining"


def test_permit_after_the_pod_group_vanished_is_an_error() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [])
    handle.add_pods([P1])
    st, _ = pl.permit(CycleState(), PodInfo(P1), "n1")
    assert st.code == Code.ERROR
    assert 'pod group "pg1"' in st.message


def test_a_pod_group_with_resource_claims_does_not_gate_its_pods() -> None:
    """Shared claims are DynamicResources' business (DRAWorkloadResourceClaims), not the
    gang's: the quorum alone decides PreEnqueue."""
    handle = GangHandle()
    claims = {"resourceClaims": [{"name": "c", "resourceClaimName": "shared"}]}
    pl = _plugin(handle, [pg("pg1", "ns1", 1, **claims)])
    handle.add_pods([P1])
    assert pl.pre_enqueue(P1).is_success()


# ---------------------------------------------------------- topology constraints (kubera)

RACK = "topology.kubernetes.io/rack"
RACKED = pg("pg1", "ns1", 3, schedulingConstraints={"topology": [{"key": RACK}]})


def _nodes() -> list[NodeInfo]:
    racks = {"n1": "rack-a", "n2": "rack-a", "n3": "rack-b", "n4": None}
    out = []
    for name, rack in racks.items():
        b = MakeNode().name(name).allocatable({"cpu": "4", "memory": "8Gi", "pods": "110"})
        if rack is not None:
            b.label(RACK, rack)
        out.append(NodeInfo(b.obj()))
    return out


def _narrowed(pl: GangScheduling, pod: core_pb2.Pod) -> tuple[set[str] | None, Status]:
    result, st = pl.pre_filter(CycleState(), PodInfo(pod), _nodes())
    return (None if result is None or result.node_names is None else set(result.node_names)), st


def test_a_topology_groups_first_pod_goes_to_the_domain_chosen_for_the_whole_group() -> None:
    # Both racks hold the 3 pods and score alike: the first domain by name (test_topology.py
    # has the choices that differ).
    handle = GangHandle()
    pl = _plugin(handle, [RACKED])
    handle.add_pods([P1, P2, P3])
    assert pl.pre_enqueue(P1).is_success()
    assert _narrowed(pl, P1) == ({"n1", "n2"}, Status.success())


def test_a_topology_groups_later_pods_follow_its_scheduled_pods_domain() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [RACKED])
    handle.add_pods([P1, P2, P3])
    assert pl.reserve(CycleState(), PodInfo(P1), "n3").is_success()
    assert _narrowed(pl, P2)[0] == {"n3"}
    # Once P1 is taken back (Unreserve), the group's domain is chosen afresh.
    pl.unreserve(CycleState(), PodInfo(P1), "n3")
    assert _narrowed(pl, P2)[0] == {"n1", "n2"}


def test_a_bound_pod_fixes_the_domain_too() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [RACKED])
    handle.add_pods([pg_pod("p1", "pg1", namespace="ns1", node="n3"), P2, P3])
    assert _narrowed(pl, P2)[0] == {"n3"}


def test_no_node_with_the_key_is_unresolvable() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [pg("pg1", "ns1", 1, schedulingConstraints={"topology": [{"key": "zz"}]})])
    handle.add_pods([P1])
    result, st = _narrowed(pl, P1)
    assert result is None and st.code == UNRESOLVABLE
    assert st.message == "node(s) didn't have the pod group's topology key zz"


def test_pods_of_groups_without_a_topology_constraint_skip_pre_filter() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [GANG_PG1])
    handle.add_pods([P1, NON_GANG])
    assert _narrowed(pl, P1)[1].is_skip()
    assert _narrowed(pl, NON_GANG)[1].is_skip()
