"""Upstream's allocator test table (allocatortesting.TestAllocator), the list-type
attribute rows (DRAListTypeAttributes) for matchAttribute: values as sets, a scalar a set
of one, devices must share an element with all devices before them; with the gate off a
list matches nothing after the first device. Row names are upstream's (typos included).
dracore. The distinctAttribute rows (DISTINCT_CASES, counted under consumable capacity):
with the gate on each device's set must be disjoint from every other's; off, scalars
differ and a list is no value (dramerge, once both lanes were in)."""

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


# ----------------------------------------------------------------------------- distinctAttribute
# Upstream's list-attributes-distinct-* rows (features ListTypeAttributes and
# ConsumableCapacity, whose distinctAttribute constraint they use).


def _distinct(attribute: str, *devices: Json, gates: dict[str, bool] = ON) -> Case:
    """Two devices of class-a from one slice, all distinct in `attribute`."""
    return Case(
        claims=[
            claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[{"distinctAttribute": attribute}])
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, *devices)],
        gates=gates,
    )


def _v(name: str, versions: list[str]) -> Json:
    return attr_device(name, driverVersion={"versions": versions})


DISTINCT_CASES: dict[str, Case] = {
    "list-attributes-distinct-constraint-scalar-string-values-all-distinct": _ok(
        _distinct(STRING_ATTR, _s(DEV1, "value1"), _s(DEV2, "value2")), DEV1, DEV2
    ),
    "list-attributes-distinct-constraint-scalar-string-values-not-distinct": _unfit(
        _distinct(STRING_ATTR, _s(DEV1, "value1"), _s(DEV2, "value1"))
    ),
    # device-2 shares value2 with device-1: device-3 is taken instead.
    "list-attributes-distinct-constraint-list-of-string-values-all-distinct": _ok(
        _distinct(
            STRING_ATTR,
            _s(DEV1, ["value1", "value2"]),
            _s(DEV2, ["value2", "value3"]),
            _s(DEV3, ["value3", "value4"]),
        ),
        DEV1,
        DEV3,
    ),
    "list-attributes-distinct-constraint-list-of-string-values-with-common-elements": _unfit(
        _distinct(
            STRING_ATTR,
            _s(DEV1, ["value1", "value2", "value3"]),
            _s(DEV2, ["value2", "value4", "value5"]),
        )
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-all-distinct": _ok(
        _distinct(
            STRING_ATTR,
            _s(DEV1, "value1"),
            _s(DEV2, ["value1", "value2"]),
            _s(DEV3, ["value2", "value3"]),
        ),
        DEV1,
        DEV3,
    ),
    "list-attributes-distinct-constraint-mixed-scalar-and-list-with-common-elements": _unfit(
        _distinct(STRING_ATTR, _s(DEV1, "value1"), _s(DEV2, ["value1", "value2"]))
    ),
    "list-attributes-distinct-constraint-list-of-int-values-all-distinct": _ok(
        _distinct(
            INT_ATTR,
            attr_device(DEV1, numa={"ints": [0, 1]}),
            attr_device(DEV2, numa={"ints": [1, 2]}),
            attr_device(DEV3, numa={"ints": [2, 3]}),
        ),
        DEV1,
        DEV3,
    ),
    "list-attributes-distinct-constraint-list-of-bool-values-all-distinct": _ok(
        _distinct(
            BOOL_ATTR,
            attr_device(DEV1, boolAttribute={"bools": [True]}),
            attr_device(DEV2, boolAttribute={"bools": [True, False]}),
            attr_device(DEV3, boolAttribute={"bools": [False]}),
        ),
        DEV1,
        DEV3,
    ),
    "list-attributes-distinct-constraint-list-of-version-values-all-distinct": _ok(
        _distinct(
            VERSION_ATTR,
            _v(DEV1, ["1.0.0", "1.1.0"]),
            _v(DEV2, ["1.1.0", "2.0.0"]),
            _v(DEV3, ["2.0.0", "2.1.0"]),
        ),
        DEV1,
        DEV3,
    ),
    # As the matchAttribute row: an attribute without a value breaks the class's CEL
    # selector (an empty list and a nil one are both no value in proto).
    "list-attributes-distinct-constaint-with-empty-or-unknown-type": Case(
        claims=[
            claim(CLAIM0, req(REQ0, CLASS_A, 2), constraints=[{"distinctAttribute": VERSION_ATTR}])
        ],
        classes=[CA],
        slices=[slc(SLICE1, NODE1, POOL1, DRIVER_A, _v(DEV1, []), _v(DEV2, []))],
        gates=ON,
        error="unsupported attribute value",
    ),
    # Gate off: scalars compared; a list is no scalar, so no device can be added.
    "list-attributes-disabled-distinct-constraint-with-lists": _unfit(
        _distinct(
            STRING_ATTR,
            _s(DEV1, ["value1", "value2", "value3"]),
            _s(DEV2, ["value2", "value3", "value4"]),
            gates={DRA_LIST_TYPE_ATTRIBUTES: False},
        )
    ),
}
CASES.update(DISTINCT_CASES)


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_allocate(case: Case) -> None:
    check(case)
