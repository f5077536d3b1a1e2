"""RFC 7386 JSON merge patch: what `patch` (the apiserver's merge-patch verb) and
`kubera apply` (the patch it computes from the last applied manifest) both apply.
"""

from __future__ import annotations

import copy
from typing import Any


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch. Neither argument is changed, and the result shares no
    mutable value with `patch` (values taken from it are deep copies)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
