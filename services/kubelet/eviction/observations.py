"""What the eviction manager is told each pass: the node's stats, the signal
observations derived from them, and the active pods and images.

These are plain values filled in by the node pool (from kubera's usage model) the way
upstream fills them from the cadvisor summary; :func:`signal_observations` is upstream's
makeSignalObservations.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Final, NamedTuple

from services.kubelet.eviction.signals import MEMORY_AVAILABLE, PID_AVAILABLE

#: Pods at or above this priority (system-cluster-critical, system-node-critical) are
#: critical: admitted under pressure and never evicted (kubelettypes.IsCriticalPod).
SYSTEM_CRITICAL_PRIORITY: Final = 2_000_000_000

#: The QoS class of a pod without requests or limits: the one admission refuses under
#: memory pressure.
QOS_BEST_EFFORT: Final = "BestEffort"


class FsLayout(enum.Enum):
    """Where images and containers' writable layers live (the docs' three options)."""

    #: One filesystem for everything: nodefs = imagefs = containerfs.
    SINGLE = "single"
    #: Images and writable layers on a dedicated imagefs ("split disk"); containerfs = imagefs.
    SEPARATE_IMAGEFS = "separate-imagefs"
    #: Images alone on imagefs; writable layers on containerfs, which is on root ("split
    #: image"; upstream's KubeletSeparateDiskGC).
    SPLIT_IMAGEFS = "split-imagefs"


class Observation(NamedTuple):
    """One signal this pass: what is available and what the signal's capacity is."""

    available: int
    capacity: int


@dataclass
class NodeStats:
    """What the node's "cadvisor" reports this pass (one summary)."""

    memory_capacity: int
    memory_working_set: int
    nodefs_capacity: int
    nodefs_available: int
    #: Inode counts; a zero ``nodefs_inodes`` means "not reported" (no inodesFree signal).
    nodefs_inodes: int = 0
    nodefs_inodes_free: int = 0
    #: Images (and, unless containerfs is split off, writable layers) on their own
    #: filesystem; when False the imagefs_* fields are ignored and imagefs is nodefs.
    imagefs_separate: bool = False
    imagefs_capacity: int = 0
    imagefs_available: int = 0
    imagefs_inodes: int = 0
    imagefs_inodes_free: int = 0
    #: Writable layers on a containerfs apart from imagefs (needs imagefs_separate); when
    #: False the containerfs signals observe imagefs, like upstream's summary.
    containerfs_split: bool = False
    containerfs_capacity: int = 0
    containerfs_available: int = 0
    containerfs_inodes: int = 0
    containerfs_inodes_free: int = 0
    #: rlimit: the pid limit (0 = not reported, no pid.available signal) and pids in use.
    pid_max: int = 0
    pids_used: int = 0
    #: When these stats were taken; a pass whose stats are not newer than the previous
    #: pass's evicts nothing (thresholdsUpdatedStats). None: always fresh.
    time: float | None = None

    def __post_init__(self) -> None:
        if self.containerfs_split and not self.imagefs_separate:
            raise ValueError("containerfs_split needs imagefs_separate (split image filesystem)")

    @property
    def layout(self) -> FsLayout:
        if not self.imagefs_separate:
            return FsLayout.SINGLE
        return FsLayout.SPLIT_IMAGEFS if self.containerfs_split else FsLayout.SEPARATE_IMAGEFS


def signal_observations(stats: NodeStats) -> dict[str, Observation]:
    """signal → (available, capacity), like upstream makeSignalObservations.

    memory.available = capacity − working set (capacity = available + working set, as
    upstream derives it); a filesystem's signals come from the filesystem that holds it:
    imagefs is nodefs unless separate, containerfs is imagefs unless split. Available
    amounts are clipped at 0 (a real summary never reports less).
    """

    def obs(available: int, capacity: int) -> Observation:
        return Observation(max(0, int(available)), int(capacity))

    mem_avail = max(0, stats.memory_capacity - stats.memory_working_set)
    out = {MEMORY_AVAILABLE: obs(mem_avail, mem_avail + stats.memory_working_set)}
    fs: dict[str, tuple[int, int, int, int]] = {
        "nodefs": (
            stats.nodefs_available,
            stats.nodefs_capacity,
            stats.nodefs_inodes_free,
            stats.nodefs_inodes,
        )
    }
    fs["imagefs"] = (
        (
            stats.imagefs_available,
            stats.imagefs_capacity,
            stats.imagefs_inodes_free,
            stats.imagefs_inodes,
        )
        if stats.imagefs_separate
        else fs["nodefs"]
    )
    fs["containerfs"] = (
        (
            stats.containerfs_available,
            stats.containerfs_capacity,
            stats.containerfs_inodes_free,
            stats.containerfs_inodes,
        )
        if stats.containerfs_split
        else fs["imagefs"]
    )
    for name, (avail, cap, ifree, inodes) in fs.items():
        out[f"{name}.available"] = obs(avail, cap)
        if inodes > 0:
            out[f"{name}.inodesFree"] = obs(ifree, inodes)
    if stats.pid_max > 0:
        out[PID_AVAILABLE] = obs(stats.pid_max - stats.pids_used, stats.pid_max)
    return out


@dataclass(frozen=True)
class ContainerStats:
    """One container, for the eviction message (usage and requests per container)."""

    name: str
    memory: int = 0
    memory_request: int = 0
    #: Writable layer + logs (what upstream's message counts for ephemeral storage).
    ephemeral_storage: int = 0
    ephemeral_storage_request: int = 0


@dataclass
class PodStats:
    """One active pod: identity, what ranking needs from its spec, and its usage now.

    Ephemeral storage is split the way upstream measures it per filesystem: the containers'
    writable layers (``writable_layer``: on imagefs when imagefs is separate and not split),
    local volumes such as emptyDir (``local_volumes``) and container logs (the rest), the
    last two always on nodefs. kubera's usage model puts a pod's disk use in logs unless
    told otherwise, so by default everything counts against nodefs.
    """

    key: str
    uid: str = ""
    priority: int = 0
    qos: str = QOS_BEST_EFFORT
    #: Pod-level requests (upstream GetResourceRequestQuantity: containers, init
    #: containers and overhead); 0 = none.
    memory_request: int = 0
    ephemeral_storage_request: int = 0
    #: Memory working set.
    memory: int = 0
    #: Total ephemeral storage: writable layers + logs + local volumes.
    ephemeral_storage: int = 0
    #: Total inodes, same places as ephemeral storage.
    inodes: int = 0
    pids: int = 0
    writable_layer: int = 0
    writable_layer_inodes: int = 0
    local_volumes: int = 0
    termination_grace_period_seconds: float | None = 30.0
    #: Container names, or ContainerStats for exact per-container messages. With bare
    #: names the pod's usage and requests are shared out evenly among them.
    containers: Sequence[str | ContainerStats] = ()
    #: False when the summary had no stats for the pod (upstream ranks those first).
    has_stats: bool = True
    #: Static (or mirror) pods are critical whatever their priority.
    static: bool = False
    #: Already being killed: not a candidate again.
    terminating: bool = False

    @property
    def critical(self) -> bool:
        return self.static or self.priority >= SYSTEM_CRITICAL_PRIORITY

    def container_stats(self) -> list[ContainerStats]:
        """Per-container stats; bare names share the pod's numbers evenly."""
        named = [c for c in self.containers if isinstance(c, str)]
        if not named:
            return [c for c in self.containers if isinstance(c, ContainerStats)]
        n = len(named)
        logs_and_layer = max(0, self.ephemeral_storage - self.local_volumes)
        shared = ContainerStats(
            "",
            memory=self.memory // n,
            memory_request=self.memory_request // n,
            ephemeral_storage=logs_and_layer // n,
            ephemeral_storage_request=self.ephemeral_storage_request // n,
        )
        return [
            c if isinstance(c, ContainerStats) else replace(shared, name=c) for c in self.containers
        ]


@dataclass(frozen=True)
class ImageStats:
    """An image on the node; unused, unpinned images are what image GC deletes."""

    name: str
    size_bytes: int
    in_use: bool = False
    inodes: int = 0
    pinned: bool = False
