"""Server-side apply and managedFields: which manager owns which field of an object.

Upstream's semantics (kubernetes-sigs/structured-merge-diff, merge.Updater, and
k8s.io/apiserver's fieldmanager), on Kubernetes JSON dicts with the schema of
services/api/machinery/listtypes.py:

- A field set is a set of paths (services/api/machinery/fieldpath.py: "f:<field>", "k:<keys>",
  "v:<value>" elements as FieldsV1 spells them; atomic lists and maps are one leaf).
- `apply`: the applied configuration is merged into the live object (maps by key, lists
  of type map by their keys, sets as unions, atomic values replaced); the applier then
  owns exactly the fields its configuration sets (its leaves and list items). A field it
  owned before and no longer sets is removed from the object (with everything below it)
  unless another manager owns it. A field another manager owns that the apply changes is
  a conflict (409, `ApplyConflictError`) unless `force`, which moves the field to the
  applier; setting the same value shares ownership.
- `track_update`: an Update (create, update, patch through the HTTP API) gives its manager
  the fields it added or changed (taking them from other managers) and removes the fields
  it removed from every manager. Its set also holds the maps and items it created, which
  FieldsV1 shows as "." entries.
- One managedFields entry per (manager, operation, subresource); empty entries go; the
  acting manager's entry gets the time `now`. Entries are sorted as upstream sorts them
  (operation, time, manager).
- An object without managedFields (created through gRPC, which does not track them) that
  is applied to has its fields owned by "before-first-apply" (operation Update), as upstream.

Fields no manager owns (upstream's stripped fields): apiVersion, kind, the metadata map
itself and metadata.name, namespace, uid, resourceVersion, generation, creationTimestamp,
selfLink, managedFields. On the main resource of a kind with a status subresource the
status is ignored (an applied status is dropped; upstream's reset fields); through the
status subresource the spec is.

Differences from upstream: no version conversion (kubera serves one version per kind);
nulls in an applied configuration mean "not set".
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from services.api.machinery import fieldpath
from services.api.machinery.errors import BadRequestError, ConflictError
from services.api.machinery.fieldpath import (
    FieldSet,
    Path,
    copy_json,
    from_fields_v1,
    item_key,
    path_string,
    remove,
    to_fields_v1,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.limits import DepthError, depth_exceeds
from services.api.machinery.listtypes import ATOMIC, MAP, SET, ListStrategy, PatchSchema, schema_for

APPLY = "Apply"
UPDATE = "Update"
FIELDS_V1 = "FieldsV1"
BEFORE_FIRST_APPLY = "before-first-apply"
#: The bucket the oldest Update entries merge into past MAX_UPDATE_MANAGERS (upstream's
#: capManagers: one bucket per apiVersion).
ANCIENT_CHANGES = "ancient-changes"
MAX_UPDATE_MANAGERS = 10
#: The reason of each StatusCause of an apply conflict.
CONFLICT_CAUSE = "FieldManagerConflict"
#: Longest fieldManager upstream accepts.
MAX_MANAGER_LENGTH = 128

_STRIPPED: frozenset[Path] = frozenset(
    {("f:apiVersion",), ("f:kind",), ("f:metadata",)}
    | {
        ("f:metadata", "f:" + f)
        for f in (
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "generation",
            "creationTimestamp",
            "selfLink",
            "managedFields",
        )
    }
)


class ApplyConflictError(ConflictError):
    """An apply that would change fields other managers own. `causes` holds one
    (field path, message) per conflicting field, as upstream's Status details.causes
    (reason CONFLICT_CAUSE)."""

    cause_reason = CONFLICT_CAUSE

    def __init__(self, message: str, causes: list[tuple[str, str]]) -> None:
        super().__init__(message)
        self.causes = causes


# ---------------------------------------------------------------- field sets


def _ignored(kind: Kind, subresource: str) -> tuple[Path, ...]:
    """Path prefixes no manager owns for this kind and subresource."""
    if not kind.has_status:
        return ()
    return (("f:spec",),) if subresource == "status" else (("f:status",),)


def _clean(paths: Iterable[Path], ignored: tuple[Path, ...]) -> FieldSet:
    return frozenset(
        p for p in paths if p not in _STRIPPED and not any(p[: len(i)] == i for i in ignored)
    )


def compare(
    kind: Kind, old: dict[str, Any], new: dict[str, Any]
) -> tuple[set[Path], set[Path], set[Path]]:
    """fieldpath.compare under the kind's schema."""
    return fieldpath.compare(schema_for(kind.message.DESCRIPTOR), old, new)


def field_set(kind: Kind, obj: dict[str, Any], subresource: str = "") -> FieldSet:
    """The fields an applied configuration sets: its leaves and list items (upstream's
    ToFieldSet), less the stripped and ignored ones."""
    members = fieldpath.members(obj, schema_for(kind.message.DESCRIPTOR))
    return _clean(members, _ignored(kind, subresource))


# ---------------------------------------------------------------- managers

ManagerKey = tuple[str, str, str]  # (manager, operation, subresource)


class _Managers:
    """The decoded managedFields: one field set, apiVersion and time per manager key."""

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        self.sets: dict[ManagerKey, FieldSet] = {}
        self.meta: dict[ManagerKey, tuple[str, str]] = {}
        for e in entries:
            key = (e.get("manager", ""), e.get("operation", ""), e.get("subresource", ""))
            fields = e.get("fieldsV1") or {}
            if not isinstance(fields, dict):
                raise BadRequestError("metadata.managedFields: fieldsV1 must be an object")
            self.sets[key] = self.sets.get(key, frozenset()) | from_fields_v1(fields)
            self.meta[key] = (e.get("apiVersion", ""), e.get("time", ""))

    def cap_updates(self, acting: ManagerKey, now: str) -> None:
        """Merge the oldest Update entries into one "ancient-changes" entry per apiVersion
        while there are more than MAX_UPDATE_MANAGERS (upstream's capManagers)."""
        updates = [k for k, f in self.sets.items() if k[1] == UPDATE and f]
        if len(updates) <= MAX_UPDATE_MANAGERS:
            return
        updates.sort(key=lambda k: now if k == acting else self.meta.get(k, ("", ""))[1])
        first: dict[str, ManagerKey] = {}
        count = len(updates)
        # kubera serves one version per kind, so the bucket key needs no apiVersion.
        bucket: ManagerKey = (ANCIENT_CHANGES, UPDATE, "")
        for key in updates:
            if count <= MAX_UPDATE_MANAGERS:
                break
            if key == bucket:
                continue
            version, time = self.meta.get(key, ("", ""))
            if version not in first:
                first[version] = key
                continue
            if bucket not in self.sets:
                oldest = first[version]
                self.sets[bucket] = self.sets.pop(oldest)
                self.meta[bucket] = self.meta.pop(oldest, (version, time))
            self.sets[bucket] = self.sets[bucket] | self.sets.pop(key)
            self.meta[bucket] = (version, time)
            self.meta.pop(key, None)
            count -= 1

    def entries(self, kind: Kind, acting: ManagerKey, now: str) -> list[dict[str, Any]]:
        if acting[1] == UPDATE:
            self.meta[acting] = (kind.api_version, now)
        self.cap_updates(acting, now)
        out = []
        for key, fields in self.sets.items():
            if not fields:
                continue
            api_version, time = self.meta.get(key, (kind.api_version, now))
            if key == acting:
                api_version, time = kind.api_version, now
            entry: dict[str, Any] = {"manager": key[0], "operation": key[1]}
            entry["apiVersion"] = api_version or kind.api_version
            if time:
                entry["time"] = time
            entry["fieldsType"] = FIELDS_V1
            entry["fieldsV1"] = to_fields_v1(fields)
            if key[2]:
                entry["subresource"] = key[2]
            out.append(entry)
        out.sort(
            key=lambda e: (
                e["operation"],
                e.get("time", ""),
                e["manager"],
                e.get("subresource", ""),
            )
        )
        return out


def manager_from_user_agent(user_agent: str) -> str:
    """The fieldManager of a non-apply write that names none: the User-Agent's product
    (upstream: "kubectl-client-side-apply/v1.32.0 (linux/amd64) kubernetes/..." gives
    "kubectl-client-side-apply"), cut to MAX_MANAGER_LENGTH."""
    return user_agent.split("/", 1)[0].strip()[:MAX_MANAGER_LENGTH] or "unknown"


def check_manager(manager: str) -> None:
    """BadRequestError for a fieldManager upstream refuses (too long, not printable)."""
    if len(manager) > MAX_MANAGER_LENGTH:
        raise BadRequestError(
            f"fieldManager: Invalid value: {json.dumps(manager)}: "
            f"must be less than {MAX_MANAGER_LENGTH} characters"
        )
    if not manager.isprintable():
        raise BadRequestError(
            f"fieldManager: Invalid value: {json.dumps(manager)}: must only contain printable characters"
        )


def _describe(key: ManagerKey, api_version: str) -> str:
    """A manager as upstream's conflict messages name it."""
    text = json.dumps(key[0])
    if key[2]:
        text += f" with subresource {json.dumps(key[2])}"
    if key[1] == UPDATE:
        text += f" using {api_version}"
    return text


def _conflict_error(
    conflicts: list[tuple[str, str]], by_manager: dict[str, list[str]]
) -> ApplyConflictError:
    if len(conflicts) == 1:
        path, message = conflicts[0]
        text = f"Apply failed with 1 conflict: {message}: {path}"
    else:
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        text = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApplyConflictError(text, conflicts)


def _entries_of(obj: dict[str, Any] | None) -> list[dict[str, Any]] | None:
    if obj is None:
        return None
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return None
    got = meta["managedFields"]
    if got is None:
        return None
    if not isinstance(got, list) or not all(isinstance(e, dict) for e in got):
        raise BadRequestError("metadata.managedFields must be a list of objects")
    return got


def _with_entries(obj: dict[str, Any], entries: list[dict[str, Any]]) -> dict[str, Any]:
    meta = obj.setdefault("metadata", {})
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)
    return obj


# ---------------------------------------------------------------- merge and prune


def _merge(live: Any, cfg: Any, st: ListStrategy | None, sub: PatchSchema) -> Any:
    if isinstance(cfg, dict) and isinstance(live, dict):
        if st is not None and (st.map_type == ATOMIC or st.patch_strategy == "replace"):
            return _drop_nulls(cfg)
        out = dict(live)
        for k, v in cfg.items():
            if v is None:
                continue
            st2, sub2 = sub.field(k)
            out[k] = _merge(live.get(k), v, st2, sub2) if k in live else _drop_nulls(v)
        return out
    if isinstance(cfg, list) and isinstance(live, list) and st is not None:
        if st.list_type == MAP and all(isinstance(x, dict) for x in cfg + live):
            keys = st.keys
            return merge_items(
                [(item_key(x, keys), x) for x in live],
                [(item_key(x, keys), x) for x in cfg],
                lambda lv, cv: _drop_nulls(cv) if lv is None else _merge(lv, cv, None, sub),
            )
        if st.list_type == SET and not any(isinstance(x, dict | list) for x in cfg + live):
            return merge_items(
                [(json.dumps(x), x) for x in live],
                [(json.dumps(x), x) for x in cfg],
                lambda lv, cv: cv,
            )
    return _drop_nulls(cfg)


def merge_items(lhs: list[tuple[str, Any]], rhs: list[tuple[str, Any]], merge: Any) -> list[Any]:
    """Upstream's list item order (structured-merge-diff mergingWalker.visitListItems):
    live-only items keep their place, applied items come in applied order, and an item in
    both comes where the applied order puts it. Duplicate keys: the first one counts."""
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for pe, x in lhs:
        left.setdefault(pe, x)
    for pe, x in rhs:
        right.setdefault(pe, x)
    lorder, rorder = list(left), list(right)
    shared = [pe for pe in rorder if pe in left]
    nxt = shared.pop(0) if shared else None
    out: list[Any] = []
    li = ri = 0
    # Each round consumes an item or skips a shared one taken later; bounded by both lengths.
    for _ in range(2 * (len(lorder) + len(rorder)) + 1):
        if li >= len(lorder) and ri >= len(rorder):
            break
        if li < len(lorder) and ri < len(rorder):
            pe = lorder[li]
            if pe == rorder[ri]:
                out.append(merge(left[pe], right[pe]))
                li, ri = li + 1, ri + 1
                nxt = shared.pop(0) if shared else None
                continue
            if pe in right and nxt is not None and nxt != pe:
                li += 1
                continue
        if li < len(lorder) and lorder[li] not in right:
            out.append(left[lorder[li]])
            li += 1
            continue
        if ri < len(rorder):
            pe = rorder[ri]
            out.append(merge(left.get(pe), right[pe]))
            ri += 1
            if nxt is not None and nxt == pe:
                nxt = shared.pop(0) if shared else None
            continue
        li += 1  # a shared item already taken from the applied side
    return out


def _drop_nulls(v: Any) -> Any:
    """A copy of `v` without null map values."""
    if isinstance(v, dict):
        return {k: _drop_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_drop_nulls(x) for x in v]
    return v


def _prune(obj: dict[str, Any], last: FieldSet, owned: set[Path]) -> None:
    """Remove what the applier owned before and nobody owns now, each with everything below
    it: a list item goes even when another manager owns a field inside it but not the item
    (structured-merge-diff's prune: RemoveItems(last), add back what is owned, then remove
    (merged - pruned) & last)."""
    for p in sorted(last - owned, key=len):
        remove(obj, p)


# ---------------------------------------------------------------- operations


def apply(
    kind: Kind,
    live: dict[str, Any] | None,
    applied: dict[str, Any],
    *,
    manager: str,
    force: bool,
    now: str,
    subresource: str = "",
) -> dict[str, Any]:
    """Server-side apply of `applied` by `manager` onto `live` (None: create). Returns
    the new object with metadata.managedFields; raises ApplyConflictError (409) when the
    apply changes fields other managers own and `force` is false. Arguments unchanged."""
    if not isinstance(applied, dict):
        raise BadRequestError("apply: the configuration must be an object")
    if not manager:
        raise BadRequestError("fieldManager is required for apply requests")
    check_manager(manager)
    if depth_exceeds(applied):
        raise BadRequestError(str(DepthError("the applied configuration")))
    if _entries_of(applied):
        raise BadRequestError("metadata.managedFields must be nil")
    version = applied.get("apiVersion")
    if version != kind.api_version:
        raise BadRequestError(
            "Incorrect version specified in apply patch. "
            f"Specified patch version: {version or ''}, expected: {kind.api_version}"
        )
    if applied.get("kind") != kind.kind:
        raise BadRequestError(
            f"Incorrect kind specified in apply patch. Specified: {applied.get('kind') or ''}, "
            f"expected: {kind.kind}"
        )
    # Neither argument is changed: cfg and base are shallow views, merged a fresh copy.
    cfg = _without_managed(applied)
    for prefix in _ignored(kind, subresource):
        cfg.pop(prefix[0][2:], None)
    base = _without_managed(live) if live is not None else {}
    entries = _entries_of(live)
    managers = _Managers(entries or [])
    schema = schema_for(kind.message.DESCRIPTOR)
    if live is not None and entries is None:
        added, _, _ = compare(kind, {}, base)
        old = _clean(added, _ignored(kind, subresource))
        if old:
            managers.sets[(BEFORE_FIRST_APPLY, UPDATE, "")] = old
            managers.meta[(BEFORE_FIRST_APPLY, UPDATE, "")] = (kind.api_version, now)
    merged = copy_json(_merge(base, cfg, None, schema))
    me: ManagerKey = (manager, APPLY, subresource)
    last = managers.sets.get(me, frozenset())
    mine = field_set(kind, cfg, subresource)
    managers.sets[me] = mine
    owned: set[Path] = set().union(*managers.sets.values())
    _prune(merged, last, owned)

    added, modified, removed = compare(kind, base, merged)
    changed = added | modified
    conflicts: list[tuple[str, str]] = []
    by_manager: dict[str, list[str]] = {}
    for key, fields in sorted(managers.sets.items()):
        if key == me:
            continue
        hit = fields & changed
        if not hit:
            continue
        who = _describe(key, managers.meta.get(key, (kind.api_version, ""))[0] or kind.api_version)
        for p in sorted(hit):
            conflicts.append((path_string(p), f"conflict with {who}"))
            by_manager.setdefault(who, []).append(path_string(p))
        if force:
            managers.sets[key] = fields - hit
    if conflicts and not force:
        raise _conflict_error(conflicts, by_manager)
    for key, fields in managers.sets.items():
        if key != me:
            managers.sets[key] = frozenset(fields - removed)
    return _with_entries(merged, managers.entries(kind, me, now))


def _without_managed(obj: dict[str, Any]) -> dict[str, Any]:
    """`obj` without metadata.managedFields, sharing everything else (read-only use)."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or "managedFields" not in meta:
        return dict(obj)
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def track_update(
    kind: Kind,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    operation: str = UPDATE,
    subresource: str = "",
    now: str,
) -> dict[str, Any]:
    """`new` with metadata.managedFields recording an Update by `manager`: it owns what it
    added or changed, every manager loses what it removed. managedFields sent in `new`
    that differ from `old`'s replace them (an empty list clears them, as upstream)."""
    if not manager:
        manager = "unknown"
    out = copy_json(new)
    sent = _entries_of(new)
    before = _entries_of(old) or []
    if sent is not None and sent != before:
        if not sent:
            return _with_entries(out, [])
        before = sent
    managers = _Managers(before)
    added, modified, removed = compare(
        kind, _without_managed(old) if old is not None else {}, _without_managed(new)
    )
    ignored = _ignored(kind, subresource)
    taken = _clean(added | modified, ignored)
    gone = _clean(removed, ignored)
    me: ManagerKey = (manager, operation, subresource)
    for key, fields in managers.sets.items():
        if key != me:
            managers.sets[key] = frozenset(fields - taken - gone)
    managers.sets[me] = frozenset((managers.sets.get(me, frozenset()) | taken) - gone)
    return _with_entries(out, managers.entries(kind, me, now))
