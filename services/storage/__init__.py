"""The one storage interface every etcd access goes through.

`EtcdStorage` (services/storage/etcd.py) is the real thing; `MemoryStorage`
(services/storage/memory.py) implements the same MVCC semantics in memory for unit
tests. Both speak in etcd's terms: revisions, create/mod revisions, compare-and-swap
transactions and watches from a revision, so the apiserver's logic is the same on both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol


@dataclass(frozen=True, slots=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int
    version: int
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Compare:
    """One txn guard: ``target(key) op value``; a missing key has revisions and version 0."""

    key: str
    target: Literal["create", "mod", "version", "value"]
    op: Literal["==", "!=", "<", ">"]
    value: int | bytes


@dataclass(frozen=True, slots=True)
class Put:
    key: str
    value: bytes
    lease: int = 0


@dataclass(frozen=True, slots=True)
class Delete:
    key: str


@dataclass(frozen=True, slots=True)
class Get:
    key: str


Op = Put | Delete | Get


@dataclass(frozen=True, slots=True)
class TxnResult:
    succeeded: bool
    #: The store's revision after the txn (the mod_revision of anything it wrote).
    revision: int
    #: One entry per Get op of the branch that ran: the key's value, or None.
    gets: tuple[KeyValue | None, ...] = ()


@dataclass(frozen=True, slots=True)
class Event:
    type: Literal["PUT", "DELETE"]
    #: For DELETE: the key, an empty value and mod_revision = the delete's revision.
    kv: KeyValue
    prev: KeyValue | None


@dataclass(frozen=True, slots=True)
class WatchBatch:
    """Events of one or more revisions, in order; empty with a revision = progress notify."""

    events: tuple[Event, ...]
    revision: int


class CompactedError(Exception):
    """The watch's start revision was compacted away; the caller must relist."""

    def __init__(self, compact_revision: int) -> None:
        super().__init__(
            f"required revision has been compacted (compacted up to {compact_revision})"
        )
        self.compact_revision = compact_revision


class StorageUnavailableError(Exception):
    """The store cannot be reached; the operation may be retried."""


class StorageRequestTooLargeError(Exception):
    """The store refused a request as too large (etcd's --max-request-bytes, 1.5 MiB by
    default); retrying will not help."""


def check_writes_distinct(ops: Sequence[Op]) -> None:
    """etcd refuses a txn branch that writes one key twice ("duplicate key given in txn
    request", checked on the request, whichever branch runs): the in-memory fake refuses
    it the same way, so a caller's bug shows in unit tests, not only on etcd."""
    keys = [op.key for op in ops if not isinstance(op, Get)]
    if len(set(keys)) != len(keys):
        raise ValueError("etcdserver: duplicate key given in txn request")


def compare_ok(kv: KeyValue | None, c: Compare) -> bool:
    """Evaluate one compare the way etcd does (a missing key reads as zeros / empty)."""
    if c.target == "value":
        actual: int | bytes = kv.value if kv else b""
    else:
        attr = {"create": "create_revision", "mod": "mod_revision", "version": "version"}[c.target]
        actual = getattr(kv, attr) if kv else 0
    want = c.value
    if c.op == "==":
        return actual == want
    if c.op == "!=":
        return actual != want
    if c.op == "<":
        return actual < want  # type: ignore[operator]
    return actual > want  # type: ignore[operator]


def prefix_end(prefix: str) -> str:
    """The first key after every key that starts with `prefix` (etcd's range_end)."""
    b = bytearray(prefix.encode())
    while b:
        if b[-1] < 0xFF:
            b[-1] += 1
            return bytes(b).decode("latin-1")
        b.pop()
    return "\0"


class Storage(Protocol):
    async def get(self, key: str) -> KeyValue | None: ...

    async def list(self, prefix: str) -> tuple[list[KeyValue], int]:
        """Every key under `prefix` in key order, and the revision they were read at."""
        ...

    async def txn(
        self, compares: Sequence[Compare], success: Sequence[Op], failure: Sequence[Op] = ()
    ) -> TxnResult: ...

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[WatchBatch]:
        """Changes under `prefix` from `start_revision` (inclusive) on, with progress
        notifications; raises CompactedError when that revision was compacted."""
        ...

    async def revision(self) -> int: ...

    async def compact(self, revision: int) -> None: ...

    async def grant_lease(self, ttl: int) -> int: ...

    async def revoke_lease(self, lease_id: int) -> None: ...

    async def close(self) -> None: ...
