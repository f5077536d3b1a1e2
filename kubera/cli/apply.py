"""What `kubera apply` computes and sends for each manifest, kubectl's way.

The verb (register, preflight, run) is at the end; the rest is the merge, the subtle part of
apply: kubectl's three-way merge of the last
applied manifest (the `last-applied-configuration` annotation), the new manifest and the
live object; the dry-run normalisation that lets a manifest compare equal to what the
apiserver stored (defaults, admission, canonical quantities); the client-side validation;
and creating or updating one object, retrying on conflicts, with the created / configured
/ unchanged result kubectl reports.
"""

from __future__ import annotations

import argparse
import copy
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from kubera.cli import manifests
from kubera.cli.common import (
    add_file_args,
    add_namespace_arg,
    client_for,
    command,
    err,
    load_manifests,
    meta_of,
    server_error,
)
from kubera.cli.manifests import Manifest
from kubera.errors import CliError
from kubera.printing import output
from services.api import validation
from services.api.machinery import codec
from services.api.machinery.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    FieldError,
    NotFoundError,
    UnavailableError,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.limits import loads_json
from services.api.machinery.patch import merge_patch
from services.apiserver import apply_defaults, prepare_for_create
from services.client import Client

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_CONFLICT_RETRIES = 5


def _deletions(last: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What the last applied manifest had and this one drops, as `null`s (recursing into
    maps both have: a key dropped inside a map removes only that key)."""
    patch: dict[str, Any] = {}
    for k, old in last.items():
        if k not in new:
            patch[k] = None
        elif isinstance(old, dict) and isinstance(new[k], dict):
            sub = _deletions(old, new[k])
            if sub:
                patch[k] = sub
    return patch


def _changes(live: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """What the live object must take from this manifest: every field the manifest sets
    that the live object does not have with that value (maps recursively, lists and
    scalars whole). A `null` in the manifest removes the field."""
    patch: dict[str, Any] = {}
    for k, v in new.items():
        cur = live.get(k)
        if v is None:
            if k in live:
                patch[k] = None
        elif isinstance(v, dict) and isinstance(cur, dict):
            sub = _changes(cur, v)
            if sub:
                patch[k] = sub
        elif k not in live or cur != v:
            patch[k] = copy.deepcopy(v)
    return patch


def _combine(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two patches as one; `b` wins where both name a field."""
    out = copy.deepcopy(a)
    for k, v in b.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = _combine(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


def three_way_patch(
    last: dict[str, Any] | None, new: dict[str, Any], live: dict[str, Any]
) -> dict[str, Any]:
    """The merge patch kubectl apply sends (CreateThreeWayJSONMergePatch): the fields of
    the new manifest that differ from the live object, plus `null` for the fields the last
    applied manifest had and the new one dropped. Everything else on the live object
    (server-set fields, status, fields others set) is left alone; without a last applied
    manifest nothing is removed."""
    deletions = _deletions(last, new) if last is not None else {}
    return _combine(deletions, _changes(live, new))


def _applied_config(m: Manifest) -> dict[str, Any]:
    """The manifest as applied (namespace resolved, no last-applied annotation of its own)."""
    doc = copy.deepcopy(m.document.doc)
    meta = doc.setdefault("metadata", {})
    if not isinstance(meta, dict):
        meta = doc["metadata"] = {}
    if m.kind.namespaced:
        meta["namespace"] = m.namespace
    else:
        meta.pop("namespace", None)
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            meta.pop("annotations")
    return doc


def _annotation_text(config: dict[str, Any]) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=str) + "\n"


def _with_annotation(obj: Message, config: dict[str, Any]) -> Message:
    obj = codec.clone(obj)
    meta_of(obj).annotations[LAST_APPLIED] = _annotation_text(config)
    return obj


def _last_applied(live: Message) -> dict[str, Any] | None:
    text = meta_of(live).annotations.get(LAST_APPLIED)
    if not text:
        return None
    try:  # too deep (DepthError) or not JSON: as if there were none
        parsed = loads_json(text, LAST_APPLIED)
    except ValueError:
        return None
    return parsed if isinstance(parsed, dict) else None


def _project(raw: Any, normalized: Any) -> Any:
    """The manifest's own fields, each with the value the apiserver makes of it: maps are
    walked key by key, lists and scalars taken whole from `normalized` (so a container
    the server fills in with its defaults, a canonical quantity or a toleration added at
    admission compare equal to the live object). What `normalized` lacks (fields the
    codec dropped, defaults proto3 omits, nulls) stays as the manifest wrote it."""
    if not isinstance(raw, dict):
        return copy.deepcopy(normalized)
    if not isinstance(normalized, dict):
        return copy.deepcopy(raw)
    return {
        k: _project(v, normalized[k]) if v is not None and k in normalized else copy.deepcopy(v)
        for k, v in raw.items()
    }


#: What the apiserver assigns to an object on create, whatever the manifest says.
_ASSIGNED_METADATA = (
    "uid",
    "creationTimestamp",
    "generation",
    "resourceVersion",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)


async def _normalized(client: Client, m: Manifest) -> dict[str, Any]:
    """The manifest as the apiserver would store it (defaults, admission, canonical
    quantities), from a dry-run create. If that is refused (create-only admission need not
    pass for an update; invalid fields are reported by validation next), the manifest
    with the API defaults the apiserver also applies to an update. Metadata a create
    assigns, and the status (an update cannot set it), stay as the manifest has them."""
    obj = codec.clone(m.obj)
    meta_of(obj).resource_version = ""
    codec.canonicalize_quantities(obj)
    plain = codec.encode(obj)
    try:
        doc = codec.encode(await client.create(obj, dry_run=True))
    except UnavailableError:
        raise
    except ApiError:
        apply_defaults(m.kind, obj)
        doc = codec.encode(obj)
    meta, own = doc.setdefault("metadata", {}), plain.get("metadata", {})
    for key in _ASSIGNED_METADATA:
        if key in own:
            meta[key] = own[key]
        else:
            meta.pop(key, None)
    if "status" in plain:
        doc["status"] = plain["status"]
    else:
        doc.pop("status", None)
    if m.kind.kind == "Service":
        _drop_allocations(doc, plain)
    return doc


def _keep_allocations(doc: dict[str, Any], live: dict[str, Any]) -> None:
    """What the apiserver keeps on a Service update that leaves them out (upstream's
    patchAllocatedValues): the live cluster IPs and each port's live node port."""
    spec, live_spec = doc.get("spec", {}), live.get("spec", {})
    for key in ("clusterIP", "clusterIPs"):
        if key not in spec and key in live_spec:
            spec[key] = copy.deepcopy(live_spec[key])
    live_ports = {
        (p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
        for p in live_spec.get("ports") or []
    }
    for port in spec.get("ports") or []:
        kept = live_ports.get((port.get("port"), port.get("protocol", "TCP")))
        if "nodePort" not in port and kept:
            port["nodePort"] = kept


def _drop_allocations(doc: dict[str, Any], plain: dict[str, Any]) -> None:
    """A dry-run create picks a cluster IP and node ports no update would change: those
    the manifest does not name are not the manifest's (the live ones are kept)."""
    spec, own = doc.get("spec", {}), plain.get("spec", {})
    for key in ("clusterIP", "clusterIPs"):
        if key not in own:
            spec.pop(key, None)
    own_ports = own.get("ports") or []
    for i, port in enumerate(spec.get("ports") or []):
        if i >= len(own_ports) or "nodePort" not in own_ports[i]:
            port.pop("nodePort", None)


def _merged(live: Message, config: dict[str, Any], normalized: dict[str, Any]) -> Message:
    """The object to Update: kubectl's three-way merge of the last applied manifest, this
    one (`config`, valued as `normalized`) and the live object, with the annotation set to
    this manifest and the live resourceVersion as the precondition."""
    live_doc = codec.encode(live)
    new = _project(config, normalized)
    doc = merge_patch(live_doc, three_way_patch(_last_applied(live), new, live_doc))
    if doc.get("kind") == "Service":
        _keep_allocations(doc, live_doc)
    meta = doc.setdefault("metadata", {})
    meta.setdefault("annotations", {})[LAST_APPLIED] = _annotation_text(config)
    meta["resourceVersion"] = meta_of(live).resource_version
    return codec.decode(doc, validate="ignore").obj


def _local_errors(kind: Kind, obj: Message, old: Message | None = None) -> list[FieldError]:
    """The apiserver's own validation, run here (quantities, names, selectors, enums), on
    the object as the apiserver validates it: with upstream's defaults applied (a Service's
    protocol, type and sessionAffinity are required once defaulted)."""
    obj = codec.clone(obj)
    apply_defaults(kind, obj)
    if old is None:
        # as the apiserver's create: a uid first (a Job's generated selector names it)
        meta = meta_of(obj)
        meta.uid = meta.uid or str(uuid.UUID(int=0))
        prepare_for_create(kind, obj)
    errors = codec.canonicalize_quantities(obj)
    if errors:
        return errors
    if old is None:
        return validation.validate_create(kind.name, obj)
    return validation.validate_update(kind.name, obj, old)


def invalid_message(what: str, errors: Sequence[FieldError]) -> str:
    """`Pod "x" is invalid: spec.f: Invalid value: ...` (several errors in brackets)."""
    shown = str(errors[0]) if len(errors) == 1 else "[" + ", ".join(map(str, errors)) + "]"
    return f"{what} is invalid: {shown}"


def _invalid_line(m: Manifest, errors: list[FieldError]) -> str:
    """A problem found here, before anything was sent: kubectl's client-side wording, never
    `Error from server`."""
    return f'error: error validating "{m.document.where}": {invalid_message(m.what, errors)}'


@dataclass
class _Plan:
    manifest: Manifest
    config: dict[str, Any]
    live: Message | None = None
    #: The manifest as the server would store it (only needed for an existing object).
    normalized: dict[str, Any] | None = None
    #: The Update to send for an existing object.
    merged: Message | None = None


def _depends_on_batch(e: ApiError, m: Manifest, earlier: set[tuple[str, str]]) -> bool:
    """Whether a dry run failed only because an object created earlier in this same apply
    does not exist yet (its namespace, priority class or runtime class)."""
    spec = getattr(m.obj, "spec", None)
    if isinstance(e, NotFoundError) and ("Namespace", m.namespace) in earlier:
        return e.message == f'namespaces "{m.namespace}" not found'
    if m.kind.kind != "Pod" or spec is None:
        return False
    if spec.priority_class_name and ("PriorityClass", spec.priority_class_name) in earlier:
        return f"no PriorityClass with name {spec.priority_class_name} " in e.message
    if spec.runtime_class_name and ("RuntimeClass", spec.runtime_class_name) in earlier:
        return f'RuntimeClass "{spec.runtime_class_name}" not found' in e.message
    return False


async def _get_or_none(client: Client, kind: Kind, name: str, namespace: str) -> Message | None:
    try:
        return await client.get(kind, name, namespace)
    except NotFoundError:
        return None


async def _plan_update(client: Client, plan: _Plan) -> Message:
    """The Update for an existing object (`plan.live`), computed against it."""
    assert plan.live is not None
    if plan.normalized is None:
        plan.normalized = await _normalized(client, plan.manifest)
    plan.merged = _merged(plan.live, plan.config, plan.normalized)
    return plan.merged


async def _apply_one(client: Client, plan: _Plan) -> str:
    """Create or update one object; returns created / configured / unchanged."""
    m = plan.manifest
    conflict: ConflictError | None = None
    for _ in range(_CONFLICT_RETRIES):
        if plan.live is None:
            try:
                await client.create(_with_annotation(m.obj, plan.config))
                return "created"
            except AlreadyExistsError:
                plan.live = await _get_or_none(client, m.kind, m.name, m.namespace)
                if plan.live is None:
                    raise
                plan.merged = None
        merged = plan.merged or await _plan_update(client, plan)
        if _same(merged, plan.live):
            return "unchanged"  # an empty patch: kubectl sends nothing either
        try:
            await client.update(merged)
        except ConflictError as e:
            conflict = e  # changed since it was read: merge again against the new version
            plan.live = await _get_or_none(client, m.kind, m.name, m.namespace)
            plan.merged = None
            continue
        return "configured"
    assert conflict is not None
    raise conflict


def _same(merged: Message, live: Message) -> bool:
    return codec.encode(merged) == codec.encode(live)


def _dry_run_result(plan: _Plan) -> str:
    if plan.live is None:
        return "created"
    assert plan.merged is not None
    return "unchanged" if _same(plan.merged, plan.live) else "configured"


# ------------------------------------------------------------------- apply


async def _preflight(client: Client, plans: list[_Plan], server_check: bool) -> list[str]:
    """Everything that can refuse an apply, checked before anything is written."""
    errors: list[str] = []
    earlier: set[tuple[str, str]] = set()
    for plan in plans:
        m = plan.manifest
        plan.live = await _get_or_none(client, m.kind, m.name, m.namespace)
        if plan.live is not None:
            local = _local_errors(m.kind, await _plan_update(client, plan), plan.live)
        else:
            local = _local_errors(m.kind, m.obj)
        if local:
            errors.append(_invalid_line(m, local))
            continue
        if plan.live is None and server_check:
            try:
                await client.create(_with_annotation(m.obj, plan.config), dry_run=True)
            except UnavailableError:
                raise
            except ApiError as e:
                if not _depends_on_batch(e, m, earlier):
                    errors.append(server_error(e, f'error when creating "{m.document.where}": '))
                    continue
        earlier.add((m.kind.name, m.name))
    return errors


@command
async def cmd_apply(args: argparse.Namespace) -> int:
    found = load_manifests(args, args.validate)
    for m in found:
        if not meta_of(m.obj).name:
            raise CliError(f"{m.document.where}: cannot use generate name with apply")
    plans = [_Plan(m, _applied_config(m)) for m in found]
    suffix = {"client": " (dry run)", "server": " (server dry run)"}.get(args.dry_run, "")
    async with client_for(args) as client:
        errors = await _preflight(client, plans, server_check=args.dry_run != "client")
        if errors:
            for line in errors:
                err(line)
            return 1
        failed = False
        for plan in plans:
            m = plan.manifest
            name = f"{output.resource_name(m.kind)}/{m.name}"
            if args.dry_run != "none":
                print(f"{name} {_dry_run_result(plan)}{suffix}")
                continue
            try:
                result = await _apply_one(client, plan)
            except UnavailableError:
                raise
            except ApiError as e:
                verb = "creating" if plan.live is None else "applying patch"
                err(server_error(e, f'error when {verb} "{m.document.where}": '))
                failed = True
                continue
            print(f"{name} {result}")
    return 1 if failed else 0


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("apply", help="create or update objects from manifests")
    add_file_args(p, required=True)
    add_namespace_arg(p)
    p.add_argument(
        "--validate",
        type=manifests.validate_mode,
        default="strict",
        nargs="?",
        const="strict",  # `--validate` alone, as kubectl's NoOptDefVal
        metavar="MODE",
        help="unknown fields: strict|true (an error, the default, as kubectl), "
        "warn (a warning), ignore|false (dropped silently)",
    )
    p.add_argument(
        "--dry-run",
        choices=("none", "client", "server"),
        default="none",
        nargs="?",
        const="client",
        help="only show what would be applied (server: let the apiserver check it too)",
    )
    p.set_defaults(func=cmd_apply)
