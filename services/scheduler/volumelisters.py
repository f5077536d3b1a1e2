"""The storage objects the volume plugins read: listers over the scheduler's informers of
PersistentVolumes, PersistentVolumeClaims, StorageClasses, CSINodes, CSIDrivers and
CSIStorageCapacities (upstream's SharedInformerFactory().Core().V1().PersistentVolumes()
... Lister()).

Why it exists: VolumeBinding, VolumeRestrictions, VolumeZone and NodeVolumeLimits all read
these kinds; each asks the handle for the informer of a kind (Handle.informer, made on first
call from a plugin's factory, so every plugin shares one informer per kind and its events
reach the queue as ClusterEvent(kind, ...)). A `Lister` reads the informer's store anew on
every call (a relist replaces the store), or a plain mapping in unit tests, keyed as the
informer keys objects: "name" for cluster-scoped kinds, "namespace/name" for namespaced ones.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

PV = "PersistentVolume"
PVC = "PersistentVolumeClaim"
STORAGE_CLASS = "StorageClass"
CSI_NODE = "CSINode"
CSI_DRIVER = "CSIDriver"
CSI_STORAGE_CAPACITY = "CSIStorageCapacity"


class Lister:
    """get / list over an informer's store (or a mapping); objects are shared: copy one
    before changing it."""

    def __init__(self, source: Any = None) -> None:
        self._source = source if source is not None else {}

    def _store(self) -> Mapping[str, Any]:
        store = getattr(self._source, "store", None)
        return store if store is not None else self._source  # type: ignore[no-any-return]

    def get(self, name: str, namespace: str = "") -> Any:
        """The object `name` (in `namespace` for a namespaced kind), or None."""
        return self._store().get(f"{namespace}/{name}" if namespace else name)

    def list(self) -> list[Any]:
        return list(self._store().values())

    def __iter__(self) -> Iterator[Any]:
        return iter(self.list())

    def __len__(self) -> int:
        return len(self._store())


@dataclass(frozen=True)
class VolumeListers:
    """One Lister per storage kind (a kind a plugin does not need may stay empty)."""

    pvs: Lister
    pvcs: Lister
    classes: Lister
    csi_nodes: Lister
    csi_drivers: Lister
    capacities: Lister

    @classmethod
    def from_mappings(cls, **stores: Mapping[str, Any]) -> VolumeListers:
        """Listers over plain mappings (unit tests); missing kinds are empty."""
        names = ("pvs", "pvcs", "classes", "csi_nodes", "csi_drivers", "capacities")
        return cls(**{n: Lister(stores.get(n, {})) for n in names})


def volume_listers(handle: Any) -> VolumeListers:
    """The listers over `handle`'s informers (from a plugin factory, before the scheduler
    starts its informers); a handle without informers (framework unit tests) gives empty
    listers."""
    informer = getattr(handle, "informer", None)
    if informer is None:
        return VolumeListers.from_mappings()
    return VolumeListers(
        pvs=Lister(informer(PV)),
        pvcs=Lister(informer(PVC)),
        classes=Lister(informer(STORAGE_CLASS)),
        csi_nodes=Lister(informer(CSI_NODE)),
        csi_drivers=Lister(informer(CSI_DRIVER)),
        capacities=Lister(informer(CSI_STORAGE_CAPACITY)),
    )
