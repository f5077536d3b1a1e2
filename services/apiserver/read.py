"""Get, list and watch: the reads of the registry.

Why this module exists: reads share nothing with the write paths but the
:class:`~services.apiserver.store.Store` (storage, decoding, namespace resolution, the
watch caches). A list does not fail for everyone when one stored value is corrupt
(`list_objects`); a watch is served from the kind's watch cache.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass

from google.protobuf.message import Message

from services.api.machinery.errors import (
    BadRequestError,
    CorruptObjectError,
    UnavailableError,
    invalid,
)
from services.api.machinery.kinds import Kind
from services.api.machinery.listoptions import LIST_ALL, ListOptions
from services.apiserver.objects import Filter, not_found
from services.apiserver.store import Store
from services.apiserver.watchcache import Entry


@dataclass(frozen=True, slots=True)
class Listed:
    """A list's answer: the objects, the revision read at, and one warning per stored
    value left out because it does not decode (naming its key)."""

    items: list[Message]
    revision: int
    warnings: list[str]


async def get(store: Store, kind: Kind, namespace: str, name: str) -> Message:
    obj = await store.get_or_none(kind, namespace, name)
    if obj is None:
        raise not_found(kind, name)
    return obj


async def list_objects(
    store: Store, kind: Kind, namespace: str = "", options: ListOptions = LIST_ALL
) -> Listed:
    """A list that does not fail for everyone when one stored value is corrupt: the
    good objects, and a warning naming each corrupt key (upstream fails the whole
    list with "unable to transform or decode N objects"; kubera answers with the rest
    and says which, as kubectl shows warnings)."""
    flt = Filter(kind, namespace, options)
    items, rev = await store.storage.list(kind.prefix(flt.namespace))
    out = []
    warnings = []
    for kv in items:
        try:
            obj = store.decode(kind, kv)
        except CorruptObjectError as e:
            warnings.append(f"{e.message} (left out of the list)")
            continue
        if flt(obj):
            out.append(obj)
    return Listed(out, rev, warnings)


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a paged list: its objects, the revision every page of the list is
    read at, the key the next page starts after ("" on the last page) and how many
    objects the later pages hold."""

    items: list[Message]
    revision: int
    last_key: str = ""
    remaining: int = 0


async def list_page(
    store: Store,
    kind: Kind,
    namespace: str,
    options: ListOptions,
    *,
    revision: int = 0,
    after: str = "",
) -> Page:
    """A consistent paged list (upstream's limit/continue): the first page (`revision`
    0) is read from the kind's watch cache at its current revision, once the cache has
    seen this server's writes; later pages at that same revision (`WatchCache.state_at`,
    GoneError once it has left the cache's window), keys after `after`, in key order.
    Pages hold `options.limit` objects (0: one page holds them all)."""
    flt = Filter(kind, namespace, options)
    limit = options.limit
    cache = await store.fresh_cache(kind)
    if cache is None:
        raise UnavailableError(f"the {kind.resource} cache is not ready; try again")
    rev = revision or cache.revision
    state = cache.state_at(rev)
    prefix = kind.prefix(flt.namespace)
    keys = sorted(k for k in state if k.startswith(prefix) and k > after)
    items: list[Message] = []
    last = ""
    for i, key in enumerate(keys):
        obj = state[key].obj
        if not flt(obj):
            continue
        if limit and len(items) == limit:
            rest = sum(1 for k in keys[i:] if flt(state[k].obj))
            return Page(items, rev, last, rest)
        items.append(obj)
        last = key
    return Page(items, rev)


async def watch(
    store: Store,
    kind: Kind,
    *,
    namespace: str = "",
    options: ListOptions = LIST_ALL,
    bookmark_interval: float | None = None,
) -> AsyncIterator[tuple[str, Entry]]:
    """The kind's watch cache's events from `options.resource_version` that match the
    selectors; with `bookmark_interval`, a BOOKMARK that often when nothing else is sent."""
    flt = Filter(kind, namespace, options)
    rv = parse_resource_version(options.resource_version)
    cache = store.caches[kind.resource]
    async for item in cache.watch(rv, flt, bookmark_interval=bookmark_interval):
        yield item


async def watch_batches(
    store: Store,
    kind: Kind,
    *,
    namespace: str = "",
    options: ListOptions = LIST_ALL,
    bookmark_interval: float | None = None,
) -> AsyncGenerator[list[tuple[str, Entry]], None]:
    """`watch`'s events in lists that end at revision boundaries
    (`WatchCache.watch_batches`)."""
    flt = Filter(kind, namespace, options)
    rv = parse_resource_version(options.resource_version)
    cache = store.caches[kind.resource]
    async with contextlib.aclosing(
        cache.watch_batches(rv, flt, bookmark_interval=bookmark_interval)
    ) as batches:
        async for batch in batches:
            yield batch


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
