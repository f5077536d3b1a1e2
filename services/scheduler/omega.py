"""Shared-state (Omega) scheduling: several active replicas of one schedulerName.

Why this module exists: Omega (Schwarzkopf et al., EuroSys 2013) runs several schedulers
at once, each over a full copy of the cluster state, and commits placements with
optimistic concurrency: a placement that no longer fits is a conflict, retried. Here a
replica binds with `check_allocation` (the apiserver decides fit against the node's
allocation record in the bind txn, see services/apiserver/allocation.py) instead of a
leader's fencing token, and requeues a pod whose bind conflicted.

`SharedState` says which pods a replica takes: with partition "hash", those whose stable
hash of the UID (CRC-32; Python's hash() is salted per process) modulo the replica count is
its index, so the replicas split the pods deterministically and completely; with "none",
every replica competes for every pod (the first bind wins, the others lose the pod).

`OmegaStats` keeps the paper's measures for one replica:
* binds and conflicts; conflict fraction = conflicted binds per successful bind;
* busy time of attempts that ended bound (useful) and of those that ended in a conflict
  (wasted; a lost pod, which another replica bound first, is wasted too). Busy is the
  scheduling cycle, the serial work that occupies the scheduler (Omega's decision time):
  binding cycles run concurrently and mostly wait on the apiserver, so summing their
  durations would count overlapping waits as work. That wait is reported on its own, as
  the mean bind latency;
* queue wait: from the pod entering the queue to the start of the attempt that bound it;
* attempts per bound pod (this replica's attempts).
"""

from __future__ import annotations

import math
import zlib
from collections import deque
from dataclasses import dataclass
from typing import Any, Literal

from services.scheduler.metrics import SharedStateMetrics

Partition = Literal["hash", "none"]
PARTITIONS: tuple[Partition, ...] = ("hash", "none")
#: Queue-wait samples kept for the percentiles (the most recent ones); counts are exact.
MAX_SAMPLES = 100_000


def pod_hash(uid: str) -> int:
    """A pod's stable hash: the same in every process and on every run."""
    return zlib.crc32(uid.encode())


@dataclass(frozen=True)
class SharedState:
    """This replica's place among the active schedulers of one schedulerName."""

    #: This replica's index, 0 ≤ replica < replicas.
    replica: int
    #: How many replicas are active.
    replicas: int
    #: "hash": each pod belongs to one replica; "none": every replica tries every pod.
    partition: Partition = "none"

    def __post_init__(self) -> None:
        if self.replicas < 1:
            raise ValueError(f"shared state: replicas must be >= 1, not {self.replicas}")
        if not 0 <= self.replica < self.replicas:
            raise ValueError(
                f"shared state: replica must be in [0, {self.replicas}), not {self.replica}"
            )
        if self.partition not in PARTITIONS:
            raise ValueError(
                f"shared state: partition must be one of {', '.join(PARTITIONS)}, "
                f"not {self.partition!r}"
            )

    def owns(self, uid: str) -> bool:
        """Whether this replica schedules the pod with this UID."""
        return self.partition == "none" or pod_hash(uid) % self.replicas == self.replica


def percentile(xs: list[float], q: float) -> float:
    """The nearest-rank percentile (q in [0, 1]) of `xs`; 0 when empty."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


class OmegaStats:
    """One replica's Omega measures, mirrored into its Prometheus registry when given one."""

    def __init__(self, metrics: SharedStateMetrics | None = None) -> None:
        self._metrics = metrics
        self.binds = 0
        #: Binds refused by the node's allocation record (AllocationConflict).
        self.conflicts = 0
        #: Binds of pods another replica had bound first (or that changed meanwhile).
        self.lost = 0
        self.useful_s = 0.0
        self.wasted_s = 0.0
        self.bind_s = 0.0
        self.attempts_total = 0
        self.attempts_max = 0
        self.queue_waits: deque[float] = deque(maxlen=MAX_SAMPLES)
        self.attempts: deque[int] = deque(maxlen=MAX_SAMPLES)

    @property
    def conflict_fraction(self) -> float:
        """Conflicted binds per successful bind (0 before the first bind)."""
        return self.conflicts / self.binds if self.binds else 0.0

    def bound(self, busy_s: float, bind_s: float, queue_wait_s: float, attempts: int) -> None:
        """A bind the apiserver accepted: `busy_s` of scheduling cycle, `bind_s` waiting on
        the bind, `queue_wait_s` queued before this attempt, after `attempts` attempts."""
        self.binds += 1
        self.useful_s += busy_s
        self.bind_s += bind_s
        self.attempts_total += attempts
        self.attempts_max = max(self.attempts_max, attempts)
        self.queue_waits.append(queue_wait_s)
        self.attempts.append(attempts)
        if self._metrics is not None:
            self._metrics.binds_total.inc()
            self._metrics.busy_seconds_total.labels(work="useful").inc(busy_s)
            self._metrics.queue_wait_seconds.observe(queue_wait_s)
            self._metrics.attempts_per_pod.observe(attempts)
            self._metrics.conflict_fraction.set(self.conflict_fraction)

    def conflicted(self, busy_s: float, bind_s: float) -> None:
        """A bind refused by the node's allocation record."""
        self.conflicts += 1
        self._wasted("allocation", busy_s, bind_s)

    def lost_pod(self, busy_s: float, bind_s: float) -> None:
        """A bind of a pod another replica had bound first."""
        self.lost += 1
        self._wasted("pod", busy_s, bind_s)

    def _wasted(self, reason: str, busy_s: float, bind_s: float) -> None:
        self.wasted_s += busy_s
        self.bind_s += bind_s
        if self._metrics is not None:
            self._metrics.conflicts_total.labels(reason=reason).inc()
            self._metrics.busy_seconds_total.labels(work="wasted").inc(busy_s)
            self._metrics.conflict_fraction.set(self.conflict_fraction)

    def summary(self) -> dict[str, Any]:
        waits = list(self.queue_waits)
        binds_tried = self.binds + self.conflicts + self.lost
        return {
            "binds": self.binds,
            "conflicts": self.conflicts,
            "lost_pods": self.lost,
            "conflict_fraction": self.conflict_fraction,
            "useful_busy_s": self.useful_s,
            "wasted_busy_s": self.wasted_s,
            "bind_latency_mean_s": self.bind_s / binds_tried if binds_tried else 0.0,
            "queue_wait_p50_s": percentile(waits, 0.50),
            "queue_wait_p90_s": percentile(waits, 0.90),
            "queue_wait_p99_s": percentile(waits, 0.99),
            "attempts_per_pod_mean": self.attempts_total / self.binds if self.binds else 0.0,
            "attempts_per_pod_max": self.attempts_max,
        }
