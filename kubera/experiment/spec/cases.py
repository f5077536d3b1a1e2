"""The shapes of a loaded experiment: test cases, workloads, cluster settings (frozen).

kubera.experiment.spec.config builds them from a file (`load`) and fills a test case's ops in for
a workload (`plan`); kubera.experiment.spec.ops holds the ops themselves.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from kubera.experiment.spec.fields import ConfigError
from kubera.experiment.spec.ops import TemplateOp
from kubera.experiment.spec.templates import Template
from services.apiserver import SCHEDULER_PERF_DISABLED
from services.leaderelection import LeaseTimings

SchedulerMode = Literal["leader", "shared-state"]


@dataclass(frozen=True, kw_only=True)
class ClusterSettings:
    """kubera's `cluster:` block: the cluster a workload runs on (a fresh one per run).

    Written in the test case and/or the workload (the workload's keys win); every value may
    be a `$param`. Unset keys keep these defaults."""

    hollow_nodes: bool = False
    """True: createNodes starts hollow kubelets (`kubera up --nodes N --node-template`), so
    pods become Running; False: plain Node objects created through the API, as upstream."""
    node_template: Template | None = None
    """`nodeTemplatePath`: a kubera NodeTemplate (`kubera up --node-template`, checked at load)
    for the hollow kubelets; None: kubera's default node."""
    schedulers: int = 1
    """Scheduler replicas."""
    scheduler_mode: SchedulerMode = "leader"
    """leader: one active scheduler, the others standbys; shared-state: all schedule."""
    shared_state_partition: Literal["hash", "none"] = "hash"
    """`sharedStatePartition` (shared-state mode): hash — each pod belongs to one replica;
    none — every replica tries every pod (`kubera up --shared-state-partition`)."""
    controller_managers: int = 1
    """Controller-manager replicas (0: none)."""
    apiservers: int = 1
    """`apiServers`: active-active apiserver replicas (`kubera up --apiservers K`)."""
    leader_election: LeaseTimings | None = None
    """`leaderElection: {leaseDuration, renewDeadline, retryPeriod}`; None: kubera's defaults."""
    time_scale: float = 1.0
    """kubera's time scale (>1 runs kubelet/controller timers faster)."""
    nodes_per_pool: int | None = None
    """`nodesPerPool`: hollow nodes per node-pool actor (`kubera up --nodes-per-pool`);
    None: kubera up's default."""
    scheduler_config: str | None = None
    """Text of `schedulerConfigPath` (a KubeSchedulerConfiguration), or None."""
    scheduler_config_path: str | None = None
    """Absolute path of that file, or None."""
    disable_admission_plugins: tuple[str, ...] = SCHEDULER_PERF_DISABLED
    """`disableAdmissionPlugins`: what the apiserver does not run (`kubera up
    --disable-admission-plugins`); upstream scheduler_perf's set unless given (`[]`: all
    run, for files whose pods take their priority from a PriorityClass)."""


@dataclass(frozen=True, kw_only=True)
class ThresholdMetricSelector:
    """Which DataItem the threshold is compared with (upstream thresholdMetricSelector)."""

    name: str = "SchedulingThroughput"
    """The DataItem's "Metric" label."""
    labels: dict[str, str] = field(default_factory=dict)
    """Further labels the DataItem must carry."""
    data_bucket: str = "Average"
    """The data key compared: Average, Perc50, Perc90, Perc95, Perc99."""
    expect_lower: bool = False
    """True: the threshold is a maximum; False: a minimum (the workload fails below it)."""


@dataclass(frozen=True, kw_only=True)
class Workload:
    """One workload of a test case; one run per workload (per sweep point)."""

    name: str
    """The workload's name; a sweep point's name carries the point: `500Nodes/schedulers=2`."""
    params: dict[str, Any] = field(default_factory=dict)
    """Parameters referenced as `$name` by the ops (the sweep point's values merged in)."""
    labels: tuple[str, ...] = ()
    """The workload's labels (upstream uses them to select workloads)."""
    threshold: float | None = None
    """Minimum (or maximum, see threshold_metric) of the selected metric; None: no check.
    Upstream's per-topic map form keeps its "" or first topic's value."""
    threshold_metric: str = "SchedulingThroughput"
    """The metric name of `threshold_metric_selector` (the results' `threshold_metric`)."""
    threshold_metric_selector: ThresholdMetricSelector = field(
        default_factory=ThresholdMetricSelector
    )
    """The full selector (workload's, else the test case's default, else SchedulingThroughput)."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """Feature gates as written (test case's merged with the workload's); the scheduler's
    (features.CLUSTER_GATES) go to `kubera up --feature-gates`, the others are ignored."""
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    """The cluster this workload runs on (test case's `cluster:` overridden by the workload's,
    `$param`s resolved)."""
    sweep: dict[str, Any] = field(default_factory=dict)
    """This run's sweep point, e.g. {"schedulers": 2}; {} when not a sweep point."""
    base_name: str = ""
    """The workload's name before sweep expansion (== name when not a sweep point)."""


@dataclass(frozen=True, kw_only=True)
class TestCase:
    """One test case: a workload template and the workloads that fill it in."""

    __test__ = False  # not a pytest class

    name: str
    """The test case's name."""
    ops: list[TemplateOp]
    """The `workloadTemplate`, parsed (params not yet substituted; see `plan`)."""
    workloads: list[Workload]
    """The workloads, sweeps expanded."""
    labels: tuple[str, ...] = ()
    """The test case's labels."""
    feature_gates: dict[str, bool] = field(default_factory=dict)
    """Feature gates as written; kept, ignored."""
    scheduler_config: str | None = None
    """Text of `schedulerConfigPath`, or None."""
    scheduler_config_path: str | None = None
    """Absolute path of `schedulerConfigPath`, or None."""
    default_pod_template: Template | None = None
    """`defaultPodTemplatePath`, used by createPods without podTemplatePath."""
    metrics_collector_config: dict[str, Any] | None = None
    """`metricsCollectorConfig` as written (kept as data)."""
    cluster: ClusterSettings = field(default_factory=ClusterSettings)
    """The test case's own `cluster:` block (before workload overrides)."""
    index: int = 0
    """Position in the file's list."""
    path: str = ""
    """The experiment file it came from (as given to `load`), for error messages."""
    unsupported: str | None = None
    """Why kubera cannot run this test case (`<where>: <what>`: steady-state persistent volumes, updateAny, …);
    such a test case is kept with no ops and no workloads, and a warning says so."""
    skipped_workloads: tuple[str, ...] = ()
    """The names of the workloads an unsupported test case would have run."""

    def workload(self, name: str) -> Workload:
        """The workload called `name` (a sweep point's full name, or its base name when the
        sweep has one point); KeyError if none."""
        for w in self.workloads:
            if w.name == name:
                return w
        raise KeyError(name)


@dataclass(frozen=True, kw_only=True)
class Experiment:
    """A loaded experiment file."""

    path: str
    """The file as given to `load`."""
    test_cases: list[TestCase]
    """Its test cases, in file order."""
    warnings: tuple[str, ...] = ()
    """Things accepted but ignored (feature gates, …), each naming its path."""

    def runs(self, workload: str | None = None) -> list[tuple[TestCase, Workload]]:
        """Every (test case, workload) pair in file order; with `workload`, those whose
        workload name, base name or `<test case>/<workload>` equals it. Asking for a workload
        of an unsupported test case raises ConfigError saying why it cannot run."""
        out = []
        for tc in self.test_cases:
            for w in tc.workloads:
                names = {w.name, w.base_name, f"{tc.name}/{w.name}", f"{tc.name}/{w.base_name}"}
                if workload is None or workload in names:
                    out.append((tc, w))
        if workload is not None and not out:
            for tc in self.test_cases:
                names = {n for w in tc.skipped_workloads for n in (w, f"{tc.name}/{w}")}
                if tc.unsupported and (workload in names or workload.split("/")[0] == tc.name):
                    raise ConfigError(f"{self.path}: {tc.unsupported}")
        return out
