"""Deletion: Kubernetes' graceful deletion, finalizers and the namespace lifecycle.

Why this module exists: a delete is not "remove the key". A bound pod gets a
deletionTimestamp and a grace period and the kubelet finishes it; finalizers hold any
object until they are removed; a namespace turns Terminating, is emptied (the namespace
controller's work, done here at once) and goes when its "kubernetes" finalizer is dropped
after its last object is gone. Those rules are one state machine and read best together:

    live --delete, grace 0 and not held by finalizers--> gone
    live --delete, grace > 0 or held--> terminating (deletionTimestamp + grace set)
    terminating --delete with grace 0, or last finalizer removed by an update
                  (Store.write)--> gone
    namespace: Terminating --every object in it deleted (_empty_namespace), what is left
               reported in its conditions (NamespaceContentRemaining, ...)-->
               --last one gone (after_delete)--> "kubernetes" finalizer dropped --> gone

Propagation (upstream's deletionFinalizersForGarbageCollection): a delete with
propagationPolicy Orphan holds the object with the "orphan" finalizer, Foreground with
"foregroundDeletion" (an explicit policy replaces either one already there; without one,
the object's finalizers decide, else Background); the garbage collector
(services/controllers/garbagecollector.py) then orphans or deletes the dependents and drops
the finalizer, which lets the object go. Background deletes the object now and leaves the
dependents to the collector. A pod still in its grace period keeps its finalizers as they
are (upstream: "finalizers cannot be updated via DeleteOptions if a deletion is already
pending").

Functions take the :class:`~services.apiserver.store.Store` and write through its guarded
txns; the facade (registry.ApiServer) sets `after_delete` as the store's hook, so an update
that removes the last finalizer (`Store.write`) finishes a terminating namespace too.
"""

from __future__ import annotations

import contextlib
import logging

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api import validation
from services.api.machinery.errors import (
    BadRequestError,
    ConflictError,
    CorruptObjectError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
)
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from services.api.machinery.kubeobject import narrow
from services.apiserver import admission
from services.apiserver.objects import MAX_RETRIES, conflict, held, not_found
from services.apiserver.objects import meta as _meta
from services.apiserver.serviceips import release_ops
from services.apiserver.store import Store
from services.clock import rfc3339
from services.storage import Compare, Delete, KeyValue

log = logging.getLogger(__name__)

ORPHAN = "Orphan"
BACKGROUND = "Background"
FOREGROUND = "Foreground"
PROPAGATION_POLICIES = (ORPHAN, BACKGROUND, FOREGROUND)
#: metav1.FinalizerOrphanDependents and metav1.FinalizerDeleteDependents.
FINALIZER_ORPHAN = "orphan"
FINALIZER_FOREGROUND = "foregroundDeletion"


def gc_finalizers(finalizers: list[str], policy: str) -> list[str]:
    """The finalizers an object keeps when deleted with `policy` (upstream's
    deletionFinalizersForGarbageCollection, shouldOrphanDependents, shouldDeleteDependents):
    an explicit policy decides; without one, an orphan or foregroundDeletion finalizer
    already there stays; both are never set together."""
    if not policy:
        if FINALIZER_ORPHAN in finalizers:
            policy = ORPHAN
        elif FINALIZER_FOREGROUND in finalizers:
            policy = FOREGROUND
    out = [f for f in finalizers if f not in (FINALIZER_ORPHAN, FINALIZER_FOREGROUND)]
    if policy == ORPHAN:
        out.append(FINALIZER_ORPHAN)
    elif policy == FOREGROUND:
        out.append(FINALIZER_FOREGROUND)
    return out


def admit_delete(
    kind: Kind, name: str, grace_period_seconds: int | None = None, propagation_policy: str = ""
) -> None:
    """What refuses a delete before anything is read: the system priority classes and
    namespaces that may not go, a grace period out of range. A delete of many objects
    (deletecollection) checks every one first, so it refuses before deleting any."""
    if kind.kind == "PriorityClass" and name in admission.SYSTEM_PRIORITY_CLASSES:
        raise ForbiddenError(
            f'priorityclasses "{name}" is forbidden: this is a system priority class and may not be deleted'
        )
    if kind.kind == "Namespace" and name in admission.UNDELETABLE_NAMESPACES:
        raise ForbiddenError(f'namespaces "{name}" is forbidden: this namespace may not be deleted')
    if propagation_policy and propagation_policy not in PROPAGATION_POLICIES:
        raise BadRequestError(
            f'propagationPolicy: Unsupported value: "{propagation_policy}": supported values: '
            + ", ".join(f'"{p}"' for p in PROPAGATION_POLICIES)
        )
    if grace_period_seconds is not None:
        grace_errors = validation.validate_grace_period_seconds(grace_period_seconds)
        if grace_errors:
            raise InvalidError(kind.kind, name, grace_errors)


async def delete(
    store: Store,
    kind: Kind,
    namespace: str,
    name: str,
    *,
    grace_period_seconds: int | None = None,
    uid: str = "",
    resource_version: str = "",
    ignore_store_read_error: bool = False,
    propagation_policy: str = "",
) -> Message:
    """Kubernetes' graceful deletion: a bound pod gets deletionTimestamp + grace and the
    kubelet finishes it; finalizers hold any object until they are removed (Orphan and
    Foreground propagation add theirs, see the module docstring); otherwise the key goes
    at once. A value that does not decode raises CorruptObjectError, unless
    `ignore_store_read_error` (upstream's ignoreStoreReadErrorWithClusterBreakingPotential):
    then the key is removed as it is, no grace, finalizers or preconditions."""
    namespace = store.namespace(kind, namespace)
    admit_delete(kind, name, grace_period_seconds, propagation_policy)
    key = kind.key(namespace, name)
    for _ in range(MAX_RETRIES):
        kv = await store.storage.get(key)
        if kv is None:
            raise not_found(kind, name)
        try:
            obj = store.decode(kind, kv)
        except CorruptObjectError:
            if not ignore_store_read_error:
                raise
            return await _unsafe_delete(store, kind, namespace, name, kv)
        meta = _meta(obj)
        if uid and meta.uid != uid:
            raise ConflictError(
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.uid}"
            )
        if resource_version and resource_version != meta.resource_version:
            raise ConflictError(
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, ResourceVersion in object meta: {meta.resource_version}"
            )
        grace = grace_period(kind, obj, grace_period_seconds)
        finalizers_changed = False
        if not (meta.deletion_timestamp and meta.deletion_grace_period_seconds > 0):
            wanted = gc_finalizers(list(meta.finalizers), propagation_policy)
            if set(wanted) != set(meta.finalizers):
                del meta.finalizers[:]
                meta.finalizers.extend(wanted)
                finalizers_changed = True
        if grace == 0 and not held(kind, obj):
            res = await store.txn(
                [Compare(key, "mod", "==", kv.mod_revision)], [Delete(key), *release_ops(kind, obj)]
            )
            if res.succeeded:
                meta.resource_version = str(res.revision)
                await after_delete(store, kind, namespace)
                return obj
            continue
        if meta.deletion_timestamp and meta.deletion_grace_period_seconds <= grace:
            result = obj  # already terminating, no shorter grace asked for
            if finalizers_changed:
                try:
                    result = await store.write(kind, obj, kv)
                except ConflictError:
                    continue
        else:
            meta.deletion_timestamp = rfc3339(store.clock.now() + grace)
            meta.deletion_grace_period_seconds = grace
            if meta.generation > 0:
                meta.generation += 1  # as BeforeDelete does for a graceful deletion
            if kind.kind == "Namespace":
                obj.status.phase = "Terminating"  # type: ignore[attr-defined]
            try:
                result = await store.write(kind, obj, kv)
            except ConflictError:
                continue
        if kind.kind == "Namespace":
            await _empty_namespace(store, name)
            return await store.get_or_none(kind, "", name) or result
        return result
    raise conflict(kind, name)


async def _unsafe_delete(
    store: Store, kind: Kind, namespace: str, name: str, kv: KeyValue
) -> Message:
    """Remove a corrupt key as it is (compared at the version read, so a rewrite in between
    is not lost). The answer is a bare object naming what went, at the delete's revision."""
    res = await store.txn([Compare(kv.key, "mod", "==", kv.mod_revision)], [Delete(kv.key)])
    if not res.succeeded:
        raise conflict(kind, name)
    log.warning("unsafe deletion of corrupt object %s at revision %d", kv.key, res.revision)
    gone = kind.new()
    meta = _meta(gone)
    meta.name, meta.namespace, meta.resource_version = name, namespace, str(res.revision)
    await after_delete(store, kind, namespace)
    return gone


def grace_period(kind: Kind, obj: Message, requested: int | None) -> int:
    """The grace period a delete of `obj` gets: 0 for all but a pod still bound and not
    finished; else `requested`, or the pod's terminationGracePeriodSeconds."""
    if kind.kind != "Pod":
        return 0
    pod = narrow(obj, core_pb2.Pod)
    # An unscheduled or finished pod has no kubelet to wait for.
    if not pod.spec.node_name or pod.status.phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return requested
    return (
        pod.spec.termination_grace_period_seconds
        if pod.spec.HasField("termination_grace_period_seconds")
        else admission.DEFAULT_GRACE_SECONDS
    )


async def _empty_namespace(store: Store, namespace: str) -> None:
    """The namespace controller's work, done by the apiserver at once: delete everything
    in a terminating namespace (grace periods and finalizers honoured), report what is
    left in the namespace's conditions, then finish it."""
    for kind in KINDS:
        if not kind.namespaced:
            continue
        items, _ = await store.storage.list(kind.prefix(namespace))
        for kv in items:
            # A corrupt object stays (the namespace with it) until it is unsafely deleted.
            with contextlib.suppress(NotFoundError, ConflictError, CorruptObjectError):
                await delete(store, kind, namespace, kv.key.rsplit("/", 1)[1])
    await _report_remaining(store, namespace)
    await _finish_namespace(store, namespace)


#: The conditions the namespace controller keeps on a terminating namespace, with the
#: reason and message of each when all is well (upstream's status_condition_utils.go).
NAMESPACE_CONDITIONS_OK = {
    "NamespaceDeletionDiscoveryFailure": (
        "ResourcesDiscovered",
        "All resources successfully discovered",
    ),
    "NamespaceDeletionGroupVersionParsingFailure": (
        "ParsedGroupVersions",
        "All legacy kube types successfully parsed",
    ),
    "NamespaceDeletionContentFailure": (
        "ContentDeleted",
        "All content successfully deleted, may be waiting on finalization",
    ),
    "NamespaceContentRemaining": ("ContentRemoved", "All content successfully removed"),
    "NamespaceFinalizersRemaining": (
        "ContentHasNoFinalizers",
        "All content-preserving finalizers finished",
    ),
}


def namespace_conditions(
    remaining: dict[str, int],
    finalizers: dict[str, int],
    now: str,
    previous: list[core_pb2.NamespaceCondition],
) -> list[core_pb2.NamespaceCondition]:
    """The conditions of a terminating namespace given what is left in it (`remaining`:
    group-resource -> objects; `finalizers`: finalizer -> objects holding it). A condition
    whose status, reason and message did not change keeps its lastTransitionTime."""
    before = {c.type: c for c in previous}
    out = []
    for ctype, (reason, message) in NAMESPACE_CONDITIONS_OK.items():
        status = "False"
        if ctype == "NamespaceContentRemaining" and remaining:
            status, reason = "True", "SomeResourcesRemain"
            message = "Some resources are remaining: " + ", ".join(
                f"{gr} has {n} resource instances" for gr, n in sorted(remaining.items())
            )
        elif ctype == "NamespaceFinalizersRemaining" and finalizers:
            status, reason = "True", "SomeFinalizersRemain"
            message = "Some content in the namespace has finalizers remaining: " + ", ".join(
                f"{f} in {n} resource instances" for f, n in sorted(finalizers.items())
            )
        old = before.get(ctype)
        same = old is not None and (old.status, old.reason, old.message) == (
            status,
            reason,
            message,
        )
        out.append(
            core_pb2.NamespaceCondition(
                type=ctype,
                status=status,
                reason=reason,
                message=message,
                last_transition_time=old.last_transition_time if same and old else now,
            )
        )
    return out


async def _report_remaining(store: Store, namespace: str) -> None:
    """Write the namespace's conditions from what its first sweep left behind."""
    remaining: dict[str, int] = {}
    finalizers: dict[str, int] = {}
    for kind in KINDS:
        if not kind.namespaced:
            continue
        items, _ = await store.storage.list(kind.prefix(namespace))
        if not items:
            continue
        remaining[f"{kind.resource}.{kind.group}" if kind.group else kind.resource] = len(items)
        for item in items:
            with contextlib.suppress(CorruptObjectError):
                for f in _meta(store.decode(kind, item)).finalizers:
                    finalizers[f] = finalizers.get(f, 0) + 1
    ns_kind = BY_KIND["Namespace"]
    for _ in range(MAX_RETRIES):
        kv = await store.storage.get(ns_kind.key("", namespace))
        if kv is None:
            return
        ns = narrow(store.decode(ns_kind, kv), core_pb2.Namespace)
        if not ns.metadata.deletion_timestamp:
            return
        conds = namespace_conditions(
            remaining, finalizers, rfc3339(store.clock.now()), list(ns.status.conditions)
        )
        del ns.status.conditions[:]
        ns.status.conditions.extend(conds)
        try:
            await store.write(ns_kind, ns, kv)
            return
        except ConflictError:
            continue


async def after_delete(store: Store, kind: Kind, namespace: str) -> None:
    """After an object is gone: a terminating namespace may now be empty."""
    if not kind.namespaced or not namespace:
        return
    ns_kind = BY_KIND["Namespace"]
    cache = await store.fresh_cache(ns_kind)
    entry = cache.store.get(ns_kind.key("", namespace)) if cache is not None else None
    if entry is None or _meta(entry.obj).deletion_timestamp:
        await _finish_namespace(store, namespace)


async def _finish_namespace(store: Store, namespace: str) -> None:
    """Drop the "kubernetes" finalizer of a terminating, empty namespace (which then goes)."""
    ns_kind = BY_KIND["Namespace"]
    for _ in range(MAX_RETRIES):
        kv = await store.storage.get(ns_kind.key("", namespace))
        if kv is None:
            return
        ns = narrow(store.decode(ns_kind, kv), core_pb2.Namespace)
        if not ns.metadata.deletion_timestamp:
            return
        for kind in KINDS:
            if kind.namespaced and (await store.storage.list(kind.prefix(namespace)))[0]:
                return  # not empty yet: the last delete in it comes back here
        ns.spec.ClearField("finalizers")
        try:
            await store.write(ns_kind, ns, kv)
            return
        except ConflictError:
            continue
