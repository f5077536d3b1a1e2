"""The framework runtime with tiny fake plugins: order at each extension point, Skip, the first
Filter rejection, batch filtering, score weights and normalisation, Reserve/Unreserve order,
Permit wait/allow/reject/timeout on a FakeClock, Bind skip chaining, events and metrics."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.clock import Clock, FakeClock
from services.scheduler.config import EnabledPlugin, Profile
from services.scheduler.framework.interface import (
    NodeScore,
    PluginSpec,
    PostFilterResult,
    PreFilterResult,
)
from services.scheduler.framework.runtime import ALL_EVENTS, MAX_PERMIT_TIMEOUT, Framework
from services.scheduler.framework.status import Code, FrameworkError, Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueuedPodInfo,
)
from services.scheduler.framework.waiting_pods import WaitingPods, go_duration
from services.scheduler.plugins import defaultbinder
from tests.builders import MakeNode, MakePod

# ======================================================================= fakes


class FakeHandle:
    def __init__(self) -> None:
        self.fake_clock = FakeClock()
        self.clock: Clock = self.fake_clock
        self.bound: list[tuple[str, str]] = []
        self.bind_error: Exception | None = None

    def snapshot(self) -> Any:
        raise NotImplementedError

    async def bind(self, pod: core_pb2.Pod, node_name: str) -> None:
        if self.bind_error is not None:
            raise self.bind_error
        self.bound.append((pod.metadata.name, node_name))

    def allow_waiting_pod(self, uid: str, plugin: str) -> None: ...

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None: ...


class Sort:
    name = "Sort"

    def less(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        return a.timestamp < b.timestamp


class Binder:
    def __init__(self, name: str, status: Status, calls: list[str]) -> None:
        self.name, self.status, self.calls = name, status, calls

    async def bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        self.calls.append(self.name)
        return self.status


class PreFilter:
    def __init__(
        self,
        name: str,
        calls: list[str],
        status: Status | None = None,
        nodes: set[str] | None = None,
    ) -> None:
        self.name, self.calls, self.status = name, calls, status or Status.success()
        self.nodes = frozenset(nodes) if nodes is not None else None

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        self.calls.append(f"{self.name}.pre_filter")
        return PreFilterResult(self.nodes), self.status


class Filter:
    """Rejects the nodes in `reject` (node -> status); records what it was asked."""

    def __init__(
        self, name: str, calls: list[str], reject: Mapping[str, Status] | None = None
    ) -> None:
        self.name, self.calls, self.reject = name, calls, dict(reject or {})

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        self.calls.append(f"{self.name}:{node_info.name}")
        return self.reject.get(node_info.name, Status.success())


class PreFilterAndFilter(PreFilter):
    def __init__(self, name: str, calls: list[str], status: Status) -> None:
        super().__init__(name, calls, status)

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        self.calls.append(f"{self.name}:{node_info.name}")
        return Status.unschedulable("should have been skipped")


class BatchFilter(Filter):
    def filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]:
        self.calls.append(f"{self.name}.batch:{','.join(n.name for n in nodes)}")
        return [self.reject.get(n.name, Status.success()) for n in nodes]


class Scorer:
    def __init__(self, name: str, scores: Mapping[str, int]) -> None:
        self.name, self.scores = name, dict(scores)

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        return self.scores[node_info.name], Status.success()


class NormalizingScorer(Scorer):
    """Raw scores rescaled so the highest becomes 100 (the seed's BlinkingLightScorer)."""

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        highest = max(s.score for s in scores)
        for s in scores:
            s.score = s.score * 100 // highest
        return Status.success()


class BatchScorer(Scorer):
    batch_calls = 0

    def score_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[list[int], Status]:
        self.batch_calls += 1
        return [self.scores[n.name] for n in nodes], Status.success()


class PreScoreSkip:
    """PreScore says Skip, so its Score must not run."""

    def __init__(self, name: str) -> None:
        self.name = name

    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        return Status.skip()

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        raise AssertionError("skipped at PreScore")


class Reserver:
    def __init__(self, name: str, calls: list[str], status: Status | None = None) -> None:
        self.name, self.calls, self.status = name, calls, status or Status.success()

    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        self.calls.append(f"reserve:{self.name}")
        return self.status

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        self.calls.append(f"unreserve:{self.name}")


class Permitter:
    def __init__(self, name: str, status: Status, timeout: float = 0.0) -> None:
        self.name, self.status, self.timeout = name, status, timeout

    def permit(self, state: CycleState, pod_info: PodInfo, node_name: str) -> tuple[Status, float]:
        return self.status, self.timeout


class PreBinder:
    def __init__(self, name: str, status: Status) -> None:
        self.name, self.status = name, status

    async def pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        return self.status


class PostFilter:
    def __init__(self, name: str, status: Status, nominated: str = "") -> None:
        self.name, self.status, self.nominated = name, status, nominated
        self.called = False

    async def post_filter(
        self, state: CycleState, pod_info: PodInfo, statuses: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status]:
        self.called = True
        return PostFilterResult(self.nominated), self.status


class WithEvents(Filter):
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent("Node", ActionType.ADD))]


class Exploding(Filter):
    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        raise RuntimeError("boom")


def build(
    points: Mapping[str, Sequence[Any]],
    *,
    handle: FakeHandle | None = None,
    metrics: Any = None,
) -> Framework:
    """A framework over fake plugin instances: points maps an extension point to plugins or
    (plugin, weight) pairs; a queue sort and a binder are added when not given."""
    points = dict(points)
    points.setdefault("queueSort", [Sort()])
    points.setdefault("bind", [Binder("Bind", Status.success(), [])])
    registry: dict[str, PluginSpec] = {}
    plugins: dict[str, list[EnabledPlugin]] = {}
    for point, items in points.items():
        entries = []
        for item in items:
            plugin, weight = item if isinstance(item, tuple) else (item, 1)
            registry[plugin.name] = PluginSpec(plugin.name, lambda a, h, p=plugin: p)
            entries.append(EnabledPlugin(plugin.name, weight if point == "score" else 0))
        plugins[point] = entries
    profile = Profile(scheduler_name="test", plugins=plugins)
    return Framework(profile, registry, handle=handle or FakeHandle(), metrics=metrics)


def pod(name: str = "p", uid: str = "uid-p") -> PodInfo:
    return PodInfo(MakePod().name(name).namespace("default").uid(uid).obj())


NODES = [NodeInfo(MakeNode().name(n).obj()) for n in ("n1", "n2", "n3")]


# ===================================================================== PreFilter


def test_pre_filter_skip_drops_that_plugins_filter_for_the_cycle() -> None:
    calls: list[str] = []
    skipper = PreFilterAndFilter("Skipper", calls, Status.skip())
    fwk = build({"preFilter": [skipper], "filter": [skipper, Filter("F", calls)]})
    state = CycleState()
    result, st = fwk.run_pre_filter(state, pod(), NODES)
    assert st.is_success() and result is None
    assert state.skip_filter_plugins == {"Skipper"}
    assert fwk.run_filter(state, pod(), NODES[0]).is_success()
    assert [s.code for s in fwk.run_filter_batch(state, pod(), NODES)] == [Code.SUCCESS] * 3
    assert not any(c.startswith("Skipper:") for c in calls)


def test_pre_filter_unschedulable_lets_the_rest_run_unresolvable_stops() -> None:
    calls: list[str] = []
    fwk = build(
        {
            "preFilter": [
                PreFilter("A", calls, Status.unschedulable("a says no")),
                PreFilter("B", calls),
                PreFilter("C", calls, Status.unresolvable("c says never")),
                PreFilter("D", calls),
            ]
        }
    )
    _, st = fwk.run_pre_filter(CycleState(), pod(), NODES)
    assert (st.code, st.plugin, st.message) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "C",
        "c says never",
    )
    assert calls == ["A.pre_filter", "B.pre_filter", "C.pre_filter"]


def test_pre_filter_unschedulable_is_returned_after_all_ran() -> None:
    calls: list[str] = []
    fwk = build(
        {"preFilter": [PreFilter("A", calls, Status.unschedulable("no")), PreFilter("B", calls)]}
    )
    _, st = fwk.run_pre_filter(CycleState(), pod(), NODES)
    assert (st.code, st.plugin) == (Code.UNSCHEDULABLE, "A")
    assert calls == ["A.pre_filter", "B.pre_filter"]


def test_pre_filter_results_intersect_and_empty_is_unresolvable() -> None:
    calls: list[str] = []
    fwk = build({"preFilter": [PreFilter("A", calls, nodes={"n1", "n2"}), PreFilter("B", calls)]})
    result, st = fwk.run_pre_filter(CycleState(), pod(), NODES)
    assert st.is_success() and result == PreFilterResult(frozenset({"n1", "n2"}))

    fwk = build(
        {
            "preFilter": [
                PreFilter("A", calls, nodes={"n1"}),
                PreFilter("B", calls, nodes={"n2"}),
            ]
        }
    )
    result, st = fwk.run_pre_filter(CycleState(), pod(), NODES)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message == "node(s) didn't satisfy plugin(s) [A B] simultaneously"


def test_pre_filter_error_names_the_plugin() -> None:
    fwk = build({"preFilter": [PreFilter("A", [], Status.as_error(KeyError("state")))]})
    _, st = fwk.run_pre_filter(CycleState(), pod(), NODES)
    assert (st.code, st.plugin) == (Code.ERROR, "A")
    assert "running PreFilter plugin 'A'" in st.message


# ======================================================================== Filter


def test_filter_runs_in_order_and_the_first_rejection_wins() -> None:
    calls: list[str] = []
    fwk = build(
        {
            "filter": [
                Filter("A", calls),
                Filter("B", calls, {"n1": Status.unschedulable("b rejects n1")}),
                Filter(
                    "C", calls, {"n1": Status.unresolvable("c"), "n2": Status.unresolvable("c")}
                ),
            ]
        }
    )
    st = fwk.run_filter(CycleState(), pod(), NODES[0])
    assert (st.code, st.plugin, st.message) == (Code.UNSCHEDULABLE, "B", "b rejects n1")
    assert calls == ["A:n1", "B:n1"]
    st2 = fwk.run_filter(CycleState(), pod(), NODES[1])
    assert (st2.code, st2.plugin) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "C")


@pytest.mark.parametrize(
    "bad",
    [Status.skip(), Status.wait(), Status.as_error(RuntimeError("broken"))],
    ids=["skip", "wait", "error"],
)
def test_filter_status_that_is_not_a_rejection_becomes_an_error(bad: Status) -> None:
    fwk = build({"filter": [Filter("F", [], {"n1": bad})]})
    st = fwk.run_filter(CycleState(), pod(), NODES[0])
    assert (st.code, st.plugin) == (Code.ERROR, "F")


def test_a_plugin_that_raises_is_an_error_of_that_plugin() -> None:
    fwk = build({"filter": [Exploding("Boom", [])]})
    st = fwk.run_filter(CycleState(), pod(), NODES[0])
    assert (st.code, st.plugin, st.message) == (Code.ERROR, "Boom", "boom")
    statuses = fwk.run_filter_batch(CycleState(), pod(), NODES)
    assert {(s.code, s.plugin) for s in statuses} == {(Code.ERROR, "Boom")}


def test_filter_batch_uses_filter_batch_and_later_plugins_see_only_feasible_nodes() -> None:
    calls: list[str] = []
    reject = {"n2": Status.unschedulable("too small")}
    fwk = build(
        {
            "filter": [
                BatchFilter("Batch", calls, reject),
                Filter("After", calls, {"n3": Status.unresolvable("tainted")}),
            ]
        }
    )
    statuses = fwk.run_filter_batch(CycleState(), pod(), NODES)
    assert calls == ["Batch.batch:n1,n2,n3", "After:n1", "After:n3"]
    assert [(s.code, s.plugin) for s in statuses] == [
        (Code.SUCCESS, ""),
        (Code.UNSCHEDULABLE, "Batch"),
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "After"),
    ]
    # Node by node, run_filter agrees.
    for ni, st in zip(NODES, statuses, strict=True):
        assert fwk.run_filter(CycleState(), pod(), ni) == st


def test_filter_batch_with_no_nodes() -> None:
    assert build({"filter": [Filter("F", [])]}).run_filter_batch(CycleState(), pod(), []) == []


# ==================================================================== PostFilter


async def test_post_filter_stops_at_the_first_success() -> None:
    a = PostFilter("A", Status.unschedulable("a cannot help"))
    b = PostFilter("B", Status.success(), nominated="n2")
    c = PostFilter("C", Status.success())
    fwk = build({"postFilter": [a, b, c]})
    result, st = await fwk.run_post_filter(CycleState(), pod(), {})
    assert st.is_success() and result == PostFilterResult("n2")
    assert (a.called, b.called, c.called) == (True, True, False)


async def test_post_filter_all_unschedulable_collects_reasons_first_plugin_named() -> None:
    fwk = build(
        {
            "postFilter": [
                PostFilter("A", Status.unschedulable("a: no victims")),
                PostFilter("B", Status.unschedulable("b: no victims")),
            ]
        }
    )
    _, st = await fwk.run_post_filter(CycleState(), pod(), {})
    assert (st.code, st.plugin, st.reasons) == (
        Code.UNSCHEDULABLE,
        "A",
        ("a: no victims", "b: no victims"),
    )


# ========================================================================= Score


def test_scores_are_normalised_then_weighted_then_summed() -> None:
    fwk = build(
        {
            "score": [
                (NormalizingScorer("Lights", {"n1": 1, "n2": 2, "n3": 4}), 2),
                (Scorer("Flat", {"n1": 10, "n2": 20, "n3": 30}), 1),
            ]
        }
    )
    totals, by_plugin = fwk.run_score(CycleState(), pod(), NODES)
    assert by_plugin == {
        "Lights": {"n1": 50, "n2": 100, "n3": 200},
        "Flat": {"n1": 10, "n2": 20, "n3": 30},
    }
    assert totals == {"n1": 60, "n2": 120, "n3": 230}


def test_a_score_outside_0_100_after_normalising_is_an_error() -> None:
    fwk = build({"score": [Scorer("Wild", {"n1": 5, "n2": 101, "n3": 0})]})
    with pytest.raises(FrameworkError) as info:
        fwk.run_score(CycleState(), pod(), NODES)
    assert info.value.status.plugin == "Wild"
    assert "invalid score 101" in str(info.value)


def test_pre_score_skip_leaves_the_plugin_out_of_scoring() -> None:
    skipper = PreScoreSkip("Skipper")
    fwk = build(
        {
            "preScore": [skipper],
            "score": [skipper, Scorer("S", {"n1": 1, "n2": 2, "n3": 3})],
        }
    )
    state = CycleState()
    assert fwk.run_pre_score(state, pod(), NODES).is_success()
    assert state.skip_score_plugins == {"Skipper"}
    totals, by_plugin = fwk.run_score(state, pod(), NODES)
    assert list(by_plugin) == ["S"]
    assert totals == {"n1": 1, "n2": 2, "n3": 3}


def test_score_batch_is_used_when_a_plugin_has_it() -> None:
    scorer = BatchScorer("Batch", {"n1": 7, "n2": 8, "n3": 9})
    fwk = build({"score": [(scorer, 3)]})
    totals, _ = fwk.run_score(CycleState(), pod(), NODES)
    assert totals == {"n1": 21, "n2": 24, "n3": 27}
    assert scorer.batch_calls == 1


# ============================================================== Reserve / Unreserve


def test_reserve_in_order_unreserve_in_reverse_order() -> None:
    calls: list[str] = []
    fwk = build({"reserve": [Reserver("A", calls), Reserver("B", calls), Reserver("C", calls)]})
    assert fwk.run_reserve(CycleState(), pod(), "n1").is_success()
    fwk.run_unreserve(CycleState(), pod(), "n1")
    assert calls == [
        "reserve:A",
        "reserve:B",
        "reserve:C",
        "unreserve:C",
        "unreserve:B",
        "unreserve:A",
    ]


def test_reserve_stops_at_the_first_failure_and_names_it() -> None:
    calls: list[str] = []
    fwk = build(
        {
            "reserve": [
                Reserver("A", calls),
                Reserver("B", calls, Status.unschedulable("no room")),
                Reserver("C", calls),
            ]
        }
    )
    st = fwk.run_reserve(CycleState(), pod(), "n1")
    assert (st.code, st.plugin, st.message) == (Code.UNSCHEDULABLE, "B", "no room")
    assert calls == ["reserve:A", "reserve:B"]
    fwk.run_unreserve(CycleState(), pod(), "n1")
    assert calls[2:] == ["unreserve:C", "unreserve:B", "unreserve:A"]


# ======================================================================== Permit


async def test_permit_wait_then_every_waiting_plugin_allows() -> None:
    fwk = build(
        {
            "permit": [
                Permitter("Gang", Status.wait(), 30),
                Permitter("Quota", Status.wait(), 10),
                Permitter("Ok", Status.success()),
            ]
        }
    )
    pi = pod()
    st = fwk.run_permit(CycleState(), pi, "n1")
    assert st.code == Code.WAIT
    wp = fwk.waiting_pod(pi.uid)
    assert wp is not None
    assert fwk.allow_waiting_pod(pi.uid, "Gang")
    assert not wp.done  # Quota still waits
    assert fwk.allow_waiting_pod(pi.uid, "Quota")
    assert (await fwk.wait_on_permit(pi)).is_success()
    assert fwk.waiting_pod(pi.uid) is None


async def test_permit_wait_rejected_from_elsewhere() -> None:
    fwk = build({"permit": [Permitter("Gang", Status.wait(), 30)]})
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    assert fwk.reject_waiting_pod(pi.uid, "Gang", "gang incomplete")
    st = await fwk.wait_on_permit(pi)
    assert (st.code, st.plugin, st.message) == (Code.UNSCHEDULABLE, "Gang", "gang incomplete")


async def test_permit_reject_wakes_a_binding_cycle_already_waiting() -> None:
    fwk = build({"permit": [Permitter("Gang", Status.wait(), 30)]})
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    waiter = asyncio.create_task(fwk.wait_on_permit(pi))
    await asyncio.sleep(0)  # the binding cycle is now blocked in wait_on_permit
    fwk.reject_waiting_pod(pi.uid, "", "pod deleted")
    st = await waiter
    assert (st.code, st.message) == (Code.UNSCHEDULABLE, "pod deleted")


async def test_permit_timeout_on_an_explicitly_driven_clock() -> None:
    handle = FakeHandle()
    fwk = build({"permit": [Permitter("Gang", Status.wait(), 10)]}, handle=handle)
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    handle.fake_clock.advance(9.9)
    assert fwk.expire_waiting_pods() == []
    handle.fake_clock.advance(0.1)
    assert fwk.expire_waiting_pods() == [pi.uid]
    st = await fwk.wait_on_permit(pi)
    assert (st.code, st.plugin, st.message) == (
        Code.UNSCHEDULABLE,
        "Gang",
        "rejected due to timeout after waiting 10s at plugin Gang",
    )


async def test_wait_on_permit_times_out_by_the_injected_clock_alone() -> None:
    handle = FakeHandle()
    fwk = build(
        {"permit": [Permitter("Slow", Status.wait(), 20), Permitter("Fast", Status.wait(), 1.5)]},
        handle=handle,
    )
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    start = handle.fake_clock.monotonic()
    st = await fwk.wait_on_permit(pi)
    assert handle.fake_clock.monotonic() - start == pytest.approx(1.5)
    assert (st.plugin, st.message) == (
        "Fast",
        "rejected due to timeout after waiting 1.5s at plugin Fast",
    )


def test_permit_timeout_is_capped_at_fifteen_minutes() -> None:
    handle = FakeHandle()
    fwk = build({"permit": [Permitter("Gang", Status.wait(), 3600)]}, handle=handle)
    pi = pod()
    fwk.run_permit(CycleState(), pi, "n1")
    handle.fake_clock.advance(MAX_PERMIT_TIMEOUT)
    assert fwk.expire_waiting_pods() == [pi.uid]
    wp = fwk.waiting_pod(pi.uid)
    assert wp is not None and wp.result is not None
    assert wp.result.message.endswith("after waiting 15m0s at plugin Gang")


def test_permit_rejection_stops_and_nothing_waits() -> None:
    fwk = build(
        {
            "permit": [
                Permitter("Wait", Status.wait(), 10),
                Permitter("No", Status.unschedulable("denied")),
            ]
        }
    )
    pi = pod()
    st = fwk.run_permit(CycleState(), pi, "n1")
    assert (st.code, st.plugin) == (Code.UNSCHEDULABLE, "No")
    assert fwk.waiting_pod(pi.uid) is None


async def test_wait_on_permit_for_a_pod_that_does_not_wait_is_success() -> None:
    fwk = build({"permit": [Permitter("Ok", Status.success())]})
    assert fwk.run_permit(CycleState(), pod(), "n1").is_success()
    assert (await fwk.wait_on_permit(pod())).is_success()
    assert not fwk.allow_waiting_pod("nobody", "Ok")
    assert not fwk.reject_waiting_pod("nobody", "Ok", "x")


def test_waiting_pods_may_be_shared_across_profiles() -> None:
    shared = WaitingPods()
    registry = {"Sort": PluginSpec("Sort", lambda a, h: Sort())}
    plugins: dict[str, list[EnabledPlugin]] = {"queueSort": [EnabledPlugin("Sort")]}
    binder = Binder("Bind", Status.success(), [])
    registry["Bind"] = PluginSpec("Bind", lambda a, h: binder)
    plugins["bind"] = [EnabledPlugin("Bind")]
    registry["Gang"] = PluginSpec("Gang", lambda a, h: Permitter("Gang", Status.wait(), 5))
    plugins["permit"] = [EnabledPlugin("Gang")]
    a = Framework(Profile("a", plugins), registry, handle=FakeHandle(), waiting_pods=shared)
    b = Framework(Profile("b", plugins), registry, handle=FakeHandle(), waiting_pods=shared)
    pi = pod()
    a.run_permit(CycleState(), pi, "n1")
    assert b.allow_waiting_pod(pi.uid, "Gang")
    wp = shared.get(pi.uid)
    assert wp is not None and wp.result == Status.success()


# ============================================================== PreBind / Bind


async def test_pre_bind_rejection_names_the_plugin() -> None:
    fwk = build(
        {
            "preBind": [
                PreBinder("Ok", Status.success()),
                PreBinder("Volumes", Status.unschedulable("volume not ready")),
            ]
        }
    )
    st = await fwk.run_pre_bind(CycleState(), pod(), "n1")
    assert (st.code, st.plugin) == (Code.UNSCHEDULABLE, "Volumes")


async def test_bind_skip_hands_over_to_the_next_bind_plugin() -> None:
    calls: list[str] = []
    fwk = build(
        {
            "bind": [
                Binder("Elsewhere", Status.skip(), calls),
                Binder("Here", Status.success(), calls),
                Binder("Never", Status.success(), calls),
            ]
        }
    )
    st = await fwk.run_bind(CycleState(), pod(), "n1")
    assert (st.code, st.plugin) == (Code.SUCCESS, "Here")
    assert calls == ["Elsewhere", "Here"]


async def test_bind_all_skip_is_skip() -> None:
    calls: list[str] = []
    fwk = build({"bind": [Binder("A", Status.skip(), calls), Binder("B", Status.skip(), calls)]})
    st = await fwk.run_bind(CycleState(), pod(), "n1")
    assert st.is_skip()
    assert calls == ["A", "B"]


async def test_bind_error_stops_and_is_wrapped() -> None:
    calls: list[str] = []
    fwk = build(
        {
            "bind": [
                Binder("Broken", Status.as_error(OSError("apiserver down")), calls),
                Binder("Never", Status.success(), calls),
            ]
        }
    )
    st = await fwk.run_bind(CycleState(), pod(), "n1")
    assert (st.code, st.plugin) == (Code.ERROR, "Broken")
    assert isinstance(st.error, OSError)
    assert calls == ["Broken"]


async def test_default_binder_binds_through_the_handle() -> None:
    handle = FakeHandle()
    binder = defaultbinder.new(defaultbinder.Args(), handle)
    assert binder.name == "DefaultBinder"
    st = await binder.bind(CycleState(), pod("web-0"), "n2")
    assert st.is_success()
    assert handle.bound == [("web-0", "n2")]


async def test_default_binder_turns_a_failed_call_into_an_error_status() -> None:
    handle = FakeHandle()
    handle.bind_error = ConnectionError("apiserver unavailable")
    st = await defaultbinder.new(None, handle).bind(CycleState(), pod(), "n1")
    assert (st.code, st.plugin) == (Code.ERROR, "DefaultBinder")
    assert isinstance(st.error, ConnectionError)


# ============================================================ events, build, metrics


def test_events_come_from_plugins_that_can_reject_with_a_wildcard_default() -> None:
    with_events = WithEvents("Evented", [])
    fwk = build(
        {
            "filter": [with_events, Filter("Plain", [])],
            "score": [Scorer("ScoreOnly", {})],
        }
    )
    events = fwk.events_to_register()
    assert set(events) == {"Evented", "Plain"}
    assert events["Evented"] == with_events.events_to_register()
    assert events["Plain"] == ALL_EVENTS


def test_introspection_lists_plugins_per_point_in_order() -> None:
    fwk = build({"filter": [Filter("A", []), Filter("B", [])]})
    assert fwk.list_plugins()["filter"] == ["A", "B"]
    assert fwk.profile_name == "test"
    assert fwk.pre_enqueue_plugins == []
    qpi_a = QueuedPodInfo(pod("a", "ua"), timestamp=1.0)
    qpi_b = QueuedPodInfo(pod("b", "ub"), timestamp=2.0)
    assert fwk.queue_sort_less(qpi_a, qpi_b) and not fwk.queue_sort_less(qpi_b, qpi_a)


@pytest.mark.parametrize(
    ("points", "message"),
    [
        pytest.param({"filter": [Sort()]}, "does not extend filter", id="wrong-point"),
        pytest.param({"bind": []}, "at least one bind plugin", id="no-binder"),
        pytest.param({"queueSort": []}, "only one queue sort plugin", id="no-queue-sort"),
    ],
)
def test_a_profile_that_cannot_run_is_refused_at_construction(
    points: dict[str, list[Any]], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build(points)


def test_unregistered_and_misnamed_plugins_are_refused() -> None:
    profile = Profile("x", {"queueSort": [EnabledPlugin("Nope")]})
    with pytest.raises(ValueError, match="'Nope' is not registered"):
        Framework(profile, {}, handle=FakeHandle())
    registry = {"Nope": PluginSpec("Nope", lambda a, h: Sort())}
    with pytest.raises(ValueError, match="calls itself 'Sort'"):
        Framework(profile, registry, handle=FakeHandle())


def test_args_default_to_the_args_type_and_dicts_are_typed() -> None:
    seen: list[Any] = []

    class Args:
        def __init__(self, level: int = 1) -> None:
            self.level = level

        @classmethod
        def from_dict(cls, d: Mapping[str, Any]) -> Args:
            return cls(d["level"])

    def factory(args: Any, handle: Any) -> Sort:
        seen.append(args)
        return Sort()

    registry = {
        "Sort": PluginSpec("Sort", factory, Args),
        "Bind": PluginSpec("Bind", lambda a, h: Binder("Bind", Status.success(), [])),
    }
    plugins = {"queueSort": [EnabledPlugin("Sort")], "bind": [EnabledPlugin("Bind")]}
    Framework(Profile("a", plugins), registry, handle=FakeHandle())
    Framework(Profile("b", plugins, {"Sort": {"level": 5}}), registry, handle=FakeHandle())
    assert [type(a).__name__ for a in seen] == ["Args", "Args"]
    assert [a.level for a in seen] == [1, 5]


def test_extension_point_durations_are_recorded_with_status_and_profile() -> None:
    metrics_mod = pytest.importorskip("services.scheduler.metrics")
    metrics = metrics_mod.SchedulerMetrics()
    fwk = build(
        {"reserve": [Reserver("A", [], Status.unschedulable("full"))]},
        metrics=metrics,
    )
    fwk.run_reserve(CycleState(), pod(), "n1")
    fwk.run_unreserve(CycleState(), pod(), "n1")
    fwk.run_filter_batch(CycleState(), pod(), NODES)
    name = "scheduler_framework_extension_point_duration_seconds_count"
    sample = metrics.registry.get_sample_value
    assert (
        sample(name, {"extension_point": "Reserve", "status": "Unschedulable", "profile": "test"})
        == 1
    )
    assert (
        sample(name, {"extension_point": "Unreserve", "status": "Success", "profile": "test"}) == 1
    )
    assert sample(name, {"extension_point": "Filter", "status": "Success", "profile": "test"}) == 1


def test_metrics_are_optional() -> None:
    fwk = build({"reserve": [Reserver("A", [])]}, metrics=object())
    assert fwk.run_reserve(CycleState(), pod(), "n1").is_success()


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (10, "10s"),
        (1.5, "1.5s"),
        (0.5, "500ms"),
        (0.0015, "1.5ms"),
        (90, "1m30s"),
        (900, "15m0s"),
        (3661, "1h1m1s"),
        (0, "0s"),
    ],
)
def test_go_duration_formats_like_time_duration_string(seconds: float, text: str) -> None:
    assert go_duration(seconds) == text


# ============================================================ the real default profile


def test_the_default_profile_builds_with_the_real_plugins() -> None:
    from services.scheduler import registry as reg
    from services.scheduler.config import default_config

    for row in reg.IN_TREE:
        pytest.importorskip(f"{reg.PLUGINS_PACKAGE}.{row.module}")
    profile = default_config().profiles[0]
    fwk = Framework(profile, reg.in_tree_registry(), handle=FakeHandle())
    assert fwk.list_plugins() == {p: profile.names(p) for p in reg.EXTENSION_POINTS}
    assert fwk.score_weights == profile.score_weights()
    assert "SchedulingGates" in fwk.events_to_register()
