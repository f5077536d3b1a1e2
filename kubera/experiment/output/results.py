"""Reading and writing an experiment's output directory.

::

    DIR/results.json          every run, as measured (kubera.experiment/v1; see model.py)
    DIR/DataItems.json        scheduler_perf's DataItems (+ kubera_* items)
    DIR/series/<run>.csv      the 1-second series of each run, one column per series
    DIR/plots/<run>-*.png     the plots (plots.py)
    DIR/report.html           one self-contained page (report.py)

``write`` writes results.json first, so a run's measurements survive a failing plot.
The data model lives in model.py (imported by every writer); its names are re-exported here.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

from kubera.experiment.measure import dataitems
from kubera.experiment.measure.model import (
    VERSION,
    CheckVerdict,
    ExperimentResult,
    Fault,
    LeaderTerm,
    MetricsSnapshots,
    Phase,
    ReplicaStats,
    RunResult,
    Window,
)
from kubera.experiment.output import plots, report

__all__ = [
    "VERSION",
    "CheckVerdict",
    "ExperimentResult",
    "Fault",
    "LeaderTerm",
    "MetricsSnapshots",
    "Phase",
    "ReplicaStats",
    "RunResult",
    "Window",
    "load",
    "series_file_names",
    "write",
    "write_json",
    "write_series",
]

RESULTS = "results.json"
DATA_ITEMS = "DataItems.json"
REPORT = "report.html"


def load(directory: str | os.PathLike[str]) -> ExperimentResult:
    """The experiment in ``directory``/results.json (or a results.json path itself)."""
    path = Path(directory)
    if path.is_dir():
        path = path / RESULTS
    with path.open(encoding="utf-8") as f:
        return ExperimentResult.from_json(json.load(f))


def write_json(path: Path, data: object) -> None:
    """Write ``data`` as indented JSON, atomically (a reader never sees half a file)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=False) + "\n", encoding="utf-8")
    tmp.replace(path)


def series_file_names(result: ExperimentResult) -> dict[str, str]:
    """Run id → a file stem unique within the experiment (ids that slug alike get ``-2``…)."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for run in result.runs:
        base = stem = run.slug
        n = 2
        while stem in used:
            stem = f"{base}-{n}"
            n += 1
        used.add(stem)
        names[run.id] = stem
    return names


def write_series(path: Path, run: RunResult) -> None:
    """The run's 1-second series as CSV: ``t`` first, then every other series in order."""
    keys = ["t"] + [k for k in run.series if k != "t"]
    length = max((len(v) for v in run.series.values()), default=0)
    t = run.series.get("t") or [float(i) for i in range(length)]
    columns = [t if k == "t" else run.series[k] for k in keys]
    with path.open("w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(keys)
        for i in range(length):
            out.writerow([_cell(col, i) for col in columns])


def _cell(column: list[float], i: int) -> str:
    if i >= len(column):
        return ""
    v = column[i]
    return str(int(v)) if float(v).is_integer() else repr(float(v))


def write(directory: str | os.PathLike[str], result: ExperimentResult) -> Path:
    """Write the whole output directory (see the module docstring); returns report.html's path."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / RESULTS, result.to_json())
    write_json(out / DATA_ITEMS, dataitems.data_items_json(result))
    names = series_file_names(result)
    series_dir = out / "series"
    series_dir.mkdir(exist_ok=True)
    for run in result.runs:
        write_series(series_dir / f"{names[run.id]}.csv", run)
    figures = plots.plot_experiment(result, out / "plots", names)
    return report.write_report(out / REPORT, result, figures)
