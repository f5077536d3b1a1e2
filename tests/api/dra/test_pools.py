"""services/api/dra/pools.py: which pools reach a node, from which slices, complete or not
(upstream GatherPools), sorted by pool ID, slices by name; pools spanning nodes."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.dra.pools import DeviceCache, SliceIndex
from tests.api.dra.allocator_table import ALL_NODES, label_selector, local, node, slc
from tests.builders import slice_device

N1 = node("node-1", "region-1")


def _s(name: str, where: Any, pool: str, *devs: str, **kw: Any) -> resource_pb2.ResourceSlice:
    return slc(name, where, pool, "driver-a", *(slice_device(d) for d in devs), **kw)


# Each row: slices, then the pools reaching node-1 as (pool, [slice names], incomplete,
# invalid reason).
ROWS: dict[str, tuple[list[resource_pb2.ResourceSlice], list[tuple[Any, ...]]]] = {
    "node-name-matches-only-that-node": (
        [_s("a", "node-1", "p1", "d1"), _s("b", "node-2", "p2", "d1")],
        [("p1", ["a"], False, "")],
    ),
    "all-nodes-and-matching-selectors-reach": (
        [
            _s("a", ALL_NODES, "p1", "d1"),
            _s("b", label_selector("region", "region-1"), "p2", "d1"),
            _s("c", label_selector("region", "region-2"), "p3", "d1"),
            _s("d", local("node-1"), "p4", "d1"),
        ],
        [("p1", ["a"], False, ""), ("p2", ["b"], False, ""), ("p4", ["d"], False, "")],
    ),
    "pools-sorted-by-id-whatever-the-listing-order": (
        [
            _s("a", ALL_NODES, "p2", "d1"),
            _s("b", "node-1", "p1", "d1"),
            _s("c", ALL_NODES, "p3", "d1"),
        ],
        [("p1", ["b"], False, ""), ("p2", ["a"], False, ""), ("p3", ["c"], False, "")],
    ),
    "slices-of-a-pool-sorted-by-name": (
        [_s("z", "node-1", "p1", "d1", count=2), _s("a", "node-1", "p1", "d2", count=2)],
        [("p1", ["a", "z"], False, "")],
    ),
    "pool-complete-with-a-slice-for-another-node": (
        [_s("a", "node-1", "p1", "d1", count=2), _s("b", "node-2", "p1", "d2", count=2)],
        [("p1", ["a"], False, "")],
    ),
    "newer-generation-on-another-node-makes-the-pool-obsolete": (
        [
            _s("a", "node-1", "p1", "d1", count=2),
            _s("b", "node-2", "p1", "d2", count=2, generation=2),
        ],
        [],
    ),
    "older-generation-on-another-node-does-not-complete-the-pool": (
        [
            _s("a", "node-1", "p1", "d1", count=2, generation=2),
            _s("b", "node-2", "p1", "d2", count=2),
        ],
        [("p1", ["a"], True, "")],
    ),
    "incomplete-pool-is-not-validated": (
        [
            _s("a", "node-1", "p1", "d1", count=3),
            _s("b", "node-1", "p1", "d1", count=3),
        ],
        [("p1", ["a", "b"], True, "")],
    ),
    "newest-generation-replaces-older-slices": (
        [
            _s("old", "node-1", "p1", "d1", generation=1),
            _s("new", "node-1", "p1", "d2", generation=2),
            _s("older", "node-1", "p1", "d3", generation=1),
        ],
        [("p1", ["new"], False, "")],
    ),
    "fewer-slices-than-resource-slice-count-is-incomplete": (
        [_s("a", "node-1", "p1", "d1", count=2)],
        [("p1", ["a"], True, "")],
    ),
    "all-slices-of-the-generation-make-it-complete": (
        [_s("a", "node-1", "p1", "d1", count=2), _s("b", "node-1", "p1", "d2", count=2)],
        [("p1", ["a", "b"], False, "")],
    ),
    "duplicate-device-name-is-invalid": (
        [_s("a", "node-1", "p1", "d1", count=2), _s("b", "node-1", "p1", "d1", count=2)],
        [("p1", ["a", "b"], False, "duplicate device name d1")],
    ),
    "slice-naming-no-nodes-is-ignored": (
        [_s("a", None, "p1", "d1")],
        [],
    ),
}


@pytest.mark.parametrize("slices,want", ROWS.values(), ids=ROWS.keys())
def test_pools_reaching_node(
    slices: list[resource_pb2.ResourceSlice], want: list[tuple[Any, ...]]
) -> None:
    pools = SliceIndex(slices, DeviceCache()).pools(N1)
    got = [
        (p.name, [s.msg.metadata.name for s in p.slices], p.incomplete, p.invalid) for p in pools
    ]
    assert got == want


def test_cache_reuses_parsed_slice_until_the_message_changes() -> None:
    cache = DeviceCache()
    msg = _s("a", "node-1", "p1", "d1")
    first = cache.slice(msg)
    assert cache.slice(msg) is first
    copy = resource_pb2.ResourceSlice()
    copy.CopyFrom(msg)
    assert cache.slice(copy) is not first
    cache.prune([copy])
    assert len(cache) == 1


def test_cache_keeps_the_index_while_the_listing_holds_the_same_slices() -> None:
    cache = DeviceCache()
    a, b = _s("a", "node-1", "p1", "d1"), _s("b", "node-2", "p2", "d1")
    index = cache.index([a, b])
    assert cache.index([a, b]) is index  # a new list of the same messages
    assert cache.index([b, a]) is not index  # order matters for listing order
    newer = resource_pb2.ResourceSlice()
    newer.CopyFrom(a)
    rebuilt = cache.index([newer, b])
    assert rebuilt.pools(N1)[0].slices[0].msg is newer
    assert len(cache) == 2  # the entry of the replaced message is gone
