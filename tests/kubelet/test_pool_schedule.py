"""The pool's shared schedules, without an apiserver: lease renewals spread over slots
(every live node once per renew interval, each slot one small batch) and the pod watch
keeping only the pool's own pods."""

from __future__ import annotations

from services.clock import ScaledClock
from services.kubelet.pool import LEASE_SLOTS, NodePool, PoolConfig
from services.kubelet.template import parse_template, plan_nodes
from tests.builders import MakePod
from tests.kubelet.test_pool import _template


class _NoClient:
    """Batchers hold writes until run; nothing here calls the apiserver."""


def _pool(count: int) -> NodePool:
    plans = plan_nodes(parse_template(_template(count=count)))
    return NodePool(_NoClient(), plans, config=PoolConfig(seed=1), clock=ScaledClock(1.0))  # type: ignore[arg-type]


def test_each_live_node_is_renewed_once_per_round_of_slots() -> None:
    pool = _pool(25)
    pool.nodes[3].alive = False
    per_slot = []
    for slot in range(LEASE_SLOTS):
        before = len(pool.lease_batcher.pending)
        pool.renew_slot(slot, LEASE_SLOTS)
        per_slot.append(len(pool.lease_batcher.pending) - before)
    renewed = sorted(k.rpartition("/")[2] for k in pool.lease_batcher.pending)
    assert renewed == sorted(n.name for n in pool.nodes if n.alive)
    assert sum(per_slot) == 24 and max(per_slot) <= -(-25 // LEASE_SLOTS)


def test_fewer_nodes_than_slots_renew_each_once() -> None:
    pool = _pool(3)
    for slot in range(3):
        pool.renew_slot(slot, 3)
    assert len(pool.lease_batcher.pending) == 3


def test_the_pod_watch_keeps_only_this_pools_nodes() -> None:
    pool = _pool(2)
    ours = MakePod().typed().name("a").namespace("default").node(pool.nodes[0].name)
    theirs = MakePod().typed().name("b").namespace("default").node("kubera-node-99999")
    keep = pool._ours
    assert keep(ours.container("c", "nginx").obj())
    assert not keep(theirs.container("c", "nginx").obj())
