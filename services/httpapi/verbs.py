"""The verbs of the HTTP API over the registry: JSON in, the registry's call, JSON out.

Why this module exists: the registry speaks protobuf messages and raises ApiErrors; the
HTTP API speaks Kubernetes JSON with query parameters (dryRun, fieldValidation,
fieldManager, gracePeriodSeconds, propagationPolicy, limit/continue, ...). Each verb here
is one translation, with the registry doing every rule, so gRPC and HTTP clients see the
same behaviour. Output negotiation (Table, PartialObjectMetadata) is `app`'s: the reads
return messages, not JSON.

Deliberate differences from upstream, kept small:

* a list with `limit` is read from the kind's watch cache, every page at the first
  page's revision (upstream reads etcd at it); the continue token carries that revision
  and the last key, and answers 410 Expired once the revision has left the cache's
  window (upstream: once etcd compacted it). Without `limit` a list is a quorum read of
  etcd, as upstream's resourceVersion="";
* managedFields are tracked on HTTP writes only (services/api/machinery/fieldmanager.py); the gRPC
  path leaves them as they are;
"""

from __future__ import annotations

import base64
import contextlib
import copy
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml
from google.protobuf import symbol_database
from google.protobuf.descriptor import FieldDescriptor
from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2
from services.api.machinery import codec, fieldmanager, patching, yamlload
from services.api.machinery.errors import (
    ApiError,
    BadRequestError,
    ConflictError,
    GoneError,
    InvalidError,
    NotFoundError,
    ResourceVersionTooLargeError,
    unsupported,
)
from services.api.machinery.kinds import KINDS, Kind
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.limits import DepthError, loads_json
from services.api.machinery.listoptions import ListOptions
from services.apiserver import MAX_RETRIES, ApiServer, conflict
from services.auth import User
from services.clock import rfc3339
from services.httpapi import kprotobuf
from services.httpapi.requestinfo import RequestInfo, truthy
from services.httpapi.status import success

#: fieldValidation -> the codec's mode (upstream's default is Warn).
FIELD_VALIDATION = {"Strict": "strict", "Warn": "warn", "Ignore": "ignore", "": "warn"}
PROPAGATION = ("Orphan", "Background", "Foreground")
#: Kinds whose delete answers with the deleted object (upstream's ReturnDeletedObject).
RETURN_DELETED = frozenset({"pods", "persistentvolumeclaims"})
#: The media types a create or update body may have (and Kubernetes protobuf, for the
#: kinds services/httpapi/kprotobuf.py decodes; no CBOR).
BODY_TYPES = ("application/json", "application/yaml")


def _meta(obj: Message) -> meta_pb2.ObjectMeta:
    return object_meta(obj)


class UnsupportedMediaType(ApiError):
    reason = "UnsupportedMediaType"


@dataclass
class Call:
    """One resource request: what it names, its parameters and body, and who sent it."""

    api: ApiServer
    info: RequestInfo
    kind: Kind
    query: Mapping[str, str]
    body: bytes = b""
    content_type: str = ""
    user: User | None = None
    user_agent: str = ""
    #: Warning headers for the response (unknown fields under fieldValidation=Warn).
    warnings: list[str] = field(default_factory=list)
    #: Authorizes creating `obj` for the caller (PermissionDeniedError when not allowed):
    #: what a server-side apply of a missing object does too. None: anyone may.
    authorize_create: Callable[[Message], Awaitable[None]] | None = None

    @property
    def namespace(self) -> str:
        return self.info.namespace if self.kind.namespaced else ""

    @property
    def dry_run(self) -> bool:
        values = self.query.get("dryRun", "")
        if values and values != "All":
            raise BadRequestError(str(unsupported("dryRun", values, ["All"])))
        return values == "All"

    @property
    def validate(self) -> str:
        v = self.query.get("fieldValidation", "")
        if v not in FIELD_VALIDATION:
            raise BadRequestError(
                f"fieldValidation must be one of Strict, Warn or Ignore, not {v!r}"
            )
        return FIELD_VALIDATION[v]

    @property
    def manager(self) -> str:
        """fieldManager, else the User-Agent up to its first "/" (upstream's default)."""
        return (
            self.query.get("fieldManager", "")
            or self.user_agent.split("/", 1)[0][:128]
            or "unknown"
        )

    def now(self) -> str:
        return rfc3339(self.api.clock.now())


# ------------------------------------------------------------------ JSON


def to_json(kind: Kind, obj: Message) -> dict[str, Any]:
    """A message as Kubernetes JSON, apiVersion and kind always set, and `metadata`,
    `spec` and `status` always there when the kind has them (as `{}` when empty, with the
    fields Go writes of an empty one: a VolumeAttachment's `attached: false`): Go's
    encoding/json never leaves out a struct, so clients that read `obj.status.x` (the
    official Python client's models) expect the object even before anything is in it."""
    d = codec.encode(obj)
    d["apiVersion"], d["kind"] = kind.api_version, kind.kind
    for name, empty in _STRUCT_FIELDS.get(kind.kind, ()):
        if name not in d:
            d[name] = copy.deepcopy(empty)
    return d


def _empty(f: FieldDescriptor) -> dict[str, Any]:
    return codec.encode(symbol_database.Default().GetSymbol(f.message_type.full_name)())


#: Per kind, its top-level struct fields of those names, and each one's JSON when empty.
_STRUCT_FIELDS: dict[str, tuple[tuple[str, dict[str, Any]], ...]] = {
    k.kind: tuple(
        (f.json_name, _empty(f))
        for f in k.message.DESCRIPTOR.fields
        if f.json_name in ("metadata", "spec", "status") and f.message_type is not None
    )
    for k in KINDS
}


def body_doc(call: Call) -> Any:
    """The request body as a document: JSON, or YAML when the content type says so."""
    if not call.body:
        raise BadRequestError("the body of the request was empty")
    media = call.content_type.split(";")[0].strip()
    if media == kprotobuf.MEDIA_TYPE:
        try:
            return kprotobuf.decode(call.body)
        except kprotobuf.ProtobufBodyError as e:
            raise UnsupportedMediaType(f"the body of the request was in protobuf: {e}") from None
    if media and media not in BODY_TYPES:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(BODY_TYPES)}"
        )
    try:
        if "yaml" in call.content_type:
            return yamlload.safe_load(call.body.decode())
        return loads_json(call.body, "the request body")
    except DepthError as e:
        raise BadRequestError(str(e)) from None
    except (ValueError, yaml.YAMLError, UnicodeDecodeError) as e:
        raise BadRequestError(f"the body of the request was in an unknown format: {e}") from None


#: The start of a bytes field's decoding error (services/api/machinery/codec.py), as Go's.
BASE64_ERROR = "illegal base64 data"


def decode_object(call: Call, doc: Any) -> Message:
    """A body document as an object of the URL's kind (apiVersion and kind defaulted from
    the URL, checked against it when given), unknown fields handled per fieldValidation."""
    kind = call.kind
    if not isinstance(doc, dict):
        raise BadRequestError(f"expected a {kind.kind} object, got {type(doc).__name__}")
    doc = dict(doc)
    if doc.setdefault("apiVersion", kind.api_version) != kind.api_version:
        raise BadRequestError(
            f"the API version in the data ({doc['apiVersion']}) does not match the expected "
            f"API version ({kind.api_version})"
        )
    if doc.setdefault("kind", kind.kind) != kind.kind:
        raise BadRequestError(
            f"the kind in the data ({doc['kind']}) does not match the expected kind ({kind.kind})"
        )
    try:
        decoded = codec.decode(doc, validate=call.validate)
    except codec.DecodeError as e:
        undecodable = next((f for f in e.errors if f.detail.startswith(BASE64_ERROR)), None)
        if undecodable is not None:
            # upstream's JSON decoder stops there: 400, not a field error (the Secret of
            # the docs' secret/tls-auth-secret.yaml, whose data are placeholders)
            raise BadRequestError(
                f'{kind.kind} in version "{kind.version}" cannot be handled as a {kind.kind}: '
                f"{undecodable.detail}"
            ) from None
        if e.errors:
            name = (
                (doc.get("metadata") or {}).get("name", "")
                if isinstance(doc.get("metadata"), dict)
                else ""
            )
            raise InvalidError(kind.kind, name, e.errors) from None
        raise BadRequestError(str(e)) from None
    call.warnings.extend(f'unknown field "{p}"' for p in decoded.unknown_fields)
    return decoded.obj


def _same_namespace(call: Call, obj: Message) -> None:
    m = _meta(obj)
    if not call.kind.namespaced:
        return
    if m.namespace and m.namespace != call.info.namespace:
        raise BadRequestError(
            "the namespace of the provided object does not match the namespace sent on the request"
        )
    m.namespace = call.info.namespace


def _same_name(call: Call, obj: Message) -> None:
    m = _meta(obj)
    if m.name != call.info.name:
        raise BadRequestError(
            f"the name of the object ({m.name}) does not match the name on the URL ({call.info.name})"
        )


def track(call: Call, old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """`new` with metadata.managedFields updated for this write."""
    out: dict[str, Any] = fieldmanager.track_update(
        call.kind,
        old,
        new,
        manager=call.manager,
        operation="Update",
        subresource=call.info.subresource,
        now=call.now(),
    )
    return out


# ------------------------------------------------------------------ reads


async def get(call: Call) -> Message:
    """One object, as of now; a resourceVersion past the store's is waited for, then
    answers 504 (upstream's "Too large resource version", `wait_fresh`); any other is
    served by the current state."""
    rv = call.query.get("resourceVersion", "")
    if rv not in ("", "0"):
        if not rv.isdigit():
            raise BadRequestError(f'resourceVersion: Invalid value: "{rv}": must be an integer')
        await wait_fresh(call, int(rv))
    return await call.api.get(call.kind, call.namespace, call.info.name)


async def wait_fresh(call: Call, resource_version: int) -> None:
    """Upstream's WaitUntilFreshAndGet / WaitUntilFreshAndList: a resourceVersion the store
    has not reached is waited for (up to the apiserver's resource_version_wait, upstream's
    3 s), then refused with ResourceVersionTooLargeError."""
    await call.api.caches[call.kind.resource].wait_fresh(resource_version)


@dataclass(frozen=True)
class Page:
    items: list[Message]
    revision: int
    continue_token: str = ""
    remaining: int | None = None


def continue_token(revision: int, last_key: str) -> str:
    """Opaque to clients: the revision every page is read at and the last key served."""
    raw = json.dumps({"v": "meta.k8s.io/v1", "rv": revision, "start": last_key})
    return base64.urlsafe_b64encode(raw.encode()).decode()


def parse_continue(token: str) -> tuple[int, str]:
    try:
        d = json.loads(base64.urlsafe_b64decode(token.encode()))
        return int(d["rv"]), str(d["start"])
    except (ValueError, KeyError, TypeError):
        raise BadRequestError("continue key is not valid: the token does not decode") from None


async def list_(call: Call) -> Page:
    """A list: the current state from storage (a quorum read, as upstream's
    resourceVersion=""), or with limit/continue a consistent page from the watch cache."""
    q = call.query
    rv, match = q.get("resourceVersion", ""), q.get("resourceVersionMatch", "")
    if match and match not in ("NotOlderThan", "Exact"):
        raise BadRequestError(
            str(unsupported("resourceVersionMatch", match, ["Exact", "NotOlderThan"]))
        )
    if match and not rv:
        raise BadRequestError(
            "resourceVersionMatch is forbidden unless resourceVersion is provided"
        )
    try:
        limit = int(q.get("limit") or 0)
    except ValueError:
        raise BadRequestError(f"limit must be an integer, not {q.get('limit')!r}") from None
    if limit < 0:
        raise BadRequestError("limit must not be negative")
    if rv and not rv.isdigit():
        raise BadRequestError(f'resourceVersion: Invalid value: "{rv}": must be an integer')
    if rv not in ("", "0"):
        await wait_fresh(call, int(rv))
    opts = ListOptions(
        label_selector=q.get("labelSelector", ""),
        field_selector=q.get("fieldSelector", ""),
        resource_version=rv,
        resource_version_match=match,
        limit=limit,
        continue_=q.get("continue", ""),
    )
    if opts.continue_:
        if rv:
            raise BadRequestError("specifying resource version is not allowed when using continue")
        first_rv, after = parse_continue(opts.continue_)
        try:
            page = await call.api.list_page(
                call.kind, call.namespace, opts, revision=first_rv, after=after
            )
        except GoneError:
            raise GoneError(
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter."
            ) from None
        return _page(page)
    if limit:
        page = await call.api.list_page(call.kind, call.namespace, opts)
        _check_rv(rv, match, page.revision)
        return _page(page)
    listed = await call.api.list_objects(call.kind, call.namespace, opts)
    call.warnings.extend(listed.warnings)
    _check_rv(rv, match, listed.revision)
    items = sorted(listed.items, key=lambda o: (_meta(o).namespace, _meta(o).name))
    return Page(items, listed.revision)


def _page(page: Any) -> Page:
    token = continue_token(page.revision, page.last_key) if page.last_key else ""
    return Page(page.items, page.revision, token, page.remaining if token else None)


def _check_rv(rv: str, match: str, revision: int) -> None:
    """resourceVersion on a list: "" or "0" any state; NotOlderThan (the default for
    others) at least `rv`; Exact exactly it (kubera serves the current revision only)."""
    if rv in ("", "0"):
        return
    want = int(rv)
    if want > revision:
        raise _too_large(want, revision)
    if match == "Exact" and want != revision:
        raise GoneError(
            f"too old resource version: {want} ({revision}); kubera serves exact lists "
            "at the current revision only"
        )


def _too_large(want: int, current: int) -> ApiError:
    return ResourceVersionTooLargeError.at(want, current)


def list_doc(kind: Kind, page: Page) -> dict[str, Any]:
    meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
    if page.continue_token:
        meta["continue"] = page.continue_token
        meta["remainingItemCount"] = page.remaining
    return {
        "kind": f"{kind.kind}List",
        "apiVersion": kind.api_version,
        "metadata": meta,
        "items": [to_json(kind, o) for o in page.items],
    }


# ------------------------------------------------------------------ writes


async def create(call: Call) -> tuple[int, dict[str, Any]]:
    obj = decode_object(call, body_doc(call))
    _same_namespace(call, obj)
    obj = decode_object(call, track(call, None, to_json(call.kind, obj)))
    created = await call.api.create(obj, dry_run=call.dry_run)
    return 201, to_json(call.kind, created)


async def update(call: Call) -> dict[str, Any]:
    status = call.info.subresource == "status"
    obj = decode_object(call, body_doc(call))
    _same_namespace(call, obj)
    _same_name(call, obj)
    current = await call.api.get(call.kind, call.namespace, call.info.name)
    obj = decode_object(call, track(call, to_json(call.kind, current), to_json(call.kind, obj)))
    if call.info.subresource == "finalize":
        updated = await call.api.finalize(obj, dry_run=call.dry_run)
    else:
        updated = await call.api.update(obj, status=status, dry_run=call.dry_run)
    return to_json(call.kind, updated)


def patch_type(call: Call) -> str:
    ct = call.content_type.split(";")[0].strip()
    if ct not in patching.PATCH_TYPES:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format - accepted media types include: "
            f"{', '.join(patching.PATCH_TYPES)}"
        )
    return ct


async def patch(call: Call) -> dict[str, Any]:
    """Every patch type: the patched JSON decoded and written as an update at the version
    read, retried on conflict (GuaranteedUpdate) unless the patch pins a resourceVersion."""
    ptype = patch_type(call)
    status = call.info.subresource == "status"
    if ptype == patching.APPLY_PATCH_YAML:
        return await _apply(call)
    pinned = names_resource_version(ptype, call.body)
    for _ in range(MAX_RETRIES):
        current = await call.api.get(call.kind, call.namespace, call.info.name)
        cur_doc = to_json(call.kind, current)
        doc = patching.apply_patch(call.kind, cur_doc, ptype, call.body)
        if not isinstance(doc, dict):
            raise BadRequestError("the patch did not produce an object")
        meta = doc.setdefault("metadata", {})
        if not meta.get("resourceVersion"):
            meta["resourceVersion"] = _meta(current).resource_version
        doc = track(call, cur_doc, doc)
        call.warnings.clear()
        obj = decode_object(call, doc)
        _same_namespace(call, obj)
        _same_name(call, obj)
        try:
            updated = await call.api.update(obj, status=status, dry_run=call.dry_run)
        except ConflictError:
            if pinned:
                raise
            continue
        return to_json(call.kind, updated)
    raise conflict(call.kind, call.info.name)


def names_resource_version(ptype: str, body: bytes) -> bool:
    """Whether a patch sets metadata.resourceVersion: it is then conditional on that
    version, and a conflict is the answer rather than a retry (as upstream)."""
    try:
        doc = loads_json(body, "the patch")
    except (ValueError, UnicodeDecodeError):  # DepthError is a ValueError
        return False
    if ptype == patching.JSON_PATCH:
        return isinstance(doc, list) and any(
            isinstance(op, dict) and op.get("path") == "/metadata/resourceVersion" for op in doc
        )
    meta = doc.get("metadata") if isinstance(doc, dict) else None
    return isinstance(meta, dict) and bool(meta.get("resourceVersion"))


async def _apply(call: Call) -> dict[str, Any]:
    """Server-side apply through services/api/machinery/fieldmanager.py."""
    if not call.query.get("fieldManager"):
        raise BadRequestError(
            "PATCH, application/apply-patch+yaml: fieldManager: Required value: is required for apply patch"
        )
    try:
        applied = yamlload.safe_load(call.body.decode())
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise BadRequestError(f"error decoding YAML: {e}") from None
    force = truthy(call.query.get("force"))
    for _ in range(MAX_RETRIES):
        current = await call.api.get_or_none(call.kind, call.namespace, call.info.name)
        live = to_json(call.kind, current) if current is not None else None
        doc = fieldmanager.apply(
            call.kind,
            live,
            applied,
            manager=call.manager,
            force=force,
            subresource=call.info.subresource,
            now=call.now(),
        )
        call.warnings.clear()
        obj = decode_object(call, doc)
        _same_namespace(call, obj)
        _same_name(call, obj)
        try:
            if current is None:
                if call.info.subresource:  # a subresource of nothing (upstream: 404)
                    raise NotFoundError(f'{call.kind.resource} "{call.info.name}" not found')
                if call.authorize_create is not None:
                    await call.authorize_create(obj)
                return to_json(call.kind, await call.api.create(obj, dry_run=call.dry_run))
            _meta(obj).resource_version = _meta(current).resource_version
            return to_json(
                call.kind,
                await call.api.update(
                    obj, status=call.info.subresource == "status", dry_run=call.dry_run
                ),
            )
        except ConflictError as e:
            if getattr(e, "causes", None):
                raise
            continue
    raise conflict(call.kind, call.info.name)


@dataclass(frozen=True)
class DeleteOptions:
    grace_period_seconds: int | None = None
    propagation_policy: str = ""
    uid: str = ""
    resource_version: str = ""
    dry_run: bool = False


def delete_options(call: Call) -> DeleteOptions:
    """DeleteOptions from the body (JSON) or the query; the body wins where both say."""
    doc: dict[str, Any] = {}
    if call.body.strip():
        d = body_doc(call)
        if not isinstance(d, dict):
            raise BadRequestError("DeleteOptions must be a JSON object")
        doc = d
    q = call.query
    grace = doc.get("gracePeriodSeconds", q.get("gracePeriodSeconds"))
    if grace is not None:
        try:
            grace = int(grace)
        except (TypeError, ValueError):
            raise BadRequestError(f"gracePeriodSeconds must be an integer, not {grace!r}") from None
    policy = doc.get("propagationPolicy") or q.get("propagationPolicy", "")
    if doc.get("orphanDependents") is True or q.get("orphanDependents") == "true":
        policy = policy or "Orphan"
    if policy and policy not in PROPAGATION:
        raise BadRequestError(str(unsupported("propagationPolicy", policy, PROPAGATION)))
    pre = doc.get("preconditions") or {}
    dry = doc.get("dryRun") or ([q["dryRun"]] if q.get("dryRun") else [])
    for v in dry:
        if v != "All":
            raise BadRequestError(str(unsupported("dryRun", v, ["All"])))
    return DeleteOptions(
        grace_period_seconds=grace,
        propagation_policy=policy,
        uid=str(pre.get("uid") or ""),
        resource_version=str(pre.get("resourceVersion") or ""),
        dry_run=bool(dry),
    )


async def delete(call: Call) -> tuple[int, dict[str, Any]]:
    """Delete one object: 200 with the object while it terminates (grace, finalizers),
    else 200 with the deleted object for kinds upstream answers so (pods), or a Success
    Status naming it."""
    opts = delete_options(call)
    kind, ns, name = call.kind, call.namespace, call.info.name
    if opts.dry_run:
        obj = await call.api.get(kind, ns, name)
        m = _meta(obj)
        if opts.uid and opts.uid != m.uid:
            raise ConflictError(
                f"Precondition failed: UID in precondition: {opts.uid}, UID in object meta: {m.uid}"
            )
        if opts.resource_version and opts.resource_version != m.resource_version:
            raise ConflictError(
                f"Precondition failed: ResourceVersion in precondition: {opts.resource_version}, "
                f"ResourceVersion in object meta: {m.resource_version}"
            )
        return 200, to_json(kind, obj)
    obj = await call.api.delete(
        kind,
        ns,
        name,
        grace_period_seconds=opts.grace_period_seconds,
        uid=opts.uid,
        resource_version=opts.resource_version,
        propagation_policy=opts.propagation_policy,
    )
    if kind.resource in RETURN_DELETED or await call.api.get_or_none(kind, ns, name) is not None:
        return 200, to_json(kind, obj)
    m = _meta(obj)
    return 200, success(
        {"name": name, "group": kind.group, "kind": kind.http_resource, "uid": m.uid}
    )


async def delete_collection(call: Call) -> dict[str, Any]:
    """DELETE on a collection: every object the selectors match, deleted one by one;
    the answer lists them as the deletes left them. What would refuse one of the deletes
    before it reads anything (a system priority class, a bad grace period) refuses the
    whole collection before any is deleted (upstream deletes up to the first refusal)."""
    opts = delete_options(call)
    q = call.query
    items, rev = await call.api.list(
        call.kind,
        call.namespace,
        ListOptions(
            label_selector=q.get("labelSelector", ""), field_selector=q.get("fieldSelector", "")
        ),
    )
    for obj in items:
        call.api.admit_delete(call.kind, _meta(obj).name, opts.grace_period_seconds)
    out = []
    for obj in items:
        m = _meta(obj)
        if opts.dry_run:
            out.append(obj)
            continue
        with contextlib.suppress(NotFoundError):
            gone = await call.api.delete(
                call.kind,
                m.namespace,
                m.name,
                grace_period_seconds=opts.grace_period_seconds,
                propagation_policy=opts.propagation_policy,
            )
            out.append(gone)
    return list_doc(call.kind, Page(out, rev))
