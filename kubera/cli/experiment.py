"""`kubera experiment run FILE` and `kubera experiment compare DIR DIR…`.

`run` loads the file first (every error, with its place in the file, before any cluster
starts: exit 2), runs every selected (test case, workload, sweep point) on a fresh kubera
(kubera.experiment.run.runner), writes the output directory (kubera.experiment.output.results) and
prints the summary table and where report.html is. Its exit code is 0 only when every
run completed, met its threshold and passed its checks.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kubera.errors import CliError

if TYPE_CHECKING:
    from kubera.experiment.measure.model import ExperimentResult
    from kubera.experiment.spec.cases import Experiment


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "experiment", help="run scheduler_perf-style experiment files and compare their results"
    )
    esub = p.add_subparsers(dest="experiment_command", metavar="COMMAND")
    esub.required = True
    r = esub.add_parser(
        "run",
        help="run an experiment file (upstream scheduler_perf's format plus kubera's ops), "
        "each workload on a fresh cluster, and write its report",
    )
    r.add_argument("file", metavar="FILE")
    r.add_argument(
        "--workload",
        metavar="NAME",
        help="only this workload (its name, or TestCase/Workload); default: every one",
    )
    r.add_argument(
        "--output",
        metavar="DIR",
        help="output directory (default ./experiment-results/<file stem>-<timestamp>)",
    )
    r.add_argument("--ray-address", default="", metavar="ADDR", help="use an existing Ray cluster")
    r.add_argument("--etcd", default="", metavar="URL", help="use an existing etcd (cleaned first)")
    r.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="seconds any one op may wait (default 600)",
    )
    r.set_defaults(func=cmd_run)
    c = esub.add_parser("compare", help="print experiment results side by side")
    c.add_argument("dirs", nargs="+", metavar="DIR")
    c.add_argument("--output", metavar="PNG", help="also write a comparison plot")
    c.set_defaults(func=cmd_compare)


def default_output(config: str) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return Path("experiment-results") / f"{Path(config).stem}-{stamp}"


def cmd_run(args: argparse.Namespace) -> int:
    from kubera.experiment.spec import config

    try:
        experiment = config.load(args.file)
    except config.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.workload and not experiment.runs(args.workload):
        names = sorted({f"{tc.name}/{w.name}" for tc, w in experiment.runs()})
        print(
            f"error: {args.file}: no workload {args.workload!r} (there are: {', '.join(names)})",
            file=sys.stderr,
        )
        return 2
    out = Path(args.output) if args.output else default_output(args.file)
    code, _ = execute(experiment, out, args)
    return code


def execute(
    experiment: Experiment, out: Path, args: argparse.Namespace
) -> tuple[int, ExperimentResult]:
    """Run `experiment` (`args.workload`, or every workload) with `args`' --ray-address,
    --etcd and --timeout, write `out` and print the summary: (exit code, the result). Exit
    code 0 when every run completed, met its threshold and passed its checks; 130 after
    Ctrl-C or SIGTERM."""
    from kubera.experiment.measure.dataitems import run_items
    from kubera.experiment.measure.verdict import summary, threshold_verdict
    from kubera.experiment.output import results
    from kubera.experiment.run.progress import Progress
    from kubera.experiment.run.runner import Runner, RunOptions, signals_held

    if not args.timeout > 0:
        raise CliError(f"--timeout must be > 0, got {args.timeout}")
    for warning in experiment.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    opts = RunOptions(ray_address=args.ray_address, etcd=args.etcd, timeout=args.timeout)
    progress = Progress()
    runner = Runner(experiment, opts, progress)
    interrupted = False
    # SIGTERM (docker stop, timeout) ends the experiment as Ctrl-C does: the running
    # cluster goes down and the runs so far are written (the runner holds both signals
    # while a cluster goes down, so a second one cannot cut that short).
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        result = runner.run(args.workload)
    except KeyboardInterrupt:
        interrupted = True
        result = runner.result
    finally:
        signal.signal(signal.SIGTERM, previous)
    with signals_held():  # the runs so far are written whole, even on a second signal
        report = results.write(out, result)
    progress.console.print(summary(result))
    failed = 0
    for run in result.runs:
        verdict = threshold_verdict(run, run_items(run))
        if run.error:
            print(f"{run.id}: error: {run.error}", file=sys.stderr)
        if run.error or verdict.ok is False or (run.check is not None and not run.check.ok):
            failed += 1
        if verdict.ok is False:
            print(f"{run.id}: threshold missed: {verdict.message}", file=sys.stderr)
        if run.check is not None and not run.check.ok:
            print(f"{run.id}: check failed: {run.check.summary}", file=sys.stderr)
    print(f"results: {out}")
    print(f"report:  {report}")
    if interrupted:
        return 130, result
    return (1 if failed else 0), result


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_compare(args: argparse.Namespace) -> int:
    from kubera.experiment.output import compare

    return compare.main(args.dirs, output=args.output)
