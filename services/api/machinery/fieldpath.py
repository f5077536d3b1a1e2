"""Field sets: the paths of a Kubernetes JSON object, as server-side apply names them.

A path is a tuple of path elements spelled as in FieldsV1 (structured-merge-diff's
fieldpath): "f:<field>", "k:<compact JSON of the key fields>" for an item of a list of
type map, "v:<JSON value>" for an item of a set. Atomic lists and maps are single leaves.
`flatten` walks an object under a schema (services/api/machinery/listtypes.py); `compare` gives
what an update added, changed and removed; `to_fields_v1`/`from_fields_v1` convert to and
from upstream's managedFields encoding; `path_string` prints a path as conflicts show it.
services/api/machinery/fieldmanager.py builds ownership on these.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from services.api.machinery.listtypes import (
    ATOMIC,
    MAP,
    SET,
    ListStrategy,
    MessageSchema,
    PatchSchema,
)

Path = tuple[str, ...]
FieldSet = frozenset[Path]

# What a flattened path is: a leaf (scalar, atomic list or map), a list item, a map or
# list that holds members, or a struct (a typed message: never a member of a set, as
# upstream's non-pointer structs, which its "empty" objects always carry).
LEAF, ITEM, NODE, STRUCT = 0, 1, 2, 3


def _walk_map(d: dict[str, Any], schema: PatchSchema, path: Path, out: dict[Path, Any]) -> None:
    for k, v in d.items():
        if v is None:
            continue
        st, sub = schema.field(k)
        _walk_value(v, st, sub, (*path, "f:" + k), out)


def item_key(item: dict[str, Any], keys: Iterable[str]) -> str:
    """The "k:" path element of a list item: its key fields as compact JSON, sorted."""
    return "k:" + json.dumps(
        {k: item[k] for k in sorted(keys) if k in item}, separators=(",", ":"), sort_keys=True
    )


def _walk_value(
    v: Any, st: ListStrategy | None, sub: PatchSchema, path: Path, out: dict[Path, Any]
) -> None:
    if isinstance(v, dict):
        if st is not None and (st.map_type == ATOMIC or st.patch_strategy == "replace"):
            out[path] = (LEAF, v)
            return
        typed = isinstance(sub, MessageSchema) and (st is None or not st.map_type)
        out[path] = (STRUCT if typed else NODE, None)
        _walk_map(v, sub, path, out)
        return
    if isinstance(v, list):
        list_type = st.list_type if st is not None else ATOMIC
        if list_type == MAP and st is not None and all(isinstance(x, dict) for x in v):
            out[path] = (NODE, None)
            for item in v:
                p = (*path, item_key(item, st.keys))
                out[p] = (ITEM, None)
                _walk_map(item, sub, p, out)
            return
        if list_type == SET and not any(isinstance(x, dict | list) for x in v):
            out[path] = (NODE, None)
            for item in v:
                out[(*path, "v:" + json.dumps(item, separators=(",", ":")))] = (ITEM, item)
            return
    out[path] = (LEAF, v)


def copy_json(v: Any) -> Any:
    """A deep copy of a JSON value (dicts, lists, scalars): several times faster than
    copy.deepcopy, which the apply and patch paths would otherwise spend most time in."""
    if isinstance(v, dict):
        return {k: copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [copy_json(x) for x in v]
    return v


def flatten(obj: dict[str, Any], schema: PatchSchema) -> dict[Path, Any]:
    """Every path of `obj` -> (what it is, its value for leaves and set items)."""
    out: dict[Path, Any] = {}
    _walk_map(obj, schema, (), out)
    return out


def members(obj: dict[str, Any], schema: PatchSchema) -> FieldSet:
    """The fields an object sets: its leaves and list items (upstream's ToFieldSet)."""
    return frozenset(p for p, (k, _) in flatten(obj, schema).items() if k in (LEAF, ITEM))


def compare(
    schema: PatchSchema, old: dict[str, Any], new: dict[str, Any]
) -> tuple[set[Path], set[Path], set[Path]]:
    """(added, modified, removed) paths from `old` to `new`; added and removed include the
    maps and items that appear or go, modified only changed leaves."""
    a, b = flatten(old, schema), flatten(new, schema)
    added = {p for p in b if p not in a and b[p][0] != STRUCT}
    removed = {p for p in a if p not in b and a[p][0] != STRUCT}
    modified = {p for p in b if p in a and (a[p][0] != b[p][0] or a[p][1] != b[p][1])}
    return added, modified, removed


def to_fields_v1(fields: Iterable[Path]) -> dict[str, Any]:
    """A field set in upstream's FieldsV1 JSON: nested path elements, leaves as {}, and
    "." marking a member that also has members below it."""
    root: dict[str, Any] = {}
    members = set(fields)
    for p in sorted(members):
        node = root
        for pe in p:
            node = node.setdefault(pe, {})
    _mark(root, (), members)
    return root


def _mark(node: dict[str, Any], path: Path, members: set[Path]) -> None:
    for pe, child in node.items():
        p = (*path, pe)
        if child:
            _mark(child, p, members)
            if p in members:
                child["."] = {}


def from_fields_v1(tree: dict[str, Any], path: Path = ()) -> FieldSet:
    out: set[Path] = set()
    for pe, child in tree.items():
        if pe == ".":
            out.add(path)
        elif not child:
            out.add((*path, pe))
        elif isinstance(child, dict):
            out |= from_fields_v1(child, (*path, pe))
    return frozenset(out)


def path_string(path: Path) -> str:
    """A path as upstream prints it: .spec.containers[name="c"].image, .metadata.finalizers[="x"]."""
    out = ""
    for pe in path:
        kind, _, rest = pe.partition(":")
        if kind == "f":
            out += "." + rest
        elif kind == "k":
            fields = json.loads(rest)
            out += "[" + ",".join(f"{k}={json.dumps(v)}" for k, v in fields.items()) + "]"
        elif kind == "v":
            out += "[=" + rest + "]"
        else:
            out += "[" + rest + "]"
    return out


def remove(obj: dict[str, Any], path: Path) -> None:
    """Delete the node at `path` (if present) from `obj`."""
    parent: Any = obj
    for pe in path[:-1]:
        parent = _child(parent, pe)
        if parent is None:
            return
    last = path[-1]
    if isinstance(parent, dict) and last.startswith("f:"):
        parent.pop(last[2:], None)
    elif isinstance(parent, list):
        parent[:] = [x for x in parent if not _is(x, last)]


def _is(item: Any, pe: str) -> bool:
    if pe.startswith("k:") and isinstance(item, dict):
        want = json.loads(pe[2:])
        return all(item.get(k) == v for k, v in want.items())
    if pe.startswith("v:"):
        return bool(json.loads(pe[2:]) == item)
    return False


def _child(node: Any, pe: str) -> Any:
    if isinstance(node, dict) and pe.startswith("f:"):
        return node.get(pe[2:])
    if isinstance(node, list):
        return next((x for x in node if _is(x, pe)), None)
    return None
