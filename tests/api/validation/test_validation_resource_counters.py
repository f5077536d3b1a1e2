"""Validation of a ResourceSlice's partitionable-device and consumable-capacity fields:
rows of upstream's validation_resourceslice_test.go (TestValidateResourceSlice) for
perDeviceNodeSelection, sharedCounters, consumesCounters and capacity requestPolicy, in
their newest shape (a slice holds devices or shared counters, not both)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.validation.test_validation_resource import (
    C_IDENT,
    LABEL,
    ONE_NODE,
    Doc,
    errors,
    slice_with,
)
from tests.api.validation.test_validation_resource_claim import claim, exact, first, sub

PER_DEVICE = (
    "exactly one of `nodeName`, `nodeSelector`, or `allNodes` is required when "
    "`perDeviceNodeSelection` is set to true in the ResourceSlice spec"
)
BAD = "!@#$%^"


def counters_slice(*sets: Doc) -> Doc:
    doc = slice_with(0, sharedCounters=list(sets))
    del doc["spec"]["devices"]
    return doc


def per_device(**device: Any) -> Doc:
    doc = slice_with(1, perDeviceNodeSelection=True)
    del doc["spec"]["nodeName"]
    doc["spec"]["devices"][0].update(device)
    return doc


def consuming(*consumes: Doc) -> Doc:
    doc = slice_with(1)
    doc["spec"]["devices"][0]["consumesCounters"] = list(consumes)
    return doc


def with_devices(doc: Doc, **fields: Any) -> Doc:
    for d in doc["spec"]["devices"]:
        d.update(fields)
    return doc


def multi(policy: Doc, value: str = "10Gi", allow: bool = True) -> Doc:
    doc = slice_with(1)
    dev = doc["spec"]["devices"][0]
    dev["capacity"] = {"memory": {"value": value, "requestPolicy": policy}}
    if allow:
        dev["allowMultipleAllocations"] = True
    return doc


MEM = {"memory": {"value": "1Gi"}}
DEV0 = "spec.devices[0]"
POLICY = f"{DEV0}.capacity[memory].requestPolicy"

CASES: list[tuple[str, Doc, list[str]]] = [
    (
        "bad-PerDeviceNodeSelection",
        slice_with(1, perDeviceNodeSelection=True),
        [
            f'spec: Invalid value: "{{`nodeName`, `perDeviceNodeSelection`}}": {ONE_NODE}, '
            "but multiple fields are set",
            f"{DEV0}: Required value: {PER_DEVICE}",
        ],
    ),
    (
        "invalid-false-PerDeviceNodeSelection",
        slice_with(1, perDeviceNodeSelection=False),
        ["spec.perDeviceNodeSelection: Invalid value: false: must be either unset or set to true"],
    ),
    ("good-per-device-node-name", per_device(nodeName="worker"), []),
    ("good-per-device-all-nodes", per_device(allNodes=True), []),
    (
        "invalid-node-selector-in-basicdevice",
        per_device(nodeName="", allNodes=False),
        [
            f'{DEV0}.nodeName: Invalid value: "": must not be empty',
            f"{DEV0}.allNodes: Invalid value: false: must be either unset or set to true",
            f"{DEV0}: Required value: {PER_DEVICE}",
        ],
    ),
    (
        "bad-node-selector-in-basicdevice",
        per_device(nodeName="worker", allNodes=True),
        [f'{DEV0}: Invalid value: "{{`nodeName`, `allNodes`}}": {PER_DEVICE}'],
    ),
    (
        "device-node-selection-without-per-device",
        with_devices(slice_with(1), allNodes=True),
        [
            f"{DEV0}: Invalid value: null: `nodeName`, `nodeSelector` and `allNodes` can only "
            "be set if `perDeviceNodeSelection` is set to true in the ResourceSlice spec"
        ],
    ),
    ("good-shared-counters", counters_slice({"name": "gpu-0", "counters": MEM}), []),
    (
        "bad-name-shared-counters",
        counters_slice({"name": BAD, "counters": MEM}),
        [f'spec.sharedCounters[0].name: Invalid value: "{BAD}": {LABEL}'],
    ),
    (
        "bad-countername-shared-counters",
        counters_slice({"name": "gpu-0", "counters": {BAD: {"value": "1Gi"}}}),
        [f'spec.sharedCounters[0].counters[{BAD}]: Invalid value: "{BAD}": {LABEL}'],
    ),
    (
        "missing-name-shared-counters",
        counters_slice({"counters": MEM}),
        ["spec.sharedCounters[0].name: Required value"],
    ),
    (
        "missing-counters-shared-counters",
        counters_slice({"name": "gpu-0"}),
        ["spec.sharedCounters[0].counters: Required value"],
    ),
    (
        "duplicate-shared-counters",
        counters_slice({"name": "gpu-0", "counters": MEM}, {"name": "gpu-0", "counters": MEM}),
        ['spec.sharedCounters[1]: Duplicate value: "gpu-0"'],
    ),
    (
        "too-many-shared-counters",
        counters_slice(*({"name": f"gpu-{i}", "counters": MEM} for i in range(9))),
        ["spec.sharedCounters: Too many: must have at most 8 items"],
    ),
    (
        "shared-counters-and-devices",
        slice_with(1, sharedCounters=[{"name": "gpu-0", "counters": MEM}]),
        ['spec: Invalid value: "": only one of `sharedCounters` or `devices` is allowed'],
    ),
    ("good-consumes-counters", consuming({"counterSet": "gpu-0", "counters": MEM}), []),
    (
        "missing-counterset-consumes-counter",
        consuming({"counters": MEM}),
        [f"{DEV0}.consumesCounters[0].counterSet: Required value"],
    ),
    (
        "missing-counters-consumes-counter",
        consuming({"counterSet": "gpu-0"}),
        [f"{DEV0}.consumesCounters[0].counters: Required value"],
    ),
    (
        "duplicate-consumes-counter",
        consuming(
            {"counterSet": "gpu-0", "counters": MEM}, {"counterSet": "gpu-0", "counters": MEM}
        ),
        [f'{DEV0}.consumesCounters[1]: Duplicate value: "gpu-0"'],
    ),
    (
        "too-many-consumes-counter",
        consuming(*({"counterSet": f"gpu-{i}", "counters": MEM} for i in range(3))),
        [f"{DEV0}.consumesCounters: Too many: must have at most 2 items"],
    ),
    (
        "too-many-devices-consuming-counters",
        with_devices(slice_with(65), consumesCounters=[{"counterSet": "gpu-0", "counters": MEM}]),
        ["spec.devices: Too many: must have at most 64 items"],
    ),
    # Consumable capacity: requestPolicy only on a device that allows multiple allocations.
    (
        "request-policy-single-allocatable",
        multi({"default": "1Gi"}, allow=False),
        [f"{POLICY}: Forbidden: allowMultipleAllocations must be true"],
    ),
    (
        "good-request-policy-range",
        multi({"default": "1Gi", "validRange": {"min": "1Gi", "max": "4Gi", "step": "1Gi"}}),
        [],
    ),
    (
        "good-request-policy-values",
        multi({"default": "1Gi", "validValues": ["1Gi", "2Gi"]}),
        [],
    ),
    (
        "request-policy-both",
        multi({"default": "1Gi", "validValues": ["1Gi"], "validRange": {"min": "1Gi"}}),
        [
            f"{POLICY}: Forbidden: exactly one policy can be specified, cannot specify "
            '"validValues" and "validRange" at the same time'
        ],
    ),
    (
        "request-policy-range-without-default",
        multi({"validRange": {"min": "1Gi"}}),
        [f"{POLICY}.default: Required value: required when validRange is defined"],
    ),
    (
        "request-policy-values-unsorted-over-capacity",
        multi({"default": "1Gi", "validValues": ["2Gi", "1Gi", "20Gi"]}),
        [
            f'{POLICY}.validValues[1]: Invalid value: "1Gi": values must be sorted in '
            "ascending order",
            f'{POLICY}.validValues[2]: Invalid value: "20Gi": option is larger than capacity '
            "value: 10Gi",
        ],
    ),
    (
        "request-policy-values-without-default-value",
        multi({"default": "3Gi", "validValues": ["1Gi", "2Gi"]}),
        [
            f'{POLICY}.validValues: Invalid value: "3Gi": default value is not valid according '
            "to the requestPolicy"
        ],
    ),
    (
        "request-policy-range-bad",
        multi({"default": "1Gi", "validRange": {"min": "2Gi", "max": "20Gi", "step": "3Gi"}}),
        [
            f'{POLICY}.validRange.min: Invalid value: "1Gi": default is less than min: 2Gi',
            f'{POLICY}.validRange.max: Invalid value: "20Gi": max is larger than capacity '
            "value: 10Gi",
            f'{POLICY}.validRange.step: Invalid value: "1Gi": value is not a multiple of a '
            "given step (3Gi) from (2Gi)",
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in CASES], ids=[n for n, _, _ in CASES]
)
def test_resource_slice_counter_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceSlice", doc) == want


# ResourceClaim: distinctAttribute constraints and capacity requests (consumable capacity).
CLAIM_CASES: list[tuple[str, Doc, list[str]]] = [
    (
        "good-distinct-attribute",
        claim(exact(), constraints=[{"distinctAttribute": "dra.example.com/numa"}]),
        [],
    ),
    (
        "bad-distinct-attribute",
        claim(exact(), constraints=[{"distinctAttribute": "numa"}]),
        [
            'spec.devices.constraints[0].distinctAttribute: Invalid value: "numa": must '
            "include a domain"
        ],
    ),
    (
        "good-capacity-requests",
        claim(
            exact(capacity={"requests": {"dra.example.com/memory": "1Gi"}}),
            first("req-1", sub(capacity={"requests": {"bandwidth": "10G"}})),
        ),
        [],
    ),
    (
        "bad-capacity-request-name",
        claim(exact(capacity={"requests": {"x.io/9gb": "1"}})),
        [
            "spec.devices.requests[0].exactly.capacity.requests[x.io/9gb]: Invalid value: "
            f'"9gb": {C_IDENT}'
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in CLAIM_CASES], ids=[n for n, _, _ in CLAIM_CASES]
)
def test_resource_claim_capacity_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceClaim", doc) == want
