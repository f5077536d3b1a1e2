"""The apiserver's logic: the generic registry (create, get, list, update, patch, delete,
watch), the pod binding subresource with fencing, and batch create — over one `Storage`.

Every write is one etcd txn guarded by a compare, so a concurrent writer can never be
overwritten: create compares create_revision == 0 (and that the namespace exists),
update and delete compare mod_revision == the resourceVersion the writer read, bind
additionally compares the election key's create_revision (the fencing token). Values
are serialized protobuf without resourceVersion, which is always the key's mod_revision.
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

from protos.kubera.v1 import core_pb2, scheduling_pb2
from services.api import codec, validation
from services.api.errors import (
    AlreadyExistsError,
    ApiError,
    BadRequestError,
    ConflictError,
    FieldError,
    ForbiddenError,
    InvalidError,
    NotFoundError,
    PreconditionError,
    invalid,
)
from services.api.kinds import BY_KIND, KINDS, Kind, UnknownKindError, kind_of
from services.apiserver import admission
from services.apiserver.objects import Filter, copy_status, held, set_condition
from services.apiserver.objects import merge_patch as apply_merge_patch
from services.apiserver.watchcache import Entry, WatchCache, decode
from services.clock import Clock, RealClock, rfc3339
from services.storage import Compare, Delete, Get, KeyValue, Put, Storage

log = logging.getLogger(__name__)

_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
_MAX_RETRIES = 16
_BATCH_CHUNK = 100  # etcd's default --max-txn-ops is 128


@dataclass(frozen=True)
class Fencing:
    key: str
    create_revision: int


@dataclass(frozen=True)
class BatchResult:
    obj: Message | None
    error: ApiError | None


def _conflict(kind: Kind, name: str) -> ConflictError:
    return ConflictError(
        f'Operation cannot be fulfilled on {kind.resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def _not_found(kind: Kind, name: str) -> NotFoundError:
    return NotFoundError(f'{kind.resource} "{name}" not found')


def _meta(obj: Message):  # -> meta_pb2.ObjectMeta
    return obj.metadata  # type: ignore[attr-defined]


class _AdmissionReads:
    """What admission plugins read (PriorityClasses, RuntimeClasses, Namespaces): from the
    watch caches, as kube-apiserver's plugins read their informers, but only once the cache
    has seen this server's own latest write of that resource (read-your-writes: a class
    created a moment ago is seen). Memoized for one request, so a batch create of
    thousands of pods reads each class once."""

    def __init__(self, api: ApiServer) -> None:
        self._api = api
        self._memo: dict[tuple[str, str, str], Message | None] = {}
        self._default: list[scheduling_pb2.PriorityClass | None] = []

    async def cached_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None:
        key = (kind.resource, namespace, name)
        if key not in self._memo:
            cache = await self._api.fresh_cache(kind)
            if cache is None:
                self._memo[key] = await self._api.get_or_none(kind, namespace, name)
            else:
                entry = cache.store.get(kind.key(self._api._namespace(kind, namespace), name))
                self._memo[key] = entry.obj if entry is not None else None
        return self._memo[key]

    async def global_default_priority_class(self) -> scheduling_pb2.PriorityClass | None:
        if not self._default:
            kind = BY_KIND["PriorityClass"]
            cache = await self._api.fresh_cache(kind)
            if cache is None:
                objs = [decode(kind, kv) for kv in (await self._api.storage.list(kind.prefix()))[0]]
            else:
                objs = [e.obj for e in cache.store.values()]
            found = [pc for pc in objs if pc.global_default]  # type: ignore[attr-defined]
            # Should there be several, Kubernetes takes the lowest value.
            found.sort(key=lambda pc: (pc.value, pc.metadata.name))  # type: ignore[attr-defined]
            self._default.append(found[0] if found else None)  # type: ignore[arg-type]
        return self._default[0]


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
    ) -> None:
        self.storage = storage
        self.clock = clock or RealClock()
        self.bookmark_interval = bookmark_interval
        self._new_uid = new_uid or (lambda: str(uuid.uuid4()))
        #: The latest revision this server wrote, per resource (for read-your-writes from caches).
        self._written: dict[str, int] = {}
        self.caches = {
            k.resource: WatchCache(k, storage, capacity=watch_cache_capacity, clock=self.clock)
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

    async def _txn(self, compares, success, failure=()):  # type: ignore[no-untyped-def]
        """storage.txn, remembering the revision of what this server wrote, per resource."""
        res = await self.storage.txn(compares, success, failure)
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
        self, obj: Message, *, system: bool = False, reads: _AdmissionReads | None = None
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
        await admission.mutate(kind, obj, reads or _AdmissionReads(self))
        self._validate(kind, obj)
        return kind, obj

    async def _namespace_guard(
        self, kind: Kind, namespace: str, name: str, reads: _AdmissionReads | None
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
        for _ in range(_MAX_RETRIES):
            compares, puts = self._create_txn(kind, obj, guard)
            res = await self._txn(compares, puts, [Get(puts[0].key)])
            if res.succeeded:
                meta.resource_version = str(res.revision)
                return obj
            if res.gets[0] is not None:
                raise AlreadyExistsError(f'{kind.resource} "{meta.name}" already exists')
            guard = await self._namespace_guard(kind, meta.namespace, meta.name, None)
        raise _conflict(kind, meta.name)

    async def create(self, obj: Message, *, dry_run: bool = False, system: bool = False) -> Message:
        reads = _AdmissionReads(self)
        kind, obj = await self._prepare_create(obj, system=system, reads=reads)
        guard = await self._namespace_guard(kind, _meta(obj).namespace, _meta(obj).name, reads)
        if dry_run:
            return obj
        return await self._create_one(kind, obj, guard)

    async def batch_create(self, objs: Sequence[Message]) -> list[BatchResult]:
        """Create many objects: validated one by one, written ~100 per etcd txn. A chunk
        whose txn fails (a name taken, a namespace gone) falls back to one txn each."""
        results: list[BatchResult | None] = [None] * len(objs)
        ready: list[tuple[int, Kind, Message, Compare | None]] = []
        reads = _AdmissionReads(self)
        guards: dict[str, Compare | None] = {}
        for i, o in enumerate(objs):
            try:
                kind, prepared = await self._prepare_create(o, reads=reads)
                ns = _meta(prepared).namespace
                gkey = f"{kind.namespaced}/{ns}"
                if gkey not in guards:
                    guards[gkey] = await self._namespace_guard(
                        kind, ns, _meta(prepared).name, reads
                    )
                ready.append((i, kind, prepared, guards[gkey]))
            except ApiError as e:
                results[i] = BatchResult(None, e)
        for start in range(0, len(ready), _BATCH_CHUNK):
            chunk = ready[start : start + _BATCH_CHUNK]
            compares: list[Compare] = []
            puts: list[Put] = []
            seen: set[Compare] = set()
            for _, kind, obj, guard in chunk:
                c, p = self._create_txn(kind, obj, guard)
                compares.extend(x for x in c if x not in seen)
                seen.update(c)
                puts.extend(p)
            if len({p.key for p in puts}) == len(puts):
                res = await self._txn(compares, puts)
                if res.succeeded:
                    for i, _, obj, _ in chunk:
                        _meta(obj).resource_version = str(res.revision)
                        results[i] = BatchResult(obj, None)
                    continue
            for i, kind, obj, guard in chunk:
                try:
                    results[i] = BatchResult(await self._create_one(kind, obj, guard), None)
                except ApiError as e:
                    results[i] = BatchResult(None, e)
        return [r for r in results if r is not None]

    # ----------------------------------------------------------- get / list

    async def get(self, kind: Kind, namespace: str, name: str) -> Message:
        obj = await self.get_or_none(kind, namespace, name)
        if obj is None:
            raise _not_found(kind, name)
        return obj

    async def list(
        self, kind: Kind, namespace: str = "", label_selector: str = "", field_selector: str = ""
    ) -> tuple[list[Message], int]:
        flt = Filter(kind, namespace, label_selector, field_selector)
        items, rev = await self.storage.list(kind.prefix(flt.namespace))
        out = []
        for kv in items:
            obj = decode(kind, kv)
            if flt(obj):
                out.append(obj)
        return out, rev

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
                raise _conflict(kind, meta.name)
            meta.resource_version = str(res.revision)
            await self._after_delete(kind, meta.namespace)
            return new
        data = self._encode(new)
        if data == old_kv.value:
            meta.resource_version = str(old_kv.mod_revision)
            return new
        res = await self._txn([Compare(key, "mod", "==", old_kv.mod_revision)], [Put(key, data)])
        if not res.succeeded:
            raise _conflict(kind, meta.name)
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
            raise _not_found(kind, meta.name)
        if meta.resource_version and meta.resource_version != str(kv.mod_revision):
            raise _conflict(kind, meta.name)
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
            await admission.check_single_global_default(kind, new, _AdmissionReads(self))
        return await self._write(kind, new, kv)  # type: ignore[arg-type]

    async def batch_update(
        self, objs: Sequence[Message], *, status: bool = False
    ) -> builtins.list[BatchResult]:
        """Update many objects of one kind (kubelets' pod statuses, node leases): read
        ~100 per etcd txn, write ~100 per txn, each write guarded by its own
        mod_revision. A chunk whose txn fails falls back to one txn each, so one
        conflict fails one item. Same rules as `update` item by item."""
        results: builtins.list[BatchResult] = [BatchResult(None, None)] * len(objs)
        if not objs:
            return results
        kind = self._kind(objs[0])
        if status and not kind.has_status:
            raise NotFoundError(f"{kind.resource} have no status subresource: use Update")
        keys: builtins.list[str] = []
        for o in objs:
            if self._kind(o) is not kind:
                raise BadRequestError(
                    f"a batch update holds one kind; got {kind_of(o).kind} among {kind.kind}"
                )
            keys.append(kind.key(self._namespace(kind, _meta(o).namespace), _meta(o).name))
        kvs: builtins.list[KeyValue | None] = []
        for start in range(0, len(keys), _BATCH_CHUNK):
            res = await self._txn([], [Get(k) for k in keys[start : start + _BATCH_CHUNK]])
            kvs.extend(res.gets)
        ready: builtins.list[tuple[int, Message, KeyValue]] = []
        reads = _AdmissionReads(self)
        for i, (o, kv) in enumerate(zip(objs, kvs, strict=True)):
            try:
                new = self._prepare_update(kind, o, kv, status=status)
                if not status:
                    await admission.check_single_global_default(kind, new, reads)
            except ApiError as e:
                results[i] = BatchResult(None, e)
                continue
            assert kv is not None
            m = _meta(new)
            if (
                m.deletion_timestamp
                and not held(kind, new)
                and m.deletion_grace_period_seconds == 0
            ):
                ready.append((i, new, kv))  # finishing a deletion: one txn of its own
                continue
            data = self._encode(new)
            if data == kv.value:
                m.resource_version = str(kv.mod_revision)
                results[i] = BatchResult(new, None)
                continue
            ready.append((i, new, kv))
        plain = [r for r in ready if not _meta(r[1]).deletion_timestamp]
        single = [r for r in ready if _meta(r[1]).deletion_timestamp]
        for start in range(0, len(plain), _BATCH_CHUNK):
            chunk = plain[start : start + _BATCH_CHUNK]
            compares = [Compare(kv.key, "mod", "==", kv.mod_revision) for _, _, kv in chunk]
            puts = [Put(kv.key, self._encode(new)) for _, new, kv in chunk]
            res = await self._txn(compares, puts)
            if res.succeeded:
                for i, new, _ in chunk:
                    _meta(new).resource_version = str(res.revision)
                    results[i] = BatchResult(new, None)
            else:
                single.extend(chunk)
        for i, new, kv in single:
            try:
                results[i] = BatchResult(await self._write(kind, new, kv), None)
            except ApiError as e:
                results[i] = BatchResult(None, e)
        return results

    async def update_status(self, obj: Message) -> Message:
        return await self.update(obj, status=True)

    async def patch(
        self, kind: Kind, namespace: str, name: str, merge_patch: str, *, status: bool = False
    ) -> Message:
        """A JSON merge patch (RFC 7386), retried on conflict like GuaranteedUpdate."""
        try:
            patch = json.loads(merge_patch)
        except json.JSONDecodeError as e:
            raise BadRequestError(f"the patch is not valid JSON: {e}") from None
        if not isinstance(patch, dict):
            raise BadRequestError("a merge patch must be a JSON object")
        meta_patch = patch.get("metadata")
        # A patch that names a resourceVersion is conditional on it: no retry past a conflict.
        pinned = meta_patch.get("resourceVersion") if isinstance(meta_patch, dict) else None
        for _ in range(_MAX_RETRIES):
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
        raise _conflict(kind, name)

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
    ) -> Message:
        """Kubernetes' graceful deletion: a bound pod gets deletionTimestamp + grace and the
        kubelet finishes it; finalizers hold any object until they are removed; otherwise
        the key goes at once."""
        namespace = self._namespace(kind, namespace)
        if kind.kind == "PriorityClass" and name in admission.SYSTEM_PRIORITY_CLASSES:
            raise ForbiddenError(
                f'priorityclasses "{name}" is forbidden: this is a system priority class and may not be deleted'
            )
        if kind.kind == "Namespace" and name in admission.UNDELETABLE_NAMESPACES:
            raise ForbiddenError(
                f'namespaces "{name}" is forbidden: this namespace may not be deleted'
            )
        if grace_period_seconds is not None and grace_period_seconds < 0:
            raise InvalidError(
                kind.kind,
                name,
                [invalid("gracePeriodSeconds", grace_period_seconds, "must be >= 0")],
            )
        key = kind.key(namespace, name)
        for _ in range(_MAX_RETRIES):
            kv = await self.storage.get(key)
            if kv is None:
                raise _not_found(kind, name)
            obj = decode(kind, kv)
            meta = _meta(obj)
            if uid and meta.uid != uid:
                raise ConflictError(
                    f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.uid}"
                )
            if resource_version and resource_version != meta.resource_version:
                raise ConflictError(
                    f"Precondition failed: ResourceVersion in precondition: {resource_version}, ResourceVersion in object meta: {meta.resource_version}"
                )
            grace = self._grace(kind, obj, grace_period_seconds)
            if grace == 0 and not held(kind, obj):
                res = await self._txn([Compare(key, "mod", "==", kv.mod_revision)], [Delete(key)])
                if res.succeeded:
                    meta.resource_version = str(res.revision)
                    await self._after_delete(kind, namespace)
                    return obj
                continue
            if meta.deletion_timestamp and meta.deletion_grace_period_seconds <= grace:
                result = obj  # already terminating, no shorter grace asked for
            else:
                meta.deletion_timestamp = rfc3339(self.clock.now() + grace)
                meta.deletion_grace_period_seconds = grace
                if meta.generation > 0:
                    meta.generation += 1  # as BeforeDelete does for a graceful deletion
                if kind.kind == "Namespace":
                    obj.status.phase = "Terminating"  # type: ignore[attr-defined]
                try:
                    result = await self._write(kind, obj, kv)
                except ConflictError:
                    continue
            if kind.kind == "Namespace":
                await self._empty_namespace(name)
                return await self.get_or_none(kind, "", name) or result
            return result
        raise _conflict(kind, name)

    @staticmethod
    def _grace(kind: Kind, obj: Message, requested: int | None) -> int:
        if kind.kind != "Pod":
            return 0
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
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

    async def _empty_namespace(self, namespace: str) -> None:
        """The namespace controller's work, done by the apiserver at once: delete everything
        in a terminating namespace (grace periods and finalizers honoured), then finish it."""
        for kind in KINDS:
            if not kind.namespaced:
                continue
            items, _ = await self.storage.list(kind.prefix(namespace))
            for kv in items:
                with contextlib.suppress(NotFoundError, ConflictError):
                    await self.delete(kind, namespace, kv.key.rsplit("/", 1)[1])
        await self._finish_namespace(namespace)

    async def _after_delete(self, kind: Kind, namespace: str) -> None:
        """After an object is gone: a terminating namespace may now be empty."""
        if not kind.namespaced or not namespace:
            return
        ns_kind = BY_KIND["Namespace"]
        cache = await self.fresh_cache(ns_kind)
        entry = cache.store.get(ns_kind.key("", namespace)) if cache is not None else None
        if entry is None or _meta(entry.obj).deletion_timestamp:
            await self._finish_namespace(namespace)

    async def _finish_namespace(self, namespace: str) -> None:
        """Drop the "kubernetes" finalizer of a terminating, empty namespace (which then goes)."""
        ns_kind = BY_KIND["Namespace"]
        for _ in range(_MAX_RETRIES):
            kv = await self.storage.get(ns_kind.key("", namespace))
            if kv is None:
                return
            ns: core_pb2.Namespace = decode(ns_kind, kv)  # type: ignore[assignment]
            if not ns.metadata.deletion_timestamp:
                return
            for kind in KINDS:
                if kind.namespaced and (await self.storage.list(kind.prefix(namespace)))[0]:
                    return  # not empty yet: the last delete in it comes back here
            ns.spec.ClearField("finalizers")
            try:
                await self._write(ns_kind, ns, kv)
                return
            except ConflictError:
                continue

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
    ) -> Message:
        """Set spec.nodeName in one txn that also proves the pod is still unbound at the
        version read and, with `fencing`, that the caller's election key still exists with
        the create_revision it won it at."""
        kind = BY_KIND["Pod"]
        namespace = namespace or "default"
        if not node_name:
            raise InvalidError("Binding", name, [FieldError("target.name", "Required value")])
        if fencing is not None and (not fencing.key or fencing.create_revision <= 0):
            raise InvalidError(
                "Binding",
                name,
                [
                    invalid(
                        "fencing",
                        f"{fencing.key}@{fencing.create_revision}",
                        "a fencing token needs the election key and its create_revision (> 0)",
                    )
                ],
            )
        key = kind.key(namespace, name)
        for _ in range(_MAX_RETRIES):
            kv = await self.storage.get(key)
            if kv is None:
                raise _not_found(kind, name)
            pod: core_pb2.Pod = decode(kind, kv)  # type: ignore[assignment]
            if uid and pod.metadata.uid != uid:
                raise PreconditionError(
                    f"pod {namespace}/{name} has UID {pod.metadata.uid}, not {uid}: it was deleted and recreated"
                )
            if pod.spec.node_name:
                raise PreconditionError(
                    f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{pod.spec.node_name}"'
                )
            if pod.metadata.deletion_timestamp:
                raise PreconditionError(
                    f"pod {namespace}/{name} is being deleted, cannot be assigned to a host"
                )
            if pod.spec.scheduling_gates:
                gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
                raise PreconditionError(
                    f"pod {namespace}/{name} has non-empty .spec.schedulingGates ({gates}): "
                    "it cannot be bound until they are removed"
                )
            if resource_version and resource_version != pod.metadata.resource_version:
                raise _conflict(kind, name)
            pod.spec.node_name = node_name
            set_condition(pod, "PodScheduled", "True", self.clock.now())
            compares = [Compare(key, "mod", "==", kv.mod_revision)]
            failure: list[Get] = [Get(key)]
            if fencing is not None:
                compares.append(Compare(fencing.key, "create", "==", fencing.create_revision))
                failure.append(Get(fencing.key))
            res = await self._txn(compares, [Put(key, self._encode(pod))], failure)
            if res.succeeded:
                pod.metadata.resource_version = str(res.revision)
                return pod
            if fencing is not None:
                holder = res.gets[1]
                held = holder.create_revision if holder else 0
                if held != fencing.create_revision:
                    now = (
                        f"is held since revision {held}"
                        if held
                        else "is not held by anyone (the lease expired)"
                    )
                    raise PreconditionError(
                        f"stale leader: fencing token {fencing.key}@{fencing.create_revision} is no longer current; "
                        f"the election key {now}. Binding of pod {namespace}/{name} refused"
                    )
            if resource_version:
                current = res.gets[0]
                if current is not None and decode(kind, current).spec.node_name:  # type: ignore[attr-defined]
                    continue  # report "already assigned" on the next pass
                raise _conflict(kind, name)
        raise _conflict(kind, name)

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
        rv: int | None
        if resource_version in ("", "0"):
            rv = None
        else:
            try:
                rv = int(resource_version)
            except ValueError:
                raise BadRequestError(
                    f'invalid resourceVersion "{resource_version}": must be an integer'
                ) from None
        cache = self.caches[kind.resource]
        async for item in cache.watch(
            rv, flt, bookmark_interval=self.bookmark_interval if allow_bookmarks else None
        ):
            yield item
