"""Upstream's allocator test table (allocatortesting.TestAllocator): the consumable
capacity rows (features ConsumableCapacity): devices that allow multiple allocations
shared by several requests while their capacity lasts, request policies (default,
validRange, validValues) rounding and refusing amounts, shares in use, allocation mode
All, distinctAttribute constraints, the combination with partitionable devices, and the
gate turned off. Row names are upstream's.

Not ported: the eleven list-attributes-*distinct* rows, which need list-typed attributes
(DRAListTypeAttributes) that kubera's DeviceAttribute does not have.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from services.api.dra.allocator import DeviceID
from services.api.features import DRA_CONSUMABLE_CAPACITY
from tests.api.dra.allocator_table import (
    BOOL_ATTR,
    CA,
    CAP0,
    CAP1,
    CLAIM0,
    CLAIM1,
    CLASS_A,
    DRIVER_A,
    INT_ATTR,
    NODE1,
    NS,
    POOL1,
    REQ0,
    REQ1,
    REQ2,
    REQ3,
    SET1,
    SET2,
    SLICE1,
    SLICE2,
    STRING_ATTR,
    SUB0,
    SUB1,
    VERSION_ATTR,
    Case,
    all_req,
    asking,
    caps,
    check,
    claim,
    counter_slice,
    first,
    local,
    mem_at_least,
    multi_class,
    one,
    pdev,
    ranged,
    req,
    result,
    share,
    shared,
    slc,
    sub,
    valued,
)
from tests.builders import slice_device

DEV1, DEV2, DEV3, DEV4 = "device-1", "device-2", "device-3", "device-4"
MULTI, DEDICATED = multi_class(CLASS_A, DRIVER_A, True), multi_class(CLASS_A, DRIVER_A, False)
C0, C1 = f"{NS}/{CLAIM0}", f"{NS}/{CLAIM1}"


def d(name: str, **attrs: object) -> dict:
    return shared(slice_device(name, **attrs))


def pool1(*devices: dict, count: int = 1) -> object:
    return slc(SLICE1, NODE1, POOL1, DRIVER_A, *devices, count=count)


def r(request: str, q: str | None = None, cls: str = CLASS_A) -> dict:
    x = req(request, cls)
    return asking(x, q) if q is not None else x


def local1(*devices: dict) -> dict:
    return result(local(NODE1), *devices)


def s(request: str, name: str, **consumed: str) -> dict:
    return share(request, DRIVER_A, POOL1, name, **consumed)


def in_use(name: str, **consumed: str) -> dict[DeviceID, dict[str, Decimal]]:
    return {
        DeviceID(DRIVER_A, POOL1, name): {
            k.replace("_", "-"): Decimal(v) for k, v in consumed.items()
        }
    }


CASES: dict[str, Case] = {
    "consumable-capacity-disabled-feature": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        gates={DRA_CONSUMABLE_CAPACITY: False},
        error=(
            f"claim {CLAIM0}, request {REQ0}: has capacity requests, but the "
            "DRAConsumableCapacity feature is disabled"
        ),
    ),
    "consumable-capacity-disabled-feature-with-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, asking(sub(SUB0, CLASS_A), "1"), asking(sub(SUB1, CLASS_A), "1")),
            )
        ],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        gates={DRA_CONSUMABLE_CAPACITY: False},
        error=(
            f"claim {CLAIM0}, subrequest {SUB0}: has capacity requests, but the "
            "DRAConsumableCapacity feature is disabled"
        ),
    ),
    # The request names a capacity the device lacks.
    "consumable-capacity-multi-allocatable-device-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[CA],
        slices=[pool1(caps(d(DEV1), capacity_1="1"))],
        unfit=(C0, f'request "{REQ0}"'),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-with-missing-capacity-request": Case(
        claims=[claim(CLAIM0, asking(all_req(REQ0, CLASS_A), "1"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_1="1"))],
        unfit=(C0, "no device"),
    ),
    # No capacity: both claims share the device, consuming nothing.
    "consumable-capacity-multi-allocatable-device-without-capacity-without-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0)), claim(CLAIM1, r(REQ0))],
        classes=[MULTI],
        slices=[pool1(d(DEV1))],
        results=[local1(s(REQ0, DEV1)), local1(s(REQ0, DEV1))],
    ),
    # No request and no policy: a share takes the whole capacity.
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0)), claim(CLAIM1, r(REQ0))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0="1"), caps(d(DEV2), capacity_0="1"))],
        results=[local1(s(REQ0, DEV1, capacity_0="1")), local1(s(REQ0, DEV2, capacity_0="1"))],
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-without-capacity-request-block": Case(
        claims=[claim(CLAIM0, r(REQ0)), claim(CLAIM1, r(REQ0))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0="2"))],
        unfit=(C1, "with the capacity the request consumes left"),
    ),
    "consumable-capacity-multi-allocatable-device-without-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1")), claim(CLAIM1, r(REQ0, "1"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0="2"))],
        results=[local1(s(REQ0, DEV1, capacity_0="1")), local1(s(REQ0, DEV1, capacity_0="1"))],
    ),
    # No request: the policy's default (2 of 4).
    "consumable-capacity-multi-allocatable-device-with-policy-without-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0)), claim(CLAIM1, r(REQ0))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("4")))],
        results=[local1(s(REQ0, DEV1, capacity_0="2")), local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-zero-request-policy": Case(
        claims=[claim(CLAIM0, r(REQ0)), claim(CLAIM1, r(REQ0))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=valued("1", "0")))],
        results=[local1(s(REQ0, DEV1, capacity_0="0")), local1(s(REQ0, DEV1, capacity_0="0"))],
    ),
    # 1 is not among validValues [0] and nothing above it is.
    "consumable-capacity-multi-allocatable-device-violates-zero-request-policy": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=valued("1", "0")))],
        unfit=(C0, f'request "{REQ0}"'),
    ),
    # 1 is rounded up to min 2.
    "consumable-capacity-multi-allocatable-device-with-range-policy-with-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1")), claim(CLAIM1, r(REQ0, "1"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("4")))],
        results=[local1(s(REQ0, DEV1, capacity_0="2")), local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    # 3 is rounded up to a step: 2 + 2.
    "consumable-capacity-multi-allocatable-device-with-range-policy-step": Case(
        claims=[claim(CLAIM0, r(REQ0, "3"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("4")))],
        results=[local1(s(REQ0, DEV1, capacity_0="4"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy": Case(
        claims=[claim(CLAIM0, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=valued("4", "1", "2")))],
        results=[local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-valid-values-policy-round-up": Case(
        claims=[claim(CLAIM0, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=valued("3", "1", "3")))],
        results=[local1(s(REQ0, DEV1, capacity_0="3"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-exceeded-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1")), claim(CLAIM1, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("2")))],
        unfit=(C1, f'request "{REQ0}"'),
    ),
    # 6 is above the policy's max 4, though the device has 10.
    "consumable-capacity-multi-allocatable-device-with-request-over-max-sharing-policy": Case(
        claims=[claim(CLAIM0, r(REQ0, "6"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("10")))],
        unfit=(C0, f'request "{REQ0}"'),
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-use-remaining": Case(
        claims=[claim(CLAIM0, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("4")))],
        consumed=in_use(DEV1, capacity_0="2"),
        results=[local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-allocated-capacity-next-device": Case(
        claims=[claim(CLAIM0, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[
            pool1(caps(d(DEV1), capacity_0=ranged("2")), caps(d(DEV2), capacity_0=ranged("2")))
        ],
        consumed=in_use(DEV1, capacity_0="2"),
        results=[local1(s(REQ0, DEV2, capacity_0="2"))],
    ),
    # device-2 (2) has room for one request: matchAttribute moves both to device-1 (4).
    "consumable-capacity-with-multi-allocatable-device-backtrack": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0, "2"),
                r(REQ1, "2"),
                constraints=[{"matchAttribute": STRING_ATTR}],
            ),
            claim(CLAIM1, r(REQ0, "2")),
        ],
        classes=[CA],
        slices=[
            pool1(
                caps(d(DEV2, stringAttribute="stringAttributeValue1"), capacity_0=ranged("2")),
                caps(d(DEV1, stringAttribute="stringAttributeValue2"), capacity_0=ranged("4")),
            )
        ],
        results=[
            local1(s(REQ0, DEV1, capacity_0="2"), s(REQ1, DEV1, capacity_0="2")),
            local1(s(REQ0, DEV2, capacity_0="2")),
        ],
    ),
    "consumable-capacity-multi-allocatable-device-with-subrequest": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    asking(sub(SUB0, CLASS_A), "4"),
                    asking(sub(SUB1, CLASS_A), "2"),
                    sub(SUB1, CLASS_A),
                ),
            )
        ],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("2")))],
        results=[local1(s(f"{REQ0}/{SUB1}", DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-with-no-available-consumable-capacity": Case(
        claims=[claim(CLAIM0, r(REQ0, "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("2")))],
        consumed=in_use(DEV1, capacity_0="2"),
        unfit=(C0, f'request "{REQ0}"'),
    ),
    # All: a device without the capacity, or with too little, is not part of "all".
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-no-capacity": Case(
        claims=[claim(CLAIM0, asking(all_req(REQ0, CLASS_A), "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0="2"), d(DEV2))],
        results=[local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-filter-out-insufficient-capacity": Case(
        claims=[claim(CLAIM0, asking(all_req(REQ0, CLASS_A), "2"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0="2"), caps(d(DEV2), capacity_0="1"))],
        results=[local1(s(REQ0, DEV1, capacity_0="2"))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-sufficient": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"), asking(all_req(REQ1, CLASS_A), "1"))],
        classes=[CA],
        slices=[pool1(caps(d(DEV1), capacity_0="2"), caps(d(DEV2), capacity_0="1"))],
        results=[
            local1(
                s(REQ0, DEV1, capacity_0="1"),
                s(REQ1, DEV1, capacity_0="1"),
                s(REQ1, DEV2, capacity_0="1"),
            )
        ],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-sufficient": Case(
        claims=[claim(CLAIM0, asking(all_req(REQ0, CLASS_A), "1"))],
        classes=[CA],
        slices=[pool1(caps(d(DEV1), capacity_0="2"), caps(d(DEV2), capacity_0="1"))],
        consumed=in_use(DEV1, capacity_0="1"),
        results=[local1(s(REQ0, DEV1, capacity_0="1"), s(REQ0, DEV2, capacity_0="1"))],
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-allocating-insufficient": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"), asking(all_req(REQ1, CLASS_A), "1"))],
        classes=[CA],
        slices=[pool1(caps(d(DEV1), capacity_0="1"), caps(d(DEV2), capacity_0="1"))],
        unfit=(C0, f'request "{REQ1}"'),
    ),
    "consumable-capacity-multi-allocatable-device-allocation-mode-all-in-use-insufficient": Case(
        claims=[claim(CLAIM0, asking(all_req(REQ0, CLASS_A), "1"))],
        classes=[CA],
        slices=[pool1(caps(d(DEV1), capacity_0="1"), caps(d(DEV2), capacity_0="1"))],
        consumed=in_use(DEV1, capacity_0="1"),
        results=[local1(s(REQ0, DEV2, capacity_0="1"))],
    ),
    # A dedicated device: the request must fit its capacity; no share in the result.
    "consumable-capacity-dedicated-device-with-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[DEDICATED],
        slices=[pool1(caps(slice_device(DEV1), capacity_0="1"))],
        results=[local1({"request": REQ0, "driver": DRIVER_A, "pool": POOL1, "device": DEV1})],
    ),
    "consumable-capacity-dedicated-device-with-multiple-consumable-capacity-request": Case(
        claims=[claim(CLAIM0, r(REQ0, "1")), claim(CLAIM1, r(REQ0, "1"))],
        classes=[DEDICATED],
        slices=[pool1(caps(slice_device(DEV1), capacity_0=ranged("2")))],
        unfit=(C1, f'request "{REQ0}"'),
    ),
    "allow-multiple-allocations-exclude-multi-allocatable-device-by-class-selector": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[DEDICATED],
        slices=[pool1(caps(d(DEV1), capacity_0="1"))],
        unfit=(C0, "no device"),
    ),
    "allow-multiple-allocations-not-allocate-multi-allocatable-device-which-already-dedicated": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[MULTI],
        slices=[pool1(caps(d(DEV1), capacity_0=ranged("2")))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        unfit=(C0, f'request "{REQ0}"'),
    ),
    "allow-multiple-allocations-not-allocate-dedicated-device-which-change-from-multi-allocatable": Case(
        claims=[claim(CLAIM0, r(REQ0, "1"))],
        classes=[MULTI],
        slices=[pool1(caps(slice_device(DEV1), capacity_0=ranged("2")))],
        consumed=in_use(DEV1, capacity_0="1"),
        unfit=(C0, "no device"),
    ),
    # With partitionable devices: a share's counters are the device's, taken once.
    "allow-multiple-allocations-with-partitionable-device": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0),
                first(
                    REQ1,
                    sub(SUB0, CLASS_A, 1, mem_at_least("6Gi")),
                    sub(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        classes=[MULTI],
        slices=[
            pool1(
                *(
                    shared(pdev(n, {SET1: {"memory": q}}, from_counters=True))
                    for n, q in ((DEV1, "4Gi"), (DEV2, "6Gi"), (DEV3, "4Gi"))
                ),
                count=2,
            ),
            counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={"memory": "8Gi"}),
        ],
        results=[
            local1(s(REQ0, DEV1, memory="4Gi"), s(f"{REQ1}/{SUB1}", DEV3, memory="4Gi")),
        ],
    ),
    # device-1's shares in use hold the set's only unit: device-2 cannot take it.
    "allow-multiple-allocations-with-shared-device-counter-cross-cycle": Case(
        claims=[
            claim(
                CLAIM0,
                asking(req(REQ0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"].mode == "b"'), "1"),
            )
        ],
        classes=[MULTI],
        slices=[
            pool1(
                shared(pdev(DEV1, {SET1: {CAP0: "1"}}, from_counters=True, mode="a")),
                shared(pdev(DEV2, {SET1: {CAP0: "1"}}, from_counters=True, mode="b")),
                count=2,
            ),
            counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={CAP0: "1"}),
        ],
        consumed=in_use(DEV1, capacity_0="1"),
        unfit=(C0, "shared counters"),
    ),
    "consumable-capacity-with-partitionable-device-multiple-capacity-pools": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0, "1"),
                r(REQ2, "2"),
                first(
                    REQ1,
                    asking(
                        sub(
                            SUB0,
                            CLASS_A,
                            1,
                            f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("4")) >= 0',
                        ),
                        "1",
                    ),
                    asking(
                        sub(
                            SUB1,
                            CLASS_A,
                            1,
                            f'device.capacity["{DRIVER_A}"]["{CAP0}"].compareTo(quantity("2")) >= 0',
                        ),
                        "1",
                    ),
                ),
            )
        ],
        classes=[CA],
        slices=[
            pool1(
                *(
                    caps(
                        shared(pdev(n, {SET1: {CAP0: c0}, SET2: {CAP1: "4"}}, from_counters=True)),
                        capacity_1=ranged("4"),
                    )
                    for n, c0 in ((DEV1, "2"), (DEV2, "4"), (DEV3, "2"))
                ),
                count=2,
            ),
            counter_slice(
                SLICE2,
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                counter_set_1={CAP0: "4"},
                counter_set_2={CAP1: "8"},
            ),
        ],
        results=[
            local1(
                s(REQ0, DEV1, capacity_0="1", capacity_1="2"),
                s(REQ2, DEV3, capacity_0="2", capacity_1="2"),
                s(f"{REQ1}/{SUB1}", DEV1, capacity_0="1", capacity_1="2"),
            )
        ],
    ),
    # distinctAttribute: bool for req-0/1, version for req-0/1/2, int for all four.
    "with-distinct-constraints": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0),
                r(REQ1),
                r(REQ2),
                r(REQ3),
                constraints=[
                    {"distinctAttribute": BOOL_ATTR, "requests": [REQ0, REQ1]},
                    {"distinctAttribute": VERSION_ATTR, "requests": [REQ0, REQ1, REQ2]},
                    {"distinctAttribute": INT_ATTR, "requests": [REQ0, REQ1, REQ2, REQ3]},
                ],
            )
        ],
        classes=[CA],
        slices=[
            pool1(
                *(
                    d(n, driverVersion={"version": v}, numa=i, boolAttribute=b)
                    for n, v, i, b in (
                        (DEV1, "1.0.0", 0, True),
                        (DEV2, "1.0.1", 1, False),
                        (DEV3, "1.0.2", 2, True),
                        (DEV4, "1.0.0", 3, True),
                    )
                )
            )
        ],
        results=[local1(s(REQ0, DEV1), s(REQ1, DEV2), s(REQ2, DEV3), s(REQ3, DEV4))],
    ),
    "with-distinct-constraints-attribute-not-set": Case(
        claims=[
            claim(
                CLAIM0, r(REQ0), constraints=[{"distinctAttribute": BOOL_ATTR, "requests": [REQ0]}]
            )
        ],
        classes=[CA],
        slices=[pool1(d(DEV1))],
        unfit=(C0, f'request "{REQ0}"'),
    ),
    "with-distinct-constraints-unknown-type-attribute": Case(
        claims=[
            claim(
                CLAIM0, r(REQ0), constraints=[{"distinctAttribute": BOOL_ATTR, "requests": [REQ0]}]
            )
        ],
        classes=[CA],
        slices=[pool1({**d(DEV1), "attributes": {"boolAttribute": {}}})],
        error="unsupported attribute value",
    ),
    "with-distinct-constraints-with-subrequests": Case(
        claims=[
            claim(
                CLAIM0,
                *(
                    first(
                        name,
                        sub(SUB0, CLASS_A, 1, f'device.attributes["{DRIVER_A}"].boolAttribute'),
                        sub(SUB1, CLASS_A),
                    )
                    for name in (REQ0, REQ1, REQ2)
                ),
                constraints=[{"distinctAttribute": BOOL_ATTR, "requests": [REQ0, REQ1]}],
            )
        ],
        classes=[CA],
        slices=[pool1(d(DEV1, boolAttribute=True), d(DEV2, boolAttribute=False))],
        results=[
            local1(s(f"{REQ0}/{SUB0}", DEV1), s(f"{REQ1}/{SUB1}", DEV2), s(f"{REQ2}/{SUB0}", DEV1))
        ],
    ),
    "distinct-constraint-one-multi-allocatable-device-with-distinct-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0, "1"),
                r(REQ1, "1"),
                constraints=[{"distinctAttribute": STRING_ATTR}],
            )
        ],
        classes=[MULTI],
        slices=[
            pool1(caps(d(DEV1, stringAttribute="stringAttributeValue"), capacity_0=ranged("2")))
        ],
        unfit=(C0, f'request "{REQ1}"'),
    ),
    "distinct-constraint-two-multi-allocatable-devices-with-distinct-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                r(REQ0, "2"),
                r(REQ1, "2"),
                constraints=[{"distinctAttribute": STRING_ATTR}],
            )
        ],
        classes=[MULTI],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                caps(d(DEV1, stringAttribute="stringAttributeValue1"), capacity_0=ranged("4")),
                count=2,
            ),
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                caps(d(DEV2, stringAttribute="stringAttributeValue2"), capacity_0=ranged("4")),
                count=2,
            ),
        ],
        results=[local1(s(REQ0, DEV1, capacity_0="2"), s(REQ1, DEV2, capacity_0="2"))],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
