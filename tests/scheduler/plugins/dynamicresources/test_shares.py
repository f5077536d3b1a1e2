"""Shares of devices that allow multiple allocations (consumable capacity) in the claim
tracker: a result with a shareID does not hold its device; what the shares consume is
summed per device (upstream's AggregatedCapacity), with the claims in flight applied as
the device counts apply them, and the Allocator gets it."""

from __future__ import annotations

import random
from decimal import Decimal
from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import DeviceID
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker
from tests.scheduler.plugins.dynamicresources.test_fixes import FakeInformer

NS = "default"


def _claim(i: int, rv: int, shares: list[tuple[int, int]], *, gen: int = 0) -> Any:
    """Claim c<i>: one share of device d<n> consuming <q> of "memory" per (n, q)."""
    c = resource_pb2.ResourceClaim()
    c.metadata.namespace, c.metadata.name = NS, f"c{i}"
    c.metadata.uid = f"uid-c{i}" + (f"-{gen}" if gen else "")
    c.metadata.resource_version = str(rv)
    for n, q in shares:
        r = c.status.allocation.devices.results.add(
            request="r", driver="gpu", pool="n", device=f"d{n}", share_id=f"s{i}-{n}"
        )
        r.consumed_capacity["memory"] = str(q)
    return c


def test_a_share_does_not_hold_its_device_but_counts_its_capacity() -> None:
    informer = FakeInformer()
    tracker = ClaimTracker(informer)
    informer.put(_claim(1, 5, [(1, 2)]))
    informer.put(_claim(2, 6, [(1, 3)]))
    assert tracker.allocated_devices() == set()
    assert tracker.consumed_capacity() == {DeviceID("gpu", "n", "d1"): {"memory": Decimal(5)}}
    tracker.signal_pending(_claim(3, 7, [(1, 1)]))
    assert tracker.consumed_capacity()[DeviceID("gpu", "n", "d1")] == {"memory": Decimal(6)}
    informer.delete(f"{NS}/c1")
    tracker.remove_pending("uid-c3")
    assert tracker.consumed_capacity() == {DeviceID("gpu", "n", "d1"): {"memory": Decimal(3)}}


@pytest.mark.parametrize("seed", [3, 4])
def test_shares_answer_what_a_walk_over_every_claim_answers(seed: int) -> None:
    """Random adds, updates, deletes, pending and assumed allocations over 8 claims and 3
    devices: the tracker over the informer's handlers and the walking one agree."""
    rng = random.Random(seed)
    informer = FakeInformer()
    counting = ClaimTracker(informer)
    walking = ClaimTracker(informer.store)
    gens = [0] * 8
    rv = 1
    for _ in range(1500):
        rv += 1
        i = rng.randrange(8)
        key = f"{NS}/c{i}"
        op = rng.randrange(6)
        shares = [(n, rng.randrange(1, 4)) for n in rng.sample(range(3), rng.randrange(3))]
        uid = _claim(i, rv, [], gen=gens[i]).metadata.uid
        if op == 0 and key in informer.store:
            gone = informer.store[key]
            informer.delete(key)
            walking.observed(gone, deleted=True)
            gens[i] += 1
        elif op == 1:
            c = _claim(i, rv, shares, gen=gens[i])
            informer.put(c)
            walking.observed(c)
        elif op == 2 and key in informer.store and not informer.store[key].status.allocation:
            for t in (counting, walking):
                t.signal_pending(_claim(i, rv, shares, gen=gens[i]))
        elif op == 3:
            for t in (counting, walking):
                t.remove_pending(uid)
        elif op == 4:
            for t in (counting, walking):
                t.assume(_claim(i, rv, shares, gen=gens[i]))
        elif op == 5:
            for t in (counting, walking):
                t.restore(uid)
        want = walking.consumed_capacity()
        assert counting.consumed_capacity() == want, f"step with op {op}"
        assert counting.allocated_devices() == set()
