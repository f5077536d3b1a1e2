"""``kubera experiment compare DIR DIR…``: experiment outputs side by side.

Runs are matched by id across the directories (a run missing from one reads ``-``); each run
gets a row per headline measure and each directory a column, plus the change of the last
directory against the first when both measured it. The comparison plot draws grouped bars:
throughput average and p99 scheduling latency per run id, one bar per directory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from matplotlib.figure import Figure
from rich.console import Console
from rich.table import Table

from kubera.errors import CliError
from kubera.experiment.measure.model import ExperimentResult, RunResult
from kubera.experiment.measure.verdict import RunSummary, run_summary
from kubera.experiment.output.plots import DPI, PALETTE
from kubera.experiment.output.results import RESULTS, load

#: The rows of each run: label, value from its summary, whether higher is better (None: text).
MEASURES: list[tuple[str, Callable[[RunSummary], float | str | None], bool | None]] = [
    ("pods/s avg", lambda s: s.throughput.get("Average"), True),
    ("pods/s p50", lambda s: s.throughput.get("Perc50"), True),
    ("pods/s p99", lambda s: s.throughput.get("Perc99"), True),
    ("sched p50 ms", lambda s: s.scheduling_ms.get("Perc50"), False),
    ("sched p99 ms", lambda s: s.scheduling_ms.get("Perc99"), False),
    ("startup p99 ms", lambda s: s.startup_ms.get("Perc99"), False),
    ("threshold", lambda s: s.threshold.label, None),
    ("check", lambda s: "error" if s.error else s.check, None),
]


def load_all(dirs: Sequence[str | os.PathLike[str]]) -> list[ExperimentResult]:
    """Every directory's results, or a CliError naming the one that has none."""
    out = []
    for d in dirs:
        path = Path(d)
        if not (path / RESULTS).is_file() and not (path.is_file() and path.name == RESULTS):
            raise CliError(f"{d}: no {RESULTS} (not an experiment output directory)")
        try:
            out.append(load(path))
        except (ValueError, KeyError, TypeError) as err:
            raise CliError(f"{d}: unreadable {RESULTS}: {err}") from err
    return out


def column_names(dirs: Sequence[str | os.PathLike[str]]) -> list[str]:
    """Short names for the directories: the last path part, or more when that repeats."""
    paths = [Path(d).resolve() for d in dirs]
    for depth in range(1, 10):
        names = ["/".join(p.parts[-depth:]) for p in paths]
        if len(set(names)) == len(names):
            return names
    return [str(p) for p in paths]


def run_ids(results: Sequence[ExperimentResult]) -> list[str]:
    """Every run id, in the order they first appear."""
    return list(dict.fromkeys(run.id for r in results for run in r.runs))


def _find(result: ExperimentResult, run_id: str) -> RunResult | None:
    return next((r for r in result.runs if r.id == run_id), None)


def _cell(value: float | str | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    return "-" if not math.isfinite(value) else f"{value:,.1f}"


def _change(first: float | str | None, last: float | str | None, higher: bool | None) -> str:
    if higher is None or not isinstance(first, float | int) or not isinstance(last, float | int):
        return ""
    if not (math.isfinite(first) and math.isfinite(last)) or first == 0:
        return ""
    pct = (last - first) / abs(first) * 100
    better = (pct > 0) == higher
    colour = "green" if better and abs(pct) >= 1 else "red" if abs(pct) >= 1 else "white"
    return f"[{colour}]{pct:+.1f}%[/{colour}]"


def comparison_rows(
    results: Sequence[ExperimentResult],
) -> list[tuple[str, str, list[str], str]]:
    """(run id, measure, one cell per directory, change last vs first) for every run."""
    rows = []
    for run_id in run_ids(results):
        summaries = [
            None if (run := _find(r, run_id)) is None else run_summary(run) for r in results
        ]
        for label, get, higher in MEASURES:
            values = [None if s is None else get(s) for s in summaries]
            change = _change(values[0], values[-1], higher) if len(values) > 1 else ""
            rows.append((run_id, label, [_cell(v) for v in values], change))
    return rows


def comparison_table(results: Sequence[ExperimentResult], names: Sequence[str]) -> Table:
    table = Table(title="kubera experiment compare", title_justify="left")
    table.add_column("run", no_wrap=True)
    table.add_column("measure")
    for name in names:
        table.add_column(name, justify="right")
    if len(names) > 1:
        table.add_column(f"{names[-1]} vs {names[0]}", justify="right")
    previous = None
    for run_id, label, cells, change in comparison_rows(results):
        first = run_id != previous
        previous = run_id
        extra = [change] if len(names) > 1 else []
        table.add_row(run_id if first else "", label, *cells, *extra, end_section=label == "check")
    return table


def comparison_plot(results: Sequence[ExperimentResult], names: Sequence[str], path: Path) -> Path:
    """Grouped bars per run id: throughput average (left), p99 scheduling latency (right)."""
    ids = run_ids(results)
    fig = Figure(figsize=(6.4, 3.6 + 0.12 * max(0, len(ids) - 4)), dpi=DPI, layout="constrained")
    left, right = fig.subplots(1, 2, sharey=True)
    n = len(results)
    height = 0.8 / max(n, 1)
    for j, (result, name) in enumerate(zip(results, names, strict=True)):
        thr, p99 = [], []
        for run_id in ids:
            run = _find(result, run_id)
            s = None if run is None else run_summary(run)
            thr.append(math.nan if s is None else s.throughput.get("Average", math.nan))
            p99.append(math.nan if s is None else s.scheduling_ms.get("Perc99", math.nan))
        ys = [i - 0.4 + height * (j + 0.5) for i in range(len(ids))]
        colour = PALETTE[j % len(PALETTE)]
        for ax, values in ((left, thr), (right, p99)):
            bars = ax.barh(ys, values, height, color=colour, label=name if ax is left else None)
            labels = ["" if math.isnan(v) else f"{v:,.0f}" for v in values]
            ax.bar_label(bars, labels=labels, fontsize=6, padding=2)
    left.set_yticks(range(len(ids)), labels=ids, fontsize=7)
    left.invert_yaxis()
    left.set_xlabel("SchedulingThroughput avg (pods/s)")
    right.set_xlabel("scheduling latency p99 (ms)")
    for ax in (left, right):
        ax.grid(True, axis="x", alpha=0.3, linewidth=0.5)
        ax.margins(x=0.12)
    fig.legend(
        loc="outside lower center",
        ncols=min(n, 4),
        fontsize=7,
        title="experiment",
        title_fontsize=7,
    )
    fig.suptitle("Experiments compared", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    return path


def compare(
    dirs: Sequence[str | os.PathLike[str]], output: str | os.PathLike[str] | None = None
) -> tuple[Table, Path]:
    """The side-by-side table and the comparison plot (``output``, default ./compare.png)."""
    if not dirs:
        raise CliError("compare needs at least one experiment output directory")
    results = load_all(dirs)
    names = column_names(dirs)
    path = comparison_plot(results, names, Path(output or "compare.png"))
    return comparison_table(results, names), path


def main(
    dirs: Sequence[str | os.PathLike[str]],
    output: str | os.PathLike[str] | None = None,
    *,
    console: Console | None = None,
) -> int:
    """What ``kubera experiment compare`` runs: print the table and the plot's path; 0."""
    console = console or Console()
    table, path = compare(dirs, output)
    console.print(table)
    console.print(f"comparison plot: {path}")
    return 0
