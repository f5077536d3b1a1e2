"""The results data model of ``kubera experiment``: what one run measured, as plain values.

The JSON form (``results.json``, version ``kubera.experiment/v1``) is the contract between the
runner that measures and the writers that turn a run into DataItems, CSV series, plots and
report.html; ``to_json``/``from_json`` round-trip it exactly. All times are seconds since the
run's ``t0`` (a unix time), so runs compare by shape.

The small records (phases, windows, faults, leader terms, replica counts, the checker's verdict)
are frozen. ``RunResult`` and ``ExperimentResult`` are not: the runner fills a run as it goes
(series appended per second, faults as they fire) and hands it over when the run ends.

This module imports nothing of kubera: ``results`` (load/write) and every writer import it.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
import re
from typing import Any

VERSION = "kubera.experiment/v1"
"""The ``version`` of results.json this module reads and writes."""

FAULT_KINDS = ("kill", "pause", "partition", "restart-etcd", "kill-pool", "kill-apiserver")
"""The fault kinds the chaos op records (``Fault.kind``)."""


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclasses.dataclass(frozen=True)
class Phase:
    """One executed op: its display name (``createPods[2]``: opcode and index in the plan)."""

    name: str
    opcode: str
    start: float
    end: float

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Phase:
        return cls(
            name=str(data["name"]),
            opcode=str(data["opcode"]),
            start=float(data["start"]),
            end=float(data["end"]),
        )


@dataclasses.dataclass(frozen=True)
class Window:
    """A collectMetrics window (createPods with collectMetrics, or start/stopCollectingMetrics)."""

    start: float
    end: float
    name: str = ""

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Window:
        return cls(
            start=float(data["start"]), end=float(data["end"]), name=str(data.get("name", ""))
        )


@dataclasses.dataclass(frozen=True)
class Fault:
    """One injected fault: when, what (``FAULT_KINDS``), on whom, and for how long (pause,
    partition) or ``None`` (instantaneous)."""

    t: float
    kind: str
    target: str
    duration: float | None = None

    @property
    def end(self) -> float | None:
        """When an interval fault (pause, partition) was lifted; None for instantaneous ones."""
        return None if self.duration is None else self.t + self.duration

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Fault:
        return cls(
            t=float(data["t"]),
            kind=str(data["kind"]),
            target=str(data["target"]),
            duration=_opt_float(data.get("duration")),
        )


@dataclasses.dataclass(frozen=True)
class LeaderTerm:
    """One leadership term of a component's lease: ``end`` is None while it still held at the
    run's end."""

    component: str
    identity: str
    start: float
    end: float | None = None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LeaderTerm:
        return cls(
            component=str(data["component"]),
            identity=str(data["identity"]),
            start=float(data["start"]),
            end=_opt_float(data.get("end")),
        )


@dataclasses.dataclass(frozen=True)
class ReplicaStats:
    """A scheduler replica's binds and bind conflicts (shared-state mode loses races), and
    in shared-state mode Omega's measures (services/scheduler/omega.py, as `kubera bench
    shared-state` reported them): `lost` binds of pods another replica had bound first
    (counted in `conflicts` too), and the scheduling-cycle seconds of attempts that ended
    bound (`useful_busy_s`) or in either kind of conflict (`wasted_busy_s`)."""

    name: str
    binds: int
    conflicts: int
    lost: int = 0
    useful_busy_s: float = 0.0
    wasted_busy_s: float = 0.0
    preemption_attempts: int = 0
    """DefaultPreemption's attempts (upstream's scheduler_preemption_attempts_total)."""
    preemption_victims: int = 0
    """The victims it chose (the sum of upstream's scheduler_preemption_victims)."""
    batched_pods: int = 0
    """Pods placed from an opportunistic batch (scheduler_batch_attempts_total hint_used)."""
    unbatched_pods: int = 0
    """Attempts that asked for a batch and got none (its no_hint)."""

    @property
    def conflict_fraction(self) -> float:
        """Conflicts per bind attempt (binds + conflicts); 0 when it never tried."""
        attempts = self.binds + self.conflicts
        return self.conflicts / attempts if attempts else 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ReplicaStats:
        return cls(
            name=str(data["name"]),
            binds=int(data["binds"]),
            conflicts=int(data["conflicts"]),
            lost=int(data.get("lost", 0)),
            useful_busy_s=float(data.get("useful_busy_s", 0.0)),
            wasted_busy_s=float(data.get("wasted_busy_s", 0.0)),
            preemption_attempts=int(data.get("preemption_attempts", 0)),
            preemption_victims=int(data.get("preemption_victims", 0)),
            batched_pods=int(data.get("batched_pods", 0)),
            unbatched_pods=int(data.get("unbatched_pods", 0)),
        )


@dataclasses.dataclass(frozen=True)
class CheckVerdict:
    """The history checker's verdict of a ``check`` op."""

    ok: bool
    violations: tuple[str, ...] = ()
    summary: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "violations": list(self.violations), "summary": self.summary}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> CheckVerdict:
        return cls(
            ok=bool(data["ok"]),
            violations=tuple(str(v) for v in data.get("violations", ())),
            summary=str(data.get("summary", "")),
        )


@dataclasses.dataclass(frozen=True)
class MetricsSnapshots:
    """The Prometheus text exposition of every scheduler process at one collectMetrics
    window's start and end, keyed by process registry (``scheduler-0``; ``scheduler-0#1`` for
    its next term's registry); the window's histogram DataItems come from their difference
    summed over the keys (histograms.py). Keys whose text did not change are left out.

    results.json before per-window snapshots held one ``{"start": text, "end": text}`` of the
    leader (the first window's start, the last one's end): it reads as ``window`` "" with the
    key ``scheduler``."""

    window: str = ""
    start: dict[str, str] = dataclasses.field(default_factory=dict)
    end: dict[str, str] = dataclasses.field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"window": self.window, "start": dict(self.start), "end": dict(self.end)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MetricsSnapshots:
        start, end = data.get("start") or {}, data.get("end") or {}
        if isinstance(start, str) or isinstance(end, str):  # the old, single-process shape
            return cls(window="", start={"scheduler": str(start)}, end={"scheduler": str(end)})
        return cls(
            window=str(data.get("window", "")),
            start={str(k): str(v) for k, v in start.items()},
            end={str(k): str(v) for k, v in end.items()},
        )

    @classmethod
    def read_all(cls, data: Any) -> list[MetricsSnapshots]:
        """results.json's ``scheduler_metrics``: a list (one per window), or the old single
        object, or null."""
        if data is None:
            return []
        if isinstance(data, dict):
            return [cls.from_json(data)]
        return [cls.from_json(d) for d in data]


LEADER_FAULTS = ("kill", "pause", "partition")
"""Faults of a leader (``Fault.target`` is its identity): the next term ends them."""


def first_binds(
    faults: list[Fault], leaders: list[LeaderTerm], binds: list[float]
) -> list[float | None]:
    """Seconds from each fault to the first bind (sorted `binds`) after it. For a leader's
    fault the first bind counted is one at or after the start of the next term of that
    component (a bind of the deposed leader seen late does not count), as `kubera bench
    failover` timed kill → first bind of the new term."""
    out: list[float | None] = []
    for f in faults:
        anchor = f.t
        if f.kind in LEADER_FAULTS:
            mine = next((x for x in leaders if x.identity == f.target), None)
            later = sorted(
                x.start
                for x in leaders
                if x.start > f.t and (mine is None or x.component == mine.component)
            )
            anchor = later[0] if later else f.t
        i = bisect.bisect_left(binds, anchor)
        out.append(round(binds[i] - f.t, 3) if i < len(binds) else None)
    return out


def takeovers(faults: list[Fault], leaders: list[LeaderTerm]) -> list[float | None]:
    """Seconds from each leader fault to the start of the next term of that component (a
    new holder named by the election key, as `kubera bench failover` timed kill →
    takeover); None for other faults and for a fault no later term followed."""
    out: list[float | None] = []
    for f in faults:
        if f.kind not in LEADER_FAULTS:
            out.append(None)
            continue
        mine = next((x for x in leaders if x.identity == f.target), None)
        later = sorted(
            x.start
            for x in leaders
            if x.start > f.t
            and x.identity != f.target
            and (mine is None or x.component == mine.component)
        )
        out.append(round(later[0] - f.t, 3) if later else None)
    return out


@dataclasses.dataclass(frozen=True)
class MeasuredPhase:
    """A measurement window as `kubera bench` reports it: the pods it bound, the seconds
    from its first pod sent (or its start, if later) to its last bind, and each component
    process's CPU seconds between the window's start and its end (None: the process was
    gone or replaced by the end; measure/cpu.py)."""

    window: str
    pods: int
    seconds: float
    cpu: dict[str, float | None] = dataclasses.field(default_factory=dict)

    @property
    def pods_per_s(self) -> float:
        """The whole phase's average: pods bound / seconds from the first sent to the last
        bind."""
        return self.pods / self.seconds if self.seconds > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> MeasuredPhase:
        return cls(
            window=str(data.get("window", "")),
            pods=int(data.get("pods", 0)),
            seconds=float(data.get("seconds", 0.0)),
            cpu={str(k): _opt_float(v) for k, v in (data.get("cpu") or {}).items()},
        )


@dataclasses.dataclass(kw_only=True)
class RunResult:
    """One run: a (test case, workload, sweep point) on a fresh cluster.

    ``series`` holds 1-second samples keyed as in results.json: ``t`` (0, 1, 2, …), ``created``,
    ``bound``, ``running`` (pods in the second ``[t[i], t[i] + 1)``), ``queue:<name>`` (depth
    at ``t[i]``), ``etcd_revisions`` (revisions per second), ``cpu:<component>`` (cores),
    ``rss_mb:<component>``. ``latency``
    holds per-pod seconds under ``scheduling`` (create→bound) and ``startup`` (create→Running),
    and, when pods carry scheduler-plugins' pod-group label, per-gang seconds under ``gang``
    (first member created→last member bound, for the gangs all of whose members were bound).
    ``attempts`` maps a bucket of upstream's ``scheduler_pod_scheduling_attempts`` histogram
    (buckets 1, 2, 4, 8, 16: the key is the bucket's upper bound, so ``4`` counts pods that
    needed 3 or 4 attempts; one past the largest bound, ``17``, counts more than 16) to the
    number of bound pods in it.
    """

    id: str
    test_case: str
    workload: str
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    labels: list[str] = dataclasses.field(default_factory=list)
    sweep: dict[str, Any] = dataclasses.field(default_factory=dict)
    threshold: float | None = None
    threshold_metric: str = "SchedulingThroughput"
    threshold_selector: dict[str, Any] = dataclasses.field(default_factory=dict)
    """Upstream's full thresholdMetricSelector when it says more than the metric's name:
    ``{"name", "labels", "expectLower", "dataBucket"}``; {} means ``{"name": threshold_metric}``.
    In results.json only when non-empty."""
    metrics_collector_config: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The test case's ``metricsCollectorConfig`` as written ({} when it has none: kubera's
    default set, dataitems.py). In results.json only when non-empty."""
    research: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The research measures of the run's end (measure/research.py): fragmentation per
    resource, free devices no pending pod can use, queue-drain time. In results.json
    always (empty when not measured)."""
    cluster: dict[str, Any] = dataclasses.field(default_factory=dict)
    t0: float = 0.0
    duration: float = 0.0
    phases: list[Phase] = dataclasses.field(default_factory=list)
    collected: list[Window] = dataclasses.field(default_factory=list)
    series: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    latency: dict[str, list[float]] = dataclasses.field(default_factory=dict)
    attempts: dict[int, int] = dataclasses.field(default_factory=dict)
    replicas: list[ReplicaStats] = dataclasses.field(default_factory=list)
    leaders: list[LeaderTerm] = dataclasses.field(default_factory=list)
    faults: list[Fault] = dataclasses.field(default_factory=list)
    scheduler_metrics: list[MetricsSnapshots] = dataclasses.field(default_factory=list)
    warnings: list[str] = dataclasses.field(default_factory=list)
    """What went wrong without failing the run (a churn op's failed creates): in results.json
    only when non-empty."""
    check: CheckVerdict | None = None
    error: str | None = None
    etcd_put_rate: float | None = None
    """Concurrent etcd puts per second measured on this run's etcd before its first op
    (`etcdprobe.py`): the same-run yardstick of the scheduling rate. In results.json only
    when measured."""
    measured: list[MeasuredPhase] = dataclasses.field(default_factory=list)
    """Per measurement window: its pods, seconds to the last bind and CPU per process. In
    results.json only when non-empty."""
    fault_first_bind: list[float | None] = dataclasses.field(default_factory=list)
    """Per fault (as ``faults``): seconds from it to the first pod bound after it — for a
    leader's fault, the first bound once the next leader term began (`first_binds`); None:
    no pod bound after it. In results.json only when there were faults."""
    fault_takeover: list[float | None] = dataclasses.field(default_factory=list)
    """Per fault (as ``faults``): for a leader's fault, seconds from it to the next term's
    start (`takeovers`); None otherwise. In results.json only when there were faults."""
    fault_first_write: list[float | None] = dataclasses.field(default_factory=list)
    """Per fault (as ``faults``): for an apiserver kill, seconds from it to the first write
    through the apiserver's address that succeeded (kubera.chaos.kill_apiserver's probe);
    None otherwise. In results.json only when there were faults."""
    churn: dict[str, dict[str, int]] = dataclasses.field(default_factory=dict)
    """Per churn op (its phase name): the objects it created and deleted. In results.json
    only when the run churned."""
    nodes: dict[str, float] = dataclasses.field(default_factory=dict)
    """What the hollow nodes cost and how they kept up (measure/nodes.py): leases on time
    and their lateness over the steady window, nodes Ready, memory per hollow node, CPU at
    idle, the eviction reaction. In results.json only when measured (hollow nodes)."""

    @property
    def name(self) -> str:
        """``<TestCase>/<Workload>``: the ``Name`` label upstream puts on its DataItems."""
        return f"{self.test_case}/{self.workload}"

    @property
    def slug(self) -> str:
        """The id as a file name: ``SchedulingBasic_5000Nodes_schedulers=2``."""
        return slug(self.id)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "test_case": self.test_case,
            "workload": self.workload,
            "params": dict(self.params),
            "labels": list(self.labels),
            "sweep": dict(self.sweep),
            "threshold": self.threshold,
            "threshold_metric": self.threshold_metric,
            "cluster": dict(self.cluster),
            "t0": self.t0,
            "duration": self.duration,
            "phases": [p.to_json() for p in self.phases],
            "collected": [w.to_json() for w in self.collected],
            "series": {k: list(v) for k, v in self.series.items()},
            "latency": {k: list(v) for k, v in self.latency.items()},
            "attempts": {str(k): v for k, v in sorted(self.attempts.items())},
            "replicas": [r.to_json() for r in self.replicas],
            "leaders": [term.to_json() for term in self.leaders],
            "faults": [f.to_json() for f in self.faults],
            "scheduler_metrics": [m.to_json() for m in self.scheduler_metrics],
            "check": None if self.check is None else self.check.to_json(),
            "error": self.error,
            "research": dict(self.research),
        }
        if self.threshold_selector:
            out["threshold_selector"] = dict(self.threshold_selector)
        if self.metrics_collector_config:
            out["metrics_collector_config"] = dict(self.metrics_collector_config)
        if self.warnings:
            out["warnings"] = list(self.warnings)
        if self.etcd_put_rate is not None:
            out["etcd_put_rate"] = self.etcd_put_rate
        if self.measured:
            out["measured"] = [m.to_json() for m in self.measured]
        if self.fault_first_bind:
            out["fault_first_bind"] = list(self.fault_first_bind)
        if self.fault_takeover:
            out["fault_takeover"] = list(self.fault_takeover)
        if self.fault_first_write:
            out["fault_first_write"] = list(self.fault_first_write)
        if self.churn:
            out["churn"] = {k: dict(v) for k, v in self.churn.items()}
        if self.nodes:
            out["nodes"] = dict(self.nodes)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResult:
        check = data.get("check")
        return cls(
            id=str(data["id"]),
            test_case=str(data["test_case"]),
            workload=str(data["workload"]),
            params=dict(data.get("params") or {}),
            labels=[str(x) for x in data.get("labels") or ()],
            sweep=dict(data.get("sweep") or {}),
            threshold=_opt_float(data.get("threshold")),
            threshold_metric=str(data.get("threshold_metric") or "SchedulingThroughput"),
            threshold_selector=dict(data.get("threshold_selector") or {}),
            metrics_collector_config=dict(data.get("metrics_collector_config") or {}),
            research=dict(data.get("research") or {}),
            cluster=dict(data.get("cluster") or {}),
            t0=float(data.get("t0", 0.0)),
            duration=float(data.get("duration", 0.0)),
            phases=[Phase.from_json(p) for p in data.get("phases") or ()],
            collected=[Window.from_json(w) for w in data.get("collected") or ()],
            series={str(k): [float(x) for x in v] for k, v in (data.get("series") or {}).items()},
            latency={str(k): [float(x) for x in v] for k, v in (data.get("latency") or {}).items()},
            attempts={int(k): int(v) for k, v in (data.get("attempts") or {}).items()},
            replicas=[ReplicaStats.from_json(r) for r in data.get("replicas") or ()],
            leaders=[LeaderTerm.from_json(t) for t in data.get("leaders") or ()],
            faults=[Fault.from_json(f) for f in data.get("faults") or ()],
            scheduler_metrics=MetricsSnapshots.read_all(data.get("scheduler_metrics")),
            warnings=[str(w) for w in data.get("warnings") or ()],
            check=None if check is None else CheckVerdict.from_json(check),
            error=None if data.get("error") is None else str(data["error"]),
            etcd_put_rate=_opt_float(data.get("etcd_put_rate")),
            measured=[MeasuredPhase.from_json(m) for m in data.get("measured") or ()],
            fault_first_bind=[_opt_float(x) for x in data.get("fault_first_bind") or ()],
            fault_takeover=[_opt_float(x) for x in data.get("fault_takeover") or ()],
            fault_first_write=[_opt_float(x) for x in data.get("fault_first_write") or ()],
            churn={
                str(k): {str(a): int(b) for a, b in v.items()}
                for k, v in (data.get("churn") or {}).items()
            },
            nodes={str(k): float(v) for k, v in (data.get("nodes") or {}).items()},
        )


@dataclasses.dataclass(kw_only=True)
class ExperimentResult:
    """Every run of one ``kubera experiment run``: the config file and when it started."""

    config: str
    started: str
    runs: list[RunResult] = dataclasses.field(default_factory=list)
    version: str = VERSION

    def run(self, run_id: str) -> RunResult:
        """The run with that id (KeyError when there is none)."""
        for r in self.runs:
            if r.id == run_id:
                return r
        raise KeyError(run_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "config": self.config,
            "started": self.started,
            "runs": [r.to_json() for r in self.runs],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ExperimentResult:
        version = data.get("version")
        if version != VERSION:
            raise ValueError(f"results version {version!r}: expected {VERSION!r}")
        return cls(
            version=VERSION,
            config=str(data.get("config", "")),
            started=str(data.get("started", "")),
            runs=[RunResult.from_json(r) for r in data.get("runs") or ()],
        )


_UNSAFE = re.compile(r"[^A-Za-z0-9._=+-]+")


def slug(run_id: str) -> str:
    """A run id as a file name: path separators and anything unsafe become ``_``."""
    s = _UNSAFE.sub("_", run_id).strip("._")
    return s or "run"


def finite(values: list[float]) -> list[float]:
    """The finite values (NaN and infinities dropped): what the statistics use."""
    return [v for v in values if math.isfinite(v)]
