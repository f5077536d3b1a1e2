"""scheduler_perf's DataItems from a run, computed as upstream computes them.

Upstream (test/integration/scheduler_perf/util.go, scheduler_perf.go) writes one DataItems file
per benchmark: ``{"version": "v1", "dataItems": [{"data": {...}, "unit": ..., "labels": {...}}]}``.
Every item carries ``Metric`` and ``Name``; ``Name`` is the workload's test name without the
benchmark prefix plus the collecting op's suffix: ``<TestCase>/<Workload>/<namespace>`` for a
``createPods`` with ``collectMetrics`` (its namespace, ``namespace-<opIndex>`` by default) and
``<TestCase>/<Workload>/<name>`` for ``startCollectingMetrics``. Here the prefix is the run id (so
sweep points stay apart: ``SchedulingBasic/500Nodes/schedulers=2/namespace-1``) and the suffix
is the window's ``name``.

SchedulingThroughput (pods/s), as upstream's throughputCollector: a tick every second counts
the pods scheduled so far; ticks before the first scheduled pod are ignored, the first one with
pods is only a baseline (an outlier: sampling and creating start independently); a tick that
saw no new pod is skipped and the next one that does records its rate once per interval it
covered (so percentiles keep their weight); trailing empty ticks record nothing. Average is the
mean of the samples; PercN is the sorted samples' element ``ceil(len * N / 100) - 1``. Here the
ticks are the run's 1-second ``bound`` series inside each collectMetrics window.

Histogram items (unit ms; Perc50/90/95/99 by Prometheus' bucket interpolation, Average =
sum/count) come, per collectMetrics window (upstream resets those metrics when collection
starts), from the difference of the scheduler's Prometheus snapshots at the window's start and
end, summed over every scheduler process (histograms.py: failovers and restarts). Upstream's default metrics and label filters are
kept (``METRICS``), and its pod-group histograms added (``POD_GROUP_HISTOGRAMS``); a metric
kubera does not expose yields no item, as upstream skips a metric with no samples. A label
filter selects series by one label and aggregates over the others
(``scheduler_scheduling_attempt_duration_seconds`` by ``result``, summed over ``profile``).
A test case's own ``metricsCollectorConfig`` replaces both, read as upstream's collector
reads it: an item per metric and combination of its configured label values.

kubera's own items carry ``Metric: kubera_*`` (see ``kubera_items``). The threshold check is
upstream's compareMetricWithThreshold: threshold 0/None passes, and so does a metric with no
item; otherwise every item of the selected metric (and labels) needs its ``Average`` (or the
selector's ``dataBucket``) strictly above the threshold (below with ``expectLower``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubera.experiment.measure import capacity, cpu
from kubera.experiment.measure.histograms import Histograms, window_difference
from kubera.experiment.measure.model import (
    ExperimentResult,
    MetricsSnapshots,
    RunResult,
    Window,
    finite,
)

VERSION = "v1"
THROUGHPUT = "SchedulingThroughput"
PERCENTILES = (50, 90, 95, 99)
NOT_APPLICABLE = "not applicable"

#: Upstream's defaultMetricsCollectorConfig: metric -> labels whose values split the items
#: (() = one item aggregating every series).
METRICS: dict[str, tuple[str, ...]] = {
    "scheduler_framework_extension_point_duration_seconds": ("extension_point",),
    "scheduler_scheduling_attempt_duration_seconds": ("result",),
    "scheduler_pod_scheduling_sli_duration_seconds": (),
    "scheduler_pod_scheduling_duration_seconds": (),
    "scheduler_plugin_execution_duration_seconds": ("plugin", "extension_point"),
}
#: kubera's own scheduler histograms made items the same way (shared-state replicas only).
KUBERA_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "kubera_scheduler_shared_state_queue_wait_seconds": (),
}
#: Upstream's pod-group histograms (metrics.PodGroupMetrics), which its harness collects only
#: when a test case's metricsCollectorConfig names them (its podgroup/ files do not): kubera
#: adds them to the default set, so a run with pod groups reports them; no group, no item.
POD_GROUP_HISTOGRAMS: dict[str, tuple[str, ...]] = {
    "scheduler_podgroup_scheduling_attempt_duration_seconds": ("result",),
    "scheduler_podgroup_scheduling_algorithm_duration_seconds": (),
}


@dataclasses.dataclass
class DataItem:
    """One perf-dashboard data point: ``data`` buckets (``Perc90`` → 23.5), a unit, labels."""

    data: dict[str, float]
    unit: str
    labels: dict[str, str]

    @property
    def metric(self) -> str:
        return self.labels.get("Metric", "")

    def to_json(self) -> dict[str, Any]:
        return {"data": dict(self.data), "unit": self.unit, "labels": dict(self.labels)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> DataItem:
        return cls(
            data={str(k): float(v) for k, v in data.get("data", {}).items()},
            unit=str(data.get("unit", "")),
            labels={str(k): str(v) for k, v in data.get("labels", {}).items()},
        )


# -- statistics as upstream computes them ------------------------------------------------------


def upstream_percentile(sorted_values: Sequence[float], perc: int) -> float:
    """scheduler_perf's PercN of sorted samples: element ``ceil(len * N / 100) - 1``."""
    if not sorted_values:
        return math.nan
    return sorted_values[max(0, math.ceil(len(sorted_values) * perc / 100) - 1)]


def summarize(
    values: Iterable[float], *, scale: float = 1.0, extra: bool = False
) -> dict[str, float]:
    """Average and Perc50/90/95/99 (``Max`` too with ``extra``), each times ``scale``; {} for
    no values."""
    s = sorted(finite(list(values)))
    if not s:
        return {}
    out = {"Average": sum(s) / len(s) * scale}
    for p in PERCENTILES:
        out[f"Perc{p}"] = upstream_percentile(s, p) * scale
    if extra:
        out["Max"] = s[-1] * scale
    return out


def throughput_samples(t: Sequence[float], bound: Sequence[float], window: Window) -> list[float]:
    """Upstream's throughputCollector over ``window``. ``bound[i]`` pods were bound in the
    second ``[t[i], t[i] + 1)``, so the tick at ``t[i] + 1`` has seen them; the ticks are those
    with ``start < t[i] + 1 <= end``."""
    samples: list[float] = []
    scheduled = 0.0
    last_count = 0.0
    last_time = 0.0
    started = False
    skipped = 0
    for ti, b in zip(t, bound, strict=False):
        tick = ti + 1.0
        if tick <= window.start or tick > window.end:
            continue
        scheduled += b
        if scheduled == 0:
            continue
        if not started:
            started, last_count, last_time = True, scheduled, tick
            continue
        new = scheduled - last_count
        if new == 0:
            skipped += 1
            continue
        rate = new / (tick - last_time)
        samples.extend([rate] * (skipped + 1))
        last_count, last_time, skipped = scheduled, tick, 0
    return samples


def bucket_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float:
    """Prometheus' bucketQuantile over cumulative ``(upper_bound, count)`` buckets: linear
    interpolation inside the bucket holding rank ``q * total``; the highest finite bound when it
    falls in +Inf; NaN without a +Inf bucket or observations."""
    if q < 0:
        return -math.inf
    if q > 1:
        return math.inf
    merged: dict[float, float] = {}
    for upper, count in buckets:
        merged[upper] = merged.get(upper, 0.0) + count
    bs = sorted(merged.items())
    if len(bs) < 2 or not math.isinf(bs[-1][0]):
        return math.nan
    for i in range(1, len(bs)):  # ensure monotonic (series reset between snapshots)
        if bs[i][1] < bs[i - 1][1]:
            bs[i] = (bs[i][0], bs[i - 1][1])
    total = bs[-1][1]
    if total == 0:
        return math.nan
    rank = q * total
    b = next((i for i in range(len(bs) - 1) if bs[i][1] >= rank), len(bs) - 1)
    if b == len(bs) - 1:
        return bs[-2][0]
    if b == 0 and bs[0][0] <= 0:
        return bs[0][0]
    start, end, count = 0.0, bs[b][0], bs[b][1]
    if b > 0:
        start = bs[b - 1][0]
        count -= bs[b - 1][1]
        rank -= bs[b - 1][1]
    if count <= 0:
        return start
    return start + (end - start) * (rank / count)


# -- Prometheus snapshots ---------------------------------------------------------------------


def histogram_items(
    histograms: Histograms, labels: Mapping[str, str], metrics: Mapping[str, Sequence[str]]
) -> list[DataItem]:
    """Upstream's collectHistogramVec for each metric and each present combination of its
    filter labels: series matching the combination are aggregated; no samples, no item."""
    items: list[DataItem] = []
    for metric, filter_labels in metrics.items():
        series = histograms.get(metric, {}).values()
        combos = sorted({tuple(s.labels.get(lbl, "") for lbl in filter_labels) for s in series})
        for combo in combos:
            item = aggregate_item(
                histograms, metric, dict(zip(filter_labels, combo, strict=True)), labels
            )
            if item is not None:
                items.append(item)
    return items


def aggregate_item(
    histograms: Histograms,
    metric: str,
    selector: Mapping[str, str],
    labels: Mapping[str, str],
) -> DataItem | None:
    """One item of `metric`: every series whose labels match `selector`, aggregated (ms);
    None with no samples (upstream's GetAggregatedSampleCount() == 0)."""
    chosen = [
        s
        for s in histograms.get(metric, {}).values()
        if all(s.labels.get(k, "") == v for k, v in selector.items())
    ]
    count = sum(s.count for s in chosen)
    if count <= 0:
        return None
    merged: dict[float, float] = {}
    for s in chosen:
        for le, c in s.buckets.items():
            merged[le] = merged.get(le, 0.0) + c
    if math.inf not in merged:
        merged[math.inf] = count
    buckets = list(merged.items())
    data = {f"Perc{p}": bucket_quantile(p / 100, buckets) * 1000 for p in PERCENTILES}
    data["Average"] = sum(s.sum for s in chosen) / count * 1000
    return DataItem(data=data, unit="ms", labels={"Metric": metric, **labels, **selector})


def collector_config(raw: Mapping[str, Any] | None) -> dict[str, list[dict[str, str]]] | None:
    """A test case's ``metricsCollectorConfig`` as upstream's collector reads it: metric →
    every combination of its ``{label, values}`` filters (uniqueLVCombos; ``[{}]``, one
    item aggregating every series, for a metric with none). Field names match regardless
    of case, as Go's encoding/json decodes them. None when there is no config."""
    if not raw:
        return None

    def field(m: Mapping[str, Any], name: str) -> Any:
        return next((v for k, v in m.items() if str(k).lower() == name), None)

    out: dict[str, list[dict[str, str]]] = {}
    for metric, filters in (field(raw, "metrics") or {}).items():
        combos: list[dict[str, str]] = [{}]
        for f in filters or ():
            label = str(field(f, "label") or "")
            values = [str(v) for v in field(f, "values") or ()]
            combos = [{**c, label: v} for v in values for c in combos]
        out[str(metric)] = combos
    return out


def configured_items(
    histograms: Histograms,
    labels: Mapping[str, str],
    config: Mapping[str, Sequence[Mapping[str, str]]],
) -> list[DataItem]:
    """Upstream's metricsCollector.collect for a test case's own metricsCollectorConfig: an
    item per metric and configured label combination that has samples."""
    items = []
    for metric, combos in config.items():
        for combo in combos:
            item = aggregate_item(histograms, metric, combo, labels)
            if item is not None:
                items.append(item)
    return items


# -- the items of a run -----------------------------------------------------------------------


def window_name(run: RunResult, window: Window) -> str:
    """The ``Name`` label of a window's items (see the module docstring)."""
    return f"{run.id}/{window.name}" if window.name else run.id


def throughput_items(run: RunResult) -> list[DataItem]:
    """One SchedulingThroughput item per collectMetrics window that saw pods scheduled,
    counted over the window's own pods (its ``bound:<name>`` series: only its namespaces and
    labels, as upstream's collector counts) when the run recorded one, else over all pods."""
    t = run.series.get("t", [])
    items = []
    for window in run.collected:
        bound = run.series.get(f"bound:{window.name}") or run.series.get("bound", [])
        data = summarize(throughput_samples(t, bound, window))
        if data:
            items.append(
                DataItem(
                    data=data,
                    unit="pods/s",
                    labels={"Metric": THROUGHPUT, "Name": window_name(run, window)},
                )
            )
    return items


def kubera_items(run: RunResult) -> list[DataItem]:
    """kubera's own measures, labelled like upstream's items.

    - ``kubera_scheduling_latency`` / ``kubera_startup_latency`` (ms): per-pod create→bound and
      create→Running, upstream's percentile rule;
    - ``kubera_gang_latency`` (ms): per whole gang (pods sharing a pod-group label), its first
      member created → its last member bound; ``Count``: the gangs all of whose members bound;
    - ``kubera_attempts_per_pod`` (attempts): scheduling attempts of each bound pod, as the
      upper bound of its ``scheduler_pod_scheduling_attempts`` bucket (1, 2, 4, 8, 16);
    - ``kubera_conflict_fraction`` (fraction, per ``Replica``): conflicts / (binds + conflicts);
      its ``Lost``: binds of pods another replica had bound first (shared-state);
    - ``kubera_busy_seconds`` (s, per ``Replica``, shared-state): scheduling-cycle seconds of
      attempts that ended bound (``Useful``) or in a conflict (``Wasted``);
    - ``kubera_leader_terms`` (terms, per ``Component``): ``Count`` of leadership terms;
    - ``kubera_failover_gap`` (s, per ``Component``): from a term's end to the next term's start;
    - ``kubera_preemption`` (count): DefaultPreemption's ``Attempts`` and ``Victims`` over
      every replica (upstream's scheduler_preemption_* series), when it tried;
    - ``kubera_batching`` (pods): opportunistic batching's ``HintUsed`` (pods placed from a
      batch) and ``NoHint`` over every replica (upstream's scheduler_batch_attempts_total),
      when the gate was on;
    - ``kubera_churn`` (objects, per ``Op``): what each churn op ``Created`` and ``Deleted``;
    - ``kubera_cpu_seconds_per_pod`` (cpu-s/pod, per ``Component``): CPU over the run / pods bound;
    - ``kubera_etcd_revision_rate`` (revisions/s): the per-second etcd revision series;
    - ``kubera_etcd_put_rate`` (puts/s): the same run's raw etcd rate (run/etcdprobe.py);
    - ``kubera_fault_to_first_bind`` (s, per ``Fault`` kind): each fault → the first pod bound
      after it (a leader's: once the next term began; model.first_binds), ``Count`` faults;
    - ``kubera_fault_to_takeover`` (s, per ``Fault`` kind): each leader fault → the next
      term's start (model.takeovers);
    - ``kubera_fault_to_first_write`` (s, per ``Fault`` kind): each apiserver kill → the
      first write through the apiserver that succeeded;
    - each measurement window's ``measured_items``, and the run's ``research_items``.
    """
    name = run.id
    items: list[DataItem] = []

    def add(metric: str, data: dict[str, float], unit: str, **extra: str) -> None:
        if data:
            items.append(
                DataItem(data=data, unit=unit, labels={"Metric": metric, "Name": name, **extra})
            )

    add(
        "kubera_scheduling_latency",
        summarize(run.latency.get("scheduling", []), scale=1000, extra=True),
        "ms",
    )
    add(
        "kubera_startup_latency",
        summarize(run.latency.get("startup", []), scale=1000, extra=True),
        "ms",
    )
    gangs = run.latency.get("gang", [])
    if gangs:
        add(
            "kubera_gang_latency",
            {**summarize(gangs, scale=1000, extra=True), "Count": float(len(gangs))},
            "ms",
        )
    span = run.latency.get("gangSpan", [])
    if gangs and span and span[0] > 0:
        # Whole groups bound per second, from the first member created to the last bound.
        add("kubera_gang_throughput", {"Average": round(len(gangs) / span[0], 3)}, "groups/s")
    attempts = [float(k) for k, n in sorted(run.attempts.items()) for _ in range(n)]
    add("kubera_attempts_per_pod", summarize(attempts, extra=True), "attempts")
    for r in run.replicas:
        add(
            "kubera_conflict_fraction",
            {
                "Value": r.conflict_fraction,
                "Binds": float(r.binds),
                "Conflicts": float(r.conflicts),
                "Lost": float(r.lost),
            },
            "fraction",
            Replica=r.name,
        )
        if r.useful_busy_s or r.wasted_busy_s:
            add(
                "kubera_busy_seconds",
                {"Useful": r.useful_busy_s, "Wasted": r.wasted_busy_s},
                "s",
                Replica=r.name,
            )
    for component in sorted({term.component for term in run.leaders}):
        terms = sorted((x for x in run.leaders if x.component == component), key=lambda x: x.start)
        add("kubera_leader_terms", {"Count": float(len(terms))}, "terms", Component=component)
        gaps = [
            nxt.start - prev.end
            for prev, nxt in zip(terms, terms[1:], strict=False)
            if prev.end is not None
        ]
        add("kubera_failover_gap", summarize(gaps, extra=True), "s", Component=component)
    attempts_made = sum(r.preemption_attempts for r in run.replicas)
    if attempts_made:
        add(
            "kubera_preemption",
            {
                "Attempts": float(attempts_made),
                "Victims": float(sum(r.preemption_victims for r in run.replicas)),
            },
            "count",
        )
    asked = sum(r.batched_pods + r.unbatched_pods for r in run.replicas)
    if asked:
        add(
            "kubera_batching",
            {
                "HintUsed": float(sum(r.batched_pods for r in run.replicas)),
                "NoHint": float(sum(r.unbatched_pods for r in run.replicas)),
            },
            "pods",
        )
    for phase, counts in sorted(run.churn.items()):
        add(
            "kubera_churn",
            {k.capitalize(): float(v) for k, v in counts.items()},
            "objects",
            Op=phase,
        )
    pods = sum(run.series.get("bound", []))
    if pods > 0:
        for key in sorted(k for k in run.series if k.startswith("cpu:")):
            cpu_seconds = sum(finite(run.series[key]))
            add(
                "kubera_cpu_seconds_per_pod",
                {"Value": cpu_seconds / pods},
                "cpu-s/pod",
                Component=key[4:],
            )
    add(
        "kubera_etcd_revision_rate",
        summarize(run.series.get("etcd_revisions", []), extra=True),
        "revisions/s",
    )
    if run.etcd_put_rate is not None:
        add("kubera_etcd_put_rate", {"Value": run.etcd_put_rate}, "puts/s")
    for metric, per_fault in (
        ("kubera_fault_to_first_bind", run.fault_first_bind),
        ("kubera_fault_to_takeover", run.fault_takeover),
        ("kubera_fault_to_first_write", run.fault_first_write),
    ):
        recovery: dict[str, list[float]] = {}
        for fault, first in zip(run.faults, per_fault, strict=False):
            if first is not None:
                recovery.setdefault(fault.kind, []).append(first)
        for kind, values in sorted(recovery.items()):
            add(
                metric,
                {**summarize(values, extra=True), "Count": float(len(values))},
                "s",
                Fault=kind,
            )
    items.extend(measured_items(run))
    items.extend(research_items(run))
    return items


def research_items(run: RunResult) -> list[DataItem]:
    """The research measures of the run's end (measure/research.py) as items:
    ``kubera_fragmentation`` (per ``Resource`` with free capacity: Free, Stranded, Expected
    and their shares), ``kubera_unusable_devices`` (per ``Resource``, extended, or
    ``Driver``, DRA: Free, Unusable, UnusableShare) and ``kubera_queue_drain`` (s)."""
    r = run.research
    items: list[DataItem] = []

    def add(metric: str, values: Mapping[str, float], unit: str, **extra: str) -> None:
        data = {k[:1].upper() + k[1:]: float(v) for k, v in values.items()}
        labels = {"Metric": metric, "Name": run.id, **extra}
        items.append(DataItem(data=data, unit=unit, labels=labels))

    for resource, v in (r.get("fragmentation") or {}).items():
        if v.get("free", 0.0) > 0:
            add("kubera_fragmentation", v, "amount", Resource=resource)
    for resource, v in (r.get("unusableDevices") or {}).items():
        add("kubera_unusable_devices", v, "devices", Resource=resource)
    for driver, v in (r.get("unusableDRADevices") or {}).items():
        add("kubera_unusable_devices", v, "devices", Driver=driver)
    if r.get("queueDrainSeconds") is not None:
        add("kubera_queue_drain", {"Value": r["queueDrainSeconds"]}, "s")
    return items


def measured_items(run: RunResult) -> list[DataItem]:
    """What `kubera bench` reports of each measurement window (``Name`` as its throughput
    item's), from the run's ``measured`` phases:

    - ``kubera_measured_throughput`` (pods/s): ``Value`` = the window's pods / seconds from
      its start to its last bind (the whole phase: stricter than SchedulingThroughput,
      which leaves out the first second with pods), ``Pods``, ``Seconds``, and ``EtcdRatio``
      = ``Value`` / the same run's etcd put rate;
    - ``kubera_measured_cpu_per_pod`` (cpu-s/pod, per ``Component`` kind): the CPU seconds
      its processes spent in the window / the window's pods (measure/cpu.py);
    - ``kubera_capacity_model`` (pods/s, per ``Machines``): the capacity model's prediction
      from the last window's CPU (measure/capacity.py; a model, not a measurement), its
      ``Bottleneck`` named.
    """
    items: list[DataItem] = []
    windows = {w.name: w for w in run.collected}
    for phase in run.measured:
        if phase.pods <= 0:
            continue
        window = windows.get(phase.window)
        name = window_name(run, window) if window is not None else run.id
        data = {
            "Value": phase.pods_per_s,
            "Pods": float(phase.pods),
            "Seconds": phase.seconds,
        }
        if run.etcd_put_rate:
            data["EtcdRatio"] = phase.pods_per_s / run.etcd_put_rate
        labels = {"Metric": "kubera_measured_throughput", "Name": name}
        items.append(DataItem(data=data, unit="pods/s", labels=labels))
        table = cpu.table(phase.cpu, phase.pods, phase.seconds)
        for kind, row in table["by_kind"].items():
            items.append(
                DataItem(
                    data={"Value": row["cpu_s_per_pod"], "CPUSeconds": row["cpu_s"]},
                    unit="cpu-s/pod",
                    labels={
                        "Metric": "kubera_measured_cpu_per_pod",
                        "Name": name,
                        "Component": kind,
                    },
                )
            )
    model = capacity.run_model(run)
    for p in (model or {}).get("predictions", []):
        items.append(
            DataItem(
                data={"Value": p["pods_per_s"]},
                unit="pods/s",
                labels={
                    "Metric": "kubera_capacity_model",
                    "Name": run.id,
                    "Machines": str(p["machines"]),
                    "Bottleneck": p["bottleneck"],
                },
            )
        )
    return items


def snapshots_name(run: RunResult, snapshots: MetricsSnapshots) -> str:
    """The ``Name`` label of a window's histogram items: its window's, as its throughput
    item's. Snapshots of no window (results.json before per-window snapshots: the first
    window's start to the last one's end) are named by the only window, else the run."""
    if not snapshots.window:
        return window_name(run, run.collected[0]) if len(run.collected) == 1 else run.id
    window = next((w for w in run.collected if w.name == snapshots.window), None)
    return window_name(run, window or Window(start=0.0, end=0.0, name=snapshots.window))


def run_items(run: RunResult) -> list[DataItem]:
    """Every DataItem of a run: throughput, the scheduler's histograms (per window, summed
    over the scheduler's processes: histograms.py), kubera's own."""
    items = throughput_items(run)
    configured = collector_config(run.metrics_collector_config)
    for snapshots in run.scheduler_metrics:
        diff = window_difference(snapshots.start, snapshots.end)
        labels = {"Name": snapshots_name(run, snapshots)}
        if configured is not None:
            items += configured_items(diff, labels, configured)
        else:
            items += histogram_items(diff, labels, METRICS)
            items += histogram_items(diff, labels, POD_GROUP_HISTOGRAMS)
        items += histogram_items(diff, labels, KUBERA_HISTOGRAMS)
    return items + kubera_items(run)


def data_items_json(result: ExperimentResult) -> dict[str, Any]:
    """DataItems.json of an experiment; as upstream, every item gets every label used by any
    (missing ones read "not applicable") so perfdash shows them all."""
    items = [item for run in result.runs for item in run_items(run)]
    all_labels = sorted({k for item in items for k in item.labels})
    out = []
    for item in items:
        labels = {k: item.labels.get(k, NOT_APPLICABLE) for k in all_labels}
        # JSON has no NaN/Infinity (perfdash's Go decoder rejects them): such buckets are left out
        data = {k: v for k, v in item.data.items() if math.isfinite(v)}
        out.append({"data": data, "unit": item.unit, "labels": labels})
    return {"version": VERSION, "dataItems": out}
