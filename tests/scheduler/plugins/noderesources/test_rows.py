"""NodeResources' row methods on the scheduler's own Snapshot (arrays kept by the cache,
`non_zero` included) agree with the per-node `filter` / `score`, and the two-resource
balanced score equals the general one."""

from __future__ import annotations

import random

import numpy as np
import pytest

from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.framework.types import CycleState
from services.scheduler.plugins import noderesources as nr
from services.scheduler.plugins.noderesources.balanced_allocation import (
    balanced_resource_score,
    balanced_resource_score_v,
)
from tests.scheduler.plugins.noderesources.test_noderesources import (
    pod,
    random_nodes,
    random_requests,
)


def snapshot_of(seed: int, n: int) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for ni in random_nodes(random.Random(seed), n):
        assert ni.node is not None
        cache.add_node(ni.node)
        for p in ni.pods:
            cache.add_pod(p.pod)
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


@pytest.mark.parametrize("seed", range(4))
def test_filter_rows_and_score_rows_equal_the_per_node_plugin(seed: int) -> None:
    rng = random.Random(seed)
    cache, snap = snapshot_of(seed, 60)
    fit = nr.new(nr.Args(ignored_resource_groups=["ignored.io"]), None)
    ba = nr.new_balanced_allocation(None, None)
    for k in range(25):
        if k == 12:  # rows written in place for a changed node, the rest untouched
            cache.add_pod(pod({"cpu": "1", "memory": "1Gi"}, uid="late", node="n3").pod)
            cache.update_snapshot(snap)
        reqs = [random_requests(rng, 1.0) for _ in range(rng.randint(0, 3))]
        if k % 5 == 0:
            reqs.append({"ignored.io/thing": "5"})
        pi = pod(*reqs, uid=f"incoming{k}")
        infos = snap.list()
        rows = np.array(sorted(rng.sample(range(len(infos)), 30)), dtype=np.int64)
        state = CycleState()
        fit.pre_filter(state, pi, infos)
        ok = fit.filter_rows(state, pi, snap, rows)
        assert ok is not None
        assert ok.tolist() == [fit.filter(state, pi, infos[r]).is_success() for r in rows]
        for pl in (fit, ba):
            pl.pre_score(state, pi, infos)
            got = pl.score_rows(state, pi, snap, rows)
            assert got is not None
            assert got.tolist() == [pl.score(state, pi, infos[r])[0] for r in rows]


def test_row_methods_without_snapshot_arrays_leave_it_to_the_per_node_methods() -> None:
    fit = nr.new(None, None)
    pi = pod({"cpu": "1"})
    state = CycleState()
    fit.pre_filter(state, pi, [])
    rows = np.arange(3, dtype=np.int64)
    assert fit.filter_rows(state, pi, object(), rows) is None
    assert fit.score_rows(state, pi, object(), rows) is None
    # no PreFilter state: `filter` answers (with its Error) per node
    _, snap = snapshot_of(1, 3)
    assert fit.filter_rows(CycleState(), pi, snap, rows) is None


def test_the_two_resource_balanced_score_equals_the_general_one() -> None:
    rng = np.random.default_rng(7)
    for _ in range(100):
        n = 200
        alloc = rng.integers(0, 10 ** int(rng.integers(1, 18)), size=(n, 2))
        alloc[rng.random((n, 2)) < 0.2] = 0
        req = rng.integers(0, 10 ** int(rng.integers(1, 18)), size=(n, 2))
        want = [
            balanced_resource_score(r, a) for r, a in zip(req.tolist(), alloc.tolist(), strict=True)
        ]
        assert balanced_resource_score_v(req, alloc).tolist() == want
