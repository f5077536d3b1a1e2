"""Update and patch: what an update may change, its preconditions, and the guarded write.

Why this module exists: batch update (``batch``) checks and merges each item with the
same steps as a single update, so they are functions over a
:class:`~services.apiserver.store.Store`: `merge_update` (spec and metadata, or only
status), `prepare_update` (preconditions, merge, validation), then `Store.write`.
A JSON merge patch (`patch`) is a get, the patch applied, and an update, retried on
conflict like upstream's GuaranteedUpdate.
"""

from __future__ import annotations

import json

from google.protobuf.message import Message

from services.api.dra.taints import stamp_time_added
from services.api.helpers.quota import handles_update
from services.api.machinery import codec
from services.api.machinery.errors import BadRequestError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.limits import DepthError, loads_json
from services.api.machinery.patch import merge_patch as apply_merge_patch
from services.apiserver import admission, allocation, limitranger, quota, serviceips
from services.apiserver.admission_reads import AdmissionReads
from services.apiserver.noderestriction import admit_node, admit_pod_status
from services.apiserver.objects import MAX_RETRIES, conflict, copy_status, not_found
from services.apiserver.objects import meta as _meta
from services.apiserver.read import get
from services.apiserver.serviceips import keep_allocated
from services.apiserver.store import Store
from services.clock import rfc3339
from services.storage import KeyValue


def merge_update(
    kind: Kind, new: Message, old: Message, *, status: bool, finalizers: list[str] | None = None
) -> Message:
    """What an update may change: spec and metadata (status kept), or only status; a
    namespace's spec.finalizers only through finalize (`finalizers`, what it sent)."""
    if status:
        merged = codec.clone(old)
        copy_status(merged, new)
        if _meta(new).managed_fields:
            # who owns the status fields (an HTTP write's, services/api/machinery/fieldmanager.py;
            # the gRPC fast path sends none and leaves them as they were)
            del _meta(merged).managed_fields[:]
            _meta(merged).managed_fields.extend(_meta(new).managed_fields)
        return merged
    merged = codec.clone(new)
    merged.api_version, merged.kind = kind.api_version, kind.kind  # type: ignore[attr-defined]
    if kind.kind == "Namespace":
        # spec.finalizers belong to the namespace lifecycle, not to updates.
        kept = old.spec.finalizers if finalizers is None else finalizers  # type: ignore[attr-defined]
        merged.spec.finalizers[:] = kept  # type: ignore[attr-defined]
    m, o = _meta(merged), _meta(old)
    m.uid, m.creation_timestamp = o.uid, o.creation_timestamp
    m.generation = o.generation
    if o.deletion_timestamp:
        m.deletion_timestamp = o.deletion_timestamp
        m.deletion_grace_period_seconds = o.deletion_grace_period_seconds
    else:
        m.ClearField("deletion_timestamp")
        m.ClearField("deletion_grace_period_seconds")
    if kind.has_status:
        copy_status(merged, old)
    if kind.kind == "Service":
        keep_allocated(merged, old)
    admission.apply_defaults(kind, merged)
    if kind.kind == "DaemonSet":
        admission.daemon_set_template_generation(merged, old)
    if kind.has_status and hasattr(merged, "spec") and merged.spec != old.spec:  # type: ignore[attr-defined]
        m.generation = o.generation + 1
    return merged


def prepare_update(
    store: Store,
    kind: Kind,
    obj: Message,
    kv: KeyValue | None,
    *,
    status: bool,
    finalizers: list[str] | None = None,
) -> Message:
    """The object an update of `kv` to `obj` writes, preconditions and validation done."""
    meta = _meta(obj)
    if kv is None:
        raise not_found(kind, meta.name)
    if meta.resource_version and meta.resource_version != str(kv.mod_revision):
        raise conflict(kind, meta.name)
    old = store.decode(kind, kv)
    if meta.uid and meta.uid != _meta(old).uid:
        raise ConflictError(
            f"Precondition failed: UID in precondition: {meta.uid}, UID in object meta: {_meta(old).uid}"
        )
    obj = codec.clone(obj)
    _meta(obj).namespace = _meta(old).namespace
    new = merge_update(kind, obj, old, status=status, finalizers=finalizers)
    if not status:
        stamp_time_added(new, old, rfc3339(store.clock.now()))
    if kind.kind == "Node":
        admit_node(new, old)
    elif kind.kind == "Pod" and status:
        admit_pod_status(new, old)
    store.validate(kind, new, old)
    return new


async def update(
    store: Store,
    obj: Message,
    *,
    status: bool = False,
    dry_run: bool = False,
    check_allocation: bool = False,
) -> Message:
    """Update `obj` (its spec and metadata, or with `status` only its status); with
    `dry_run`, every check but no write (the object answered as it would be written).
    `check_allocation` (a shared-state scheduler's ResourceClaim status): the devices it
    newly allocates are recorded in the same txn, and refused when another claim holds
    one (allocation.py)."""
    kind = store.kind(obj)
    if status and not kind.has_status:
        raise NotFoundError(f"{kind.resource} have no status subresource: use Update")
    meta = _meta(obj)
    ns = store.namespace(kind, meta.namespace)
    kv = await store.storage.get(kind.key(ns, meta.name))
    if kv is None:
        raise not_found(kind, meta.name)
    new = prepare_update(store, kind, obj, kv, status=status)
    if status:
        if dry_run:
            return new
        if check_allocation and kind.kind == "ResourceClaim":
            return await allocation.write_claim_status(store, kind, new, kv)
        return await store.write(kind, new, kv)
    reads = AdmissionReads(store)
    await admission.check_single_global_default(kind, new, reads)
    if kind.kind == "PersistentVolumeClaim":
        ranges = await reads.namespace_objects(BY_KIND["LimitRange"], _meta(new).namespace)
        limitranger.admit_claim(new, ranges)  # type: ignore[arg-type]
    if kind.kind == "Service":
        return await _update_service(store, kind, new, kv, reads, dry_run=dry_run)
    if handles_update(kind):  # ResourceQuota runs last
        await quota.admit(store, kind, new, reads, old=store.decode(kind, kv), dry_run=dry_run)
    if dry_run:
        return new
    return await store.write(kind, new, kv)


async def finalize(store: Store, obj: Message, *, dry_run: bool = False) -> Message:
    """The namespaces/finalize subresource (upstream's FinalizeREST with
    namespaceFinalizeStrategy): an update whose spec.finalizers are the ones sent, the
    status kept. A terminating namespace left with no spec or metadata finalizers is
    removed by the write (ShouldDeleteNamespaceDuringUpdate, `Store.write`)."""
    kind = store.kind(obj)
    if kind.kind != "Namespace":
        raise NotFoundError(f"{kind.resource} have no finalize subresource")
    kv = await store.storage.get(kind.key("", _meta(obj).name))
    sent = list(obj.spec.finalizers)  # type: ignore[attr-defined]
    new = prepare_update(store, kind, obj, kv, status=False, finalizers=sent)
    if dry_run:
        return new
    return await store.write(kind, new, kv)  # type: ignore[arg-type]


async def _update_service(
    store: Store, kind: Kind, new: Message, kv: KeyValue, reads: AdmissionReads, *, dry_run: bool
) -> Message:
    """A service's update: what its new type needs allocated, what it dropped released,
    both in the update's txn (services/apiserver/serviceips.py); between them the quota
    charge of a type change (upstream allocates in BeginUpdate, before admission's
    validation)."""
    old = store.decode(kind, kv)
    await serviceips.allocate(
        store.storage,
        store.service_network,
        new,
        held=frozenset(serviceips.allocation_keys(old)),
    )
    await quota.admit(store, kind, new, reads, old=old, dry_run=dry_run)
    if dry_run:
        return new
    compares, ops = serviceips.update_ops(kind, new, old)
    try:
        return await store.write(kind, new, kv, compares=compares, ops=ops)
    except ConflictError:
        current = await store.storage.get(kv.key)
        if compares and current is not None and current.mod_revision == kv.mod_revision:
            taken = [c.key for c in compares if await store.storage.get(c.key) is not None]
            raise serviceips.allocation_refusal(new, taken) from None
        raise


async def patch(
    store: Store, kind: Kind, namespace: str, name: str, merge_patch: str, *, status: bool = False
) -> Message:
    """A JSON merge patch (RFC 7386), retried on conflict like GuaranteedUpdate."""
    try:
        doc_patch = loads_json(merge_patch, "the patch")
    except json.JSONDecodeError as e:
        raise BadRequestError(f"the patch is not valid JSON: {e}") from None
    except DepthError as e:
        raise BadRequestError(str(e)) from None
    if not isinstance(doc_patch, dict):
        raise BadRequestError("a merge patch must be a JSON object")
    meta_patch = doc_patch.get("metadata")
    # A patch that names a resourceVersion is conditional on it: no retry past a conflict.
    pinned = meta_patch.get("resourceVersion") if isinstance(meta_patch, dict) else None
    for _ in range(MAX_RETRIES):
        current = await get(store, kind, namespace, name)
        doc = apply_merge_patch(codec.encode(current), doc_patch)
        if not isinstance(doc, dict):
            raise BadRequestError("the patch did not produce an object")
        doc.setdefault("metadata", {})["resourceVersion"] = (
            str(pinned) if pinned else _meta(current).resource_version
        )
        doc["apiVersion"], doc["kind"] = kind.api_version, kind.kind
        try:
            decoded = codec.decode(doc, validate="strict")
        except codec.DecodeError as e:
            raise BadRequestError(
                f'the patch cannot be applied to {kind.resource} "{name}": {e}'
            ) from None
        try:
            return await update(store, decoded.obj, status=status)
        except ConflictError:
            if pinned:
                raise
            continue
    raise conflict(kind, name)
