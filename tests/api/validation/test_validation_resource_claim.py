"""Validation of ResourceClaim (spec, update, status), ResourceClaimTemplate and a pod's
resource claims: one row per upstream rule, ported from
pkg/apis/resource/validation/validation_resourceclaim_test.go
(TestValidateClaim, TestValidateClaimUpdate, TestValidateClaimStatusUpdate),
validation_resourceclaimtemplate_test.go and pkg/apis/core/validation's pod claim cases.
Each failing row lists every error, as kube-apiserver prints them."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from services.api.machinery import codec
from services.api.validation import validate_create, validate_update
from services.api.validation.resource_claims import ONE_CONSTRAINT
from tests.api.resource_manifests import manifest
from tests.api.validation.test_validation_resource import BAD, LABEL, SUBDOMAIN

Doc = dict[str, Any]
ONE_TYPE = "exactly one of `exactly` or `firstAvailable` is required"
REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)


def errors(kind: str, doc: Doc, old: Doc | None = None) -> list[str]:
    obj = codec.decode(doc, validate="strict").obj
    if old is None:
        return [str(e) for e in validate_create(kind, obj)]
    return [str(e) for e in validate_update(kind, obj, codec.decode(old, validate="strict").obj)]


def claim(*requests: Doc, **devices: Any) -> Doc:
    doc = manifest("ResourceClaim")
    doc["spec"] = {"devices": {"requests": list(requests), **devices}}
    return doc


def exact(name: str = "req-0", **exactly: Any) -> Doc:
    return {"name": name, "exactly": {"deviceClassName": "class", **exactly}}


def first(name: str = "req-0", *subs: Doc) -> Doc:
    return {"name": name, "firstAvailable": list(subs)}


def sub(name: str = "subreq-0", **fields: Any) -> Doc:
    return {"name": name, "deviceClassName": "class", **fields}


OPAQUE = {"driver": "dra.example.com", "parameters": {"kind": "foo"}}

CLAIM_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good-claim", claim(exact()), []),
    ("the-manifest", manifest("ResourceClaim"), []),
    (
        "missing-namespace",
        {**claim(exact()), "metadata": {"name": "c"}},
        ["metadata.namespace: Required value"],
    ),
    (
        "bad-name",
        {**claim(exact()), "metadata": {"name": BAD, "namespace": "default"}},
        [f'metadata.name: Invalid value: "{BAD}": {SUBDOMAIN}'],
    ),
    ("no-requests", claim(), []),
    (
        "bad-request-name",
        claim(exact(BAD)),
        [f'spec.devices.requests[0].name: Invalid value: "{BAD}": {LABEL}'],
    ),
    (
        "duplicate-request-name",
        claim(exact(), exact()),
        ['spec.devices.requests[1].name: Duplicate value: "req-0"'],
    ),
    (
        "too-many-requests",
        claim(*[exact(f"req-{i}") for i in range(33)]),
        ["spec.devices.requests: Too many: must have at most 32 items"],
    ),
    (
        "neither-exactly-nor-first-available",
        claim({"name": "req-0"}),
        [f"spec.devices.requests[0]: Required value: {ONE_TYPE}"],
    ),
    (
        "both-exactly-and-first-available",
        claim({**exact(), "firstAvailable": [sub()]}),
        [f"spec.devices.requests[0]: Invalid value: null: {ONE_TYPE}, but multiple fields are set"],
    ),
    (
        "missing-device-class-name",
        claim({"name": "req-0", "exactly": {"count": 1}}),
        ["spec.devices.requests[0].exactly.deviceClassName: Required value"],
    ),
    (
        "bad-device-class-name",
        claim(exact(deviceClassName=BAD)),
        [f'spec.devices.requests[0].exactly.deviceClassName: Invalid value: "{BAD}": {SUBDOMAIN}'],
    ),
    (
        "bad-allocation-mode",
        claim(exact(allocationMode="Some")),
        [
            'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": '
            'supported values: "All", "ExactCount"'
        ],
    ),
    (
        "count-with-all",
        claim(exact(allocationMode="All", count=2)),
        [
            "spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified "
            "when allocationMode is 'All'"
        ],
    ),
    ("all-without-count", claim(exact(allocationMode="All")), []),
    (
        "negative-count",
        claim(exact(allocationMode="ExactCount", count=-1)),
        ["spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"],
    ),
    ("count-defaults-to-one", claim(exact(allocationMode="ExactCount")), []),
    (
        "missing-cel-in-selector",
        claim(exact(selectors=[{}])),
        ["spec.devices.requests[0].exactly.selectors[0].cel: Required value"],
    ),
    ("good-first-available", claim(first("req-0", sub("a"), sub("b"))), []),
    (
        "bad-subrequests",
        claim(
            first(
                "req-0",
                sub(BAD),
                sub("b", deviceClassName=""),
                sub("c", allocationMode="All", count=1),
                sub("c"),
            )
        ),
        [
            f'spec.devices.requests[0].firstAvailable[0].name: Invalid value: "{BAD}": {LABEL}',
            "spec.devices.requests[0].firstAvailable[1].deviceClassName: Required value",
            "spec.devices.requests[0].firstAvailable[2].count: Invalid value: 1: must not be "
            "specified when allocationMode is 'All'",
            'spec.devices.requests[0].firstAvailable[3].name: Duplicate value: "c"',
        ],
    ),
    (
        "too-many-subrequests",
        claim(first("req-0", *[sub(f"s{i}") for i in range(9)])),
        ["spec.devices.requests[0].firstAvailable: Too many: must have at most 8 items"],
    ),
    (
        "good-constraints",
        claim(
            exact(),
            first("req-1", sub("a")),
            constraints=[
                {"requests": ["req-0", "req-1/a"], "matchAttribute": "dra.example.com/numa"}
            ],
        ),
        [],
    ),
    (
        "bad-constraints",
        claim(
            exact(),
            first("req-1", sub("a")),
            constraints=[
                {
                    "requests": ["no-such", "req-0", "req-0", "req-1/b", "a/b/c", BAD],
                    "matchAttribute": "numa",
                },
                {"requests": ["req-0"]},
            ],
        ),
        [
            f'spec.devices.constraints[0].requests[0]: Invalid value: "no-such": {REF}',
            f'spec.devices.constraints[0].requests[3]: Invalid value: "req-1/b": {REF}',
            f'spec.devices.constraints[0].requests[4]: Invalid value: "a/b/c": {REF}',
            f'spec.devices.constraints[0].requests[5]: Invalid value: "{BAD}": {LABEL}',
            f'spec.devices.constraints[0].requests[5]: Invalid value: "{BAD}": {REF}',
            'spec.devices.constraints[0].requests[2]: Duplicate value: "req-0"',
            'spec.devices.constraints[0].matchAttribute: Invalid value: "numa": must include a '
            "domain",
            f"spec.devices.constraints[1]: Required value: {ONE_CONSTRAINT}",
        ],
    ),
    (
        "good-config",
        claim(exact(), config=[{"requests": ["req-0"], "opaque": OPAQUE}, {"opaque": OPAQUE}]),
        [],
    ),
    (
        "bad-config",
        claim(
            exact(),
            config=[
                {"requests": ["other"], "opaque": OPAQUE},
                {"requests": ["req-0"]},
                {"opaque": {"driver": "dra.example.com"}},
            ],
        ),
        [
            f'spec.devices.config[0].requests[0]: Invalid value: "other": {REF}',
            "spec.devices.config[1].opaque: Required value",
            "spec.devices.config[2].opaque.parameters: Required value",
        ],
    ),
]


FOO_PARAMS = {
    "driver": "dra.example.com",
    "parameters": {"kind": "foo", "apiVersion": "dra.example.com/v1"},
}
C_IDENT = (
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex "
    "used for validation is '[A-Za-z_][A-Za-z0-9_]*')"
)
FIRST_AVAILABLE = first(
    "foo",
    sub("foo", deviceClassName="foo", allocationMode="ExactCount", count=1),
    sub("bar", deviceClassName="foo", allocationMode="ExactCount", count=1),
)


def _upstream_valid(**devices: Any) -> Doc:
    """upstream's validClaimSpec: one request "foo" of class "foo", ExactCount 1."""
    return claim(
        exact("foo", deviceClassName="foo", allocationMode="ExactCount", count=1), **devices
    )


#: Rows of upstream's TestValidateClaim, under its names.
UPSTREAM_CLAIM_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good-claim", _upstream_valid(), []),
    (
        "valid-request",
        claim(
            *[exact(f"foo{i}" if i else "foo") for i in range(32)],
            constraints=[{"matchAttribute": "foo/bar"}] * 32,
            config=[{"opaque": FOO_PARAMS}] * 32,
        ),
        [],
    ),
    (
        "invalid-spec",
        _upstream_valid(
            constraints=[
                {"requests": ["foo", BAD], "matchAttribute": "missing-domain"},
                {"matchAttribute": ""},
                {},
            ],
            config=[{"requests": ["foo", BAD], "opaque": FOO_PARAMS}],
        ),
        [
            f'spec.devices.constraints[0].requests[1]: Invalid value: "{BAD}": {LABEL}',
            f'spec.devices.constraints[0].requests[1]: Invalid value: "{BAD}": {REF}',
            f'spec.devices.constraints[0].matchAttribute: Invalid value: "missing-domain": {C_IDENT}',
            'spec.devices.constraints[0].matchAttribute: Invalid value: "missing-domain": must '
            "include a domain",
            "spec.devices.constraints[1].matchAttribute: Required value: name required",
            f"spec.devices.constraints[2]: Required value: {ONE_CONSTRAINT}",
            f'spec.devices.config[0].requests[1]: Invalid value: "{BAD}": {LABEL}',
            f'spec.devices.config[0].requests[1]: Invalid value: "{BAD}": {REF}',
        ],
    ),
    (
        "allocation-mode",
        claim(
            exact("foo", allocationMode="ExactCount", count=1),
            exact("foo2", allocationMode="All"),
            exact("foo3", allocationMode="ExactCount", count=-1),
            exact("foo4", allocationMode="other", count=1),
            exact("foo5", allocationMode="All", count=2),
            exact("foo", allocationMode="ExactCount", count=1),
        ),
        [
            "spec.devices.requests[2].exactly.count: Invalid value: -1: must be greater than zero",
            'spec.devices.requests[3].exactly.allocationMode: Unsupported value: "other": '
            'supported values: "All", "ExactCount"',
            "spec.devices.requests[4].exactly.count: Invalid value: 2: must not be specified "
            "when allocationMode is 'All'",
            'spec.devices.requests[5].name: Duplicate value: "foo"',
        ],
    ),
    (
        # Adapted: kubera holds parameters as parsed JSON, so unparseable bytes cannot reach
        # validation, and the size is that of the compact encoding.
        "configuration",
        _upstream_valid(
            config=[
                {"opaque": {"driver": "dra.example.com"}},
                {"opaque": {"driver": "dra.example.com", "parameters": "hello-world"}},
                {"opaque": {"driver": "dra.example.com", "parameters": None}},
                {
                    "opaque": {
                        "driver": "dra.example.com",
                        "parameters": {"str": "x" * (10240 - 10)},
                    }
                },
                {"opaque": {"driver": "dra.example.com", "parameters": {"str": "x" * (10240 - 9)}}},
            ]
        ),
        [
            "spec.devices.config[0].opaque.parameters: Required value",
            'spec.devices.config[1].opaque.parameters: Invalid value: "<value omitted>": '
            "parameters must be a valid JSON object",
            "spec.devices.config[2].opaque.parameters: Required value",
            "spec.devices.config[4].opaque.parameters: Too long: may not be more than 10240 bytes",
        ],
    ),
    (
        "CEL-length",
        claim(
            exact("foo"),
            exact(
                "foo-2",
                selectors=[
                    {"cel": {"expression": 'device.driver == "' + "x" * (10 * 1024 - 18) + '"'}}
                ],
            ),
        ),
        [
            "spec.devices.requests[1].exactly.selectors[0].cel.expression: Too long: may not be "
            "more than 10240 bytes"
        ],
    ),
    ("prioritized-list-valid", claim(FIRST_AVAILABLE), []),
    (
        "prioritized-list-invalid-nested-request",
        claim(first("foo", {"name": BAD, "allocationMode": "Other"}, sub("bar"))),
        [
            f'spec.devices.requests[0].firstAvailable[0].name: Invalid value: "{BAD}": {LABEL}',
            "spec.devices.requests[0].firstAvailable[0].deviceClassName: Required value",
            "spec.devices.requests[0].firstAvailable[0].allocationMode: Unsupported value: "
            '"Other": supported values: "All", "ExactCount"',
        ],
    ),
    (
        "prioritized-list-nested-requests-same-name",
        claim(first("foo", sub("foo"), sub("foo"))),
        ['spec.devices.requests[0].firstAvailable[1].name: Duplicate value: "foo"'],
    ),
    (
        "prioritized-list-config-requests-with-subrequest-reference",
        claim(FIRST_AVAILABLE, config=[{"requests": ["foo/bar"], "opaque": FOO_PARAMS}]),
        [],
    ),
    (
        "prioritized-list-config-requests-with-parent-request-reference",
        claim(FIRST_AVAILABLE, config=[{"requests": ["foo"], "opaque": FOO_PARAMS}]),
        [],
    ),
    (
        "prioritized-list-config-requests-with-invalid-subrequest-reference",
        claim(FIRST_AVAILABLE, config=[{"requests": ["foo/baz"], "opaque": FOO_PARAMS}]),
        [f'spec.devices.config[0].requests[0]: Invalid value: "foo/baz": {REF}'],
    ),
    (
        "prioritized-list-constraints-requests-with-subrequest-reference",
        claim(
            FIRST_AVAILABLE,
            constraints=[
                {"requests": ["foo/bar"], "matchAttribute": "dra.example.com/driverVersion"}
            ],
        ),
        [],
    ),
    (
        "prioritized-list-constraints-requests-with-invalid-subrequest-reference",
        claim(
            FIRST_AVAILABLE,
            constraints=[
                {"requests": ["foo/baz"], "matchAttribute": "dra.example.com/driverVersion"}
            ],
        ),
        [f'spec.devices.constraints[0].requests[0]: Invalid value: "foo/baz": {REF}'],
    ),
]
CLAIM_CASES += [(f"upstream-{n}", d, w) for n, d, w in UPSTREAM_CLAIM_CASES]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in CLAIM_CASES], ids=[n for n, _, _ in CLAIM_CASES]
)
def test_resource_claim_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceClaim", doc) == want


def _set(doc: Doc, fn: Callable[[Doc], None]) -> Doc:
    doc = copy.deepcopy(doc)
    fn(doc)
    return doc


def test_claim_spec_is_immutable() -> None:
    old = claim(exact())
    new = _set(old, lambda d: d["spec"]["devices"]["requests"][0]["exactly"].update(count=2))
    (err,) = errors("ResourceClaim", new, old)
    assert err.startswith("spec: Invalid value: {")
    assert err.endswith(": field is immutable")
    assert errors("ResourceClaim", copy.deepcopy(old), old) == []


ALLOCATION: Doc = {
    "devices": {
        "results": [
            {"request": "req-0", "driver": "dra.example.com", "pool": "worker", "device": "dev-0"}
        ]
    },
    "nodeSelector": {
        "nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["worker"]}]}
        ]
    },
}


def consumer(uid: str = "uid-1", name: str = "pod-1") -> Doc:
    return {"resource": "pods", "name": name, "uid": uid}


def with_status(status: Doc, *, deleting: bool = False) -> Doc:
    doc = claim(exact(), first("req-1", sub("a")))
    doc["status"] = status
    if deleting:
        doc["metadata"]["deletionTimestamp"] = "2030-01-01T00:00:00Z"
    return doc


STATUS_CASES: list[tuple[str, Doc, Doc, list[str]]] = [
    ("valid-no-op-update", {}, {}, []),
    ("add-allocation", {}, {"allocation": ALLOCATION}, []),
    (
        "add-allocation-of-a-subrequest",
        {},
        {
            "allocation": {
                "devices": {
                    "results": [
                        {
                            "request": "req-1/a",
                            "driver": "dra.example.com",
                            "pool": "worker",
                            "device": "dev-0",
                        }
                    ]
                }
            }
        },
        [],
    ),
    (
        "invalid-allocation-results",
        {},
        {
            "allocation": {
                "devices": {
                    "results": [
                        {"request": "other", "driver": BAD, "pool": "", "device": BAD},
                    ],
                    "config": [{"source": "Elsewhere", "opaque": OPAQUE}, {"opaque": OPAQUE}],
                }
            }
        },
        [
            f'status.allocation.devices.results[0].request: Invalid value: "other": {REF}',
            f'status.allocation.devices.results[0].driver: Invalid value: "{BAD}": {SUBDOMAIN}',
            "status.allocation.devices.results[0].pool: Required value",
            f'status.allocation.devices.results[0].device: Invalid value: "{BAD}": {LABEL}',
            'status.allocation.devices.config[0].source: Unsupported value: "Elsewhere": '
            'supported values: "FromClaim", "FromClass"',
            "status.allocation.devices.config[1].source: Required value",
        ],
    ),
    (
        "invalid-allocation-node-selector",
        {},
        {"allocation": {**ALLOCATION, "nodeSelector": {}}},
        [
            "status.allocation.nodeSelector.nodeSelectorTerms: Required value: must have at "
            "least one node selector term"
        ],
    ),
    (
        "add-reservation",
        {"allocation": ALLOCATION},
        {"allocation": ALLOCATION, "reservedFor": [consumer()]},
        [],
    ),
    (
        "add-reservation-without-allocation",
        {},
        {"reservedFor": [consumer()]},
        ["status.reservedFor: Forbidden: may not be specified when `allocated` is not set"],
    ),
    (
        "invalid-reserved-for",
        {"allocation": ALLOCATION},
        {
            "allocation": ALLOCATION,
            "reservedFor": [{}, consumer("u"), consumer("u", "other")],
        },
        [
            "status.reservedFor[0].resource: Required value",
            "status.reservedFor[0].name: Required value",
            "status.reservedFor[0].uid: Required value",
            'status.reservedFor[2].uid: Duplicate value: "u"',
        ],
    ),
    (
        "reserved-for-at-most-256",
        {"allocation": ALLOCATION},
        {"allocation": ALLOCATION, "reservedFor": [consumer(f"u{i}") for i in range(257)]},
        ["status.reservedFor: Too many: must have at most 256 items"],
    ),
    (
        "reserved-for-256",
        {"allocation": ALLOCATION},
        {"allocation": ALLOCATION, "reservedFor": [consumer(f"u{i}") for i in range(256)]},
        [],
    ),
    ("remove-allocation", {"allocation": ALLOCATION}, {}, []),
    (
        "change-allocation",
        {"allocation": ALLOCATION},
        {
            "allocation": {
                **ALLOCATION,
                "devices": {
                    "results": [
                        {
                            "request": "req-0",
                            "driver": "dra.example.com",
                            "pool": "worker",
                            "device": "dev-1",
                        }
                    ]
                },
            }
        },
        ["status.allocation: field is immutable"],
    ),
]


BIG_PARAMS = {"driver": "dra.example.com", "parameters": {"str": "x" * 10240}}
STATUS_CASES += [
    (
        # upstream's valid-configuration-update: a stored allocation is not validated again.
        "upstream-valid-configuration-update",
        {
            "allocation": {
                **ALLOCATION,
                "devices": {
                    **ALLOCATION["devices"],
                    "config": [{"source": "FromClaim", "opaque": BIG_PARAMS}],
                },
            }
        },
        {
            "allocation": {
                **ALLOCATION,
                "devices": {
                    **ALLOCATION["devices"],
                    "config": [{"source": "FromClaim", "opaque": BIG_PARAMS}],
                },
            }
        },
        [],
    ),
    (
        "upstream-configuration",
        {},
        {
            "allocation": {
                **ALLOCATION,
                "devices": {
                    **ALLOCATION["devices"],
                    "config": [
                        {"source": "FromClaim", "opaque": OPAQUE},
                        {"opaque": OPAQUE},
                        {"source": "no-such-source", "opaque": OPAQUE},
                        {"source": "FromClaim"},
                        {"source": "FromClaim", "opaque": {}},
                        {"source": "FromClaim", "opaque": BIG_PARAMS},
                    ],
                },
            }
        },
        [
            "status.allocation.devices.config[1].source: Required value",
            'status.allocation.devices.config[2].source: Unsupported value: "no-such-source": '
            'supported values: "FromClaim", "FromClass"',
            "status.allocation.devices.config[3].opaque: Required value",
            "status.allocation.devices.config[4].opaque.driver: Required value",
            f'status.allocation.devices.config[4].opaque.driver: Invalid value: "": {SUBDOMAIN}',
            "status.allocation.devices.config[4].opaque.parameters: Required value",
            "status.allocation.devices.config[5].opaque.parameters: Too long: may not be more "
            "than 10240 bytes",
        ],
    ),
    (
        "upstream-invalid-reserved-deleted",
        {"allocation": ALLOCATION},
        {"allocation": ALLOCATION, "reservedFor": [consumer("1", "foo")]},
        [],  # not deleted: adding is fine (the deleted case is its own test below)
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "want"),
    [(o, n, w) for _, o, n, w in STATUS_CASES],
    ids=[c[0] for c in STATUS_CASES],
)
def test_resource_claim_status_rules(old: Doc, new: Doc, want: list[str]) -> None:
    got = errors("ResourceClaim", with_status(new), with_status(old))
    if want == ["status.allocation: field is immutable"]:
        assert [g.split(": ")[0] for g in got] == ["status.allocation"]
        assert got[0].endswith("field is immutable")
    else:
        assert got == want


def test_reservations_may_only_shrink_while_the_claim_is_deleted() -> None:
    old = with_status({"allocation": ALLOCATION, "reservedFor": [consumer("a")]}, deleting=True)
    removed = with_status({"allocation": ALLOCATION}, deleting=True)
    added = with_status(
        {"allocation": ALLOCATION, "reservedFor": [consumer("a"), consumer("b")]}, deleting=True
    )
    assert errors("ResourceClaim", removed, old) == []
    assert errors("ResourceClaim", added, old) == [
        "status.reservedFor: Forbidden: new entries may not be added while "
        "`deallocationRequested` or `deletionTimestamp` are set"
    ]


def template(**spec: Any) -> Doc:
    doc = manifest("ResourceClaimTemplate")
    doc["spec"].update(spec)
    return doc


TEMPLATE_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good", manifest("ResourceClaimTemplate"), []),
    (
        "bad-labels",
        template(metadata={"labels": {"a": "spaces not allowed"}}),
        [
            'spec.metadata.labels: Invalid value: "spaces not allowed": a valid label must be '
            "an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or "
            "'12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?"
            "[A-Za-z0-9])?')"
        ],
    ),
    (
        "name-in-template-metadata",
        template(metadata={"name": "x", "finalizers": ["a/b"]}),
        [
            "spec.metadata.name: Forbidden: cannot be set for a template",
            "spec.metadata.finalizers: Forbidden: cannot be set for a template",
        ],
    ),
    (
        "bad-claim-spec",
        template(spec={"devices": {"requests": [{"name": "r"}]}}),
        [f"spec.spec.devices.requests[0]: Required value: {ONE_TYPE}"],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in TEMPLATE_CASES], ids=[n for n, _, _ in TEMPLATE_CASES]
)
def test_resource_claim_template_rules(doc: Doc, want: list[str]) -> None:
    assert errors("ResourceClaimTemplate", doc) == want


def test_template_spec_is_immutable() -> None:
    old = manifest("ResourceClaimTemplate")
    new = _set(old, lambda d: d["spec"]["metadata"].update(labels={"team": "other"}))
    (err,) = errors("ResourceClaimTemplate", new, old)
    assert err.startswith("spec: Invalid value: {") and err.endswith("field is immutable")


# ----------------------------------------------------------------------------- pods


def pod(claims: list[Doc], container_claims: list[Doc] | None = None, **status: Any) -> Doc:
    c: Doc = {"name": "c", "image": "i"}
    if container_claims is not None:
        c["resources"] = {"claims": container_claims}
    doc: Doc = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [c], "resourceClaims": claims},
    }
    if status:
        doc["status"] = status
    return doc


GPU = {"name": "gpu", "resourceClaimTemplateName": "one-gpu"}
NIC = {"name": "nic", "resourceClaimName": "shared-nic"}

POD_CASES: list[tuple[str, Doc, list[str]]] = [
    ("good", pod([GPU, NIC], [{"name": "gpu"}, {"name": "nic", "request": "fast"}]), []),
    (
        "claim-without-source",
        pod([{"name": "gpu"}]),
        [
            'spec.resourceClaims[0]: Invalid value: {"name":"gpu"}: must specify one of: '
            "`resourceClaimName`, `resourceClaimTemplateName`"
        ],
    ),
    (
        "claim-with-both-sources",
        pod([{**GPU, "resourceClaimName": "x"}]),
        [
            "spec.resourceClaims[0]: Invalid value: "
            '{"name":"gpu","resourceClaimName":"x","resourceClaimTemplateName":"one-gpu"}: '
            "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified"
        ],
    ),
    (
        "bad-claim-names",
        pod(
            [
                {"name": BAD, "resourceClaimName": BAD},
                {**GPU, "name": ""},
                GPU,
                GPU,
            ]
        ),
        [
            f'spec.resourceClaims[0].name: Invalid value: "{BAD}": {LABEL}',
            f'spec.resourceClaims[0].resourceClaimName: Invalid value: "{BAD}": {SUBDOMAIN}',
            "spec.resourceClaims[1].name: Required value",
            'spec.resourceClaims[3].name: Duplicate value: "gpu"',
        ],
    ),
    (
        "container-claim-not-in-pod",
        pod([GPU], [{"name": "nic"}]),
        [
            'spec.containers[0].resources.claims[0]: Not found: "nic": must be one of the '
            "names in pod.spec.resourceClaims: gpu"
        ],
    ),
    (
        "container-claim-with-no-pod-claims",
        pod([], [{"name": "gpu"}]),
        [
            'spec.containers[0].resources.claims[0]: Not found: "gpu": must be one of the '
            "names in pod.spec.resourceClaims which is empty"
        ],
    ),
    (
        "container-claim-twice",
        pod([GPU], [{"name": "gpu"}, {"name": "gpu"}, {"name": ""}]),
        [
            'spec.containers[0].resources.claims[1]: Duplicate value: "gpu"',
            "spec.containers[0].resources.claims[2]: Required value",
        ],
    ),
    (
        "same-claim-different-requests",
        pod([GPU], [{"name": "gpu", "request": "a"}, {"name": "gpu", "request": "b"}]),
        [],
    ),
    (
        "status-names-a-pod-claim",
        pod([GPU], resourceClaimStatuses=[{"name": "gpu", "resourceClaimName": "p-gpu-x1"}]),
        [],
    ),
    (
        "status-names-unknown-claim",
        pod(
            [GPU],
            resourceClaimStatuses=[
                {"name": "nic"},
                {"name": "gpu", "resourceClaimName": BAD},
                {"name": "gpu"},
            ],
        ),
        [
            'status.resourceClaimStatuses[0].name: Invalid value: "nic": must match the name '
            "of an entry in `spec.resourceClaims`",
            f'status.resourceClaimStatuses[1].name: Invalid value: "{BAD}": {SUBDOMAIN}',
            'status.resourceClaimStatuses[2].name: Duplicate value: "gpu"',
        ],
    ),
]


@pytest.mark.parametrize(
    ("doc", "want"), [(d, w) for _, d, w in POD_CASES], ids=[n for n, _, _ in POD_CASES]
)
def test_pod_resource_claim_rules(doc: Doc, want: list[str]) -> None:
    assert errors("Pod", doc) == want


def test_pod_resource_claims_are_immutable() -> None:
    old = pod([GPU])
    new = pod([GPU, NIC])
    (err,) = errors("Pod", new, old)
    assert err.startswith("spec: Forbidden: pod updates may not change fields")
    assert err.endswith("changed: spec.resourceClaims")
