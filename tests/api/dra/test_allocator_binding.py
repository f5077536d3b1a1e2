"""Upstream's allocator test table (allocatortesting.TestAllocator): the rows of device
binding conditions (DeviceBindingAndStatus: DRADeviceBindingConditions with
DRAResourceClaimDeviceStatus). Row names are upstream's; the partitionable-devices rows
with binding conditions are in test_allocator_partitionable.py. `features` off is
DRADeviceBindingConditions off in the row's gates."""

from __future__ import annotations

import pytest

from services.api.features import DRA_DEVICE_BINDING_CONDITIONS
from tests.api.dra.allocator_table import (
    CA,
    CLAIM0,
    CLASS_A,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    NODE1,
    NS,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    Case,
    allocator,
    bound_dev,
    bound_device,
    check,
    claim,
    dev,
    label_selector,
    local,
    req,
    result,
    slc,
)
from tests.builders import slice_device

PREP, FAIL = ["IsPrepare"], ["BindingFailed"]
#: upstream's DeviceBindingAndStatus off (either gate off turns it off).
OFF = {DRA_DEVICE_BINDING_CONDITIONS: False}
SLICE3 = "slice-3"
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'

CASES: dict[str, Case] = {
    "device-binding-conditions": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, bound_device(DEV1, PREP, FAIL))],
        results=[result(local(NODE1), bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL))],
    ),
    "binding-conditions-multiple-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), req(REQ1, CLASS_A, 1))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                bound_device(DEV1, PREP, FAIL),
                bound_device(DEV2, ["IsPrepare2"], ["BindingFailed2"]),
                bound_device(DEV3, ["IsPrepare3"], ["BindingFailed3"]),
            )
        ],
        results=[
            result(
                local(NODE1),
                bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL),
                bound_dev(REQ0, DRIVER_A, POOL1, DEV2, ["IsPrepare2"], ["BindingFailed2"]),
                bound_dev(REQ1, DRIVER_A, POOL1, DEV3, ["IsPrepare3"], ["BindingFailed3"]),
            )
        ],
    ),
    "binding-conditions-with-and-without": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A), req(REQ1, CLASS_A))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV1),
                bound_device(DEV2, PREP, FAIL),
            )
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                bound_dev(REQ1, DRIVER_A, POOL1, DEV2, PREP, FAIL),
            )
        ],
    ),
    "node-restriction": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                label_selector("planet", "earth"),
                POOL1,
                DRIVER_A,
                bound_device(DEV1, binds_to_node=True),
            )
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1))],
    ),
    # The optimized search: the binding condition on pool-2's device makes pool-2 be
    # searched after pool-1, so the answer is the same every time.
    "check-combinations-with-backtracking-across-slices-and-pools": Case(
        claims=[claim(CLAIM0, req(REQ1, CLASS_A, 2), req(REQ2, CLASS_A, 1, TYPE_X))],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, type="X"), count=2),
            slc(SLICE2, NODE1, POOL1, DRIVER_A, slice_device(DEV2, type="Y"), count=2),
            slc(SLICE3, NODE1, POOL2, DRIVER_A, bound_device(DEV3, PREP, type="Y")),
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ1, DRIVER_A, POOL1, DEV2),
                bound_dev(REQ1, DRIVER_A, POOL2, DEV3, PREP),
                dev(REQ2, DRIVER_A, POOL1, DEV1),
            )
        ],
    ),
    # The only device has binding conditions and the gates are off: never picked.
    "binding-conditions-without-feature-gate": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, bound_device(DEV1, PREP, FAIL))],
        gates=OFF,
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ0}"'),
    ),
}

#: kubera's own rows (not upstream's names; test_allocator_coverage counts only CASES).
OWN_CASES: dict[str, Case] = {
    # kubera's row: a pool with binding conditions listed first is still searched last
    # (upstream GatherPools appends those pools after the others).
    "kubera-pool-with-binding-conditions-goes-last": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, bound_device(DEV1, PREP, FAIL)),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, slice_device(DEV2)),
        ],
        results=[result(local(NODE1), dev(REQ0, DRIVER_A, POOL2, DEV2))],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_allocator_binding_conditions(name: str) -> None:
    check(CASES[name])


@pytest.mark.parametrize("name", list(OWN_CASES))
def test_allocator_binding_conditions_own(name: str) -> None:
    check(OWN_CASES[name])


def test_without_feature_gate_a_plain_device_is_picked_and_no_conditions_copied() -> None:
    case = CASES["binding-conditions-with-and-without"]
    alloc = allocator(
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A))], classes=[CA], slices=case.slices, gates=OFF
        )
    )
    got = alloc.allocate(case.node)
    assert isinstance(got, list)
    assert [(r.device, list(r.binding_conditions)) for r in got[0].devices.results] == [(DEV1, [])]
