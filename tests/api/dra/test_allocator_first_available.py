"""Upstream's allocator test table (allocatortesting.TestAllocator): firstAvailable
(prioritized list) rows: alternatives tried in order, All needing at least one device,
constraints naming a request or one of its subrequests, configs of the chosen
alternative, and the result size limit skipping alternatives without a blind search.
Row names are upstream's."""

from __future__ import annotations

import pytest

from services.api.dra.allocator import ALLOCATION_RESULTS_MAX_SIZE as MAX
from services.api.dra.allocator import DeviceID
from services.api.features import DRA_PRIORITIZED_LIST
from tests.api.dra.allocator_table import (
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
    NODE1,
    NODE2,
    NS,
    POOL1,
    POOL2,
    REQ0,
    REQ1,
    REQ2,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    VERSION_ATTR,
    Case,
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
from tests.builders import device_class, slice_device

GEN_V5 = f'device.attributes["{DRIVER_A}"].generation == "v5"'
TYPE_X = f'device.attributes["{DRIVER_A}"].type == "X"'
TYPE_Y = f'device.attributes["{DRIVER_A}"].type == "Y"'
R0S0, R0S1 = f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}"
GEN_V6 = f'device.attributes["{DRIVER_A}"].generation == "v6"'

CASES: dict[str, Case] = {
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
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_B, slice_device(DEV1), slice_device(DEV2))],
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
            slc(SLICE1, NODE1, POOL1, DRIVER_B, slice_device(DEV1), slice_device(DEV2)),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, slice_device(DEV3)),
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
                slice_device(DEV1, capacity={"memory": "2Gi"}),
                slice_device(DEV2, capacity={"memory": "2Gi"}),
                slice_device(DEV3, capacity={"memory": "1Gi"}),
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
                slice_device(DEV1, capacity={"memory": "8Gi"}, driverVersion={"version": "1.0.0"}),
            ),
            slc(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                slice_device(DEV2, capacity={"memory": "2Gi"}, driverVersion={"version": "2.0.0"}),
                slice_device(DEV3, capacity={"memory": "1Gi"}, driverVersion={"version": "1.0.0"}),
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
                slice_device(DEV1, capacity={"memory": "8Gi"}, driverVersion={"version": "1.0.0"}),
            ),
            slc(
                SLICE2,
                NODE1,
                POOL2,
                DRIVER_A,
                slice_device(DEV2, capacity={"memory": "2Gi"}, driverVersion={"version": "2.0.0"}),
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
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
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
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
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
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, capacity={"memory": "8Gi"})),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, slice_device(DEV2, capacity={"memory": "4Gi"})),
        ],
        results=[
            result(
                local(NODE1),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEV2),
            )
        ],
    ),
    # req-0 takes the 4Gi device through its second alternative so req-1 gets the 8Gi one.
    "prioritized-list-with-backtracking": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 1, mem_at_least("8Gi")),
                    sub(SUB1, CLASS_A, 1, mem_at_least("4Gi")),
                ),
                req(REQ1, CLASS_A, 1, mem_at_least("8Gi")),
            )
        ],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, capacity={"memory": "8Gi"})),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, slice_device(DEV2, capacity={"memory": "4Gi"})),
        ],
        results=[
            result(
                local(NODE1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEV2),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
            )
        ],
    ),
    # A first alternative over the result size limit is skipped, not an error.
    "prioritized-list-too-many-in-first-subrequest": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_B, 500), sub(SUB1, CLASS_A)))],
        classes=[CA, CB],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    "prioritized-list-allocation-mode-all": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_A)))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1), slice_device(DEV2))],
        allocated={DeviceID(DRIVER_A, POOL1, DEV2)},
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    # All must get at least one device, else the next alternative is tried.
    "prioritized-list-allocation-mode-all-with-selectors": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 0, GEN_V6, mode="All"),
                    sub(SUB1, CLASS_A, 0, GEN_V5, mode="All"),
                ),
            )
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, generation="v5"))],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    # All takes the selected devices of every pool reaching the node.
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 0, GEN_V6, mode="All"),
                    sub(SUB1, CLASS_A, 0, GEN_V5, mode="All"),
                ),
            )
        ],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, generation="v5")),
            slc(SLICE2, NODE1, POOL2, DRIVER_A, slice_device(DEV1, generation="v5")),
        ],
        results=[
            result(
                local(NODE1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL2, DEV1),
            )
        ],
    ),
    # ... but only of the pools reaching the node.
    "prioritized-list-allocation-mode-all-with-selectors-multiple-pools-across-nodes": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 0, GEN_V6, mode="All"),
                    sub(SUB1, CLASS_A, 0, GEN_V5, mode="All"),
                ),
            )
        ],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, slice_device(DEV1, generation="v5")),
            slc(
                SLICE2,
                NODE2,
                POOL2,
                DRIVER_A,
                slice_device(DEV1, generation="v5"),
                slice_device(DEV2, generation="v6"),
            ),
        ],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1))],
    ),
    # Only devices the class selects count for All.
    "prioritized-list-allocation-mode-all-with-selectors-deviceclass-subset": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0,
                    sub(SUB0, CLASS_A, 0, GEN_V6, mode="All"),
                    sub(SUB1, CLASS_A, 0, GEN_V5, mode="All"),
                ),
            )
        ],
        classes=[
            device_class(
                CLASS_A,
                f'device.driver == "{DRIVER_A}" && device.attributes["{DRIVER_A}"].selected',
            )
        ],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                slice_device(DEV1, generation="v6", selected=False),
                slice_device(DEV2, generation="v5", selected=False),
                slice_device(DEV3, generation="v5", selected=True),
            )
        ],
        results=[result(local(NODE1), dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV3))],
    ),
    # Both requests' first alternatives are the whole limit: the second ones are taken
    # without trying every other set of devices for the first (upstream: 75 steps).
    "prioritized-list-max-allocation-limit-request": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, sub(SUB0, CLASS_A, MAX), sub(SUB1, CLASS_A, MAX // 2)),
                first(REQ1, sub(SUB0, CLASS_A, MAX), sub(SUB1, CLASS_A, MAX // 2)),
            )
        ],
        classes=[CA],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, MAX * 2)],
        results=[
            result(
                local(NODE1),
                *(dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, f"device-{i}") for i in range(MAX // 2)),
                *(
                    dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, f"device-{i}")
                    for i in range(MAX // 2, MAX)
                ),
            )
        ],
        max_steps=75,
    ),
    # All of 31 devices plus req-1's 2 would exceed the limit: the 2-device alternative.
    "prioritized-list-max-allocation-allocation-mode-all": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, sub(SUB0, CLASS_A, 0, mode="All"), sub(SUB1, CLASS_A, 2)),
                req(REQ1, CLASS_B, 2),
            )
        ],
        classes=[CA, CB],
        slices=[
            many(SLICE1, NODE1, POOL1, DRIVER_A, MAX - 1),
            many(SLICE2, NODE1, POOL2, DRIVER_B, 2),
        ],
        results=[
            result(
                local(NODE1),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV0),
                dev(f"{REQ0}/{SUB1}", DRIVER_A, POOL1, DEV1),
                dev(REQ1, DRIVER_B, POOL2, DEV0),
                dev(REQ1, DRIVER_B, POOL2, DEV1),
            )
        ],
        max_steps=42,
    ),
    # dracore: upstream's rows added since.
    "prioritized-list-disabled": Case(
        claims=[claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_A)))],
        classes=[CA],
        slices=[one(SLICE1, NODE1, POOL1, DRIVER_A)],
        gates={DRA_PRIORITIZED_LIST: False},
        error=f'claim {NS}/{CLAIM0}, request "{REQ0}": has subrequests, but the DRAPrioritizedList feature is disabled',
    ),
    # A config naming both subrequests of req-0 covers req-0 only, not req-1: it keeps
    # its requests.
    "claim-config-scoped-to-subrequests-of-one-request": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, sub(SUB0, CLASS_A), sub(SUB1, CLASS_B)),
                req(REQ1, CLASS_A),
                config=[{"requests": [R0S0, R0S1], "opaque": opaque(DRIVER_A, "scoped")}],
            )
        ],
        classes=[CA, CB],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
        results=[
            result(
                local(NODE1),
                dev(R0S0, DRIVER_A, POOL1, DEV0),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                config=[cfg("FromClaim", [R0S0, R0S1], DRIVER_A, "scoped")],
            )
        ],
    ),
    # req-0 through its chosen subrequest and req-1 by name: every request, so none named.
    "claim-config-covering-all-requests-is-cleared": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ0, sub(SUB0, CLASS_A), sub(SUB1, CLASS_B)),
                req(REQ1, CLASS_A),
                config=[{"requests": [R0S0, REQ1], "opaque": opaque(DRIVER_A, "all")}],
            )
        ],
        classes=[CA, CB],
        slices=[many(SLICE1, NODE1, POOL1, DRIVER_A, 2)],
        results=[
            result(
                local(NODE1),
                dev(R0S0, DRIVER_A, POOL1, DEV0),
                dev(REQ1, DRIVER_A, POOL1, DEV1),
                config=[cfg("FromClaim", [], DRIVER_A, "all")],
            )
        ],
    ),
    # req-1's first alternative needs 3 of 2 type-Y devices; req-2's first needs 2 while
    # only device-1 is left: the second alternatives, with backtracking, in 26 steps.
    "check-combinations-with-prioritized-list": Case(
        claims=[
            claim(
                CLAIM0,
                first(REQ1, sub(SUB0, CLASS_A, 3, TYPE_Y), sub(SUB1, CLASS_A, 2)),
                first(REQ2, sub(SUB0, CLASS_A, 2), sub(SUB1, CLASS_A, 1, TYPE_X)),
            )
        ],
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
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV2),
                dev(f"{REQ1}/{SUB1}", DRIVER_A, POOL1, DEV3),
                dev(f"{REQ2}/{SUB1}", DRIVER_A, POOL1, DEV1),
            )
        ],
        max_steps=26,
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
