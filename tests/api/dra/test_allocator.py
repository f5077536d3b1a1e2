"""Upstream's allocator test table (allocatortesting.TestAllocator), first half:
pools, slices and generations, classes, All mode, admin access, node selectors. Row
names are upstream's; see allocator_table for how a row is checked."""

from __future__ import annotations

import pytest

from services.api.dra.allocator import ERR_INVALID_POOLS, DeviceID
from services.api.features import DRA_ADMIN_ACCESS
from tests.api.dra.allocator_table import (
    ALL_NODES,
    CA,
    CB,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    CLASS_B,
    DEV1,
    DEV2,
    DRIVER_A,
    DRIVER_B,
    NODE1,
    NODE2,
    NS,
    POOL1,
    POOL2,
    POOL3,
    POOL4,
    REGION1,
    REGION2,
    REQ0,
    REQ1,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    _req,
    all_req,
    check,
    claim,
    dev,
    first,
    label_selector,
    local,
    mem_at_least,
    node,
    one,
    req,
    result,
    slc,
    sub,
)
from tests.builders import slice_device

CASES: dict[str, Case] = {
    "empty": Case(results=[]),
    "simple": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "other-node": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_B), one(SLICE2, NODE2, POOL2, DRIVER_A)],
        node=node(NODE2, REGION2),
        results=[result(local(NODE2), dev(REQ0, DRIVER_A, POOL2, DEV1))],
    ),
    "small-and-large": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A, 1, mem_at_least("1Gi")),
                req(REQ1, CLASS_A, 1, mem_at_least("2Gi")),
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV1, capacity={"memory": "1Gi"}),
                slice_device(DEV2, capacity={"memory": "2Gi"}),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ1, DRIVER_A, POOL1, DEV2))
        ],
    ),
    # The large device listed first is taken for the small request; undone to find a solution.
    "small-and-large-backtrack-requests": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A, 1, mem_at_least("1Gi")),
                req(REQ1, CLASS_A, 1, mem_at_least("2Gi")),
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV2, capacity={"memory": "2Gi"}),
                slice_device(DEV1, capacity={"memory": "1Gi"}),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ1, DRIVER_A, POOL1, DEV2))
        ],
    ),
    "small-and-large-backtrack-claims": Case(
        claims=[
            claim(CLAIM0, req(REQ0, CLASS_A, 1, mem_at_least("1Gi"))),
            claim(CLAIM1, req(REQ1, CLASS_A, 1, mem_at_least("2Gi"))),
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV2, capacity={"memory": "2Gi"}),
                slice_device(DEV1, capacity={"memory": "1Gi"}),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1)),
            result(local(NODE1), dev(REQ1, DRIVER_A, POOL1, DEV2)),
        ],
    ),
    "devices-split-across-different-slices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE2, NODE1, POOL2, DRIVER_A)],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL2, DEV1))
        ],
    ),
    # The newer generation replaces the old slice but is incomplete (1 of 2): not usable.
    "obsolete-slice": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc("slice-1-obsolete", NODE1, POOL1, DRIVER_A, slice_device(DEV1), count=2),
            slc(
                "slice-1-obsolete",
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV2),
                count=2,
                generation=2,
            ),
        ],
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ0}": no device of class "{CLASS_A}" matches'),
    ),
    "duplicate-slice": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), count=2),
            slc(SLICE1 + "-2", NODE1, POOL1, DRIVER_A, slice_device(DEV1), count=2),
        ],
        error=ERR_INVALID_POOLS,
    ),
    "no-slices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        unfit=(
            f"{NS}/{CLAIM0}",
            f'claim {NS}/{CLAIM0}, request "{REQ0}": no device of class "{CLASS_A}" matches',
        ),
    ),
    "not-enough-suitable-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A)), claim(CLAIM0, req(REQ1, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(
            f"{NS}/{CLAIM0}",
            f'request "{REQ1}": the matching devices of class "{CLASS_A}" are taken by other requests',
        ),
    ),
    "no-classes": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": device class "{CLASS_A}" does not exist',
    ),
    "unknown-class": Case(
        claims=[claim(CLAIM0, req(REQ0, "unknown-class"))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error='device class "unknown-class" does not exist',
    ),
    "empty-class": Case(
        claims=[claim(CLAIM0, req(REQ0, ""))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": missing device class name',
    ),
    "no-claims-to-allocate": Case(
        classes=[CA], slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)], results=[]
    ),
    "all-devices-single": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "all-devices-many": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE1, NODE1, POOL2, DRIVER_A)],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL2, DEV1))
        ],
    ),
    "all-devices-of-the-incomplete-pool": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), count=2)],
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": asks for all devices, but resource pool driver-a/pool-1 is currently being updated',
    ),
    "all-devices-plus-another": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A)), claim(CLAIM1, req(REQ0, CLASS_B))],
        classes=[CA, CB],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE1, NODE1, POOL1, DRIVER_B)],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1)),
            result(local(NODE1), dev(REQ0, DRIVER_B, POOL1, DEV1)),
        ],
    ),
    "all-devices-plus-another-reversed": Case(
        claims=[claim(CLAIM1, req(REQ0, CLASS_B)), claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA, CB],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE1, NODE1, POOL1, DRIVER_B)],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_B, POOL1, DEV1)),
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1)),
        ],
    ),
    "all-devices-many-plus-another": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A)), claim(CLAIM1, req(REQ0, CLASS_B))],
        classes=[CA, CB],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2)),
            one(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        results=[
            result(
                local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL1, DEV2)
            ),
            result(local(NODE1), dev(REQ0, DRIVER_B, POOL1, DEV1)),
        ],
    ),
    "all-devices-many-plus-another-reversed": Case(
        claims=[claim(CLAIM1, req(REQ0, CLASS_B)), claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA, CB],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2)),
            one(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_B, POOL1, DEV1)),
            result(
                local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL1, DEV2)
            ),
        ],
    ),
    "all-devices-no-solution": Case(
        claims=[claim(CLAIM1, req(REQ0, CLASS_A)), claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(
            f"{NS}/{CLAIM0}",
            f'request "{REQ0}": all 1 devices of class "{CLASS_A}" cannot be allocated together',
        ),
    ),
    "all-devices-no-solution-reversed": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A)), claim(CLAIM1, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(
            f"{NS}/{CLAIM1}",
            f'request "{REQ0}": the matching devices of class "{CLASS_A}" are taken',
        ),
    ),
    "all-devices-slice-without-devices": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(f"{NS}/{CLAIM0}", f'no device of class "{CLASS_A}" matches'),
    ),
    "all-devices-no-slices": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        classes=[CA],
        unfit=(f"{NS}/{CLAIM0}", f'no device of class "{CLASS_A}" matches'),
    ),
    "all-devices-some-allocated": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        unfit=(f"{NS}/{CLAIM0}", f'asks for all 2 devices of class "{CLASS_A}", 1 in use'),
    ),
    "all-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A, admin=True))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1, True),
                dev(REQ0, DRIVER_A, POOL1, DEV2, True),
            )
        ],
    ),
    # The All request cannot have device-1: the first request of the same claim took it.
    "all-devices-some-allocating-admin-access": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, admin=True), all_req(REQ1, CLASS_A, admin=True))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ1}"'),
    ),
    "count-devices-some-allocated-admin-access": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2, admin=True))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1, True),
                dev(REQ0, DRIVER_A, POOL1, DEV2, True),
            )
        ],
    ),
    "separate-claims-share-device-admin-access": Case(
        claims=[
            claim(CLAIM0, req(REQ0, CLASS_A, admin=True)),
            claim(CLAIM1, req(REQ0, CLASS_A, admin=True)),
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1, True)),
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1, True)),
        ],
    ),
    "admin-access-claims-device-allocating-for-non-admin-access": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A)), claim(CLAIM1, req(REQ0, CLASS_A, admin=True))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1)),
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1, True)),
        ],
    ),
    "all-devices-slice-without-devices-prioritized-list": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_B)))],
        classes=[CA, CB],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE2, NODE1, POOL2, DRIVER_B)],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEV1))],
    ),
    "all-devices-no-slices-prioritized-list": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_B)))],
        classes=[CA, CB],
        slices=[one(SLICE2, NODE1, POOL2, DRIVER_B)],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEV1))],
    ),
    "all-devices-some-allocated-prioritized-list": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_B)))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        classes=[CA, CB],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2)),
            one(SLICE2, NODE1, POOL2, DRIVER_B),
        ],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL2, DEV1))],
    ),
    "network-attached-device": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A)],
        results=[result(label_selector("region", REGION1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    "unsuccessful-allocation-network-attached-device": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[one(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A)],
        node=node(NODE2, REGION2),
        unfit=(f"{NS}/{CLAIM0}", "no device"),
    ),
    "many-network-attached-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 4))],
        classes=[CA],
        slices=[
            one(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one(SLICE1, ALL_NODES, POOL2, DRIVER_A),
            one(SLICE1, label_selector("planet", "earth"), POOL3, DRIVER_A),
            one(SLICE1, local(NODE1), POOL4, DRIVER_A),
        ],
        results=[
            result(
                # The union of the slices' selectors.
                {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [_req("region", REGION1), _req("planet", "earth")],
                            "matchFields": [_req("metadata.name", NODE1)],
                        }
                    ]
                },
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                dev(REQ0, DRIVER_A, POOL2, DEV1),
                dev(REQ0, DRIVER_A, POOL3, DEV1),
                dev(REQ0, DRIVER_A, POOL4, DEV1),
            )
        ],
    ),
    # Once a device is node-local, the selector is for that node.
    "local-and-network-attached-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2))],
        classes=[CA],
        slices=[
            one(SLICE1, label_selector("region", REGION1), POOL1, DRIVER_A),
            one(SLICE1, NODE1, POOL2, DRIVER_A),
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ0, DRIVER_A, POOL2, DEV1))
        ],
    ),
    "several-different-drivers": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A)), claim(CLAIM0, req(REQ0, CLASS_B))],
        classes=[CA, CB],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2)),
            one(SLICE1, NODE1, POOL1, DRIVER_B),
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1)),
            result(local(NODE1), dev(REQ0, DRIVER_B, POOL1, DEV1)),
        ],
    ),
    "already-allocated-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)},
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(
            f"{NS}/{CLAIM0}",
            f'needs 1 device(s) of class "{CLASS_A}", 0 of 1 matching are free',
        ),
    ),
    "admin-access-disabled": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, admin=True))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        gates={DRA_ADMIN_ACCESS: False},
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": admin access is requested, but the feature is disabled',
    ),
    "admin-access-enabled": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, admin=True))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)},
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1, True))],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
