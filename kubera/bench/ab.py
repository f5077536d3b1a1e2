"""`kubera bench compare`: one experiment A/B, a baseline commit against this checkout, on one
machine in one session.

Our machines differ ~2.4x in speed, so a figure means something only beside its baseline's,
measured on the same machine at the same time. The baseline REV is built once into a cache
of its own (`git archive` of the commit, a venv, `pip install -e`), then the two sides run the
same experiment file (`kubera experiment run FILE`, each side's own code) in pairs, the order
alternating (baseline first in pairs 1, 3, ...; current first in 2, 4, ...) so that a drift
of the machine over the session weighs on both alike. Each figure is reported as the median of
its per-pair ratios current / baseline, with their spread (min-max), beside both sides'
absolute medians and the machine they came from.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from kubera.errors import CliError

#: Where built baselines are kept, one directory per commit (its src/ and venv/).
CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kubera" / "baselines"

BASELINE, CURRENT = "baseline", "current"

#: The figures of every run, each readable from an older commit's results.json too: upstream's
#: SchedulingThroughput average, the p99 create->bound latency, and CPU per bound pod over the
#: whole run (`kubera_cpu_seconds_per_pod`, whole stack and per process). Where both sides
#: record a measured phase (`kubera bench`'s), also its pods/s and CPU per pod per component
#: kind (the capacity model's demands, as `kubera bench` prints them).
PODS_PER_S, SCHED_P99, CPU = "pods/s", "sched p99 ms", "cpu ms/pod"
PHASE = "(measured phase)"


@dataclasses.dataclass(frozen=True)
class Side:
    """One side of the comparison: the Python whose `kubera` it runs, from which directory
    (its examples/ and its code), and the commit it is."""

    name: str
    python: Path
    cwd: Path
    rev: str


def git(repo: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise CliError(f"bench compare: git {' '.join(args)}: {r.stderr.strip()}")
    return r.stdout.strip()


def current_side(repo: Path) -> Side:
    """This checkout, run by the Python running this command; its rev names a dirty tree."""
    rev = git(repo, "rev-parse", "--short", "HEAD")
    if git(repo, "status", "--porcelain", "--untracked-files=no"):
        rev += "+changes"
    return Side(CURRENT, Path(sys.executable), repo, rev)


def baseline_side(
    repo: Path,
    rev: str,
    cache: Path = CACHE,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> Side:
    """The commit `rev` of `repo`, built into `cache`/SHA once (src/, venv/ and a .ready
    mark written last, so a build cut short is built again, never used half-made)."""
    sha = git(repo, "rev-parse", "--verify", f"{rev}^{{commit}}")
    home = cache / sha
    src, venv = home / "src", home / "venv"
    if not (home / ".ready").exists():
        print(f"bench compare: building the baseline {sha[:12]} in {home}", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)
        src.mkdir(parents=True)
        archive = subprocess.Popen(["git", "-C", str(repo), "archive", sha], stdout=subprocess.PIPE)
        untar = run(["tar", "-x", "-C", str(src)], stdin=archive.stdout, capture_output=True)
        if archive.wait() != 0 or untar.returncode != 0:
            raise CliError(f"bench compare: could not unpack {sha[:12]} into {src}")
        for argv in (
            [sys.executable, "-m", "venv", str(venv)],
            [str(venv / "bin" / "pip"), "install", "-q", "-e", str(src)],
        ):
            r = run(argv, capture_output=True, text=True)
            if r.returncode != 0:
                raise CliError(
                    f"bench compare: building the baseline failed: {' '.join(argv)}: "
                    f"{(r.stderr or r.stdout).strip()[-2000:]}"
                )
        (home / ".ready").write_text(sha + "\n")
    return Side(BASELINE, venv / "bin" / "python", src, sha[:12])


def schedule(pairs: int) -> list[tuple[int, str]]:
    """The runs in the order they go: (pair, side), the side that goes first alternating."""
    out: list[tuple[int, str]] = []
    for i in range(1, pairs + 1):
        first, second = (BASELINE, CURRENT) if i % 2 else (CURRENT, BASELINE)
        out += [(i, first), (i, second)]
    return out


def figures(directory: Path) -> dict[str, float]:
    """The figures of an experiment output directory, keyed `RUN-ID: FIGURE` (the runs that
    ended without an error)."""
    from kubera.experiment.measure.capacity import measured_phase, run_demands
    from kubera.experiment.measure.dataitems import run_items
    from kubera.experiment.measure.verdict import run_summary
    from kubera.experiment.output.results import load

    try:
        result = load(directory)
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise CliError(f"bench compare: {directory}: unreadable results: {e}") from None
    out: dict[str, float] = {}
    for run in result.runs:
        if run.error:
            continue
        items = run_items(run)
        summary = run_summary(run, items)
        for figure, value in (
            (PODS_PER_S, summary.throughput.get("Average")),
            (SCHED_P99, summary.scheduling_ms.get("Perc99")),
        ):
            if value is not None:
                out[f"{run.id}: {figure}"] = value
        whole = {
            i.labels.get("Component", "?"): i.data["Value"] * 1000
            for i in items
            if i.metric == "kubera_cpu_seconds_per_pod" and "Value" in i.data
        }
        phase = measured_phase(run)
        if phase is not None:
            out[f"{run.id}: {PODS_PER_S} {PHASE}"] = phase.pods_per_s
        kinds = {kind: s * 1000 for kind, s in run_demands(run).items()}
        for suffix, cpu in (("", whole), (f" {PHASE}", kinds)):
            if cpu:
                out[f"{run.id}: {CPU}{suffix}"] = sum(cpu.values())
                for component, ms in sorted(cpu.items()):
                    out[f"{run.id}: {CPU}{suffix} {component}"] = ms
    return out


def higher_is_better(figure: str) -> bool:
    return f": {PODS_PER_S}" in figure


@dataclasses.dataclass(frozen=True)
class Row:
    figure: str
    baseline: list[float]
    current: list[float]
    ratios: list[float]  # current / baseline, per pair

    @property
    def ratio(self) -> float:
        return statistics.median(self.ratios)

    def to_json(self) -> dict[str, Any]:
        return {
            "figure": self.figure,
            "higherIsBetter": higher_is_better(self.figure),
            "baseline": self.baseline,
            "current": self.current,
            "baselineMedian": statistics.median(self.baseline),
            "currentMedian": statistics.median(self.current),
            "ratios": self.ratios,
            "ratioMedian": self.ratio,
            "ratioMin": min(self.ratios),
            "ratioMax": max(self.ratios),
        }


def rows(pairs: Sequence[tuple[dict[str, float], dict[str, float]]]) -> list[Row]:
    """A row per figure both sides of every pair measured (baseline, current)."""
    if not pairs:
        return []
    common = set.intersection(*(set(b) & set(c) for b, c in pairs))
    out = []
    for figure in sorted(common):
        b = [p[0][figure] for p in pairs]
        c = [p[1][figure] for p in pairs]
        if any(v <= 0 for v in b):
            continue  # no ratio to a zero
        out.append(Row(figure, b, c, [ci / bi for bi, ci in zip(b, c, strict=True)]))
    return out


def machine() -> str:
    """This machine in a line: CPU model, cores, memory (from /proc)."""
    model, mem = "unknown CPU", ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                mem = f", {int(line.split()[1]) / 2**20:.0f} GiB"
                break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores{mem}"


def render(table: Sequence[Row], baseline: Side, current: Side, where: str) -> str:
    lines = [
        f"{current.rev} against baseline {baseline.rev}, {len(table[0].ratios) if table else 0} "
        f"pair(s), on {where}",
        "ratio = current / baseline, median of the pairs (min-max); "
        "pods/s: higher is better, ms: lower is better",
        "",
    ]
    width = max([len(r.figure) for r in table] + [6])
    lines.append(f"{'figure':<{width}}  {'baseline':>10}  {'current':>10}  ratio")
    for r in table:
        lines.append(
            f"{r.figure:<{width}}  {statistics.median(r.baseline):>10.2f}  "
            f"{statistics.median(r.current):>10.2f}  {r.ratio:.3f}x "
            f"({min(r.ratios):.3f}-{max(r.ratios):.3f})"
        )
    return "\n".join(lines)


def compare(
    baseline: Side,
    current: Side,
    argv: Sequence[str],
    pairs: int,
    out: Path,
    run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
) -> list[Row]:
    """Run `kubera ARGV --output DIR` on each side, `pairs` times each in `schedule`'s order,
    and write compare.json into `out`; a run that fails stops the comparison."""
    out.mkdir(parents=True, exist_ok=True)
    got: dict[tuple[int, str], dict[str, float]] = {}
    for i, name in schedule(pairs):
        side = baseline if name == BASELINE else current
        d = out / f"{name}-{i}"
        started = time.monotonic()
        r = run(
            [str(side.python), "-m", "kubera.cli", *argv, "--output", str(d)],
            cwd=side.cwd,
            capture_output=True,
            text=True,
        )
        took = time.monotonic() - started
        print(f"bench compare: pair {i} {name} ({side.rev}) {took:.0f}s", file=sys.stderr)
        if r.returncode != 0:
            raise CliError(
                f"bench compare: the {name} run of pair {i} failed (exit {r.returncode}); "
                f"its output is in {d}: {(r.stderr or r.stdout).strip()[-1500:]}"
            )
        got[(i, name)] = figures(d)
    table = rows([(got[(i, BASELINE)], got[(i, CURRENT)]) for i in range(1, pairs + 1)])
    (out / "compare.json").write_text(
        json.dumps(
            {
                "baseline": baseline.rev,
                "current": current.rev,
                "machine": machine(),
                "argv": list(argv),
                "pairs": pairs,
                "rows": [r.to_json() for r in table],
            },
            indent=2,
        )
        + "\n"
    )
    return table
