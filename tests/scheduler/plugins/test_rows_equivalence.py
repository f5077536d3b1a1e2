"""The plugins' row forms (filter_rows / score_rows + normalize_rows) against their per-node
forms (filter(...).is_success() / score + normalize_score), over random nodes and pods on a
real Snapshot, before and after the cluster changes under the same snapshot."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.interface import NodeScore
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins import (
    nodeaffinity,
    nodename,
    nodeports,
    nodeunschedulable,
    tainttoleration,
)
from services.scheduler.plugins.helpers import default_normalize_rows, default_normalize_score
from tests.profiles import examples
from tests.scheduler.plugins import rowcases
from tests.scheduler.plugins.rowcases import Cluster

SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


class Handle:
    def __init__(self, snapshot: Snapshot) -> None:
        self._snapshot = snapshot

    def snapshot(self) -> Snapshot:
        return self._snapshot


def plugins(snapshot: Snapshot) -> list[Any]:
    handle = Handle(snapshot)
    return [
        tainttoleration.new(None, handle),
        nodeunschedulable.new(None, handle),
        nodename.new(None, handle),
        nodeports.new(None, handle),
        nodeaffinity.new(None, handle),
    ]


def check_filter(pl: Any, cluster: Cluster, pod: core_pb2.Pod, rows: np.ndarray) -> None:
    pi = PodInfo(pod)
    state = CycleState()
    infos = cluster.infos()
    pre = getattr(pl, "pre_filter", None)
    if pre is not None:
        _, st_ = pre(state, pi, infos)
        if st_.is_skip() and pl.name == nodeports.NAME:
            return  # no host ports: no state, the framework never calls Filter
    got = pl.filter_rows(state, pi, cluster.snapshot, rows)
    assert got is not None
    want = [pl.filter(state, pi, infos[r]).is_success() for r in rows]
    assert got.dtype == np.bool_
    assert got.tolist() == want, pl.name


def check_score(pl: Any, cluster: Cluster, pod: core_pb2.Pod, rows: np.ndarray) -> None:
    pi = PodInfo(pod)
    state = CycleState()
    infos = cluster.infos()
    try:
        st_ = pl.pre_score(state, pi, [infos[r] for r in rows])
    except Exception:  # noqa: BLE001 - a preferred term that does not parse
        return
    if not st_.is_success() and not st_.is_skip():
        return
    got = pl.score_rows(state, pi, cluster.snapshot, rows)
    assert got is not None
    per_node = []
    for r in rows:
        s, status = pl.score(state, pi, infos[r])
        assert status.is_success()
        per_node.append(NodeScore(infos[r].name, s))
    assert got.tolist() == [ns.score for ns in per_node], pl.name
    assert pl.normalize_score(state, pi, per_node).is_success()
    assert pl.normalize_rows(state, pi, got).tolist() == [ns.score for ns in per_node], pl.name


@SETTINGS
@given(rowcases.cluster_changes(), rowcases.pod(), st.data())
def test_filter_rows_agree_with_filter(
    changes: tuple[list[Any], list[Any]], pod: core_pb2.Pod, data: st.DataObject
) -> None:
    specs, later = changes
    cluster = Cluster(specs)
    for phase in range(2):
        if phase:
            rowcases.apply(cluster, later)
        rows = data.draw(rowcases.rows(cluster.snapshot.num_nodes()))
        for pl in plugins(cluster.snapshot):
            check_filter(pl, cluster, pod, rows)


@SETTINGS
@given(rowcases.cluster_changes(), rowcases.pod(), st.data())
def test_score_rows_agree_with_score(
    changes: tuple[list[Any], list[Any]], pod: core_pb2.Pod, data: st.DataObject
) -> None:
    specs, later = changes
    cluster = Cluster(specs)
    for phase in range(2):
        if phase:
            rowcases.apply(cluster, later)
        rows = data.draw(rowcases.rows(cluster.snapshot.num_nodes()))
        for pl in plugins(cluster.snapshot):
            if hasattr(pl, "score_rows"):
                check_score(pl, cluster, pod, rows)


@SETTINGS
@given(
    st.lists(
        st.fixed_dictionaries(
            {
                "required": st.lists(rowcases.term(), max_size=2),
                "preferred": st.lists(
                    st.fixed_dictionaries(
                        {"weight": st.integers(1, 100), "preference": rowcases.term()}
                    ),
                    max_size=2,
                ),
            }
        ),
        min_size=1,
        max_size=1,
    ),
    rowcases.cluster_changes(),
    rowcases.pod(),
)
def test_node_affinity_added_affinity_rows(
    added: list[dict[str, Any]], changes: tuple[list[Any], list[Any]], pod: core_pb2.Pod
) -> None:
    a = added[0]
    doc: dict[str, Any] = {}
    if a["required"]:
        doc["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": a["required"]}
    if a["preferred"]:
        doc["preferredDuringSchedulingIgnoredDuringExecution"] = a["preferred"]
    try:
        pl = nodeaffinity.new(nodeaffinity.Args(added_affinity=doc), None)
    except ValueError:
        return  # addedAffinity is parsed strictly: a bad term is a configuration error
    specs, later = changes
    cluster = Cluster(specs)
    for phase in range(2):
        if phase:
            rowcases.apply(cluster, later)
        rows = np.arange(cluster.snapshot.num_nodes(), dtype=np.int64)[::-1].copy()
        check_filter(pl, cluster, pod, rows)
        check_score(pl, cluster, pod, rows)


@given(st.lists(st.integers(-5, 500), max_size=8), st.integers(0, 100), st.booleans())
def test_default_normalize_rows_agrees_with_default_normalize_score(
    scores: list[int], max_priority: int, reverse: bool
) -> None:
    per_node = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    default_normalize_score(max_priority, reverse, per_node)
    got = default_normalize_rows(np.array(scores, dtype=np.int64), max_priority, reverse)
    assert got.dtype == np.int64
    assert got.tolist() == [ns.score for ns in per_node]


def test_taint_toleration_pre_score_skips_without_prefer_no_schedule_taints() -> None:
    """Kubera issue 14: no PreferNoSchedule taint anywhere, nothing to score."""
    cluster = Cluster(
        [
            {"labels": {}, "taints": [], "unschedulable": False},
            {
                "labels": {},
                "taints": [{"key": "a", "value": "x", "effect": "NoSchedule"}],
                "unschedulable": False,
            },
        ]
    )
    pl = tainttoleration.new(None, Handle(cluster.snapshot))
    pi = PodInfo(rowcases.port_pod("p", "", []))
    assert pl.pre_score(CycleState(), pi, cluster.infos()).is_skip()
    cluster.update_node(
        1,
        {
            "labels": {},
            "taints": [{"key": "a", "value": "x", "effect": "PreferNoSchedule"}],
            "unschedulable": False,
        },
    )
    cluster.refresh()
    assert pl.pre_score(CycleState(), pi, cluster.infos()).is_success()
    # Without a handle there is no snapshot to ask: upstream's behaviour, never Skip.
    assert tainttoleration.new(None, None).pre_score(CycleState(), pi, []).is_success()
