"""Upstream's allocator test table (allocatortesting.TestAllocator): the partitionable
devices rows (features PartitionableDevices): devices consuming a pool's shared counters
(refused once a counter would go below zero, devices in use counting, on this node or
another of a multi-host pool), per-device node selection, the pool checks that make a
pool invalid, and the gate turned off. Row names are upstream's.

The rows with binding conditions were ported when lane drabinding was merged
(dramerge); the two that also need device taints
(partitionable-devices-with-binding-conditions-and-taints*) are in
test_allocator_taints.py, the three that also need consumable capacity in
test_allocator_capacity.py.
"""

from __future__ import annotations

import pytest

from services.api.dra.allocator import ERR_INVALID_POOLS, DeviceCache, DeviceID
from services.api.features import DRA_PARTITIONABLE_DEVICES
from tests.api.dra.allocator_table import (
    ALL_NODES,
    CA,
    CB,
    CLAIM0,
    DRIVER_A,
    DRIVER_B,
    FAIL,
    NODE1,
    NODE2,
    NS,
    PER_DEVICE,
    POOL1,
    POOL2,
    PREP,
    REGION1,
    REQ0,
    REQ1,
    SET1,
    SET2,
    SLICE1,
    SLICE2,
    SLICE3,
    SLICE4,
    SUB0,
    SUB1,
    Case,
    all_req,
    bound_dev,
    check,
    claim,
    conds,
    counter_slice,
    dev,
    first,
    gpu,
    label_selector,
    local,
    mem,
    mem_at_least,
    node,
    pdev,
    req,
    result,
    slc,
    sub,
)
from tests.api.dra.allocator_table import CLASS_A as A
from tests.api.dra.allocator_table import CLASS_B as B

DEV1, DEV2, DEV3 = "device-1", "device-2", "device-3"
R0S0, R0S1, R1S1 = f"{REQ0}/{SUB0}", f"{REQ0}/{SUB1}", f"{REQ1}/{SUB1}"
OFF = {DRA_PARTITIONABLE_DEVICES: False}


def counters8(name: str = SLICE2, where: str = NODE1, count: int = 2, q: str = "8Gi"):
    return counter_slice(name, where, POOL1, DRIVER_A, count, counter_set_1={"memory": q})


def local1(*devices: dict) -> dict:
    return result(local(NODE1), *devices)


def a(request: str, pool: str, device: str, driver: str = DRIVER_A) -> dict:
    return dev(request, driver, pool, device)


# req-0 (any) and req-1 firstAvailable: 6Gi of memory, else 4Gi.
PRIORITIZED = claim(
    CLAIM0,
    req(REQ0, A),
    first(REQ1, sub(SUB0, A, 1, mem_at_least("6Gi")), sub(SUB1, A, 1, mem_at_least("4Gi"))),
)
TWO = claim(CLAIM0, req(REQ0, A), req(REQ1, A))
ONE = claim(CLAIM0, req(REQ0, A))


CASES: dict[str, Case] = {
    "all-devices-with-consumed-counters": Case(
        claims=[claim(CLAIM0, all_req(REQ0, A))],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("4Gi")), count=2), counters8()],
        results=[local1(a(REQ0, POOL1, DEV1))],
    ),
    "partitionable-devices-single-device": Case(
        claims=[ONE],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("4Gi")), count=2), counters8()],
        results=[local1(a(REQ0, POOL1, DEV1))],
    ),
    # device-1 (4Gi) for req-0 leaves 4Gi: not device-2 (6Gi), device-3 (4Gi) instead.
    "partitionable-devices-prioritized-list": Case(
        claims=[PRIORITIZED],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                gpu(DEV1, "4Gi"),
                gpu(DEV2, "6Gi"),
                gpu(DEV3, "4Gi"),
                count=2,
            ),
            counters8(),
        ],
        results=[local1(a(REQ0, POOL1, DEV1), a(R1S1, POOL1, DEV3))],
    ),
    "partitionable-devices-multiple-devices": Case(
        claims=[TWO],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                gpu(DEV1, "4Gi"),
                gpu(DEV2, "6Gi"),
                gpu(DEV3, "4Gi"),
                count=2,
            ),
            counters8(),
        ],
        results=[local1(a(REQ0, POOL1, DEV1), a(REQ1, POOL1, DEV3))],
    ),
    "partitionable-devices-multiple-capacity-pools": Case(
        claims=[PRIORITIZED],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *(
                    pdev(d, {SET1: {"memory": m}, SET2: {"cpus": c}}, from_counters=True)
                    for d, m, c in ((DEV1, "4Gi", "4"), (DEV2, "6Gi", "6"), (DEV3, "4Gi", "4"))
                ),
                count=2,
            ),
            counter_slice(
                SLICE2,
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                counter_set_1={"memory": "18Gi"},
                counter_set_2={"cpus": "8"},
            ),
        ],
        results=[local1(a(REQ0, POOL1, DEV1), a(R1S1, POOL1, DEV3))],
    ),
    "partitionable-devices-multiple-counters": Case(
        claims=[TWO],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                pdev(
                    DEV1,
                    {SET1: {"memory": "4Gi", "cpus": "6"}, SET2: {"cpus": "4", "memory": "2Gi"}},
                    from_counters=True,
                ),
                pdev(
                    DEV2,
                    {SET1: {"memory": "6Gi", "cpus": "4"}, SET2: {"cpus": "6", "memory": "6Gi"}},
                    from_counters=True,
                ),
                pdev(
                    DEV3,
                    {SET1: {"memory": "4Gi", "cpus": "4"}, SET2: {"cpus": "4", "memory": "4Gi"}},
                    from_counters=True,
                ),
                count=2,
            ),
            counter_slice(
                SLICE2,
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                counter_set_1={"cpus": "8", "memory": "18Gi"},
                counter_set_2={"cpus": "12", "memory": "18Gi"},
            ),
        ],
        results=[local1(a(REQ0, POOL1, DEV2), a(REQ1, POOL1, DEV3))],
    ),
    # pool-1's devices in use leave 2 cpus: device-1 (6 cpus) does not fit; pool-2 does.
    "partitionable-devices-multiple-pools": Case(
        claims=[TWO],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *(
                    pdev(d, {SET1: {"cpus": c, "memory": m}}, from_counters=True)
                    for d, c, m in ((DEV1, "6", "4Gi"), (DEV2, "4", "6Gi"), (DEV3, "4", "4Gi"))
                ),
                count=2,
            ),
            counter_slice(
                SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={"cpus": "8", "memory": "18Gi"}
            ),
            slc(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_A,
                *(
                    pdev(d, {SET1: {"cpus": c, "memory": m}}, from_counters=True)
                    for d, c, m in ((DEV1, "6", "4Gi"), (DEV2, "1", "7Gi"), (DEV3, "1", "7Gi"))
                ),
                count=2,
            ),
            counter_slice(
                SLICE4, NODE1, POOL2, DRIVER_A, 2, counter_set_1={"cpus": "8", "memory": "18Gi"}
            ),
        ],
        allocated={
            DeviceID(DRIVER_A, POOL1, DEV2),
            DeviceID(DRIVER_A, POOL1, DEV3),
            DeviceID(DRIVER_A, POOL2, DEV1),
        },
        results=[local1(a(REQ0, POOL2, DEV2), a(REQ1, POOL2, DEV3))],
    ),
    "partitionable-devices-unused-counters-in-counter-set": Case(
        claims=[claim(CLAIM0, req(REQ0, A, 2))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                pdev(DEV1, mem("5Gi")),
                pdev(DEV2, mem("4Gi")),
                pdev(DEV3, mem("4Gi")),
                count=2,
            ),
            counter_slice(
                SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={"memory": "8Gi", "unused": "1Gi"}
            ),
        ],
        results=[local1(a(REQ0, POOL1, DEV2), a(REQ0, POOL1, DEV3))],
    ),
    # device-2 in use takes 16Gi of 18Gi: device-1's 4Gi no longer fits.
    "partitionable-devices-no-capacity-available": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, gpu(DEV1, "4Gi"), gpu(DEV2, "16Gi")),
            counters8(count=1, q="18Gi"),
        ],
        allocated={DeviceID(DRIVER_A, POOL1, DEV2)},
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ0}"'),
    ),
    # device-2 in use takes more than the set has: nothing of the pool fits any more.
    "partitionable-devices-overallocated-capacity-pool": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, gpu(DEV1, "4Gi"), gpu(DEV2, "20Gi")),
            counters8(count=1, q="18Gi"),
        ],
        allocated={DeviceID(DRIVER_A, POOL1, DEV2)},
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ0}"'),
    ),
    # The gate off: a device consuming counters is never allocated ...
    "partitionable-devices-disabled-device-consumes-counters": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("4Gi"))),
            counters8(count=1, q="18Gi"),
        ],
        gates=OFF,
        unfit=(f"{NS}/{CLAIM0}", f'request "{REQ0}"'),
    ),
    # ... the others of its pool are (the counter slice, ignored, still makes the pool
    # complete) ...
    "partitionable-devices-disabled-other-device-do-not-consume-counters": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("4Gi")), pdev(DEV2), count=2),
            counters8(q="18Gi"),
        ],
        gates=OFF,
        results=[local1(a(REQ0, POOL1, DEV2))],
    ),
    # ... and a slice selecting nodes per device is ignored.
    "partitionable-devices-disabled-per-device-node-selection": Case(
        claims=[ONE],
        classes=[CA],
        slices=[slc(SLICE1, PER_DEVICE, POOL1, DRIVER_A, pdev(DEV2, on=NODE1))],
        gates=OFF,
        unfit=(f"{NS}/{CLAIM0}", "no device"),
    ),
    "partitionable-devices-per-device-node-selection-nodename": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0, sub(SUB0, A, 1, mem_at_least("6Gi")), sub(SUB1, A, 1, mem_at_least("4Gi"))
                ),
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                PER_DEVICE,
                POOL1,
                DRIVER_A,
                gpu(DEV1, "4Gi", on=NODE1),
                gpu(DEV2, "6Gi", on=NODE2),
                count=2,
            ),
            counters8(where=PER_DEVICE, q="18Gi"),
        ],
        results=[local1(a(R0S1, POOL1, DEV1))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                PER_DEVICE,
                POOL1,
                DRIVER_A,
                gpu(DEV1, "4Gi", on=label_selector("region", REGION1)),
                count=2,
            ),
            counters8(where=PER_DEVICE, q="18Gi"),
        ],
        results=[result(label_selector("region", REGION1), a(REQ0, POOL1, DEV1))],
    ),
    "partitionable-devices-per-device-node-selection-node-selector-multiple-devices": Case(
        claims=[claim(CLAIM0, req(REQ0, A, 3), req(REQ1, B, 3))],
        classes=[CA, CB],
        slices=[
            slc(
                SLICE1,
                PER_DEVICE,
                POOL1,
                DRIVER_A,
                gpu(DEV1, "4Gi", on=label_selector("region", REGION1)),
                gpu(DEV2, "4Gi", on=NODE1),
                gpu(DEV3, "4Gi", on=ALL_NODES),
                count=2,
            ),
            counters8(where=PER_DEVICE, q="18Gi"),
            slc(
                SLICE3,
                NODE1,
                POOL2,
                DRIVER_B,
                *(gpu(d, "4Gi", SET2) for d in (DEV1, DEV2, DEV3)),
                count=2,
            ),
            counter_slice(SLICE4, NODE1, POOL2, DRIVER_B, 2, counter_set_2={"memory": "12Gi"}),
        ],
        results=[
            local1(
                a(REQ0, POOL1, DEV1),
                a(REQ0, POOL1, DEV2),
                a(REQ0, POOL1, DEV3),
                a(REQ1, POOL2, DEV1, DRIVER_B),
                a(REQ1, POOL2, DEV2, DRIVER_B),
                a(REQ1, POOL2, DEV3, DRIVER_B),
            )
        ],
    ),
    "partitionable-devices-with-attribute-selector": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, A, 2),
                req(REQ1, A, 1, f'device.attributes["{DRIVER_A}"].special'),
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                *(
                    pdev(d, {SET1: {cpu: "1"}, SET2: {"mem": "10Gi"}}, special=special)
                    for d, cpu, special in (
                        (DEV1, "cpu1", True),
                        (DEV2, "cpu2", False),
                        (DEV3, "cpu3", False),
                    )
                ),
                count=2,
            ),
            counter_slice(
                SLICE2,
                NODE1,
                POOL1,
                DRIVER_A,
                2,
                counter_set_1={"cpu1": "1", "cpu2": "1", "cpu3": "1"},
                counter_set_2={"mem": "30Gi"},
            ),
        ],
        results=[local1(a(REQ0, POOL1, DEV2), a(REQ0, POOL1, DEV3), a(REQ1, POOL1, DEV1))],
    ),
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1), count=4),
            counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, 4, counter_set_1={}),
            slc(SLICE3, NODE1, POOL1, DRIVER_A, pdev(DEV2), count=4),
            counter_slice(SLICE4, NODE1, POOL1, DRIVER_A, 4, counter_set_1={}),
        ],
        error=ERR_INVALID_POOLS,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, {SET2: {"memory": "1"}}), count=2),
            counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={}),
        ],
        error=ERR_INVALID_POOLS,
    ),
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("8Gi")), count=2),
            counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, 2, counter_set_1={"other-memory": "8Gi"}),
        ],
        error=ERR_INVALID_POOLS,
    ),
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, pdev(DEV1, mem("8Gi"))),
            counter_slice(SLICE2, NODE1, POOL2, DRIVER_A, 1, counter_set_1={"memory": "8Gi"}),
        ],
        error=ERR_INVALID_POOLS,
    ),
    # device-3 on node-2, in use, takes 6Gi of the set node-1's devices share.
    "partitionable-devices-devices-on-different-nodes-consume-same-counter-set": Case(
        claims=[
            claim(
                CLAIM0,
                first(
                    REQ0, sub(SUB0, A, 1, mem_at_least("6Gi")), sub(SUB1, A, 1, mem_at_least("2Gi"))
                ),
            )
        ],
        classes=[CA],
        slices=[
            counters8(SLICE1, count=3),
            slc(SLICE2, NODE1, POOL1, DRIVER_A, gpu(DEV1, "6Gi"), gpu(DEV2, "2Gi"), count=3),
            slc(SLICE3, NODE2, POOL1, DRIVER_A, pdev(DEV3, mem("6Gi")), count=3),
        ],
        allocated={DeviceID(DRIVER_A, POOL1, DEV3)},
        results=[local1(a(R0S1, POOL1, DEV2))],
    ),
    # On node-2 the pool's counter set is published by node-1's slice.
    "partitionable-devices-devices-consume-counter-set-in-different-nodes": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            counters8(SLICE1, count=3),
            slc(SLICE2, NODE1, POOL1, DRIVER_A, gpu(DEV1, "6Gi"), count=3),
            slc(SLICE3, NODE2, POOL1, DRIVER_A, gpu(DEV2, "6Gi"), gpu(DEV3, "2Gi"), count=3),
        ],
        node=node(NODE2, REGION1),
        allocated={DeviceID(DRIVER_A, POOL1, DEV1)},
        results=[result(local(NODE2), a(REQ0, POOL1, DEV3))],
    ),
    # A device of another node naming an unknown counter set makes the pool invalid here.
    "partitionable-devices-validation-error-on-non-targeting-slice": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            counters8(SLICE1, count=3),
            slc(SLICE2, NODE1, POOL1, DRIVER_A, gpu(DEV1, "6Gi"), count=3),
            slc(SLICE3, NODE2, POOL1, DRIVER_A, pdev(DEV3, mem("6Gi", SET2)), count=3),
        ],
        error=ERR_INVALID_POOLS,
    ),
    # With binding conditions (DeviceBindingAndStatus, on by default): the results copy
    # each device's conditions.
    "partitionable-devices-with-binding-conditions": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, conds(gpu(DEV1, "4Gi"), PREP, FAIL), count=2),
            counters8(),
        ],
        results=[local1(bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL))],
    ),
    "partitionable-devices-with-binding-conditions-multiple": Case(
        claims=[claim(CLAIM0, req(REQ0, A, 2))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                conds(gpu(DEV1, "4Gi"), PREP, FAIL),
                conds(gpu(DEV2, "4Gi"), ["IsPrepare2"], ["BindingFailed2"]),
                count=2,
            ),
            counters8(),
        ],
        results=[
            local1(
                bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL),
                bound_dev(REQ0, DRIVER_A, POOL1, DEV2, ["IsPrepare2"], ["BindingFailed2"]),
            )
        ],
    ),
    "partitionable-devices-with-binding-conditions-some-devices-no-conditions": Case(
        claims=[claim(CLAIM0, req(REQ0, A, 3))],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                conds(gpu(DEV1, "2Gi"), PREP, FAIL),
                gpu(DEV2, "2Gi"),
                conds(gpu(DEV3, "4Gi"), ["IsReady"], ["BindingTimeout"]),
                count=2,
            ),
            counters8(),
        ],
        results=[
            local1(
                bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL),
                a(REQ0, POOL1, DEV2),
                bound_dev(REQ0, DRIVER_A, POOL1, DEV3, ["IsReady"], ["BindingTimeout"]),
            )
        ],
    ),
    # Slices listed in reverse: searched by name, so slice-2's device-2 comes first.
    "partitionable-devices-with-binding-conditions-multi-slices": Case(
        claims=[claim(CLAIM0, req(REQ0, A, 2))],
        classes=[CA],
        slices=[
            slc(SLICE4, NODE1, POOL1, DRIVER_A, conds(gpu(DEV1, "4Gi"), PREP, FAIL), count=4),
            counters8(SLICE3, count=4),
            slc(SLICE2, NODE1, POOL1, DRIVER_A, gpu(DEV2, "4Gi", SET2), count=4),
            counter_slice(SLICE1, NODE1, POOL1, DRIVER_A, 4, counter_set_2={"memory": "8Gi"}),
        ],
        results=[local1(a(REQ0, POOL1, DEV2), bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL))],
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)


#: Why the pool of each row expecting ERR_INVALID_POOLS is invalid (counters.py).
INVALID_WHY = {
    "partitionable-devices-same-counter-set-name-in-different-resource-slices": f"duplicate counter set name {SET1}",
    "partitionable-devices-device-counter-consumption-references-unknown-counter-set": f"counter set {SET2} not found",
    "partitionable-devices-device-counter-consumption-references-unknown-counter-in-counter-set": f"counter memory not found in counter set {SET1}",
    "partitionable-devices-device-counter-consumption-references-counter-set-in-other-pool": f"counter set {SET1} not found",
    "partitionable-devices-validation-error-on-non-targeting-slice": f"counter set {SET2} not found",
}


@pytest.mark.parametrize(("name", "why"), INVALID_WHY.items())
def test_invalid_pool_says_why(name: str, why: str) -> None:
    case = CASES[name]
    pools = DeviceCache().index(case.slices).pools(case.node)
    assert [p.invalid for p in pools if p.invalid] == [why]


#: kubera's own rows (not upstream's names; test_allocator_coverage counts only CASES).
OWN_CASES: dict[str, Case] = {
    # upstream's row without "-complete-pool" with a complete pool (its two slices have
    # resourceSliceCount 1, so its pool is incomplete and nothing reaches the counters).
    "partitionable-devices-no-capacity-available-complete-pool": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, gpu(DEV1, "4Gi"), gpu(DEV2, "16Gi"), count=2),
            counters8(q="18Gi"),
        ],
        allocated={DeviceID(DRIVER_A, POOL1, DEV2)},
        unfit=(f"{NS}/{CLAIM0}", "shared counters"),
    ),
    # upstream's row without "-complete-pool" with a complete pool (its two slices have
    # resourceSliceCount 1, so its pool is incomplete and nothing reaches the counters).
    "partitionable-devices-overallocated-capacity-pool-complete-pool": Case(
        claims=[ONE],
        classes=[CA],
        slices=[
            slc(SLICE1, NODE1, POOL1, DRIVER_A, gpu(DEV1, "4Gi"), gpu(DEV2, "20Gi"), count=2),
            counters8(q="18Gi"),
        ],
        allocated={DeviceID(DRIVER_A, POOL1, DEV2)},
        unfit=(f"{NS}/{CLAIM0}", "shared counters"),
    ),
}


@pytest.mark.parametrize("case", OWN_CASES.values(), ids=OWN_CASES.keys())
def test_allocate_own(case: Case) -> None:
    check(case)
