"""Validation of device binding conditions (a ResourceSlice's devices) and of a claim's
status.devices: rows after upstream's validation_resourceslice_test.go (binding
conditions) and validation_resourceclaim_test.go (TestValidateClaimStatusUpdate, the
device status rows). Each failing row lists every error, as kube-apiserver prints them."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.validation.test_validation_resource import BAD, errors, slice_with
from tests.api.validation.test_validation_resource_claim import ALLOCATION, with_status
from tests.api.validation.test_validation_resource_claim import errors as claim_errors

Doc = dict[str, Any]
DEV = "spec.devices[0]"
NAME_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', "
    "regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def device(**fields: Any) -> Doc:
    doc = slice_with(1)
    doc["spec"]["devices"][0].update(fields)
    return doc


SLICE_CASES: list[tuple[str, Doc, list[str]]] = [
    (
        # the seed's example slice (the DRA docs' "device binding conditions")
        "seed-example",
        device(
            bindsToNode=True,
            bindingConditions=["dra.example.com/is-prepared"],
            bindingFailureConditions=["dra.example.com/preparing-failed"],
        ),
        [],
    ),
    (
        "too-many-binding-conditions",
        device(bindingConditions=[f"c{i}" for i in range(5)], bindingFailureConditions=["f"]),
        [f"{DEV}.bindingConditions: Too many: must have at most 4 items"],
    ),
    (
        "bad-duplicate-and-overlapping-conditions",
        device(bindingConditions=[BAD, "a", "a"], bindingFailureConditions=["a"]),
        [
            f'{DEV}.bindingConditions[0]: Invalid value: "{BAD}": {NAME_MSG}',
            f'{DEV}.bindingConditions[2]: Duplicate value: "a"',
            f'{DEV}.bindingFailureConditions[0]: Invalid value: "a": bindingFailureConditions '
            "must not overlap with bindingConditions",
        ],
    ),
    (
        "failure-conditions-need-conditions",
        device(bindingFailureConditions=["f"]),
        [
            f"{DEV}.bindingConditions: Invalid value: []: bindingConditions are required to "
            "use bindingFailureConditions"
        ],
    ),
    (
        "conditions-need-failure-conditions",
        device(bindingConditions=["c"]),
        [
            f"{DEV}.bindingFailureConditions: Invalid value: []: bindingFailureConditions are "
            "required to use bindingConditions"
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in SLICE_CASES], ids=[n for n, _, _ in SLICE_CASES]
)
def test_binding_condition_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceSlice", doc) == want


def status(*devices: Doc) -> Doc:
    return {"allocation": ALLOCATION, "devices": list(devices)}


def dev(**fields: Any) -> Doc:
    return {"driver": "dra.example.com", "pool": "worker", "device": "dev-0", **fields}


def cond(type_: str = "dra.example.com/is-prepared", **fields: Any) -> Doc:
    return {
        "type": type_,
        "status": "True",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "reason": "Prepared",
        **fields,
    }


P = "status.devices[0]"
STATUS_CASES: list[tuple[str, Doc, list[str]]] = [
    (
        "valid-device-status",
        status(
            dev(
                conditions=[cond()],
                data={"bar": "foo"},
                networkData={
                    "interfaceName": "net-1",
                    "ips": ["10.9.8.0/24", "2001:db8::/64"],
                    "hardwareAddress": "ea:9f:cb:40:b1:7b",
                },
            )
        ),
        [],
    ),
    (
        "invalid-device-status-not-allocated",
        status(dev(device="dev-9")),
        [
            f'{P}: Invalid value: "dra.example.com/worker/dev-9": must be an allocated device '
            "in the claim"
        ],
    ),
    (
        "invalid-device-status-duplicate",
        status(dev(), dev()),
        ['status.devices[1]: Duplicate value: "dra.example.com/worker/dev-0"'],
    ),
    (
        "invalid-conditions",
        status(
            dev(
                conditions=[
                    cond(status="Maybe", reason="no way"),
                    cond(),
                    *[cond(f"c{i}") for i in range(7)],
                ]
            )
        ),
        [
            f"{P}.conditions: Too many: must have at most 8 items",
            f'{P}.conditions[0].status: Unsupported value: "Maybe": supported values: '
            '"False", "True", "Unknown"',
            f'{P}.conditions[0].reason: Invalid value: "no way": a condition reason must start '
            "with alphabetic character, optionally followed by a string of alphanumeric "
            "characters or '_,:', and must end with an alphanumeric character or '_' (e.g. "
            "'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or "
            "'ReasonA:ReasonB', regex used for validation is "
            "'[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
            f'{P}.conditions[1].type: Duplicate value: "dra.example.com/is-prepared"',
        ],
    ),
    (
        "invalid-data-and-network-data",
        status(
            dev(
                data=["not", "an", "object"],
                networkData={
                    "interfaceName": "x" * 257,
                    "hardwareAddress": "x" * 129,
                    "ips": ["300.0.0.1/24", "10.0.0.1", "10.9.8.0/24", "10.9.8.0/24"],
                },
            )
        ),
        [
            f'{P}.data: Invalid value: "<value omitted>": must be a valid JSON object',
            f"{P}.networkData.interfaceName: Too long: may not be more than 256 bytes",
            f"{P}.networkData.hardwareAddress: Too long: may not be more than 128 bytes",
            f'{P}.networkData.ips[0]: Invalid value: "300.0.0.1/24": must be a valid address '
            "in CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            f'{P}.networkData.ips[1]: Invalid value: "10.0.0.1": must be a valid address in '
            "CIDR form, (e.g. 10.9.8.7/24 or 2001:db8::1/64)",
            f'{P}.networkData.ips[3]: Duplicate value: "10.9.8.0/24"',
        ],
    ),
]


@pytest.mark.parametrize(
    ("new", "want"), [(n, w) for _, n, w in STATUS_CASES], ids=[c[0] for c in STATUS_CASES]
)
def test_device_status_rules(new: Doc, want: list[str]) -> None:
    old = with_status({"allocation": ALLOCATION})
    assert claim_errors("ResourceClaim", with_status(new), old) == want


SHARE = "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa"
SHARED_ALLOCATION: Doc = {
    "devices": {
        "results": [
            {**ALLOCATION["devices"]["results"][0], "shareID": SHARE},
        ]
    },
    "nodeSelector": ALLOCATION["nodeSelector"],
}


@pytest.mark.parametrize(
    ("device", "want"),
    [
        (dev(shareID=SHARE), []),
        # upstream's SharedDeviceID: a share's status names its share, the device alone is
        # not an allocated device, nor another share of it.
        (dev(), ["dra.example.com/worker/dev-0"]),
        (
            dev(shareID="bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"),
            ["dra.example.com/worker/dev-0/bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb"],
        ),
    ],
    ids=["its-share", "no-share", "another-share"],
)
def test_device_status_of_a_share_names_the_allocated_share(device: Doc, want: list[str]) -> None:
    old = with_status({"allocation": SHARED_ALLOCATION})
    new = with_status({"allocation": SHARED_ALLOCATION, "devices": [device]})
    assert claim_errors("ResourceClaim", new, old) == [
        f'{P}: Invalid value: "{w}": must be an allocated device in the claim' for w in want
    ]


def test_device_status_goes_with_the_allocation() -> None:
    old = with_status(status(dev(conditions=[cond()])))
    # Deallocating clears status.devices too; leaving it is refused.
    assert claim_errors("ResourceClaim", with_status({}), old) == []
    got = claim_errors("ResourceClaim", with_status({"devices": [dev()]}), old)
    assert got == [
        f'{P}: Invalid value: "dra.example.com/worker/dev-0": must be an allocated device in '
        "the claim"
    ]
