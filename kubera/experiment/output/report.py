"""report.html: one self-contained page per experiment (CSS inline, plots as base64 PNG).

It opens from a mail attachment or an artefact store with nothing beside it: no script, no
external stylesheet, font or image. Every value that comes from the run (ids, params, fault
targets, checker messages) is escaped, since run ids and label values are user input.

Layout: header (config, when, machine, kubera version), the summary table of every run, a table
per sweep, then per run: its settings, threshold comparison and checker verdict, its plots, the
phases, faults, leader terms, replicas and its DataItems.
"""

from __future__ import annotations

import base64
import datetime
import html
import importlib.metadata
import json
import os
import platform
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from kubera.experiment.measure import capacity
from kubera.experiment.measure.dataitems import DataItem, run_items
from kubera.experiment.measure.model import ExperimentResult, RunResult
from kubera.experiment.measure.verdict import (
    SUMMARY_COLUMNS,
    check_label,
    run_summary,
    summary_row,
)
from kubera.experiment.output.plots import sweep_groups

PLOT_CAPTIONS = {
    "throughput": "Pods created, bound and Running per second; dashed lines mark faults, shaded "
    "spans pause/partition intervals and the measured (collectMetrics) window.",
    "latency": "CDF of per-pod scheduling (create→bound) and startup (create→Running) latency, "
    "and of the time to a whole gang bound (first member created→last bound) when pods carry "
    "the pod-group label.",
    "queues": "Pending pods per scheduling queue.",
    "leaders": "Leadership terms per component, coloured by holder, with fault marks.",
    "cpu": "CPU per component process (cores).",
    "cpu-per-pod": "CPU time per bound pod, per component.",
    "memory": "Resident memory per component process (MB).",
    "sweep": "Throughput and p99 scheduling latency against the swept parameter.",
    "fragmentation": "As the run ended, with pods pending: the share of each resource's free "
    "capacity stranded (on nodes no pending pod fits) and expected-fragmented (weighed by the "
    "pending pods that miss each node), and of free devices no pending pod can use.",
    "sweep-model": "Each sweep point's measured rate (pods bound / s over its measured "
    "phase) beside the capacity model's prediction from the smallest point's CPU per pod "
    "(a model, not a measurement), per machine count.",
}

CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:2em auto;max-width:1100px;
color:#222;line-height:1.4;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{margin-top:2em;border-bottom:2px solid #ddd;padding-bottom:.2em}
h3{margin-top:1.4em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #d0d0d0;padding:.25em .6em;text-align:right;vertical-align:top}
th{background:#f2f4f7}td.l,th.l{text-align:left}
tr:nth-child(even) td{background:#fafbfc}
.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}.muted{color:#777}
.meta td{text-align:left}.meta td:first-child{font-weight:600;background:#f7f7f7}
figure{margin:.6em .4em;display:inline-block;vertical-align:top;width:calc(50% - 1em);min-width:420px}
figure img{max-width:100%;height:auto;border:1px solid #eee}
figcaption{font-size:.85em;color:#555;max-width:640px}
code{background:#f4f4f4;padding:0 .25em;border-radius:3px}
.err{background:#fff1f0;border:1px solid #ffccc7;padding:.5em;white-space:pre-wrap}
"""


def e(value: object) -> str:
    """Escape anything for HTML text and attribute values."""
    return html.escape(str(value), quote=True)


def _sig(value: float) -> str:
    """A measured value for a table: integers as integers, others to about 3-4 digits."""
    if value != value:
        return "-"
    if float(value).is_integer():
        return f"{int(value):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    if abs(value) >= 1:
        return f"{value:.2f}"
    return f"{value:.3g}"


def _num(value: float | None, digits: int = 2) -> str:
    if value is None:
        return "-"
    if isinstance(value, float) and value != value:  # NaN
        return "-"
    return f"{value:,.{digits}f}"


def table(
    headers: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    left: int = 1,
    classes: Sequence[Sequence[str]] | None = None,
) -> str:
    """An HTML table; the first ``left`` columns are left-aligned (names); cells escaped."""
    out = ["<table><thead><tr>"]
    out += [f'<th class="{"l" if i < left else ""}">{e(h)}</th>' for i, h in enumerate(headers)]
    out.append("</tr></thead><tbody>")
    for r, row in enumerate(rows):
        out.append("<tr>")
        for i, cell in enumerate(row):
            cls = ["l"] if i < left else []
            if classes is not None and r < len(classes) and i < len(classes[r]) and classes[r][i]:
                cls.append(classes[r][i])
            out.append(f'<td class="{" ".join(cls)}">{e(cell)}</td>')
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _verdict_class(text: str) -> str:
    if text.startswith("pass") or text == "ok":
        return "pass"
    if text.startswith("FAIL") or text == "error" or "violation" in text:
        return "fail"
    return ""


def machine() -> dict[str, str]:
    """Where the report was written: cores, memory, Python, kubera's version."""
    try:
        version = importlib.metadata.version("kubera")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    memory = "unknown"
    try:
        pages = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        memory = f"{pages / 2**30:.1f} GiB"
    except (ValueError, OSError, AttributeError):
        pass
    return {
        "host": platform.node(),
        "cores": str(os.cpu_count() or "unknown"),
        "memory": memory,
        "platform": f"{platform.system()} {platform.release()} {platform.machine()}",
        "python": platform.python_version(),
        "kubera": version,
    }


def _img(path: Path) -> str:
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return f'<img alt="{e(path.stem)}" src="data:image/png;base64,{data}">'


def _figures(plots: Mapping[str, Path]) -> str:
    out = []
    for kind, path in plots.items():
        if not path.is_file():
            continue
        caption = PLOT_CAPTIONS.get(kind, kind)
        out.append(f"<figure>{_img(path)}<figcaption>{e(caption)}</figcaption></figure>")
    return "\n".join(out)


def _pairs(mapping: Mapping[str, Any]) -> str:
    if not mapping:
        return "-"
    return ", ".join(
        f"{k}={json.dumps(v) if not isinstance(v, str) else v}" for k, v in mapping.items()
    )


def _summary_section(result: ExperimentResult) -> str:
    rows, classes = [], []
    for run in result.runs:
        row = summary_row(run_summary(run))
        rows.append(row)
        classes.append([""] * 9 + [_verdict_class(row[9]), _verdict_class(row[10])])
    links = "".join(
        f'<li><a href="#run-{i}">{e(run.id)}</a></li>' for i, run in enumerate(result.runs)
    )
    return (
        "<h2>Summary</h2>"
        + "<p class=muted>Throughput as scheduler_perf's SchedulingThroughput (pods/s over the "
        "measured window); latencies per pod in ms.</p>"
        + table(SUMMARY_COLUMNS, rows, classes=classes)
        + f"<ul>{links}</ul>"
    )


def _sweep_sections(result: ExperimentResult, plots: Mapping[str, Mapping[str, Path]]) -> str:
    out = []
    for (tc, wl), runs in sweep_groups(result).items():
        keys = list(dict.fromkeys(k for r in runs for k in r.sweep))
        rows: list[list[object]] = []
        classes = []
        for run in runs:
            s = run_summary(run)
            rows.append(
                [*(run.sweep.get(k, "-") for k in keys)]
                + [
                    _num(s.throughput.get("Average"), 1),
                    _num(s.throughput.get("Perc99"), 1),
                    _num(s.scheduling_ms.get("Perc50"), 1),
                    _num(s.scheduling_ms.get("Perc99"), 1),
                    s.threshold.label,
                    "error" if s.error else s.check,
                ]
            )
            classes.append([""] * (len(keys) + 4) + [_verdict_class(str(x)) for x in rows[-1][-2:]])
        headers = [*keys, "pods/s avg", "pods/s p99", "sched p50 ms", "sched p99 ms"]
        headers += ["threshold", "check"]
        out.append(f"<h2>Sweep: {e(tc)}/{e(wl)}</h2>")
        out.append(table(headers, rows, left=len(keys), classes=classes))
        out.append(_sweep_model(runs, keys))
        out.append(_figures(plots.get(f"sweep:{tc}/{wl}", {})))
    return "\n".join(out)


def _sweep_model(runs: Sequence[RunResult], keys: Sequence[str]) -> str:
    """The capacity model's prediction beside each measured point of a sweep
    (measure/capacity.py `sweep_model`); "" when no point measured CPU."""
    model = capacity.sweep_model(list(runs))
    if model is None:
        return ""
    by_id = {r.id: r for r in runs}
    machines = [p["machines"] for p in model["points"][0]["predictions"]]
    rows = []
    for point in model["points"]:
        run = by_id[point["run"]]
        preds = point["predictions"]
        rows.append(
            [*(run.sweep.get(k, "-") for k in keys)]
            + [point["apiservers"], point["schedulers"], _num(point["measured_pods_per_s"], 1)]
            + [_num(p["pods_per_s"], 1) for p in preds]
            + [preds[0]["bottleneck"] if preds else "-"]
        )
    headers = [*keys, "K", "S", "measured pods/s"]
    headers += [f"model, {n} machine{'s' if n > 1 else ''}" for n in machines]
    headers += ["saturates first (1 machine)"]
    demands = ", ".join(f"{k} {v * 1000:.2f}" for k, v in model["demands_cpu_s_per_pod"].items())
    note = (
        f"<p class=muted>The capacity model ({e(model['statement'])}) beside each measured "
        f"point: every point predicted from the smallest one's CPU per pod "
        f"({e(model['base'])}: {e(demands)} ms/pod), machines of "
        f"{model['cores_per_machine']:g} cores, apiservers K and shared-state schedulers S "
        f"spread round the machines, f = {model['apiserver_fixed_share']:.2f} and "
        f"g = {model['scheduler_fixed_share']:.2f} (the share of a pod's work every "
        "apiserver or scheduler replica repeats). Measured: pods bound per second over "
        "the measured phase, on the machine the run had.</p>"
    )
    return "<h3>Measured and modelled</h3>" + note + table(headers, rows, left=len(keys))


def _items_table(items: Sequence[DataItem]) -> str:
    rows = []
    for item in items:
        extra = {k: v for k, v in item.labels.items() if k not in ("Metric", "Name")}
        data = ", ".join(f"{k} {_sig(v)}" for k, v in item.data.items())
        rows.append([item.metric, _pairs(extra), data, item.unit])
    return table(["Metric", "labels", "data", "unit"], rows, left=3)


def _run_section(index: int, run: RunResult, plots: Mapping[str, Path]) -> str:
    items = run_items(run)
    s = run_summary(run, items)
    out = [f'<h2 id="run-{index}">Run {e(run.id)}</h2>']
    meta = [
        ("test case / workload", f"{run.test_case} / {run.workload}"),
        ("params", _pairs(run.params)),
        ("sweep", _pairs(run.sweep)),
        ("labels", ", ".join(run.labels) or "-"),
        ("cluster", _pairs(run.cluster)),
        ("started", _when(run.t0)),
        ("duration", f"{run.duration:.1f} s"),
        ("threshold", f"{s.threshold.label}: {s.threshold.message}"),
    ]
    out.append('<table class="meta"><tbody>')
    for k, v in meta:
        cls = f' class="{_verdict_class(v)}"' if k == "threshold" else ""
        out.append(f"<tr><td>{e(k)}</td><td{cls}>{e(v)}</td></tr>")
    if run.check is not None:
        verdict = check_label(run)
        out.append(
            f'<tr><td>checker</td><td class="{_verdict_class(verdict)}">'
            f"{e(verdict)}: {e(run.check.summary)}</td></tr>"
        )
    out.append("</tbody></table>")
    if run.check is not None and run.check.violations:
        lis = "".join(f"<li><code>{e(v)}</code></li>" for v in run.check.violations[:50])
        more = len(run.check.violations) - 50
        tail = f"<li>… {more} more</li>" if more > 0 else ""
        out.append(f"<h3>Checker violations</h3><ul>{lis}{tail}</ul>")
    if run.error:
        out.append(f'<h3>Error</h3><div class="err">{e(run.error)}</div>')
    if run.warnings:
        lis = "".join(f"<li>{e(w)}</li>" for w in run.warnings)
        out.append(f"<h3>Warnings</h3><ul>{lis}</ul>")
    out.append(_figures(plots))
    if run.phases:
        out.append("<h3>Phases</h3>")
        rows = [
            [p.name, p.opcode, _num(p.start, 1), _num(p.end, 1), _num(p.end - p.start, 1)]
            for p in run.phases
        ]
        out.append(table(["op", "opcode", "start s", "end s", "took s"], rows, left=2))
    if run.faults:
        out.append("<h3>Faults</h3>")
        rows = [
            [f.kind, f.target, _num(f.t, 1), "-" if f.duration is None else _num(f.duration, 1)]
            for f in run.faults
        ]
        out.append(table(["kind", "target", "at s", "duration s"], rows, left=2))
    if run.leaders:
        out.append("<h3>Leader terms</h3>")
        rows = [
            [
                t.component,
                t.identity,
                _num(t.start, 1),
                "-" if t.end is None else _num(t.end, 1),
                "(holding)" if t.end is None else _num(t.end - t.start, 1),
            ]
            for t in sorted(run.leaders, key=lambda t: (t.component, t.start))
        ]
        out.append(table(["component", "holder", "from s", "to s", "held s"], rows, left=2))
    if run.replicas:
        out.append("<h3>Scheduler replicas</h3>")
        rows = [
            [r.name, f"{r.binds:,}", f"{r.conflicts:,}", _num(r.conflict_fraction, 3)]
            for r in run.replicas
        ]
        out.append(table(["replica", "binds", "conflicts", "conflict fraction"], rows))
    if run.attempts:
        out.append("<h3>Scheduling attempts per bound pod</h3>")
        total = sum(run.attempts.values()) or 1
        rows = [
            [attempts_bucket(k), f"{n:,}", _num(n / total, 3)]
            for k, n in sorted(run.attempts.items())
        ]
        out.append(table(["attempts (bucket ≤)", "pods", "fraction"], rows))
    if run.research:
        out.append(_research_section(run.research))
    if items:
        out.append("<h3>DataItems</h3>")
        out.append(_items_table(items))
    return "\n".join(out)


def _research_section(research: Mapping[str, Any]) -> str:
    """The research measures of the run's end (docs/experiments.md#research-measures)."""
    drain = research.get("queueDrainSeconds")
    out = [
        "<h3>Research measures (as the run ended)</h3>",
        f"<p class=muted>{int(research.get('pendingPods', 0)):,} pods pending on "
        f"{int(research.get('nodes', 0)):,} nodes; queue drained "
        + (
            f"{_sig(float(drain))} s after the last pod was created"
            if drain is not None
            else "never"
        )
        + ". Stranded: free on nodes no pending pod fits; expected: weighed by the share of "
        "pending pods that miss each node.</p>",
    ]
    rows = [
        [
            resource,
            _sig(v.get("free", 0.0)),
            _sig(v.get("stranded", 0.0)),
            _num(v.get("strandedShare", 0.0), 3),
            _sig(v.get("expected", 0.0)),
            _num(v.get("expectedShare", 0.0), 3),
        ]
        for resource, v in (research.get("fragmentation") or {}).items()
        if v.get("free", 0.0) > 0
    ]
    if rows:
        headers = ["resource", "free", "stranded", "share", "expected", "share"]
        out.append(table(headers, rows))
    devices = [
        [f"{kind}: {name}", _sig(v["free"]), _sig(v["unusable"]), _num(v["unusableShare"], 3)]
        for kind, key in (("extended", "unusableDevices"), ("DRA", "unusableDRADevices"))
        for name, v in (research.get(key) or {}).items()
    ]
    if devices:
        out.append(table(["devices", "free", "no pending pod can use", "share"], devices))
    return "\n".join(out)


def attempts_bucket(key: int) -> str:
    """An ``attempts`` key as its bucket: upstream's bounds are 1, 2, 4, 8, 16 (a pod in
    bucket 4 needed 3 or 4 attempts); the key past the last bound (17) is its overflow."""
    return str(key) if key & (key - 1) == 0 else f"> {key - 1}"


def _when(t0: float) -> str:
    if not t0:
        return "-"
    return datetime.datetime.fromtimestamp(t0, tz=datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def render(
    result: ExperimentResult,
    plots: Mapping[str, Mapping[str, Path]] | None = None,
    *,
    host: Mapping[str, str] | None = None,
) -> str:
    """The whole page. ``plots`` is plots.plot_experiment's ``run id → kind → path``."""
    plots = plots or {}
    host = machine() if host is None else host
    header = [
        ("config", result.config),
        ("started", result.started),
        ("runs", str(len(result.runs))),
        *((k, v) for k, v in host.items()),
    ]
    head = "".join(f"<tr><td>{e(k)}</td><td>{e(v)}</td></tr>" for k, v in header)
    body = [
        f"<h1>kubera experiment: {e(Path(result.config).name or result.config)}</h1>",
        f'<table class="meta"><tbody>{head}</tbody></table>',
        _summary_section(result),
        _sweep_sections(result, plots),
    ]
    body += [_run_section(i, run, plots.get(run.id, {})) for i, run in enumerate(result.runs)]
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        f"<title>kubera experiment: {e(result.config)}</title><style>{CSS}</style></head>"
        "<body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def write_report(
    path: Path, result: ExperimentResult, plots: Mapping[str, Mapping[str, Path]] | None = None
) -> Path:
    path.write_text(render(result, plots), encoding="utf-8")
    return path
