"""The hollow kubelet's node-pressure eviction manager, as pure logic.

A real kubelet watches memory, disk, inodes and PIDs and, when one runs short, first frees
node-level resources (unused images) and then fails one pod per housekeeping pass. kubera
runs thousands of hollow kubelets in one process, so this module is the decision only: the
node pool observes usage, calls :meth:`EvictionManager.synchronize` once per monitoring
period with plain numbers, and carries out the returned :class:`Decision` (post node
conditions, forget images, kill a pod with phase Failed / reason ``Evicted``). Nothing here
does I/O, reads a clock or needs asyncio; ``now`` is always a parameter.

Everything follows upstream ``pkg/kubelet/eviction`` (eviction_manager.go, helpers.go,
api/types.go) and the seeds' "Node-pressure Eviction" page:

* thresholds ``signal < quantity | percentage``; percentages are float32 fractions of the
  signal's capacity, truncated to an integer amount (GetThresholdQuantity);
* a threshold is met when ``available < amount`` (strictly); a threshold that drove an
  eviction stays met until ``available >= amount + minimum reclaim``;
* soft thresholds drive evictions only after being met continuously for their grace period;
  node conditions appear as soon as any threshold (hard or soft) is met and stay for
  ``pressure_transition_period`` after the last time one was;
* memory is reclaimed before anything else; disk signals first delete unused images (per
  filesystem layout, as buildSignalToNodeReclaimFuncs) and evict only if, after that, some
  configured threshold is still met with its minimum reclaim;
* pods are ranked per resource (rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure)
  and at most one pod is evicted per pass; critical pods (static, or priority at least
  2,000,000,000) are never evicted; hard thresholds kill with the immediate grace period
  (1 s upstream), soft ones with min(evictionMaxPodGracePeriod, the pod's grace).

Where upstream leaves an order to Go's map iteration or an unstable sort, this module picks
a deterministic one and says so at the spot.

The package, by responsibility (each module's docstring says more):

* :mod:`.signals` — signal, condition and resource names and how they map onto each other;
* :mod:`.thresholds` — :class:`Percentage`, :class:`Threshold` and which thresholds are met;
* :mod:`.config` — :class:`EvictionConfig` (KubeletConfiguration keys, defaults, validation);
* :mod:`.observations` — :class:`NodeStats`, :class:`PodStats`, :class:`ImageStats` and the
  signal observations derived from them;
* :mod:`.ranking` — which pod goes first under pressure on each signal;
* :mod:`.manager` — :class:`EvictionManager` (one pass → :class:`Decision`), the eviction
  message and pod admission.

Callers import from here (``from services.kubelet import eviction as ev``); the modules
are an implementation layout.
"""

from services.kubelet.eviction.config import (
    DEFAULT_EVICTION_HARD,
    DEFAULT_MONITORING_PERIOD,
    DEFAULT_PRESSURE_TRANSITION_PERIOD,
    EvictionConfig,
    EvictionConfigError,
)
from services.kubelet.eviction.manager import (
    IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS,
    POD_CLEANUP_TIMEOUT_SECONDS,
    REASON_EVICTED,
    Decision,
    Eviction,
    EvictionManager,
    PodSource,
    admit,
    eviction_message,
    node_conditions,
)
from services.kubelet.eviction.observations import (
    QOS_BEST_EFFORT,
    SYSTEM_CRITICAL_PRIORITY,
    ContainerStats,
    FsLayout,
    ImageStats,
    NodeStats,
    Observation,
    PodStats,
    signal_observations,
)
from services.kubelet.eviction.ranking import (
    pod_disk_usage,
    rank_disk_pressure,
    rank_measures,
    rank_memory_pressure,
    rank_pid_pressure,
    rank_pods,
)
from services.kubelet.eviction.signals import (
    CONDITION_TAINTS,
    CONDITIONS,
    CONTAINERFS_AVAILABLE,
    CONTAINERFS_INODES_FREE,
    DISK_PRESSURE,
    DISK_SIGNALS,
    IMAGEFS_AVAILABLE,
    IMAGEFS_INODES_FREE,
    MEMORY_AVAILABLE,
    MEMORY_PRESSURE,
    NODEFS_AVAILABLE,
    NODEFS_INODES_FREE,
    PID_AVAILABLE,
    PID_PRESSURE,
    RESOURCE_EPHEMERAL_STORAGE,
    RESOURCE_INODES,
    RESOURCE_MEMORY,
    RESOURCE_PIDS,
    SIGNAL_TO_CONDITION,
    SIGNAL_TO_RESOURCE,
    SIGNALS,
)
from services.kubelet.eviction.thresholds import (
    Amount,
    Percentage,
    Threshold,
    format_quantity,
    parse_percentage,
    thresholds_for_layout,
    thresholds_met,
)

__all__ = [
    "Amount",
    "CONDITIONS",
    "CONDITION_TAINTS",
    "CONTAINERFS_AVAILABLE",
    "CONTAINERFS_INODES_FREE",
    "ContainerStats",
    "DEFAULT_EVICTION_HARD",
    "DEFAULT_MONITORING_PERIOD",
    "DEFAULT_PRESSURE_TRANSITION_PERIOD",
    "DISK_PRESSURE",
    "DISK_SIGNALS",
    "Decision",
    "Eviction",
    "EvictionConfig",
    "EvictionConfigError",
    "EvictionManager",
    "FsLayout",
    "IMAGEFS_AVAILABLE",
    "IMAGEFS_INODES_FREE",
    "IMMEDIATE_EVICTION_GRACE_PERIOD_SECONDS",
    "ImageStats",
    "MEMORY_AVAILABLE",
    "MEMORY_PRESSURE",
    "NODEFS_AVAILABLE",
    "NODEFS_INODES_FREE",
    "NodeStats",
    "Observation",
    "PID_AVAILABLE",
    "PID_PRESSURE",
    "POD_CLEANUP_TIMEOUT_SECONDS",
    "Percentage",
    "PodSource",
    "PodStats",
    "QOS_BEST_EFFORT",
    "REASON_EVICTED",
    "RESOURCE_EPHEMERAL_STORAGE",
    "RESOURCE_INODES",
    "RESOURCE_MEMORY",
    "RESOURCE_PIDS",
    "SIGNALS",
    "SIGNAL_TO_CONDITION",
    "SIGNAL_TO_RESOURCE",
    "SYSTEM_CRITICAL_PRIORITY",
    "Threshold",
    "admit",
    "eviction_message",
    "format_quantity",
    "node_conditions",
    "parse_percentage",
    "pod_disk_usage",
    "rank_disk_pressure",
    "rank_measures",
    "rank_memory_pressure",
    "rank_pid_pressure",
    "rank_pods",
    "signal_observations",
    "thresholds_for_layout",
    "thresholds_met",
]
