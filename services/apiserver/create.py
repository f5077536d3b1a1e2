"""Create: defaults, admission and validation, then one txn that proves the name is free
and the namespace exists and is not terminating.

Why this module exists: batch create (``batch``) admits and writes with the same steps
as a single create, so the steps are functions over a :class:`~services.apiserver.store.Store`:
`prepare_create` (metadata, defaults, initial status, admission incl. LimitRanger, validation),
`namespace_guard` (the NamespaceLifecycle compare), `create_txn` (the compares and put of
one object) and `create_one` (one txn, retried while only the namespace moved on).
"""

from __future__ import annotations

import secrets

from google.protobuf.message import Message

from services.api.dra.taints import stamp_time_added
from services.api.machinery import codec
from services.api.machinery.errors import (
    AlreadyExistsError,
    BadRequestError,
    ForbiddenError,
    NotFoundError,
)
from services.api.machinery.kinds import BY_KIND, Kind
from services.apiserver import admission, limitranger, quota, serviceips
from services.apiserver.admission_reads import AdmissionReads
from services.apiserver.noderestriction import admit_node
from services.apiserver.objects import MAX_RETRIES, conflict
from services.apiserver.objects import meta as _meta
from services.apiserver.store import Store
from services.clock import rfc3339
from services.storage import Compare, Get, Put

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


async def prepare_create(
    store: Store, obj: Message, *, system: bool = False, reads: AdmissionReads | None = None
) -> tuple[Kind, Message]:
    """The object a create of `obj` writes (a copy), admitted and validated."""
    kind = store.kind(obj)
    obj = codec.clone(obj)
    obj.api_version, obj.kind = kind.api_version, kind.kind  # type: ignore[attr-defined]
    meta = _meta(obj)
    if meta.resource_version:
        raise BadRequestError(
            f'{kind.kind} "{meta.name}": resourceVersion should not be set on objects to be created'
        )
    meta.namespace = store.namespace(kind, meta.namespace)
    if not meta.name and meta.generate_name:
        meta.name = meta.generate_name + "".join(
            secrets.choice(_GENERATE_ALPHABET) for _ in range(5)
        )
    meta.uid = store.new_uid()
    now = store.clock.now()
    meta.creation_timestamp = rfc3339(now)
    meta.ClearField("deletion_timestamp")
    meta.ClearField("deletion_grace_period_seconds")
    meta.generation = 1
    admission.initial_status(kind, obj, now)
    stamp_time_added(obj, None, rfc3339(now))
    # Defaults after the initial status: upstream defaults every decode, the one from etcd
    # included, so a new object shows its status defaults too (a claim's phase Pending).
    admission.apply_defaults(kind, obj)
    admission.prepare_for_create(kind, obj)
    if kind.kind == "PriorityClass" and not system and meta.name.startswith("system-"):
        raise ForbiddenError(
            f'priorityclasses "{meta.name}" is forbidden: priority class names with a "system-" prefix are reserved for system use'
        )
    if kind.kind == "Node":
        admit_node(obj, None)
    reads = reads or AdmissionReads(store)
    await admission.mutate(kind, obj, reads, store.disable_admission_plugins)
    if kind.kind == "Pod":
        ranges = await reads.namespace_objects(BY_KIND["LimitRange"], meta.namespace)
        limitranger.admit(obj, ranges)  # type: ignore[arg-type]
    elif kind.kind == "PersistentVolumeClaim":
        ranges = await reads.namespace_objects(BY_KIND["LimitRange"], meta.namespace)
        limitranger.admit_claim(obj, ranges)  # type: ignore[arg-type]
    store.validate(kind, obj)
    if kind.kind == "PersistentVolumeClaim":  # LimitRanger validates what validation passed
        ranges = await reads.namespace_objects(BY_KIND["LimitRange"], meta.namespace)
        limitranger.admit_claim(obj, ranges)  # type: ignore[arg-type]
    if kind.kind == "Service":
        await serviceips.allocate(store.storage, store.service_network, obj)
    return kind, obj


async def namespace_guard(
    store: Store, kind: Kind, namespace: str, name: str, reads: AdmissionReads | None
) -> Compare | None:
    """The txn compare that makes "the namespace exists and is not terminating" part
    of a create: its key must still be at the version read here (NamespaceLifecycle)."""
    if not kind.namespaced:
        return None
    ns_kind = BY_KIND["Namespace"]
    ns = await reads.cached_or_none(ns_kind, "", namespace) if reads is not None else None
    if ns is None:  # not seen by the cache (yet): ask etcd
        ns = await store.get_or_none(ns_kind, "", namespace)
    if ns is None:
        raise NotFoundError(f'namespaces "{namespace}" not found')
    if _meta(ns).deletion_timestamp:
        raise ForbiddenError(
            f'{kind.resource} "{name}" is forbidden: unable to create new content in namespace {namespace} because it is being terminated'
        )
    return Compare(ns_kind.key("", namespace), "mod", "==", int(_meta(ns).resource_version))


def create_txn(
    store: Store, kind: Kind, obj: Message, guard: Compare | None
) -> tuple[list[Compare], list[Put]]:
    """The compares (name free, namespace guard) and the put of one create."""
    meta = _meta(obj)
    key = kind.key(meta.namespace, meta.name)
    compares = [Compare(key, "create", "==", 0)]
    if guard is not None:
        compares.append(guard)
    held, allocated = serviceips.allocation_ops(kind, obj)
    return [*compares, *held], [Put(key, store.encode(obj)), *allocated]


async def create_one(store: Store, kind: Kind, obj: Message, guard: Compare | None) -> Message:
    """One create txn; when only the namespace moved on (a label change), read it again
    and retry; otherwise say why: the name is taken, or the namespace is gone/going."""
    meta = _meta(obj)
    for _ in range(MAX_RETRIES):
        compares, puts = create_txn(store, kind, obj, guard)
        taken = [Get(k) for k in serviceips.allocation_keys(obj)] if kind.kind == "Service" else []
        res = await store.txn(compares, puts, [Get(puts[0].key), *taken])
        if res.succeeded:
            meta.resource_version = str(res.revision)
            return obj
        if res.gets[0] is not None:
            raise AlreadyExistsError(f'{kind.resource} "{meta.name}" already exists')
        lost = [g.key for g, kv in zip(taken, res.gets[1:], strict=True) if kv is not None]
        if lost:
            raise serviceips.allocation_refusal(obj, lost)
        guard = await namespace_guard(store, kind, meta.namespace, meta.name, None)
    raise conflict(kind, meta.name)


async def create(
    store: Store, obj: Message, *, dry_run: bool = False, system: bool = False
) -> Message:
    """Create `obj`; with `dry_run`, everything but the write. `system`: the server's
    own objects (a "system-" PriorityClass)."""
    reads = AdmissionReads(store)
    kind, prepared = await prepare_create(store, obj, system=system, reads=reads)
    guard = await namespace_guard(
        store, kind, _meta(prepared).namespace, _meta(prepared).name, reads
    )
    await quota.admit(store, kind, prepared, reads, dry_run=dry_run)  # ResourceQuota runs last
    if dry_run:
        return prepared
    return await create_allocating(store, kind, prepared, guard, asked=obj)


async def create_allocating(
    store: Store, kind: Kind, obj: Message, guard: Compare | None, *, asked: Message
) -> Message:
    """`create_one`, picking a service's cluster IP or node port again when another
    create took it between our pick and our txn (unless the client asked for that very
    value: then 422). Only the allocation is retried: the object was admitted once, and
    its quota reserved once (the values picked change no quota usage)."""
    for _ in range(MAX_RETRIES):
        try:
            return await create_one(store, kind, obj, guard)
        except serviceips.AllocationLostError as e:
            if set(e.keys) & set(serviceips.allocation_keys(asked)):
                raise
            obj = codec.clone(obj)
            serviceips.forget(obj, e.keys)
            await serviceips.allocate(store.storage, store.service_network, obj)
    raise conflict(kind, _meta(obj).name)
