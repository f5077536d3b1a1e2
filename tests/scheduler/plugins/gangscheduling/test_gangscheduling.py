"""GangScheduling (services/scheduler/plugins/gangscheduling), with upstream 1.35's
pkg/scheduler/framework/plugins/gangscheduling/gangscheduling_test.go as tables
(Test_isSchedulableAfterPodAdded, Test_isSchedulableAfterWorkloadAdded,
TestGangSchedulingFlow), then what kubera adds around them: the shared Permit deadline, the
whole gang timing out together through the real framework, the quorum's wake-up of gated
pods, the manager's bookkeeping, and how a profile enables the plugin."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from protos.kubera.v1 import core_pb2, schedulingv1alpha1_pb2
from services.scheduler.config import default_config
from services.scheduler.config.load import load_config
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, PodInfo, QueueingHint
from services.scheduler.framework.waiting_pods import WaitingPod
from services.scheduler.plugins.gangscheduling import (
    DEFAULT_SCHEDULING_TIMEOUT,
    NAME,
    Args,
    GangScheduling,
    new,
)
from services.scheduler.plugins.gangscheduling.plugin import (
    MSG_MIN_COUNT_NOT_PRESENT,
    MSG_WAITING_ON_PERMIT,
    hint_pod_added,
    hint_workload_added,
)
from services.scheduler.registry import in_tree_registry
from tests.builders import MakePod, workload
from tests.scheduler.plugins.coscheduling._gang import GangHandle

Q, S = QueueingHint.QUEUE, QueueingHint.SKIP


def ref_pod(
    name: str = "",
    wl: str | None = "w1",
    group: str = "pg",
    key: str = "",
    namespace: str = "default",
) -> core_pb2.Pod:
    """st.MakePod().Namespace(ns).Name(n).UID(n).WorkloadRef(...)."""
    b = MakePod().name(name).namespace(namespace).uid(name).container("c", "pause")
    if wl is not None:
        b.workload_ref(wl, group, key)
    return b.obj()


# ----------------------------------------------------------------- queueing hints

POD_ADDED = {
    "add a newPod which matches the pod's workload and pod group": (
        ref_pod("p"),
        ref_pod(),
        Q,
    ),
    "add a newPod which matches the pod's workload, pod group and replica key": (
        ref_pod("p", key="3"),
        ref_pod(key="3"),
        Q,
    ),
    "add a newPod which doesn't match the pod's namespace": (
        ref_pod("p"),
        ref_pod(namespace="foo"),
        S,
    ),
    "add a newPod which doesn't match the pod's workload name": (
        ref_pod("p"),
        ref_pod(wl="w2"),
        S,
    ),
    "add a newPod which doesn't match the pod's pod group name": (
        ref_pod("p"),
        ref_pod(group="pg2"),
        S,
    ),
    "add a newPod which doesn't match the pod's replica key": (
        ref_pod("p", key="3"),
        ref_pod(key="4"),
        S,
    ),
    # kubera's: pods without workloadRef never concern each other.
    "add a newPod without workloadRef": (ref_pod("p"), ref_pod(wl=None), S),
    "a pod without workloadRef": (ref_pod("p", wl=None), ref_pod(), S),
}


@pytest.mark.parametrize(("pod", "added", "want"), list(POD_ADDED.values()), ids=list(POD_ADDED))
def test_is_schedulable_after_pod_added(
    pod: core_pb2.Pod, added: core_pb2.Pod, want: QueueingHint
) -> None:
    assert hint_pod_added(pod, None, added) == want


WORKLOAD_ADDED = {
    "add a workload which matches the pod's workload name": (
        ref_pod("p"),
        workload("w1", pg=1),
        Q,
    ),
    "add a workload which doesn't match the pod's workload name": (
        ref_pod("p", wl="w2"),
        workload("w1", pg=1),
        S,
    ),
    "add a workload which doesn't match the pod's workload namespace": (
        ref_pod("p", namespace="ns1"),
        workload("w1", "ns2", pg=1),
        S,
    ),
}


@pytest.mark.parametrize(
    ("pod", "added", "want"), list(WORKLOAD_ADDED.values()), ids=list(WORKLOAD_ADDED)
)
def test_is_schedulable_after_workload_added(
    pod: core_pb2.Pod, added: schedulingv1alpha1_pb2.Workload, want: QueueingHint
) -> None:
    assert hint_workload_added(pod, None, added) == want


def test_events_are_a_pod_add_a_workload_add_and_a_pod_group_add_or_update() -> None:
    """And, for topology-constrained groups (kubera: see hint_room_changed), what frees
    room or changes nodes."""
    regs = new(Args(), GangHandle()).events_to_register()
    assert [(r.event.resource, r.event.action.name) for r in regs] == [
        ("Pod", "ADD"),
        ("Workload", "ADD"),
        ("PodGroup.scheduling.k8s.io", "ADD"),
        ("PodGroup.scheduling.k8s.io", "UPDATE"),
        ("Pod", "DELETE|UPDATE_POD_SCALE_DOWN"),
        ("Node", "ADD|UPDATE_NODE_ALLOCATABLE|UPDATE_NODE_LABEL|UPDATE_NODE_TAINT"),
    ]


# ------------------------------------------------------------ TestGangSchedulingFlow

GANG_WL = workload("gang-wl", "ns1", pg1=3, pg2=4)
BASIC_WL = workload("basic-wl", "ns1", pg1=None)
P1 = ref_pod("p1", "gang-wl", "pg1", namespace="ns1")
P2 = ref_pod("p2", "gang-wl", "pg1", namespace="ns1")
P3 = ref_pod("p3", "gang-wl", "pg1", namespace="ns1")
P4 = ref_pod("p4", "gang-wl", "pg2", namespace="ns1")
P5 = ref_pod("p5", "gang-wl", "pg1", key="2", namespace="ns1")
BASIC_POD = ref_pod("basic-pod", "basic-wl", "pg1", namespace="ns1")
NON_GANG = ref_pod("non-gang", wl=None, namespace="ns1")

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
FLOW = {
    "non-gang pod succeeds immediately": (NON_GANG, [], [GANG_WL, BASIC_WL], [], None, None),
    "basic policy pod succeeds immediately": (BASIC_POD, [], [GANG_WL, BASIC_WL], [], None, None),
    "gang pod fails PreEnqueue when workload is not yet created": (
        P1,
        [P2, P3, P4, P5],
        [],
        [],
        (UNRESOLVABLE, 'waiting for pods\'s workload "gang-wl" to appear in scheduling queue'),
        None,
    ),
    "gang pod fails PreEnqueue when quorum is not met": (
        P1,
        [P2, P4, P5],  # only p1 and p2 of their gang exist; minCount is 3
        [GANG_WL],
        [],
        (UNRESOLVABLE, MSG_MIN_COUNT_NOT_PRESENT),
        None,
    ),
    "gang pod passes PreEnqueue, but waits at Permit": (
        P1,
        [P2, P3, P4, P5],
        [GANG_WL],
        [P2, P4, P5],
        None,
        (Code.WAIT, MSG_WAITING_ON_PERMIT),
    ),
    "final gang pod arrives at Permit and allows all waiting pods from a gang": (
        P1,
        [P2, P3, P4, P5],
        [GANG_WL],
        [P2, P3, P4, P5],
        None,
        None,
    ),
}


def _status(st: Status) -> tuple[Code, str] | None:
    return None if st.is_success() else (st.code, st.message)


def _waiting(handle: GangHandle, pod: core_pb2.Pod, timeout: float) -> WaitingPod:
    """`pod` waits at Permit for GangScheduling (as the framework's run_permit adds it)."""
    now = handle.clock.monotonic()
    wp = WaitingPod(PodInfo(pod), "n1", timeouts={NAME: timeout}, pending={NAME: now + timeout})
    handle.fwk.waiting_pods.add(wp)
    return wp


def _plugin(
    handle: GangHandle, workloads: Sequence[schedulingv1alpha1_pb2.Workload]
) -> GangScheduling:
    plugin = new(Args(), handle)
    for wl in workloads:
        handle.informer("Workload").store[f"{wl.metadata.namespace}/{wl.metadata.name}"] = wl
    return plugin


@pytest.mark.parametrize(
    ("pod", "others", "workloads", "waiting", "want_pre_enqueue", "want_permit"),
    list(FLOW.values()),
    ids=list(FLOW),
)
def test_gang_scheduling_flow(
    pod: core_pb2.Pod,
    others: list[core_pb2.Pod],
    workloads: list[schedulingv1alpha1_pb2.Workload],
    waiting: list[core_pb2.Pod],
    want_pre_enqueue: tuple[Code, str] | None,
    want_permit: tuple[Code, str] | None,
) -> None:
    handle = GangHandle()
    pl = _plugin(handle, workloads)
    handle.add_pods([*others, pod])
    state = CycleState()

    got = pl.pre_enqueue(pod)
    assert _status(got) == want_pre_enqueue
    if not got.is_success():
        return
    # Other pods have already reached Permit and wait there.
    held: dict[str, WaitingPod] = {}
    for p in waiting:
        assert pl.reserve(state, PodInfo(p), "some-node").is_success()
        st, timeout = pl.permit(state, PodInfo(p), "some-node")
        assert st.code == Code.WAIT, p.metadata.name
        held[p.metadata.uid] = _waiting(handle, p, timeout)
    assert pl.reserve(state, PodInfo(pod), "some-node").is_success()
    handle.activated.clear()

    st, _ = pl.permit(state, PodInfo(pod), "some-node")
    assert _status(st) == want_permit
    if st.code == Code.WAIT:
        # It wakes the gang's unscheduled pods (p3) for them to catch up.
        assert handle.activated == [["p3"]]
        pl.unreserve(state, PodInfo(pod), "some-node")
        return
    if pod.spec.HasField("workload_ref") and held:
        # The quorum is met: every waiting pod of p1's gang is allowed; other gangs wait.
        allowed = sorted(uid for uid, wp in held.items() if wp.done)
        assert allowed == ["p2", "p3"]
        assert all(held[u].result == Status.success() for u in allowed)


# ----------------------------------------------------------------- kubera's cases


def test_a_pod_group_the_workload_does_not_name_is_gated() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [GANG_WL])
    pod = ref_pod("x", "gang-wl", "other", namespace="ns1")
    handle.add_pods([pod])
    st = pl.pre_enqueue(pod)
    assert _status(st) == (
        UNRESOLVABLE,
        'pod group "other" doesn\'t exist for a workload "gang-wl"',
    )


def test_permit_without_the_workload_is_an_error() -> None:
    pl = _plugin(GangHandle(), [])
    st, _ = pl.permit(CycleState(), PodInfo(P1), "n1")
    assert st.code == Code.ERROR


def test_replica_keys_are_separate_gangs() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [workload("w", "ns1", pg=2)])
    a0, b0 = ref_pod("a0", "w", "pg", "0", "ns1"), ref_pod("b0", "w", "pg", "0", "ns1")
    a1 = ref_pod("a1", "w", "pg", "1", "ns1")
    handle.add_pods([a0, a1])
    assert not pl.pre_enqueue(a0).is_success()
    assert not pl.pre_enqueue(a1).is_success()
    handle.add_pods([b0])
    assert pl.pre_enqueue(a0).is_success()
    assert not pl.pre_enqueue(a1).is_success()


def test_a_pod_joining_a_gang_with_its_quorum_wakes_the_unscheduled_pods() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [workload("w", "ns1", pg=3)])
    pods = [ref_pod(f"p{i}", "w", "pg", namespace="ns1") for i in range(4)]
    handle.add_pods(pods[:2])
    assert handle.activated == []  # below minCount: nothing to wake
    handle.add_pods(pods[2:3])
    assert handle.activated == [["p0", "p1", "p2"]]
    # A fourth pod wakes the pods still unscheduled, not the one placed meanwhile.
    pl.reserve(CycleState(), PodInfo(pods[0]), "n1")
    handle.add_pods(pods[3:])
    assert handle.activated[-1] == ["p1", "p2", "p3"]


def test_bound_pods_count_towards_the_quorum_at_permit() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [workload("w", "ns1", pg=2)])
    bound = MakePod().name("b").namespace("ns1").uid("b").workload_ref("w", "pg").node("n1").obj()
    pod = ref_pod("p", "w", "pg", namespace="ns1")
    handle.add_pods([bound, pod])
    assert pl.reserve(CycleState(), PodInfo(pod), "n1").is_success()
    st, _ = pl.permit(CycleState(), PodInfo(pod), "n1")
    assert st.is_success()


def test_a_gangs_attempt_shares_one_five_minute_deadline() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [workload("w", "ns1", pg=3)])
    a, b = ref_pod("a", "w", "pg", namespace="ns1"), ref_pod("b", "w", "pg", namespace="ns1")
    handle.add_pods([a, b, ref_pod("c", "w", "pg", namespace="ns1")])
    pl.reserve(CycleState(), PodInfo(a), "n1")
    _, first = pl.permit(CycleState(), PodInfo(a), "n1")
    assert first == DEFAULT_SCHEDULING_TIMEOUT == 300.0
    handle.clock.advance(100)
    pl.reserve(CycleState(), PodInfo(b), "n1")
    _, second = pl.permit(CycleState(), PodInfo(b), "n1")
    assert second == pytest.approx(200.0)
    # Once the deadline passed, the next attempt gets a fresh five minutes.
    handle.clock.advance(250)
    _, third = pl.permit(CycleState(), PodInfo(b), "n1")
    assert third == 300.0


def _profile_with_gang() -> Framework:
    cfg = load_config(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "profiles:\n  - plugins:\n      multiPoint:\n        enabled: [{name: GangScheduling}]\n"
    )
    return cfg.profiles[0]  # type: ignore[no-any-return]


def _gang_of_three() -> tuple[GangHandle, Framework, list[core_pb2.Pod]]:
    """A framework of a profile with GangScheduling, the Workload w (pod group pg, a gang
    of minCount 3) and its three pods a, b, c known to the scheduler."""
    handle = GangHandle()
    fwk = Framework(
        _profile_with_gang(),
        in_tree_registry(),
        handle=handle,  # type: ignore[arg-type]
        waiting_pods=handle.fwk.waiting_pods,
    )
    handle.informer("Workload").store["ns1/w"] = workload("w", "ns1", pg=3)
    pods = [ref_pod(n, "w", "pg", namespace="ns1") for n in ("a", "b", "c")]
    handle.add_pods(pods)
    return handle, fwk, pods


async def test_a_gang_short_of_its_quorum_times_out_whole_and_nothing_binds() -> None:
    """Two of three pods reach Permit; at the shared deadline both are rejected by the
    framework, Unreserve takes them back, and the group is again unscheduled."""
    handle, fwk, pods = _gang_of_three()
    pl = fwk.plugins[NAME]
    infos = [PodInfo(p) for p in pods[:2]]
    for info in infos:
        state = CycleState()
        fwk.run_pre_filter(state, info, [])  # the cycle's state Reserve reads (VolumeBinding's)
        assert fwk.run_reserve(state, info, "n1").is_success()
        assert fwk.run_permit(state, info, "n1").code == Code.WAIT
        handle.clock.advance(60)
    handle.clock.advance(DEFAULT_SCHEDULING_TIMEOUT - 121)  # one second before the deadline
    assert fwk.expire_waiting_pods() == []
    handle.clock.advance(1)
    assert sorted(fwk.expire_waiting_pods()) == ["a", "b"]
    for info in infos:
        st = await fwk.wait_on_permit(info)
        assert st.code == Code.UNSCHEDULABLE
        assert "rejected due to timeout after waiting" in st.message
        assert st.plugin == NAME
        fwk.run_unreserve(CycleState(), info, "n1")
    group = pl.manager.pod_group_info(pods[0])
    assert group.assumed == set()
    assert group.unscheduled == {"a", "b", "c"}


async def test_the_pod_completing_the_quorum_lets_the_whole_gang_bind() -> None:
    _, fwk, pods = _gang_of_three()
    infos = [PodInfo(p) for p in pods]
    codes = []
    for info in infos:
        state = CycleState()
        fwk.run_pre_filter(state, info, [])  # the cycle's state Reserve reads (VolumeBinding's)
        assert fwk.run_reserve(state, info, "n1").is_success()
        codes.append(fwk.run_permit(state, info, "n1").code)
    assert codes == [Code.WAIT, Code.WAIT, Code.SUCCESS]
    for info in infos[:2]:
        assert (await fwk.wait_on_permit(info)).is_success()


# ------------------------------------------------------------------------ enabling


def test_the_default_profile_has_no_gang_scheduling() -> None:
    profile = default_config().profiles[0]
    for point in ("preEnqueue", "preFilter", "reserve", "permit"):
        assert NAME not in profile.names(point), point


def test_a_profile_enables_it_through_multipoint_at_its_four_points() -> None:
    profile = _profile_with_gang()
    for point in ("preEnqueue", "preFilter", "reserve", "permit"):
        assert NAME in profile.names(point), point
    # Coscheduling stays as it was: not in a profile that does not enable it.
    assert profile.names("permit") == [NAME]


# ------------------------------------------------------------------ WorkloadManager


def test_the_manager_moves_a_pod_from_assumed_to_assigned_when_it_binds_and_drops_it() -> None:
    handle = GangHandle()
    pl = _plugin(handle, [])
    pod = ref_pod("p", "w", "pg", namespace="ns1")
    handle.add_pods([pod])
    info = pl.manager.pod_group_info(pod)
    assert (info.unscheduled, info.assumed, info.assigned) == ({"p"}, set(), set())
    pl.reserve(CycleState(), PodInfo(pod), "n1")
    assert (info.unscheduled, info.assumed) == (set(), {"p"})
    bound = core_pb2.Pod()
    bound.CopyFrom(pod)
    bound.spec.node_name = "n1"
    handle.update_pod(pod, bound)
    assert (info.unscheduled, info.assumed, info.assigned) == (set(), set(), {"p"})
    for h in handle.pods.handlers:
        assert h.on_delete is not None
        h.on_delete(bound)
    assert pl.manager.get(("ns1", "w", "pg", "")) is None  # type: ignore[arg-type]
