"""What every node of a pool is using, observed for all nodes at once: the per-node arrays
(capacities, system usage, thresholds) are built once, and each monitoring period turns the
pods' usage totals into every signal's available amount for all nodes in a few numpy
operations. Only nodes near a threshold then get a NodeStats for their eviction manager.

Filesystems: without a separate imagefs, images (bytes, and inodes at one per 64 KiB)
count against nodefs, and imagefs signals read nodefs (upstream's shared layout).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from services.api.helpers.usage import RESOURCES
from services.api.machinery.quantity import parse_quantity
from services.kubelet import eviction as ev
from services.kubelet.state import HollowNode
from services.kubelet.usage import UsageTable

IMAGE_BYTES_PER_INODE = 64 * 1024


class PoolPressure:
    def __init__(self, nodes: Sequence[HollowNode]) -> None:
        self.nodes = nodes
        kinds = [n.plan.kind for n in nodes]
        self.memory = np.array(
            [parse_quantity(k.capacity.get("memory", "0")).int_value() for k in kinds], dtype=float
        )
        self.nodefs = np.array([k.disk.nodefs for k in kinds], dtype=float)
        self.nodefs_inodes = np.array([k.disk.nodefs_inodes for k in kinds], dtype=float)
        self.separate = np.array([bool(k.disk.imagefs) for k in kinds])
        self.imagefs = np.array([k.disk.imagefs or k.disk.nodefs for k in kinds], dtype=float)
        self.imagefs_inodes = np.array(
            [k.disk.imagefs_inodes or k.disk.nodefs_inodes for k in kinds], dtype=float
        )
        self.pid_max = np.array([k.disk.pid_max for k in kinds], dtype=float)
        self.system = {
            r: np.array([k.system.get(r, 0) for k in kinds], dtype=float) for r in RESOURCES
        }
        self.watermarks = self._watermarks()

    def capacities(self, i: int) -> dict[str, int]:
        return {
            ev.MEMORY_AVAILABLE: int(self.memory[i]),
            ev.NODEFS_AVAILABLE: int(self.nodefs[i]),
            ev.NODEFS_INODES_FREE: int(self.nodefs_inodes[i]),
            ev.IMAGEFS_AVAILABLE: int(self.imagefs[i]),
            ev.IMAGEFS_INODES_FREE: int(self.imagefs_inodes[i]),
            ev.PID_AVAILABLE: int(self.pid_max[i]),
        }

    def _watermarks(self) -> dict[str, np.ndarray]:
        """Per signal and node, the available amount below which the node's eviction
        manager has something to decide (its largest threshold plus minimum reclaim)."""
        marks: dict[str, np.ndarray] = {}
        for n in self.nodes:
            caps = self.capacities(n.index)
            for th in n.eviction.thresholds():
                cap = caps.get(th.signal)
                if cap is None:
                    continue
                arr = marks.setdefault(th.signal, np.zeros(len(self.nodes)))
                arr[n.index] = max(arr[n.index], th.amount(cap) + th.reclaim_amount(cap))
        return marks

    def used(self, usage: UsageTable, now: float) -> dict[str, np.ndarray]:
        """Per node: memory, nodefs and imagefs bytes and inodes, pids in use (pods +
        system + injected + images)."""
        n = len(self.nodes)
        totals = {r: self.system[r].copy() for r in RESOURCES}
        for r, arr in usage.node_totals(now, n).items():
            if r in totals:
                totals[r] += arr[:n]
        images = np.zeros(n)
        for node in self.nodes:
            for r, v in node.extra.items():
                totals[r][node.index] += v
            if node.images:
                images[node.index] = sum(node.images.values())
        image_inodes = images // IMAGE_BYTES_PER_INODE
        shared = ~self.separate
        return {
            "memory": totals["memory"],
            "nodefs": totals["ephemeral-storage"] + np.where(shared, images, 0),
            "nodefs_inodes": totals["inodes"] + np.where(shared, image_inodes, 0),
            "imagefs": np.where(shared, 0, images),
            "imagefs_inodes": np.where(shared, 0, image_inodes),
            "pids": totals["pids"],
        }

    def near(self, used: dict[str, np.ndarray]) -> np.ndarray:
        """Which nodes have a signal at or below their watermark."""
        shared = ~self.separate
        nodefs_free = self.nodefs - used["nodefs"]
        nodefs_inodes_free = self.nodefs_inodes - used["nodefs_inodes"]
        available = {
            ev.MEMORY_AVAILABLE: self.memory - used["memory"],
            ev.NODEFS_AVAILABLE: nodefs_free,
            ev.NODEFS_INODES_FREE: nodefs_inodes_free,
            ev.IMAGEFS_AVAILABLE: np.where(shared, nodefs_free, self.imagefs - used["imagefs"]),
            ev.IMAGEFS_INODES_FREE: np.where(
                shared, nodefs_inodes_free, self.imagefs_inodes - used["imagefs_inodes"]
            ),
            ev.PID_AVAILABLE: self.pid_max - used["pids"],
        }
        out = np.zeros(len(self.nodes), dtype=bool)
        for signal, mark in self.watermarks.items():
            out |= available[signal] < mark
        return out

    def node_stats(self, i: int, used: dict[str, np.ndarray]) -> ev.NodeStats:
        separate = bool(self.separate[i])
        return ev.NodeStats(
            memory_capacity=int(self.memory[i]),
            memory_working_set=int(used["memory"][i]),
            nodefs_capacity=int(self.nodefs[i]),
            nodefs_available=int(self.nodefs[i] - used["nodefs"][i]),
            nodefs_inodes=int(self.nodefs_inodes[i]),
            nodefs_inodes_free=int(self.nodefs_inodes[i] - used["nodefs_inodes"][i]),
            imagefs_separate=separate,
            imagefs_capacity=int(self.imagefs[i]),
            imagefs_available=int(self.imagefs[i] - used["imagefs"][i]) if separate else 0,
            imagefs_inodes=int(self.imagefs_inodes[i]) if separate else 0,
            imagefs_inodes_free=(
                int(self.imagefs_inodes[i] - used["imagefs_inodes"][i]) if separate else 0
            ),
            pid_max=int(self.pid_max[i]),
            pids_used=int(used["pids"][i]),
        )
