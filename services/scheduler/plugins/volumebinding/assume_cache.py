"""The informer's PersistentVolumes and PersistentVolumeClaims overlaid with what this
scheduler decided but has not written yet (upstream util/assumecache and the PV/PVC
assume caches of volumebinding).

Why it exists: Reserve picks a volume for a claim (or a node to provision it on) in the
serial scheduling cycle, but PreBind writes it later, concurrently with the next cycles.
Until the informer shows the write, the next pods' Filter must see the volume as taken,
or two pods would be given one volume. So Reserve *assumes* the changed object here and
every read answers it instead of the informer's copy.

An object's life here, by key ("name" for a volume, "namespace/name" for a claim):

    informer's copy ──assume(obj)──► assumed ──restore(key)──► informer's copy
                                        │ informer delivers a newer resourceVersion
                                        ▼
                                   informer's copy

Invariants: an assumed object is never older than the informer's copy it replaced
(assume() refuses an older resourceVersion: "out of sync"); once the informer holds a
newer resourceVersion than the assumed object, the assumed one is dropped (the write, or
someone else's, has arrived); an object the informer no longer has is gone, assumed or
not. The informer's objects are shared: callers copy before changing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from services.api.helpers.volumes import volume_class

#: The informer's store, read anew at each use (a relist replaces it).
Source = Callable[[], Mapping[str, Any]]


class AssumeCacheError(Exception):
    """assume() refused: the object is unknown or older than the cached one."""


class NotFoundError(AssumeCacheError):
    """The informer has no object of that key (upstream assumecache.ErrNotFound)."""


def _rv(obj: Any) -> int:
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


class AssumeCache:
    """One kind's informer objects plus the assumed ones (see the module docstring)."""

    def __init__(self, source: Source, description: str, key: Callable[[Any], str]) -> None:
        self._source = source
        self._description = description
        self._key = key
        self._assumed: dict[str, Any] = {}

    def _api(self, key: str) -> Any:
        return self._source().get(key)

    def get(self, key: str) -> Any:
        """The newest object of `key`: the assumed one while the informer's is not newer."""
        api = self._api(key)
        if api is None:
            self._assumed.pop(key, None)
            raise NotFoundError(f"{self._description} {key!r} not found")
        assumed = self._assumed.get(key)
        if assumed is None:
            return api
        if _rv(api) > _rv(assumed):
            del self._assumed[key]
            return api
        return assumed

    def get_api(self, key: str) -> Any:
        """The informer's object of `key` (what the API server last said)."""
        api = self._api(key)
        if api is None:
            raise NotFoundError(f"{self._description} {key!r} not found")
        return api

    def list(self) -> list[Any]:
        out = []
        for obj in list(self._source().values()):
            try:
                out.append(self.get(self._key(obj)))
            except NotFoundError:
                continue
        return out

    def assume(self, obj: Any) -> None:
        """Answer `obj` for its key until restore() or a newer informer object."""
        key = self._key(obj)
        stored = self.get(key)
        if _rv(obj) < _rv(stored):
            raise AssumeCacheError(
                f"{self._description} {key!r} is out of sync "
                f"(stored: {_rv(stored)}, assume: {_rv(obj)})"
            )
        self._assumed[key] = obj

    def restore(self, key: str) -> None:
        """Drop the assumed object of `key`: the informer's copy answers again."""
        self._assumed.pop(key, None)

    def is_assumed(self, key: str) -> bool:
        return key in self._assumed


def pv_key(pv: Any) -> str:
    return str(pv.metadata.name)


def pvc_key(pvc: Any) -> str:
    return f"{pvc.metadata.namespace}/{pvc.metadata.name}"


class PVAssumeCache(AssumeCache):
    def __init__(
        self, source: Source, of_class: Callable[[str], list[str] | None] = lambda _c: None
    ) -> None:
        super().__init__(source, "PersistentVolume", pv_key)
        #: The names of a class's volumes from an index by class (upstream's assume cache
        #: indexes by class too), or None: walk every volume.
        self._of_class = of_class

    def list_pvs(self, storage_class: str) -> list[Any]:
        """The volumes of one class (the beta annotation, else spec.storageClassName), as
        assumed."""
        names = self._of_class(storage_class)
        if names is None:
            candidates = self.list()
        else:
            candidates = []
            for name in names:
                try:
                    candidates.append(self.get(name))
                except NotFoundError:
                    continue
        return [pv for pv in candidates if volume_class(pv) == storage_class]


class PVCAssumeCache(AssumeCache):
    def __init__(self, source: Source) -> None:
        super().__init__(source, "PersistentVolumeClaim", pvc_key)
