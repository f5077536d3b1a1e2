"""What admission plugins read, served from the watch caches with read-your-writes.

Why this module exists: admission (``admission.mutate``, the single-global-default check)
needs PriorityClasses, RuntimeClasses and Namespaces for every create and update, and
both the single-object paths (``create``, ``update``) and the batch paths (``batch``) hand it the
same :class:`AdmissionReads`, the registry's implementation of ``admission.Lookup``.
"""

from __future__ import annotations

from google.protobuf.message import Message

from protos.kubera.v1 import scheduling_pb2
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import narrow
from services.apiserver.store import Store


class AdmissionReads:
    """What admission plugins read (PriorityClasses, RuntimeClasses, Namespaces,
    a namespace's LimitRanges and ResourceQuotas): from the
    watch caches, as kube-apiserver's plugins read their informers, but only once the cache
    has seen this server's own latest write of that resource (read-your-writes: a class
    created a moment ago is seen). Memoized for one request, so a batch create of
    thousands of pods reads each class once."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._memo: dict[tuple[str, str, str], Message | None] = {}
        self._default: list[scheduling_pb2.PriorityClass | None] = []
        self._lists: dict[tuple[str, str], list[Message]] = {}

    async def cached_or_none(self, kind: Kind, namespace: str, name: str) -> Message | None:
        key = (kind.resource, namespace, name)
        if key not in self._memo:
            cache = await self._store.fresh_cache(kind)
            if cache is None:
                self._memo[key] = await self._store.get_or_none(kind, namespace, name)
            else:
                entry = cache.store.get(kind.key(self._store.namespace(kind, namespace), name))
                self._memo[key] = entry.obj if entry is not None else None
        return self._memo[key]

    async def namespace_objects(self, kind: Kind, namespace: str) -> list[Message]:
        """Every object of `kind` in `namespace` (LimitRanges, ResourceQuotas), memoized."""
        key = (kind.resource, namespace)
        if key not in self._lists:
            prefix = kind.prefix(namespace)
            cache = await self._store.fresh_cache(kind)
            if cache is None:
                kvs, _ = await self._store.storage.list(prefix)
                objs = [self._store.decode(kind, kv) for kv in kvs]
            else:
                objs = [e.obj for k, e in cache.store.items() if k.startswith(prefix)]
            self._lists[key] = objs
        return self._lists[key]

    async def global_default_priority_class(self) -> scheduling_pb2.PriorityClass | None:
        if not self._default:
            kind = BY_KIND["PriorityClass"]
            cache = await self._store.fresh_cache(kind)
            if cache is None:
                objs = [
                    self._store.decode(kind, kv)
                    for kv in (await self._store.storage.list(kind.prefix()))[0]
                ]
            else:
                objs = [e.obj for e in cache.store.values()]
            pcs = [narrow(o, scheduling_pb2.PriorityClass) for o in objs]
            found = [pc for pc in pcs if pc.global_default]
            # Should there be several, Kubernetes takes the lowest value.
            found.sort(key=lambda pc: (pc.value, pc.metadata.name))
            self._default.append(found[0] if found else None)
        return self._default[0]
