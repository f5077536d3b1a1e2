"""Upstream's allocator test table (allocatortesting.TestAllocator), the list-type
attribute rows (DRAListTypeAttributes) for matchAttribute: values as sets, a scalar a set
of one, devices must share an element with all devices before them; with the gate off a
list matches nothing after the first device. Row names are upstream's (typos included).
The distinctAttribute rows need consumable capacity (lane dracounters). dracore."""

from __future__ import annotations

import pytest

from services.api.features import DRA_LIST_TYPE_ATTRIBUTES
from tests.api.dra.allocator_table import (
    BOOL_ATTR,
    CA,
    CLAIM0,
    CLASS_A,
    DEV1,
    DEV2,
    DEV3,
    DRIVER_A,
    INT_ATTR,
    NODE1,
    NS,
    POOL1,
    REQ0,
    SLICE1,
    STRING_ATTR,
    VERSION_ATTR,
    Case,
    Json,
    attr_device,
    check,
    claim,
    dev,
    local,
    match,
    req,
    result,
    slc,
)

ON = {DRA_LIST_TYPE_ATTRIBUTES: True}
C0 = f"{NS}/{CLAIM0}"
NOT_TOGETHER = "satisfy the claim's constraints"


def _case(attribute: str, count: int, *devices: Json, gates: dict[str, bool] = ON) -> Case:
    """`count` devices of class-a from one slice, all matching on `attribute`."""
    return Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, count), constraints=[match(attribute)])],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, *devices)],
        gates=gates,
    )


def _ok(case: Case, *names: str) -> Case:
    case.results = [result(local(NODE1), *(dev(REQ0, DRIVER_A, POOL1, n) for n in names))]
    return case


def _unfit(case: Case) -> Case:
    case.unfit = (C0, NOT_TOGETHER)
    return case


def _s(name: str, value: str | list[str]) -> Json:
    shape = {"strings": value} if isinstance(value, list) else {"string": value}
    return attr_device(name, stringAttribute=shape)


CASES: dict[str, Case] = {
    "list-attributes-match-constaint-scalar-string-values": _ok(
        _case(STRING_ATTR, 2, _s(DEV1, "value1"), _s(DEV2, "value1")), DEV1, DEV2
    ),
    "list-attributes-match-constaint-list-of-string-values-with-common-elements": _ok(
        _case(
            STRING_ATTR,
            2,
            _s(DEV1, ["value1", "value2", "value3"]),
            _s(DEV2, ["value2", "value3", "value4"]),
        ),
        DEV1,
        DEV2,
    ),
    # Each pair shares a value, the three together none.
    "list-attributes-match-constaint-list-of-string-values-with-partially-common-elements": _unfit(
        _case(
            STRING_ATTR,
            3,
            _s(DEV1, ["value1", "value2"]),
            _s(DEV2, ["value2", "value3"]),
            _s(DEV3, ["value3", "value1"]),
        )
    ),
    # Upstream's claim names req-0 twice, one device each.
    "list-attributes-match-constaint-list-of-string-values-without-common-elements": Case(
        claims=[
            claim(
                CLAIM0,
                req(REQ0, CLASS_A),
                req(REQ0, CLASS_A),
                constraints=[match(STRING_ATTR)],
            )
        ],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                _s(DEV1, ["value1", "value2"]),
                _s(DEV2, ["value3", "value4"]),
            )
        ],
        gates=ON,
        unfit=(C0, NOT_TOGETHER),
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-common-elements": _ok(
        _case(STRING_ATTR, 2, _s(DEV1, "value1"), _s(DEV2, ["value1", "value2"])), DEV1, DEV2
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-with-partially-common-elements": _unfit(
        _case(
            STRING_ATTR,
            3,
            _s(DEV1, "value1"),
            _s(DEV2, ["value1", "value2"]),
            _s(DEV3, ["value2", "value3"]),
        )
    ),
    "list-attributes-match-constaint-mixed-scalar-and-list-of-string-values-without-common-elements": _unfit(
        _case(STRING_ATTR, 2, _s(DEV1, "value1"), _s(DEV2, ["value2", "value3"]))
    ),
    "list-attributes-match-constaint-list-of-int-values-with-common-elements": _ok(
        _case(
            INT_ATTR,
            2,
            attr_device(DEV1, numa={"ints": [0, 1, 2]}),
            attr_device(DEV2, numa={"ints": [1, 2, 3]}),
        ),
        DEV1,
        DEV2,
    ),
    "list-attributes-match-constaint-list-of-bool-values-with-common-elements": _ok(
        _case(
            BOOL_ATTR,
            2,
            attr_device(DEV1, boolAttribute={"bools": [True, False]}),
            attr_device(DEV2, boolAttribute={"bools": [True]}),
        ),
        DEV1,
        DEV2,
    ),
    "list-attributes-match-constaint-list-of-version-values-with-common-elements": _ok(
        _case(
            VERSION_ATTR,
            2,
            attr_device(DEV1, driverVersion={"versions": ["1.0.0", "1.1.0", "2.0.0"]}),
            attr_device(DEV2, driverVersion={"versions": ["1.1.0", "2.0.0", "2.1.0"]}),
        ),
        DEV1,
        DEV2,
    ),
    # An attribute without a value breaks the class's CEL selector (upstream: "attribute
    # stringAttribute: unsupported attribute value"); an empty list is no value in proto.
    "list-attributes-match-constaint-with-empty-or-unknown-type": Case(
        claims=[claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[match(STRING_ATTR)])],
        classes=[CA],
        slices=[
            slc(
                SLICE1,
                NODE1,
                POOL1,
                DRIVER_A,
                attr_device(DEV1, stringAttribute={}),
                attr_device(DEV2, stringAttribute={"strings": []}),
            )
        ],
        gates=ON,
        error="unsupported attribute value",
    ),
    # Gate off: scalar matching; the first device is taken, the second's list matches nothing.
    "list-attributes-disabled-match-constraint-with-lists": _unfit(
        _case(
            STRING_ATTR,
            2,
            _s(DEV1, ["value1", "value2", "value3"]),
            _s(DEV2, ["value2", "value3", "value4"]),
            gates={DRA_LIST_TYPE_ATTRIBUTES: False},
        )
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
