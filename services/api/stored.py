"""Stored objects: an etcd value back into its message (upstream the storage codec's
decode and storage.NewCorruptObjError). The apiserver (reads, watch cache) and the chaos
checker (which reads etcd's history directly) decode the same way.
"""

from __future__ import annotations

from typing import Protocol

from google.protobuf.message import Message

from services.api.errors import CorruptObjectError
from services.api.kinds import Kind


class StoredValue(Protocol):
    """What `decode` reads of a stored key-value (services.storage.KeyValue is one)."""

    @property
    def key(self) -> str: ...
    @property
    def value(self) -> bytes: ...
    @property
    def mod_revision(self) -> int: ...


def decode(kind: Kind, kv: StoredValue, revision: int | None = None) -> Message:
    """The stored object at `kv`, its resourceVersion set; CorruptObjectError naming the
    key (upstream storage.NewCorruptObjError) when the value does not decode."""
    obj = kind.message()
    try:
        obj.ParseFromString(kv.value)
    except Exception as e:  # noqa: BLE001 - DecodeError, or anything a bad value raises
        raise corrupt(kind, kv, e) from None
    obj.metadata.resource_version = str(revision or kv.mod_revision)  # type: ignore[attr-defined]
    return obj


def corrupt(kind: Kind, kv: StoredValue, cause: Exception | str) -> CorruptObjectError:
    return CorruptObjectError(
        f"corrupt object: key {kv.key} (revision {kv.mod_revision}): object not decodable "
        f"as {kind.message.DESCRIPTOR.full_name}: {cause}; delete it with "
        "ignore_store_read_error_with_cluster_breaking_potential (kubera delete "
        "--ignore-store-read-error-with-cluster-breaking-potential)"
    )
