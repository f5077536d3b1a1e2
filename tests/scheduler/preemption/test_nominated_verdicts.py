"""The first pass with nominated pods reused across attempts (framework/nominator.py
NominatedVerdicts): Nominator.filter_with_nominated answers exactly as the reference
filter_with_nominated_pods_only while nodes, nominations and the pod change."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.scheduler.framework.nominator import filter_with_nominated_pods_only
from services.scheduler.framework.types import PodInfo
from tests.profiles import examples
from tests.scheduler.preemption._harness import HIGH, LOW, MID, Harness, node
from tests.scheduler.preemption._harness import pod as make_pod

PRIORITIES = (LOW, MID, HIGH)
FILTER_SETS = (
    ("NodeResourcesFit",),
    ("NodeUnschedulable", "NodeResourcesFit"),
    ("NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"),
)
STEPS = ("none", "remove", "add", "nominate", "unnominate", "pod", "renominate")


@settings(max_examples=examples(300), deadline=None)
@given(
    filters=st.sampled_from(FILTER_SETS),
    sizes=st.lists(st.integers(0, 4), min_size=1, max_size=5),
    steps=st.lists(
        st.tuples(st.sampled_from(STEPS), st.integers(0, 4), st.integers(0, 40)), max_size=8
    ),
)
def test_reused_verdicts_equal_the_reference(
    filters: tuple[str, ...], sizes: list[int], steps: list[tuple[str, int, int]]
) -> None:
    nodes = [node(f"n{i}", {"cpu": "4", "pods": "4"}) for i in range(len(sizes))]
    pods = [
        make_pod(f"p{i}-{j}", LOW, node_name=f"n{i}", req={"cpu": "900m"})
        for i, k in enumerate(sizes)
        for j in range(k)
    ]
    h = Harness(nodes, pods, filters=filters)
    infos = list(h.snapshot().list())
    preemptor = make_pod("x", HIGH, req={"cpu": "1"})
    for i in range(0, len(infos), 2):
        h.nominator.add(PodInfo(make_pod(f"nom{i}", HIGH, req={"cpu": "3"})), infos[i].name)
    for k, (what, i, x) in enumerate(steps):
        ni = infos[i % len(infos)]
        if what == "remove" and ni.pods:
            ni.remove_pod(ni.pods[x % len(ni.pods)].pod)
        elif what == "add":
            ni.add_pod(PodInfo(make_pod(f"a{k}", LOW, node_name=ni.name, req={"cpu": "900m"})))
        elif what == "nominate":
            nom = make_pod(f"nn{k}", PRIORITIES[x % 3], req={"cpu": f"{x * 100}m"})
            h.nominator.add(PodInfo(nom), ni.name)
        elif what == "unnominate" and h.nominator.pods_on(ni.name):
            h.nominator.delete(h.nominator.pods_on(ni.name)[0].uid)
        elif what == "renominate" and h.nominator.pods_on(ni.name):
            # the informer's newer view of a nominated pod: a new PodInfo, same pod
            p = h.nominator.pods_on(ni.name)[0]
            h.nominator.add(PodInfo(p.pod), ni.name)
        elif what == "pod":
            preemptor = make_pod(f"x{k}", PRIORITIES[x % 3], req={"cpu": f"{x * 100}m"})
        for pi_pod in (preemptor, preemptor):  # two attempts of the pod: the second reuses
            state, pi = h.state_for(pi_pod)
            for n in infos:
                got = h.nominator.filter_with_nominated(h.fwk, state, pi, n)
                want = filter_with_nominated_pods_only(
                    h.fwk, state, pi, n, h.nominator.pods_on(n.name)
                )
                assert _view(got) == _view(want), (k, what, n.name)


def _view(st: Any) -> tuple[Any, ...]:
    return st.code, st.reasons, st.plugin, str(st.error) if st.error is not None else None
