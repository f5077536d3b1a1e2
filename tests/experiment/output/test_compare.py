"""compare: runs matched by id, a column per directory, the change of the last against the
first, and the grouped-bar plot; a directory without results is a clear error."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from kubera.errors import CliError
from kubera.experiment.measure.model import RunResult
from kubera.experiment.output import compare
from kubera.experiment.output.results import write_json
from tests.experiment.builders import make_experiment, make_run


def save(directory: Path, *runs: RunResult) -> Path:
    """results.json alone: compare reads nothing else."""
    directory.mkdir(parents=True)
    write_json(directory / "results.json", make_experiment(*runs).to_json())
    return directory


def faster(run_id: str, rate: float) -> RunResult:
    n = 20
    bound = [0.0] * 5 + [rate] * 10 + [0.0] * 5
    run = make_run(run_id)
    run.series = {"t": [float(i) for i in range(n)], "bound": bound}
    return run


def cells(table: Table, column: int) -> list[str]:
    return [str(c) for c in table.columns[column].cells]


def test_runs_side_by_side(tmp_path: Path) -> None:
    a = save(tmp_path / "base", faster("A/x", 10.0), faster("A/only-base", 5.0))
    b = save(tmp_path / "new", faster("A/x", 15.0), faster("B/only-new", 7.0))
    table, png = compare.compare([a, b], tmp_path / "cmp.png")
    assert [c.header for c in table.columns] == ["run", "measure", "base", "new", "new vs base"]
    runs = [c for c in cells(table, 0) if c]
    assert runs == ["A/x", "A/only-base", "B/only-new"]
    measures = cells(table, 1)
    per_run = len(compare.MEASURES)
    assert measures[:per_run] == [m for m, _, _ in compare.MEASURES]
    assert cells(table, 2)[0] == "10.0" and cells(table, 3)[0] == "15.0"
    assert "+50.0%" in cells(table, 4)[0]
    # a run one directory lacks reads "-"
    assert cells(table, 3)[per_run] == "-" and cells(table, 2)[2 * per_run] == "-"
    assert cells(table, 4)[per_run] == ""
    assert png.read_bytes().startswith(b"\x89PNG") and png.stat().st_size > 5_000


def test_same_named_directories_get_longer_names(tmp_path: Path) -> None:
    a = save(tmp_path / "one" / "out", make_run())
    b = save(tmp_path / "two" / "out", make_run())
    assert compare.column_names([a, b]) == ["one/out", "two/out"]


def test_main_prints_the_table_and_the_plot_path(tmp_path: Path) -> None:
    a = save(tmp_path / "a", make_run())
    out = io.StringIO()
    code = compare.main([a], tmp_path / "plot.png", console=Console(file=out, width=200))
    assert code == 0
    text = out.getvalue()
    assert "SchedulingBasic/500Nodes" in text and "pods/s avg" in text
    assert f"comparison plot: {tmp_path / 'plot.png'}" in text.replace("\n", "")


def test_a_directory_without_results_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(CliError, match="empty: no results.json"):
        compare.compare([tmp_path / "empty"], tmp_path / "x.png")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "results.json").write_text(json.dumps({"version": "v0"}))
    with pytest.raises(CliError, match="bad: unreadable results.json"):
        compare.compare([bad], tmp_path / "x.png")
    with pytest.raises(CliError, match="at least one"):
        compare.compare([], tmp_path / "x.png")
