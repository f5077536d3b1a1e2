"""services/api/dra/pools.py for partitionable devices (upstream pools_experimental.go
GatherPools and buildPool): per-device node selection, multi-host pools completed from
their slices on other nodes (or left out when those are newer), counter-set slices, and the
DRAPartitionableDevices gate turned off."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import resource_pb2
from services.api.dra.pools import DeviceCache, SliceIndex
from tests.api.dra.allocator_table import (
    ALL_NODES,
    PER_DEVICE,
    counter_slice,
    label_selector,
    node,
    pdev,
    slc,
)

N1 = node("node-1", "region-1")


def _s(name: str, where: Any, pool: str, *devs: dict, **kw: Any) -> resource_pb2.ResourceSlice:
    return slc(name, where, pool, "driver-a", *devs, **kw)


def _c(name: str, where: Any, pool: str, count: int, **sets: dict) -> resource_pb2.ResourceSlice:
    return counter_slice(name, where, pool, "driver-a", count, **sets)


# Each row: slices, gate on?, then the pools reaching node-1 as (pool, [slices reaching],
# [other slices of the pool], [devices reaching node-1], incomplete, invalid reason).
ROWS: dict[str, tuple[list[resource_pb2.ResourceSlice], bool, list[tuple[Any, ...]]]] = {
    "per-device-node-selection-keeps-the-devices-reaching-the-node": (
        [
            _s(
                "a",
                PER_DEVICE,
                "p1",
                pdev("d1", on="node-1"),
                pdev("d2", on="node-2"),
                pdev("d3", on=ALL_NODES),
                pdev("d4", on=label_selector("region", "region-1")),
                pdev("d5", on=label_selector("region", "region-2")),
            )
        ],
        True,
        [("p1", ["a"], [], ["d1", "d3", "d4"], False, "")],
    ),
    "a-per-device-slice-with-no-device-here-does-not-reach": (
        [_s("a", PER_DEVICE, "p1", pdev("d1", on="node-2"))],
        True,
        [],
    ),
    "multi-host-pool-is-complete-with-its-slices-elsewhere": (
        [
            _s("a", "node-1", "p1", pdev("d1"), count=3),
            _s("b", "node-2", "p1", pdev("d2"), count=3),
            _c("c", "node-2", "p1", 3, counter_set_1={"mem": "1"}),
        ],
        True,
        [("p1", ["a"], ["b", "c"], ["d1"], False, "")],
    ),
    "multi-host-pool-missing-a-slice-is-incomplete": (
        [
            _s("a", "node-1", "p1", pdev("d1"), count=3),
            _s("b", "node-2", "p1", pdev("d2"), count=3),
        ],
        True,
        [("p1", ["a"], [], ["d1"], True, "")],
    ),
    "a-newer-generation-elsewhere-makes-the-pool-obsolete": (
        [
            _s("a", "node-1", "p1", pdev("d1"), count=2),
            _s("b", "node-2", "p1", pdev("d2"), count=2, generation=2),
        ],
        True,
        [],
    ),
    "counters-named-by-a-device-elsewhere-must-exist": (
        [
            _s("a", "node-1", "p1", pdev("d1", {"set-1": {"mem": "1"}}), count=2),
            _s("b", "node-2", "p1", pdev("d2", {"set-2": {"mem": "1"}}), count=2),
        ],
        True,
        [("p1", ["a"], ["b"], ["d1"], False, "counter set set-1 not found")],
    ),
    "gate-off-ignores-counter-and-per-device-slices": (
        [
            _s("a", "node-1", "p1", pdev("d1", {"set-1": {"mem": "1"}}), count=2),
            _c("b", "node-1", "p1", 2, set_1={"mem": "1"}),
            _s("c", PER_DEVICE, "p2", pdev("d1", on="node-1")),
        ],
        False,
        [("p1", ["a"], ["b"], ["d1"], False, "")],
    ),
}


@pytest.mark.parametrize(("slices", "gate", "want"), ROWS.values(), ids=ROWS.keys())
def test_pools_reaching_node(
    slices: list[resource_pb2.ResourceSlice], gate: bool, want: list[tuple[Any, ...]]
) -> None:
    pools = SliceIndex(slices, DeviceCache()).pools(N1, partitionable=gate)
    got = [
        (
            p.name,
            [s.msg.metadata.name for s in p.slices],
            [s.msg.metadata.name for s in p.others],
            [d.id.device for d in p.devices()],
            p.incomplete,
            p.invalid,
        )
        for p in pools
    ]
    assert got == want
