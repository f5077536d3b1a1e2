"""The patch types of the Kubernetes API, applied to an object in its JSON form.

`apply_patch(kind, current, patch_type, body)` is what every patch goes through (the
HTTP API's PATCH, the gRPC Patch's merge patch): JSON patch (RFC 6902, the `jsonpatch`
library), JSON merge patch (RFC 7386, services/api/machinery/patch.py) and strategic merge patch
(services/api/machinery/strategicpatch.py, list merge keys as upstream's). Server-side apply is
not a patch of this kind: it is services/api/machinery/fieldmanager.py.

Errors as upstream's patch handler (k8s.io/apiserver endpoints/handlers/patch.go) answers
them: a body that does not decode, or is not the shape its type needs, is 400 BadRequest;
a patch that decodes but does not apply to this object (a JSON patch op on a missing path,
a failed `test` op, a strategic patch against the schema) is 422 (`PatchInvalidError`,
reason Invalid, no field causes); more than MAX_JSON_PATCH_OPERATIONS operations is 413.
Every message names the operation or directive that failed. A patch nested past
services/api/machinery/limits.py's MAX_DEPTH is refused (400) before anything recursive reads it.
"""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import jsonpointer

from services.api.machinery import strategicpatch
from services.api.machinery.errors import (
    ApiError,
    BadRequestError,
    InvalidError,
    RequestTooLargeError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.limits import DepthError, loads_json
from services.api.machinery.listtypes import schema_for
from services.api.machinery.patch import merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML)

#: Upstream's cap on the operations of one JSON patch (maxJSONPatchOperations).
MAX_JSON_PATCH_OPERATIONS = 10000

_JSON_PATCH_OPS = ("add", "remove", "replace", "move", "copy", "test")


class PatchInvalidError(InvalidError):
    """A patch that decodes but does not apply to the object: upstream's 422 with reason
    Invalid and the patch library's message (no field causes)."""

    def __init__(self, message: str) -> None:
        ApiError.__init__(self, message)
        self.kind = ""
        self.name = ""
        self.errors = []


def apply_patch(
    kind: Kind, current: dict[str, Any], patch_type: str, body: bytes
) -> dict[str, Any]:
    """`current` (the object as Kubernetes JSON) with the patch applied; BadRequestError
    (400) for a body that does not parse, PatchInvalidError (422) for a patch that does not
    apply, naming why. Neither argument is changed."""
    try:
        doc = loads_json(body, "the patch")
    except DepthError as e:
        raise BadRequestError(str(e)) from None
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequestError(f"the body of the request was in an unknown format: {e}") from None
    if patch_type == MERGE_PATCH:
        if not isinstance(doc, dict):
            raise BadRequestError("merge patch: the patch must be a JSON object")
        return merge_patch(current, doc)  # type: ignore[no-any-return]
    if patch_type == JSON_PATCH:
        return apply_json_patch(current, doc)
    if patch_type == STRATEGIC_MERGE_PATCH:
        return apply_strategic_merge_patch(kind, current, doc)
    if patch_type in (APPLY_PATCH_YAML, APPLY_PATCH_CBOR):
        raise BadRequestError(
            f"patch type {patch_type!r} is server-side apply, not a patch: see fieldmanager.apply"
        )
    raise BadRequestError(f"patch type {patch_type!r} is not supported")


def apply_strategic_merge_patch(kind: Kind, current: dict[str, Any], doc: Any) -> dict[str, Any]:
    """A decoded strategic merge patch applied under the kind's list types."""
    if not isinstance(doc, dict):
        raise BadRequestError("strategic merge patch: the patch must be a JSON object")
    try:
        return strategicpatch.apply(current, doc, schema_for(kind.message.DESCRIPTOR))
    except strategicpatch.StrategicPatchError as e:
        if e.unprocessable:
            raise PatchInvalidError(f"strategic merge patch: {e}") from None
        raise BadRequestError(f"strategic merge patch: {e}") from None


def apply_json_patch(current: dict[str, Any], ops: Any) -> dict[str, Any]:
    """RFC 6902 operations applied in order, all or nothing."""
    if not isinstance(ops, list):
        raise BadRequestError(
            "json patch: the patch must be a JSON array of operations, got "
            + type(ops).__name__.replace("dict", "an object")
        )
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise RequestTooLargeError(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, "
            f"got {len(ops)}"
        )
    doc: Any = copy.deepcopy(current)
    for i, op in enumerate(ops):
        if not isinstance(op, dict):
            raise BadRequestError(f"json patch: operation #{i} is not an object")
        name = op.get("op")
        if name not in _JSON_PATCH_OPS:
            raise PatchInvalidError(f"json patch: operation #{i}: unexpected op {name!r}")
        where = f'json patch: {name} operation #{i} on path "{op.get("path", "")}"'
        try:
            doc = jsonpatch.JsonPatch([op]).apply(doc, in_place=True)
        except jsonpatch.JsonPatchTestFailed as e:
            raise PatchInvalidError(f"{where}: test failed: {e}") from None
        except jsonpatch.InvalidJsonPatch as e:
            raise PatchInvalidError(f"{where}: {e}") from None
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as e:
            raise PatchInvalidError(f"{where}: {_pointer_problem(e)}") from None
    if not isinstance(doc, dict):
        raise PatchInvalidError("json patch: the result is not a JSON object")
    return doc  # type: ignore[no-any-return]


def _pointer_problem(e: Exception) -> str:
    if isinstance(e, jsonpatch.JsonPatchPathNotFound) or (
        isinstance(e, jsonpointer.JsonPointerException) and "not found" in str(e)
    ):
        return f"the object is missing the path: {e}"
    return str(e)
