"""kubectl's columns for the DRA kinds (upstream printers.go) and PodGroup (its CRD's
additionalPrinterColumns), as the HTTP Table and kubera's CLI print them."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf.message import Message

from services.api.machinery.kinds import BY_KIND
from services.api.printers import printers
from services.api.printers.resource import resource_claim_state
from services.clock import parse_rfc3339
from services.httpapi import tables
from tests.builders import (
    device_class,
    exact_request,
    gpu,
    pod_group,
    resource_claim,
    resource_claim_template,
    resource_slice,
)

CREATED = "2030-01-01T00:00:00Z"
NOW = parse_rfc3339("2030-01-01T00:05:00Z")
ALLOCATION: dict[str, Any] = {
    "devices": {
        "results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "n1", "device": "g0"}]
    }
}
RESERVED = [{"resource": "pods", "name": "p", "uid": "u1"}]


def _created(obj: Message) -> Message:
    obj.metadata.creation_timestamp = CREATED  # type: ignore[attr-defined]
    return obj


def _row(obj: Message) -> list[Any]:
    kind = BY_KIND[obj.kind]  # type: ignore[attr-defined]
    (row,) = tables.to_table(kind, [_created(obj)], wide=False, now=NOW)["rows"]
    return row["cells"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("kind", "columns"),
    [
        ("DeviceClass", ["Name", "Age"]),
        ("ResourceSlice", ["Name", "Node", "Driver", "Pool", "Age"]),
        ("ResourceClaim", ["Name", "State", "Age"]),
        ("ResourceClaimTemplate", ["Name", "Age"]),
        ("PodGroup", ["Name", "Phase", "MinMember", "Running", "Succeeded", "Failed", "Age"]),
    ],
)
def test_columns_are_upstreams(kind: str, columns: list[str]) -> None:
    defs = tables.to_table(BY_KIND[kind], [], wide=True)["columnDefinitions"]
    assert [c["name"] for c in defs] == columns


@pytest.mark.parametrize(
    ("status", "deleting", "state"),
    [
        ({}, False, "pending"),
        ({"allocation": ALLOCATION}, False, "allocated"),
        ({"allocation": ALLOCATION, "reservedFor": RESERVED}, False, "allocated,reserved"),
        ({}, True, "deleted"),
        ({"allocation": ALLOCATION}, True, "deleted,allocated"),
        ({"allocation": ALLOCATION, "reservedFor": RESERVED}, True, "deleted,allocated,reserved"),
    ],
)
def test_resource_claim_state_is_upstreams_summary(
    status: dict[str, Any], deleting: bool, state: str
) -> None:
    claim = resource_claim("c", "default", exact_request("gpu", "gpu"), status=status)
    if deleting:
        claim.metadata.deletion_timestamp = CREATED
    assert resource_claim_state(claim) == state
    assert _row(claim) == ["c", state, "5m"]


def test_resource_slice_row_names_node_driver_and_pool() -> None:
    rs = resource_slice("n1-gpu-example-com", node="n1", devices=[gpu("g0")])
    assert _row(rs) == ["n1-gpu-example-com", "n1", "gpu.example.com", "n1", "5m"]


@pytest.mark.parametrize(
    "obj",
    [device_class("gpu", 'device.driver == "gpu.example.com"'), resource_claim_template("t")],
    ids=["DeviceClass", "ResourceClaimTemplate"],
)
def test_name_and_age_kinds(obj: Message) -> None:
    assert _row(obj) == [obj.metadata.name, "5m"]  # type: ignore[attr-defined]


def test_pod_group_row_has_integer_counts_and_none_for_unset_ones() -> None:
    pg = pod_group("g", min_member=3)
    pg.status.phase = "Running"
    pg.status.running = 2
    assert _row(pg) == ["g", "Running", 3, 2, "<none>", "<none>", "5m"]
    fresh = pod_group("h", min_member=1)
    assert _row(fresh)[:2] == ["h", "<none>"]


def test_cli_prints_the_same_headers() -> None:
    assert printers.columns_of(BY_KIND["ResourceClaim"]).headers == ("NAME", "STATE", "AGE")
    assert printers.columns_of(BY_KIND["PodGroup"]).headers == (
        "NAME",
        "PHASE",
        "MINMEMBER",
        "RUNNING",
        "SUCCEEDED",
        "FAILED",
        "AGE",
    )
