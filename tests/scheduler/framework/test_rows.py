"""Filter and Score over snapshot rows agree with the per-node reference.

The scheduling cycle filters and scores int64 snapshot rows (feasible.py, filtering.py,
scoring.py): plugins with `filter_rows` / `score_rows` / `normalize_rows` run vectorised,
the others per node. These tests hold that path to the per-node one: the same feasible
nodes in the same order, the same Status per rejected node, the same nodes looked at, the
same Error, the same scores — with a row plugin, a per-node plugin, a filter_batch plugin
and NodeResources mixed, PreFilterResult node names, nominated pods and the equivalence
cache's verdicts.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from services.scheduler.cache import equivalence
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.config import num_feasible_nodes_to_find
from services.scheduler.feasible import FilterError, find_feasible
from services.scheduler.framework.interface import NodeScore, PreFilterResult
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.status import Code, FrameworkError, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo
from services.scheduler.plugins import noderesources as nr
from services.scheduler.queue import nomination
from tests.builders import MakeNode, MakePod
from tests.profiles import examples
from tests.scheduler.framework.test_framework import build

# ======================================================================= fakes


def _label(ni: NodeInfo, key: str) -> str:
    assert ni.node is not None
    return ni.node.metadata.labels.get(key, "")


class LabelRows:
    """Rejects nodes labelled bad=1 (Unschedulable) per node and by rows; by rows it also
    rejects flaky=1 nodes, which `filter` (the reference) keeps. No rows for pods labelled
    norows=1."""

    name = "LabelRows"

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if _label(node_info, "bad") == "1":
            return Status.unschedulable(f"bad label on {node_info.name}")
        return Status.success()

    def filter_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        if pod_info.pod.metadata.labels.get("norows") == "1":
            return None
        infos = snapshot.list()
        return np.array(
            [
                _label(infos[r], "bad") != "1" and _label(infos[r], "flaky") != "1"
                for r in rows.tolist()
            ],
            dtype=bool,
        )


class PerNode:
    """Only `filter`: rejects deny=1 nodes as unresolvable; the node named in the pod's
    label `error-on` answers Error (or raises, with label raise=1)."""

    name = "PerNode"

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        labels = pod_info.pod.metadata.labels
        if labels.get("error-on") == node_info.name:
            if labels.get("raise") == "1":
                raise RuntimeError(f"broken on {node_info.name}")
            return Status.as_error(RuntimeError(f"cannot tell for {node_info.name}"))
        if _label(node_info, "deny") == "1":
            return Status.unresolvable("denied")
        return Status.success()


class Batch:
    """`filter` and `filter_batch`: rejects slow=1 nodes."""

    name = "Batch"

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if _label(node_info, "slow") == "1":
            return Status.unschedulable("slow")
        return Status.success()

    def filter_batch(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> list[Status]:
        return [self.filter(state, pod_info, ni) for ni in nodes]


def _score_label(ni: NodeInfo) -> int:
    return int(_label(ni, "score") or 0)


class RowsScorer:
    """Raw score from the label score=N, per node and by rows; NormalizeScore reverses it
    against the highest (per NodeScore list and by rows)."""

    name = "RowsScorer"

    def score(self, state: CycleState, pod_info: PodInfo, ni: NodeInfo) -> tuple[int, Status]:
        return _score_label(ni), Status.success()

    def score_rows(
        self, state: CycleState, pod_info: PodInfo, snapshot: Any, rows: np.ndarray
    ) -> np.ndarray | None:
        infos = snapshot.list()
        return np.array([_score_label(infos[r]) for r in rows.tolist()], dtype=np.int64)

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        top = max((s.score for s in scores), default=0)
        for s in scores:
            s.score = 100 - s.score * 100 // top if top else 100
        return Status.success()

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: np.ndarray
    ) -> np.ndarray:
        top = int(scores.max()) if len(scores) else 0
        return 100 - scores * 100 // top if top else np.full(len(scores), 100, np.int64)


class PlainScorer:
    """Only `score` and `normalize_score` (highest becomes 100)."""

    name = "PlainScorer"

    def score(self, state: CycleState, pod_info: PodInfo, ni: NodeInfo) -> tuple[int, Status]:
        return len(ni.name) * 7 + _score_label(ni), Status.success()

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        top = max((s.score for s in scores), default=0)
        for s in scores:
            s.score = s.score * 100 // top if top else 0
        return Status.success()


def framework() -> Framework:
    fit = nr.new(None, None)
    balanced = nr.new_balanced_allocation(None, None)
    return build(
        {
            "preFilter": [fit],
            "filter": [fit, LabelRows(), PerNode(), Batch()],
            "preScore": [fit, balanced],
            "score": [(fit, 1), (balanced, 2), (RowsScorer(), 3), (PlainScorer(), 1)],
        }
    )


# ======================================================================= cluster


def make_node(i: int, rng: random.Random) -> Any:
    labels = {
        key: "1"
        for key, p in (("bad", 0.15), ("flaky", 0.1), ("deny", 0.1), ("slow", 0.1))
        if rng.random() < p
    }
    labels["score"] = str(rng.randint(0, 50))
    cpu = rng.choice(["1", "2", "4"])
    return (
        MakeNode()
        .name(f"n{i:03d}")
        .labels(labels)
        .allocatable({"cpu": cpu, "memory": "8Gi", "pods": str(rng.choice([2, 5, 110]))})
        .capacity({"cpu": cpu, "memory": "8Gi", "pods": "110"})
        .obj()
    )


def make_pod(name: str, cpu: str, labels: dict[str, str] | None = None, node: str = "") -> Any:
    p = MakePod().name(name).namespace("default").uid(name).req({"cpu": cpu, "memory": "1Gi"})
    if labels:
        p = p.labels(labels)
    if node:
        p = p.node(node)
    return p.obj()


def cluster(seed: int, n: int) -> tuple[Cache, Snapshot]:
    rng = random.Random(seed)
    cache = Cache()
    for i in range(n):
        cache.add_node(make_node(i, rng))
    for k in range(n // 2):
        cache.add_pod(
            make_pod(f"e{k}", rng.choice(["500m", "1", "1500m"]), node=f"n{rng.randrange(n):03d}")
        )
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


# ======================================================================= reference


def reference(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    nodes: list[NodeInfo],
    pre_result: PreFilterResult | None,
    pct: int | None,
    start: int,
    nominator: Nominator,
) -> tuple[list[str], list[tuple[str, tuple[Any, ...]]], int]:
    """The per-node findNodesThatPassFilters the scheduler ran before rows."""
    statuses: dict[str, Status] = {}
    if pre_result is not None and pre_result.node_names is not None:
        allowed = pre_result.node_names
        candidates = [n for n in nodes if n.name in allowed]
        for n in nodes:
            if n.name not in allowed:
                statuses[n.name] = Status.unresolvable(
                    "node(s) didn't satisfy plugin(s) [PreFilter]"
                )
    else:
        candidates = nodes
    total = len(candidates)
    want = num_feasible_nodes_to_find(pct, total)
    if total == 0:
        return [], summary(statuses), 0
    first = start % total
    ordered = candidates[first:] + candidates[:first]
    feasible: list[NodeInfo] = []
    processed = 0
    chunk = max(want, 64)
    while processed < total and len(feasible) < want:
        batch = ordered[processed : processed + chunk]
        results = [fwk.run_filter(state, pi, ni) for ni in batch]
        for s in results:
            if s.code == Code.ERROR:
                raise FilterError(s)
        for ni, s in zip(batch, results, strict=True):
            processed += 1
            if s.is_success() and len(nominator):
                s = nomination.with_nominated_pods(fwk, state, pi, ni, nominator)
                if s.code == Code.ERROR:
                    raise FilterError(s)
            if s.is_success():
                feasible.append(ni)
                if len(feasible) >= want:
                    break
            else:
                statuses[ni.name] = s
    return [n.name for n in feasible], summary(statuses), processed


def summary(statuses: dict[str, Status]) -> list[tuple[str, tuple[Any, ...]]]:
    return [(name, (s.code, s.reasons, s.plugin)) for name, s in statuses.items()]


def by_rows(
    fwk: Framework,
    state: CycleState,
    pi: PodInfo,
    snap: Snapshot,
    pre_result: PreFilterResult | None,
    pct: int | None,
    start: int,
    nominator: Nominator,
    known: equivalence.Verdicts | None = None,
    eq: equivalence.EquivalenceCache | None = None,
) -> tuple[list[str], list[tuple[str, tuple[Any, ...]]], int]:
    found = find_feasible(
        fwk,
        state,
        pi,
        snap,
        pre_result,
        percentage=pct,
        start=start,
        nominator=nominator,
        known=known,
        eq=eq,
    )
    names = [snap.list()[r].name for r in found.rows.tolist()]
    return names, summary(found.statuses), found.processed


def outcome(fn: Any, *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except FilterError as e:
        return ("FilterError", str(e), e.status.plugin)


# ======================================================================= Filter


case = st.fixed_dictionaries(
    {
        "seed": st.integers(0, 10_000),
        "n": st.sampled_from([1, 7, 64, 99, 130, 257, 257, 400]),
        "cpu": st.sampled_from(["100m", "1", "2500m"]),
        "norows": st.booleans(),
        "pct": st.sampled_from([None, 1, 30, 50, 100]),
        "start": st.integers(0, 1000),
        "allowed": st.one_of(st.none(), st.none(), st.sets(st.integers(0, 400), max_size=350)),
        "nominated": st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["1", "3"]))),
        "error": st.sampled_from([None, None, None, "return", "raise"]),
        "error_node": st.integers(0, 400),
    }
)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case)
def test_find_feasible_by_rows_equals_the_per_node_reference(c: dict[str, Any]) -> None:
    cache, snap = cluster(c["seed"], c["n"])
    fwk = framework()
    labels = {"norows": "1"} if c["norows"] else {}
    if c["error"]:
        labels["error-on"] = f"n{c['error_node']:03d}"
        if c["error"] == "raise":
            labels["raise"] = "1"
    pi = PodInfo(make_pod("incoming", c["cpu"], labels))
    pre_result = None
    if c["allowed"] is not None:
        pre_result = PreFilterResult(frozenset(f"n{i:03d}" for i in c["allowed"]))
    nominator = Nominator()
    for k, (i, cpu) in enumerate(c["nominated"]):
        nominator.add(PodInfo(make_pod(f"nom{k}", cpu)), f"n{i:03d}")
    nodes = list(snap.list())

    def run(known: Any = None, eq: Any = None, state: CycleState | None = None) -> Any:
        st_ = state or CycleState()
        fwk.run_pre_filter(st_, pi, nodes)
        return outcome(
            by_rows, fwk, st_, pi, snap, pre_result, c["pct"], c["start"], nominator, known, eq
        )

    ref_state = CycleState()
    fwk.run_pre_filter(ref_state, pi, nodes)
    want = outcome(
        reference, fwk, ref_state, pi, nodes, pre_result, c["pct"], c["start"], nominator
    )
    assert run() == want
    # The equivalence verdicts: stored on the first pass, answering the second.
    eq = equivalence.EquivalenceCache()
    known = eq.entries(b"sig", snap.layout_version, snap.num_nodes())
    assert run(known, eq) == want
    hits = eq.hits
    assert run(known, eq) == want
    assert eq.hits > hits or isinstance(want, tuple) or not snap.num_nodes()
    # A node changes (a pod lands on it): its verdict is recomputed, the others reused.
    if nodes and not isinstance(want, tuple):
        cache.add_pod(make_pod("late", "1", node=nodes[0].name))
        cache.update_snapshot(snap)
        ref_state = CycleState()
        fwk.run_pre_filter(ref_state, pi, nodes)
        want = outcome(
            reference, fwk, ref_state, pi, nodes, pre_result, c["pct"], c["start"], nominator
        )
        known = eq.entries(b"sig", snap.layout_version, snap.num_nodes())
        assert run(known, eq) == want


def test_a_rejected_row_gets_its_status_from_the_per_node_filter() -> None:
    _, snap = cluster(5, 40)
    fwk = framework()
    pi = PodInfo(make_pod("incoming", "100m"))
    state = CycleState()
    fwk.run_pre_filter(state, pi, snap.list())
    rows = np.arange(snap.num_nodes(), dtype=np.int64)
    ok, rejected = fwk.run_filter_rows(state, pi, snap, rows)
    for r in rows.tolist():
        ni = snap.list()[r]
        want = fwk.run_filter(state, pi, ni)
        assert bool(ok[r]) == want.is_success()
        got = rejected.get(r, Status.success())
        assert (got.code, got.reasons, got.plugin) == (want.code, want.reasons, want.plugin)


def test_a_raising_plugin_is_an_error_for_every_row_it_was_asked_about() -> None:
    _, snap = cluster(6, 20)
    fwk = framework()
    pi = PodInfo(make_pod("incoming", "100m", {"error-on": "n003", "raise": "1"}))
    state = CycleState()
    fwk.run_pre_filter(state, pi, snap.list())
    rows = np.arange(snap.num_nodes(), dtype=np.int64)
    ok, rejected = fwk.run_filter_rows(state, pi, snap, rows)
    errors = {r for r, s in rejected.items() if s.code == Code.ERROR}
    assert 3 in errors and not ok[list(errors)].any()
    assert {rejected[r].plugin for r in errors} == {"PerNode"}
    assert {rejected[r].message for r in errors} == {"broken on n003"}


# ======================================================================= Score


@pytest.mark.parametrize("seed", range(6))
def test_scores_by_rows_equal_the_per_node_scores(seed: int) -> None:
    _, snap = cluster(seed, 90)
    fwk = framework()
    rng = random.Random(seed)
    nodes = snap.list()
    rows = np.array(sorted(rng.sample(range(len(nodes)), 40)), dtype=np.int64)
    subset = [nodes[r] for r in rows.tolist()]
    pi = PodInfo(make_pod("incoming", rng.choice(["100m", "1"])))
    state = CycleState()
    assert fwk.run_pre_score(state, pi, subset).is_success()
    totals, by_plugin = fwk.run_score_rows(state, pi, snap, rows, subset)
    want_totals, want_by_plugin = fwk.run_score(state, pi, subset)
    assert totals.dtype == np.int64
    assert dict(zip([n.name for n in subset], totals.tolist(), strict=True)) == want_totals
    assert {
        p: dict(zip([n.name for n in subset], s.tolist(), strict=True))
        for p, s in by_plugin.items()
    } == want_by_plugin


class WildRows(RowsScorer):
    """Its normalized scores leave [0, 100] on the node labelled score=7."""

    name = "Wild"

    def normalize_score(
        self, state: CycleState, pod_info: PodInfo, scores: list[NodeScore]
    ) -> Status:
        for s in scores:
            s.score = 150 if s.score == 7 else s.score
        return Status.success()

    def normalize_rows(
        self, state: CycleState, pod_info: PodInfo, scores: np.ndarray
    ) -> np.ndarray:
        return np.where(scores == 7, 150, scores)


def test_an_out_of_range_score_is_the_same_error_by_rows_and_per_node() -> None:
    _, snap = cluster(1, 400)
    nodes = snap.list()
    sevens = [i for i, ni in enumerate(nodes) if _score_label(ni) == 7]
    assert sevens
    fwk = build({"score": [WildRows()]})
    rows = np.arange(len(nodes), dtype=np.int64)
    with pytest.raises(FrameworkError) as by_rows_err:
        fwk.run_score_rows(CycleState(), PodInfo(make_pod("p", "1")), snap, rows, nodes)
    with pytest.raises(FrameworkError) as per_node_err:
        fwk.run_score(CycleState(), PodInfo(make_pod("p", "1")), nodes)
    assert str(by_rows_err.value) == str(per_node_err.value)
    assert "invalid score 150" in str(by_rows_err.value)
    assert by_rows_err.value.status.plugin == "Wild"


# ======================================================================= select host


class CountingRandom(random.Random):
    draws = 0

    def randrange(self, *args: Any, **kwargs: Any) -> int:  # type: ignore[override]
        self.draws += 1
        return super().randrange(*args, **kwargs)


def select_host(totals: list[int], rng: random.Random) -> int:
    from types import SimpleNamespace

    from services.scheduler.schedule_one import ScheduleOne

    return ScheduleOne._select_host(SimpleNamespace(rng=rng), np.array(totals, dtype=np.int64))  # type: ignore[arg-type]


def test_select_host_draws_once_per_tie_set_and_none_for_a_unique_best() -> None:
    totals = [40, 90, 12, 90, 90, 7]
    for seed in range(20):
        rng = CountingRandom(seed)
        got = select_host(totals, rng)
        assert rng.draws == 1
        assert got == [1, 3, 4][random.Random(seed).randrange(3)]
    rng = CountingRandom(0)
    assert select_host([3, 99, 98], rng) == 1 and rng.draws == 0
    chosen = {select_host(totals, random.Random(seed)) for seed in range(60)}
    assert chosen == {1, 3, 4}
