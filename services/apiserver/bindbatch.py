"""BindBatch: many binds committed in few etcd txns, each with a single Bind's outcome.

Why this module exists: a scheduler binding hundreds of pods a second spends most of each
bind on one etcd round trip (read) and one txn (write). A batch takes its pods from the
pods watch cache where it has them bindable (`binding.cached`: a hint the txn's compare
checks), reads the others ~100 keys per txn, and writes ~40 binds per txn, so the
apiserver and etcd do a few round trips for the lot.

Per-pod semantics are exactly those of `binding.bind` (the module's `prepare` and
`bind_one` are shared):
* each item is resolved (default namespace, the request's fencing token) and checked
  like a single Bind; an item that cannot be bound gets the ApiError a Bind would raise;
* the items are bound in rounds: a round holds each pod key at most once and, with
  check_allocation, each node at most once (the record of a node is one key, written by
  one bind per txn), so a pod named twice, or two shared-state binds to one node, behave
  as the same binds sent one after the other, in request order;
* a round's shared-state binds hold their nodes' locks (taken in sorted order, so two
  batches cannot deadlock), as a single check_allocation Bind holds its node's;
* a chunk's txn compares every item's guards (pod still at the version read, the record
  still at the version read, the fencing token still current); when it fails as a whole
  (a pod or a record moved, a stale token, a chunk over etcd's size) nothing of it was
  written, and each of its items falls back to `bind_one`, the single Bind's own path,
  which re-reads and reports its own outcome (the fallbacks of a chunk run concurrently:
  they touch distinct pods and, under the round's locks, distinct records). An item is
  reported bound only by a txn that succeeded and wrote it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from services.api.helpers.fencing import Fencing
from services.api.machinery.errors import ApiError, PreconditionError, RequestTooLargeError
from services.api.machinery.kinds import BY_KIND
from services.apiserver import allocation
from services.apiserver.batch import BATCH_CHUNK, BATCH_CHUNK_BYTES
from services.apiserver.binding import (
    BindItem,
    Prepared,
    bind_one,
    cached,
    prepare,
    prepare_pod,
    resolve,
    what,
)
from services.apiserver.store import Store
from services.storage import Get, KeyValue, Put
from services.storage.keys import allocation_key

_PODS = BY_KIND["Pod"]
_NODES = BY_KIND["Node"]
#: Binds per write txn: a shared-state bind is 2 compares and 2 puts, so 40 of them and
#: a fencing compare stay well under etcd's default --max-txn-ops (128).
TXN_BINDS = 40
#: Gets per read txn (a shared-state bind reads 3 keys; they stay in one txn).
READ_GETS = BATCH_CHUNK - 1


@dataclass(frozen=True, slots=True)
class BindOutcome:
    """One item's outcome: the bound pod, or the exception its single Bind would raise."""

    pod: Message | None
    error: BaseException | None


async def bind_batch(store: Store, items: Sequence[BindItem]) -> list[BindOutcome]:
    """Bind every item; outcomes in request order (see the module's docstring)."""
    results: list[BindOutcome | None] = [None] * len(items)
    pending: list[tuple[int, BindItem]] = []
    for i, item in enumerate(items):
        try:
            pending.append((i, resolve(item)))
        except ApiError as e:
            results[i] = BindOutcome(None, e)
    while pending:  # each round settles at least its first item: at most len(items) rounds
        now, pending = _split(pending)
        try:
            await _round(store, now, results)
        except Exception as e:  # noqa: BLE001 - storage down: this round's items fail with it
            for i, _ in now:
                if results[i] is None:
                    results[i] = BindOutcome(None, e)
    assert all(r is not None for r in results)
    return results  # type: ignore[return-value]


def _split(
    pending: list[tuple[int, BindItem]],
) -> tuple[list[tuple[int, BindItem]], list[tuple[int, BindItem]]]:
    """This round (each pod once, each shared-state node once) and the rest, in order."""
    pods: set[tuple[str, str]] = set()
    nodes: set[str] = set()
    now, later = [], []
    for i, item in pending:
        pod = (item.namespace, item.name)
        if pod in pods or (item.check_allocation and item.node_name in nodes):
            later.append((i, item))
            continue
        pods.add(pod)
        if item.check_allocation:
            nodes.add(item.node_name)
        now.append((i, item))
    return now, later


def _gets(item: BindItem) -> list[Get]:
    key = _PODS.key(item.namespace, item.name)
    if not item.check_allocation:
        return [Get(key)]
    node = item.node_name
    return [Get(key), Get(allocation_key(node)), Get(_NODES.key("", node))]


async def _read(
    store: Store, items: list[tuple[int, BindItem]]
) -> list[tuple[KeyValue | None, ...]]:
    """Each item's pod (and with check_allocation its record and Node, in the same txn)."""
    chunks: list[list[tuple[int, BindItem]]] = [[]]
    n = 0
    for entry in items:
        k = 3 if entry[1].check_allocation else 1
        if n + k > READ_GETS:
            chunks.append([])
            n = 0
        chunks[-1].append(entry)
        n += k
    results = await asyncio.gather(
        *(store.storage.txn([], [g for _, it in c for g in _gets(it)]) for c in chunks if c)
    )
    out: list[tuple[KeyValue | None, ...]] = []
    for c, res in zip([c for c in chunks if c], results, strict=True):
        gets = list(res.gets)
        for _, it in c:
            k = 3 if it.check_allocation else 1
            out.append(tuple(gets[:k]))
            del gets[:k]
    return out


async def _round(
    store: Store, items: list[tuple[int, BindItem]], results: list[BindOutcome | None]
) -> None:
    nodes = sorted({it.node_name for _, it in items if it.check_allocation})
    async with contextlib.AsyncExitStack() as locks:
        for node in nodes:
            await locks.enter_async_context(allocation.node_lock(store, node))
        hits = {i: cached(store, item) for i, item in items}
        misses = [(i, item) for i, item in items if hits[i] is None]
        reads = dict(zip([i for i, _ in misses], await _read(store, misses), strict=True))
        ready: dict[Fencing | None, list[tuple[int, BindItem, Prepared]]] = {}
        for i, item in items:
            hit = hits[i]
            try:
                if hit is not None:
                    key = _PODS.key(item.namespace, item.name)
                    p = await prepare_pod(store, item, key, *hit)
                else:
                    p = await prepare(store, item, *reads[i])
            except ApiError as e:
                results[i] = BindOutcome(None, e)
                continue
            ready.setdefault(item.fencing, []).append((i, item, p))
        chunks = [c for group in ready.values() for c in _chunks(group)]
        done = await asyncio.gather(
            *(_commit(store, c, results) for c in chunks), return_exceptions=True
        )
        # A chunk whose txn broke (storage down) fails its own unsettled items; the
        # others' outcomes stand (each chunk is settled before the round ends).
        for chunk, err in zip(chunks, done, strict=True):
            if isinstance(err, BaseException):
                if not isinstance(err, Exception):
                    raise err
                for i, _, _ in chunk:
                    if results[i] is None:
                        results[i] = BindOutcome(None, err)


def _chunks(
    group: list[tuple[int, BindItem, Prepared]],
) -> list[list[tuple[int, BindItem, Prepared]]]:
    out: list[list[tuple[int, BindItem, Prepared]]] = []
    size = 0
    for entry in group:
        n = sum(len(op.value) for op in entry[2].ops if isinstance(op, Put))
        if not out or len(out[-1]) >= TXN_BINDS or size + n > BATCH_CHUNK_BYTES:
            out.append([])
            size = 0
        out[-1].append(entry)
        size += n
    return out


async def _commit(
    store: Store,
    chunk: list[tuple[int, BindItem, Prepared]],
    results: list[BindOutcome | None],
) -> None:
    """One txn for the chunk; when it fails, each item's own single bind."""
    first = chunk[0][1]
    try:
        res = await store.txn(
            [c for _, _, p in chunk for c in p.compares],
            [op for _, _, p in chunk for op in p.ops],
            fencing=first.fencing,
            what=what(first),
        )
        succeeded = res.succeeded
    except (PreconditionError, RequestTooLargeError):  # a stale token; a chunk too large
        succeeded = False
    if succeeded:
        for i, _, p in chunk:
            p.pod.metadata.resource_version = str(res.revision)
            results[i] = BindOutcome(p.pod, None)
        return
    # The fallbacks run at once, each with exactly its serial outcome: `_split` gave the
    # round each pod key once and each shared-state node once, and the round holds those
    # nodes' locks until every chunk is settled, so no two fallbacks read or write the same
    # pod or allocation record (fenced ones only compare the shared election key). One
    # stale cached pod costs one concurrent pass of single binds, not 40 in a row.
    done = await asyncio.gather(
        *(bind_one(store, item) for _, item, _ in chunk), return_exceptions=True
    )
    for (i, _, _), got in zip(chunk, done, strict=True):
        if isinstance(got, BaseException):
            if not isinstance(got, Exception):
                raise got
            # Its own ApiError, or (storage down) the error its single Bind would raise.
            results[i] = BindOutcome(None, got)
        else:
            results[i] = BindOutcome(got, None)
