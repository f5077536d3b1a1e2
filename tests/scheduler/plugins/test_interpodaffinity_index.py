"""InterPodAffinity's PreFilter and PreScore over the snapshot's AffinityIndex (one match per
distinct label set and term) against the walk over every existing pod (`use_index` off), on
a real Snapshot: random nodes (with and without each topology key), pods (labels,
namespaces, all four kinds of terms with namespaces / namespaceSelectors / matchLabelKeys),
namespace labels; then the cluster changes (pods bound and deleted, nodes added, relabelled
and removed) under the same snapshot and the two are compared again."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.types import CycleState, PodInfo
from services.scheduler.plugins import interpodaffinity as ipa
from services.scheduler.plugins.interpodaffinity.index import index_of
from tests.builders import MakeNode, MakePod
from tests.profiles import examples
from tests.scheduler.plugins.test_rows_equivalence import Handle

Json = dict[str, Any]
HOST, ZONE, RACK = "kubernetes.io/hostname", "topology.kubernetes.io/zone", "rack"
NAMESPACES = ["default", "other", "third"]

SETTINGS = settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@st.composite
def node_labels(draw: st.DrawFn) -> Json:
    out: Json = {}
    if draw(st.integers(0, 4)):
        out[HOST] = draw(st.sampled_from(["h1", "h2", "h3", "h4"]))  # shared hostnames too
    if draw(st.integers(0, 3)):
        out[ZONE] = draw(st.sampled_from(["z1", "z2", ""]))
    if draw(st.booleans()):
        out[RACK] = draw(st.sampled_from(["r1", "r2"]))
    return out


@st.composite
def term(draw: st.DrawFn) -> Json:
    out: Json = {"topologyKey": draw(st.sampled_from([HOST, ZONE, RACK]))}
    sel = draw(st.integers(0, 4))
    if sel == 1:
        out["labelSelector"] = {"matchLabels": {"app": draw(st.sampled_from(["a", "b"]))}}
    elif sel == 2:
        op = draw(st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist"]))
        expr: Json = {"key": draw(st.sampled_from(["app", "tier"])), "operator": op}
        if op in ("In", "NotIn"):
            expr["values"] = draw(st.lists(st.sampled_from(["a", "b", "x"]), min_size=1))
        out["labelSelector"] = {"matchExpressions": [expr]}
    elif sel == 3:
        out["labelSelector"] = {}
    elif sel == 4:
        out["labelSelector"] = {"matchLabels": {"app": "a"}}
        out["matchLabelKeys" if draw(st.booleans()) else "mismatchLabelKeys"] = ["tier"]
    if draw(st.booleans()):
        out["namespaces"] = draw(st.lists(st.sampled_from(NAMESPACES), max_size=2))
    ns_sel = draw(st.integers(0, 3))
    if ns_sel == 1:
        out["namespaceSelector"] = {}
    elif ns_sel == 2:
        out["namespaceSelector"] = {"matchLabels": {"team": draw(st.sampled_from(["x", "y"]))}}
    return out


@st.composite
def pod_spec(draw: st.DrawFn) -> Json:
    weighted = st.builds(
        lambda w, t: {"weight": w, "podAffinityTerm": t}, st.integers(1, 9), term()
    )
    aff: Json = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        required = draw(st.lists(term(), max_size=2))
        preferred = draw(st.lists(weighted, max_size=2))
        if required or preferred:
            aff[kind] = {}
            if required:
                aff[kind]["requiredDuringSchedulingIgnoredDuringExecution"] = required
            if preferred:
                aff[kind]["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    labels = {"app": draw(st.sampled_from(["a", "b"]))}
    if draw(st.booleans()):
        labels["tier"] = draw(st.sampled_from(["x", "y"]))
    return {
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "labels": labels,
        "affinity": aff if draw(st.integers(0, 2)) else {},
    }


def make_pod(name: str, spec: Json, node: str = "") -> core_pb2.Pod:
    p = MakePod().name(name).namespace(spec["namespace"]).uid(name).labels(spec["labels"])
    if node:
        p.node(node)
    p.container("c", "busybox")
    if spec["affinity"]:
        p.affinity(spec["affinity"])
    return p.obj()


def make_node(i: int, labels: Json) -> core_pb2.Node:
    n = MakeNode().name(f"n{i}").labels(labels)
    return n.allocatable({"cpu": "4", "memory": "8Gi", "pods": "110"}).obj()


def results(pl: Any, pod: core_pb2.Pod, snapshot: Snapshot) -> tuple[Any, ...]:
    """Everything PreFilter / Filter (per node and per row) / AddPod-RemovePod on a clone /
    PreScore / Score give for `pod`; filter_rows is checked against filter on the way."""
    pi = PodInfo(pod)
    infos = snapshot.list()
    rows = np.arange(len(infos), dtype=np.int64)

    def filters(state: CycleState) -> list[Any]:
        per_node = [pl.filter(state, pi, ni) for ni in infos]
        by_rows = pl.filter_rows(state, pi, snapshot, rows)
        assert by_rows.tolist() == [st_.is_success() for st_ in per_node]
        return per_node

    state = CycleState()
    _, pf = pl.pre_filter(state, pi, infos)
    s = state.get(ipa.PRE_FILTER_STATE_KEY)
    counts = (s.existing_anti, s.affinity, s.anti)
    filtered = filters(state)
    # Preemption's what-if on a clone: take the first pod off its node, then put it back.
    what_if: list[Any] = []
    victims = [(ni, ni.pods[0]) for ni in infos if ni.pods][:1]
    for ni, victim in victims:
        clone = state.clone()
        pl.remove_pod(clone, pi, victim, ni)
        c = clone.get(ipa.PRE_FILTER_STATE_KEY)
        what_if.append((dict(c.existing_anti), dict(c.affinity), dict(c.anti), filters(clone)))
        pl.add_pod(clone, pi, victim, ni)
        what_if.append((c.existing_anti, c.affinity, c.anti, filters(clone)))
    assert filters(state) == filtered  # the clone's changes did not reach the original
    score_state = CycleState()
    ps = pl.pre_score(score_state, pi, infos)
    topology = score_state.get(ipa.PRE_SCORE_STATE_KEY).topology_score
    scores = [pl.score(score_state, pi, ni) for ni in infos] if ps.is_success() else []
    return pf, counts, filtered, what_if, ps, topology, scores


def check(snapshot: Snapshot, pod: core_pb2.Pod, args: ipa.Args) -> None:
    fast, walk = ipa.new(args, Handle(snapshot)), ipa.new(args, Handle(snapshot))
    walk.use_index = False
    assert results(fast, pod, snapshot) == results(walk, pod, snapshot)


@SETTINGS
@given(
    st.lists(node_labels(), min_size=1, max_size=6),
    st.lists(st.tuples(st.integers(0, 20), pod_spec()), max_size=12),
    st.dictionaries(st.sampled_from(NAMESPACES), st.sampled_from([{}, {"team": "x"}])),
    st.lists(pod_spec(), min_size=1, max_size=3),
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 20), pod_spec()), max_size=8),
    st.sampled_from([ipa.Args(), ipa.Args(hard_pod_affinity_weight=0), ipa.Args(3, True)]),
)
def test_index_agrees_with_walking_every_pod(
    labels: list[Json],
    pods: list[tuple[int, Json]],
    ns_labels: dict[str, Json],
    incoming: list[Json],
    changes: list[tuple[int, int, Json]],
    args: ipa.Args,
) -> None:
    cache, snapshot = Cache(), Snapshot()
    nodes = [make_node(i, extra) for i, extra in enumerate(labels)]
    for n in nodes:
        cache.add_node(n)
    bound: list[core_pb2.Pod] = []
    for j, (i, spec) in enumerate(pods):
        bound.append(make_pod(f"e{j}", spec, f"n{i % len(nodes)}"))
        cache.add_pod(bound[-1])
    for ns, lab in ns_labels.items():
        snapshot.set_namespace_labels(ns, lab)
    cache.update_snapshot(snapshot)
    for spec in incoming:
        check(snapshot, make_pod("in", spec), args)
    # The cluster changes under the same snapshot: the index follows row generations and
    # relayouts (kind 0: bind a pod, 1: delete one, 2: add a node, 3: relabel, 4: remove).
    for k, (kind, i, spec) in enumerate(changes):
        if kind <= 1 and not nodes:
            continue
        if kind == 0 or (kind == 1 and not bound):
            bound.append(make_pod(f"c{k}", spec, nodes[i % len(nodes)].metadata.name))
            cache.add_pod(bound[-1])
        elif kind == 1:
            cache.remove_pod(bound.pop(i % len(bound)))
        elif kind == 2:
            nodes.append(make_node(len(labels) + k, {HOST: f"h{k}", ZONE: "z3"}))
            cache.add_node(nodes[-1])
        elif kind == 3 and nodes:
            old = nodes[i % len(nodes)]
            new = core_pb2.Node()
            new.CopyFrom(old)
            new.metadata.labels[RACK] = "r3"
            cache.update_node(old, new)
            nodes[i % len(nodes)] = new
        elif kind == 4 and len(nodes) > 1:
            gone = nodes.pop(i % len(nodes))
            for p in [p for p in bound if p.spec.node_name == gone.metadata.name]:
                cache.remove_pod(p)
                bound.remove(p)
            cache.remove_node(gone)
        cache.update_snapshot(snapshot)
        check(snapshot, make_pod("in", incoming[k % len(incoming)]), args)


def test_index_revisits_only_changed_rows() -> None:
    """A bind re-digests the one row it changed, not every node's pods."""
    cache, snapshot = Cache(), Snapshot()
    for i in range(4):
        cache.add_node(make_node(i, {HOST: f"h{i}"}))
    spec = {"namespace": "default", "labels": {"app": "a"}, "affinity": {}}
    for i in range(4):
        cache.add_pod(make_pod(f"e{i}", spec, f"n{i}"))
    cache.update_snapshot(snapshot)
    idx = index_of(snapshot)
    assert idx is not None and idx.last_refreshed == 4
    assert [ls.rows for ls in idx.label_sets.values()] == [{0: 1, 1: 1, 2: 1, 3: 1}]
    cache.add_pod(make_pod("e9", spec, "n2"))
    cache.update_snapshot(snapshot)
    assert index_of(snapshot) is idx and idx.last_refreshed == 1
    row = snapshot.index_of("n2")
    assert next(iter(idx.label_sets.values())).rows[row] == 2
