"""The patch types of the Kubernetes API, applied to an object in its JSON form.

`apply_patch(kind, current, patch_type, body)` is what every patch goes through (the
HTTP API's PATCH, the gRPC Patch's merge patch): JSON patch (RFC 6902, the `jsonpatch`
library), JSON merge patch (RFC 7386, services/api/patch.py) and strategic merge patch
(services/api/strategicpatch.py, list merge keys as upstream's). Server-side apply is
not a patch of this kind: it is services/api/fieldmanager.py.
"""

from __future__ import annotations

import json
from typing import Any

from services.api.errors import BadRequestError
from services.api.kinds import Kind
from services.api.patch import merge_patch

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH_YAML = "application/apply-patch+yaml"
APPLY_PATCH_CBOR = "application/apply-patch+cbor"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_MERGE_PATCH, APPLY_PATCH_YAML)


def apply_patch(
    kind: Kind, current: dict[str, Any], patch_type: str, body: bytes
) -> dict[str, Any]:
    """`current` (the object as Kubernetes JSON) with the patch applied; BadRequestError
    (400) for a body that does not parse or a patch that does not apply, naming why.
    Neither argument is changed."""
    try:
        doc = json.loads(body)
    except (ValueError, UnicodeDecodeError) as e:
        raise BadRequestError(f"the body of the request was in an unknown format: {e}") from None
    if patch_type == MERGE_PATCH:
        if not isinstance(doc, dict):
            raise BadRequestError("merge patch: the patch must be a JSON object")
        return merge_patch(current, doc)  # type: ignore[no-any-return]
    raise BadRequestError(f"patch type {patch_type!r} is not supported here yet")
