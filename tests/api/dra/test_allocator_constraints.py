"""Upstream's allocator test table (allocatortesting.TestAllocator), second half:
matchAttribute constraints, configs, broken inputs, the result size limit and
firstAvailable (prioritized list). Row names are upstream's."""

from __future__ import annotations

import pytest

from services.api.dra.allocator import ALLOCATION_RESULTS_MAX_SIZE, DeviceID
from tests.api.dra.allocator_table import (
    ATTRS_1,
    BOOL_ATTR,
    CA,
    CB,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEV0,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    DRIVER_B,
    INT_ATTR,
    NODE1,
    NS,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    STRING_ATTR,
    SUB0,
    SUB1,
    VERSION_ATTR,
    Case,
    all_req,
    cfg,
    check,
    claim,
    cls,
    dev,
    first,
    local,
    many,
    match,
    mem_at_least,
    one,
    opaque,
    req,
    result,
    slc,
    sub,
)
from tests.builders import device, device_class

CASES: dict[str, Case] = {
    "with-constraint": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                req(REQ1, CLASS_A),
                constraints=[
                    match(INT_ATTR),
                    match(VERSION_ATTR),
                    match(STRING_ATTR),
                    match(BOOL_ATTR),
                ],
            )
        ],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, **ATTRS_1), device(DEV2, **ATTRS_1))
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ1, DRIVER_A, POOL1, DEV2))
        ],
    ),
    "with-constraint-non-existent-attribute": Case(
        claims=[
            claim(
                CLAIM0, req(REQ0, CLASS_A), constraints=[match(f"{DRIVER_A}/nonExistentAttribute")]
            )
        ],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        unfit=(
            f"{NS}/{CLAIM0}",
            "satisfy the claim's constraints (matchAttribute driver-a/nonExistentAttribute)",
        ),
    ),
    "with-constraint-not-matching-int-attribute": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[match(INT_ATTR)])],
        classes=[CA, CB],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, numa=1), device(DEV2, numa=2))],
        unfit=(f"{NS}/{CLAIM0}", "constraints (matchAttribute driver-a/numa)"),
    ),
    "with-constraint-not-matching-int-attribute-all-devices": Case(
        claims=[claim(CLAIM0, all_req(REQ0, CLASS_A), constraints=[match(INT_ATTR)])],
        classes=[CA, CB],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, numa=1), device(DEV2, numa=2))],
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": cannot add device driver-a/pool-1/device-2 because a claim constraint would not be satisfied',
    ),
    "with-constraint-not-matching-string-attribute": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[match(STRING_ATTR)])],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, stringAttribute="stringAttributeValue"),
                device(DEV2, stringAttribute="stringAttributeValue2"),
            )
        ],
        unfit=(f"{NS}/{CLAIM0}", "matchAttribute driver-a/stringAttribute"),
    ),
    "with-constraint-not-matching-bool-attribute": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[match(BOOL_ATTR)])],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, boolAttribute=True),
                device(DEV2, boolAttribute=False),
            )
        ],
        unfit=(f"{NS}/{CLAIM0}", "matchAttribute driver-a/boolAttribute"),
    ),
    "with-constraint-not-matching-version-attribute": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[match(VERSION_ATTR)])],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, driverVersion={"version": "1.0.0"}),
                device(DEV2, driverVersion={"version": "2.0.0"}),
            )
        ],
        unfit=(f"{NS}/{CLAIM0}", "matchAttribute driver-a/driverVersion"),
    ),
    "with-constraint-for-request": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                req(REQ1, CLASS_A),
                constraints=[match(VERSION_ATTR, REQ0)],
            )
        ],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, driverVersion={"version": "1.0.0"}),
                device(DEV2, driverVersion={"version": "2.0.0"}),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV1), dev(REQ1, DRIVER_A, POOL1, DEV2))
        ],
    ),
    # device-1 fails the second constraint with every other device: backtrack.
    "with-constraint-for-request-retry": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                req(REQ1, CLASS_A),
                constraints=[match(VERSION_ATTR, REQ0), match(STRING_ATTR)],
            )
        ],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, driverVersion={"version": "1.0.0"}, stringAttribute="a"),
                device(DEV2, driverVersion={"version": "2.0.0"}, stringAttribute="b"),
                device(DEV3, driverVersion={"version": "3.0.0"}, stringAttribute="b"),
            )
        ],
        results=[
            result(local(NODE1), dev(REQ0, DRIVER_A, POOL1, DEV2), dev(REQ1, DRIVER_A, POOL1, DEV3))
        ],
    ),
    # A config covering every request of the claim lists none ("empty means all").
    "with-class-device-config": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[cls(CLASS_A, DRIVER_A, "classAttribute")],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                config=[cfg("FromClass", [], DRIVER_A, "classAttribute")],
            )
        ],
    ),
    "with-class-device-config-with-multiple-request-and-configs": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A), req(REQ1, CLASS_A), req(REQ2, CLASS_B))],
        classes=[
            cls(CLASS_A, DRIVER_A, "classAttribute-A"),
            cls(CLASS_B, DRIVER_B, "classAttribute-B"),
        ],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, 2), one(SLICE2, NODE1, POOL1, DRIVER_B)],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV0),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                dev(REQ2, DRIVER_B, POOL1, DEV1),
                config=[
                    cfg("FromClass", [REQ0, REQ1], DRIVER_A, "classAttribute-A"),
                    cfg("FromClass", [REQ2], DRIVER_B, "classAttribute-B"),
                ],
            )
        ],
    ),
    "claim-with-device-config": Case(
        claims=[
            claim(
                CLAIM0, req(REQ0, CLASS_A), config=[{"opaque": opaque(DRIVER_A, "deviceAttribute")}]
            )
        ],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                config=[cfg("FromClaim", [], DRIVER_A, "deviceAttribute")],
            )
        ],
    ),
    "unknown-selector": Case(
        claims=[
            claim(
                CLAIM0, {"name": REQ0, "exactly": {"deviceClassName": CLASS_A, "selectors": [{}]}}
            )
        ],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL expression empty (unsupported selector type?)",
    ),
    "unknown-allocation-mode": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, mode="future-mode"))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="unsupported count mode future-mode",
    ),
    "unknown-constraint": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A), constraints=[{}])],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="empty constraint (unsupported constraint type?)",
    ),
    "invalid-CEL-one-device": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 1, "noSuchVar"))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}", selector #0: CEL compile error',
    ),
    "invalid-CEL-one-device-class": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[device_class(CLASS_A, "noSuchVar")],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error=f'class "{CLASS_A}", selector #0: CEL compile error',
    ),
    "invalid-CEL-all-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 0, "noSuchVar", mode="All"))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        error="CEL compile error",
    ),
    "too-many-devices-single-request": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 500))],
        classes=[CA],
        error="number of requested devices 500 exceeds the claim limit of 32",
    ),
    "many-devices-okay": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE))],
        classes=[CA],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE)],
        results=[
            result(
                local(NODE1),
                *(
                    dev(REQ0, DRIVER_A, POOL1, f"device-{i}")
                    for i in range(ALLOCATION_RESULTS_MAX_SIZE)
                ),
            )
        ],
    ),
    "too-many-devices-total": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, ALLOCATION_RESULTS_MAX_SIZE), req(REQ1, CLASS_A))],
        classes=[CA],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, ALLOCATION_RESULTS_MAX_SIZE + 1)],
        error="exceeds the claim limit",
    ),
    "prioritized-list-first-unavailable": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_B), sub(SUB1, CLASS_A)))],
        classes=[CA, CB],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    "prioritized-list-non-available": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_B, 2), sub(SUB1, CLASS_A, 2)))],
        classes=[CA, CB],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A), one(SLICE2, NODE1, POOL2, DRIVER_B)],
        unfit=(
            f"{NS}/{CLAIM0}",
            f'request "{REQ0}": no subrequest can be allocated ({SUB0}: needs 2 device(s) of class "{CLASS_B}", 1 of 1 matching are free; {SUB1}: needs 2',
        ),
    ),
    "prioritized-list-device-config": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, sub(SUB0, CLASS_A), sub(SUB1, CLASS_B, 2)),
                config=[
                    {"requests": [f"{REQ0}/{SUB0}"], "opaque": opaque(DRIVER_A, "foo")},
                    {"requests": [f"{REQ0}/{SUB1}"], "opaque": opaque(DRIVER_B, "bar")},
                ],
            )
        ],
        classes=[CA, CB],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_B, device(DEV1), device(DEV2))],
        results=[
            result(
                local(NODE1),
                dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEV1),
                dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEV2),
                config=[cfg("FromClaim", [], DRIVER_B, "bar")],
            )
        ],
    ),
    "prioritized-list-class-config": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 2), sub(SUB1, CLASS_B, 2)))],
        classes=[cls(CLASS_A, DRIVER_A, "foo"), cls(CLASS_B, DRIVER_B, "bar")],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_B, device(DEV1), device(DEV2)),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, device(DEV3)),
        ],
        results=[
            result(
                local(NODE1),
                dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEV1),
                dev(f"{REQ0}/{SUB1}", DRIVER_B, POOL1, DEV2),
                config=[cfg("FromClass", [], DRIVER_B, "bar")],
            )
        ],
    ),
    "prioritized-list-subrequests-with-expressions": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A, 1, mem_at_least("1Gi")),
                first(
                    REQ1,
                    sub(SUB0, CLASS_A, 1, mem_at_least("4Gi")),
                    sub(SUB1, CLASS_A, 2, mem_at_least("2Gi")),
                ),
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, capacity={"memory": "2Gi"}),
                device(DEV2, capacity={"memory": "2Gi"}),
                device(DEV3, capacity={"memory": "1Gi"}),
            )
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV3),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV1),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-parent-request": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A, 1, mem_at_least("8Gi")),
                first(
                    REQ1,
                    sub(SUB0, CLASS_A, 1, mem_at_least("2Gi")),
                    sub(SUB1, CLASS_A, 1, mem_at_least("1Gi")),
                ),
                constraints=[match(VERSION_ATTR, REQ0, REQ1)],
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, capacity={"memory": "8Gi"}, driverVersion={"version": "1.0.0"}),
            ),
            slc(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEV2, capacity={"memory": "2Gi"}, driverVersion={"version": "2.0.0"}),
                device(DEV3, capacity={"memory": "1Gi"}, driverVersion={"version": "1.0.0"}),
            ),
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL2, DEV3),
            )
        ],
    ),
    "prioritized-list-subrequests-with-constraints-ref-sub-request": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A, 1, mem_at_least("8Gi")),
                first(
                    REQ1,
                    sub(SUB0, CLASS_A, 1, mem_at_least("2Gi")),
                    sub(SUB1, CLASS_A, 1, mem_at_least("1Gi")),
                ),
                constraints=[match(VERSION_ATTR, REQ0, f"{REQ1}/{SUB0}")],
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                device(DEV1, capacity={"memory": "8Gi"}, driverVersion={"version": "1.0.0"}),
            ),
            slc(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                device(DEV2, capacity={"memory": "2Gi"}, driverVersion={"version": "2.0.0"}),
            ),
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL2, DEV2),
            )
        ],
    ),
    "prioritized-list-subrequests-with-allocation-mode-all": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_A)))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV2))],
    ),
    "prioritized-list-allocation-mode-all-multiple-requests": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                first(REQ1, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_A)),
            )
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1), device(DEV2))],
        results=[
            result(
                local(NODE1),
                dev(REQ0, DRIVER_A, POOL1, DEV1),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV2),
            )
        ],
    ),
    "prioritized-list-multi-request": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ1, CLASS_A, 1, mem_at_least("8Gi")),
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 1, mem_at_least("8Gi")),
                    sub(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
            )
        ],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, device(DEV1, capacity={"memory": "8Gi"})),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, device(DEV2, capacity={"memory": "4Gi"})),
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEV2),
            )
        ],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
