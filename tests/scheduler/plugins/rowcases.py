"""Random clusters and pods for the row-form equivalence tests (test_rows_*.py): nodes with
taints of every effect, labels (numeric ones for Gt/Lt), cordons and pods holding host ports;
pods with tolerations, nodeSelectors, node affinity terms of every operator, nodeName and
host ports. `Cluster` keeps a real Cache and Snapshot so a test can change nodes and pods and
refresh the same snapshot, as the scheduler does between cycles."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from protos.kubera.v1 import core_pb2
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.types import NodeInfo
from tests.builders import MakeNode, MakePod

Json = dict[str, Any]

#: "topology.kubernetes.io/zone" makes the node tree interleave zones, so rows move.
KEYS = ["a", "b", "topology.kubernetes.io/zone", "num"]
#: Values for labels and taints; numbers (and non-canonical ones) for Gt/Lt.
VALUES = ["", "x", "y", "1", "5", "10", "-3", "007"]
EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"]
NODE_COUNT = 8

taint = st.fixed_dictionaries(
    {
        "key": st.sampled_from(KEYS),
        "value": st.sampled_from(VALUES),
        "effect": st.sampled_from(EFFECTS),
    }
)
labels = st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=3)
host_port = st.fixed_dictionaries(
    {
        "containerPort": st.just(80),
        "hostPort": st.sampled_from([0, 80, 8080]),
        "protocol": st.sampled_from(["TCP", "UDP"]),
        "hostIP": st.sampled_from(["", "0.0.0.0", "10.0.0.1"]),
    }
)


@st.composite
def node_spec(draw: st.DrawFn) -> Json:
    return {
        "labels": draw(labels),
        "taints": draw(st.lists(taint, max_size=3)),
        "unschedulable": draw(st.booleans()),
    }


def make_node(i: int, spec: Json) -> core_pb2.Node:
    n = MakeNode().name(f"n{i}").labels(spec["labels"]).taints(spec["taints"])
    n.unschedulable(spec["unschedulable"])
    return n.allocatable({"cpu": "4", "memory": "8Gi", "pods": "110"}).obj()


toleration = st.fixed_dictionaries(
    {
        "key": st.sampled_from(["", *KEYS]),
        "operator": st.sampled_from(["", "Equal", "Exists", "Gt", "Lt"]),
        "value": st.sampled_from(VALUES),
        "effect": st.sampled_from(["", *EFFECTS]),
    }
)

OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]


@st.composite
def requirement(draw: st.DrawFn) -> Json:
    op = draw(st.sampled_from(OPERATORS))
    if op in ("Exists", "DoesNotExist"):
        values: list[str] = []
    elif op in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["1", "5", "x"]))]
    else:
        values = draw(st.lists(st.sampled_from(VALUES), min_size=1, max_size=2))
    return {"key": draw(st.sampled_from(KEYS)), "operator": op, "values": values}


@st.composite
def field_requirement(draw: st.DrawFn) -> Json:
    names = [f"n{i}" for i in range(NODE_COUNT)] + ["gone"]
    return {
        "key": "metadata.name",
        "operator": draw(st.sampled_from(["In", "NotIn"])),
        "values": draw(st.lists(st.sampled_from(names), min_size=1, max_size=2)),
    }


@st.composite
def term(draw: st.DrawFn) -> Json:
    t: Json = {}
    exprs = draw(st.lists(requirement(), max_size=2))
    fields = draw(st.lists(field_requirement(), max_size=1))
    if exprs:
        t["matchExpressions"] = exprs
    if fields:
        t["matchFields"] = fields
    return t


@st.composite
def node_affinity(draw: st.DrawFn) -> Json:
    aff: Json = {}
    if draw(st.booleans()):
        aff["requiredDuringSchedulingIgnoredDuringExecution"] = {
            "nodeSelectorTerms": draw(st.lists(term(), max_size=3))
        }
    preferred = draw(
        st.lists(
            st.fixed_dictionaries({"weight": st.integers(0, 100), "preference": term()}),
            max_size=3,
        )
    )
    if preferred:
        aff["preferredDuringSchedulingIgnoredDuringExecution"] = preferred
    return aff


@st.composite
def pod(draw: st.DrawFn) -> core_pb2.Pod:
    p = MakePod().name("p").namespace("default").uid("p")
    ports = draw(st.lists(host_port, max_size=2))
    requests = {"cpu": "100m"} if draw(st.booleans()) else None
    p.container("c", "busybox", requests=requests, ports=ports or None)
    p.tolerations(draw(st.lists(toleration, max_size=3)))
    p.node_selector(
        draw(st.dictionaries(st.sampled_from(KEYS), st.sampled_from(VALUES), max_size=2))
    )
    aff = draw(node_affinity())
    if aff:
        p.affinity({"nodeAffinity": aff})
    if draw(st.integers(0, 3)) == 0:
        p.node(draw(st.sampled_from(["n0", "n3", "gone"])))
    return p.obj()


def port_pod(name: str, node: str, ports: list[Json]) -> core_pb2.Pod:
    return (
        MakePod()
        .name(name)
        .namespace("default")
        .uid(name)
        .node(node)
        .container("c", "busybox", requests={"cpu": "100m"}, ports=ports)
        .obj()
    )


class Cluster:
    """A Cache and one Snapshot kept up to date with it."""

    def __init__(self, specs: list[Json]) -> None:
        self.cache = Cache()
        self.nodes: list[core_pb2.Node | None] = [make_node(i, s) for i, s in enumerate(specs)]
        for n in self.nodes:
            assert n is not None
            self.cache.add_node(n)
        self.snapshot = Snapshot()
        self.pods = 0
        self.refresh()

    def refresh(self) -> None:
        self.cache.update_snapshot(self.snapshot)

    def update_node(self, i: int, spec: Json) -> None:
        old = self.nodes[i]
        if old is None:
            return
        new = make_node(i, spec)
        self.cache.update_node(old, new)
        self.nodes[i] = new

    def add_node(self, spec: Json) -> None:
        """A new node (renumbers the snapshot's rows)."""
        n = make_node(len(self.nodes), spec)
        self.cache.add_node(n)
        self.nodes.append(n)

    def remove_node(self, i: int) -> None:
        old = self.nodes[i]
        if old is not None:
            self.cache.remove_node(old)
            self.nodes[i] = None

    def add_port_pod(self, i: int, ports: list[Json]) -> None:
        if self.nodes[i] is None:
            return
        self.pods += 1
        self.cache.add_pod(port_pod(f"q{self.pods}", f"n{i}", ports))

    def infos(self) -> list[NodeInfo]:
        return self.snapshot.list()


@st.composite
def cluster_changes(draw: st.DrawFn) -> tuple[list[Json], list[tuple[str, int, Any]]]:
    """Node specs, then changes applied between two checks: ("node", i, spec) replaces a
    node, ("pod", i, ports) binds a pod with those host ports, ("add", 0, spec) adds a node,
    ("remove", i, None) removes one."""
    specs = draw(st.lists(node_spec(), min_size=1, max_size=NODE_COUNT))
    n = len(specs)
    change = st.one_of(
        st.tuples(st.just("node"), st.integers(0, n - 1), node_spec()),
        st.tuples(st.just("pod"), st.integers(0, n - 1), st.lists(host_port, max_size=2)),
        st.tuples(st.just("add"), st.just(0), node_spec()),
        st.tuples(st.just("remove"), st.integers(0, n - 1), st.none()),
    )
    return specs, draw(st.lists(change, max_size=4))


def apply(cluster: Cluster, changes: list[tuple[str, int, Any]]) -> None:
    for kind, i, arg in changes:
        if kind == "node":
            cluster.update_node(i, arg)
        elif kind == "pod":
            cluster.add_port_pod(i, arg)
        elif kind == "add":
            cluster.add_node(arg)
        else:
            cluster.remove_node(i)
    cluster.refresh()


def rows(n: int) -> st.SearchStrategy[np.ndarray]:
    """A random subset of n rows, in random order (the framework's feasible rows)."""
    if n == 0:
        return st.just(np.zeros(0, dtype=np.int64))
    return st.lists(st.integers(0, n - 1), unique=True, max_size=n).map(
        lambda xs: np.array(xs, dtype=np.int64)
    )
