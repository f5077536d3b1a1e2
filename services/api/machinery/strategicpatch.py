"""Strategic merge patch: applying one to an object, with upstream's semantics.

kubectl's client-side apply, cordon, taint, label, annotate, scale and rollout send
`application/strategic-merge-patch+json`. It is a JSON merge patch that knows the schema:

- maps merge key by key; a null value deletes the key;
- a list whose field has patch strategy "merge" merges: a list of objects by its merge key
  (an item in the patch merges into the live item with the same key, or is appended),
  a list of scalars as a union; every other list is replaced whole;
- directives: `$patch: replace` (in a map: the map becomes the patch; as a list item: the
  list becomes the patch's other items), `$patch: delete` (in a map: it becomes empty; as
  a list item: the live items with that key go), `$retainKeys: [..]` (keys of the live map
  not listed are dropped), `$deleteFromPrimitiveList/<field>: [..]` (these scalars leave
  the list), `$setElementOrder/<field>: [..]` (the order of the merged list).

Order of a merged list (upstream's "preserve order" design): items named by
$setElementOrder (else the patch's items) come in that order; live-only items keep their
relative live order and are interleaved by their live position.

Differences from upstream, on purpose: a value added where the live object had none loses
its directives and nulls (upstream copies it raw, so a `$patch: delete` item in a new list
would become an item); an unknown `$` key is an error rather than a field; the live order
used to place live-only items is the live list before the patch (upstream's Go code reads
it after its own in-place deletions have shifted it, which can place a live-only item
differently when a patch both deletes and adds items under $setElementOrder); an empty
$setElementOrder beside a non-empty patch list keeps the merged order (upstream sorts with
a comparator that is not an order); a scalar both added and deleted by one patch is
deleted (upstream: either, by Go's map order).

Pure functions on JSON values; the schema comes from services/api/machinery/listtypes.py (or a
test table). Errors are `StrategicPatchError`, which services/api/machinery/patching.py turns
into 400/422.
"""

from __future__ import annotations

from typing import Any

from services.api.machinery.fieldpath import copy_json
from services.api.machinery.listtypes import ListStrategy, PatchSchema

DIRECTIVE = "$patch"
REPLACE = "replace"
DELETE = "delete"
MERGE = "merge"
RETAIN_KEYS = "$retainKeys"
DELETE_FROM_PRIMITIVE_LIST = "$deleteFromPrimitiveList/"
SET_ELEMENT_ORDER = "$setElementOrder/"


class StrategicPatchError(ValueError):
    """A patch that does not apply. `unprocessable` marks upstream's 422 cases (content
    that contradicts the schema: lists of lists, keys outside $retainKeys); the others
    are malformed patches (400)."""

    def __init__(self, message: str, *, unprocessable: bool = False) -> None:
        super().__init__(message)
        self.unprocessable = unprocessable


def apply(original: dict[str, Any], patch: dict[str, Any], schema: PatchSchema) -> dict[str, Any]:
    """`original` with the strategic merge `patch` applied under `schema`. Neither argument
    is changed; the result shares no mutable value with them."""
    if not isinstance(patch, dict):
        raise StrategicPatchError("a strategic merge patch must be a JSON object")
    return _merge_map(copy_json(original), copy_json(patch), schema)


def _merge_map(
    original: dict[str, Any], patch: dict[str, Any], schema: PatchSchema
) -> dict[str, Any]:
    if DIRECTIVE in patch:
        kind = patch.pop(DIRECTIVE)
        if kind == REPLACE:
            return patch
        if kind == DELETE:
            return {}
        raise StrategicPatchError(f"unknown patch type: {kind} in map: {patch}")
    _retain_keys(original, patch)
    for key in [k for k in patch if k.startswith(SET_ELEMENT_ORDER)]:
        _set_element_order(original, patch, key, schema)
    # Deletion lists go last: a patch that both adds and deletes one scalar deletes it
    # (upstream's outcome depends on Go's random map order).
    ordered = sorted(patch.items(), key=lambda kv: kv[0].startswith(DELETE_FROM_PRIMITIVE_LIST))
    for key, value in ordered:
        is_delete_list = key.startswith(DELETE_FROM_PRIMITIVE_LIST)
        if is_delete_list:
            key = key[len(DELETE_FROM_PRIMITIVE_LIST) :]
            if not isinstance(value, list):
                raise StrategicPatchError(
                    f"invalid patch format of {DELETE_FROM_PRIMITIVE_LIST}{key}: not a list"
                )
        elif key.startswith("$"):
            raise StrategicPatchError(f"unknown directive {key!r} in a strategic merge patch")
        if value is None:
            original.pop(key, None)
            continue
        strategy, sub = schema.field(key)
        if key not in original:
            if not is_delete_list:
                original[key] = _fresh(value, strategy, sub)
            continue
        live = original[key]
        if isinstance(live, dict) and isinstance(value, dict):
            if strategy is not None and strategy.patch_strategy == REPLACE:
                original[key] = value
            else:
                original[key] = _merge_map(live, value, sub)
        elif isinstance(live, list) and isinstance(value, list):
            if strategy is not None and strategy.merges:
                original[key] = _merge_list(live, value, strategy, sub, is_delete_list)
            else:
                original[key] = value
        else:
            original[key] = value
    return original


def _fresh(value: Any, strategy: ListStrategy | None, sub: PatchSchema) -> Any:
    """A patch value for a key the live object lacks: taken as it is (duplicates and order
    kept, as upstream), less directives and nulls, which would otherwise be stored."""
    if isinstance(value, dict):
        if strategy is not None and strategy.patch_strategy == REPLACE:
            return value
        return _merge_map({}, value, sub)
    if isinstance(value, list) and strategy is not None and strategy.merges:
        return [
            _merge_map({}, x, sub) if isinstance(x, dict) else x
            for x in value
            if not (isinstance(x, dict) and DIRECTIVE in x)
        ]
    return value


def _retain_keys(original: dict[str, Any], patch: dict[str, Any]) -> None:
    if RETAIN_KEYS not in patch:
        return
    keep = patch.pop(RETAIN_KEYS)
    if not isinstance(keep, list) or not all(isinstance(k, str) for k in keep):
        raise StrategicPatchError(
            f"invalid patch format of {RETAIN_KEYS}: must be a list of strings"
        )
    for k in [k for k in original if k not in keep]:
        del original[k]
    for k, v in patch.items():
        if v is not None and not k.startswith("$") and k not in keep:
            raise StrategicPatchError(
                f"the patch has field {k!r}, which is not present in {RETAIN_KEYS} list",
                unprocessable=True,
            )


def _set_element_order(
    original: dict[str, Any], patch: dict[str, Any], key: str, schema: PatchSchema
) -> None:
    order = patch.pop(key)
    if not isinstance(order, list):
        raise StrategicPatchError(f"invalid patch format of {key}: not a list")
    name = key[len(SET_ELEMENT_ORDER) :]
    strategy, sub = schema.field(name)
    merge_key = strategy.merge_key if strategy is not None else ""
    live = original.get(name)
    if live is not None and not isinstance(live, list):
        raise StrategicPatchError(f"{name} is not a list in the object")
    change = patch.pop(name, None)
    if change is not None and not isinstance(change, list):
        raise StrategicPatchError(f"{name} is not a list in the patch")
    _check_order(change or [], order, merge_key)
    if live is None and change is None:
        return
    if change is None:
        merged = live
    elif live is None:
        merged = _fresh(change, strategy, sub)
    elif strategy is not None and strategy.merges:
        merged = _merge_list(live, change, strategy, sub, False)
    else:
        merged = change
    assert merged is not None
    ident = _identity(merge_key)
    named = [ident(o) for o in order]
    in_order = [x for x in merged if ident(x) in named]
    server_only = [x for x in merged if ident(x) not in named]
    original[name] = _normalize(in_order, server_only, named, [ident(x) for x in live or []], ident)


def _check_order(change: list[Any], order: list[Any], merge_key: str) -> None:
    """Every (non-deleting) item of the patch list appears in $setElementOrder, in the same
    relative order (upstream's validatePatchWithSetOrderList; an empty list on either side
    passes)."""
    if not change or not order:
        return
    ident = _identity(merge_key)
    named = [ident(o) for o in order]
    last = -1
    for item in change:
        if isinstance(item, dict) and DIRECTIVE in item:
            continue
        at = named.index(ident(item)) if ident(item) in named else -1
        if at < 0 or at < last:
            raise StrategicPatchError(
                "the order in $setElementOrder list doesn't match the order in the patch list"
            )
        last = at


def _identity(merge_key: str) -> Any:
    if not merge_key:
        return lambda item: item
    return lambda item: item.get(merge_key) if isinstance(item, dict) else None


def _merge_list(
    live: list[Any],
    change: list[Any],
    strategy: ListStrategy,
    sub: PatchSchema,
    is_delete_list: bool,
) -> list[Any]:
    if not live and not change:
        return live
    sample = (live or change)[0]
    if isinstance(sample, list):
        raise StrategicPatchError("lists of lists are not supported", unprocessable=True)
    if not isinstance(sample, dict):
        if is_delete_list:
            return [x for x in live if x not in change]
        merged: list[Any] = []
        for x in live + change:
            if x not in merged:
                merged.append(x)
        in_patch = [x for x in merged if x in change]
        server_only = [x for x in merged if x not in change]
        return _normalize(in_patch, server_only, change, live, lambda x: x)
    key = strategy.merge_key
    if not key:
        raise StrategicPatchError("cannot merge lists without merge key")
    live, change = _special_items(live, change, key)
    for item in change:
        if not isinstance(item, dict):
            raise StrategicPatchError(f"expected a map in a list merged on {key!r}, got {item!r}")
        if key not in item:
            raise StrategicPatchError(f"map: {item} does not contain declared merge key: {key}")
    server_order = [x.get(key) for x in live]
    merged = list(live)
    for item in change:
        at = next((i for i, x in enumerate(merged) if x.get(key) == item[key]), -1)
        if at >= 0:
            merged[at] = _merge_map(merged[at], item, sub)
        else:
            merged.append(_merge_map({}, item, sub))
    named = [x[key] for x in change]
    in_patch = [x for x in merged if x.get(key) in named]
    server_only = [x for x in merged if x.get(key) not in named]
    return _normalize(in_patch, server_only, named, server_order, lambda x: x.get(key))


def _special_items(live: list[Any], change: list[Any], key: str) -> tuple[list[Any], list[Any]]:
    """Apply the `$patch` items of a patch list: (live after deletions, plain patch items);
    with `$patch: replace` the live list is the plain patch items and nothing is left to merge."""
    plain: list[Any] = []
    replace = False
    for item in change:
        if not isinstance(item, dict) or DIRECTIVE not in item:
            plain.append(item)
            continue
        kind = item[DIRECTIVE]
        if kind == DELETE:
            if key not in item:
                raise StrategicPatchError(f"map: {item} does not contain declared merge key: {key}")
            live = [x for x in live if not (isinstance(x, dict) and x.get(key) == item[key])]
        elif kind == REPLACE:
            replace = True
        elif kind == MERGE:
            raise StrategicPatchError("merging lists cannot yet be specified in the patch")
        else:
            raise StrategicPatchError(f"unknown patch type: {kind} in map: {item}")
    if replace:
        return plain, []
    return live, plain


def _normalize(
    in_patch: list[Any],
    server_only: list[Any],
    patch_order: list[Any],
    server_order: list[Any],
    ident: Any,
) -> list[Any]:
    """Patch items sorted by `patch_order`, server-only items by `server_order`, then the
    server-only items inserted before the first patch item that comes later on the server
    (upstream's normalizeElementOrder + mergeSortedSlice)."""

    def at(order: list[Any], item: Any) -> int:
        v = ident(item)
        return order.index(v) if v in order else -1

    right = sorted(in_patch, key=lambda x: at(patch_order, x))
    left = sorted(server_only, key=lambda x: at(server_order, x))
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if j >= len(right):
            out.append(left[i])
            i += 1
        elif i >= len(left):
            out.append(right[j])
            j += 1
        else:
            li, ri = at(server_order, left[i]), at(server_order, right[j])
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out
