"""The registry's generic store (upstream's k8s.io/apiserver/pkg/registry/generic/registry
Store): what every verb shares, below all of them.

Every write is one etcd txn guarded by a compare, so a concurrent writer can never be
overwritten: create compares create_revision == 0 (and that the namespace exists),
update and delete compare mod_revision == the resourceVersion the writer read, bind
additionally compares the election key's create_revision (the fencing token). Values
are serialized protobuf without resourceVersion, which is always the key's mod_revision.

Why this module exists: the verb modules (create, update, read, deletion, binding, batch,
allocation, admission_reads) each take a :class:`Store` and write through its guarded
txn (`Store.txn`, which adds the fencing compare and remembers this server's writes for
read-your-writes caches), encode with `Store.encode`, resolve kinds and namespaces with
`Store.kind` / `Store.namespace`, validate with `Store.validate`, and write an update
(or finish a deletion) with `Store.write`. None of them imports the facade
(registry.ApiServer), which composes them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from google.protobuf.message import Message

from services.api import validation
from services.api.machinery import codec
from services.api.machinery.errors import (
    BadRequestError,
    FieldError,
    InvalidError,
    RequestTooLargeError,
)
from services.api.machinery.kinds import Kind, UnknownKindError, kind_of
from services.apiserver import fencing as fencing_mod
from services.apiserver.objects import conflict, held
from services.apiserver.objects import meta as _meta
from services.apiserver.serviceips import ServiceNetwork, release_ops
from services.apiserver.watchcache import WatchCache, decode
from services.clock import Clock
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
from services.storage.keys import REGISTRY_PREFIX

__all__ = ["Store"]


class Store:
    """The storage, the watch caches and the guarded-write primitives the verbs share."""

    def __init__(
        self,
        storage: Storage,
        caches: dict[str, WatchCache],
        *,
        clock: Clock,
        new_uid: Callable[[], str],
        service_network: ServiceNetwork | None = None,
        disable_admission_plugins: frozenset[str] = frozenset(),
    ) -> None:
        self.storage = storage
        #: Admission plugins that do not run (ApiServerConfig.disable_admission_plugins).
        self.disable_admission_plugins = disable_admission_plugins
        #: The service CIDR and node port range services are allocated from.
        self.service_network = service_network or ServiceNetwork()
        #: The watch cache of each resource.
        self.caches = caches
        self.clock = clock
        self.new_uid = new_uid
        #: The latest revision this server wrote, per resource (for read-your-writes from caches).
        self.written: dict[str, int] = {}

    async def txn(self, compares, success, failure=(), *, fencing=None, what=""):  # type: ignore[no-untyped-def]
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
            if not isinstance(op, Get) and op.key.startswith(REGISTRY_PREFIX):
                resource = op.key.split("/", 3)[2]
                if self.written.get(resource, 0) < res.revision:
                    self.written[resource] = res.revision
        return res

    async def fresh_cache(self, kind: Kind) -> WatchCache | None:
        """The kind's watch cache once it has seen this server's latest write of the kind;
        None if it has not started or does not catch up within a few seconds."""
        cache = self.caches[kind.resource]
        if not cache.started:
            return None
        need = self.written.get(kind.resource, 0)
        if cache.revision >= need or await cache.wait_revision(need, 5.0):
            return cache
        return None

    @staticmethod
    def kind(obj: Message) -> Kind:
        """The object's kind; BadRequestError for a message that is none of ours."""
        try:
            return kind_of(obj)
        except UnknownKindError as e:
            raise BadRequestError(str(e)) from None

    @staticmethod
    def namespace(kind: Kind, namespace: str) -> str:
        """The namespace an object of `kind` lives in: "" when cluster-scoped, else
        `namespace` or "default"."""
        if not kind.namespaced:
            return ""
        return namespace or "default"

    @staticmethod
    def encode(obj: Message) -> bytes:
        """The stored value: deterministic protobuf without resourceVersion."""
        meta = _meta(obj)
        rv = meta.resource_version
        meta.resource_version = ""
        try:
            return obj.SerializeToString(deterministic=True)
        finally:
            meta.resource_version = rv

    @staticmethod
    def decode(kind: Kind, kv: KeyValue) -> Message:
        """The stored object at `kv`, its resourceVersion the key's mod_revision."""
        return decode(kind, kv)

    async def get_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None:
        kv = await self.storage.get(kind.key(self.namespace(kind, namespace), name))
        return decode(kind, kv) if kv else None

    @staticmethod
    def validate(kind: Kind, obj: Message, old: Message | None = None) -> None:
        """Canonicalize quantities and empty structs, then validate a create (`old` None) or
        an update; InvalidError listing every field error. (`old` is compared without its empty
        structs too: one stored before the codec read `{}` as unset may still hold some.)"""
        errors: list[FieldError] = codec.canonicalize_quantities(obj)
        codec.clear_empty_structs(obj)
        if old is not None and codec.clear_empty_structs(old, dry_run=True):
            old = codec.clone(old)
            codec.clear_empty_structs(old)
        if not errors:
            errors = (
                validation.validate_create(kind.name, obj)
                if old is None
                else validation.validate_update(kind.name, obj, old)
            )
        if errors:
            raise InvalidError(kind.kind, _meta(obj).name or _meta(obj).generate_name, errors)

    async def write(
        self,
        kind: Kind,
        new: Message,
        old_kv: KeyValue,
        *,
        compares: Sequence[Compare] = (),
        ops: Sequence[Put | Delete] = (),
    ) -> Message:
        """Write `new` over the version `old_kv`, or delete it when its finalizers and
        grace period are all done; `compares` and `ops` join the write's txn (a service's
        allocations). Raises ConflictError if the txn fails."""
        meta = _meta(new)
        key = kind.key(meta.namespace, meta.name)
        if (
            meta.deletion_timestamp
            and not held(kind, new)
            and meta.deletion_grace_period_seconds == 0
        ):
            res = await self.txn(
                [Compare(key, "mod", "==", old_kv.mod_revision)],
                [Delete(key), *release_ops(kind, new)],
            )
            if not res.succeeded:
                raise conflict(kind, meta.name)
            meta.resource_version = str(res.revision)
            return new
        data = self.encode(new)
        if data == old_kv.value and not ops:
            meta.resource_version = str(old_kv.mod_revision)
            return new
        res = await self.txn(
            [Compare(key, "mod", "==", old_kv.mod_revision), *compares], [Put(key, data), *ops]
        )
        if not res.succeeded:
            raise conflict(kind, meta.name)
        meta.resource_version = str(res.revision)
        return new
