"""One node's eviction manager: the state kept between housekeeping passes and the
decision each pass takes (upstream eviction_manager.go synchronize and Admit).

A pass observes the signals, works out which thresholds are met (grace periods, minimum
reclaim, the pressure transition period), reclaims node-level resources first (unused
images) and then picks at most one pod to evict. The result is a :class:`Decision` the
node pool carries out; nothing here does I/O or reads a clock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Final, NamedTuple

from services.api.machinery.quantity import BINARY_SI, DECIMAL_SI
from services.kubelet.eviction.config import EvictionConfig
from services.kubelet.eviction.observations import (
    QOS_BEST_EFFORT,
    FsLayout,
    ImageStats,
    NodeStats,
    Observation,
    PodStats,
    signal_observations,
)
from services.kubelet.eviction.ranking import rank_pods
from services.kubelet.eviction.signals import (
    CONDITIONS,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    DISK_SIGNALS,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    MEMORY_PRESSURE,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_MEMORY,
    SIGNAL_TO_CONDITION,
    SIGNAL_TO_RESOURCE,
    SIGNALS,
)
from services.kubelet.eviction.thresholds import (
    Threshold,
    format_quantity,
    format_request,
    thresholds_for_layout,
    thresholds_met,
)

#: status.reason of an evicted pod (and of a pod the eviction admission rejects).
REASON_EVICTED: Final = "Evicted"
#: Grace period of a hard-threshold eviction: 0 s, as the docs (and our issue) say. Upstream's
#: code passes 1 s (immediateEvictionGracePeriodSeconds) so a real runtime still gets a stop
#: signal through; a hollow kubelet has nothing to signal.
IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS: Final = 0
#: How long upstream waits for an evicted pod to be cleaned up before the next pass.
POD_CLEANUP_TIMEOUT_SECONDS: Final = 30.0


# Which disk signals run image GC (buildSignalToNodeReclaimFuncs); the others with a
# reclaim list only run container GC, which frees nothing here (no dead containers are
# modelled) but still leads to the re-check, as upstream.
_IMAGE_GC_SIGNALS: Final[dict[FsLayout, frozenset[str]]] = {
    FsLayout.SINGLE: DISK_SIGNALS,
    FsLayout.SEPARATE_IMAGEFS: frozenset(
        (IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE, CONTAINERFS_AVAILABLE, CONTAINERFS_INODES_FREE)
    ),
    FsLayout.SPLIT_IMAGEFS: frozenset((IMAGEFS_AVAILABLE, IMAGEFS_INODES_FREE)),
}
_RECLAIM_SIGNALS: Final[dict[FsLayout, frozenset[str]]] = {
    FsLayout.SINGLE: DISK_SIGNALS,
    FsLayout.SEPARATE_IMAGEFS: _IMAGE_GC_SIGNALS[FsLayout.SEPARATE_IMAGEFS],
    FsLayout.SPLIT_IMAGEFS: DISK_SIGNALS,
}


def _reclaim_order(t: Threshold) -> tuple[int, int, int]:
    """Memory first (byEvictionPriority); then, where upstream's order is Go map order,
    the docs' signal order, hard before soft."""
    return (0 if t.signal == MEMORY_AVAILABLE else 1, SIGNALS.index(t.signal), 0 if t.hard else 1)


def node_conditions(thresholds: Iterable[Threshold]) -> set[str]:
    return {SIGNAL_TO_CONDITION[t.signal] for t in thresholds}


def eviction_message(
    resource: str,
    pod: PodStats,
    thresholds: Sequence[Threshold],
    observations: Mapping[str, Observation],
) -> tuple[str, dict[str, str]]:
    """Upstream's evictionMessage: the message set on the pod and the event annotations.

    "The node was low on resource: R. Threshold quantity: Q, available: A. " then, for
    memory and ephemeral storage, "Container C was using U, request is Q, has larger
    consumption of R. " for each container above its request. Every sentence ends with a
    space, as upstream's.
    """
    message = f"The node was low on resource: {resource}. "
    for t in thresholds:
        if SIGNAL_TO_RESOURCE[t.signal] != resource or t.signal not in observations:
            continue
        o = observations[t.signal]
        fmt = BINARY_SI if resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE) else DECIMAL_SI
        message += (
            f"Threshold quantity: {t.display_amount(o.capacity)}, "
            f"available: {format_quantity(o.available, fmt)}. "
        )
        break
    annotations: dict[str, str] = {}
    if not pod.has_stats:
        return message, annotations
    offenders: list[str] = []
    usages: list[str] = []
    if resource in (RESOURCE_MEMORY, RESOURCE_EPHEMERAL_STORAGE):
        for c in pod.container_stats():
            if resource == RESOURCE_MEMORY:
                used, request = c.memory, c.memory_request
            else:
                used, request = c.ephemeral_storage, c.ephemeral_storage_request
            if used > request:
                usage = format_quantity(used, BINARY_SI)
                message += (
                    f"Container {c.name} was using {usage}, request is "
                    f"{format_request(request)}, has larger consumption of {resource}. "
                )
                offenders.append(c.name)
                usages.append(usage)
    annotations["offending_containers"] = ",".join(offenders)
    annotations["offending_containers_usage"] = ",".join(usages)
    annotations["starved_resource"] = resource
    return message, annotations


class Eviction(NamedTuple):
    """One pod to kill: phase Failed, reason Evicted, this message, this grace period."""

    pod_key: str
    grace_seconds: float
    message: str
    signal: str


@dataclass(frozen=True)
class Decision:
    """What one synchronize pass decided."""

    #: MemoryPressure / DiskPressure / PIDPressure → status (every key present).
    conditions: dict[str, bool]
    #: signal → (available, capacity) this pass, for metrics and describe.
    observations: dict[str, Observation]
    #: Thresholds met now, regardless of grace periods (they drive the conditions).
    thresholds_observed: tuple[Threshold, ...] = ()
    #: Thresholds met and past their grace periods (they drive reclaim and eviction).
    thresholds_met: tuple[Threshold, ...] = ()
    #: The signal reclaimed this pass, if any.
    reclaim_signal: str | None = None
    #: Unused images to delete (node-level reclaim), largest first.
    images_to_delete: tuple[str, ...] = ()
    #: At most one pod per pass.
    evict: tuple[Eviction, ...] = ()
    #: Event annotations of the eviction (offending containers, starved resource).
    eviction_annotations: dict[str, str] = field(default_factory=dict)
    #: The previous eviction's pod is still being cleaned up; nothing was decided.
    waiting_for_cleanup: bool = False


PodSource = Sequence[PodStats] | Callable[[], Sequence[PodStats]]


class EvictionManager:
    """One node's eviction manager: the state upstream keeps between synchronize passes.

    State between passes (all keyed by value, none shared between managers):

    * when each currently-met threshold was first seen met (grace periods): a threshold
      that stops being met is forgotten, so a soft threshold's clock restarts;
    * when each pressure condition was last observed (transition period);
    * the thresholds that were met past their grace period last pass (those keep being met
      until their minimum reclaim is satisfied);
    * the time of the last stats, and the pod evicted last, until it is cleaned up.
    """

    def __init__(self, config: EvictionConfig | None = None) -> None:
        self.config = config if config is not None else EvictionConfig()
        self._configured = self.config.thresholds()
        self._layout: FsLayout | None = None
        self._thresholds: tuple[Threshold, ...] = ()
        self._first_observed: dict[Threshold, float] = {}
        self._condition_last_observed: dict[str, float] = {}
        self._conditions: frozenset[str] = frozenset()
        self._met: list[Threshold] = []
        self._observed: list[Threshold] = []
        self._last_stats_time: float | None = None
        self._pending: tuple[str, float] | None = None

    @property
    def conditions(self) -> dict[str, bool]:
        return {c: c in self._conditions for c in CONDITIONS}

    @property
    def thresholds(self) -> tuple[Threshold, ...]:
        """The thresholds in force (containerfs ones derived once the layout is known)."""
        return self._thresholds if self._layout is not None else self._configured

    def idle(self) -> bool:
        """True when a pass with no threshold met would change nothing: no condition, no
        threshold being timed or awaiting its minimum reclaim, no eviction in flight. The
        pool may skip such nodes until a signal gets near a threshold."""
        return not (self._conditions or self._first_observed or self._met or self._pending)

    def admit(
        self, pod_qos: str, tolerates_memory_pressure: bool, *, critical: bool = False
    ) -> tuple[bool, str, str]:
        return admit(pod_qos, tolerates_memory_pressure, self.conditions, critical=critical)

    def synchronize(
        self,
        now: float,
        stats: NodeStats,
        pods: PodSource,
        images: Iterable[ImageStats] = (),
    ) -> Decision:
        """One housekeeping pass (upstream synchronize). ``pods`` are the node's active
        pods, or a callable returning them: it is called only if pods must be looked at."""
        layout = stats.layout
        if self._layout is None:
            self._layout = layout
            self._thresholds = thresholds_for_layout(self._configured, layout)
        elif layout is not self._layout:
            raise ValueError(
                f"the node's filesystem layout changed from {self._layout.value} to "
                f"{layout.value}; the kubelet detects it once"
            )
        observations = signal_observations(stats)
        cache: list[Sequence[PodStats]] = []

        def active_pods() -> Sequence[PodStats]:
            if not cache:
                cache.append(pods() if callable(pods) else pods)
            return cache[0]

        # Upstream blocks after an eviction until the pod is cleaned up (or 30 s pass);
        # no pass runs meanwhile, so nothing changes state here.
        if self._pending is not None:
            key, at = self._pending
            if now - at < POD_CLEANUP_TIMEOUT_SECONDS and any(p.key == key for p in active_pods()):
                return Decision(
                    conditions=self.conditions,
                    observations=observations,
                    thresholds_observed=tuple(self._observed),
                    thresholds_met=tuple(self._met),
                    waiting_for_cleanup=True,
                )
            self._pending = None

        observed = thresholds_met(self._thresholds, observations)
        if self._met:
            unresolved = thresholds_met(self._met, observations, enforce_min_reclaim=True)
            observed += [t for t in unresolved if t not in observed]
        first_observed = {t: self._first_observed.get(t, now) for t in observed}
        last_observed = dict(self._condition_last_observed)
        for condition in node_conditions(observed):
            last_observed[condition] = now
        conditions = frozenset(
            c
            for c, at in last_observed.items()
            if now - at < self.config.pressure_transition_period
        )
        met = [t for t in observed if now - first_observed[t] >= t.grace_period]

        fresh = (
            stats.time is None
            or self._last_stats_time is None
            or stats.time > self._last_stats_time
        )
        self._first_observed = first_observed
        self._condition_last_observed = last_observed
        self._conditions = conditions
        self._met = met
        self._observed = observed
        if stats.time is not None:
            self._last_stats_time = stats.time

        decision = Decision(
            conditions=self.conditions,
            observations=observations,
            thresholds_observed=tuple(observed),
            thresholds_met=tuple(met),
        )
        if not met or not fresh:
            return decision

        ordered = sorted(met, key=_reclaim_order)
        to_reclaim = ordered[0]
        resource = SIGNAL_TO_RESOURCE[to_reclaim.signal]
        decision = replace(decision, reclaim_signal=to_reclaim.signal)

        if to_reclaim.signal in _RECLAIM_SIGNALS[layout]:
            deleted: list[ImageStats] = []
            if to_reclaim.signal in _IMAGE_GC_SIGNALS[layout]:
                deleted = sorted(
                    (i for i in images if not i.in_use and not i.pinned),
                    key=lambda i: -i.size_bytes,
                )
            decision = replace(decision, images_to_delete=tuple(i.name for i in deleted))
            after = signal_observations(_after_image_gc(stats, deleted))
            # Upstream re-checks every configured threshold, with minimum reclaim and
            # regardless of grace periods: any one still met means pods must go.
            if not thresholds_met(self._thresholds, after, enforce_min_reclaim=True):
                return decision

        candidates = [p for p in active_pods() if not p.terminating]
        for pod in rank_pods(to_reclaim.signal, candidates, layout):
            if pod.critical:
                continue  # evictPod refuses critical pods; the next one in rank goes
            grace: float = IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS
            if not to_reclaim.hard:
                grace = self.config.max_pod_grace_period
                if pod.termination_grace_period_seconds is not None:
                    grace = min(grace, pod.termination_grace_period_seconds)
            message, annotations = eviction_message(resource, pod, ordered, observations)
            self._pending = (pod.key, now)
            return replace(
                decision,
                evict=(Eviction(pod.key, grace, message, to_reclaim.signal),),
                eviction_annotations=annotations,
            )
        return decision


def _after_image_gc(stats: NodeStats, deleted: Sequence[ImageStats]) -> NodeStats:
    """The stats once these images are gone: their bytes and inodes return to the
    filesystem that holds images (imagefs if separate, else nodefs)."""
    if not deleted:
        return stats
    freed = sum(i.size_bytes for i in deleted)
    freed_inodes = sum(i.inodes for i in deleted)
    if stats.imagefs_separate:
        return replace(
            stats,
            imagefs_available=stats.imagefs_available + freed,
            imagefs_inodes_free=stats.imagefs_inodes_free + freed_inodes,
        )
    return replace(
        stats,
        nodefs_available=stats.nodefs_available + freed,
        nodefs_inodes_free=stats.nodefs_inodes_free + freed_inodes,
    )


def admit(
    pod_qos: str,
    tolerates_memory_pressure: bool,
    conditions: Mapping[str, bool],
    *,
    critical: bool = False,
) -> tuple[bool, str, str]:
    """The eviction manager's pod admission (upstream managerImpl.Admit): (ok, reason,
    message).

    No pressure condition, or a critical pod: admitted. Memory pressure alone: admitted
    unless BestEffort, and BestEffort too if it tolerates the memory-pressure NoSchedule
    taint. Any other pressure condition (alone or with memory pressure): every pod is
    rejected with reason Evicted and "The node had condition: [DiskPressure]. ".
    """
    active = [c for c in CONDITIONS if conditions.get(c)]
    if not active or critical:
        return True, "", ""
    if active == [MEMORY_PRESSURE] and (pod_qos != QOS_BEST_EFFORT or tolerates_memory_pressure):
        return True, "", ""
    return False, REASON_EVICTED, f"The node had condition: [{' '.join(active)}]. "
