"""The dry runs' exact shortcuts (services/scheduler/preemption/fastpath.py): the evaluator
with them (fast=True) decides exactly as the reference path (fast=False) — same candidates
in the same order from the same offset, victims, chosen node, status, message and trace."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from services.scheduler.framework.types import PodInfo
from services.scheduler.plugins.defaultpreemption import Args
from services.scheduler.preemption import Evaluator
from services.scheduler.preemption.fastpath import FitCheck
from tests.profiles import examples
from tests.scheduler.preemption._harness import HIGH, LOW, MID, NEG, VERY_HIGH, Harness, node
from tests.scheduler.preemption._harness import pdb as make_pdb
from tests.scheduler.preemption._harness import pod as make_pod

PRIORITIES = (NEG, LOW, MID, HIGH, VERY_HIGH)
FILTER_SETS = (
    ("NodeResourcesFit",),
    ("NodeUnschedulable", "NodeResourcesFit"),
    ("NodeResourcesFit", "PodTopologySpread", "InterPodAffinity"),
    ("NodeUnschedulable",),
)


@st.composite
def clusters(draw: Any) -> dict[str, Any]:
    n_nodes = draw(st.integers(1, 7))
    nodes, pods = [], []
    for i in range(n_nodes):
        labels = {"error": "x"} if draw(st.integers(0, 9)) == 0 else {}
        cpu = draw(st.sampled_from(("1", "2", "4")))
        n = node(f"n{i}", {"cpu": cpu, "memory": "4000", "pods": str(draw(st.integers(1, 6)))})
        n.metadata.labels.update(labels)
        n.spec.unschedulable = draw(st.integers(0, 9)) == 0
        nodes.append(n)
        for j in range(draw(st.integers(0, 5))):
            pods.append(
                make_pod(
                    f"p{i}-{j}",
                    draw(st.sampled_from(PRIORITIES)),
                    node_name=f"n{i}",
                    req={
                        "cpu": f"{draw(st.integers(0, 16)) * 100}m",
                        "memory": str(draw(st.integers(0, 4)) * 500),
                    },
                    labels={"app": draw(st.sampled_from(("a", "b")))},
                    start=draw(
                        st.sampled_from(("", "2026-01-01T00:00:00Z", "2026-01-02T00:00:00Z"))
                    ),
                )
            )
    nominated = [
        (
            make_pod(
                f"nom{k}",
                draw(st.sampled_from(PRIORITIES)),
                req={"cpu": f"{draw(st.integers(1, 30)) * 100}m"},
            ),
            f"n{draw(st.integers(0, n_nodes - 1))}",
        )
        for k in range(draw(st.integers(0, 3)))
    ]
    pdbs = [
        make_pdb(f"pdb{k}", {"app": draw(st.sampled_from(("a", "b")))}, draw(st.integers(0, 2)))
        for k in range(draw(st.integers(0, 2)))
    ]
    preemptor = make_pod(
        "preemptor",
        draw(st.sampled_from(PRIORITIES)),
        req={
            "cpu": f"{draw(st.integers(1, 40)) * 100}m",
            "memory": str(draw(st.integers(0, 4)) * 500),
        },
    )
    return {
        "nodes": nodes,
        "pods": pods,
        "nominated": nominated,
        "pdbs": pdbs,
        "preemptor": preemptor,
        "filters": draw(st.sampled_from(FILTER_SETS)),
        "test_plugin": draw(st.booleans()),
        "offset": draw(st.integers(0, 50)),
        "absolute": draw(st.integers(1, 4)),
    }


def harness(c: dict[str, Any]) -> Harness:
    h = Harness(
        c["nodes"],
        c["pods"],
        c["pdbs"],
        filters=c["filters"],
        test_plugin=c["test_plugin"],
        offset=c["offset"],
        args=Args(min_candidate_nodes_percentage=10, min_candidate_nodes_absolute=c["absolute"]),
    )
    for p, n in c["nominated"]:
        h.nominator.add(PodInfo(p), n)
    return h


def decide(c: dict[str, Any], fast: bool) -> tuple[Any, ...]:
    return decide_on(harness(c), c["preemptor"], c["absolute"], c["pdbs"], fast=fast)


def decide_on(
    h: Harness, preemptor: Any, absolute: int, pdbs: Any, *, fast: bool, ev: Evaluator | None = None
) -> tuple[Any, ...]:
    """The evaluator's decision (a fresh one unless `ev`); the trace's `cached` count aside."""
    state, pi = h.state_for(preemptor)
    infos = list(h.snapshot().list())
    statuses = {ni.name: h.fwk.run_filter(state, pi, ni) for ni in infos}
    ev = ev or Evaluator(
        min_candidate_nodes_percentage=10,
        min_candidate_nodes_absolute=absolute,
        rand=h.rand_int,
        now=h.clock.now,
        fast=fast,
    )
    cand, status, d = ev.preempt(
        fwk=h.fwk,
        state=state,
        pi=pi,
        statuses=statuses,
        all_nodes=infos,
        pdbs=pdbs,
        nominated=h.nominator.pods_on,
    )
    chosen = None
    if cand is not None:
        chosen = (cand.name, [v.metadata.name for v in cand.victims], cand.num_pdb_violations)
    err = str(status.error) if status.error is not None else None
    d = dataclasses.replace(d, cached=0)
    return chosen, (status.code, status.reasons, status.plugin, err), d, h.rand_calls[-1:]


@settings(max_examples=examples(400), deadline=None)
@given(clusters())
def test_fast_path_decides_as_the_reference(c: dict[str, Any]) -> None:
    assert decide(c, fast=True) == decide(c, fast=False)


@st.composite
def histories(draw: Any) -> tuple[dict[str, Any], list[tuple[str, int, int]]]:
    """A cluster and the changes between attempts: (what, node index, a number)."""
    c = draw(clusters())
    steps = draw(
        st.lists(
            st.tuples(
                st.sampled_from(
                    ("none", "remove", "add", "nominate", "unnominate", "pdbs", "clock", "pod")
                ),
                st.integers(0, 6),
                st.integers(0, 40),
            ),
            min_size=1,
            max_size=6,
        )
    )
    return c, steps


@settings(max_examples=examples(300), deadline=None)
@given(histories())
def test_cached_outcomes_decide_as_the_reference_across_attempts(
    hist: tuple[dict[str, Any], list[tuple[str, int, int]]],
) -> None:
    """One fast evaluator over attempts while nodes, nominations, PDBs, the clock and the
    preemptor change; each decision equals a fresh reference evaluator's."""
    c, steps = hist
    h = harness(c)
    pdbs, preemptor = list(c["pdbs"]), c["preemptor"]
    fast = Evaluator(
        min_candidate_nodes_percentage=10,
        min_candidate_nodes_absolute=c["absolute"],
        rand=h.rand_int,
        now=h.clock.now,
    )
    infos = list(h.snapshot().list())
    for k, (what, i, x) in enumerate(steps):
        ni = infos[i % len(infos)]
        if what == "remove" and ni.pods:
            ni.remove_pod(ni.pods[x % len(ni.pods)].pod)
        elif what == "add":
            ni.add_pod(
                PodInfo(
                    make_pod(
                        f"a{k}",
                        PRIORITIES[x % len(PRIORITIES)],
                        node_name=ni.name,
                        req={"cpu": f"{x * 50}m"},
                        start="2026-01-01T00:00:00Z" if x % 3 else "",
                    )
                )
            )
        elif what == "nominate":
            nom = make_pod(f"nn{k}", PRIORITIES[x % len(PRIORITIES)], req={"cpu": f"{x * 100}m"})
            h.nominator.add(PodInfo(nom), ni.name)
        elif what == "unnominate" and h.nominator.pods_on(ni.name):
            h.nominator.delete(h.nominator.pods_on(ni.name)[0].uid)
        elif what == "pdbs":
            pdbs = [make_pdb(f"q{k}", {"app": "ab"[x % 2]}, x % 3)]
        elif what == "clock":
            h.clock.advance(x * 1e6)
        elif what == "pod":
            preemptor = make_pod(
                f"x{k}", PRIORITIES[x % len(PRIORITIES)], req={"cpu": f"{x * 100}m"}
            )
        h.offset = x
        got = decide_on(h, preemptor, c["absolute"], pdbs, fast=True, ev=fast)
        want = decide_on(h, preemptor, c["absolute"], pdbs, fast=False)
        assert got == want, (k, what)


def test_fit_check_matches_the_plugin_on_the_changed_node() -> None:
    """FitCheck.fails(ni, removed, added) == NodeResourcesFit.filter on a NodeInfo with
    `removed` taken away and `added` put on."""
    n = node("n", {"cpu": "4", "memory": "4000", "pods": "4"})
    pods = [make_pod(f"p{i}", LOW, node_name="n", req={"cpu": "900m"}) for i in range(4)]
    h = Harness([n], pods)
    ni = h.snapshot().list()[0]
    for cpu, remove, add in [("3970m", 4, 0), ("3970m", 3, 0), ("100m", 0, 0), ("3970m", 4, 1)]:
        state, pi = h.state_for(make_pod("x", HIGH, req={"cpu": cpu}))
        fit = FitCheck.of(h.fwk, state, pi)
        assert fit is not None
        removed = list(ni.pods)[:remove]
        added = [PodInfo(make_pod("nom", HIGH, req={"cpu": "200m"}))] * add
        changed = ni.clone()
        for p in removed:
            changed.remove_pod(p.pod)
        for p in added:
            changed.add_pod(p)
        want = not h.fwk.run_filter(state, pi, changed).is_success()
        assert fit.fails(ni, removed, added) is want, (cpu, remove, add)


def test_fit_check_needs_the_fit_filter() -> None:
    h = Harness([node("n", {"cpu": "1"})], filters=("NodeUnschedulable",))
    state, pi = h.state_for(make_pod("x", HIGH, req={"cpu": "1"}))
    assert FitCheck.of(h.fwk, state, pi) is None
