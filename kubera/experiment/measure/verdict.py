"""A run's verdict and summary: its threshold comparison (upstream's scheduler_perf
threshold on one DataItem metric), the summary row `kubera experiment run` prints and
compare and the report show, and the gang line. The DataItems they read are dataitems.py's."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rich.table import Table

from kubera.experiment.measure.dataitems import THROUGHPUT, DataItem, run_items, summarize
from kubera.experiment.measure.model import ExperimentResult, RunResult

# -- the threshold ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ThresholdVerdict:
    """The threshold comparison of one run: ``ok`` None when there is no threshold or no item
    of the metric (upstream passes both), else whether every matching item passed."""

    ok: bool | None
    metric: str
    threshold: float | None
    value: float | None
    message: str

    @property
    def label(self) -> str:
        return {True: "pass", False: "FAIL", None: "-"}[self.ok]


def threshold_verdict(
    run: RunResult, items: Sequence[DataItem], selector: str | Mapping[str, Any] | None = None
) -> ThresholdVerdict:
    """Upstream's compareMetricWithThreshold. ``selector`` is upstream's thresholdMetricSelector
    (``{"name", "labels", "expectLower", "dataBucket"}``) or just the metric name; default: the
    run's ``threshold_selector``, else its ``threshold_metric``."""
    sel = selector if selector is not None else run.threshold_selector or run.threshold_metric
    if isinstance(sel, str):
        metric, want_labels, lower, bucket = sel, {}, False, "Average"
    else:
        metric = str(sel.get("name") or run.threshold_metric or THROUGHPUT)
        want_labels = {str(k): str(v) for k, v in (sel.get("labels") or {}).items()}
        lower = bool(sel.get("expectLower", False))
        bucket = str(sel.get("dataBucket") or "Average")
    threshold = run.threshold
    if not threshold:
        return ThresholdVerdict(None, metric, threshold, None, "no threshold")
    matching = [
        i
        for i in items
        if i.metric == metric and all(i.labels.get(k) == v for k, v in want_labels.items())
    ]
    if not matching:
        return ThresholdVerdict(None, metric, threshold, None, f"no {metric} measured")
    for item in matching:
        value = item.data.get(bucket, math.nan)
        within = value < threshold if lower else value > threshold
        if not within:
            word = "lower" if lower else "higher"
            return ThresholdVerdict(
                False,
                metric,
                threshold,
                value,
                f"{item.labels.get('Name', run.id)}: expected {metric} {bucket} to be {word}: "
                f"got {value:f}, want {threshold:f}",
            )
    value = matching[0].data.get(bucket, math.nan)
    word = "<" if lower else ">"
    return ThresholdVerdict(
        True, metric, threshold, value, f"{metric} {bucket} {value:.1f} {word} {threshold:g}"
    )


# -- the summary table ------------------------------------------------------------------------


def _fmt(value: float | None, digits: int = 1) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:,.{digits}f}"


@dataclasses.dataclass(frozen=True)
class RunSummary:
    """The headline numbers of a run, shared by the CLI table, report.html and compare."""

    run_id: str
    throughput: dict[str, float]
    scheduling_ms: dict[str, float]
    startup_ms: dict[str, float]
    threshold: ThresholdVerdict
    check: str
    error: str | None


def check_label(run: RunResult) -> str:
    """The checker's verdict in a word: ``ok``, ``3 violations``, ``-`` (no check op)."""
    if run.check is None:
        return "-"
    if run.check.ok:
        return "ok"
    n = len(run.check.violations)
    return f"{n} violation" if n == 1 else f"{n} violations"


def run_summary(run: RunResult, items: Sequence[DataItem] | None = None) -> RunSummary:
    items = run_items(run) if items is None else items
    throughput = next((i.data for i in items if i.metric == THROUGHPUT), {})
    check = check_label(run)
    return RunSummary(
        run_id=run.id,
        throughput=throughput,
        scheduling_ms=summarize(run.latency.get("scheduling", []), scale=1000),
        startup_ms=summarize(run.latency.get("startup", []), scale=1000),
        threshold=threshold_verdict(run, items),
        check=check,
        error=run.error,
    )


SUMMARY_COLUMNS = (
    "run",
    "pods/s avg",
    "p50",
    "p90",
    "p99",
    "sched p50 ms",
    "sched p99 ms",
    "startup p50 ms",
    "startup p99 ms",
    "threshold",
    "check",
)


def summary_row(s: RunSummary) -> list[str]:
    """The cells of a run's summary line, in SUMMARY_COLUMNS order (plain text)."""
    thr = s.threshold.label
    if s.threshold.threshold:
        thr += f" (vs {s.threshold.threshold:g})"
    return [
        s.run_id,
        _fmt(s.throughput.get("Average")),
        _fmt(s.throughput.get("Perc50")),
        _fmt(s.throughput.get("Perc90")),
        _fmt(s.throughput.get("Perc99")),
        _fmt(s.scheduling_ms.get("Perc50")),
        _fmt(s.scheduling_ms.get("Perc99")),
        _fmt(s.startup_ms.get("Perc50")),
        _fmt(s.startup_ms.get("Perc99")),
        thr,
        "error" if s.error else s.check,
    ]


def summary(result: ExperimentResult) -> Table:
    """The table the CLI prints when an experiment ends: one line per run."""
    table = Table(title=f"kubera experiment: {result.config}", title_justify="left")
    for i, col in enumerate(SUMMARY_COLUMNS):
        table.add_column(col, justify="left" if i == 0 else "right", no_wrap=i == 0)
    for run in result.runs:
        row = summary_row(run_summary(run))
        style = None
        if row[-2].startswith("FAIL") or row[-1] not in ("ok", "-"):
            style = "red"
        table.add_row(*row, style=style)
    gangs = [line for run in result.runs if (line := gang_line(run))]
    if gangs:
        table.caption = "\n".join(gangs)
        table.caption_justify = "left"
    return table


def gang_line(run: RunResult) -> str:
    """The time to a whole gang bound of a run, in one line ("" when it had no gangs)."""
    ms = summarize(run.latency.get("gang", []), scale=1000, extra=True)
    if not ms:
        return ""
    n = len(run.latency["gang"])
    span = run.latency.get("gangSpan", [])
    rate = f", {n / span[0]:.3g} groups/s" if span and span[0] > 0 else ""
    return (
        f"{run.id}: whole gang bound in p50 {_fmt(ms['Perc50'])} ms, p90 {_fmt(ms['Perc90'])}, "
        f"p99 {_fmt(ms['Perc99'])}, max {_fmt(ms['Max'])} ({n} gang{'s' if n != 1 else ''}{rate})"
    )
