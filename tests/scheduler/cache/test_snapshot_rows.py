"""The snapshot's per-node arrays stay equal to the NodeInfos they describe through any
sequence of cache changes: rows written in place for changed nodes, and rows moved (not
recomputed) when the list is reordered for a node added, removed or re-zoned."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot, _rows
from tests.builders import MakeNode, MakePod


def node(name: str, zone: str, cpu: int) -> object:
    return (
        MakeNode()
        .name(name)
        .label("topology.kubernetes.io/zone", zone)
        .allocatable({"cpu": str(cpu), "memory": "8Gi", "pods": "110"})
        .obj()
    )


def assert_rows_match(snap: Snapshot) -> None:
    infos = snap.list()
    want = [_rows(ni) for ni in infos]
    assert snap.alloc.tolist() == [list(w[0]) for w in want]
    assert snap.requested.tolist() == [list(w[1]) for w in want]
    assert snap.non_zero.tolist() == [list(w[2]) for w in want]
    assert snap.row_gen.tolist() == [ni.generation for ni in infos]
    assert all(snap.index_of(ni.name) == i for i, ni in enumerate(infos))


@pytest.mark.parametrize("seed", range(10))
def test_arrays_follow_every_change(seed: int) -> None:
    rng = random.Random(seed)
    cache, snap = Cache(), Snapshot()
    live: dict[str, str] = {}
    pods: list[tuple[str, str]] = []
    for step in range(120):
        op = rng.random()
        if op < 0.25 or not live:
            name = f"n{step}"
            live[name] = rng.choice(["a", "b", "c"])
            cache.add_node(node(name, live[name], rng.choice([2, 4, 8])))  # type: ignore[arg-type]
        elif op < 0.35:
            name = rng.choice(sorted(live))
            old = node(name, live[name], 4)
            live[name] = rng.choice(["a", "b", "c", "d"])  # re-zoned: the list reorders
            cache.update_node(old, node(name, live[name], rng.choice([2, 4])))  # type: ignore[arg-type]
        elif op < 0.42 and len(live) > 1:
            name = rng.choice(sorted(live))
            cache.remove_node(node(name, live.pop(name), 4))  # type: ignore[arg-type]
        elif op < 0.55 and pods:
            uid, on = pods.pop(rng.randrange(len(pods)))
            cache.remove_pod(MakePod().name(uid).uid(uid).node(on).obj())
        else:
            uid, on = f"p{step}", rng.choice(sorted(live))
            cache.add_pod(MakePod().name(uid).uid(uid).node(on).req({"cpu": "100m"}).obj())
            pods.append((uid, on))
        if rng.random() < 0.6:
            layout = snap.layout_version
            cache.update_snapshot(snap)
            assert_rows_match(snap)
            assert snap.layout_version >= layout
    cache.update_snapshot(snap)
    assert_rows_match(snap)
    assert isinstance(snap.alloc, np.ndarray)
