"""The eviction manager's vocabulary: signals, the node conditions they raise and the
resources they starve.

Every other module of the package speaks in these names; they are kept apart so that the
config, the observations and the manager can share them without importing one another.
"""

from __future__ import annotations

from typing import Final

from services.api.helpers.wellknown import (
    TAINT_DISK_PRESSURE,
    TAINT_MEMORY_PRESSURE,
    TAINT_PID_PRESSURE,
)

MEMORY_AVAILABLE: Final = "memory.available"
NODEFS_AVAILABLE: Final = "nodefs.available"
NODEFS_INODES_FREE: Final = "nodefs.inodesFree"
IMAGEFS_AVAILABLE: Final = "imagefs.available"
IMAGEFS_INODES_FREE: Final = "imagefs.inodesFree"
CONTAINERFS_AVAILABLE: Final = "containerfs.available"
CONTAINERFS_INODES_FREE: Final = "containerfs.inodesFree"
PID_AVAILABLE: Final = "pid.available"
#: Every signal, in the order of the docs' signal table; also the (deterministic) order in
#: which met thresholds of equal standing are reclaimed.
SIGNALS: Final = (
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    PID_AVAILABLE,
)
DISK_SIGNALS: Final = frozenset(SIGNALS[1:7])

MEMORY_PRESSURE: Final = "MemoryPressure"
DISK_PRESSURE: Final = "DiskPressure"
PID_PRESSURE: Final = "PIDPressure"
CONDITIONS: Final = (MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)
#: The taints the node lifecycle controller puts on a node with each condition (effect
#: NoSchedule); the kubelet's admission checks the memory one.
CONDITION_TAINTS: Final = {
    MEMORY_PRESSURE: TAINT_MEMORY_PRESSURE,
    DISK_PRESSURE: TAINT_DISK_PRESSURE,
    PID_PRESSURE: TAINT_PID_PRESSURE,
}

RESOURCE_MEMORY: Final = "memory"
RESOURCE_EPHEMERAL_STORAGE: Final = "ephemeral-storage"
RESOURCE_INODES: Final = "inodes"
RESOURCE_PIDS: Final = "pids"

SIGNAL_TO_CONDITION: Final = {
    MEMORY_AVAILABLE: MEMORY_PRESSURE,
    **dict.fromkeys(DISK_SIGNALS, DISK_PRESSURE),
    PID_AVAILABLE: PID_PRESSURE,
}
SIGNAL_TO_RESOURCE: Final = {
    MEMORY_AVAILABLE: RESOURCE_MEMORY,
    NODEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    IMAGEFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    CONTAINERFS_AVAILABLE: RESOURCE_EPHEMERAL_STORAGE,
    NODEFS_INODES_FREE: RESOURCE_INODES,
    IMAGEFS_INODES_FREE: RESOURCE_INODES,
    CONTAINERFS_INODES_FREE: RESOURCE_INODES,
    PID_AVAILABLE: RESOURCE_PIDS,
}
