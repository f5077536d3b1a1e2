"""An in-memory MVCC store with etcd's semantics, for unit tests only.

It keeps the full history since the last compaction so watches can start from any
kept revision, exactly as etcd does; it is not durable and serves one process.
"""

from __future__ import annotations

import asyncio
import bisect
from collections.abc import AsyncIterator, Sequence

from services.storage import (
    CompactedError,
    Compare,
    Delete,
    Event,
    Get,
    KeyValue,
    Op,
    Put,
    TxnResult,
    WatchBatch,
    check_writes_distinct,
    compare_ok,
)


class MemoryStorage:
    def __init__(self) -> None:
        self._data: dict[str, KeyValue] = {}
        self._keys: list[str] = []
        self._rev = 1  # etcd starts at revision 1
        self._compacted = 0
        self._history: list[Event] = []  # events with mod_revision > _compacted
        self._changed = asyncio.Condition()
        self._next_lease = 1
        self._leases: dict[int, set[str]] = {}

    async def get(self, key: str) -> KeyValue | None:
        return self._data.get(key)

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        i = bisect.bisect_left(self._keys, prefix)
        out = []
        while i < len(self._keys) and self._keys[i].startswith(prefix):
            out.append(self._data[self._keys[i]])
            i += 1
        return out, self._rev

    async def txn(
        self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult:
        check_writes_distinct(success)
        check_writes_distinct(failure)
        ok = all(compare_ok(self._data.get(c.key), c) for c in compares)
        ops = success if ok else failure
        writes = [op for op in ops if not isinstance(op, Get)]
        writing = bool(writes) and any(isinstance(op, Put) or op.key in self._data for op in writes)
        if writing:
            self._rev += 1
        # Ops run in order, as in etcd: a Get after a Put of the same txn sees the Put.
        gets: list[KeyValue | None] = []
        events: list[Event] = []
        for op in ops:
            prev = self._data.get(op.key)
            if isinstance(op, Get):
                gets.append(prev)
            elif isinstance(op, Put):
                kv = KeyValue(
                    op.key,
                    op.value,
                    prev.create_revision if prev else self._rev,
                    self._rev,
                    prev.version + 1 if prev else 1,
                    op.lease,
                )
                if prev is None:
                    bisect.insort(self._keys, op.key)
                elif prev.lease and prev.lease != op.lease:
                    self._leases.get(prev.lease, set()).discard(op.key)  # a put moves the key
                self._data[op.key] = kv
                if op.lease:
                    self._leases.setdefault(op.lease, set()).add(op.key)
                events.append(Event("PUT", kv, prev))
            elif isinstance(op, Delete) and prev is not None:
                del self._data[op.key]
                self._keys.pop(bisect.bisect_left(self._keys, op.key))
                if prev.lease:
                    self._leases.get(prev.lease, set()).discard(op.key)
                events.append(Event("DELETE", KeyValue(op.key, b"", 0, self._rev, 0), prev))
        if writing:
            self._history.extend(events)
            async with self._changed:
                self._changed.notify_all()
        return TxnResult(ok, self._rev, tuple(gets))

    async def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchBatch]:
        if start_revision and start_revision <= self._compacted:
            raise CompactedError(self._compacted)
        next_rev = start_revision or self._rev + 1
        while True:
            i = bisect.bisect_left([e.kv.mod_revision for e in self._history], next_rev)
            batch = tuple(e for e in self._history[i:] if e.kv.key.startswith(prefix))
            upto = self._rev
            if batch:
                yield WatchBatch(batch, upto)
            next_rev = upto + 1

            def advanced(n: int = next_rev) -> bool:
                return self._rev >= n

            async with self._changed:
                await self._changed.wait_for(advanced)

    async def revision(self) -> int:
        return self._rev

    async def compact(self, revision: int) -> None:
        self._compacted = max(self._compacted, revision)
        self._history = [e for e in self._history if e.kv.mod_revision > self._compacted]

    async def grant_lease(self, ttl: int) -> int:
        lease = self._next_lease
        self._next_lease += 1
        self._leases[lease] = set()
        return lease

    async def revoke_lease(self, lease_id: int) -> None:
        keys = self._leases.pop(lease_id, set())
        await self.txn([], [Delete(k) for k in sorted(keys) if k in self._data])

    async def close(self) -> None:
        return None
