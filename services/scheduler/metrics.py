"""kube-scheduler's Prometheus metrics, with upstream's names, for one scheduler instance.

Dashboards and alerts written for kube-scheduler (pending pods per queue, which events requeue
pods, attempt latency per result) work unchanged against kubera because the names, labels and
histogram buckets are upstream's (pkg/scheduler/metrics/metrics.go). Every `SchedulerMetrics`
owns its own `CollectorRegistry`: tests and several schedulers in one process never collide on
the global registry, and the component that serves /metrics exposes `registry` explicitly.

One `SchedulerMetrics` lives as long as its process, as upstream's global registry does: a
replica hands the same one to the Scheduler of every leadership term, so counters and
histograms keep counting across terms and nothing observed after a term's last scrape is lost.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from services.scheduler.framework.status import Code

NAMESPACE = "scheduler"

#: The `queue` label values of pending_pods (upstream's ActivePods/BackoffPods/... recorders).
QUEUE_ACTIVE = "active"
QUEUE_BACKOFF = "backoff"
QUEUE_UNSCHEDULABLE = "unschedulable"
QUEUE_GATED = "gated"
PENDING_QUEUES = (QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED)

#: The `result` label values of schedule_attempts_total / scheduling_attempt_duration_seconds.
RESULT_SCHEDULED = "scheduled"
RESULT_UNSCHEDULABLE = "unschedulable"
RESULT_ERROR = "error"


def exponential_buckets(start: float, factor: float, count: int) -> list[float]:
    """Prometheus' ExponentialBuckets: `count` upper bounds start, start*factor, ..."""
    if count < 1 or start <= 0 or factor <= 1:
        raise ValueError("exponential_buckets needs count >= 1, start > 0, factor > 1")
    return [start * factor**i for i in range(count)]


def code_label(code: Code) -> str:
    """A Status code as upstream's Code.String() spells it ("UnschedulableAndUnresolvable")."""
    return "".join(part.capitalize() for part in code.name.split("_"))


class SchedulerMetrics:
    """The scheduler's metrics on a registry of their own.

    The scheduling queue uses `pending_pods` and `queue_incoming_pods_total` (and the PreEnqueue
    series of `framework_extension_point_duration_seconds`); the scheduling loop uses the rest.
    """

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        r = self.registry
        self.pending_pods = Gauge(
            "pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in "
            "activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number "
            "of pods in unschedulablePods that the scheduler attempted to schedule and failed; "
            "'gated' is the number of unschedulable pods that the scheduler never attempted to "
            "schedule because they are gated.",
            ["queue"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.queue_incoming_pods_total = Counter(
            "queue_incoming_pods_total",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.schedule_attempts_total = Counter(
            "schedule_attempts_total",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod "
            "could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.scheduling_attempt_duration_seconds = Histogram(
            "scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            namespace=NAMESPACE,
            registry=r,
            buckets=exponential_buckets(0.001, 2, 15),
        )
        self.framework_extension_point_duration_seconds = Histogram(
            "framework_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["extension_point", "status", "profile"],
            namespace=NAMESPACE,
            registry=r,
            buckets=exponential_buckets(0.0001, 2, 12),
        )
        self.pod_scheduling_attempts = Histogram(
            "pod_scheduling_attempts",
            "Number of attempts to successfully schedule a pod.",
            namespace=NAMESPACE,
            registry=r,
            buckets=exponential_buckets(1, 2, 5),
        )
        self.preemption_attempts_total = Counter(
            "preemption_attempts_total",
            "Total preemption attempts in the cluster till now",
            namespace=NAMESPACE,
            registry=r,
        )
        self.preemption_victims = Histogram(
            "preemption_victims",
            "Number of selected preemption victims",
            namespace=NAMESPACE,
            registry=r,
            buckets=exponential_buckets(1, 2, 7),
        )
        # Opportunistic batching (scheduler/batching.py), upstream's two counters.
        self.batch_attempts_total = Counter(
            "batch_attempts_total",
            "Counts of results when we attempt to use batching.",
            ["profile", "result"],
            namespace=NAMESPACE,
            registry=r,
        )
        self.batch_cache_flushed_total = Counter(
            "batch_cache_flushed_total",
            "Counts of cache flushes by reason.",
            ["profile", "reason"],
            namespace=NAMESPACE,
            registry=r,
        )
        self._shared_state: SharedStateMetrics | None = None
        self._pod_groups: PodGroupMetrics | None = None
        self._async_api_calls: AsyncAPICallMetrics | None = None
        #: (extension point, code, profile) -> its histogram child (labels() resolved once).
        self._extension_points: dict[tuple[str, Code, str], Any] = {}
        # Invariant: every queue label exists from the start, so an empty queue reads 0
        # rather than being absent from the exposition.
        self.reset_pending()

    def reset_pending(self) -> None:
        """Every pending_pods series to 0: a new term's queue starts empty (the gauges are
        absolute, set by the queue on every change)."""
        for queue in PENDING_QUEUES:
            self.pending_pods.labels(queue=queue).set(0)

    def shared_state(self) -> SharedStateMetrics:
        """The Omega series on this registry, registered once however many schedulers
        (terms) record into them."""
        if self._shared_state is None:
            self._shared_state = SharedStateMetrics(self.registry)
        return self._shared_state

    def pod_groups(self) -> PodGroupMetrics:
        """The pod-group series on this registry, registered once however many schedulers
        (terms) record into them."""
        if self._pod_groups is None:
            self._pod_groups = PodGroupMetrics(self.registry)
        return self._pod_groups

    def async_api_calls(self) -> AsyncAPICallMetrics:
        """The API dispatcher's series (SchedulerAsyncAPICalls; upstream registers them only
        with the gate on), registered once however many terms record into them."""
        if self._async_api_calls is None:
            self._async_api_calls = AsyncAPICallMetrics(self.registry)
        return self._async_api_calls

    def observe_attempt(self, result: str, profile: str, seconds: float) -> None:
        """One finished scheduling attempt (result: scheduled | unschedulable | error)."""
        self.schedule_attempts_total.labels(result=result, profile=profile).inc()
        self.scheduling_attempt_duration_seconds.labels(result=result, profile=profile).observe(
            seconds
        )

    def observe_extension_point(
        self, extension_point: str, code: Code, profile: str, seconds: float
    ) -> None:
        key = (extension_point, code, profile)
        child = self._extension_points.get(key)
        if child is None:
            child = self.framework_extension_point_duration_seconds.labels(
                extension_point=extension_point, status=code_label(code), profile=profile
            )
            self._extension_points[key] = child
        child.observe(seconds)


#: What the scheduling queue needs; the scheduler passes its SchedulerMetrics.
QueueMetrics = SchedulerMetrics


#: Shared-state (Omega) series: kube-scheduler has none, so they carry kubera's prefix.
SHARED_STATE_PREFIX = "kubera_scheduler_shared_state"


class AsyncAPICallMetrics:
    """The API dispatcher's calls (services/scheduler/dispatcher), upstream's names."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.execution_total = Counter(
            "async_api_call_execution_total",
            "Total number of API calls executed by the async dispatcher.",
            ["call_type", "result"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.execution_duration_seconds = Histogram(
            "async_api_call_execution_duration_seconds",
            "Duration in seconds for executing API call in the async dispatcher.",
            ["call_type", "result"],
            namespace=NAMESPACE,
            registry=registry,
            buckets=exponential_buckets(0.001, 2, 15),
        )
        self.pending_calls = Gauge(
            "pending_async_api_calls",
            "Number of API calls currently pending in the async queue.",
            ["call_type"],
            namespace=NAMESPACE,
            registry=registry,
        )


class SharedStateMetrics:
    """A shared-state replica's Omega measures (services/scheduler/omega.py), registered on
    the scheduler's registry beside the upstream series."""

    def __init__(self, registry: CollectorRegistry) -> None:
        p = SHARED_STATE_PREFIX
        self.binds_total = Counter(
            f"{p}_binds_total",
            "Binds this replica made that the apiserver accepted.",
            registry=registry,
        )
        self.conflicts_total = Counter(
            f"{p}_conflicts_total",
            "Binds this replica lost, by reason: 'allocation' means the node's allocation "
            "record no longer had room (the pod is requeued); 'pod' means another replica "
            "bound the pod first.",
            ["reason"],
            registry=registry,
        )
        self.conflict_fraction = Gauge(
            f"{p}_conflict_fraction",
            "Allocation conflicts per successful bind, since this replica started.",
            registry=registry,
        )
        self.busy_seconds_total = Counter(
            f"{p}_busy_seconds_total",
            "Seconds of scheduling and binding work, by whether the attempt ended bound "
            "('useful') or in a conflict ('wasted').",
            ["work"],
            registry=registry,
        )
        self.queue_wait_seconds = Histogram(
            f"{p}_queue_wait_seconds",
            "Time from a pod entering the queue to the start of the attempt that bound it.",
            registry=registry,
            buckets=exponential_buckets(0.001, 2, 18),
        )
        self.attempts_per_pod = Histogram(
            f"{p}_attempts_per_pod",
            "Attempts this replica made for each pod it bound.",
            registry=registry,
            buckets=(1, 2, 3, 4, 5, 8, 12, 16, 32),
        )
        for reason in ("allocation", "pod"):
            self.conflicts_total.labels(reason=reason)
        for work in ("useful", "wasted"):
            self.busy_seconds_total.labels(work=work)


#: The `result` label value of a pod group that fits only once victims are preempted
#: (upstream's WaitingOnPreemptionResult; kubera never records it, see PodGroupMetrics).
RESULT_WAITING_ON_PREEMPTION = "waiting_on_preemption"
#: The `type` label values of the pod-group series (upstream's entity types).
ENTITY_POD_GROUP = "podgroup"
ENTITY_COMPOSITE_POD_GROUP = "compositepodgroup"
#: The `preemptor` label value of a pod's preemption (upstream's preemptor types: "pod",
#: and "podgroup" for workload-aware preemption, which kubera does not do).
PREEMPTOR_POD = "pod"


class PodGroupMetrics:
    """Upstream's pod-group scheduling series and the workload-preemption ones a pod's
    preemption records (pkg/scheduler/metrics, alpha, registered there under the
    GenericWorkload gate; kubera has no gates and registers them always, with no sample
    until observed): names, labels and buckets as upstream's.

    Upstream observes them once per pod-group scheduling cycle (schedule_one_podgroup.go:
    the algorithm latency after the algorithm ran, the attempt and its latency when the
    result is submitted). kubera schedules a group pod by pod and decides at Permit; what
    one attempt is there, and which results it records, is podgroup_attempts.py's.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        self.schedule_attempts_total = Counter(
            "podgroup_schedule_attempts_total",
            "Number of attempts to schedule pod group, by the result, scheduler profile and "
            "entity type ('podgroup' or 'compositepodgroup'). 'unschedulable' means a pod "
            "group could not be scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile", "type"],
            namespace=NAMESPACE,
            registry=registry,
        )
        self.scheduling_attempt_duration_seconds = Histogram(
            "podgroup_scheduling_attempt_duration_seconds",
            "Pod group scheduling attempt latency in seconds",
            ["result", "profile", "type"],
            namespace=NAMESPACE,
            registry=registry,
            buckets=exponential_buckets(0.001, 2, 15),
        )
        self.scheduling_algorithm_duration_seconds = Histogram(
            "podgroup_scheduling_algorithm_duration_seconds",
            "Pod group scheduling algorithm latency in seconds",
            ["profile", "type"],
            namespace=NAMESPACE,
            registry=registry,
            buckets=exponential_buckets(0.001, 2, 15),
        )

        self.preemption_workload_disruptions = Histogram(
            "preemption_workload_disruptions",
            "Number of workload preemption units being preempted. A single preemption unit can "
            "be all pods in a pod group (in case of DisruptionMode=all), or a single pod (in "
            "case of DisruptionMode=single).",
            ["preemptor"],
            namespace=NAMESPACE,
            registry=registry,
            buckets=exponential_buckets(1, 2, 11),
        )
        self.preemption_pdb_violations_total = Counter(
            "preemption_pdb_violations_total",
            "Total number of pod disruption budget violations caused by preemption.",
            ["preemptor"],
            namespace=NAMESPACE,
            registry=registry,
        )

    def observe_preemption(
        self, pdb_violations: int, pod_group_disruptions: int, preemptor: str = PREEMPTOR_POD
    ) -> None:
        """One preemption carried out (upstream's executor, prepareCandidate): its PDB
        violations counted, and its units affecting pod groups observed when there are any."""
        self.preemption_pdb_violations_total.labels(preemptor=preemptor).inc(pdb_violations)
        if pod_group_disruptions > 0:
            self.preemption_workload_disruptions.labels(preemptor=preemptor).observe(
                pod_group_disruptions
            )

    def observe_attempt(
        self, result: str, profile: str, seconds: float, entity: str = ENTITY_POD_GROUP
    ) -> None:
        """One pod-group attempt's result (upstream's PodGroupScheduled, PodGroupUnschedulable,
        PodGroupWaitingOnPreemption, PodGroupScheduleError)."""
        self.schedule_attempts_total.labels(result=result, profile=profile, type=entity).inc()
        self.scheduling_attempt_duration_seconds.labels(
            result=result, profile=profile, type=entity
        ).observe(seconds)

    def observe_algorithm(
        self, profile: str, seconds: float, entity: str = ENTITY_POD_GROUP
    ) -> None:
        """The scheduling algorithm's time for one pod-group attempt (upstream's
        PodGroupAlgorithmLatency)."""
        self.scheduling_algorithm_duration_seconds.labels(profile=profile, type=entity).observe(
            seconds
        )
