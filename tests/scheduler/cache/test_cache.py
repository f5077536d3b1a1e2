"""Scheduler cache: the assumed-pod state machine, ghost NodeInfos, incremental snapshots
(generations, identity, resource arrays) and the zone round-robin node order."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.clock import FakeClock
from services.scheduler.cache.cache import Cache, CacheError, new_snapshot
from services.scheduler.cache.node_tree import NodeTree, zone_key
from services.scheduler.cache.snapshot import COL_CPU, COL_MEMORY, COL_PODS, Snapshot
from services.scheduler.framework.types import PodInfo
from tests.builders import MakeNode, MakePod

GI = 1024**3


def node(
    name: str,
    *,
    zone: str = "",
    region: str = "",
    cpu: str = "4",
    memory: str = "8Gi",
    pods: str = "110",
) -> core_pb2.Node:
    n = MakeNode().name(name).label("kubernetes.io/hostname", name)
    if zone:
        n.label("topology.kubernetes.io/zone", zone)
    if region:
        n.label("topology.kubernetes.io/region", region)
    alloc = {"cpu": cpu, "memory": memory, "ephemeral-storage": "100Gi", "pods": pods}
    return n.allocatable(alloc).obj()


def pod(
    name: str,
    node_name: str = "",
    *,
    cpu: str = "500m",
    memory: str = "1Gi",
    anti_affinity: bool = False,
) -> core_pb2.Pod:
    p = MakePod().name(name).namespace("default").uid(f"uid-{name}").label("app", name)
    p.node(node_name).container("c", "busybox", requests={"cpu": cpu, "memory": memory})
    if anti_affinity:
        p.affinity(
            {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "labelSelector": {"matchLabels": {"app": name}},
                            "topologyKey": "kubernetes.io/hostname",
                        }
                    ]
                }
            }
        )
    return p.obj()


def assumed(name: str, node_name: str, **kw: Any) -> PodInfo:
    """What the scheduler assumes: its own copy of the pod with node_name set."""
    return PodInfo(pod(name, node_name, **kw))


def snapshot_of(cache: Cache) -> Snapshot:
    snap = Snapshot()
    cache.update_snapshot(snap)
    return snap


def assert_arrays_match(snap: Snapshot) -> None:
    """Every array row equals its NodeInfo, rows in list() order."""
    infos = snap.list()
    assert snap.alloc.shape == (len(infos), 4)
    assert snap.requested.shape == (len(infos), 4)
    assert snap.non_zero.shape == (len(infos), 2)
    assert snap.alloc.dtype == np.int64
    assert snap.row_gen.tolist() == [ni.generation for ni in infos]
    for i, ni in enumerate(infos):
        assert snap.index_of(ni.name) == i
        a, r, nz = ni.allocatable, ni.requested, ni.non_zero_requested
        assert snap.alloc[i].tolist() == [
            a.milli_cpu,
            a.memory,
            a.ephemeral_storage,
            a.allowed_pod_number,
        ]
        assert snap.requested[i].tolist() == [
            r.milli_cpu,
            r.memory,
            r.ephemeral_storage,
            len(ni.pods),
        ]
        assert snap.non_zero[i].tolist() == [nz.milli_cpu, nz.memory]


# -- the pod state machine --------------------------------------------------------------

Step = tuple[Any, ...]


def run_steps(
    cache: Cache, clock: FakeClock, steps: list[Step], where: dict[str, str] | None = None
) -> None:
    """("assume", pod, node) ("finish", pod) ("forget", pod) ("add", pod, node)
    ("update", pod, cpu) ("remove", pod) ("advance", seconds) ("cleanup",);
    `where` tracks each pod's node across calls."""
    where = {} if where is None else where
    for step in steps:
        op, *args = step
        if op == "assume":
            cache.assume_pod(assumed(args[0], args[1]))
            where[args[0]] = args[1]
        elif op == "finish":
            cache.finish_binding(pod(args[0], where[args[0]]))
        elif op == "forget":
            cache.forget_pod(pod(args[0], where[args[0]]))
        elif op == "add":
            cache.add_pod(pod(args[0], args[1]))
            where[args[0]] = args[1]
        elif op == "update":
            cache.update_pod(
                pod(args[0], where[args[0]]), pod(args[0], where[args[0]], cpu=args[1])
            )
        elif op == "remove":
            cache.remove_pod(pod(args[0], where[args[0]]))
        elif op == "advance":
            clock.advance(args[0])
        elif op == "cleanup":
            cache.cleanup_expired_assumed_pods()
        else:
            raise AssertionError(op)


@pytest.mark.parametrize(
    ("ttl", "steps", "cpu", "assumed_pods", "pod_count"),
    [
        pytest.param(
            0,
            [("assume", "p", "n1"), ("finish", "p"), ("add", "p", "n1")],
            {"n1": 500, "n2": 0},
            set(),
            1,
            id="assume-finish-add confirms the pod and keeps its resources",
        ),
        pytest.param(
            0,
            [("assume", "p", "n1")],
            {"n1": 500, "n2": 0},
            {"p"},
            1,
            id="an assumed pod holds its node's resources before confirmation",
        ),
        pytest.param(
            0,
            [("assume", "p", "n1"), ("forget", "p")],
            {"n1": 0, "n2": 0},
            set(),
            0,
            id="forget restores the node's requested resources",
        ),
        pytest.param(
            30,
            [("assume", "p", "n1"), ("finish", "p"), ("advance", 31), ("cleanup",)],
            {"n1": 0, "n2": 0},
            set(),
            0,
            id="an assumed pod expires once ttl has passed after finish_binding",
        ),
        pytest.param(
            30,
            [("assume", "p", "n1"), ("finish", "p"), ("advance", 29), ("cleanup",)],
            {"n1": 500, "n2": 0},
            {"p"},
            1,
            id="an assumed pod does not expire before ttl",
        ),
        pytest.param(
            30,
            [("assume", "p", "n1"), ("advance", 3600), ("cleanup",)],
            {"n1": 500, "n2": 0},
            {"p"},
            1,
            id="a pod still binding never expires",
        ),
        pytest.param(
            0,
            [("assume", "p", "n1"), ("finish", "p"), ("advance", 10**6), ("cleanup",)],
            {"n1": 500, "n2": 0},
            {"p"},
            1,
            id="ttl 0 never expires (the upstream default)",
        ),
        pytest.param(
            30,
            [
                ("assume", "p", "n1"),
                ("finish", "p"),
                ("add", "p", "n1"),
                ("advance", 31),
                ("cleanup",),
            ],
            {"n1": 500, "n2": 0},
            set(),
            1,
            id="a confirmed pod no longer expires",
        ),
        pytest.param(
            0,
            [("assume", "p", "n1"), ("finish", "p"), ("add", "p", "n2")],
            {"n1": 0, "n2": 500},
            set(),
            1,
            id="add_pod of an assumed pod on another node moves it",
        ),
        pytest.param(
            0,
            [("add", "p", "n2")],
            {"n1": 0, "n2": 500},
            set(),
            1,
            id="add_pod of a pod bound elsewhere adds it",
        ),
        pytest.param(
            0,
            [("add", "p", "n1"), ("update", "p", "1500m")],
            {"n1": 1500, "n2": 0},
            set(),
            1,
            id="update_pod replaces the old requests with the new",
        ),
        pytest.param(
            0,
            [("add", "p", "n1"), ("add", "q", "n1"), ("remove", "p")],
            {"n1": 500, "n2": 0},
            set(),
            1,
            id="remove_pod subtracts only that pod",
        ),
        pytest.param(
            0,
            [("assume", "p", "n1"), ("add", "p", "n1"), ("remove", "p")],
            {"n1": 0, "n2": 0},
            set(),
            0,
            id="a confirmed pod is removed by its delete event",
        ),
    ],
)
def test_pod_lifecycle(
    ttl: float, steps: list[Step], cpu: dict[str, int], assumed_pods: set[str], pod_count: int
) -> None:
    clock = FakeClock()
    cache = Cache(ttl=ttl, clock=clock)
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    run_steps(cache, clock, steps)

    snap = snapshot_of(cache)
    for name, milli in cpu.items():
        ni = snap.get(name)
        assert ni is not None
        assert ni.requested.milli_cpu == milli
        assert ni.non_zero_requested.milli_cpu == milli
        assert snap.requested[snap.index_of(name), COL_CPU] == milli
    assert cache.pod_count() == pod_count
    for name in ("p", "q"):
        assert cache.is_assumed(pod(name)) == (name in assumed_pods)
    assert_arrays_match(snap)


def test_confirmed_pod_is_the_apiservers_copy() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.assume_pod(assumed("p", "n1"))
    real = pod("p", "n1")
    real.metadata.resource_version = "42"
    cache.add_pod(real)
    got = cache.get_pod(pod("p"))
    assert got is real
    assert cache.get_pod(pod("missing")) is None


@pytest.mark.parametrize(
    ("steps", "failing"),
    [
        pytest.param([("add", "p", "n1")], ("forget", "p"), id="forget of an added pod"),
        pytest.param([], ("forget_unknown", "p"), id="forget of an unknown pod"),
        pytest.param([("assume", "p", "n1")], ("assume", "p", "n2"), id="assume twice"),
        pytest.param([("add", "p", "n1")], ("assume", "p", "n1"), id="assume of an added pod"),
        pytest.param([("add", "p", "n1")], ("add", "p", "n1"), id="add twice"),
        pytest.param([("assume", "p", "n1")], ("update", "p", "1"), id="update of an assumed pod"),
        pytest.param([], ("update_unknown", "p"), id="update of an unknown pod"),
        pytest.param([("add", "p", "n1")], ("update_moved", "p"), id="update onto another node"),
        pytest.param([], ("remove_unknown", "p"), id="remove of an unknown pod"),
        pytest.param([("add", "p", "n1")], ("remove_moved", "p"), id="remove from another node"),
        pytest.param([], ("assume_unassigned", "p"), id="assume without node_name"),
        pytest.param([], ("remove_node_unknown", "n9"), id="remove of an unknown node"),
    ],
)
def test_inconsistent_requests_raise_and_change_nothing(steps: list[Step], failing: Step) -> None:
    clock = FakeClock()
    cache = Cache(clock=clock)
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    where: dict[str, str] = {}
    run_steps(cache, clock, steps, where)
    before = snapshot_of(cache)
    gen = before.generation
    op, name, *rest = failing
    with pytest.raises(CacheError):
        if op == "forget_unknown":
            cache.forget_pod(pod(name, "n1"))
        elif op == "update_unknown":
            cache.update_pod(pod(name, "n1"), pod(name, "n1"))
        elif op == "update_moved":
            cache.update_pod(pod(name, "n1"), pod(name, "n2"))
        elif op == "remove_unknown":
            cache.remove_pod(pod(name, "n1"))
        elif op == "remove_moved":
            cache.remove_pod(pod(name, "n2"))
        elif op == "assume_unassigned":
            cache.assume_pod(assumed(name, ""))
        elif op == "remove_node_unknown":
            cache.remove_node(node(name))
        else:
            run_steps(cache, clock, [failing], where)
    cache.update_snapshot(before)
    assert before.generation == gen
    assert before.last_copied == 0


def test_removing_a_pod_with_an_unknown_last_state_uses_the_cached_node() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    cache.remove_pod(pod("p", ""))  # a DeletedFinalStateUnknown tombstone without node_name
    assert cache.pod_count() == 0
    snap = snapshot_of(cache)
    ni = snap.get("n1")
    assert ni is not None and ni.requested.milli_cpu == 0


# -- nodes and ghost NodeInfos ----------------------------------------------------------


def test_remove_node_keeps_its_pods_until_they_are_deleted() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.add_pod(pod("p", "n1"))
    snap = snapshot_of(cache)

    cache.remove_node(node("n1"))
    cache.update_snapshot(snap)
    assert snap.get("n1") is None, "a removed node is not schedulable"
    assert [ni.name for ni in snap.list()] == ["n2"]
    assert cache.node_count() == 2, "the NodeInfo stays while pods reference it"
    assert cache.pod_count() == 1
    assert_arrays_match(snap)

    cache.remove_pod(pod("p", "n1"))
    assert cache.node_count() == 1, "the ghost goes with its last pod"
    assert cache.pod_count() == 0
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.list()] == ["n2"]


def test_a_node_readded_before_its_pods_are_deleted_keeps_them() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n1"))
    cache.remove_node(node("n1"))
    info = cache.add_node(node("n1"))
    assert [pi.pod.metadata.name for pi in info.pods] == ["p"]
    snap = snapshot_of(cache)
    ni = snap.get("n1")
    assert ni is not None and ni.requested.milli_cpu == 500


def test_pods_bound_before_their_node_is_known_wait_in_a_nodeless_nodeinfo() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("p", "n9"))
    snap = snapshot_of(cache)
    assert cache.node_count() == 2
    assert snap.get("n9") is None
    assert snap.num_nodes() == 1

    info = cache.add_node(node("n9"))
    assert info.requested.milli_cpu == 500
    info.requested.milli_cpu = 0  # a copy: the cache is not affected
    cache.update_snapshot(snap)
    ni = snap.get("n9")
    assert ni is not None and ni.requested.milli_cpu == 500
    assert snap.num_nodes() == 2
    assert_arrays_match(snap)


def test_update_node_changes_allocatable() -> None:
    cache = Cache()
    old = node("n1", cpu="4")
    cache.add_node(old)
    snap = snapshot_of(cache)
    info = cache.update_node(old, node("n1", cpu="8"))
    assert info.allocatable.milli_cpu == 8000
    cache.update_snapshot(snap)
    assert snap.alloc[snap.index_of("n1"), COL_CPU] == 8000


# -- snapshots ---------------------------------------------------------------------------


def three_nodes() -> Cache:
    cache = Cache()
    cache.add_node(node("n1", zone="a"))
    cache.add_node(node("n2", zone="b"))
    cache.add_node(node("n3", zone="a"))
    cache.add_pod(pod("p1", "n1"))
    return cache


def _noop(cache: Cache) -> None:
    pass


def _add_pod_n2(cache: Cache) -> None:
    cache.add_pod(pod("p2", "n2", cpu="250m", memory="256Mi"))


def _assume_n3(cache: Cache) -> None:
    cache.assume_pod(assumed("p3", "n3", cpu="1"))


def _forget_after_assume(cache: Cache) -> None:
    cache.assume_pod(assumed("p3", "n3"))
    cache.forget_pod(pod("p3", "n3"))


def _resize_n3(cache: Cache) -> None:
    cache.update_node(node("n3", zone="a"), node("n3", zone="a", cpu="16", memory="64Gi"))


def _remove_n2(cache: Cache) -> None:
    cache.remove_node(node("n2", zone="b"))


def _remove_n1_with_pod(cache: Cache) -> None:
    cache.remove_node(node("n1", zone="a"))


def _add_n4(cache: Cache) -> None:
    cache.add_node(node("n4", zone="c"))


def _move_n3_to_zone_b(cache: Cache) -> None:
    cache.update_node(node("n3", zone="a"), node("n3", zone="b"))


def _remove_pod_n1(cache: Cache) -> None:
    cache.remove_pod(pod("p1", "n1"))


@pytest.mark.parametrize(
    ("change", "copied", "order", "relisted"),
    [
        pytest.param(_noop, set(), ["n1", "n2", "n3"], False, id="no change copies nothing"),
        pytest.param(
            _add_pod_n2, {"n2"}, ["n1", "n2", "n3"], False, id="a pod added re-copies its node only"
        ),
        pytest.param(
            _assume_n3, {"n3"}, ["n1", "n2", "n3"], False, id="an assumed pod re-copies its node"
        ),
        pytest.param(
            _forget_after_assume,
            {"n3"},
            ["n1", "n2", "n3"],
            False,
            id="assume then forget re-copies the node",
        ),
        pytest.param(_resize_n3, {"n3"}, ["n1", "n2", "n3"], False, id="a node update re-copies"),
        pytest.param(_remove_pod_n1, {"n1"}, ["n1", "n2", "n3"], False, id="a pod removed"),
        pytest.param(_remove_n2, set(), ["n1", "n3"], True, id="a removed node disappears"),
        pytest.param(
            _remove_n1_with_pod,
            set(),
            ["n3", "n2"],
            True,
            id="a removed node with pods disappears",
        ),
        pytest.param(
            _add_n4, {"n4"}, ["n1", "n2", "n4", "n3"], True, id="an added node joins in zone order"
        ),
        pytest.param(
            _move_n3_to_zone_b,
            {"n3"},
            ["n1", "n2", "n3"],
            True,
            id="a zone change rebuilds the order",
        ),
    ],
)
def test_update_snapshot_copies_only_changed_nodes(
    change: Callable[[Cache], None], copied: set[str], order: list[str], relisted: bool
) -> None:
    cache = three_nodes()
    snap = snapshot_of(cache)
    assert [ni.name for ni in snap.list()] == ["n1", "n2", "n3"]  # zones a, b round-robin
    list_before = snap.list()
    infos_before = {ni.name: ni for ni in snap.list()}
    # clone() gives each copy fresh lists: a NodeInfo re-copied has a new `pods` list.
    pods_before = {ni.name: ni.pods for ni in snap.list()}
    gen_before = snap.generation
    layout_before = snap.layout_version

    change(cache)
    cache.update_snapshot(snap)

    assert [ni.name for ni in snap.list()] == order
    assert snap.last_copied == len(copied)
    recopied = {ni.name for ni in snap.list() if pods_before.get(ni.name) is not ni.pods}
    assert recopied == copied
    for ni in snap.list():
        if ni.name in infos_before:
            assert ni is infos_before[ni.name], "snapshot NodeInfos keep their identity"
    assert (snap.list() is not list_before) == relisted
    assert (snap.layout_version != layout_before) == relisted
    assert snap.generation >= gen_before
    if copied:
        assert snap.generation > gen_before
    assert_arrays_match(snap)

    cache.update_snapshot(snap)
    assert snap.last_copied == 0, "a second update with no change copies nothing"


def test_arrays_follow_a_sequence_of_changes() -> None:
    cache = Cache()
    snap = Snapshot()
    cache.update_snapshot(snap)
    assert snap.alloc.shape == (0, 4) and snap.num_nodes() == 0
    for i, zone in enumerate(["a", "b", "a", "c", "b"]):
        cache.add_node(node(f"n{i}", zone=zone, cpu=str(i + 1), memory=f"{i + 1}Gi"))
    cache.update_snapshot(snap)
    assert_arrays_match(snap)
    cache.add_pod(pod("p", "n0", cpu="250m", memory="1Gi"))
    cache.add_pod(pod("q", "n0", cpu="250m", memory="1Gi"))
    cache.assume_pod(assumed("r", "n3", cpu="2", memory="2Gi"))
    cache.update_snapshot(snap)
    assert_arrays_match(snap)
    row = snap.index_of("n0")
    assert snap.requested[row].tolist()[: COL_MEMORY + 1] == [500, 2 * GI]
    assert snap.requested[row, COL_PODS] == 2
    cache.remove_node(node("n1", zone="b"))
    cache.update_node(node("n2", zone="a"), node("n2", zone="a", cpu="32"))
    cache.add_node(node("n5", zone="d"))
    cache.update_snapshot(snap)
    assert_arrays_match(snap)
    with pytest.raises(KeyError):
        snap.index_of("n1")
    cache.forget_pod(pod("r", "n3"))
    cache.update_snapshot(snap)
    assert_arrays_match(snap)
    assert snap.requested[snap.index_of("n3")].tolist() == [0, 0, 0, 0]


def test_best_effort_pods_count_default_non_zero_requests() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    p = json_format.ParseDict(
        {
            "metadata": {"name": "be", "namespace": "default", "uid": "uid-be"},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "busybox"}]},
        },
        core_pb2.Pod(),
    )
    cache.add_pod(p)
    snap = snapshot_of(cache)
    assert snap.requested[0].tolist() == [0, 0, 0, 1]
    assert snap.non_zero[0].tolist() == [100, 200 * 1024 * 1024]


def test_affinity_lists_follow_pods_with_affinity() -> None:
    cache = Cache()
    for name in ("n1", "n2"):
        cache.add_node(node(name))
    snap = snapshot_of(cache)
    assert snap.have_pods_with_affinity() == []
    cache.add_pod(pod("aa", "n2", anti_affinity=True))
    cache.add_pod(pod("plain", "n1"))
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity()] == ["n2"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity()] == ["n2"]
    assert snap.have_pods_with_affinity()[0] is snap.get("n2")
    cache.remove_pod(pod("aa", "n2"))
    cache.update_snapshot(snap)
    assert snap.have_pods_with_affinity() == []
    assert snap.have_pods_with_required_anti_affinity() == []


def test_namespace_labels() -> None:
    snap = Snapshot()
    assert snap.namespace_labels("team-a") is None
    labels = {"team": "a"}
    snap.set_namespace_labels("team-a", labels)
    labels["team"] = "changed"
    assert snap.namespace_labels("team-a") == {"team": "a"}
    snap.remove_namespace("team-a")
    assert snap.namespace_labels("team-a") is None


def test_new_snapshot_builds_a_listed_snapshot() -> None:
    snap = new_snapshot(
        [node("x1", zone="x"), node("x2", zone="x"), node("y1", zone="y")],
        [pod("p", "x2"), pod("orphan", "gone")],
    )
    assert [ni.name for ni in snap.list()] == ["x1", "y1", "x2"]
    assert snap.get("gone") is None
    assert_arrays_match(snap)


# -- NodeTree ----------------------------------------------------------------------------


def _nodes(spec: str) -> list[core_pb2.Node]:
    """ "a1@a b1@b" → nodes named a1, b1 in zones a, b (no @: no zone labels)."""
    out = []
    for item in spec.split():
        name, _, zone = item.partition("@")
        out.append(node(name, zone=zone))
    return out


@pytest.mark.parametrize(
    ("added", "removed", "expected"),
    [
        pytest.param(
            "a1@a a2@a a3@a b1@b c1@c c2@c",
            "",
            "a1 b1 c1 a2 c2 a3",
            id="one node per zone in turn, uneven zones",
        ),
        pytest.param(
            "a1@a b1@b c1@c a2@a c2@c a3@a",
            "",
            "a1 b1 c1 a2 c2 a3",
            id="interleaved adds give the same order",
        ),
        pytest.param(
            "A1@A A2@A B1@B B2@B B3@B C1@C",
            "",
            "A1 B1 C1 A2 B2 B3",
            id="the walkthrough's example",
        ),
        pytest.param(
            "a1@a a2@a a3@a b1@b c1@c c2@c",
            "a1 b1",
            "a2 c1 a3 c2",
            id="removals keep the order and drop an emptied zone",
        ),
        pytest.param(
            "a1@a a2@a b1@b c1@c c2@c a3@a",
            "a1 a2 a3",
            "b1 c1 c2",
            id="removing a whole zone",
        ),
        pytest.param("n1 n2 n3", "n2", "n1 n3", id="no zone labels: one zone, insertion order"),
        pytest.param("a1@a a1@a b1@b", "", "a1 b1", id="a duplicate add is ignored"),
        pytest.param("a1@a", "zz", "a1", id="removing an unknown node changes nothing"),
    ],
)
def test_node_tree_round_robin(added: str, removed: str, expected: str) -> None:
    tree = NodeTree(_nodes(added))
    for n in _nodes(removed):
        tree.remove_node(n)
    assert tree.list() == expected.split()
    assert tree.num_nodes == len(expected.split())


def test_node_tree_readded_zone_goes_last() -> None:
    tree = NodeTree(_nodes("a1@a b1@b c1@c c2@c"))
    tree.remove_node(node("a1", zone="a"))
    tree.add_node(node("a4", zone="a"))
    assert tree.list() == ["b1", "c1", "a4", "c2"]


def test_node_tree_update_moves_a_node_between_zones() -> None:
    tree = NodeTree(_nodes("a1@a a2@a a3@a b1@b c1@c c2@c"))
    version = tree.version
    tree.update_node(node("a3", zone="a"), node("a3", zone="a"))
    assert tree.version == version, "same zone: nothing to do"
    # A stale `old` (claims zone c) still moves the node out of the zone it is filed in.
    tree.update_node(node("a3", zone="c"), node("a3", zone="b"))
    assert tree.list() == ["a1", "b1", "c1", "a2", "a3", "c2"]
    assert tree.num_nodes == 6


def test_zone_key_includes_region() -> None:
    assert zone_key(node("n")) == ""
    assert zone_key(node("n", zone="z", region="r")) == "r:\x00:z"
    tree = NodeTree([node("x", zone="z", region="r1"), node("y", zone="z", region="r2")])
    assert len(tree.zones) == 2


def test_cache_snapshot_lists_nodes_in_zone_round_robin_order() -> None:
    cache = Cache()
    for n in _nodes("a1@a a2@a a3@a b1@b c1@c c2@c"):
        cache.add_node(n)
    snap = snapshot_of(cache)
    assert [ni.name for ni in snap.list()] == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert cache.node_names() == ["a1", "b1", "c1", "a2", "c2", "a3"]
    cache.remove_node(node("b1", zone="b"))
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.list()] == ["a1", "c1", "a2", "c2", "a3"]
    assert_arrays_match(snap)
