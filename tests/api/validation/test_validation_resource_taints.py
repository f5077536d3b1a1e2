"""Validation of device taints, device tolerations and DeviceTaintRule (upstream
pkg/apis/resource/validation/validation.go: validateDeviceTaint, validateDeviceToleration,
ValidateDeviceTaintRule(Update); rows after validation_devicetaintrule_test.go and the
taint/toleration rows of validation_resourceslice_test.go and
validation_resourceclaim_test.go). Each failing row lists every error (`path: Type: value:
detail`, as kube-apiserver prints them)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from services.api.dra.taints import stamp_time_added
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.validation import validate_create
from services.apiserver.admission import apply_defaults
from tests.api.resource_manifests import manifest
from tests.api.validation.test_validation_resource import errors

Doc = dict[str, Any]
TAINT: Doc = {"key": "example.com/taint", "value": "tainted", "effect": "NoExecute"}
QUALIFIED = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
EFFECTS = 'supported values: "NoExecute", "NoSchedule", "None"'


def rule(**spec: Any) -> Doc:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceTaintRule",
        "metadata": {"name": "rule"},
        "spec": {"deviceSelector": {"driver": "gpu.example.com"}, "taint": TAINT, **spec},
    }


def tolerating(*tolerations: Doc, sub: bool = False) -> Doc:
    doc = manifest("ResourceClaim")
    req = doc["spec"]["devices"]["requests"][0]
    if sub:
        exact = req.pop("exactly")
        req["firstAvailable"] = [{"name": "sub", **exact, "tolerations": list(tolerations)}]
    else:
        req["exactly"]["tolerations"] = list(tolerations)
    return doc


def tainted_slice(*taints: Doc) -> Doc:
    doc = manifest("ResourceSlice")
    doc["spec"]["devices"][0]["taints"] = list(taints)
    return doc


@pytest.mark.parametrize(
    ("doc", "want"),
    [
        pytest.param(rule(), [], id="rule-valid"),
        pytest.param(rule(deviceSelector={}), [], id="rule-empty-selector"),
        pytest.param(
            rule(deviceSelector={"driver": "gpu.example.com", "pool": "p", "device": "d-0"}),
            [],
            id="rule-full-selector",
        ),
        pytest.param(
            rule(taint={"key": "", "effect": "NoSchedule"}),
            [
                'spec.taint.key: Invalid value: "": name part must be non-empty',
                f'spec.taint.key: Invalid value: "": {QUALIFIED}',
            ],
            id="rule-taint-key-required",
        ),
        pytest.param(
            rule(taint={"key": "k"}),
            ["spec.taint.effect: Required value"],
            id="rule-taint-effect-required",
        ),
        pytest.param(
            rule(taint={"key": "k", "effect": "PreferNoSchedule"}),
            [f'spec.taint.effect: Unsupported value: "PreferNoSchedule": {EFFECTS}'],
            id="rule-taint-prefer-no-schedule",
        ),
        pytest.param(
            rule(taint={"key": "k", "value": "-bad-", "effect": "None"}),
            [
                'spec.taint.value: Invalid value: "-bad-": a valid label must be an empty '
                "string or consist of alphanumeric characters, '-', '_' or '.', and must start "
                "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
                "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
                "[A-Za-z0-9])?')"
            ],
            id="rule-taint-bad-value",
        ),
        pytest.param(
            rule(deviceSelector={"driver": "Not_A_Driver", "device": "Bad_Device"}),
            [
                'spec.deviceSelector.driver: Invalid value: "Not_A_Driver": a lowercase RFC '
                "1123 subdomain must consist of lower case alphanumeric characters, '-' or "
                "'.', and must start and end with an alphanumeric character (e.g. "
                "'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?"
                "(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                'spec.deviceSelector.device: Invalid value: "Bad_Device": a lowercase RFC 1123 '
                "label must consist of lower case alphanumeric characters or '-', and must "
                "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
                "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            ],
            id="rule-bad-selector",
        ),
    ],
)
def test_device_taint_rule(doc: Doc, want: list[str]) -> None:
    assert errors("DeviceTaintRule", doc) == want


def test_rule_update_keeps_a_stored_effect() -> None:
    """An effect unknown to this version passes an update that does not change it."""
    old = rule(taint={"key": "k", "effect": "SomeFutureEffect"})
    new = copy.deepcopy(old)
    new["spec"]["taint"]["value"] = "v"
    assert errors("DeviceTaintRule", new, old) == []
    changed = copy.deepcopy(old)
    changed["spec"]["taint"]["effect"] = "OtherFutureEffect"
    assert errors("DeviceTaintRule", changed, old) == [
        f'spec.taint.effect: Unsupported value: "OtherFutureEffect": {EFFECTS}'
    ]


def test_rule_status_conditions_at_most_eight() -> None:
    doc = rule()
    doc["status"] = {
        "conditions": [
            {
                "type": f"T{i}",
                "status": "True",
                "reason": "R",
                "lastTransitionTime": "2030-01-01T00:00:00Z",
            }
            for i in range(9)
        ]
    }
    assert errors("DeviceTaintRule", doc) == [
        "status.conditions: Too many: must have at most 8 items"
    ]


@pytest.mark.parametrize("sub", [False, True], ids=["exactly", "firstAvailable"])
@pytest.mark.parametrize(
    ("tolerations", "want"),
    [
        pytest.param([{"operator": "Exists"}], [], id="exists-everything"),
        pytest.param(
            [
                {
                    "key": "k",
                    "operator": "Equal",
                    "value": "v",
                    "effect": "NoExecute",
                    "tolerationSeconds": 30,
                }
            ],
            [],
            id="equal",
        ),
        pytest.param([{"key": "k", "value": "v"}], [], id="operator-defaults-to-equal"),
        pytest.param(
            [{"key": "k", "operator": "Exists", "value": "v"}],
            ['{p}.value: Invalid value: "v": must be empty for operator `Exists`'],
            id="exists-with-value",
        ),
        pytest.param(
            [{"key": "k", "operator": "Gt", "value": "1"}],
            ['{p}.operator: Unsupported value: "Gt": supported values: "Equal", "Exists"'],
            id="bad-operator",
        ),
        pytest.param(
            [{"operator": "Exists", "effect": "PreferNoSchedule"}],
            [f'{{p}}.effect: Unsupported value: "PreferNoSchedule": {EFFECTS}'],
            id="bad-effect",
        ),
        pytest.param(
            [{"operator": "Exists"}] * 17,
            ["{t}: Too many: must have at most 16 items"],
            id="too-many",
        ),
    ],
)
def test_request_tolerations(tolerations: list[Doc], want: list[str], sub: bool) -> None:
    base = (
        "spec.devices.requests[0].firstAvailable[0].tolerations"
        if sub
        else "spec.devices.requests[0].exactly.tolerations"
    )
    doc = tolerating(*tolerations, sub=sub)
    paths = [w.replace("{t}", base).replace("{p}", f"{base}[0]") for w in want]
    assert defaulted_errors("ResourceClaim", doc) == paths


def defaulted_errors(kind: str, doc: Doc) -> list[str]:
    """Errors as the apiserver answers a create: upstream's defaults first."""
    obj = codec.decode(doc, validate="strict").obj
    apply_defaults(BY_KIND[kind], obj)
    return [str(e) for e in validate_create(kind, obj)]


def test_an_empty_operator_is_required_without_defaults() -> None:
    assert errors("ResourceClaim", tolerating({"key": "k"})) == [
        "spec.devices.requests[0].exactly.tolerations[0].operator: Required value"
    ]


@pytest.mark.parametrize(
    ("taints", "want"),
    [
        pytest.param([TAINT, {**TAINT, "effect": "None"}], [], id="valid"),
        pytest.param(
            [{"key": "k", "effect": "NoSchedule"}] * 17,
            ["spec.devices[0].taints: Too many: must have at most 16 items"],
            id="too-many",
        ),
        pytest.param(
            [{"key": "k", "effect": ""}],
            ["spec.devices[0].taints[0].effect: Required value"],
            id="effect-required",
        ),
    ],
)
def test_slice_taints(taints: list[Doc], want: list[str]) -> None:
    assert errors("ResourceSlice", tainted_slice(*taints)) == want


def test_time_added_stamped_when_missing_and_on_effect_change() -> None:
    now, later = "2030-01-01T00:00:00Z", "2030-01-01T01:00:00Z"
    s = codec.decode(tainted_slice(TAINT, {**TAINT, "timeAdded": later}), validate="strict").obj
    stamp_time_added(s, None, now)
    assert [t.time_added for t in s.spec.devices[0].taints] == [now, later]
    old = codec.decode(rule(taint={**TAINT, "timeAdded": now}), validate="strict").obj
    same = codec.decode(
        rule(taint={**TAINT, "timeAdded": now, "value": "x"}), validate="strict"
    ).obj
    stamp_time_added(same, old, later)
    assert same.spec.taint.time_added == now  # effect kept: the eviction already counts
    changed = codec.decode(
        rule(taint={**TAINT, "timeAdded": now, "effect": "None"}), validate="strict"
    ).obj
    stamp_time_added(changed, old, later)
    assert changed.spec.taint.time_added == later


def test_allocation_result_tolerations_are_validated() -> None:
    doc = manifest("ResourceClaim")
    doc["status"] = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": doc["spec"]["devices"]["requests"][0]["name"],
                        "driver": "gpu.example.com",
                        "pool": "p",
                        "device": "d",
                        "tolerations": [{"operator": "Exists", "value": "v"}],
                    }
                ]
            }
        }
    }
    assert errors("ResourceClaim", doc) == [
        "status.allocation.devices.results[0].tolerations[0].value: Invalid value: "
        '"v": must be empty for operator `Exists`'
    ]
