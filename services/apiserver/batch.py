"""Batch create and batch update: many objects in few etcd txns.

Why this module exists: kubelets report thousands of pod statuses and node leases, and
workload controllers create pods by the hundred; one txn per object would be the
bottleneck. Items are admitted and validated one by one with the same rules as
``create.create`` / ``update.update``, then written ~100 per txn (under etcd's
--max-txn-ops). A chunk whose txn fails falls back to one txn per item, so one conflict
or taken name fails that item alone. Each item gets its own :class:`BatchResult`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from google.protobuf.message import Message

from services.api.machinery.errors import (
    ApiError,
    BadRequestError,
    NotFoundError,
    RequestTooLargeError,
)
from services.api.machinery.kinds import Kind, kind_of
from services.apiserver import admission, quota
from services.apiserver.admission_reads import AdmissionReads
from services.apiserver.create import (
    create_allocating,
    create_txn,
    namespace_guard,
    prepare_create,
)
from services.apiserver.objects import held
from services.apiserver.objects import meta as _meta
from services.apiserver.store import Store
from services.apiserver.update import prepare_update, update
from services.storage import Compare, Get, KeyValue, Put, TxnResult

BATCH_CHUNK = 100  # etcd's default --max-txn-ops is 128
#: Bytes of values per txn: etcd refuses a request over --max-request-bytes (1.5 MiB by
#: default) outright, so a chunk of large objects is cut short of it.
BATCH_CHUNK_BYTES = 1024 * 1024

T = TypeVar("T")


def chunks(items: Sequence[T], size: Callable[[T], int]) -> Iterator[Sequence[T]]:
    """`items` in order, cut into runs of at most BATCH_CHUNK items and BATCH_CHUNK_BYTES
    (by `size`); an item over the byte budget alone goes alone."""
    start, total = 0, 0
    for i, item in enumerate(items):
        n = size(item)
        if i > start and (i - start >= BATCH_CHUNK or total + n > BATCH_CHUNK_BYTES):
            yield items[start:i]
            start, total = i, 0
        total += n
    if start < len(items):
        yield items[start:]


@dataclass(frozen=True)
class BatchResult:
    """One item's outcome: the stored object, or why it was refused."""

    obj: Message | None
    error: ApiError | None


async def _chunk_txn(store: Store, compares: list[Compare], puts: list[Put]) -> TxnResult | None:
    """One chunk's txn; None when etcd finds it too large (one item over etcd's limit), so
    the chunk falls back to one txn per item and only that item fails."""
    try:
        return await store.txn(compares, puts)
    except RequestTooLargeError:
        return None


async def batch_create(store: Store, objs: Sequence[Message]) -> list[BatchResult]:
    """Create many objects: validated one by one, written ~100 per etcd txn. A chunk
    whose txn fails (a name taken, a namespace gone) falls back to one txn each."""
    results: list[BatchResult | None] = [None] * len(objs)
    ready: list[tuple[int, Kind, Message, Compare | None]] = []
    reads = AdmissionReads(store)
    guards: dict[str, Compare | None] = {}
    for i, o in enumerate(objs):
        try:
            kind, prepared = await prepare_create(store, o, reads=reads)
            ns = _meta(prepared).namespace
            gkey = f"{kind.namespaced}/{ns}"
            if gkey not in guards:
                guards[gkey] = await namespace_guard(store, kind, ns, _meta(prepared).name, reads)
            await quota.admit(store, kind, prepared, reads)
            ready.append((i, kind, prepared, guards[gkey]))
        except ApiError as e:
            results[i] = BatchResult(None, e)
    for chunk in chunks(ready, lambda r: r[2].ByteSize()):
        compares: list[Compare] = []
        puts: list[Put] = []
        seen: set[Compare] = set()
        for _, kind, obj, guard in chunk:
            c, p = create_txn(store, kind, obj, guard)
            compares.extend(x for x in c if x not in seen)
            seen.update(c)
            puts.extend(p)
        if len({p.key for p in puts}) == len(puts):
            res = await _chunk_txn(store, compares, puts)
            if res is not None and res.succeeded:
                for i, _, obj, _ in chunk:
                    _meta(obj).resource_version = str(res.revision)
                    results[i] = BatchResult(obj, None)
                continue
        for i, kind, obj, guard in chunk:
            try:
                # a service's cluster IP or node port, picked by another item of the
                # batch or another create: picked again, as a single create does
                created = await create_allocating(store, kind, obj, guard, asked=objs[i])
                results[i] = BatchResult(created, None)
            except ApiError as e:
                results[i] = BatchResult(None, e)
    return [r for r in results if r is not None]


async def batch_update(
    store: Store, objs: Sequence[Message], *, status: bool = False
) -> list[BatchResult]:
    """Update many objects of one kind (kubelets' pod statuses, node leases): read
    ~100 per etcd txn, write ~100 per txn, each write guarded by its own
    mod_revision. A chunk whose txn fails falls back to one txn each, so one
    conflict fails one item. Same rules as `update.update` item by item."""
    results: list[BatchResult] = [BatchResult(None, None)] * len(objs)
    if not objs:
        return results
    kind = store.kind(objs[0])
    if status and not kind.has_status:
        raise NotFoundError(f"{kind.resource} have no status subresource: use Update")
    keys: list[str] = []
    for o in objs:
        if store.kind(o) is not kind:
            raise BadRequestError(
                f"a batch update holds one kind; got {kind_of(o).kind} among {kind.kind}"
            )
        keys.append(kind.key(store.namespace(kind, _meta(o).namespace), _meta(o).name))
    if kind.kind in ("Service", "PersistentVolumeClaim") and not status:
        # a service's update allocates and releases in its own txn (update._update_service);
        # both kinds' updates are charged to quota and bounded by limit ranges
        for i, o in enumerate(objs):
            try:
                results[i] = BatchResult(await update(store, o), None)
            except ApiError as e:
                results[i] = BatchResult(None, e)
        return results
    kvs: list[KeyValue | None] = []
    for start in range(0, len(keys), BATCH_CHUNK):
        res = await store.txn([], [Get(k) for k in keys[start : start + BATCH_CHUNK]])
        kvs.extend(res.gets)
    ready: list[tuple[int, Message, KeyValue]] = []
    reads = AdmissionReads(store)
    for i, (o, kv) in enumerate(zip(objs, kvs, strict=True)):
        try:
            new = prepare_update(store, kind, o, kv, status=status)
            if not status:
                await admission.check_single_global_default(kind, new, reads)
        except ApiError as e:
            results[i] = BatchResult(None, e)
            continue
        assert kv is not None
        m = _meta(new)
        if m.deletion_timestamp and not held(kind, new) and m.deletion_grace_period_seconds == 0:
            ready.append((i, new, kv))  # finishing a deletion: one txn of its own
            continue
        data = store.encode(new)
        if data == kv.value:
            m.resource_version = str(kv.mod_revision)
            results[i] = BatchResult(new, None)
            continue
        ready.append((i, new, kv))
    plain = [r for r in ready if not _meta(r[1]).deletion_timestamp]
    single = [r for r in ready if _meta(r[1]).deletion_timestamp]
    for chunk in chunks(plain, lambda r: r[1].ByteSize()):
        compares = [Compare(kv.key, "mod", "==", kv.mod_revision) for _, _, kv in chunk]
        puts = [Put(kv.key, store.encode(new)) for _, new, kv in chunk]
        # An object named twice: one txn each, so the second meets the first's write
        # (a conflict, as two updates from the same resourceVersion would).
        distinct = len({p.key for p in puts}) == len(puts)
        res = await _chunk_txn(store, compares, puts) if distinct else None
        if res is not None and res.succeeded:
            for i, new, _ in chunk:
                _meta(new).resource_version = str(res.revision)
                results[i] = BatchResult(new, None)
        else:
            single.extend(chunk)
    for i, new, kv in single:
        try:
            results[i] = BatchResult(await store.write(kind, new, kv), None)
        except ApiError as e:
            results[i] = BatchResult(None, e)
    return results
