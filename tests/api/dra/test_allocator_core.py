"""Upstream's allocator test table (allocatortesting.TestAllocator), the core rows the
other modules do not hold: pools spanning nodes (checkSlicesInPool), invalid pools, the
search's bounded work (check-combinations-*), a claim config for two of three requests
and the result size limit. Row names are upstream's; see allocator_table for how a row
is checked. dracore."""

from __future__ import annotations

import pytest

from services.api.dra.allocator import ALLOCATION_RESULTS_MAX_SIZE as MAX
from services.api.dra.allocator import ERR_INVALID_POOLS, DeviceID
from tests.api.dra.allocator_table import (
    CA,
    CLAIM0,
    CLASS_A,
    DEV0,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    NODE1,
    NODE2,
    NS,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    Case,
    all_req,
    cfg,
    check,
    claim,
    dev,
    local,
    many,
    opaque,
    req,
    result,
    slc,
)
from tests.builders import slice_device

SLICE3, SLICE4, DEV4 = "slice-3", "slice-4", "device-4"
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'
C0 = f"{NS}/{CLAIM0}"


def _d(name: str) -> dict[str, object]:
    return slice_device(name)


def _pool_on(name: str, node: str, generation: int, *devices: str, count: int = 2) -> object:
    """A slice of pool-1 for `node` at `generation`, resourceSliceCount `count`."""
    return slc(name, node, POOL1, DRIVER_A, *map(_d, devices), count=count, generation=generation)


def _five_of_four(*slices: object) -> Case:
    """check-combinations-*: five devices asked of four; every combination is tried once
    (upstream's experimental allocator: 16 placements)."""
    return Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 5))],
        classes=[CA],
        slices=list(slices),  # type: ignore[arg-type]
        unfit=(C0, f'needs 5 device(s) of class "{CLASS_A}", 4 of 4 matching are free'),
        max_steps=16,
    )


CASES: dict[str, Case] = {
    "with-claim-config-for-two-requests": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                req(REQ1, CLASS_A),
                req(REQ2, CLASS_A),
                config=[{"requests": [REQ0, REQ1], "opaque": opaque(DRIVER_A, "deviceAttribute")}],
            )
        ],
        classes=[CA],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, 3)],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV0),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                dev(REQ2, DRIVER_A, POOL1, DEV2),
                config=[cfg("FromClaim", [REQ0, REQ1], DRIVER_A, "deviceAttribute")],
            )
        ],
    ),
    # Upstream's row asks for 500 devices (its name notwithstanding).
    "all-devices-invalid-CEL": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 500))],
        classes=[CA],
        error="exceeds the claim limit",
    ),
    "max-number-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, MAX))],
        classes=[CA],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, MAX)],
        results=[
            result(local(NODE1), *(dev(REQ0, DRIVER_A, POOL1, f"device-{i}") for i in range(MAX)))
        ],
    ),
    # The pool's other slice is node-2's: complete, and All takes node-1's devices only.
    "allocation-mode-all-with-multi-host-resource-pool": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[_pool_on(SLICE1, NODE1, 1, DEV1), _pool_on(SLICE2, NODE2, 1, DEV2)],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    # node-2 has generation 2: node-1's generation 1 is obsolete, the pool left out.
    "multi-host-resource-pool-with-stale-slice-for-current-node": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[_pool_on(SLICE1, NODE1, 1, DEV1), _pool_on(SLICE2, NODE2, 2, DEV2)],
        unfit=(C0, f'no device of class "{CLASS_A}" matches'),
    ),
    # Node-1's slices are complete by themselves: the newer generation elsewhere is not
    # looked for (upstream: "we'd like this to *not* be allocated").
    "multi-host-resource-pool-complete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE1, 1, DEV1),
            _pool_on(SLICE1, NODE1, 1, DEV2),
            _pool_on(SLICE2, NODE2, 2, DEV1),
            _pool_on(SLICE2, NODE2, 2, DEV2),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "multi-host-resource-pool-complete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE2, 1, DEV1),
            _pool_on(SLICE1, NODE2, 1, DEV2),
            _pool_on(SLICE2, NODE1, 2, DEV1),
            _pool_on(SLICE2, NODE1, 2, DEV2),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "multi-host-resource-pool-incomplete-update-from-node-1-to-node-2": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE1, 1, DEV1),
            _pool_on(SLICE1, NODE1, 1, DEV2),
            _pool_on(SLICE2, NODE2, 2, DEV1),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    # Node-1's generation 2 has one of two slices, and no other exists: incomplete.
    "multi-host-resource-pool-incomplete-update-from-node-2-to-node-1": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE2, 1, DEV1),
            _pool_on(SLICE1, NODE2, 1, DEV2),
            _pool_on(SLICE2, NODE1, 2, DEV1),
        ],
        unfit=(C0, f'no device of class "{CLASS_A}" matches'),
    ),
    "different-resourceslices-in-pool-can-target-different-nodes": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[_pool_on(SLICE1, NODE2, 1, DEV1), _pool_on(SLICE2, NODE1, 1, DEV2)],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV2))],
    ),
    "invalid-pool-is-ok-if-devices-can-be-allocated-from-other": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE1, 1, DEV1),
            _pool_on(SLICE2, NODE1, 1, DEV1),
            slc(SLICE3, NODE1, POOL2, DRIVER_A, _d(DEV2)),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL2, DEV2))],
    ),
    "invalid-pool-is-error-if-no-other-device-can-be-allocated": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            _pool_on(SLICE1, NODE1, 1, DEV1),
            _pool_on(SLICE2, NODE1, 1, DEV1),
            slc(SLICE3, NODE1, POOL2, DRIVER_A, _d(DEV2)),
        ],
        allocated={DeviceID(DRIVER_A, POOL2, DEV2)},
        error=ERR_INVALID_POOLS,
    ),
    "no-allocation-from-incomplete-pools": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[_pool_on(SLICE1, NODE1, 1, DEV1)],
        unfit=(C0, f'no device of class "{CLASS_A}" matches'),
    ),
    "check-combinations-within-single-request-single-pool-single-slice": _five_of_four(
        slc(SLICE1, NODE1, POOL1, DRIVER_A, *map(_d, (DEV1, DEV2, DEV3, DEV4)))
    ),
    "check-combinations-within-single-request-single-pool-multiple-slices": _five_of_four(
        _pool_on(SLICE1, NODE1, 1, DEV1, DEV2), _pool_on(SLICE2, NODE1, 1, DEV3, DEV4)
    ),
    "check-combinations-within-single-request-multiple-pools-multiple-slices": _five_of_four(
        _pool_on(SLICE1, NODE1, 1, DEV1),
        _pool_on(SLICE2, NODE1, 1, DEV2),
        slc(SLICE3, NODE1, POOL2, DRIVER_A, _d(DEV3), _d(DEV4)),
    ),
    "check-combinations-within-single-request-many-pools": _five_of_four(
        slc(SLICE1, NODE1, POOL1, DRIVER_A, _d(DEV1)),
        slc(SLICE2, NODE1, POOL2, DRIVER_A, _d(DEV2)),
        slc(SLICE3, NODE1, POOL3, DRIVER_A, _d(DEV3)),
        slc(SLICE4, NODE1, POOL4, DRIVER_A, _d(DEV4)),
    ),
    # {device-1, device-2} for req-1 first, then back: req-2 needs device-1.
    "check-combinations-with-backtracking": Case(
        claims=[claim(CLAIM0, req(REQ1, CLASS_A, 2), req(REQ2, CLASS_A, 1, TYPE_X))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV1, type="X"),
                slice_device(DEV2, type="Y"),
                slice_device(DEV3, type="Y"),
            )
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ1, DRIVER_A, POOL1, DEV2),
                dev(REQ1, DRIVER_A, POOL1, DEV3),
                dev(REQ2, DRIVER_A, POOL1, DEV1),
            )
        ],
        max_steps=12,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)


# upstream's allocatortesting/lexicographical_testing.go (a table of its own): pools by
# name, slices by name, whatever the listing order. The rows with binding conditions
# (such pools come last) belong to lane drabinding.
LEXICOGRAPHICAL: dict[str, Case] = {
    "lexicographical-sorting-pools": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2))],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL3, DRIVER_A, _d(DEV1)),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, _d(DEV1)),
            slc(SLICE3, NODE1, POOL1, DRIVER_A, _d(DEV1)),
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL2, DEV1))
        ],
    ),
    "lexicographical-sorting-slices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2))],
        classes=[CA],
        slices=[
            _pool_on(SLICE3, NODE1, 1, DEV3, count=3),
            _pool_on(SLICE2, NODE1, 1, DEV2, count=3),
            _pool_on(SLICE1, NODE1, 1, DEV1, count=3),
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL1, DEV2))
        ],
    ),
}


@pytest.mark.parametrize("case", LEXICOGRAPHICAL.values(), ids=LEXICOGRAPHICAL.keys())
def test_allocate_in_name_order(case: Case) -> None:
    check(case)
