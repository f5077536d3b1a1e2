"""apply_patch: the three patch types of the Kubernetes API and the errors upstream's
patch handler answers (400 for a body that does not decode, 422 for a patch that does
not apply, 413 past the operation cap)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from services.api.machinery.codec import encode
from services.api.machinery.errors import BadRequestError, InvalidError, RequestTooLargeError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.patching import (
    APPLY_PATCH_YAML,
    JSON_PATCH,
    MAX_JSON_PATCH_OPERATIONS,
    MERGE_PATCH,
    STRATEGIC_MERGE_PATCH,
    PatchInvalidError,
    apply_patch,
)
from tests.builders import MakeNode, MakePod

POD = BY_KIND["Pod"]
NODE = BY_KIND["Node"]


def _pod() -> dict[str, Any]:
    return encode(
        MakePod()
        .typed()
        .name("p")
        .namespace("default")
        .labels({"app": "a"})
        .finalizers(["f1"])
        .container("c", image="nginx")
        .obj()
    )


def _apply(patch_type: str, patch: Any, obj: dict[str, Any] | None = None) -> dict[str, Any]:
    return apply_patch(
        POD, obj if obj is not None else _pod(), patch_type, json.dumps(patch).encode()
    )


@pytest.mark.parametrize(
    ("ops", "check"),
    [
        pytest.param(
            [{"op": "add", "path": "/metadata/labels/tier", "value": "web"}],
            lambda o: o["metadata"]["labels"] == {"app": "a", "tier": "web"},
            id="add a map key",
        ),
        pytest.param(
            [{"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:2"}],
            lambda o: o["spec"]["containers"][0]["image"] == "nginx:2",
            id="replace a list item's field",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/finalizers/0"}],
            lambda o: o["metadata"]["finalizers"] == [],
            id="remove a list item",
        ),
        pytest.param(
            [
                {"op": "test", "path": "/metadata/labels/app", "value": "a"},
                {"op": "add", "path": "/metadata/labels/app", "value": "b"},
            ],
            lambda o: o["metadata"]["labels"]["app"] == "b",
            id="a passing test op lets the rest apply",
        ),
        pytest.param(
            [{"op": "add", "path": "/metadata/finalizers/-", "value": "f2"}],
            lambda o: o["metadata"]["finalizers"] == ["f1", "f2"],
            id="append with the dash index",
        ),
        pytest.param(
            [{"op": "move", "from": "/metadata/labels/app", "path": "/metadata/labels/x"}],
            lambda o: o["metadata"]["labels"] == {"x": "a"},
            id="move",
        ),
        pytest.param(
            [{"op": "copy", "from": "/metadata/name", "path": "/metadata/labels/name"}],
            lambda o: o["metadata"]["labels"]["name"] == "p",
            id="copy",
        ),
        pytest.param(
            [{"op": "add", "path": "/metadata/annotations~1x", "value": "y"}],
            lambda o: o["metadata"]["annotations/x"] == "y",
            id="an escaped slash names one key",
        ),
    ],
)
def test_json_patch_applies_rfc6902_operations(ops: list[dict[str, Any]], check: Any) -> None:
    assert check(_apply(JSON_PATCH, ops))


@pytest.mark.parametrize(
    ("ops", "error", "message"),
    [
        pytest.param(
            [{"op": "test", "path": "/metadata/labels/app", "value": "zzz"}],
            PatchInvalidError,
            'test operation #0 on path "/metadata/labels/app": test failed',
            id="a failing test op is 422",
        ),
        pytest.param(
            [{"op": "remove", "path": "/metadata/labels/missing"}],
            PatchInvalidError,
            'remove operation #0 on path "/metadata/labels/missing": the object is missing the path',
            id="removing a missing path is 422",
        ),
        pytest.param(
            [{"op": "replace", "path": "/spec/nothere/x", "value": 1}],
            PatchInvalidError,
            "replace operation #0",
            id="replacing under a missing parent is 422",
        ),
        pytest.param(
            [{"op": "add", "path": "/spec/containers/7", "value": {}}],
            PatchInvalidError,
            "add operation #0",
            id="adding past the end of a list is 422",
        ),
        pytest.param(
            [{"op": "frobnicate", "path": "/a"}],
            PatchInvalidError,
            "unexpected op 'frobnicate'",
            id="an unknown op is 422",
        ),
        pytest.param(
            [{"op": "add", "value": 1}],
            PatchInvalidError,
            "must have a 'path' member",
            id="an op without a path is 422",
        ),
        pytest.param(
            {"op": "add", "path": "/a", "value": 1},
            BadRequestError,
            "must be a JSON array",
            id="a patch that is not an array is 400",
        ),
        pytest.param(
            [{"op": "replace", "path": "", "value": [1]}],
            PatchInvalidError,
            "result is not a JSON object",
            id="replacing the whole object by a non-object is 422",
        ),
    ],
)
def test_json_patch_errors_name_the_failing_operation(
    ops: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        _apply(JSON_PATCH, ops)
    assert message in str(err.value)
    assert type(err.value) is error


def test_json_patch_is_all_or_nothing_and_leaves_current_alone() -> None:
    pod = _pod()
    ops = [
        {"op": "add", "path": "/metadata/labels/x", "value": "1"},
        {"op": "test", "path": "/metadata/name", "value": "other"},
    ]
    with pytest.raises(PatchInvalidError):
        _apply(JSON_PATCH, ops, pod)
    assert pod == _pod()


def test_json_patch_over_the_operation_cap_is_too_large() -> None:
    ops = [{"op": "test", "path": "/kind", "value": "Pod"}] * (MAX_JSON_PATCH_OPERATIONS + 1)
    with pytest.raises(RequestTooLargeError, match="maximum operations in a JSON patch is 10000"):
        _apply(JSON_PATCH, ops)


def test_patch_invalid_is_an_invalid_error_with_no_causes() -> None:
    err = PatchInvalidError("json patch: x")
    assert isinstance(err, InvalidError)
    assert (err.reason, err.message, err.errors) == ("Invalid", "json patch: x", [])


@pytest.mark.parametrize(
    ("patch", "labels", "finalizers"),
    [
        pytest.param(
            {"metadata": {"labels": {"b": "2"}}}, {"app": "a", "b": "2"}, ["f1"], id="merge adds"
        ),
        pytest.param({"metadata": {"labels": {"app": None}}}, {}, ["f1"], id="null deletes"),
        pytest.param(
            {"metadata": {"finalizers": ["f2"]}}, {"app": "a"}, ["f2"], id="lists replace"
        ),
    ],
)
def test_merge_patch_is_rfc7386(patch: Any, labels: dict[str, str], finalizers: list[str]) -> None:
    out = _apply(MERGE_PATCH, patch)
    assert out["metadata"].get("labels", {}) == labels
    assert out["metadata"]["finalizers"] == finalizers


def test_strategic_merge_patch_merges_lists_by_their_keys() -> None:
    out = _apply(
        STRATEGIC_MERGE_PATCH,
        {
            "metadata": {"finalizers": ["f2"]},
            "spec": {"containers": [{"name": "d", "image": "busybox"}]},
        },
    )
    # Items new to the list come first unless $setElementOrder says otherwise (upstream).
    assert out["metadata"]["finalizers"] == ["f2", "f1"]
    assert [c["name"] for c in out["spec"]["containers"]] == ["d", "c"]


def test_strategic_merge_patch_cordons_a_node() -> None:
    node = encode(MakeNode().typed().name("n1").obj())
    out = apply_patch(NODE, node, STRATEGIC_MERGE_PATCH, b'{"spec":{"unschedulable":true}}')
    assert out["spec"]["unschedulable"] is True


@pytest.mark.parametrize(
    ("patch_type", "body", "error", "message"),
    [
        pytest.param(
            STRATEGIC_MERGE_PATCH,
            b"[1]",
            BadRequestError,
            "must be a JSON object",
            id="smp not an object",
        ),
        pytest.param(
            STRATEGIC_MERGE_PATCH,
            b'{"spec":{"containers":[{"image":"x"}]}}',
            BadRequestError,
            "does not contain declared merge key: name",
            id="smp item without its merge key",
        ),
        pytest.param(
            STRATEGIC_MERGE_PATCH,
            b'{"spec":{"volumes":[{"name":"v","$retainKeys":["name"],"emptyDir":{}}]}}',
            PatchInvalidError,
            "not present in $retainKeys",
            id="smp key outside retainKeys is 422",
        ),
        pytest.param(
            MERGE_PATCH,
            b"[]",
            BadRequestError,
            "must be a JSON object",
            id="merge patch not an object",
        ),
        pytest.param(
            MERGE_PATCH, b"{not json", BadRequestError, "unknown format", id="body not JSON"
        ),
        pytest.param(
            APPLY_PATCH_YAML, b"{}", BadRequestError, "server-side apply", id="apply is not a patch"
        ),
        pytest.param(
            "text/plain", b"{}", BadRequestError, "not supported", id="unknown patch type"
        ),
    ],
)
def test_bad_patches_are_refused_naming_why(
    patch_type: str, body: bytes, error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as err:
        apply_patch(POD, _pod(), patch_type, body)
    assert message in str(err.value)
    assert type(err.value) is error
