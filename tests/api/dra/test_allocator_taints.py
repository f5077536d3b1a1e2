"""Upstream's allocator test table (allocatortesting.TestAllocator): the 13 device-taint
rows ("tainted-*"): NoSchedule and NoExecute taints keep a device from a request that does
not tolerate them (admin access too, allocationMode All fails), effect None does not, the
results copy the request's (or subrequest's) tolerations, and with the DRADeviceTaints
feature off taints are ignored; and the two partitionable-device rows that also have taints
and binding conditions (partitionable-devices-with-binding-conditions-and-taints*: a
tainted partition with binding conditions is refused unless tolerated, and then its result
carries both its conditions and the toleration). Row names are upstream's; then kubera's
rows for the taints a DeviceTaintRule adds (upstream applies the rules to the slices the
scheduler sees).
"""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import DeviceID, Unfit
from services.api.dra.taints import TaintRules, tolerates
from services.api.features import DRA_DEVICE_TAINTS
from tests.api.dra.allocator_table import (
    CA,
    CB,
    CLAIM0,
    CLASS_A,
    CLASS_B,
    DEV1,
    DEV2,
    DRIVER_A,
    FAIL,
    NODE1,
    NS,
    POOL1,
    PREP,
    REQ0,
    SLICE1,
    SLICE2,
    SUB0,
    SUB1,
    Case,
    all_req,
    allocator,
    bound_dev,
    claim,
    conds,
    counter_slice,
    dev,
    first,
    gpu,
    local,
    req,
    result,
    slc,
    sub,
)
from tests.builders import slice_device

Json = dict[str, Any]

KEY, VALUE, VALUE2 = "taint-key", "taint-value", "taint-value-2"
TAINT_NO_SCHEDULE: Json = {"key": KEY, "value": VALUE, "effect": "NoSchedule"}
TAINT_NO_EXECUTE: Json = {"key": KEY, "value": VALUE2, "effect": "NoExecute"}
TAINT_NONE: Json = {"key": KEY, "value": VALUE, "effect": "None"}
TOL_NO_SCHEDULE: Json = {"operator": "Exists", "key": KEY, "effect": "NoSchedule"}
TOL_NO_EXECUTE: Json = {"operator": "Equal", "key": KEY, "value": VALUE2, "effect": "NoExecute"}


def tainted(name: str, *taints: Json) -> Json:
    return {**slice_device(name), "taints": list(taints)}


def tolerating(request: Json, *tolerations: Json) -> Json:
    """drataints: the request (exactly, or a subrequest dict) with tolerations."""
    target = request.get("exactly", request)
    target["tolerations"] = list(tolerations)
    return request


def tdev(request: str, name: str, *tolerations: Json, admin: bool = False) -> Json:
    d = dev(request, DRIVER_A, POOL1, name, admin)
    if tolerations:
        d["tolerations"] = list(tolerations)
    return d


def one_slice(*devices: Json) -> list[resource_pb2.ResourceSlice]:
    return [slc(SLICE1, NODE1, POOL1, DRIVER_A, *devices)]


# upstream tolerationNoScheduleKey1 and the taint it tolerates
TAINT_KEY1: Json = {"key": "key1", "value": "value1", "effect": "NoSchedule"}
TOL_KEY1: Json = {"operator": "Exists", "key": "key1", "effect": "NoSchedule"}


def tainted_partitions(count: int) -> list[resource_pb2.ResourceSlice]:
    """Two 4Gi partitions of an 8Gi counter set, the first with binding conditions and
    TAINT_KEY1; both slices of the pool say resourceSliceCount `count`."""
    first_partition = {**conds(gpu(DEV1, "4Gi"), PREP, FAIL), "taints": [TAINT_KEY1]}
    return [
        slc(SLICE1, NODE1, POOL1, DRIVER_A, first_partition, gpu(DEV2, "4Gi"), count=count),
        counter_slice(SLICE2, NODE1, POOL1, DRIVER_A, count, counter_set_1={"memory": "8Gi"}),
    ]


def admin_claim() -> resource_pb2.ResourceClaim:
    return claim(CLAIM0, req(REQ0, CLASS_A, admin=True))


TAINTED_BOTH = one_slice(tainted(DEV1, TAINT_NO_SCHEDULE), tainted(DEV2, TAINT_NO_EXECUTE))
BOTH_ON_ONE = one_slice(tainted(DEV1, TAINT_NO_SCHEDULE, TAINT_NO_EXECUTE))
NO_SCHEDULE_ONE = one_slice(tainted(DEV1, TAINT_NO_SCHEDULE))
PRIORITIZED = claim(CLAIM0, first(REQ0, sub(SUB0, CLASS_B), sub(SUB1, CLASS_A)))
BOTH_IN_USE = {DeviceID(DRIVER_A, POOL1, DEV1), DeviceID(DRIVER_A, POOL1, DEV2)}
UNFIT = (f"{NS}/{CLAIM0}", "")

# (case, DRADeviceTaints enabled)
CASES: dict[str, tuple[Case, bool]] = {
    "tainted-two-devices": (
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
            classes=[CA],
            slices=TAINTED_BOTH,
            unfit=UNFIT,
        ),
        True,
    ),
    "tainted-one-device-two-taints": (
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
            classes=[CA],
            slices=BOTH_ON_ONE,
            unfit=UNFIT,
        ),
        True,
    ),
    "tainted-two-devices-tolerated": (
        Case(
            claims=[claim(CLAIM0, tolerating(req(REQ0, CLASS_A), TOL_NO_EXECUTE))],
            classes=[CA],
            slices=TAINTED_BOTH,
            # Only the second device's taint is tolerated.
            results=[result(local(NODE1), tdev(REQ0, DEV2, TOL_NO_EXECUTE))],
        ),
        True,
    ),
    "tainted-two-devices-prioritized-list-tolerated": (
        Case(
            claims=[
                claim(
                    CLAIM0,
                    first(REQ0, sub(SUB0, CLASS_A), tolerating(sub(SUB1, CLASS_A), TOL_NO_EXECUTE)),
                )
            ],
            classes=[CA],
            slices=TAINTED_BOTH,
            results=[result(local(NODE1), tdev(f"{REQ0}/{SUB1}", DEV2, TOL_NO_EXECUTE))],
        ),
        True,
    ),
    "tainted-no-effect": (
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
            classes=[CA],
            slices=one_slice(tainted(DEV1, TAINT_NONE)),
            results=[result(local(NODE1), tdev(REQ0, DEV1))],
        ),
        True,
    ),
    "tainted-one-device-two-taints-both-tolerated": (
        Case(
            claims=[claim(CLAIM0, tolerating(req(REQ0, CLASS_A), TOL_NO_SCHEDULE, TOL_NO_EXECUTE))],
            classes=[CA],
            slices=BOTH_ON_ONE,
            results=[result(local(NODE1), tdev(REQ0, DEV1, TOL_NO_SCHEDULE, TOL_NO_EXECUTE))],
        ),
        True,
    ),
    "tainted-disabled": (
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
            classes=[CA],
            slices=BOTH_ON_ONE,
            results=[result(local(NODE1), tdev(REQ0, DEV1))],
        ),
        False,
    ),
    "tainted-prioritized-list": (
        Case(claims=[PRIORITIZED], classes=[CA, CB], slices=NO_SCHEDULE_ONE, unfit=UNFIT),
        True,
    ),
    "tainted-prioritized-list-disabled": (
        Case(
            claims=[PRIORITIZED],
            classes=[CA, CB],
            slices=NO_SCHEDULE_ONE,
            results=[result(local(NODE1), tdev(f"{REQ0}/{SUB1}", DEV1))],
        ),
        False,
    ),
    "tainted-admin-access": (
        Case(
            claims=[admin_claim()],
            allocated=BOTH_IN_USE,
            classes=[CA],
            slices=NO_SCHEDULE_ONE,
            unfit=UNFIT,
        ),
        True,
    ),
    "tainted-admin-access-disabled": (
        Case(
            claims=[admin_claim()],
            allocated=BOTH_IN_USE,
            classes=[CA],
            slices=NO_SCHEDULE_ONE,
            results=[result(local(NODE1), tdev(REQ0, DEV1, admin=True))],
        ),
        False,
    ),
    "tainted-all-devices-single": (
        Case(
            claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
            classes=[CA],
            slices=NO_SCHEDULE_ONE,
            unfit=UNFIT,
        ),
        True,
    ),
    # Upstream's pool here says resourceSliceCount 1 for its two slices; the untolerated
    # taint alone leaves one device for a request of two.
    "partitionable-devices-with-binding-conditions-and-taints": (
        Case(
            claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2))],
            classes=[CA],
            slices=tainted_partitions(1),
            unfit=UNFIT,
        ),
        True,
    ),
    "partitionable-devices-with-binding-conditions-and-taints-tolerated": (
        Case(
            claims=[claim(CLAIM0, tolerating(req(REQ0, CLASS_A, 2), TOL_KEY1))],
            classes=[CA],
            slices=tainted_partitions(2),
            results=[
                result(
                    local(NODE1),
                    {
                        **bound_dev(REQ0, DRIVER_A, POOL1, DEV1, PREP, FAIL),
                        "tolerations": [TOL_KEY1],
                    },
                    tdev(REQ0, DEV2, TOL_KEY1),
                )
            ],
        ),
        True,
    ),
    "tainted-all-devices-single-disabled": (
        Case(
            claims=[claim(CLAIM0, all_req(REQ0, CLASS_A))],
            classes=[CA],
            slices=NO_SCHEDULE_ONE,
            results=[result(local(NODE1), tdev(REQ0, DEV1))],
        ),
        False,
    ),
}


def check_taints(case: Case, enabled: bool, rules: TaintRules | None = None) -> None:
    alloc = allocator(case)
    alloc.gates = {DRA_DEVICE_TAINTS: enabled}
    alloc.taint_rules = rules
    got = alloc.allocate(case.node)
    if case.unfit is not None:
        assert isinstance(got, Unfit), got
        assert got.claim == case.unfit[0]
        assert case.unfit[1] in got.reason, got.reason
        return
    assert not isinstance(got, Unfit), got
    assert [json_format.MessageToDict(r) for r in got] == case.results


@pytest.mark.parametrize("name", list(CASES))
def test_allocator_taints(name: str) -> None:
    case, enabled = CASES[name]
    check_taints(case, enabled)


def test_unfit_reason_names_the_taints() -> None:
    case = CASES["tainted-two-devices"][0]
    got = allocator(case).allocate(case.node)
    assert isinstance(got, Unfit)
    assert "have taints the request does not tolerate" in got.reason, got.reason


# ----------------------------------------------------------------------------- kubera's rows


def rule(name: str, taint: Json, **selector: str) -> resource_pb2.DeviceTaintRule:
    r = resource_pb2.DeviceTaintRule()
    doc: Json = {"metadata": {"name": name}, "spec": {"taint": taint}}
    if selector is not None:
        doc["spec"]["deviceSelector"] = selector
    json_format.ParseDict(doc, r)
    return r


PLAIN = one_slice(slice_device(DEV1), slice_device(DEV2))


@pytest.mark.parametrize(
    ("selector", "device"),
    [
        ({"driver": DRIVER_A, "pool": POOL1, "device": DEV1}, DEV2),  # DEV1 tainted
        ({"device": DEV1}, DEV2),
        ({"driver": "driver-b"}, DEV1),  # another driver's devices: DEV1 free
        ({"pool": "pool-2"}, DEV1),
    ],
)
def test_rule_taints_count_as_the_devices_own(selector: Json, device: str) -> None:
    case = Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))],
        classes=[CA],
        slices=PLAIN,
        results=[result(local(NODE1), tdev(REQ0, device))],
    )
    check_taints(case, True, TaintRules([rule("r", TAINT_NO_EXECUTE, **selector)]))


def test_rule_selecting_every_device_blocks_until_tolerated() -> None:
    rules = TaintRules([rule("r", TAINT_NO_SCHEDULE)])  # an empty selector: every device
    blocked = Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A))], classes=[CA], slices=PLAIN, unfit=UNFIT
    )
    check_taints(blocked, True, rules)
    ok = Case(
        claims=[claim(CLAIM0, tolerating(req(REQ0, CLASS_A), TOL_NO_SCHEDULE))],
        classes=[CA],
        slices=PLAIN,
        results=[result(local(NODE1), tdev(REQ0, DEV1, TOL_NO_SCHEDULE))],
    )
    check_taints(ok, True, rules)


def test_rule_without_selector_selects_nothing() -> None:
    r = resource_pb2.DeviceTaintRule()
    json_format.ParseDict({"metadata": {"name": "r"}, "spec": {"taint": TAINT_NO_SCHEDULE}}, r)
    assert not TaintRules([r])


@pytest.mark.parametrize(
    ("toleration", "taint", "want"),
    [
        ({"key": KEY, "operator": "Exists"}, TAINT_NO_SCHEDULE, True),
        ({"operator": "Exists"}, TAINT_NO_EXECUTE, True),
        ({"key": KEY, "value": VALUE}, TAINT_NO_SCHEDULE, True),  # operator defaults to Equal
        ({"key": KEY, "value": VALUE2}, TAINT_NO_SCHEDULE, False),
        ({"key": "other", "operator": "Exists"}, TAINT_NO_SCHEDULE, False),
        ({"operator": "Exists", "effect": "NoExecute"}, TAINT_NO_SCHEDULE, False),
        ({"key": KEY, "operator": "Bogus"}, TAINT_NO_SCHEDULE, False),
    ],
)
def test_tolerates(toleration: Json, taint: Json, want: bool) -> None:
    tol = json_format.ParseDict(toleration, resource_pb2.DeviceToleration())
    t = json_format.ParseDict(taint, resource_pb2.DeviceTaint())
    assert tolerates(tol, t) is want
