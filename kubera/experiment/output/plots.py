"""The PNG plots of an experiment, sized for a paper column (6.4 x 3.6 in, 150 dpi).

Per run (``plots/<run>-<kind>.png``): ``throughput`` (created/bound/Running pods per second with
fault marks, pause/partition intervals and collectMetrics windows shaded), ``latency`` (CDFs of
scheduling and startup latency, log x, p50/p99 marked), ``queues`` (pending pods per queue),
``leaders`` (one row per component, a bar per term coloured by holder, fault marks), ``cpu``
(cores per component over time), ``cpu-per-pod`` (CPU seconds per bound pod per component) and
``memory`` (resident MB per component over time).
Per sweep (``plots/sweep-<test case>-<workload>.png``): throughput and p99 scheduling latency
against the swept value; and (``…-model.png``) each point's measured rate beside the capacity
model's prediction for 1, 2 and 4 machines. A plot whose data the run lacks is not drawn.

Figures are built with ``matplotlib.figure.Figure`` (Agg canvas, no pyplot state, no display).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FuncFormatter

from kubera.experiment.measure import capacity
from kubera.experiment.measure.model import ExperimentResult, RunResult, finite, slug
from kubera.experiment.measure.verdict import run_summary

SIZE = (6.4, 3.6)
DPI = 150
SMOOTH_SECONDS = 5
#: Longer runs draw rates as a rolling mean: a step per second would be a solid block of ink.
LONG_RUN_SECONDS = 300
INTERVAL_KINDS = ("pause", "partition")
FAULT_COLOURS = {
    "kill": "#d62728",
    "pause": "#ff7f0e",
    "partition": "#9467bd",
    "restart-etcd": "#8c564b",
    "kill-pool": "#000000",
    "kill-apiserver": "#e7298a",
}
#: Lines (components, queues): blues, greens, greys; none of the fault colours above.
PALETTE = [
    "#1f77b4",
    "#2ca02c",
    "#17becf",
    "#bcbd22",
    "#7f7f7f",
    "#393b79",
    "#637939",
    "#6baed6",
    "#74c476",
    "#9edae5",
]
#: Leader holders: calm blues, greens and greys, so the fault marks stand out over the bars.
HOLDERS = ["#4c72b0", "#55a868", "#64b5cd", "#8fbc8f", "#7f8c9a", "#2f5d62", "#a6bddb", "#b8d8a8"]


def _figure(size: tuple[float, float] = SIZE) -> Figure:
    fig = Figure(figsize=size, dpi=DPI, layout="constrained")
    return fig


def _save(fig: Figure, path: Path) -> Path:
    fig.savefig(path, dpi=DPI)
    return path


def _short(run: RunResult) -> str:
    return run.id if len(run.id) <= 48 else run.id[:45] + "..."


def _ink(background: str) -> str:
    """Text colour readable on ``background``: white on dark, near-black on light."""
    r, g, b = to_rgb(background)
    return "#1a1a1a" if 0.299 * r + 0.587 * g + 0.114 * b > 0.6 else "white"


def _span(run: RunResult) -> float:
    """The time axis' extent: the run's duration or its last sample, whichever is later."""
    return max(run.duration, max(run.series.get("t", [0.0]) or [0.0]), 1.0)


def _label_levels(run: RunResult) -> list[int]:
    """A row above the axes for each fault's label, so that close faults do not overprint:
    each label takes the lowest row where it clears the previous label (width estimated
    from its length on a ~4.3 in wide axis, 6 pt text)."""
    per_char = 6 * 0.6 / 72 * _span(run) / 4.3
    row_end: list[float] = []
    levels = []
    for f in run.faults:
        half = len(f.kind) * per_char / 2 + per_char
        for level, end in enumerate(row_end):
            if f.t - half > end:
                row_end[level] = f.t + half
                levels.append(level)
                break
        else:
            row_end.append(f.t + half)
            levels.append(len(row_end) - 1)
    return levels


def _title(ax: Axes, text: str, run: RunResult) -> None:
    """The plot's title, above however many rows of fault labels there are."""
    rows = max(_label_levels(run), default=-1) + 1
    ax.set_title(text, fontsize=10, pad=4 + 8 * rows)


def _fault_marks(ax: Axes, run: RunResult, *, labels: bool = True) -> list[Any]:
    """Vertical lines at faults (and shaded pause/partition intervals), each labelled with its
    kind above the axes; returns the legend handles (one per kind)."""
    kinds: list[str] = []
    for f, level in zip(run.faults, _label_levels(run), strict=True):
        colour = FAULT_COLOURS.get(f.kind, "#7f7f7f")
        ax.axvline(f.t, color=colour, linestyle="--", linewidth=1.0, alpha=0.9)
        if f.kind in INTERVAL_KINDS and f.duration:
            ax.axvspan(f.t, f.t + f.duration, color=colour, alpha=0.12, linewidth=0)
        if labels:
            ax.annotate(
                f.kind,
                xy=(f.t, 1.0),
                xycoords=("data", "axes fraction"),
                xytext=(0, 1.5 + 8 * level),
                textcoords="offset points",
                va="bottom",
                ha="center",
                fontsize=6,
                color=colour,
                annotation_clip=False,
            )
        if f.kind not in kinds:
            kinds.append(f.kind)
    return [
        Line2D([], [], color=FAULT_COLOURS.get(k, "#7f7f7f"), linestyle="--", label=f"fault: {k}")
        for k in kinds
    ]


def _windows(ax: Axes, run: RunResult) -> list[Any]:
    for w in run.collected:
        ax.axvspan(w.start, w.end, color="#bbbbbb", alpha=0.18, linewidth=0)
    if run.collected:
        return [Patch(color="#bbbbbb", alpha=0.35, label="measured window")]
    return []


def _xy(t: Sequence[float], values: Sequence[float]) -> tuple[list[float], list[float]]:
    n = min(len(t), len(values))
    return list(t[:n]), list(values[:n])


def _rolling(values: Sequence[float], width: int) -> list[float]:
    """Centred rolling mean over ``width`` samples (shorter at the edges)."""
    half = width // 2
    out = []
    for i in range(len(values)):
        window = finite(list(values[max(0, i - half) : i + half + 1]))
        out.append(sum(window) / len(window) if window else math.nan)
    return out


def _legend_right(
    ax: Axes, handles: list[Any], title: str | None = None, *, middle: bool = False
) -> None:
    """The legend outside the axes, on the right: at the top, or centred (`middle`)."""
    ax.legend(
        handles=handles,
        fontsize=6.5,
        loc="center left" if middle else "upper left",
        bbox_to_anchor=(1.01, 0.5 if middle else 1.0),
        framealpha=0.85,
        title=title,
        title_fontsize=7,
    )


def _time_axis(ax: Axes, run: RunResult) -> None:
    ax.set_xlabel("time since start (s)")
    ax.set_xlim(0, _span(run))
    ax.grid(True, alpha=0.3, linewidth=0.5)


def plot_throughput(run: RunResult, path: Path) -> Path | None:
    t = run.series.get("t", [])
    keys = [
        (k, lbl)
        for k, lbl in (("created", "created"), ("bound", "bound"), ("running", "Running"))
        if k in run.series
    ]
    if not t or not keys:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    styles: dict[str, dict[str, Any]] = {
        "created": {"color": "#8c8c8c", "linewidth": 0.9, "linestyle": (0, (3, 1.5))},
        "bound": {"color": "#1f77b4", "linewidth": 1.5},
        "running": {"color": "#2ca02c", "linewidth": 0.9},
    }
    handles: list[Any] = []
    smooth = SMOOTH_SECONDS if len(t) > LONG_RUN_SECONDS else 1
    for key, label in keys:
        x, y = _xy(t, run.series[key])
        if smooth > 1:
            (line,) = ax.plot(x, _rolling(y, smooth), label=label, **styles[key])
        else:
            (line,) = ax.plot(x, y, label=label, drawstyle="steps-post", **styles[key])
        handles.append(line)
    handles += _windows(ax, run)
    handles += _fault_marks(ax, run)
    ax.set_ylabel("pods per second" if smooth == 1 else f"pods per second ({smooth} s mean)")
    ax.set_ylim(bottom=0)
    _time_axis(ax, run)
    _title(ax, f"Pod throughput: {_short(run)}", run)
    _legend_right(ax, handles)
    return _save(fig, path)


def _cdf(values: Sequence[float]) -> tuple[list[float], list[float]]:
    s = sorted(v for v in finite(list(values)) if v > 0)
    n = len(s)
    return s, [(i + 1) / n for i in range(n)]


def plot_latency(run: RunResult, path: Path) -> Path | None:
    series = [
        (k, lbl)
        for k, lbl in (
            ("scheduling", "scheduling (create→bound)"),
            ("startup", "startup (create→Running)"),
            ("gang", "whole gang (first created→last bound)"),
        )
        if _cdf(run.latency.get(k, []))[0]
    ]
    if not series:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    colours = {"scheduling": "#1f77b4", "startup": "#2ca02c", "gang": "#9467bd"}
    for key, label in series:
        xs, ys = _cdf([v * 1000 for v in run.latency[key]])
        n = len(xs)
        p50 = xs[max(0, math.ceil(n * 0.50) - 1)]
        p99 = xs[max(0, math.ceil(n * 0.99) - 1)]
        ax.step(
            xs,
            ys,
            where="post",
            color=colours[key],
            linewidth=1.4,
            label=f"{label}: p50 {_ms(p50)}, p99 {_ms(p99)}",
        )
        for p, q, marker in ((p50, 0.5, "o"), (p99, 0.99, "D")):
            ax.plot([p], [q], marker=marker, color=colours[key], markersize=4.5)
    ax.axhline(0.5, color="#999999", linewidth=0.6, linestyle=":")
    ax.axhline(0.99, color="#999999", linewidth=0.6, linestyle=":")
    ax.set_xscale("log")
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,g}"))
    ax.set_xlabel("latency (ms, log scale)")
    ax.set_ylabel("fraction of pods")
    ax.set_ylim(0, 1.02)
    ax.grid(True, which="both", alpha=0.25, linewidth=0.5)
    ax.set_title(f"Pod latency CDF: {_short(run)}", fontsize=10, pad=10)
    ax.legend(fontsize=7, loc="best", framealpha=0.85)
    return _save(fig, path)


def _ms(ms: float) -> str:
    return f"{ms / 1000:.2f} s" if ms >= 1000 else f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"


def plot_queues(run: RunResult, path: Path) -> Path | None:
    t = run.series.get("t", [])
    keys = sorted(k for k in run.series if k.startswith("queue:"))
    if not t or not keys:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    for i, key in enumerate(keys):
        (line,) = ax.plot(
            *_xy(t, run.series[key]),
            label=key[6:],
            color=PALETTE[i % len(PALETTE)],
            linewidth=1.2,
        )
        handles.append(line)
    handles += _fault_marks(ax, run)
    ax.set_ylabel("pending pods")
    ax.set_ylim(bottom=0)
    _time_axis(ax, run)
    _title(ax, f"Scheduling queue depth: {_short(run)}", run)
    _legend_right(ax, handles, title="queue")
    return _save(fig, path)


def holder_label(identity: str) -> str:
    """A leader's identity as a label: kube-scheduler's `hostname_uuid` shortened to the
    uuid's first 8 hex digits (still unique among a run's few holders), others as they are."""
    host, _, tail = identity.rpartition("_")
    if host and len(tail) == 36 and tail.count("-") == 4:
        return f"{host}_{tail[:8]}"
    return identity


def plot_leaders(run: RunResult, path: Path) -> Path | None:
    if not run.leaders:
        return None
    components = sorted({term.component for term in run.leaders})
    identities = sorted({term.identity for term in run.leaders})
    colour = {ident: HOLDERS[i % len(HOLDERS)] for i, ident in enumerate(identities)}
    end = max([run.duration] + [t.end or t.start for t in run.leaders] + [f.t for f in run.faults])
    fig = _figure()
    ax = fig.add_subplot()
    for row, component in enumerate(components):
        for term in (t for t in run.leaders if t.component == component):
            stop = end if term.end is None else term.end
            ax.broken_barh(
                [(term.start, max(stop - term.start, 0.05))],
                (row - 0.35, 0.7),
                facecolors=colour[term.identity],
                edgecolor="white",
                linewidth=0.5,
            )
            width = stop - term.start
            label = holder_label(term.identity)
            text_width = len(label) * 6.5 * 0.6 / 72 * end / 4.0
            if end > 0 and width > 1.15 * text_width:
                ax.text(
                    term.start + width / 2,
                    row,
                    label,
                    ha="center",
                    va="center",
                    fontsize=6.5,
                    color=_ink(colour[term.identity]),
                    clip_on=True,
                )
    handles: list[Any] = [Patch(color=colour[i], label=holder_label(i)) for i in identities[:10]]
    handles += _fault_marks(ax, run)
    ax.set_yticks(range(len(components)), labels=components, fontsize=8)
    ax.set_ylim(-0.6, len(components) - 0.4)
    ax.set_xlabel("time since start (s)")
    ax.set_xlim(0, end if end > 0 else 1)
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    _title(ax, f"Leader terms: {_short(run)}", run)
    _legend_right(ax, handles, title="holder / fault", middle=True)
    return _save(fig, path)


#: Line styles that tell apart the processes of one kind (scheduler-0, scheduler-1, …).
DASHES = ["-", "--", ":", "-."]


def component_styles(names: Sequence[str]) -> dict[str, tuple[str, str]]:
    """(colour, line style) per process name: one colour per kind (the name without its
    ``-N`` suffix: apiserver, etcd, scheduler, pool …), one line style per process of that
    kind, so a reader sees the kinds at a glance and the replicas within them."""
    kinds: dict[str, list[str]] = {}
    for name in names:
        head, _, tail = name.rpartition("-")
        kinds.setdefault(head if head and tail.isdigit() else name, []).append(name)
    styles = {}
    for k, (_, members) in enumerate(sorted(kinds.items())):
        for j, name in enumerate(members):
            styles[name] = (PALETTE[k % len(PALETTE)], DASHES[j % len(DASHES)])
    return styles


def _per_component(run: RunResult, path: Path, prefix: str, unit: str, title: str) -> Path | None:
    """One line per component of the ``<prefix><component>`` series (5 s mean on long runs)."""
    t = run.series.get("t", [])
    keys = sorted(k for k in run.series if k.startswith(prefix))
    if not t or not keys:
        return None
    fig = _figure()
    ax = fig.add_subplot()
    handles: list[Any] = []
    smooth = SMOOTH_SECONDS if len(t) > 6 * SMOOTH_SECONDS else 1
    styles = component_styles([k[len(prefix) :] for k in keys])
    for key in keys:
        x, y = _xy(t, run.series[key])
        colour, dash = styles[key[len(prefix) :]]
        (line,) = ax.plot(
            x,
            _rolling(y, smooth) if smooth > 1 else y,
            label=key[len(prefix) :],
            color=colour,
            linestyle=dash,
            linewidth=1.1,
        )
        handles.append(line)
    handles += _fault_marks(ax, run)
    ax.set_ylabel(unit if smooth == 1 else f"{unit[:-1]}, {smooth} s mean)")
    ax.set_ylim(bottom=0)
    _time_axis(ax, run)
    _title(ax, f"{title}: {_short(run)}", run)
    _legend_right(ax, handles)
    return _save(fig, path)


def plot_cpu(run: RunResult, path: Path) -> Path | None:
    return _per_component(run, path, "cpu:", "CPU (cores)", "CPU per component")


def plot_memory(run: RunResult, path: Path) -> Path | None:
    return _per_component(run, path, "rss_mb:", "resident memory (MB)", "Memory per component")


def plot_cpu_per_pod(run: RunResult, path: Path) -> Path | None:
    pods = sum(run.series.get("bound", []))
    keys = sorted(k for k in run.series if k.startswith("cpu:"))
    if pods <= 0 or not keys:
        return None
    values = [(k[4:], sum(finite(run.series[k])) / pods * 1000) for k in keys]
    values.sort(key=lambda kv: kv[1], reverse=True)
    fig = _figure()
    ax = fig.add_subplot()
    names = [n for n, _ in values]
    bars = ax.barh(names, [v for _, v in values], color="#1f77b4")
    ax.bar_label(bars, fmt="%.1f", fontsize=7, padding=2)
    ax.invert_yaxis()
    ax.set_xlabel(f"CPU milliseconds per bound pod ({int(pods):,} pods)")
    ax.tick_params(axis="y", labelsize=8)
    ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
    ax.set_title(f"CPU cost per pod: {_short(run)}", fontsize=10, pad=10)
    return _save(fig, path)


def plot_fragmentation(run: RunResult, path: Path) -> Path | None:
    """The research measures' shares as the run ended: per resource, the free capacity
    stranded and expected-fragmented; per device kind, the free devices no pending pod can
    use (measure/research.py). Only when pods were pending and something was free."""
    r = run.research
    if not r.get("pendingPods"):
        return None
    rows: list[tuple[str, float, float | None]] = [
        (name, v["strandedShare"], v["expectedShare"])
        for name, v in (r.get("fragmentation") or {}).items()
        if v.get("free", 0.0) > 0
    ]
    for key, prefix in (("unusableDevices", ""), ("unusableDRADevices", "DRA ")):
        rows += [
            (f"{prefix}{name} devices", v["unusableShare"], None)
            for name, v in (r.get(key) or {}).items()
        ]
    if not rows:
        return None
    fig = _figure((SIZE[0], 1.8 + 0.45 * len(rows)))
    ax = fig.add_subplot()
    y = list(range(len(rows)))
    ax.barh(
        [i + 0.2 for i in y],
        [row[1] for row in rows],
        height=0.4,
        color=PALETTE[0],
        label="stranded (no pending pod fits) / unusable devices",
    )
    expected = [(i, row[2]) for i, row in enumerate(rows) if row[2] is not None]
    ax.barh(
        [i - 0.2 for i, _ in expected],
        [v for _, v in expected],
        height=0.4,
        color=PALETTE[1],
        label="expected (share of pending pods that miss)",
    )
    ax.set_yticks(y, [row[0] for row in rows])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the free amount")
    fig.legend(loc="outside lower center", fontsize=8, ncols=1, frameon=False)
    pending = int(r.get("pendingPods", 0))
    ax.set_title(f"Fragmentation, {pending:,} pods pending: {_short(run)}", fontsize=10, pad=10)
    return _save(fig, path)


RUN_PLOTS = {
    "throughput": plot_throughput,
    "latency": plot_latency,
    "queues": plot_queues,
    "leaders": plot_leaders,
    "cpu": plot_cpu,
    "cpu-per-pod": plot_cpu_per_pod,
    "memory": plot_memory,
    "fragmentation": plot_fragmentation,
}


def plot_run(run: RunResult, directory: Path, stem: str | None = None) -> dict[str, Path]:
    """Every plot of a run that has data, as ``kind → path``."""
    stem = stem or run.slug
    directory.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    for kind, draw in RUN_PLOTS.items():
        path = draw(run, directory / f"{stem}-{kind}.png")
        if path is not None:
            out[kind] = path
    return out


def sweep_groups(result: ExperimentResult) -> dict[tuple[str, str], list[RunResult]]:
    """Runs that are points of one sweep: same test case and workload, a non-empty sweep."""
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for run in result.runs:
        if run.sweep:
            groups.setdefault((run.test_case, run.workload), []).append(run)
    return {k: sorted(v, key=_sweep_key) for k, v in groups.items() if len(v) >= 2}


def _sweep_key(run: RunResult) -> tuple[tuple[int, float, str], ...]:
    """Sweep points in order: numbers by value (before text), text alphabetically."""
    return tuple(
        (0, float(v), "") if isinstance(v, int | float) else (1, 0.0, str(v))
        for v in run.sweep.values()
    )


def sweep_label(run: RunResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in run.sweep.items())


def plot_sweep(
    runs: Sequence[RunResult], path: Path, throughput: Sequence[float], p99_ms: Sequence[float]
) -> Path:
    """Throughput average and p99 scheduling latency against the swept value(s)."""
    keys = list(runs[0].sweep)
    numeric = len(keys) == 1 and all(isinstance(r.sweep.get(keys[0]), int | float) for r in runs)
    if numeric:
        order = sorted(range(len(runs)), key=lambda i: runs[i].sweep[keys[0]])
        runs = [runs[i] for i in order]
        throughput = [throughput[i] for i in order]
        p99_ms = [p99_ms[i] for i in order]
    xs: list[Any] = [r.sweep[keys[0]] for r in runs] if numeric else list(range(len(runs)))
    fig = _figure()
    left, right = fig.subplots(1, 2)
    for ax, ys, label, colour in (
        (left, throughput, "SchedulingThroughput avg (pods/s)", "#1f77b4"),
        (right, p99_ms, "scheduling latency p99 (ms)", "#d62728"),
    ):
        ax.plot(xs, ys, marker="o", color=colour, linewidth=1.4)
        ax.set_ylabel(label)
        top = max(finite(list(ys)), default=0.0)
        ax.set_ylim(0, top * 1.15 if top > 0 else 1.0)
        ax.grid(True, alpha=0.3, linewidth=0.5)
        if numeric:
            ax.set_xlabel(keys[0])
            ax.set_xticks(xs)
        else:
            ax.set_xticks(
                xs, labels=[sweep_label(r) for r in runs], rotation=30, ha="right", fontsize=7
            )
    fig.suptitle(f"Sweep: {runs[0].test_case}/{runs[0].workload}", fontsize=10)
    return _save(fig, path)


def plot_experiment(
    result: ExperimentResult, directory: Path, stems: dict[str, str] | None = None
) -> dict[str, dict[str, Path]]:
    """All plots: ``run id → kind → path``, sweeps under ``sweep:<test case>/<workload>``."""
    directory.mkdir(parents=True, exist_ok=True)
    stems = stems or {}
    out = {run.id: plot_run(run, directory, stems.get(run.id)) for run in result.runs}
    for (tc, wl), runs in sweep_groups(result).items():
        summaries = [run_summary(r) for r in runs]
        thr = [s.throughput.get("Average", math.nan) for s in summaries]
        p99 = [s.scheduling_ms.get("Perc99", math.nan) for s in summaries]
        path = plot_sweep(runs, directory / f"sweep-{slug(tc + '-' + wl)}.png", thr, p99)
        out[f"sweep:{tc}/{wl}"] = {"sweep": path}
        model = capacity.sweep_model(runs)
        if model is not None:
            stem = f"sweep-{slug(tc + '-' + wl)}-model.png"
            out[f"sweep:{tc}/{wl}"]["sweep-model"] = plot_sweep_model(runs, model, directory / stem)
    return out


def plot_sweep_model(runs: Sequence[RunResult], model: dict[str, Any], path: Path) -> Path:
    """Per sweep point: the measured rate beside the capacity model's prediction for each
    machine count (grouped bars; measure/capacity.py `sweep_model`)."""
    points = model["points"]
    machines = [p["machines"] for p in points[0]["predictions"]]
    fig = _figure()
    ax = fig.subplots(1, 1)
    width = 0.8 / (1 + len(machines))
    xs = list(range(len(points)))
    measured = [p["measured_pods_per_s"] or 0.0 for p in points]
    ax.bar([x - 0.4 + width / 2 for x in xs], measured, width, label="measured", color="#1f77b4")
    for j, n in enumerate(machines):
        ys = [p["predictions"][j]["pods_per_s"] for p in points]
        ax.bar(
            [x - 0.4 + width * (j + 1.5) for x in xs],
            ys,
            width,
            label=f"model, {n} machine{'s' if n > 1 else ''}",
            color=("#ff7f0e", "#2ca02c", "#9467bd", "#8c564b")[j % 4],
            alpha=0.8,
        )
    ax.set_xticks(
        xs,
        labels=[f"K={p['apiservers']}, S={p['schedulers']}" for p in points],
        rotation=30,
        ha="right",
        fontsize=8,
    )
    ax.set_ylabel("pods bound / s")
    ax.grid(True, axis="y", alpha=0.3, linewidth=0.5)
    ax.legend(fontsize=7)
    fig.suptitle(
        f"Sweep: {runs[0].test_case}/{runs[0].workload}: measured and modelled\n"
        f"(the model: {model['cores_per_machine']:g} cores per machine; a model, not a measurement)",
        fontsize=9,
    )
    return _save(fig, path)
