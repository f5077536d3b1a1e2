"""Deletion: Kubernetes' graceful deletion, finalizers and the namespace lifecycle.

Why this module exists: a delete is not "remove the key". A bound pod gets a
deletionTimestamp and a grace period and the kubelet finishes it; finalizers hold any
object until they are removed; a namespace turns Terminating and waits for the namespace
controller (services/controllers/namespace.py) to empty it and drop its "kubernetes"
spec finalizer. Those rules are one state machine and read best together:

    live --delete, grace 0 and not held by finalizers--> gone
    live --delete, grace > 0 or held--> terminating (deletionTimestamp + grace set)
    terminating --delete with grace 0, or last finalizer removed by an update
                  (Store.write)--> gone
    namespace: Active --delete--> Terminating (deletionTimestamp, phase; a further delete
               answers it as it is while spec.finalizers hold it)
               --namespaces/finalize leaves spec and metadata finalizers empty
                 (update.finalize, Store.write)--> gone

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
txns. Without a namespace controller (`kubera up --no-controllers`) a deleted namespace
stays Terminating, as upstream's does.
"""

from __future__ import annotations

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
)
from services.api.machinery.kinds import BY_KIND, Kind
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
#: v1.NamespaceTerminating.
PHASE_TERMINATING = "Terminating"


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
        if kind.kind == "Namespace":
            ns = narrow(obj, core_pb2.Namespace)
            if not meta.deletion_timestamp or ns.spec.finalizers:
                try:
                    return await _terminate_namespace(store, ns, kv, propagation_policy)
                except ConflictError:
                    continue
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
            try:
                result = await store.write(kind, obj, kv)
            except ConflictError:
                continue
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
    return gone


async def _terminate_namespace(
    store: Store, ns: core_pb2.Namespace, kv: KeyValue, propagation_policy: str
) -> Message:
    """A namespace's delete while its spec finalizers hold it (upstream's namespace REST
    Delete): the first one sets deletionTimestamp and phase Terminating (and the orphan
    or foregroundDeletion finalizer its policy asks for); the namespace controller then
    empties it and drops the "kubernetes" finalizer (namespaces/finalize). A later delete
    answers the namespace as it is. Raises ConflictError if it changed meanwhile."""
    if ns.metadata.deletion_timestamp:
        return ns
    ns.metadata.deletion_timestamp = rfc3339(store.clock.now())
    ns.status.phase = PHASE_TERMINATING
    wanted = gc_finalizers(list(ns.metadata.finalizers), propagation_policy)
    if set(wanted) != set(ns.metadata.finalizers):
        ns.metadata.finalizers[:] = wanted
    return await store.write(BY_KIND["Namespace"], ns, kv)


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
