"""Validation of ResourceSlice, DeviceClass and PodGroup: one row per upstream rule, ported
from pkg/apis/resource/validation/validation_resourceslice_test.go and
validation_deviceclass_test.go (TestValidateResourceSlice, TestValidateResourceSliceUpdate,
TestValidateClass) and the PodGroup CRD's schema. Each failing row lists every error
(`path: Type: value: detail`, as kube-apiserver prints them)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from services.api.dra import cel
from services.api.machinery import codec
from services.api.validation import validate_create, validate_update
from tests.api.resource_manifests import manifest

BAD = "!@#$%^"
SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
    "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
    "[a-z0-9])?)*')"
)
LABEL = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
C_IDENT = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
    "used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
ONE_NODE = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)

Doc = dict[str, Any]


def errors(kind: str, doc: Doc, old: Doc | None = None) -> list[str]:
    obj = codec.decode(doc, validate="strict").obj
    assert codec.canonicalize_quantities(obj) == []
    if old is None:
        return [str(e) for e in validate_create(kind, obj)]
    before = codec.decode(old, validate="strict").obj
    codec.canonicalize_quantities(before)
    return [str(e) for e in validate_update(kind, obj, before)]


def slice_with(n_devices: int = 1, **spec: Any) -> Doc:
    """upstream's testResourceSlice: node `worker`, devices device-0.. with an int, string,
    version and bool attribute and a memory capacity."""
    doc = manifest("ResourceSlice")
    doc["spec"].update({"nodeName": "worker", "pool": {"name": "worker", "resourceSliceCount": 1}})
    doc["spec"]["devices"] = [
        {
            "name": f"device-{i}",
            "attributes": {
                "int": {"int": 42},
                "string": {"string": "hello world"},
                "version": {"version": "1.2.3"},
                "bool": {"bool": True},
            },
            "capacity": {"memory": {"value": "1Gi"}},
        }
        for i in range(n_devices)
    ]
    doc["spec"].update(spec)
    return doc


def _set(doc: Doc, fn: Callable[[Doc], None]) -> Doc:
    doc = copy.deepcopy(doc)
    fn(doc)
    return doc


def _attrs(i: int, attrs: Doc) -> Callable[[Doc], None]:
    def fn(d: Doc) -> None:
        d["spec"]["devices"][i]["attributes"] = attrs

    return fn


SLICE_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good", slice_with(128), []),
    (
        "too-large",
        slice_with(129),
        ["spec.devices: Too many: must have at most 128 items"],
    ),
    (
        "bad-nodename",
        slice_with(1, nodeName=BAD, pool={"name": BAD, "resourceSliceCount": 1}),
        [
            f'spec.pool.name: Invalid value: "{BAD}": {SUBDOMAIN}',
            f'spec.nodeName: Invalid value: "{BAD}": {SUBDOMAIN}',
        ],
    ),
    (
        "bad-multi-pool-name",
        slice_with(1, pool={"name": f"{BAD}/{BAD}", "resourceSliceCount": 1}),
        [
            f'spec.pool.name: Invalid value: "{BAD}": {SUBDOMAIN}',
            f'spec.pool.name: Invalid value: "{BAD}": {SUBDOMAIN}',
        ],
    ),
    ("good-pool-name", slice_with(1, pool={"name": "x" * 253, "resourceSliceCount": 1}), []),
    (
        "bad-pool",
        slice_with(1, pool={"name": "x/" * 126 + "xy", "resourceSliceCount": 0, "generation": -1}),
        [
            "spec.pool.name: Too long: may not be more than 253 bytes",
            "spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
            "spec.pool.generation: Invalid value: -1: must be greater than or equal to zero",
        ],
    ),
    (
        "missing-pool-name",
        slice_with(1, pool={"resourceSliceCount": 1}),
        ["spec.pool.name: Required value"],
    ),
    (
        "bad-empty-node-selector",
        _set(slice_with(1, nodeSelector={}), lambda d: d["spec"].pop("nodeName")),
        [
            "spec.nodeSelector.nodeSelectorTerms: Required value: must have at least one node "
            "selector term",
            "spec.nodeSelector.nodeSelectorTerms: Invalid value: []: must have exactly one node "
            "selector term",
        ],
    ),
    (
        "bad-node-selection",
        slice_with(
            1,
            nodeSelector={
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["worker"]}
                        ]
                    }
                ]
            },
        ),
        [
            'spec: Invalid value: "{`nodeName`, `nodeSelector`}": '
            f"{ONE_NODE}, but multiple fields are set"
        ],
    ),
    (
        "bad-node-selection-all-nodes",
        slice_with(1, allNodes=True),
        [
            f'spec: Invalid value: "{{`nodeName`, `allNodes`}}": {ONE_NODE}, but multiple fields are set'
        ],
    ),
    (
        "empty-node-selection",
        _set(slice_with(1), lambda d: d["spec"].pop("nodeName")),
        [f"spec: Required value: {ONE_NODE}"],
    ),
    ("all-nodes", _set(slice_with(1, allNodes=True), lambda d: d["spec"].pop("nodeName")), []),
    (
        "bad-drivername",
        slice_with(1, driver=BAD),
        [f'spec.driver: Invalid value: "{BAD}": {SUBDOMAIN}'],
    ),
    (
        "missing-driver",
        slice_with(1, driver=""),
        ["spec.driver: Required value", f'spec.driver: Invalid value: "": {SUBDOMAIN}'],
    ),
    (
        "bad-devices",
        _set(slice_with(3), lambda d: d["spec"]["devices"][1].update(name=BAD)),
        [f'spec.devices[1].name: Invalid value: "{BAD}": {LABEL}'],
    ),
    (
        "duplicate-device-names",
        _set(slice_with(2), lambda d: d["spec"]["devices"][1].update(name="device-0")),
        ['spec.devices[1].name: Duplicate value: "device-0"'],
    ),
    (
        "bad-attribute-name",
        _set(slice_with(2), _attrs(1, {BAD: {"int": 1}})),
        [f'spec.devices[1].attributes[{BAD}]: Invalid value: "{BAD}": {C_IDENT}'],
    ),
    (
        "attribute-without-value",
        _set(slice_with(1), _attrs(0, {"empty": {}})),
        ["spec.devices[0].attributes[empty]: Required value: exactly one value must be specified"],
    ),
    (
        "attribute-with-two-values",
        _set(slice_with(1), _attrs(0, {"two": {"string": "x", "version": "1.2.3"}})),
        [
            'spec.devices[0].attributes[two]: Invalid value: {"string":"x","version":"1.2.3"}: '
            "exactly one value must be specified"
        ],
    ),
    (
        "version-not-semver-and-too-long",
        _set(slice_with(1), _attrs(0, {"v": {"version": "x" * 65}})),
        [
            f'spec.devices[0].attributes[v].version: Invalid value: "{"x" * 65}": must be a '
            "string compatible with semver.org spec 2.0.0",
            "spec.devices[0].attributes[v].version: Too long: may not be more than 64 bytes",
        ],
    ),
    (
        # semver.org's grammar takes it, but no CEL value can hold it: every selector on the
        # device would fail at conversion (review finding 6).
        "version-number-beyond-int64",
        _set(slice_with(1), _attrs(0, {"v": {"version": "99999999999999999999999.0.0"}})),
        [
            'spec.devices[0].attributes[v].version: Invalid value: "99999999999999999999999.0.0": '
            "must be a usable semantic version: Major number out of range "
            "'99999999999999999999999'"
        ],
    ),
    (
        "version-largest-int64-major",
        _set(slice_with(1), _attrs(0, {"v": {"version": "9223372036854775807.1.2"}})),
        [],
    ),
    # dracore: list-type attributes (DRAListTypeAttributes): each element as its scalar.
    ("list-attribute-values", _set(slice_with(1), _attrs(0, {"s": {"strings": ["a", "b"]}})), []),
    (
        "list-attribute-elements-checked",
        _set(
            slice_with(1),
            _attrs(0, {"s": {"strings": ["a", "x" * 65]}, "v": {"versions": ["1.0.0", "x"]}}),
        ),
        [
            "spec.devices[0].attributes[s].strings[1]: Too long: may not be more than 64 bytes",
            'spec.devices[0].attributes[v].versions[1]: Invalid value: "x": must be a '
            "string compatible with semver.org spec 2.0.0",
        ],
    ),
    (
        "list-and-scalar-value",
        _set(slice_with(1), _attrs(0, {"two": {"int": 1, "ints": [1]}})),
        [
            'spec.devices[0].attributes[two]: Invalid value: {"int":"1","ints":["1"]}: '
            "exactly one value must be specified"
        ],
    ),
    (
        "string-too-long",
        _set(slice_with(1), _attrs(0, {"s": {"string": "x" * 65}})),
        ["spec.devices[0].attributes[s].string: Too long: may not be more than 64 bytes"],
    ),
    (
        "good-semver-with-prerelease-and-build",
        _set(slice_with(1), _attrs(0, {"v": {"version": "1.2.3-alpha.1+build.20240305"}})),
        [],
    ),
    (
        "good-qualified-names",
        _set(
            slice_with(1), _attrs(0, {"dra.example.com/model": {"string": "a"}, "_x1": {"int": 1}})
        ),
        [],
    ),
    (
        "bad-qualified-names",
        _set(
            slice_with(1),
            _attrs(0, {"/model": {"int": 1}, "dra.example.com/": {"int": 1}, "a" * 33: {"int": 1}}),
        ),
        [
            "spec.devices[0].attributes[/model]: Required value: the domain must not be empty",
            f"spec.devices[0].attributes[{'a' * 33}]: Too long: may not be more than 32 bytes",
            "spec.devices[0].attributes[dra.example.com/]: Required value: the name must not be "
            "empty",
        ],
    ),
    (
        "too-many-attributes-and-capacities",
        _set(
            slice_with(1),
            _attrs(0, {f"a{i}": {"int": i} for i in range(32)}),
        ),
        [
            "spec.devices[0]: Invalid value: 33: the total number of attributes and capacities "
            "must not exceed 32"
        ],
    ),
    (
        "bad-capacity-name",
        _set(
            slice_with(1),
            lambda d: d["spec"]["devices"][0].update(capacity={"1mem": {"value": "1"}}),
        ),
        [f'spec.devices[0].capacity[1mem]: Invalid value: "1mem": {C_IDENT}'],
    ),
    (
        "bad-name",
        _set(slice_with(1), lambda d: d["metadata"].update(name=BAD)),
        [f'metadata.name: Invalid value: "{BAD}": {SUBDOMAIN}'],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in SLICE_CASES], ids=[n for n, _, _ in SLICE_CASES]
)
def test_resource_slice_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceSlice", doc) == want


@pytest.mark.parametrize(
    "version",
    [
        "1.2.3",
        "9223372036854775807.0.9223372036854775807-rc.1+b",
        "9223372036854775808.0.0",
        "0.18446744073709551616.0",
        "99999999999999999999999.0.0",
    ],
)
def test_a_version_that_passes_validation_converts_for_cel(version: str) -> None:
    """Validation and the allocator's CEL conversion agree: a slice that is stored never
    makes a selector fail at runtime on its version (review finding 6)."""
    doc = _set(slice_with(1), _attrs(0, {"v": {"version": version}}))
    valid = errors("ResourceSlice", doc) == []
    device = codec.decode(doc, validate="strict").obj.spec.devices[0]  # type: ignore[attr-defined]
    sel = cel.compile_selector('device.attributes["dra.example.com"].v.major() >= 0')
    try:
        sel.matches("dra.example.com", device)
        converts = True
    except cel.CELRuntimeError:
        converts = False
    assert valid is converts, (valid, converts)


SLICE_UPDATES: list[tuple[str, Callable[[Doc], None], list[str]]] = [
    ("valid-no-op-update", lambda d: None, []),
    ("add-device", lambda d: d["spec"]["devices"].append({"name": "device-9"}), []),
    (
        "invalid-update-nodename",
        lambda d: d["spec"].update(nodeName="other"),
        ['spec.nodeName: Invalid value: "other": field is immutable'],
    ),
    (
        "invalid-update-drivername",
        lambda d: d["spec"].update(driver="other.example.com"),
        ['spec.driver: Invalid value: "other.example.com": field is immutable'],
    ),
    (
        "invalid-update-pool",
        lambda d: d["spec"]["pool"].update(name="other"),
        ['spec.pool.name: Invalid value: "other": field is immutable'],
    ),
    ("generation-may-grow", lambda d: d["spec"]["pool"].update(generation=2), []),
]


@pytest.mark.parametrize(
    ("change", "want"), [(c, w) for _, c, w in SLICE_UPDATES], ids=[n for n, _, _ in SLICE_UPDATES]
)
def test_resource_slice_update_rules(change: Callable[[Doc], None], want: list[str]) -> None:
    old = slice_with(2)
    assert errors("ResourceSlice", _set(old, change), old) == want


def device_class(**spec: Any) -> Doc:
    doc = manifest("DeviceClass")
    doc["spec"] = spec
    return doc


CLASS_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good", manifest("DeviceClass"), []),
    ("empty-spec", device_class(), []),
    (
        "missing-cel",
        device_class(selectors=[{}]),
        ["spec.selectors[0].cel: Required value"],
    ),
    (
        "cel-too-long",
        device_class(selectors=[{"cel": {"expression": "x" * (10 * 1024 + 1)}}]),
        ["spec.selectors[0].cel.expression: Too long: may not be more than 10240 bytes"],
    ),
    (
        "too-many-selectors",
        device_class(selectors=[{"cel": {"expression": "true"}}] * 33),
        ["spec.selectors: Too many: must have at most 32 items"],
    ),
    (
        "missing-opaque",
        device_class(config=[{}]),
        ["spec.config[0].opaque: Required value"],
    ),
    (
        "invalid-opaque",
        device_class(config=[{"opaque": {"driver": BAD, "parameters": {"a": 1}}}]),
        [f'spec.config[0].opaque.driver: Invalid value: "{BAD}": {SUBDOMAIN}'],
    ),
    (
        "missing-parameters",
        device_class(config=[{"opaque": {"driver": "dra.example.com"}}]),
        ["spec.config[0].opaque.parameters: Required value"],
    ),
    (
        "parameters-not-an-object",
        device_class(config=[{"opaque": {"driver": "dra.example.com", "parameters": [1]}}]),
        [
            'spec.config[0].opaque.parameters: Invalid value: "<value omitted>": parameters '
            "must be a valid JSON object"
        ],
    ),
    (
        "parameters-too-large",
        device_class(
            config=[{"opaque": {"driver": "dra.example.com", "parameters": {"x": "y" * 10240}}}]
        ),
        ["spec.config[0].opaque.parameters: Too long: may not be more than 10240 bytes"],
    ),
    (
        "driver-too-long",
        device_class(config=[{"opaque": {"driver": "x" * 64, "parameters": {}}}]),
        ["spec.config[0].opaque.driver: Too long: may not be more than 63 bytes"],
    ),
    (
        "namespace-forbidden",
        _set(manifest("DeviceClass"), lambda d: d["metadata"].update(namespace="default")),
        ["metadata.namespace: Forbidden: not allowed on this type"],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in CLASS_CASES], ids=[n for n, _, _ in CLASS_CASES]
)
def test_device_class_rules(doc: Doc, want: list[str]) -> None:
    assert errors("DeviceClass", doc) == want


def test_device_class_selectors_may_change_on_update() -> None:
    old = manifest("DeviceClass")
    new = _set(old, lambda d: d["spec"].update(selectors=[{"cel": {"expression": "true"}}]))
    assert errors("DeviceClass", new, old) == []


def pod_group(**spec: Any) -> Doc:
    doc = manifest("PodGroup")
    doc["spec"].update(spec)
    return doc


POD_GROUP_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good", manifest("PodGroup"), []),
    (
        "min-member-zero",
        pod_group(minMember=0),
        [
            "spec.minMember: Invalid value: 0: spec.minMember in body should be greater than or equal to 1"
        ],
    ),
    (
        "negative-timeout",
        pod_group(scheduleTimeoutSeconds=-1),
        [
            "spec.scheduleTimeoutSeconds: Invalid value: -1: spec.scheduleTimeoutSeconds in "
            "body should be greater than or equal to 0"
        ],
    ),
    ("zero-timeout", pod_group(scheduleTimeoutSeconds=0), []),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in POD_GROUP_CASES], ids=[n for n, _, _ in POD_GROUP_CASES]
)
def test_pod_group_rules(doc: Doc, want: list[str]) -> None:
    assert errors("PodGroup", doc) == want


def test_pod_group_min_resources_must_be_quantities() -> None:
    obj: Any = codec.decode(manifest("PodGroup")).obj
    obj.spec.min_resources["cpu"] = "lots"
    (err,) = validate_create("PodGroup", obj)
    assert err.path == "spec.minResources[cpu]"
    assert "quantities must match the regular expression" in err.detail


@pytest.mark.parametrize(
    ("raised", "want"),
    [
        (
            "compilation failed: ERROR: <input>:1:1: undeclared reference to 'nope'",
            'spec.selectors[0].cel.expression: Invalid value: "nope": compilation failed: '
            "ERROR: <input>:1:1: undeclared reference to 'nope'",
        ),
    ],
    ids=["compile-error-is-invalid"],
)
def test_cel_compile_errors_become_field_errors(
    monkeypatch: pytest.MonkeyPatch, raised: str, want: str
) -> None:
    """How a CELCompileError from services.api.dra.cel is reported (whatever its message)."""

    def fail(expression: str) -> cel.Selector:
        raise cel.CELCompileError(raised)

    monkeypatch.setattr(cel, "compile_selector", fail)
    assert errors("DeviceClass", device_class(selectors=[{"cel": {"expression": "nope"}}])) == [
        want
    ]


@pytest.mark.parametrize(("cost", "refused"), [(1_000_000, False), (1_000_001, True)])
def test_a_selector_whose_worst_case_cost_exceeds_the_limit_is_forbidden(
    monkeypatch: pytest.MonkeyPatch, cost: int, refused: bool
) -> None:
    """It compiles (a stored one still runs, stopped per device at run time); a new one is
    refused by its worst case, as upstream's validation refuses by the estimated cost."""

    class Costly:
        max_cost = cost

    monkeypatch.setattr(cel, "compile_selector", lambda expression: Costly())
    got = errors("DeviceClass", device_class(selectors=[{"cel": {"expression": "x"}}]))
    want = ["spec.selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit"]
    assert got == (want if refused else [])
