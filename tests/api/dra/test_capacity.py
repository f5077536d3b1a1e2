"""Consumable capacity's arithmetic (services/api/dra/capacity.py): upstream's
consumable_capacity_test.go (TestConsumableCapacity: get-consumed-capacity-from-request,
violate-capacity-sharing, calculate-consumed-capacity), rows as data. Amounts are the
quantities "1", "2", "3"."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import resource_pb2
from services.api.dra import capacity


def policy(**doc: Any) -> resource_pb2.CapacityRequestPolicy:
    return json_format.ParseDict(doc, resource_pb2.CapacityRequestPolicy())


def cap(value: str, **doc: Any) -> resource_pb2.DeviceCapacity:
    c = resource_pb2.DeviceCapacity(value=value)
    if doc:
        c.request_policy.CopyFrom(policy(**doc))
    return c


def test_get_consumed_capacity_from_request() -> None:
    """A requested amount, the default, or the whole value: each 1 here."""
    device = resource_pb2.Device(name="device-1")
    device.capacity["capacity-0"].CopyFrom(cap("2", default="2", validRange={"min": "1"}))
    device.capacity["capacity-1"].CopyFrom(cap("2", default="1", validRange={"min": "1"}))
    device.capacity["dummy"].CopyFrom(cap("1"))
    got = capacity.consumption({"capacity-0": Decimal(1), "dummy": Decimal(1)}, device)
    assert got == {"capacity-0": 1, "capacity-1": 1, "dummy": 1}


VIOLATE = {
    "no constraint": ("1", None, False),
    "less than maximum": ("1", {"default": "1", "validRange": {"min": "1", "max": "2"}}, False),
    "more than maximum": ("2", {"default": "1", "validRange": {"min": "1", "max": "1"}}, True),
    "in set": ("1", {"default": "1", "validValues": ["1"]}, False),
    "not in set": ("2", {"default": "1", "validValues": ["1"]}, True),
}


@pytest.mark.parametrize(("value", "doc", "want"), VIOLATE.values(), ids=VIOLATE.keys())
def test_violates_policy(value: str, doc: dict | None, want: bool) -> None:
    p = policy(**doc) if doc is not None else resource_pb2.CapacityRequestPolicy()
    assert capacity.violates(Decimal(value), p) is want


CALCULATE = {
    "empty": (None, "1", {}, "1"),
    "min in range": (None, "2", {"default": "1", "validRange": {"min": "1"}}, "1"),
    "default in set": (None, "2", {"default": "1", "validValues": ["1"]}, "1"),
    "more than min in range": ("2", "2", {"default": "1", "validRange": {"min": "1"}}, "2"),
    "less than min in range": ("1", "2", {"default": "1", "validRange": {"min": "2"}}, "2"),
    "with step (round up)": (
        "2",
        "3",
        {"default": "1", "validRange": {"min": "1", "step": "2"}},
        "3",
    ),
    "with step (no remaining)": (
        "2",
        "2",
        {"default": "1", "validRange": {"min": "1", "step": "1"}},
        "2",
    ),
    "valid value in set": ("2", "3", {"default": "1", "validValues": ["1", "2", "3"]}, "2"),
    "set (round up)": ("2", "3", {"default": "1", "validValues": ["1", "3"]}, "3"),
    "larger than set": ("3", "3", {"default": "1", "validValues": ["1", "2"]}, "3"),
}


@pytest.mark.parametrize(
    ("requested", "value", "doc", "want"), CALCULATE.values(), ids=CALCULATE.keys()
)
def test_calculate_consumed_capacity(
    requested: str | None, value: str, doc: dict, want: str
) -> None:
    c = resource_pb2.DeviceCapacity(value=value)
    c.request_policy.CopyFrom(policy(**doc))  # "empty": a policy with nothing set
    got = capacity.consumed(Decimal(requested) if requested is not None else None, c)
    assert got == Decimal(want)


def test_shares_add_up_and_give_back_to_nothing() -> None:
    """upstream add-sub / insert-remove: what shares take is summed and given back."""
    total: dict[str, Decimal] = {}
    capacity.add(total, {"capacity-0": Decimal(1)})
    capacity.add(total, {"capacity-0": Decimal(1)})
    assert total == {"capacity-0": 2}
    capacity.add(total, {"capacity-0": Decimal(1)}, -1)
    assert total == {"capacity-0": 1}
