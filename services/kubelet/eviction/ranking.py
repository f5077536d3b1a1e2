"""Which pod goes first under pressure on a signal (upstream rankMemoryPressure,
rankDiskPressureFunc, rankPIDPressure), and what part of a pod's disk use each disk
signal measures for that ranking.

Upstream ranks with a chain of comparators and Go's unstable sort.Sort; each key below is
the same chain as a tuple, and Python's stable sort keeps the input order for pods the
chain cannot tell apart (upstream leaves that order unspecified).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from services.kubelet.eviction.observations import FsLayout, PodStats
from services.kubelet.eviction.signals import (
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    DISK_SIGNALS,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    RESOURCE_INODES,
    SIGNAL_TO_RESOURCE,
)

# What each disk signal's ranking measures (buildSignalToRankFunc): "root" is the
# writable layers, "logs" logs plus local volumes; images add nothing to a pod.
_ROOT, _LOGS = "root", "logs"
_RANK_MEASURES: Final[dict[FsLayout, dict[str, frozenset[str]]]] = {
    FsLayout.SINGLE: dict.fromkeys(DISK_SIGNALS, frozenset({_ROOT, _LOGS})),
    FsLayout.SEPARATE_IMAGEFS: {
        **dict.fromkeys((NODEFS_AVAILABLE, NODEFS_INODES_FREE), frozenset({_LOGS})),
        **dict.fromkeys(
            (
                IMAGEFS_AVAILABLE,
                IMAGEFS_INODES_FREE,
                CONTAINERFS_AVAILABLE,
                CONTAINERFS_INODES_FREE,
            ),
            frozenset({_ROOT}),
        ),
    },
    FsLayout.SPLIT_IMAGEFS: {
        **dict.fromkeys(
            (
                NODEFS_AVAILABLE,
                NODEFS_INODES_FREE,
                CONTAINERFS_AVAILABLE,
                CONTAINERFS_INODES_FREE,
            ),
            frozenset({_ROOT, _LOGS}),
        ),
        **dict.fromkeys((IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE), frozenset()),
    },
}


def rank_measures(signal: str, layout: FsLayout) -> frozenset[str]:
    """The parts of a pod's disk use ("root", "logs") that count for a disk signal."""
    return _RANK_MEASURES[layout][signal]


def pod_disk_usage(pod: PodStats, measures: frozenset[str]) -> tuple[int, int]:
    """(bytes, inodes) of the measured parts of the pod's ephemeral storage."""
    bytes_, inodes = 0, 0
    if _ROOT in measures:
        bytes_ += pod.writable_layer
        inodes += pod.writable_layer_inodes
    if _LOGS in measures:
        bytes_ += max(0, pod.ephemeral_storage - pod.writable_layer)
        inodes += max(0, pod.inodes - pod.writable_layer_inodes)
    return bytes_, inodes


def _memory_key(p: PodStats) -> tuple[int, int, int, int]:
    if not p.has_stats:  # pods without stats go first (exceedMemoryRequests, memory)
        return (0, 0, p.priority, 0)
    over = p.memory - p.memory_request
    return (1, 0 if over > 0 else 1, p.priority, -over)


def rank_memory_pressure(pods: Iterable[PodStats]) -> list[PodStats]:
    """Pods whose working set exceeds their memory request first, then lower priority
    first, then the largest usage above request first (rankMemoryPressure)."""
    return sorted(pods, key=_memory_key)


def rank_disk_pressure(
    pods: Iterable[PodStats], *, measures: frozenset[str], resource: str
) -> list[PodStats]:
    """rankDiskPressureFunc: pods whose measured use exceeds their request first, then
    lower priority, then the largest use above the ephemeral-storage request.

    For ``inodes`` upstream compares inode use with an inode request (which no pod has,
    so any inode use "exceeds") and then subtracts the ephemeral-storage *byte* request
    from the inode count; both are kept as upstream does them.
    """

    def key(p: PodStats) -> tuple[int, int, int, int]:
        if not p.has_stats:
            return (0, 0, p.priority, 0)
        used_bytes, used_inodes = pod_disk_usage(p, measures)
        if resource == RESOURCE_INODES:
            used, request = used_inodes, 0
        else:
            used, request = used_bytes, p.ephemeral_storage_request
        over = used - p.ephemeral_storage_request
        return (1, 0 if used > request else 1, p.priority, -over)

    return sorted(pods, key=key)


def rank_pid_pressure(pods: Iterable[PodStats]) -> list[PodStats]:
    """Lower priority first, then (pods without stats first) the most processes first
    (rankPIDPressure)."""
    return sorted(
        pods, key=lambda p: (p.priority, 1, -p.pids) if p.has_stats else (p.priority, 0, 0)
    )


def rank_pods(signal: str, pods: Iterable[PodStats], layout: FsLayout) -> list[PodStats]:
    """Rank pods for eviction under pressure on ``signal``."""
    if signal == MEMORY_AVAILABLE:
        return rank_memory_pressure(pods)
    if signal == PID_AVAILABLE:
        return rank_pid_pressure(pods)
    return rank_disk_pressure(
        pods, measures=rank_measures(signal, layout), resource=SIGNAL_TO_RESOURCE[signal]
    )
