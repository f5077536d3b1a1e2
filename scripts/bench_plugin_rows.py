"""Microbenchmark: per-pod cost of the default plugins' row forms against their per-node forms
at N nodes (default 5,000), on a real Snapshot. Prints figures; asserts nothing.

    PYTHONPATH=. .venv/bin/python scripts/bench_plugin_rows.py [--nodes 5000] [--pods 100]

Each pod is scheduled against every node: the per-node path calls filter (and score +
normalize_score) once per node, the row path calls filter_rows (score_rows + normalize_rows)
once (columns already current: their upkeep per bind is measured on its own).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.columns import NodeColumns, columns_of
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins import (
    interpodaffinity,
    nodeaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    tainttoleration,
)
from services.scheduler.plugins.podtopologyspread import plugin as podtopologyspread
from services.scheduler.plugins.podtopologyspread.filtering import pre_filter_state
from services.scheduler.plugins.podtopologyspread.rows import (
    fill_pre_score_state_rows,
    pre_filter_state_rows,
)
from services.scheduler.plugins.podtopologyspread.scoring import (
    PreScoreState,
    fill_pre_score_state,
)
from tests.builders import MakeNode, MakePod


class Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot


def make_node(i: int, prefer: bool) -> core_pb2.Node:
    n = (
        MakeNode()
        .name(f"node-{i}")
        .label("kubernetes.io/hostname", f"node-{i}")
        .label("topology.kubernetes.io/zone", f"zone-{i % 3}")
        .allocatable({"cpu": "32", "memory": "256Gi", "pods": "110"})
    )
    if prefer and i % 10 == 0:
        n.taints([{"key": "soft", "value": "x", "effect": "PreferNoSchedule"}])
    return n.obj()


def make_pod(i: int, node_selector: bool, affinity: bool) -> core_pb2.Pod:
    p = MakePod().name(f"p{i}").namespace("default").uid(f"p{i}")
    p.container("c", "busybox", requests={"cpu": "100m", "memory": "100Mi"})
    if node_selector:
        p.node_selector({"topology.kubernetes.io/zone": "zone-1"})
    if affinity:
        p.affinity(
            {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 10,
                            "preference": {
                                "matchExpressions": [
                                    {
                                        "key": "topology.kubernetes.io/zone",
                                        "operator": "In",
                                        "values": ["zone-2"],
                                    }
                                ]
                            },
                        }
                    ]
                }
            }
        )
    return p.obj()


def timed(fn: Callable[[], Any], reps: int) -> float:
    """ms per call: the best of 3 batches of `reps` (the machine is shared)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - start) / reps)
    return best * 1e3


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=100)
    args = ap.parse_args()
    for prefer in (False, True):
        run(args.nodes, args.pods, prefer)


def run(n: int, pods: int, prefer: bool) -> None:
    cache = Cache()
    for i in range(n):
        cache.add_node(make_node(i, prefer))
    snap = Snapshot()
    cache.update_snapshot(snap)
    handle = Handle(snap)
    print(f"\n{n} nodes, PreferNoSchedule taints on {'10 %' if prefer else 'no'} nodes")

    bound = [0]

    def bind() -> None:
        """One bind between pods: one row's generation changes."""
        bound[0] += 1
        i = bound[0] % n
        cache.add_pod(
            MakePod()
            .name(f"b{bound[0]}")
            .namespace("default")
            .uid(f"b{bound[0]}")
            .node(f"node-{i}")
            .container("c", "busybox", requests={"cpu": "10m"})
            .obj()
        )
        cache.update_snapshot(snap)

    cases: list[tuple[str, Any, core_pb2.Pod]] = [
        ("TaintToleration", tainttoleration.new(None, handle), make_pod(0, False, False)),
        ("NodeUnschedulable", nodeunschedulable.new(None, handle), make_pod(0, False, False)),
        ("NodeName", nodename.new(None, handle), make_pod(0, False, False)),
        ("NodeAffinity (nodeSelector)", nodeaffinity.new(None, handle), make_pod(0, True, False)),
        ("NodeAffinity (preferred)", nodeaffinity.new(None, handle), make_pod(0, False, True)),
        (
            "NodePorts (hostPort pod)",
            nodeports.new(None, handle),
            MakePod()
            .name("hp")
            .uid("hp")
            .container("c", "x", ports=[{"containerPort": 80, "hostPort": 80}])
            .obj(),
        ),
    ]
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        },
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "web"}},
        },
    ]
    term = {"labelSelector": {"matchLabels": {"app": "web"}}}
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term | {"topologyKey": "kubernetes.io/hostname"}
            ]
        },
        "podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "podAffinityTerm": term | {"topologyKey": "topology.kubernetes.io/zone"},
                }
            ]
        },
    }
    web = MakePod().name("w").namespace("default").uid("w").label("app", "web").container("c")
    for j in range(min(n, 300)):  # some matching pods to count
        cache.add_pod(
            MakePod()
            .name(f"web{j}")
            .namespace("default")
            .uid(f"web{j}")
            .label("app", "web")
            .node(f"node-{j * 7 % n}")
            .container("c")
            .obj()
        )
    cache.update_snapshot(snap)
    cases += [
        (
            "PodTopologySpread (zone+host)",
            podtopologyspread.new(None, handle),
            web.topology_spread_constraints(spread).obj(),
        ),
        (
            "InterPodAffinity (anti+pref)",
            interpodaffinity.new(None, handle),
            MakePod()
            .name("w2")
            .namespace("default")
            .uid("w2")
            .label("app", "web")
            .container("c")
            .affinity(anti)
            .obj(),
        ),
    ]
    for label, pl, pod in cases:
        print(bench_case(label, pl, pod, snap, pods))

    # PodTopologySpread's PreFilter: per-domain counts over every node, per pod.
    pts = cases[-2][1]
    spread_pod = cases[-2][2]
    constraints = pts.get_constraints(spread_pod, "DoNotSchedule")
    per_node = timed(lambda: pre_filter_state(constraints, spread_pod, snap.list()), 3)

    def rows_with_bind() -> None:
        bind()
        cols = columns_of(snap)
        assert cols is not None
        pre_filter_state_rows(constraints, spread_pod, cols, snap)

    bind_only = timed(bind, pods)
    rows_pf = timed(rows_with_bind, pods) - bind_only
    print(
        f"  {'PodTopologySpread PreFilter':30s} per-node {per_node:7.3f} ms  "
        f"rows {rows_pf:7.3f} ms (one bind between pods)"
    )

    # ... and its PreScore (the system default constraints of a ReplicaSet's pod).
    owned = (
        MakePod()
        .name("rs-pod")
        .namespace("default")
        .uid("rs-pod")
        .label("app", "web")
        .owner_references(
            [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs"}]
        )
        .container("c")
        .obj()
    )
    soft = pts.get_constraints(owned, "ScheduleAnyway")
    every = snap.list()
    all_rows = np.arange(len(every), dtype=np.int64)

    def per_node_pre_score() -> None:
        st = PreScoreState()
        st.constraints = soft
        fill_pre_score_state(st, owned, every, every, False)

    def rows_pre_score() -> None:
        bind()
        cols = columns_of(snap)
        assert cols is not None
        st = PreScoreState()
        st.constraints = soft
        fill_pre_score_state_rows(st, owned, all_rows, cols, snap, False)

    per_node = timed(per_node_pre_score, 3)
    rows_ps = timed(rows_pre_score, pods) - bind_only
    print(
        f"  {'PodTopologySpread PreScore':30s} per-node {per_node:7.3f} ms  "
        f"rows {rows_ps:7.3f} ms (system defaults, one bind between pods)"
    )

    def bind_and_refresh() -> None:
        bind()
        columns_of(snap)

    bind_only = timed(bind, pods)
    upkeep = timed(bind_and_refresh, pods) - bind_only
    start = time.perf_counter()
    fresh = NodeColumns()
    fresh.refresh(snap.list(), snap.row_gen, snap.layout_version)
    fresh.label("topology.kubernetes.io/zone")
    rebuild = (time.perf_counter() - start) * 1e3

    relaid = []
    for _ in range(3):  # a node add renumbers the rows: columns carry kept rows over
        bound[0] += 1
        cache.add_node(make_node(n + bound[0], prefer))
        cache.update_snapshot(snap)
        t0 = time.perf_counter()
        columns_of(snap)
        relaid.append((time.perf_counter() - t0) * 1e3)
    print(f"  columns upkeep after a node add (rows renumbered): {min(relaid):.1f} ms")
    print(
        f"  columns upkeep after one bind: {upkeep:.3f} ms (bind + update_snapshot alone "
        f"{bind_only:.3f} ms); full rebuild (new layout) {rebuild:.1f} ms"
    )


def bench_case(label: str, pl: Any, pod: core_pb2.Pod, snap: Snapshot, pods: int) -> str:
    infos = snap.list()
    rows = np.arange(len(infos), dtype=np.int64)
    pi = PodInfo(pod)
    state = CycleState()
    if hasattr(pl, "pre_filter"):
        pl.pre_filter(state, pi, infos)
    skip_score = True
    if hasattr(pl, "pre_score"):
        skip_score = pl.pre_score(state, pi, infos).is_skip()

    def per_node_filter() -> None:
        for ni in infos:
            pl.filter(state, pi, ni).is_success()

    def row_filter() -> None:
        pl.filter_rows(state, pi, snap, rows)

    pf = timed(per_node_filter, max(pods // 20, 2))
    rf = timed(row_filter, pods)
    line = f"  {label:30s} filter: per-node {pf:7.3f} ms  rows {rf:7.3f} ms"
    if not hasattr(pl, "score_rows"):
        return line
    if skip_score:
        return line + "   score: PreScore Skip"

    def per_node_score() -> None:
        scores = []
        for ni in infos:
            s, _ = pl.score(state, pi, ni)
            scores.append(NodeScore(ni.name, s))
        pl.normalize_score(state, pi, scores)

    def row_score() -> None:
        pl.normalize_rows(state, pi, pl.score_rows(state, pi, snap, rows))

    ps = timed(per_node_score, max(pods // 20, 2))
    rs = timed(row_score, pods)
    return line + f"   score: per-node {ps:7.3f} ms  rows {rs:7.3f} ms"


if __name__ == "__main__":
    main()
