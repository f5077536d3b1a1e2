"""`kubera bench`'s printout of a run: the figures the benches always printed, read from the
run's DataItems and measured phase (no statistics of its own).

    pods bound/s           the measured phase's whole average (kubera_measured_throughput)
                           and upstream's collector (SchedulingThroughput Average, PercN)
    raw etcd put rate      the same run's (run/etcdprobe.py) and the ratio to it
    upstream threshold     the workload's, and the share reached; none when the shape was
                           changed (run/bench.py drops it)
    fault → first bind     per fault kind (kubera_fault_to_first_bind), when it had faults;
                           also → takeover (kubera_fault_to_takeover, a leader's) and →
                           first write (kubera_fault_to_first_write, an apiserver kill)
    CPU per pod            per component kind over the measured phase (measure/cpu.py)
    hollow nodes           leases on time and lateness, nodes Ready, memory per hollow
                           node, CPU at idle, eviction reaction (measure/nodes.py)
    capacity model         measure/capacity.py (a model, not a measurement)
"""

from __future__ import annotations

from collections.abc import Sequence

from kubera.experiment.measure import capacity, cpu, nodes
from kubera.experiment.measure.dataitems import THROUGHPUT, DataItem, run_items
from kubera.experiment.measure.model import RunResult

#: The recovery DataItems printed per fault kind, and what each times.
RECOVERY = {
    "kubera_fault_to_takeover": "takeover (the next leader term)",
    "kubera_fault_to_first_bind": "first bind (a leader's: of the next term)",
    "kubera_fault_to_first_write": "first write through the apiserver",
}


def shared_state(run: RunResult, items: Sequence[DataItem]) -> list[str]:
    """The shared-state replicas' Omega figures, as `kubera bench shared-state` printed
    them: per replica binds, conflicts, lost pods, useful and wasted busy seconds; the
    queue wait over every bound pod (its histogram)."""
    lines = []
    for r in run.replicas:
        if r.lost or r.useful_busy_s or r.wasted_busy_s:
            lines.append(
                f"  {r.name}: {r.binds} binds, {r.conflicts} conflicts "
                f"({r.conflict_fraction:.3f}), {r.lost} lost; busy useful "
                f"{r.useful_busy_s:.2f}s, wasted {r.wasted_busy_s:.2f}s"
            )
    wait = _item(items, "kubera_scheduler_shared_state_queue_wait_seconds")
    if wait is not None:
        d = wait.data
        lines.append(
            f"  queue wait (shared-state, histogram): p50 {d['Perc50'] / 1000:.2f}s, "
            f"p90 {d['Perc90'] / 1000:.2f}s, p99 {d['Perc99'] / 1000:.2f}s"
        )
    return lines


def _item(items: Sequence[DataItem], metric: str) -> DataItem | None:
    return next((i for i in reversed(items) if i.metric == metric), None)


def measured_rate(run: RunResult) -> float:
    """The run's measured phase pods/s (0 when it measured none): what --repeat sorts by."""
    phase = capacity.measured_phase(run)
    return phase.pods_per_s if phase is not None else 0.0


def median_run(runs: Sequence[RunResult]) -> RunResult:
    """The median run by measured pods/s (the upper one of an even count)."""
    return sorted(runs, key=measured_rate)[len(runs) // 2]


def run_line(run: RunResult) -> str:
    """One run's figures as it finishes: pods/s, share of the threshold, etcd ratio."""
    if run.error:
        return f"{run.id}: error: {run.error}"
    rate = measured_rate(run)
    parts = [f"{run.id}: {rate:.0f} pods/s"]
    if run.threshold:
        parts.append(f"{rate / run.threshold:.2f}× of {run.threshold:g}")
    if run.etcd_put_rate:
        parts.append(f"etcd ratio {rate / run.etcd_put_rate:.3f}")
    return ", ".join(parts)


def render(
    run: RunResult, *, runs: Sequence[RunResult] = (), cores: float = 2.0, f: float = 0.0
) -> str:
    """The printout of `run` (the median of `runs`, when given)."""
    items = run_items(run)
    params = ", ".join(f"{k} {v}" for k, v in run.params.items())
    apiservers = capacity.apiservers_of(run)
    lines = [f"{run.id} — {params}; {apiservers} apiserver(s)"]
    if len(runs) > 1:
        lines[0] += f" (median of {len(runs)} runs: " + ", ".join(
            f"{measured_rate(r):.0f}" for r in runs
        )
        lines[0] += ")"
    phase = capacity.measured_phase(run)
    tp = _item(items, THROUGHPUT)
    if phase is not None:
        line = (
            f"  pods bound/s: avg {phase.pods_per_s:.0f} ({phase.pods} pods in "
            f"{phase.seconds:.1f}s, the whole measured phase)"
        )
        lines.append(line)
    if tp is not None:
        d = tp.data
        lines.append(
            f"  upstream's collector (SchedulingThroughput): Average {d['Average']:.0f}, "
            f"p50 {d['Perc50']:.0f}, p90 {d['Perc90']:.0f}, p99 {d['Perc99']:.0f} pods/s"
        )
    if run.etcd_put_rate and phase is not None:
        lines.append(
            f"  raw etcd put rate (same run, 64 in flight): {run.etcd_put_rate:.0f}/s → "
            f"ratio {phase.pods_per_s / run.etcd_put_rate:.3f}"
        )
    if run.threshold and tp is not None:
        lines.append(
            f"  upstream threshold: {run.threshold:g} pods/s → we reach "
            f"{tp.data['Average'] / run.threshold:.2f}× of it (collector Average)"
        )
    else:
        lines.append(
            "  upstream threshold: none for this shape (upstream's hold for their exact shape)"
        )
    for item in items:
        what = RECOVERY.get(item.metric)
        if what is not None:
            d = item.data
            lines.append(
                f"  {item.labels['Fault']} → {what}: "
                f"p50 {d['Perc50']:.2f}s, p90 {d['Perc90']:.2f}s, max {d['Max']:.2f}s "
                f"over {d['Count']:.0f} fault(s)"
            )
    lines += shared_state(run, items)
    for item in items:
        if item.metric == "kubera_preemption":
            d = item.data
            lines.append(f"  preemption: {d['Attempts']:.0f} attempts, {d['Victims']:.0f} victims")
        elif item.metric == "kubera_batching":
            d = item.data
            lines.append(
                f"  batching: {d['HintUsed']:.0f} pods placed from a batch, "
                f"{d['NoHint']:.0f} without"
            )
        elif item.metric == "kubera_churn":
            d = item.data
            lines.append(
                f"  churn ({item.labels['Op']}): {d.get('Created', 0):.0f} created, "
                f"{d.get('Deleted', 0):.0f} deleted"
            )
    lines += nodes.render(run.nodes)
    if phase is not None:
        lines.append(cpu.render(cpu.table(phase.cpu, phase.pods, phase.seconds)))
    model = capacity.run_model(run, cores=cores, f=f)
    if model is not None:
        lines.append(
            capacity.render(
                model["predictions"],
                measured=model["measured_pods_per_s"],
                f=model["apiserver_fixed_share"],
            )
        )
    return "\n".join(lines)
