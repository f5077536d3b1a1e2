"""NodeDeclaredFeatures: a pod goes only to nodes declaring every feature it needs.

The tables are upstream's nodedeclaredfeatures_test.go (TestPreFilter, TestFilter,
TestEnqueueExtensionsNodeUpdate, TestIsSchedulableAfterTargetPodUpdate,
TestEventsToRegister), with its mock features as small dataclasses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api.nodedeclaredfeatures import (
    ALL_FEATURES,
    GUARANTEED_QOS_POD_CPU_RESIZE,
    NodeConfiguration,
    Version,
    discover,
    parse_version,
)
from services.scheduler.framework.status import Code
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodedeclaredfeatures as ndf
from tests.builders import MakeNode, MakePod


@dataclass(frozen=True)
class Mock:
    """Upstream's MockFeature: a name, what InferForScheduling answers, a MaxVersion."""

    name: str
    infer: Callable[[core_pb2.PodSpec], bool] | bool = False
    max_version: Version | None = None

    def discover(self, config: NodeConfiguration) -> bool:
        return True

    def infer_for_scheduling(self, spec: core_pb2.PodSpec) -> bool:
        return self.infer(spec) if callable(self.infer) else self.infer


def _pod(**labels: str) -> core_pb2.Pod:
    return MakePod().name("test-pod").uid("123").labels(labels).obj()


def _node(*declared: str) -> core_pb2.Node:
    node = MakeNode().name("node-1").obj()
    node.status.declared_features.extend(declared)
    return node


V135 = parse_version("1.35.0")

#: (rule, plugin enabled, features, component version, status code, requirements stored)
PRE_FILTER = [
    ("plugin disabled", False, [Mock("F1", True), Mock("F2")], V135, Code.SKIP, None),
    (
        "pod with feature requirements",
        True,
        [Mock("F1", True), Mock("F2")],
        V135,
        Code.SUCCESS,
        {"F1"},
    ),
    (
        "pod with multiple feature requirements",
        True,
        [Mock("F1", True, (1, 38, 0)), Mock("F2", True, (1, 38, 0))],
        V135,
        Code.SUCCESS,
        {"F1", "F2"},
    ),
    ("pod with no requirements", True, [Mock("F1"), Mock("F2")], V135, Code.SKIP, None),
    (
        "feature not required past its MaxVersion",
        True,
        [Mock("F1", True, (1, 33, 0)), Mock("F2")],
        parse_version("1.34.0"),
        Code.SKIP,
        None,
    ),
]


@pytest.mark.parametrize(
    ("rule", "enabled", "registry", "version", "code", "stored"),
    PRE_FILTER,
    ids=[r[0] for r in PRE_FILTER],
)
def test_pre_filter(rule, enabled, registry, version, code, stored) -> None:
    plugin = ndf.NodeDeclaredFeatures(enabled=enabled, registry=registry, version=version)
    state = CycleState()
    result, st = plugin.pre_filter(state, PodInfo(_pod()), [])
    assert result is None, rule
    assert st.code == code, rule
    got = state.get(ndf.PRE_FILTER_STATE_KEY)
    assert (set(got) if got is not None else None) == stored, rule


#: (rule, enabled, node's declared features, PreFilter's requirements or None, code)
FILTER = [
    ("plugin disabled", False, ["A", "B"], None, Code.SUCCESS),
    ("node matches requirements", True, ["A", "B"], ["A"], Code.SUCCESS),
    ("node does not match requirements", True, ["B"], ["A"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    (
        "node with multiple features, pod requires a subset",
        True,
        ["A", "B", "C"],
        ["A", "C"],
        Code.SUCCESS,
    ),
    ("node has no declared features", True, [], ["A"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ("node with some but not all", True, ["A"], ["A", "B"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE),
    ("no PreFilter state is an error", True, [], None, Code.ERROR),
]


@pytest.mark.parametrize(
    ("rule", "enabled", "declared", "reqs", "code"), FILTER, ids=[r[0] for r in FILTER]
)
def test_filter(rule, enabled, declared, reqs, code) -> None:
    plugin = ndf.NodeDeclaredFeatures(enabled=enabled)
    state = CycleState()
    if reqs is not None:
        state.write(ndf.PRE_FILTER_STATE_KEY, frozenset(reqs))
    st = plugin.filter(state, PodInfo(_pod()), NodeInfo(_node(*declared)))
    assert st.code == code, rule
    if code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert st.message == ndf.ERR_REASON_UNSATISFIED_REQUIREMENTS
        assert st.plugin == ndf.NAME


NODE_UPDATES = [
    ("node add with a feature", None, _node("FeatureA"), QueueingHint.QUEUE),
    ("node update: features added", _node(), _node("FeatureA"), QueueingHint.QUEUE),
    ("node update: features unchanged", _node("FeatureA"), _node("FeatureA"), QueueingHint.SKIP),
]


@pytest.mark.parametrize(
    ("rule", "old", "new", "hint"), NODE_UPDATES, ids=[r[0] for r in NODE_UPDATES]
)
def test_node_update_hint(rule, old, new, hint) -> None:
    assert ndf.is_schedulable_after_node_change(_pod(), old, new) == hint, rule


def _answers(*values: bool) -> Callable[[core_pb2.PodSpec], bool]:
    it = iter(values)
    return lambda spec: next(it)


POD_UPDATES = [
    ("pod update adds a requirement", _answers(False, True), V135, QueueingHint.QUEUE),
    ("pod update removes a requirement", _answers(True, False), V135, QueueingHint.QUEUE),
    ("pod update leaves requirements alone", False, V135, QueueingHint.SKIP),
    ("inferring fails (no version): queued again", True, None, QueueingHint.QUEUE),
]


@pytest.mark.parametrize(
    ("rule", "infer", "version", "hint"), POD_UPDATES, ids=[r[0] for r in POD_UPDATES]
)
def test_target_pod_update_hint(rule, infer, version, hint) -> None:
    plugin = ndf.NodeDeclaredFeatures(
        enabled=True, registry=[Mock("TestFeature", infer)], version=version
    )
    old, new = _pod(), _pod(foo="bar")
    assert plugin.after_pod_update(_pod(), old, new) == hint, rule


@pytest.mark.parametrize(("enabled", "count"), [(False, 0), (True, 2)], ids=["disabled", "enabled"])
def test_events_to_register(enabled: bool, count: int) -> None:
    assert len(ndf.NodeDeclaredFeatures(enabled=enabled).events_to_register()) == count


def test_the_gate_is_alpha_and_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not ndf.new(None, None).enabled
    monkeypatch.setitem(features.DEFAULTS, features.NODE_DECLARED_FEATURES, True)
    assert ndf.new(None, None).enabled


def test_no_pod_needs_a_feature_to_be_scheduled_with_the_135_registry() -> None:
    plugin = ndf.NodeDeclaredFeatures(enabled=True)
    _, st = plugin.pre_filter(CycleState(), PodInfo(_pod()), [])
    assert st.code == Code.SKIP
    assert [f.name for f in ALL_FEATURES] == [GUARANTEED_QOS_POD_CPU_RESIZE]


#: The discovery rule of upstream's guaranteed_cpu_resize.go: (policy, exclusive-CPUs gate, declared)
DISCOVERY = [
    ("none", False, True),
    ("none", True, True),
    ("static", True, True),
    ("static", False, False),
]


@pytest.mark.parametrize(("policy", "gate", "declared"), DISCOVERY)
def test_guaranteed_qos_pod_cpu_resize_discovery(policy: str, gate: bool, declared: bool) -> None:
    cfg = NodeConfiguration(
        feature_gates={"InPlacePodVerticalScalingExclusiveCPUs": gate}, cpu_manager_policy=policy
    )
    assert (discover(cfg) == [GUARANTEED_QOS_POD_CPU_RESIZE]) is declared


def test_a_feature_past_its_max_version_is_not_declared() -> None:
    cfg = NodeConfiguration(version=(1, 40, 0))
    assert discover(cfg, [Mock("Old", max_version=(1, 38, 0)), Mock("New")]) == ["New"]


def test_a_change_of_declared_features_is_its_own_node_update() -> None:
    from services.scheduler.framework.types import ActionType
    from services.scheduler.scheduler import node_update_event

    changed = node_update_event(_node(), _node("FeatureA")).action
    assert changed & ActionType.UPDATE_NODE_DECLARED_FEATURE
    same = node_update_event(_node("FeatureA"), _node("FeatureA")).action
    assert not same & ActionType.UPDATE_NODE_DECLARED_FEATURE
