"""Pod-group preemption by disruption mode (preemption/podgroups.py): DefaultPreemption on a
real Framework preempts one member of a low-priority PodGroup on the candidate node, and a
group whose disruptionMode is `all` loses every member, on any node (upstream 1.37's
PreemptionPodGroupDisruptionMode: "all forces evicting the entire candidate PodGroup if any
pod is selected as a victim"; "single" preempts only the members it needs)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.interface import PostFilterResult
from services.scheduler.framework.status import Code, Status
from services.scheduler.plugins.defaultpreemption import DECISION_KEY
from services.scheduler.preemption.podgroups import disruption_units, whole_groups
from tests.builders import scheduling_pod_group
from tests.scheduler.preemption._harness import HIGH, LOW, Harness, node, pod

CPU1 = {"cpu": "1", "memory": "1Gi"}


def _member(name: str, node_name: str, group: str = "pg") -> core_pb2.Pod:
    p = pod(name, LOW, node_name=node_name, req=CPU1)
    p.spec.scheduling_group.pod_group_name = group
    return p


MODES: dict[str, tuple[dict[str, Any] | None, list[str]]] = {
    "disruptionMode all: the whole group goes": ({"all": {}}, ["m0", "m1"]),
    "disruptionMode single: only the needed member": ({"single": {}}, ["m0"]),
    "no disruptionMode (single by default)": ({}, ["m0"]),
    "the PodGroup is unknown: a pod like any other": (None, ["m0"]),
}


@pytest.mark.parametrize(("mode", "deleted"), list(MODES.values()), ids=list(MODES))
def test_a_pod_groups_disruption_mode_decides_who_else_is_preempted(
    mode: dict[str, Any] | None, deleted: list[str]
) -> None:
    members = [_member("m0", "n1"), _member("m1", "n2"), _member("other", "n2", group="pg2")]
    h = Harness([node("n1", CPU1), node("n2", CPU1)], members)
    if mode is not None:
        spec = {"disruptionMode": mode} if mode else {}
        h.plugin.pod_groups = {"default/pg": scheduling_pod_group("pg", min_count=2, **spec)}
    state, pi = h.state_for(pod("high", HIGH, req=CPU1))
    statuses = {"n1": Status(Code.UNSCHEDULABLE), "n2": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}
    result, st = asyncio.run(h.plugin.post_filter(state, pi, statuses))
    assert st.is_success() and result == PostFilterResult("n1")
    assert sorted(h.client.deleted) == deleted


def test_whole_groups_keeps_the_victims_first_and_adds_each_member_once() -> None:
    all_mode = {"default/pg": scheduling_pod_group("pg", min_count=2, disruptionMode={"all": {}})}
    m0, m1 = _member("m0", "n1"), _member("m1", "n2")
    h = Harness([node("n1", CPU1), node("n2", CPU1)], [m0, m1])
    nodes = h.snapshot().list()
    got = whole_groups([m0], nodes, all_mode)
    assert [p.metadata.name for p in got] == ["m0", "m1"]
    assert [p.metadata.name for p in whole_groups([m0, m1], nodes, all_mode)] == ["m0", "m1"]
    assert [p.metadata.name for p in whole_groups([m0], nodes, {})] == ["m0"]


def test_a_group_disrupted_whole_is_one_unit_and_each_other_member_one() -> None:
    """Upstream's NumPodGroupDisruptions (preemption_workload_disruptions): all pods of a
    group in mode `all` are one unit, a member of a `single` group (or of an unknown
    group) one unit each, a pod of no group none."""
    groups = {
        "default/pg": scheduling_pod_group("pg", min_count=2, disruptionMode={"all": {}}),
        "default/pg2": scheduling_pod_group("pg2", min_count=2, disruptionMode={"single": {}}),
    }
    victims = [
        _member("m0", "n1"),
        _member("m1", "n2"),
        _member("s0", "n1", group="pg2"),
        _member("s1", "n2", group="pg2"),
        _member("u0", "n2", group="unknown"),
        pod("loner", LOW, node_name="n1", req=CPU1),
    ]
    assert disruption_units(victims, groups) == 1 + 2 + 1
    assert disruption_units(victims[-1:], groups) == 0


def test_the_decision_carries_the_units_and_pdb_violations_for_the_metrics() -> None:
    members = [_member("m0", "n1"), _member("m1", "n2")]
    h = Harness([node("n1", CPU1), node("n2", CPU1)], members)
    h.plugin.pod_groups = {
        "default/pg": scheduling_pod_group("pg", min_count=2, disruptionMode={"all": {}})
    }
    state, pi = h.state_for(pod("high", HIGH, req=CPU1))
    statuses = {"n1": Status(Code.UNSCHEDULABLE), "n2": Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)}
    _, st = asyncio.run(h.plugin.post_filter(state, pi, statuses))
    assert st.is_success()
    decision = state.get(DECISION_KEY)
    assert (decision.pod_group_disruptions, decision.pdb_violations) == (1, 0)
