"""The apiserver's registry: `ApiServer`, the one object the gRPC edge (server.py) calls.

Every write is one etcd txn guarded by a compare, so a concurrent writer can never be
overwritten: create compares create_revision == 0 (and that the namespace exists),
update and delete compare mod_revision == the resourceVersion the writer read, bind
additionally compares the election key's create_revision (the fencing token). Values
are serialized protobuf without resourceVersion, which is always the key's mod_revision.

Why this module exists: it is the facade and keeps what every verb shares: the guarded
txn (`_txn`, which remembers this server's writes for read-your-writes caches), encoding,
validation, create (admission, namespace guard), get/list, update and patch (`_write`,
`_merge_update`) and watch. Verbs with rules of their own live beside it, as plain
functions taking the `ApiServer` (not mixins: each one's dependencies on the facade stay
visible at the call, and mypy checks them without a Protocol):

* ``deletion``: graceful deletion, finalizers, the namespace lifecycle;
* ``binding``: the pods/binding subresource and its fencing token;
* ``batch``: batch create and batch update, ~100 objects per txn;
* ``admission_reads``: what admission reads, from the watch caches;
* ``objects``: small object rules (selectors, finalizers, status, merge patch, errors).

Those modules are the package's own and call the facade's underscored primitives
(`_txn`, `_write`, `_encode`, `_namespace`, `_kind`, `_prepare_*`); nothing outside
services/apiserver should.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import json
import logging
import secrets
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import scheduling_pb2
from services.api import codec, validation
from services.api.errors import (
    AlreadyExistsError,
    BadRequestError,
    ConflictError,
    CorruptObjectError,
    FieldError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    RequestTooLargeError,
    invalid,
)
from services.api.fencing import Fencing
from services.api.kinds import BY_KIND, KINDS, Kind, UnknownKindError, kind_of
from services.api.limits import DepthError, loads_json
from services.api.patch import merge_patch as apply_merge_patch
from services.api.stored import decode
from services.apiserver import admission, batch, binding, deletion
from services.apiserver import fencing as fencing_mod
from services.apiserver.admission_reads import AdmissionReads
from services.apiserver.batch import BatchResult
from services.apiserver.objects import (
    MAX_RETRIES,
    Filter,
    conflict,
    copy_status,
    held,
    not_found,
)
from services.apiserver.objects import meta as _meta
from services.apiserver.watchcache import TOO_LARGE_WAIT, Entry, WatchCache
from services.clock import Clock, RealClock, rfc3339
from services.storage import (
    Compare,
    Delete,
    Get,
    KeyValue,
    Put,
    Storage,
    StorageRequestTooLargeError,
    TxnResult,
)

__all__ = ["ApiServer", "BatchResult", "Fencing", "Listed"]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Listed:
    """A list's answer: the objects, the revision read at, and one warning per stored
    value left out because it does not decode (naming its key)."""

    items: list[Message]
    revision: int
    warnings: list[str]


_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


class ApiServer:
    """kube-apiserver's registry over a `Storage`. Start it, then call its methods."""

    def __init__(
        self,
        storage: Storage,
        *,
        clock: Clock | None = None,
        watch_cache_capacity: int = 10_000,
        bookmark_interval: float = 5.0,
        new_uid: Callable[[], str] | None = None,
        resource_version_wait: float = TOO_LARGE_WAIT,
    ) -> None:
        """`resource_version_wait`: how long a watch from beyond the store's revision
        waits before ResourceVersionTooLargeError (upstream's 3 s; tests shorten it)."""
        self.storage = storage
        self.clock = clock or RealClock()
        self.bookmark_interval = bookmark_interval
        self._new_uid = new_uid or (lambda: str(uuid.uuid4()))
        #: The latest revision this server wrote, per resource (for read-your-writes from caches).
        self._written: dict[str, int] = {}
        self.caches = {
            k.resource: WatchCache(
                k,
                storage,
                capacity=watch_cache_capacity,
                clock=self.clock,
                too_large_wait=resource_version_wait,
            )
            for k in KINDS
        }

    # ----------------------------------------------------------- lifecycle

    async def start(self) -> None:
        for name in admission.INITIAL_NAMESPACES:
            ns = BY_KIND["Namespace"].new()
            _meta(ns).name = name
            await self._create_if_absent(ns)
        for name, value in admission.SYSTEM_PRIORITY_CLASSES.items():
            pc = scheduling_pb2.PriorityClass(
                value=value,
                description="Used for system critical pods that must not be moved from their current node.",
            )
            _meta(pc).name = name
            await self._create_if_absent(pc, system=True)
        await asyncio.gather(*(c.start() for c in self.caches.values()))

    async def stop(self) -> None:
        await asyncio.gather(*(c.stop() for c in self.caches.values()))

    async def _create_if_absent(self, obj: Message, *, system: bool = False) -> None:
        with contextlib.suppress(AlreadyExistsError):
            await self.create(obj, system=system)

    # ------------------------------------------------------------- helpers

    async def _txn(self, compares, success, failure=(), *, fencing=None, what=""):  # type: ignore[no-untyped-def]
        """storage.txn, remembering the revision of what this server wrote, per resource.

        A write under a fencing token (`fencing`, else the request's `fencing.CURRENT`)
        also compares the election key's create_revision; a stale token raises
        PreconditionError ("stale leader") instead of returning a failed txn."""
        fencing = fencing or fencing_mod.CURRENT.get()
        writes = fencing is not None and any(not isinstance(op, Get) for op in success)
        if writes:
            fencing.validate("Request", what or "write")  # revision 0 would match "unheld"
            compares = [*compares, Compare(fencing.key, "create", "==", fencing.create_revision)]
            failure = [*failure, Get(fencing.key)]
        try:
            res = await self.storage.txn(compares, success, failure)
        except StorageRequestTooLargeError as e:
            raise RequestTooLargeError(str(e)) from None
        if writes and not res.succeeded:
            first = next((op.key for op in success if not isinstance(op, Get)), "")
            err = fencing_mod.stale(fencing, res.gets[-1], what or f"Write to {first}")
            if err is not None:
                raise err
            res = TxnResult(False, res.revision, res.gets[:-1])
        ops = success if res.succeeded else failure
        for op in ops:
            if not isinstance(op, Get) and op.key.startswith("/registry/"):
                resource = op.key.split("/", 3)[2]
                if self._written.get(resource, 0) < res.revision:
                    self._written[resource] = res.revision
        return res

    async def fresh_cache(self, kind: Kind) -> WatchCache | None:
        """The kind's watch cache once it has seen this server's latest write of the kind;
        None if it has not started or does not catch up within a few seconds."""
        cache = self.caches[kind.resource]
        if not cache.started:
            return None
        need = self._written.get(kind.resource, 0)
        if cache.revision >= need or await cache.wait_revision(need, 5.0):
            return cache
        return None

    def _kind(self, obj: Message) -> Kind:
        try:
            return kind_of(obj)
        except UnknownKindError as e:
            raise BadRequestError(str(e)) from None

    def _namespace(self, kind: Kind, namespace: str) -> str:
        if not kind.namespaced:
            return ""
        return namespace or "default"

    @staticmethod
    def _encode(obj: Message) -> bytes:
        meta = _meta(obj)
        rv = meta.resource_version
        meta.resource_version = ""
        try:
            return obj.SerializeToString(deterministic=True)
        finally:
            meta.resource_version = rv

    async def get_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None:
        kv = await self.storage.get(kind.key(self._namespace(kind, namespace), name))
        return decode(kind, kv) if kv else None

    def _validate(self, kind: Kind, obj: Message, old: Message | None = None) -> None:
        errors: list[FieldError] = codec.canonicalize_quantities(obj)
        if not errors:
            errors = (
                validation.validate_create(kind.kind, obj)
                if old is None
                else validation.validate_update(kind.kind, obj, old)
            )
        if errors:
            raise InvalidError(kind.kind, _meta(obj).name or _meta(obj).generate_name, errors)

    # -------------------------------------------------------------- create

    async def _prepare_create(
        self, obj: Message, *, system: bool = False, reads: AdmissionReads | None = None
    ) -> tuple[Kind, Message]:
        kind = self._kind(obj)
        obj = codec.clone(obj)
        obj.api_version, obj.kind = kind.api_version, kind.kind  # type: ignore[attr-defined]
        meta = _meta(obj)
        if meta.resource_version:
            raise BadRequestError(
                f'{kind.kind} "{meta.name}": resourceVersion should not be set on objects to be created'
            )
        meta.namespace = self._namespace(kind, meta.namespace)
        if not meta.name and meta.generate_name:
            meta.name = meta.generate_name + "".join(
                secrets.choice(_GENERATE_ALPHABET) for _ in range(5)
            )
        meta.uid = self._new_uid()
        meta.creation_timestamp = rfc3339(self.clock.now())
        meta.ClearField("deletion_timestamp")
        meta.ClearField("deletion_grace_period_seconds")
        meta.generation = 1
        admission.apply_defaults(kind, obj)
        admission.initial_status(kind, obj)
        if kind.kind == "PriorityClass" and not system and meta.name.startswith("system-"):
            raise ForbiddenError(
                f'priorityclasses "{meta.name}" is forbidden: priority class names with a "system-" prefix are reserved for system use'
            )
        await admission.mutate(kind, obj, reads or AdmissionReads(self))
        self._validate(kind, obj)
        return kind, obj

    async def _namespace_guard(
        self, kind: Kind, namespace: str, name: str, reads: AdmissionReads | None
    ) -> Compare | None:
        """The txn compare that makes "the namespace exists and is not terminating" part
        of a create: its key must still be at the version read here (NamespaceLifecycle)."""
        if not kind.namespaced:
            return None
        ns_kind = BY_KIND["Namespace"]
        ns = await reads.cached_or_none(ns_kind, "", namespace) if reads is not None else None
        if ns is None:  # not seen by the cache (yet): ask etcd
            ns = await self.get_or_none(ns_kind, "", namespace)
        if ns is None:
            raise NotFoundError(f'namespaces "{namespace}" not found')
        if _meta(ns).deletion_timestamp:
            raise ForbiddenError(
                f'{kind.resource} "{name}" is forbidden: unable to create new content in namespace {namespace} because it is being terminated'
            )
        return Compare(ns_kind.key("", namespace), "mod", "==", int(_meta(ns).resource_version))

    def _create_txn(
        self, kind: Kind, obj: Message, guard: Compare | None
    ) -> tuple[list[Compare], list[Put]]:
        meta = _meta(obj)
        key = kind.key(meta.namespace, meta.name)
        compares = [Compare(key, "create", "==", 0)]
        if guard is not None:
            compares.append(guard)
        return compares, [Put(key, self._encode(obj))]

    async def _create_one(self, kind: Kind, obj: Message, guard: Compare | None) -> Message:
        """One create txn; when only the namespace moved on (a label change), read it again
        and retry; otherwise say why: the name is taken, or the namespace is gone/going."""
        meta = _meta(obj)
        for _ in range(MAX_RETRIES):
            compares, puts = self._create_txn(kind, obj, guard)
            res = await self._txn(compares, puts, [Get(puts[0].key)])
            if res.succeeded:
                meta.resource_version = str(res.revision)
                return obj
            if res.gets[0] is not None:
                raise AlreadyExistsError(f'{kind.resource} "{meta.name}" already exists')
            guard = await self._namespace_guard(kind, meta.namespace, meta.name, None)
        raise conflict(kind, meta.name)

    async def create(self, obj: Message, *, dry_run: bool = False, system: bool = False) -> Message:
        reads = AdmissionReads(self)
        kind, obj = await self._prepare_create(obj, system=system, reads=reads)
        guard = await self._namespace_guard(kind, _meta(obj).namespace, _meta(obj).name, reads)
        if dry_run:
            return obj
        return await self._create_one(kind, obj, guard)

    async def batch_create(self, objs: Sequence[Message]) -> list[BatchResult]:
        """Create many objects: validated one by one, written ~100 per etcd txn (see batch)."""
        return await batch.batch_create(self, objs)

    # ----------------------------------------------------------- get / list

    async def get(self, kind: Kind, namespace: str, name: str) -> Message:
        obj = await self.get_or_none(kind, namespace, name)
        if obj is None:
            raise not_found(kind, name)
        return obj

    async def list(
        self, kind: Kind, namespace: str = "", label_selector: str = "", field_selector: str = ""
    ) -> tuple[list[Message], int]:
        """The matching objects and the revision; corrupt values are left out (see
        `list_objects` for the warnings naming them)."""
        listed = await self.list_objects(kind, namespace, label_selector, field_selector)
        return listed.items, listed.revision

    async def list_objects(
        self, kind: Kind, namespace: str = "", label_selector: str = "", field_selector: str = ""
    ) -> Listed:
        """A list that does not fail for everyone when one stored value is corrupt: the
        good objects, and a warning naming each corrupt key (upstream fails the whole
        list with "unable to transform or decode N objects"; kubera answers with the rest
        and says which, as kubectl shows warnings)."""
        flt = Filter(kind, namespace, label_selector, field_selector)
        items, rev = await self.storage.list(kind.prefix(flt.namespace))
        out = []
        warnings = []
        for kv in items:
            try:
                obj = decode(kind, kv)
            except CorruptObjectError as e:
                warnings.append(f"{e.message} (left out of the list)")
                continue
            if flt(obj):
                out.append(obj)
        return Listed(out, rev, warnings)

    # --------------------------------------------------------------- update

    async def _write(self, kind: Kind, new: Message, old_kv: KeyValue) -> Message:
        """Write `new` over the version `old_kv`, or delete it when its finalizers and
        grace period are all done. Raises ConflictError if the key moved on."""
        meta = _meta(new)
        key = kind.key(meta.namespace, meta.name)
        if (
            meta.deletion_timestamp
            and not held(kind, new)
            and meta.deletion_grace_period_seconds == 0
        ):
            res = await self._txn([Compare(key, "mod", "==", old_kv.mod_revision)], [Delete(key)])
            if not res.succeeded:
                raise conflict(kind, meta.name)
            meta.resource_version = str(res.revision)
            await deletion.after_delete(self, kind, meta.namespace)
            return new
        data = self._encode(new)
        if data == old_kv.value:
            meta.resource_version = str(old_kv.mod_revision)
            return new
        res = await self._txn([Compare(key, "mod", "==", old_kv.mod_revision)], [Put(key, data)])
        if not res.succeeded:
            raise conflict(kind, meta.name)
        meta.resource_version = str(res.revision)
        return new

    def _merge_update(self, kind: Kind, new: Message, old: Message, *, status: bool) -> Message:
        """What an update may change: spec and metadata (status kept), or only status."""
        if status:
            merged = codec.clone(old)
            copy_status(merged, new)
            return merged
        merged = codec.clone(new)
        merged.api_version, merged.kind = kind.api_version, kind.kind  # type: ignore[attr-defined]
        if kind.kind == "Namespace":
            # spec.finalizers belong to the namespace lifecycle, not to updates.
            merged.spec.finalizers[:] = old.spec.finalizers  # type: ignore[attr-defined]
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
        admission.apply_defaults(kind, merged)
        if kind.has_status and hasattr(merged, "spec") and merged.spec != old.spec:  # type: ignore[attr-defined]
            m.generation = o.generation + 1
        return merged

    def _prepare_update(
        self, kind: Kind, obj: Message, kv: KeyValue | None, *, status: bool
    ) -> Message:
        """The object an update of `kv` to `obj` writes, preconditions and validation done."""
        meta = _meta(obj)
        if kv is None:
            raise not_found(kind, meta.name)
        if meta.resource_version and meta.resource_version != str(kv.mod_revision):
            raise conflict(kind, meta.name)
        old = decode(kind, kv)
        if meta.uid and meta.uid != _meta(old).uid:
            raise ConflictError(
                f"Precondition failed: UID in precondition: {meta.uid}, UID in object meta: {_meta(old).uid}"
            )
        obj = codec.clone(obj)
        _meta(obj).namespace = _meta(old).namespace
        new = self._merge_update(kind, obj, old, status=status)
        self._validate(kind, new, old)
        return new

    async def update(self, obj: Message, *, status: bool = False) -> Message:
        kind = self._kind(obj)
        if status and not kind.has_status:
            raise NotFoundError(f"{kind.resource} have no status subresource: use Update")
        meta = _meta(obj)
        ns = self._namespace(kind, meta.namespace)
        kv = await self.storage.get(kind.key(ns, meta.name))
        new = self._prepare_update(kind, obj, kv, status=status)
        if not status:
            await admission.check_single_global_default(kind, new, AdmissionReads(self))
        return await self._write(kind, new, kv)  # type: ignore[arg-type]

    async def batch_update(
        self, objs: Sequence[Message], *, status: bool = False
    ) -> builtins.list[BatchResult]:
        """Update many objects of one kind, ~100 per etcd txn (see batch)."""
        return await batch.batch_update(self, objs, status=status)

    async def update_status(self, obj: Message) -> Message:
        return await self.update(obj, status=True)

    async def patch(
        self, kind: Kind, namespace: str, name: str, merge_patch: str, *, status: bool = False
    ) -> Message:
        """A JSON merge patch (RFC 7386), retried on conflict like GuaranteedUpdate."""
        try:
            patch = loads_json(merge_patch, "the patch")
        except json.JSONDecodeError as e:
            raise BadRequestError(f"the patch is not valid JSON: {e}") from None
        except DepthError as e:
            raise BadRequestError(str(e)) from None
        if not isinstance(patch, dict):
            raise BadRequestError("a merge patch must be a JSON object")
        meta_patch = patch.get("metadata")
        # A patch that names a resourceVersion is conditional on it: no retry past a conflict.
        pinned = meta_patch.get("resourceVersion") if isinstance(meta_patch, dict) else None
        for _ in range(MAX_RETRIES):
            current = await self.get(kind, namespace, name)
            doc = apply_merge_patch(codec.encode(current), patch)
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
                return await self.update(decoded.obj, status=status)
            except ConflictError:
                if pinned:
                    raise
                continue
        raise conflict(kind, name)

    # --------------------------------------------------------------- delete

    async def delete(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        *,
        grace_period_seconds: int | None = None,
        uid: str = "",
        resource_version: str = "",
        ignore_store_read_error: bool = False,
    ) -> Message:
        """Kubernetes' graceful deletion (see deletion). `ignore_store_read_error`:
        upstream's ignoreStoreReadErrorWithClusterBreakingPotential, the unsafe removal of
        a key whose value does not decode."""
        return await deletion.delete(
            self,
            kind,
            namespace,
            name,
            grace_period_seconds=grace_period_seconds,
            uid=uid,
            resource_version=resource_version,
            ignore_store_read_error=ignore_store_read_error,
        )

    # ----------------------------------------------------------------- bind

    async def bind(
        self,
        namespace: str,
        name: str,
        node_name: str,
        *,
        resource_version: str = "",
        uid: str = "",
        fencing: Fencing | None = None,
        check_allocation: bool = False,
    ) -> Message:
        """Set spec.nodeName in one txn that also proves the pod is still unbound at the
        version read and, with `fencing`, that the caller's election key still exists with
        the create_revision it won it at; with `check_allocation`, that the pod fits the
        node's allocation record (shared-state scheduling; see allocation)."""
        return await binding.bind(
            self,
            namespace,
            name,
            node_name,
            resource_version=resource_version,
            uid=uid,
            fencing=fencing,
            check_allocation=check_allocation,
        )

    # ---------------------------------------------------------------- watch

    async def watch(
        self,
        kind: Kind,
        *,
        namespace: str = "",
        label_selector: str = "",
        field_selector: str = "",
        resource_version: str = "",
        allow_bookmarks: bool = False,
    ) -> AsyncIterator[tuple[str, Entry]]:
        flt = Filter(kind, namespace, label_selector, field_selector)
        rv = parse_resource_version(resource_version)
        cache = self.caches[kind.resource]
        async for item in cache.watch(
            rv, flt, bookmark_interval=self.bookmark_interval if allow_bookmarks else None
        ):
            yield item


def parse_resource_version(resource_version: str) -> int | None:
    """A watch's resourceVersion: None for "" or "0" (start from the current state), else
    a non-negative integer; anything else is invalid (upstream ParseResourceVersion: 400)."""
    if resource_version in ("", "0"):
        return None
    if resource_version.isascii() and resource_version.isdigit():
        return int(resource_version)
    raise BadRequestError(
        str(invalid("resourceVersion", resource_version, "must be a non-negative integer"))
    )
