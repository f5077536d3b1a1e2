"""What a pool knows of each hollow node and each pod it runs: plain records, shared by the
pool's loops (services/kubelet/pool.py) and the builders of what it writes (nodestatus,
podstatus, pressure), and how a pool runs (PoolConfig, which pool.py re-exports)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protos.kubera.v1 import core_pb2
from services.api.helpers.stages import Stages
from services.kubelet import eviction as ev
from services.kubelet.containers import ContainerRun
from services.kubelet.template import NodePlan

#: The pressure conditions a kubelet reports, in upstream's order.
PRESSURE_CONDITIONS = ev.CONDITIONS


@dataclass
class HollowNode:
    #: The node's place in its pool (row of the pool's per-node arrays).
    index: int
    #: Its place in the whole cluster (its node and pod IPs derive from it).
    ordinal: int
    plan: NodePlan
    manager: ev.EvictionManager
    eviction: ev.EvictionConfig
    alive: bool = True
    registered: bool = False
    status: core_pb2.NodeStatus = field(default_factory=core_pb2.NodeStatus)
    conditions: dict[str, bool] = field(
        default_factory=lambda: dict.fromkeys(PRESSURE_CONDITIONS, False)
    )
    #: image name → size in bytes (what the node has pulled)
    images: dict[str, int] = field(default_factory=dict)
    pods: set[str] = field(default_factory=set)
    #: node-level usage added on purpose (experiments: a runaway system daemon)
    extra: dict[str, int] = field(default_factory=dict)
    last_status_post: float = 0.0
    lease_renewed: float = 0.0
    #: (pod uid, generation, step) of steps that fell due while the node was killed
    parked: list[tuple[str, int, str]] = field(default_factory=list)
    ip_seq: int = 0
    evictions: int = 0

    @property
    def name(self) -> str:
        return self.plan.name


@dataclass
class PodState:
    uid: str
    pod: core_pb2.Pod
    node: HollowNode
    stages: Stages
    phase: str = "Pending"  # the kubelet's own: Pending, Creating, Running, Succeeded, Failed
    #: bumped whenever queued steps must be forgotten (deletion, eviction)
    gen: int = 0
    started_at: float = 0.0
    restarts: int = 0
    deleting: bool = False
    evicted: bool = False
    #: Its containers, init containers first (None until ContainerCreating, or for a pod
    #: taken over Running after a pool restart: those run on untracked).
    runs: list[ContainerRun] | None = None
    #: Every regular init container succeeded (and every sidecar started).
    initialized: bool = False
    #: The index in `runs` of the container whose memory the usage model is (the app
    #: container with the largest memory limit, else the first): its start restarts
    #: the pod's usage curve, its limit is the one the curve may pass (OOMKilled).
    usage_run: int = -1
    memory_limit: float | None = None
    ip: str = ""
    #: The status this kubelet last wrote (serialized: ~0.3 KB where a message takes
    #: ~2.5 KB, times 100,000 pods): the base of its next write, so a step that runs
    #: before the watch has shown the previous one loses nothing.
    written: bytes | None = None

    @property
    def key(self) -> str:
        return f"{self.pod.metadata.namespace}/{self.pod.metadata.name}"


@dataclass(frozen=True)
class PoolConfig:
    """How a pool runs its kubelets. Durations are simulated seconds."""

    #: The pool's name (its actor's name; the holder of nothing, just for logs).
    name: str = "pool-0"
    #: Node leases: their duration and how often they are renewed (upstream: 40 s and
    #: a quarter of it).
    lease_duration_seconds: int = 40
    lease_renew_interval: float = 10.0
    #: How often the Ready heartbeat is posted to node status when nothing changed
    #: (upstream nodeStatusReportFrequency).
    node_status_report_frequency: float = 300.0
    #: One pod watch per node (realistic apiserver load) instead of one per pool.
    watch_per_node: bool = False
    #: Workers deleting pods whose grace period is over (RPCs in flight at once).
    workers: int = 16
    #: Largest BatchUpdate call.
    max_batch: int = 500
    seed: int | None = None
    #: The cluster-wide number of this pool's first node (node and pod IPs derive from it).
    first_ordinal: int = 0

    def __post_init__(self) -> None:
        if self.lease_duration_seconds <= 0:
            raise ValueError("lease_duration_seconds must be positive")
        if not 0 < self.lease_renew_interval < self.lease_duration_seconds:
            raise ValueError("lease_renew_interval must be positive and below the lease duration")
        if self.workers < 1 or self.max_batch < 1:
            raise ValueError("workers and max_batch must be at least 1")
