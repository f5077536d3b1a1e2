"""The election lock: one etcd key held under an etcd lease, in client-go's resourcelock shape.

The key's value is the holder's identity. Its create_revision is the fencing token: it is
fixed when a campaign creates the key and stays the same for as long as the key exists, so
the apiserver's bind txn can compare it and a deposed leader's writes fail.

    campaign  txn(create(key) == 0            → put(key, identity, lease=L))
    renew     txn(create(key) == my_revision  → put(key, identity, lease=L'))   L' fresh
    release   txn(create(key) == my_revision  → delete(key)); revoke(L)
    expire    txn(create(key) == seen.create ∧ mod(key) == seen.mod → delete(key))

Why renewal re-puts under a fresh lease instead of keeping one lease alive: the Storage
interface has grant/revoke but no keepalive, and adding one would widen the interface every
backend (and every fake) must implement. A put keeps the key's create_revision while the key
exists, so the token survives the renewal; the txn guard makes a renewal by anyone but the
holder of this term fail instead of resurrecting the key. The superseded lease is left to
expire on its own (nothing is attached to it any more: etcd detaches a key from its old lease
on put) rather than revoked, because MemoryStorage does not detach and would delete the key.

Why `expire` exists: it is client-go's takeover rule (a standby that has seen the record
unchanged for a whole lease_duration may take it) and the backstop for stores whose leases do
not run out on their own (MemoryStorage never expires a lease). On etcd the lease normally
expires first. The guard on mod_revision means a key renewed since it was seen is left alone.

Records after a write are built from the txn's revision rather than read back with a Get in
the same txn: etcd applies a txn's ops in order, but MemoryStorage answers Gets from the state
before the txn's writes.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from typing import Protocol

from services.storage import Compare, Delete, Get, KeyValue, Put, Storage

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class LockRecord:
    """The election key as last read or written."""

    key: str
    holder: str
    #: The fencing token of the term: set by the campaign that created the key.
    create_revision: int
    #: Moves on every renewal; a standby measures the holder's silence by it.
    mod_revision: int
    lease: int


class Lock(Protocol):
    """What the elector needs from a lock (client-go's resourcelock.Interface, on revisions)."""

    @property
    def key(self) -> str: ...

    async def get(self) -> LockRecord | None:
        """The current holder, or None when nobody holds the lock."""
        ...

    async def create(self, identity: str) -> tuple[LockRecord | None, LockRecord | None]:
        """Campaign: (ours, None) when we won, else (None, the holder or None)."""
        ...

    async def renew(self, held: LockRecord) -> LockRecord | None:
        """Extend our term; None when the term is over (the key is gone or someone else's)."""
        ...

    async def release(self, held: LockRecord) -> bool:
        """Give the lock up if it is still ours; True when we deleted it."""
        ...

    async def expire(self, seen: LockRecord) -> bool:
        """Delete a holder's key that has not changed since `seen`; True when deleted."""
        ...


def _record(kv: KeyValue) -> LockRecord:
    return LockRecord(
        kv.key, kv.value.decode(errors="replace"), kv.create_revision, kv.mod_revision, kv.lease
    )


class StorageLock:
    """The lock on kubera's Storage (etcd, or the in-memory fake in tests)."""

    def __init__(self, storage: Storage, key: str, *, lease_duration: float) -> None:
        self._storage = storage
        self._key = key
        #: etcd lease TTLs are whole seconds; round up so the key outlives lease_duration.
        self._ttl = max(1, math.ceil(lease_duration))

    @property
    def key(self) -> str:
        return self._key

    async def get(self) -> LockRecord | None:
        kv = await self._storage.get(self._key)
        return _record(kv) if kv else None

    async def create(self, identity: str) -> tuple[LockRecord | None, LockRecord | None]:
        lease = await self._storage.grant_lease(self._ttl)
        res = await self._storage.txn(
            [Compare(self._key, "create", "==", 0)],
            [Put(self._key, identity.encode(), lease)],
            [Get(self._key)],
        )
        if res.succeeded:
            # The put created the key, so its create and mod revisions are the txn's.
            return LockRecord(self._key, identity, res.revision, res.revision, lease), None
        await self._revoke(lease)
        current = res.gets[0] if res.gets else None
        return None, (_record(current) if current else None)

    async def renew(self, held: LockRecord) -> LockRecord | None:
        lease = await self._storage.grant_lease(self._ttl)
        res = await self._storage.txn(
            [Compare(self._key, "create", "==", held.create_revision)],
            [Put(self._key, held.holder.encode(), lease)],
        )
        if res.succeeded:
            return LockRecord(self._key, held.holder, held.create_revision, res.revision, lease)
        await self._revoke(lease)
        return None

    async def release(self, held: LockRecord) -> bool:
        res = await self._storage.txn(
            [Compare(self._key, "create", "==", held.create_revision)], [Delete(self._key)]
        )
        if res.succeeded:
            await self._revoke(held.lease)
        return res.succeeded

    async def expire(self, seen: LockRecord) -> bool:
        res = await self._storage.txn(
            [
                Compare(self._key, "create", "==", seen.create_revision),
                Compare(self._key, "mod", "==", seen.mod_revision),
            ],
            [Delete(self._key)],
        )
        return res.succeeded

    async def wait_change(self, after_revision: int) -> LockRecord | None:
        """The key as it stands after its first change past `after_revision`: the record
        written, or None when it was deleted (a watch, so standbys notice a released or
        expired key at once, and learn of renewals without reading the key)."""
        async for batch in self._storage.watch(self._key, after_revision + 1):
            mine = [ev for ev in batch.events if ev.kv.key == self._key]
            if mine:
                last = mine[-1]  # a batch is in revision order: the last is the newest
                return None if last.type == "DELETE" else _record(last.kv)
        raise ConnectionError(f"the watch on {self._key} ended")

    async def _revoke(self, lease: int) -> None:
        # Hygiene only: an unrevoked lease runs out by itself within its TTL.
        try:
            await self._storage.revoke_lease(lease)
        except Exception as e:  # noqa: BLE001 - best effort, logged
            log.debug("revoking lease %x of %s failed: %s", lease, self._key, e)
