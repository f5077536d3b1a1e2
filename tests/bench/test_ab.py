"""`kubera bench compare` (kubera.bench.ab): the order of the runs, the figures it reads from
an experiment's output, the ratios, the baseline's build cache, and the command run end to
end with a stand-in for the two sides' `kubera experiment run`."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from kubera.bench import ab
from kubera.errors import CliError
from kubera.experiment.measure.model import MeasuredPhase
from kubera.experiment.output import results
from tests.experiment.builders import make_experiment, make_run


def test_the_side_that_goes_first_alternates_pair_by_pair() -> None:
    assert ab.schedule(3) == [
        (1, "baseline"),
        (1, "current"),
        (2, "current"),
        (2, "baseline"),
        (3, "baseline"),
        (3, "current"),
    ]


def _run_at(rate: float) -> Any:
    """make_run's run with a measured phase that bound `rate` pods per second for 10 s, with
    5 and 8 CPU-seconds of the scheduler and the apiserver."""
    pods = int(rate * 10)
    cpu = {"scheduler-0": 5.0, "apiserver": 8.0}
    return make_run(measured=[MeasuredPhase(window="namespace-1", pods=pods, seconds=10, cpu=cpu)])


def _write(directory: Path, run: Any) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    results.write_json(directory / results.RESULTS, make_experiment(run).to_json())


def test_figures_are_throughput_latency_and_cpu_per_pod_whole_run_and_measured_phase(
    tmp_path: Path,
) -> None:
    _write(tmp_path, _run_at(10.0))
    got = ab.figures(tmp_path)
    rid = "SchedulingBasic/500Nodes"
    # upstream's SchedulingThroughput over make_run's series: 10 pods/s in its window
    assert got[f"{rid}: pods/s"] == pytest.approx(10.0)
    assert got[f"{rid}: pods/s (measured phase)"] == pytest.approx(10.0)
    assert got[f"{rid}: sched p99 ms"] > 0
    # the whole run: make_run's 0.5 + 0.8 cores for 20 s over its 100 bound pods
    assert got[f"{rid}: cpu ms/pod scheduler-0"] == pytest.approx(100.0)
    assert got[f"{rid}: cpu ms/pod apiserver"] == pytest.approx(160.0)
    assert got[f"{rid}: cpu ms/pod"] == pytest.approx(260.0)
    # the measured phase, per component kind: 5 and 8 CPU-s over its 100 pods
    phase = {k: v for k, v in got.items() if k.startswith(f"{rid}: cpu ms/pod (measured phase) ")}
    assert phase == {
        f"{rid}: cpu ms/pod (measured phase) apiserver": 80.0,
        f"{rid}: cpu ms/pod (measured phase) scheduler": 50.0,
    }
    assert ab.higher_is_better(f"{rid}: pods/s (measured phase)")
    assert not ab.higher_is_better(f"{rid}: cpu ms/pod")


def test_an_older_commits_results_without_a_measured_phase_still_compare(tmp_path: Path) -> None:
    _write(tmp_path, make_run())
    got = ab.figures(tmp_path)
    assert "SchedulingBasic/500Nodes: pods/s" in got
    assert not [k for k in got if "measured phase" in k]


def test_a_ratio_is_the_median_of_the_pairs_with_their_spread() -> None:
    pairs = [({"x: pods/s": 100.0}, {"x: pods/s": v}) for v in (150.0, 110.0, 200.0)]
    (row,) = ab.rows(pairs)
    assert row.ratios == [1.5, 1.1, 2.0] and row.ratio == 1.5
    j = row.to_json()
    assert (j["ratioMin"], j["ratioMax"], j["baselineMedian"]) == (1.1, 2.0, 100.0)
    assert ab.rows([({"a": 1.0, "b": 0.0}, {"a": 2.0, "b": 1.0, "c": 3.0})])[0].figure == "a"


def _fake_kubera(rates: dict[str, list[float]], calls: list[tuple[str, str]]) -> Any:
    """Stands in for `python -m kubera.cli experiment run … --output DIR` of either side:
    writes an experiment whose pods/s is the side's next rate."""

    def run(argv: list[str], cwd: Path, **_: Any) -> subprocess.CompletedProcess[str]:
        side = "baseline" if "base" in str(argv[0]) else "current"
        out = Path(argv[argv.index("--output") + 1])
        calls.append((side, out.name))
        _write(out, _run_at(rates[side].pop(0)))
        return subprocess.CompletedProcess(argv, 0, "", "")

    return run


def test_compare_runs_both_sides_alternately_and_writes_the_ratios(tmp_path: Path) -> None:
    base = ab.Side("baseline", Path("/base/python"), tmp_path, "aaaa")
    cur = ab.Side("current", Path("/cur/python"), tmp_path, "bbbb")
    calls: list[tuple[str, str]] = []
    run = _fake_kubera({"baseline": [10.0, 10.0, 8.0], "current": [15.0, 20.0, 12.0]}, calls)
    table = ab.compare(base, cur, ["experiment", "run", "f.yaml"], 3, tmp_path / "o", run=run)
    assert [c[1] for c in calls] == [
        "baseline-1",
        "current-1",
        "current-2",
        "baseline-2",
        "baseline-3",
        "current-3",
    ]
    rate = next(r for r in table if r.figure.endswith(": pods/s (measured phase)"))
    assert rate.ratios == pytest.approx([1.5, 2.0, 1.5]) and rate.ratio == pytest.approx(1.5)
    written = (tmp_path / "o" / "compare.json").read_text()
    assert '"baseline": "aaaa"' in written and '"ratioMedian": 1.5' in written
    text = ab.render(table, base, cur, "a machine")
    assert "bbbb against baseline aaaa, 3 pair(s), on a machine" in text


def test_a_failed_run_stops_the_comparison_naming_its_side_and_pair(tmp_path: Path) -> None:
    base = ab.Side("baseline", Path("/base/python"), tmp_path, "aaaa")
    cur = ab.Side("current", Path("/cur/python"), tmp_path, "bbbb")

    def run(argv: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(argv, 3, "", "no such workload")

    with pytest.raises(CliError, match="the baseline run of pair 1 failed .exit 3.*no such"):
        ab.compare(base, cur, ["experiment", "run", "f.yaml"], 2, tmp_path / "o", run=run)


def _repo(path: Path) -> Path:
    path.mkdir()
    for argv in (
        ["init", "-q"],
        ["-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "0"],
    ):
        subprocess.run(["git", "-C", str(path), *argv], check=True)
    (path / "setup.py").write_text("# the baseline's tree\n")
    subprocess.run(["git", "-C", str(path), "add", "."], check=True)
    subprocess.run(
        ["git", "-C", str(path), "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "1"],
        check=True,
    )
    return path


def test_a_baseline_is_built_once_from_the_commit_and_reused(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")
    built: list[list[str]] = []

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        if argv[0] == "tar":  # the unpacking is real
            return subprocess.run(argv, **kw)
        built.append(argv)
        return subprocess.CompletedProcess(argv, 0, "", "")

    side = ab.baseline_side(repo, "HEAD", tmp_path / "cache", run=run)
    sha = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    assert side.rev == sha[:12] and side.cwd == tmp_path / "cache" / sha / "src"
    assert (side.cwd / "setup.py").read_text() == "# the baseline's tree\n"
    assert [a[1:3] for a in built] == [["-m", "venv"], ["install", "-q"]]
    ab.baseline_side(repo, sha[:7], tmp_path / "cache", run=run)
    assert len(built) == 2  # the second call found it ready


def test_a_failed_build_says_what_failed_and_is_not_left_ready(tmp_path: Path) -> None:
    repo = _repo(tmp_path / "repo")

    def run(argv: list[str], **kw: Any) -> subprocess.CompletedProcess[str]:
        if argv[0] == "tar":
            return subprocess.run(argv, **kw)
        return subprocess.CompletedProcess(argv, 1, "", "No matching distribution found")

    with pytest.raises(CliError, match="building the baseline failed.*No matching"):
        ab.baseline_side(repo, "HEAD", tmp_path / "cache", run=run)
    assert not list((tmp_path / "cache").glob("*/.ready"))
    with pytest.raises(CliError, match="git rev-parse"):
        ab.baseline_side(repo, "no-such-rev", tmp_path / "cache", run=run)
