"""The report of `kubera bench scheduling-basic`, assembled from its runs: throughput as
scheduler_perf computes it, the share of upstream's threshold for the run's exact shape, the
same-run etcd ratio, the CPU-per-pod table and the capacity model. Pure functions of the
runs' figures, so the report is tested without a cluster.
"""

from __future__ import annotations

import math
from typing import Any

from kubera.bench import capacity, cpu
from kubera.bench.workloads import Workload


def windows(stamps: list[float], start: float) -> list[int]:
    """Pods bound in each whole second after `start` (scheduler_perf's throughput samples)."""
    if not stamps:
        return []
    counts = [0] * (int(stamps[-1] - start) + 1)
    for t in stamps:
        counts[int(t - start)] += 1
    return counts


def pct(xs: list[int], q: float) -> float:
    """The nearest-rank q-quantile of `xs` (0.0 for none)."""
    if not xs:
        return 0.0
    s = sorted(xs)
    return float(s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))])


def collector_average(ws: list[int]) -> float | None:
    """The Average upstream's throughputCollector reports over these 1-second windows (the
    figure its thresholds are compared with): windows before the first one with pods are
    ignored, that one is only the baseline, and each later window is a sample (a window
    with no new pod is skipped and the next rate counted once per interval it covers, which
    averages the same as the plain windows). None without a sample."""
    first = next((i for i, n in enumerate(ws) if n), None)
    if first is None or first + 1 >= len(ws):
        return None
    samples = ws[first + 1 :]
    return sum(samples) / len(samples)


def summarize(stamps: list[float], start: float, *, pods: int) -> dict[str, Any]:
    """Throughput of one run from its bind timestamps: the average over the whole measured
    phase (all pods / its length: stricter than upstream's, which leaves out the first
    second with pods), upstream's collector Average, and p50/p90/p99 of the full 1-second
    windows (the last, partial one left out)."""
    elapsed = stamps[-1] - start if stamps else 0.0
    ws = windows(stamps, start)
    full = ws[:-1] if len(ws) > 1 else ws
    return {
        "pods": pods,
        "measured_s": elapsed,
        "throughput_avg": pods / elapsed if elapsed > 0 else 0.0,
        "throughput_collector_avg": collector_average(ws),
        "throughput_p50": pct(full, 0.50),
        "throughput_p90": pct(full, 0.90),
        "throughput_p99": pct(full, 0.99),
        "windows": ws,
    }


def _judge(run: dict[str, Any], w: Workload) -> None:
    """Add the threshold of the run's shape, its share, and the same-run etcd ratio."""
    case = w.case_for(run["nodes"], run["init_pods"], run["pods"])
    run["upstream_case"] = f"{w.upstream}/{case.name}" if case else None
    run["upstream_threshold"] = case.threshold if case else None
    run["share_of_threshold"] = (
        run["throughput_avg"] / case.threshold if case and case.threshold else None
    )
    collector = run.get("throughput_collector_avg")
    run["collector_share_of_threshold"] = (
        collector / case.threshold if case and case.threshold and collector is not None else None
    )
    etcd = run.get("etcd_put_concurrent_per_s") or 0.0
    run["etcd_ratio"] = run["throughput_avg"] / etcd if etcd > 0 else None


def run_line(run: dict[str, Any], w: Workload, i: int, n: int) -> str:
    """One run's figures as it finishes: pods/s, share of the threshold, etcd ratio."""
    r = dict(run)
    _judge(r, w)
    share = (
        f", {r['share_of_threshold']:.2f}× of {r['upstream_threshold']}"
        if r["share_of_threshold"] is not None
        else ""
    )
    etcd = f", etcd ratio {r['etcd_ratio']:.3f}" if r["etcd_ratio"] is not None else ""
    return f"run {i}/{n}: {r['throughput_avg']:.0f} pods/s{share}{etcd}"


def demands(cpu_table: dict[str, Any]) -> dict[str, float]:
    """CPU seconds per pod per component kind: the capacity model's input."""
    return {k: v["cpu_s_per_pod"] for k, v in cpu_table.get("by_kind", {}).items()}


def assemble(
    runs: list[dict[str, Any]],
    w: Workload,
    *,
    machines: tuple[int, ...] = (1, 2, 4, 8),
    cores: float = 2.0,
    f: float = 0.0,
) -> dict[str, Any]:
    """The median run (by average pods/s; the upper one of an even count) with every run
    kept under "runs", and the capacity model from the median run's CPU table."""
    if not runs:
        raise ValueError("no runs")
    for r in runs:
        _judge(r, w)
    median = sorted(runs, key=lambda x: x["throughput_avg"])[len(runs) // 2]
    rep = dict(median)
    rep["median_of"] = len(runs)
    rep["runs_throughput_avg"] = [x["throughput_avg"] for x in runs]
    rep["runs_throughput_collector_avg"] = [x.get("throughput_collector_avg") for x in runs]
    rep["runs"] = [{k: v for k, v in x.items() if k != "profile"} for x in runs]
    if "cpu" in rep:
        preds = capacity.model_table(
            demands(rep["cpu"]),
            machines=machines,
            cores=cores,
            measured_apiservers=rep.get("apiservers", 1),
            f=f,
        )
        rep["capacity_model"] = {
            "statement": "a model, not a measurement (kubera/bench/capacity.py)",
            "cores_per_machine": cores,
            "apiserver_fixed_share": f,
            "measured_apiservers": rep.get("apiservers", 1),
            "predictions": [p.as_dict() for p in preds],
        }
    return rep


def render(rep: dict[str, Any]) -> str:
    """The printout of an assembled report."""
    lines = [
        f"kubera bench scheduling-basic — workload {rep['workload']} ({rep['upstream_workload']}), "
        f"{rep['nodes']} nodes, {rep['init_pods']} initial pods, {rep['pods']} measured pods, "
        f"{rep.get('apiservers', 1)} apiserver(s) (median of {rep['median_of']} run(s): "
        + ", ".join(f"{x:.0f}" for x in rep["runs_throughput_avg"])
        + ")",
        f"  pods bound/s: avg {rep['throughput_avg']:.0f}, p50 {rep['throughput_p50']:.0f}, "
        f"p90 {rep['throughput_p90']:.0f}, p99 {rep['throughput_p99']:.0f} (1-second windows)",
    ]
    if rep.get("etcd_ratio") is not None:
        lines.append(
            f"  raw etcd put rate (same run, 64 in flight): "
            f"{rep['etcd_put_concurrent_per_s']:.0f}/s → ratio {rep['etcd_ratio']:.3f}"
        )
    if rep.get("throughput_collector_avg") is not None:
        lines.append(
            f"  upstream's collector Average (first second with pods as baseline, mean of the "
            f"later 1-second samples): {rep['throughput_collector_avg']:.0f} pods/s in this run; "
            "runs: "
            + ", ".join(
                "-" if x is None else f"{x:.0f}"
                for x in rep.get("runs_throughput_collector_avg", ())
            )
        )
    if rep.get("share_of_threshold") is not None:
        lines.append(
            f"  upstream threshold ({rep['upstream_case']}, Go): {rep['upstream_threshold']} pods/s "
            f"→ we reach {rep['share_of_threshold']:.2f}× of it (whole-phase average)"
        )
    if rep.get("collector_share_of_threshold") is not None:
        lines.append(
            f"    by upstream's collector Average, as scheduler_perf compares it: "
            f"{rep['collector_share_of_threshold']:.2f}×"
        )
    elif rep.get("upstream_case"):
        lines.append(f"  upstream threshold: none ({rep['upstream_case']} sets none)")
    else:
        lines.append("  upstream threshold: none for this shape (upstream's are at 5,000 nodes)")
    if "preemption_attempts" in rep:
        lines.append(
            f"  preemption attempts: {rep['preemption_attempts']}, victims: "
            f"{rep['preemption_victims']} (whole run)"
        )
    if "churn" in rep:
        c = rep["churn"]
        lines.append(
            f"  churn ({c['mode']}): {c.get('created', 0)} objects created, "
            f"{c.get('deleted', 0)} deleted during the measured phase"
        )
    lines.append(
        f"  setup: nodes created in {rep['create_nodes_s']:.1f}s; measured pods created in "
        f"{rep['create_measured_pods_s']:.1f}s; controller-manager "
        f"{'on' if rep.get('controllers', True) else 'off'}"
    )
    if "cpu" in rep:
        lines.append(cpu.render(rep["cpu"]))
        if "profile" in rep:
            lines.append(
                "    (--profile: the scheduler ran inside the bench client, its CPU is counted "
                "there; the capacity model has no scheduler of its own)"
            )
    if "capacity_model" in rep:
        m = rep["capacity_model"]
        lines.append(
            capacity.render(
                m["predictions"], measured=rep["throughput_avg"], f=m["apiserver_fixed_share"]
            )
        )
    if "profile" in rep:
        lines.append(
            "\nprofile of the in-process scheduler during the measured phase (cumulative):"
        )
        lines.append(rep["profile"])
    return "\n".join(lines)
