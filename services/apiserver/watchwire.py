"""The WatchBatches RPC's messages written as bytes, from the watch cache's serialized
objects (`Entry.data`), as protobuf would write the same `WatchEventBatch`.

Why: a watch event's object is serialized once per version however many watchers send
it (services/apiserver/watchcache.py), but building a `WatchEvent` and an `Any` around
those bytes for every watcher, then serializing the batch, copied each object twice more
and cost more than the rest of the fan-out. Here each message is one `b"".join` of the
shared bytes and a few tags: byte for byte what `WatchEventBatch.SerializeToString()`
gives (fields in number order, proto3's empty strings left out, the always-set `object`
written even when empty), so a client cannot tell. The server sends these bytes as they
are (`RAW_METHODS` in services/apiserver/server.py).

    WatchEventBatch { repeated WatchEvent events = 1; }
    WatchEvent      { string type = 1; google.protobuf.Any object = 2; }
    Any             { string type_url = 1; bytes value = 2; }
"""

from __future__ import annotations

from collections.abc import Iterable

_EVENTS = b"\x0a"  # field 1, length-delimited: WatchEventBatch.events
_TYPE = b"\x0a"  # field 1: WatchEvent.type
_OBJECT = b"\x12"  # field 2: WatchEvent.object
_TYPE_URL = b"\x0a"  # field 1: Any.type_url
_VALUE = b"\x12"  # field 2: Any.value

#: Varints of small lengths (every event type, most type URLs).
_SMALL = [bytes([n]) for n in range(128)]


def varint(n: int) -> bytes:
    """`n` (>= 0) as a protobuf base-128 varint."""
    if n < 128:
        return _SMALL[n]
    out = bytearray()
    while n >= 128:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _string(tag: bytes, value: bytes) -> bytes:
    """A length-delimited field, or nothing when empty (proto3 leaves it out)."""
    return tag + varint(len(value)) + value if value else b""


def any_bytes(type_url: str, value: bytes) -> bytes:
    """A serialized `Any(type_url=type_url, value=value)`."""
    return _string(_TYPE_URL, type_url.encode()) + _string(_VALUE, value)


def event_batch(type_url: str, events: Iterable[tuple[str, bytes]]) -> bytes:
    """A serialized `WatchEventBatch` of (type, serialized object) events, each object
    packed in an `Any` of `type_url`."""
    head = _string(_TYPE_URL, type_url.encode())
    parts: list[bytes] = []
    for event_type, data in events:
        typ = _string(_TYPE, event_type.encode())
        value_len = len(data)
        any_len = len(head) + (1 + len(varint(value_len)) + value_len if value_len else 0)
        event_len = len(typ) + 1 + len(varint(any_len)) + any_len
        parts += (_EVENTS, varint(event_len), typ, _OBJECT, varint(any_len), head)
        if value_len:
            parts += (_VALUE, varint(value_len), data)
    return b"".join(parts)
