"""PodTopologySpread's and InterPodAffinity's row forms against their per-node forms, over
random nodes (zone / hostname / rack labels, some missing), existing pods (labels, required
anti-affinity) and incoming pods (spread constraints of both kinds, (anti-)affinity terms),
on a real Snapshot."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.columns import columns_of
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins import interpodaffinity
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
from tests.profiles import examples
from tests.scheduler.plugins import rowcases
from tests.scheduler.plugins.test_rows_equivalence import Handle, check_filter, check_score

Json = dict[str, Any]
TOPOLOGY_KEYS = ["kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack"]
APPS = ["a", "b"]

SETTINGS = settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def node_labels(draw: st.DrawFn) -> Json:
    out: Json = {}
    if draw(st.integers(0, 5)):
        out["topology.kubernetes.io/zone"] = draw(st.sampled_from(["z1", "z2", "z3", ""]))
    if draw(st.booleans()):
        out["rack"] = draw(st.sampled_from(["r1", "r2"]))
    if draw(st.integers(0, 3)) == 0:
        out["disk"] = "ssd"
    return out


@st.composite
def existing_pod(draw: st.DrawFn) -> Json:
    return {
        "app": draw(st.sampled_from(APPS)),
        "namespace": draw(st.sampled_from(["default", "default", "other"])),
        "anti": draw(st.integers(0, 4)) == 0,
        "key": draw(st.sampled_from(TOPOLOGY_KEYS)),
    }


def affinity_term(app: str, key: str) -> Json:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


@st.composite
def incoming(draw: st.DrawFn) -> core_pb2.Pod:
    p = (
        MakePod()
        .name("in")
        .namespace("default")
        .uid("in")
        .label("app", draw(st.sampled_from(APPS)))
    )
    p.container("c", "busybox", requests={"cpu": "100m"})
    constraints = draw(
        st.lists(
            st.fixed_dictionaries(
                {
                    "maxSkew": st.integers(1, 3),
                    "topologyKey": st.sampled_from(TOPOLOGY_KEYS),
                    "whenUnsatisfiable": st.sampled_from(["DoNotSchedule", "ScheduleAnyway"]),
                    "labelSelector": st.fixed_dictionaries(
                        {"matchLabels": st.fixed_dictionaries({"app": st.sampled_from(APPS)})}
                    ),
                    "minDomains": st.sampled_from([1, 1, 3]),
                    "nodeAffinityPolicy": st.sampled_from(["", "Honor", "Ignore"]),
                    "nodeTaintsPolicy": st.sampled_from(["", "Honor", "Ignore"]),
                }
            ),
            max_size=2,
        )
    )
    for c in constraints:
        if c["whenUnsatisfiable"] != "DoNotSchedule":
            del c["minDomains"]
    if constraints:
        p.topology_spread_constraints(constraints)
    if draw(st.booleans()):  # without constraints of its own: the system defaults
        p.owner_references(
            [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "rs"}]
        )
    if draw(st.booleans()):
        p.node_selector({"disk": "ssd"})
    if draw(st.booleans()):
        p.tolerations([{"key": "dedicated", "operator": "Exists"}])
    term = st.builds(affinity_term, st.sampled_from(APPS), st.sampled_from(TOPOLOGY_KEYS))
    weighted = st.builds(
        lambda w, t: {"weight": w, "podAffinityTerm": t}, st.integers(1, 100), term
    )
    aff: Json = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        required = draw(st.lists(term, max_size=2))
        preferred = draw(st.lists(weighted, max_size=2))
        if required or preferred:
            aff[kind] = {}
            if required:
                aff[kind]["requiredDuringSchedulingIgnoredDuringExecution"] = required
            if preferred:
                aff[kind]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    if aff:
        p.affinity(aff)
    return p.obj()


class SpreadCluster:
    def __init__(self, labels: list[Json], pods: list[tuple[int, Json]]) -> None:
        self.cache = Cache()
        for i, extra in enumerate(labels):
            n = MakeNode().name(f"n{i}").label("kubernetes.io/hostname", f"n{i}").labels(extra)
            if i % 3 == 1:
                n.taints([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}])
            self.cache.add_node(n.allocatable({"cpu": "4", "memory": "8Gi", "pods": "110"}).obj())
        for j, (i, spec) in enumerate(pods):
            self.add_pod(j, i % len(labels), spec)
        self.snapshot = Snapshot()
        self.refresh()

    def add_pod(self, j: int, node: int, spec: Json) -> None:
        p = MakePod().name(f"e{j}").namespace(spec["namespace"]).uid(f"e{j}")
        p.label("app", spec["app"]).node(f"n{node}").container("c", "busybox")
        if spec["anti"]:
            p.affinity(
                {
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            affinity_term(spec["app"], spec["key"])
                        ]
                    }
                }
            )
        self.cache.add_pod(p.obj())

    def refresh(self) -> None:
        self.cache.update_snapshot(self.snapshot)

    def infos(self) -> list[Any]:
        return self.snapshot.list()


def plugins(snapshot: Snapshot) -> list[Any]:
    handle = Handle(snapshot)
    return [podtopologyspread.new(None, handle), interpodaffinity.new(None, handle)]


@SETTINGS
@given(
    st.lists(node_labels(), min_size=1, max_size=rowcases.NODE_COUNT),
    st.lists(st.tuples(st.integers(0, 20), existing_pod()), max_size=10),
    st.lists(st.tuples(st.integers(0, 20), existing_pod()), max_size=3),
    incoming(),
    st.data(),
)
def test_spread_and_affinity_rows_agree_with_per_node(
    labels: list[Json],
    pods: list[tuple[int, Json]],
    later: list[tuple[int, Json]],
    pod: core_pb2.Pod,
    data: st.DataObject,
) -> None:
    cluster = SpreadCluster(labels, pods)
    for phase in range(2):
        if phase:
            for j, (i, spec) in enumerate(later):
                cluster.add_pod(100 + j, i % len(labels), spec)
            cluster.refresh()
        check_pre_filter_counts(cluster, pod)
        rows = data.draw(rowcases.rows(len(labels)))
        check_pre_score_state(cluster, pod, rows)
        for pl in plugins(cluster.snapshot):
            if _pre_filter_runs(pl, cluster, pod):
                check_filter(pl, cluster, pod, rows)
            check_score(pl, cluster, pod, rows)


def check_pre_filter_counts(cluster: SpreadCluster, pod: core_pb2.Pod) -> None:
    """PreFilter over the snapshot's columns counts what the per-node loop counts."""
    pl = podtopologyspread.new(None, Handle(cluster.snapshot))
    constraints = pl.get_constraints(pod, "DoNotSchedule")
    if not constraints:
        return
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    rows = pre_filter_state_rows(constraints, pod, cols, cluster.snapshot)
    nodes = pre_filter_state(constraints, pod, cluster.infos())
    assert rows.counts == nodes.counts
    for i in range(len(constraints)):
        assert rows.min_match(i) == nodes.min_match(i)


def check_pre_score_state(cluster: SpreadCluster, pod: core_pb2.Pod, rows: np.ndarray) -> None:
    """PreScore's counts over the snapshot's columns equal the per-node loop's."""
    pl = podtopologyspread.new(None, Handle(cluster.snapshot))
    constraints = pl.get_constraints(pod, "ScheduleAnyway")
    if not constraints:
        return
    require_all = bool(pod.spec.topology_spread_constraints)
    cols = columns_of(cluster.snapshot)
    assert cols is not None
    by_rows, by_nodes = PreScoreState(), PreScoreState()
    by_rows.constraints = by_nodes.constraints = constraints
    fill_pre_score_state_rows(by_rows, pod, rows, cols, cluster.snapshot, require_all)
    infos = cluster.infos()
    fill_pre_score_state(by_nodes, pod, [infos[r] for r in rows], infos, require_all)
    assert by_rows.ignored == by_nodes.ignored
    assert by_rows.counts == by_nodes.counts
    assert by_rows.weights == by_nodes.weights


def _pre_filter_runs(pl: Any, cluster: SpreadCluster, pod: core_pb2.Pod) -> bool:
    """Filter runs only when PreFilter neither skipped nor refused the pod."""
    _, st_ = pl.pre_filter(CycleState(), PodInfo(pod), cluster.infos())
    return bool(st_.is_success())


def test_rows_see_no_constraints_as_skip() -> None:
    """A pod without constraints or terms, and none in the cluster: both plugins Skip at
    PreFilter and PreScore (upstream), so the framework makes no per-node call at all."""
    cluster = SpreadCluster([{"topology.kubernetes.io/zone": "z1"}] * 3, [])
    pod = MakePod().name("p").namespace("default").uid("p").container("c").obj()
    for pl in plugins(cluster.snapshot):
        _, st_ = pl.pre_filter(CycleState(), PodInfo(pod), cluster.infos())
        assert st_.is_skip(), pl.name
        assert pl.pre_score(CycleState(), PodInfo(pod), cluster.infos()).is_skip(), pl.name


def test_normalize_rows_keeps_ignored_rows_at_zero() -> None:
    cluster = SpreadCluster(
        [{"topology.kubernetes.io/zone": "z1"}, {}, {"topology.kubernetes.io/zone": "z2"}],
        [(0, {"app": "a", "namespace": "default", "anti": False, "key": "rack"})],
    )
    pod = (
        MakePod()
        .name("p")
        .namespace("default")
        .uid("p")
        .label("app", "a")
        .topology_spread_constraints(
            [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "ScheduleAnyway",
                    "labelSelector": {"matchLabels": {"app": "a"}},
                }
            ]
        )
        .container("c")
        .obj()
    )
    pl = podtopologyspread.new(None, Handle(cluster.snapshot))
    rows = np.arange(3, dtype=np.int64)
    check_score(pl, cluster, pod, rows)


def test_pre_score_state_rows_leave_ignored_nodes_out_of_hostname_domains() -> None:
    zone = "topology.kubernetes.io/zone"
    cluster = SpreadCluster(
        [{zone: "z1"}, {}, {zone: "z2"}, {zone: ""}],
        [(0, {"app": "a", "namespace": "default", "anti": False, "key": zone})],
    )
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": key,
            "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {"app": "a"}},
        }
        for key in ("kubernetes.io/hostname", zone)
    ]
    pod = MakePod().name("p").namespace("default").uid("p").label("app", "a")
    pod = pod.topology_spread_constraints(spread).container("c").obj()
    check_pre_score_state(cluster, pod, np.array([3, 1, 0, 2], dtype=np.int64))
