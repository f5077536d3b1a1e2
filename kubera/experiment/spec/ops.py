"""One frozen dataclass per opcode of an experiment's `workloadTemplate`.

The upstream opcodes keep scheduler_perf's names and meanings (test/integration/scheduler_perf/
operations.go, dra.go for the DRA ones); kubera adds `chaos`, `check`, `memoryPressure`, `traceReplay` and
`waitForPodGroups` (for scheduler-plugins PodGroups). Fields are snake_case here and
camelCase in the YAML (`countParam` → `count_param`). Durations are seconds (floats) here and Go
durations ("500ms", "2m") in the YAML.

Two stages of the same dataclass:

- parsed (`TestCase.ops`): as written; `count` may be a placeholder 0 while `count_param`
  names a workload parameter (`"$initNodes"`);
- planned (`config.plan(test_case, workload)`): every `*_param` resolved into its field, every
  default applied (namespaces, stage requirement, signature batch size), so a runner reads only
  the plain fields. The `*_param` fields are kept as written, for the record.

Every op knows its `index` in the workload template; `op.phase` (`"createPods[2]"`) names its
phase in results.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from kubera.experiment.spec.templates import Template

#: createPods / churn default namespace, upstream's "namespace-<op index>".
DEFAULT_NAMESPACE_FORMAT = "namespace-{index}"

ChurnMode = Literal["create", "recreate"]
StageRequirement = Literal["Scheduled", "Attempted"]
ChaosAction = Literal[
    "killLeader",
    "pauseLeader",
    "partitionLeader",
    "restartEtcd",
    "killPool",
    "killApiserver",
    "random",
]
#: `chaos` with action `random`: the fault kinds its `kinds` may name → the action each is
#: (the kinds `kubera chaos run` and results use).
RANDOM_KINDS: dict[str, ChaosAction] = {
    "kill": "killLeader",
    "pause": "pauseLeader",
    "partition": "partitionLeader",
    "kill-apiserver": "killApiserver",
    "restart-etcd": "restartEtcd",
    "kill-pool": "killPool",
}
ChaosComponent = Literal["scheduler", "controller-manager"]


@dataclass(frozen=True, kw_only=True)
class BaseOp:
    """Fields every op has."""

    OPCODE: ClassVar[str] = ""

    index: int
    """Position in the test case's `workloadTemplate` (0-based); after `plan`, the position
    in the planned list (createPodSets unrolled), which upstream's default namespaces use."""
    param_refs: dict[str, str] = field(default_factory=dict)
    """kubera's ops: YAML field name → `"$name"` for fields given as a workload parameter
    (resolved, and emptied, by `plan`)."""

    @property
    def opcode(self) -> str:
        return self.OPCODE

    @property
    def phase(self) -> str:
        """The phase name in results: `"<opcode>[<index>]"`."""
        return f"{self.OPCODE}[{self.index}]"


# ---------------------------------------------------------------------------------------------
# Node preparation strategies (upstream test/utils: at most one per createNodes).


@dataclass(frozen=True, kw_only=True)
class UniqueNodeLabelStrategy:
    """Every node gets label `label_key` with a value unique to the node."""

    label_key: str
    """The label key, e.g. kubernetes.io/hostname."""


@dataclass(frozen=True, kw_only=True)
class LabelNodePrepareStrategy:
    """Nodes get label `label_key`, values taken round-robin from `label_values`."""

    label_key: str
    """The label key, e.g. topology.kubernetes.io/zone."""
    label_values: tuple[str, ...]
    """Values assigned in turn (node i gets label_values[i % len])."""


@dataclass(frozen=True, kw_only=True)
class NodeAllocatableStrategy:
    """Nodes get extra allocatable resources (upstream: attachable volumes for CSI)."""

    node_allocatable: dict[str, str]
    """Resource name → quantity set in each node's allocatable (upstream's PreparePatch)."""
    csi_node_allocatable: dict[str, Any] = field(default_factory=dict)
    """CSI driver name → {count: n}: each node gets a CSINode with these drivers (their
    allocatable), as upstream's PrepareDependentObjects."""
    migrated_plugins: tuple[str, ...] = ()
    """In-tree plugin names the nodes' CSINodes announce as migrated to CSI (annotation
    `storage.alpha.kubernetes.io/migrated-plugins`)."""


NodeStrategy = UniqueNodeLabelStrategy | LabelNodePrepareStrategy | NodeAllocatableStrategy


# ---------------------------------------------------------------------------------------------
# Upstream opcodes.


@dataclass(frozen=True, kw_only=True)
class CreateNodes(BaseOp):
    """createNodes: `count` nodes from `node_template` (or the default node), then the strategy.

    With `cluster.hollowNodes` the runner starts them as hollow kubelets; otherwise it creates
    plain Node objects through the API as upstream does."""

    OPCODE: ClassVar[str] = "createNodes"

    count: int
    """How many nodes (resolved from `count_param` when planned)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    node_template: Template | None = None
    """The node spec (`nodeTemplatePath`); None: upstream's default node (110 pods, 4 CPU, 32Gi)."""
    strategy: NodeStrategy | None = None
    """uniqueNodeLabelStrategy / labelNodePrepareStrategy / nodeAllocatableStrategy, or None."""
    template_params: dict[str, Any] = field(default_factory=dict)
    """Extra values for the template (`$name` values resolved from the workload's params)."""


@dataclass(frozen=True, kw_only=True)
class CreateNamespaces(BaseOp):
    """createNamespaces: namespaces `<prefix>-0` … `<prefix>-<count-1>`."""

    OPCODE: ClassVar[str] = "createNamespaces"

    prefix: str
    """Name prefix; namespace i is named f"{prefix}-{i}"."""
    count: int
    """How many namespaces (resolved from `count_param` when planned)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    namespace_template: Template | None = None
    """The Namespace spec (`namespaceTemplatePath`); None: a bare namespace."""

    def names(self) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(self.count)]


@dataclass(frozen=True, kw_only=True)
class CreatePods(BaseOp):
    """createPods: `count` pods from `pod_template` in `namespace`, and (unless
    `skip_wait_to_completion`) wait until they are all scheduled.

    `steady_state`: keep `count` pods, deleting each pod once scheduled and creating a new
    one, for `duration` seconds. `collect_metrics`: the op is a measurement window."""

    OPCODE: ClassVar[str] = "createPods"

    count: int
    """How many pods (resolved from `count_param` × `count_multiplier_param` when planned)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    count_multiplier_param: str | None = None
    """`"$name"` of a parameter `count` is multiplied by (pods per group × groups)."""
    namespace: str
    """Where the pods go; defaults to upstream's `namespace-<op index>`."""
    pod_template: Template | None = None
    """`podTemplatePath`, else the test case's `defaultPodTemplatePath`; None: upstream's
    default pod (see `DEFAULT_POD`)."""
    collect_metrics: bool = False
    """Measure scheduling throughput (and the scheduler's metrics) over this op."""
    skip_wait_to_completion: bool = False
    """Do not wait for the pods to be scheduled before the next op."""
    steady_state: bool = False
    """Keep `count` pods in flight: delete each scheduled pod and create another."""
    steady_state_param: str | None = None
    """`"$name"` of a boolean workload parameter giving `steady_state`."""
    duration: float = 0.0
    """Seconds of steady state (required > 0 when `steady_state`)."""
    duration_param: str | None = None
    """`"$name"` of a Go-duration string parameter giving `duration`."""
    template_params: dict[str, Any] = field(default_factory=dict)
    """Extra values for the template (`$name` values resolved from the workload's params)."""
    signature_batch_size: int = 1
    """Every this many consecutive pods share a "signature" label value (upstream default 1)."""
    signature_batch_size_param: str | None = None
    """`"$name"` of the workload parameter giving `signature_batch_size`."""
    pv_template: Template | None = None
    """`persistentVolumeTemplatePath`: with `pvc_template`, each pod gets its own
    PersistentVolume made from it (objects.volume_docs)."""
    pvc_template: Template | None = None
    """`persistentVolumeClaimTemplatePath`: each pod gets its own claim `pvc-<i>`, pre-bound
    to its volume, as its only volume (upstream CreatePodWithPersistentVolume)."""


@dataclass(frozen=True, kw_only=True)
class CreateAny(BaseOp):
    """createAny: `count` objects of any kind from `template` (rendered with .Index/.Count)."""

    OPCODE: ClassVar[str] = "createAny"

    template: Template
    """The object (`templatePath`), rendered per index."""
    namespace: str | None = None
    """Namespace for namespaced kinds; None for cluster-scoped ones."""
    count: int = 1
    """How many objects (upstream default 1)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    template_params: dict[str, Any] = field(default_factory=dict)
    """Extra values for the template (`$name` values resolved from the workload's params)."""


@dataclass(frozen=True, kw_only=True)
class CreatePodGroups(CreateAny):
    """createPodGroups: `count` scheduling.k8s.io PodGroups from `template` in `namespace`
    (rendered with .Index/.Count and `template_params`), for the pods a later createPods
    names through spec.schedulingGroup. Upstream then waits for the scheduler's informer to
    hold them; kubera's scheduler gates a pod whose PodGroup it has not seen yet and lets it
    in on the PodGroup's add event, so the op returns once the apiserver has them."""

    OPCODE: ClassVar[str] = "createPodGroups"

    namespace: str
    """Where the PodGroups go (required)."""


@dataclass(frozen=True, kw_only=True)
class Churn(BaseOp):
    """churn: in the background until the workload ends, every `interval_milliseconds` create
    one object from each template (`create`: at most `number` each, 0 = unlimited;
    `recreate`: `number` cycles of creating, then `number` of deleting, repeated)."""

    OPCODE: ClassVar[str] = "churn"

    mode: ChurnMode
    """"create" or "recreate"."""
    number: int = 0
    """create: the cap per template (0 = unlimited); recreate: the cycle length (> 0)."""
    interval_milliseconds: int = 500
    """Milliseconds between rounds (upstream default 500)."""
    namespace: str
    """Namespace of namespaced objects; defaults to `namespace-<op index>`."""
    templates: tuple[Template, ...]
    """The objects (`templatePaths`), any kind: Pod, Node, Service, …"""


@dataclass(frozen=True, kw_only=True)
class Barrier(BaseOp):
    """barrier: wait until every pod of `namespaces` (all when empty) matching
    `label_selector` reached `stage_requirement`."""

    OPCODE: ClassVar[str] = "barrier"

    namespaces: tuple[str, ...] = ()
    """Namespaces to wait on; empty: all."""
    label_selector: dict[str, str] = field(default_factory=dict)
    """Only pods with all these labels; empty: every pod."""
    stage_requirement: StageRequirement = "Scheduled"
    """"Scheduled" (bound) or "Attempted" (tried at least once)."""


@dataclass(frozen=True, kw_only=True)
class Sleep(BaseOp):
    """sleep: wait `duration` seconds."""

    OPCODE: ClassVar[str] = "sleep"

    duration: float = 0.0
    """Seconds (resolved from `duration_param` when planned)."""
    duration_param: str | None = None
    """`"$name"` of a Go-duration string parameter giving `duration`."""


@dataclass(frozen=True, kw_only=True)
class StartCollectingMetrics(BaseOp):
    """startCollectingMetrics: open a measurement window over `namespaces`."""

    OPCODE: ClassVar[str] = "startCollectingMetrics"

    name: str = ""
    """Suffix of the window's name in results (workload name + "/" + name when set)."""
    namespaces: tuple[str, ...]
    """Namespaces whose pods count for throughput (required, non-empty)."""
    label_selector: dict[str, str] = field(default_factory=dict)
    """Only pods with all these labels count; empty: every pod of the namespaces."""


@dataclass(frozen=True, kw_only=True)
class StopCollectingMetrics(BaseOp):
    """stopCollectingMetrics: close the window opened by startCollectingMetrics."""

    OPCODE: ClassVar[str] = "stopCollectingMetrics"


@dataclass(frozen=True, kw_only=True)
class DeletePods(BaseOp):
    """deletePods: delete the pods of `namespace` matching `label_selector`."""

    OPCODE: ClassVar[str] = "deletePods"

    namespace: str
    """Namespace of the pods (required)."""
    label_selector: dict[str, str] = field(default_factory=dict)
    """Only pods with all these labels; empty: every pod of the namespace."""
    skip_wait_to_completion: bool = False
    """Do not wait for the pods to be gone before the next op."""
    delete_pods_per_second: int = 0
    """Deletion rate; 0: all at once."""


@dataclass(frozen=True, kw_only=True)
class CreatePodSets(BaseOp):
    """createPodSets: `count` copies of `create_pods`, copy i in namespace
    `<namespace_prefix>-<i>`. Only in `TestCase.ops`: `plan` unrolls it into createPods ops,
    as upstream's unrollWorkloadTemplate does."""

    OPCODE: ClassVar[str] = "createPodSets"

    count: int
    """How many sets (resolved from `count_param` when planned)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    namespace_prefix: str = ""
    """Set i goes to namespace f"{namespace_prefix}-{i}"."""
    create_pods: CreatePods
    """The createPods op each set runs (`createPodsOp`)."""


@dataclass(frozen=True, kw_only=True)
class CreateResourceDriver(BaseOp):
    """createResourceDriver: a DRA driver's ResourceSlices, published through the API as a
    driver would: one slice per node whose name matches the glob `nodes` (the nodes there
    when the op runs), named after the node, pool = the node, `max_claims_per_node` devices
    `instance-<i>` with upstream's attributes (kubera.experiment.run.dra.resource_slice_doc)."""

    OPCODE: ClassVar[str] = "createResourceDriver"

    driver_name: str
    """The driver (`driverName`), e.g. test-driver.cdi.k8s.io."""
    nodes: str
    """Glob over node names (Go filepath.Match / fnmatch), e.g. scheduler-perf-dra-*."""
    max_claims_per_node: int = 0
    """Devices per node (resolved from `max_claims_per_node_param` when planned)."""
    max_claims_per_node_param: str | None = None
    """`"$name"` of the workload parameter giving `max_claims_per_node`."""


@dataclass(frozen=True, kw_only=True)
class CreateResourceClaims(BaseOp):
    """createResourceClaims: `count` ResourceClaims from `template` in `namespace`."""

    OPCODE: ClassVar[str] = "createResourceClaims"

    count: int
    """How many claims (resolved from `count_param` when planned)."""
    count_param: str | None = None
    """`"$name"` of the workload parameter giving `count`."""
    namespace: str
    """Where the claims go (required, as upstream)."""
    template: Template
    """The ResourceClaim (`templatePath`), rendered per index."""


@dataclass(frozen=True, kw_only=True)
class AllocResourceClaims(BaseOp):
    """allocResourceClaims: allocate every unallocated claim of `namespace` (all when empty)
    without a pod, one claim at a time on a random node where it fits, as upstream does to
    pre-fill a cluster (its status.allocation written, no reservedFor)."""

    OPCODE: ClassVar[str] = "allocResourceClaims"

    namespace: str = ""
    """Namespace of the claims; empty: every namespace."""


@dataclass(frozen=True, kw_only=True)
class WaitForPodGroups(BaseOp):
    """waitForPodGroups (kubera's definition; upstream scheduler_perf has no such op for
    scheduler-plugins PodGroups): wait until every PodGroup of `namespace` (all when empty)
    there when the op starts has at least `spec.minMember` pods bound, counted by the pod-group
    label on the collector's pod timeline (not the PodGroup's status, which a controller
    writes later)."""

    OPCODE: ClassVar[str] = "waitForPodGroups"

    namespace: str = ""
    """Namespace of the PodGroups; empty: every namespace."""


# ---------------------------------------------------------------------------------------------
# kubera's opcodes.


@dataclass(frozen=True, kw_only=True)
class Chaos(BaseOp):
    """chaos (kubera): inject faults while later ops run. Runs in the background: `at`
    seconds after the op starts (neither `at` nor `every`: at once), or every `every`
    seconds `times` times (the first after `every`); see `offsets()`."""

    OPCODE: ClassVar[str] = "chaos"

    action: ChaosAction
    """killLeader | pauseLeader | partitionLeader | restartEtcd | killPool | killApiserver."""
    component: ChaosComponent = "scheduler"
    """Whose leader (for the *Leader actions): scheduler | controller-manager."""
    duration: float | None = None
    """Seconds a pause/partition lasts (required for pauseLeader and partitionLeader)."""
    at: float | None = None
    """One fault, this many seconds after the op starts (exclusive with `every`)."""
    every: float | None = None
    """A fault every this many seconds (with `times`)."""
    times: int = 1
    """How many faults with `every` (1 with `at`)."""
    pool: str | None = None
    """The node pool to kill (killPool; None: the first pool)."""
    kinds: tuple[str, ...] = ()
    """action random: the mix each fault is drawn from, uniformly (a kind named twice is
    drawn twice as often): kill, pause, partition, kill-apiserver, restart-etcd, kill-pool
    (`RANDOM_KINDS`), as `kubera bench chaos --kinds` drew them."""
    seed: int = 1
    """action random: the draw's seed, so a run can be repeated."""

    def draws(self) -> list[ChaosAction]:
        """The action of each fault (action random: drawn from `kinds` with `seed`)."""
        n = len(self.offsets())
        if self.action != "random":
            return [self.action] * n
        rng = random.Random(self.seed)
        return [RANDOM_KINDS[rng.choice(self.kinds)] for _ in range(n)]

    def offsets(self) -> list[float]:
        """Seconds after the op's start of each fault."""
        if self.every is not None:
            return [self.every * (i + 1) for i in range(self.times)]
        return [self.at or 0.0]


@dataclass(frozen=True, kw_only=True)
class MemoryPressure(BaseOp):
    """memoryPressure (kubera, hollow nodes): put `nodes` nodes (spread over the sorted
    names) under memory pressure at once, a node-level usage that leaves `leave` bytes of
    memory available (below the 100Mi hard threshold: one 100Mi pod's eviction resolves
    it), and time until every one of them has evicted a pod: the run's
    `eviction_reaction_s` (`kubera bench nodes --pressure-nodes`). 0 nodes: nothing."""

    OPCODE: ClassVar[str] = "memoryPressure"

    nodes: int = 0
    """How many nodes."""
    leave: str = "50Mi"
    """Memory left available on each (a quantity)."""
    timeout: float = 300.0
    """Seconds to wait for every node's eviction."""


@dataclass(frozen=True, kw_only=True)
class Check(BaseOp):
    """check (kubera): let the cluster settle `settle` seconds, then run the history checker
    and store its verdict."""

    OPCODE: ClassVar[str] = "check"

    settle: float = 5.0
    """Seconds to wait before checking."""


@dataclass(frozen=True, kw_only=True)
class TraceReplay(BaseOp):
    """traceReplay (kubera): create (and delete) pods as an Alibaba openb trace says, its
    times divided by `time_scale` (2.0: twice as fast). Nodes from `node_trace_path` first,
    when given. See kubera.experiment.spec.trace for the CSV schema and the pod mapping."""

    OPCODE: ClassVar[str] = "traceReplay"

    pod_trace_path: str
    """openb_pod_list CSV, absolute (resolved relative to the config file)."""
    node_trace_path: str | None = None
    """openb_node_list CSV, absolute; None: the nodes come from createNodes."""
    time_scale: float = 1.0
    """Trace seconds per wall second."""
    limit: int | None = None
    """Replay only the first `limit` pods (by creation time); None: all."""
    namespace: str
    """Namespace of the pods; defaults to `namespace-<op index>`."""
    gpu_resource_name: str = "nvidia.com/gpu"
    """Extended resource name for whole GPUs."""


Op = (
    CreateNodes
    | CreateNamespaces
    | CreatePods
    | CreateAny
    | Churn
    | Barrier
    | Sleep
    | StartCollectingMetrics
    | StopCollectingMetrics
    | DeletePods
    | Chaos
    | Check
    | MemoryPressure
    | TraceReplay
    | CreateResourceDriver
    | CreateResourceClaims
    | AllocResourceClaims
    | WaitForPodGroups
)

#: What a test case's `workloadTemplate` holds: the ops, and createPodSets before `plan`.
TemplateOp = Op | CreatePodSets

#: opcode → dataclass, every opcode kubera runs.
OP_TYPES: dict[str, type[BaseOp]] = {
    t.OPCODE: t
    for t in (
        CreateNodes,
        CreateNamespaces,
        CreatePods,
        CreateAny,
        CreatePodGroups,
        Churn,
        Barrier,
        Sleep,
        StartCollectingMetrics,
        StopCollectingMetrics,
        DeletePods,
        CreatePodSets,
        Chaos,
        Check,
        MemoryPressure,
        TraceReplay,
        CreateResourceDriver,
        CreateResourceClaims,
        AllocResourceClaims,
        WaitForPodGroups,
    )
}

#: Upstream opcodes kubera does not run, each with the reason given in the error.
UNSUPPORTED_OPCODES: dict[str, str] = {
    "updateAny": "object updates from templates are not implemented",
    "createCompositePodGroups": "CompositePodGroups (scheduling.k8s.io, the "
    "CompositePodGroup gate) are not served",
}

#: upstream's default pod (util.go makeBasePod): one pause container requesting 100m / 500Mi.
DEFAULT_POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"generateName": "pod-"},
    "spec": {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10",
                "ports": [{"containerPort": 80}],
                "resources": {
                    "limits": {"cpu": "100m", "memory": "500Mi"},
                    "requests": {"cpu": "100m", "memory": "500Mi"},
                },
            }
        ]
    },
}

#: upstream's default node (util.go / test/utils): 110 pods, 4 CPU, 32Gi.
DEFAULT_NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"generateName": "scheduler-perf-"},
    "status": {
        "capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
        "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}
