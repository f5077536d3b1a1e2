"""`kubera bench NAME`: run examples/experiments/NAME.yaml through the experiment runner,
with flags mapped to the file's params (kubera.experiment.run.bench), and print the
figures the benches report (kubera.experiment.output.figures). One subcommand per
scenario file, so `kubera bench --help` lists them.

Besides the scenarios: `kubera bench capacity DIR…` (the capacity model again from the
output directories), `kubera bench compare --baseline REV EXPERIMENT` (an A/B against a
baseline commit on this machine, kubera.bench.ab), and the micro-benchmarks of the apiserver that define no scheduling
scenario: `apiserver`, `http` and `fuzz` (kubera.bench).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from kubera.bench import apiserver, fuzz, httpapi
from kubera.errors import CliError

if TYPE_CHECKING:
    from kubera.experiment.measure.model import RunResult
    from kubera.experiment.run.bench import Overrides

#: Micro-benchmarks (no scheduling scenario): each module has `register(bench_subparsers)`.
MICRO = (apiserver, httpapi, fuzz)


def register(sub: argparse._SubParsersAction) -> None:
    from kubera.experiment.run import bench as scenarios

    bench = sub.add_parser(
        "bench",
        help="measure kubera: a named experiment file with overrides, or a micro-benchmark",
    )
    bsub = bench.add_subparsers(dest="bench", metavar="BENCH")
    bsub.required = True
    for module in MICRO:
        module.register(bsub)
    for name in scenarios.names():
        _register_scenario(bsub, name, scenarios.describe(scenarios.SCENARIOS / f"{name}.yaml"))
    _register_capacity(bsub)
    _register_compare(bsub)


def _counts(text: str) -> tuple[int, ...]:
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants comma-separated counts, not {text!r}") from None
    if not ks or min(ks) < 1:
        raise argparse.ArgumentTypeError("wants counts >= 1")
    return ks


def _register_scenario(bsub: argparse._SubParsersAction, name: str, about: str) -> None:
    from kubera.experiment.run.bench import TARGETS

    p = bsub.add_parser(
        name,
        help=f"run examples/experiments/{name}.yaml (experiment runner, flags → params)",
        description=f"{about}\n\nRun examples/experiments/{name}.yaml through the experiment runner "
        "(one workload: --workload, else the one labelled performance, else the first); "
        "the flags set the workload's params and cluster settings.",
    )
    p.add_argument(
        "--workload",
        metavar="NAME",
        help="the file's workload (name or TestCase/Workload); for scheduling-basic also "
        "basic, topology-spread, anti-affinity, node-affinity, unschedulable, mixed-churn, "
        "preemption (the file of that shape)",
    )
    if name == "failover":
        p.add_argument(
            "--target",
            choices=tuple(TARGETS),
            help="whose process to kill: the scheduler leader (SchedulerFailover, the default) "
            "or the apiserver (ApiserverFailover)",
        )
    p.add_argument("--nodes", type=int, help="param initNodes or nodes")
    p.add_argument("--init-pods", type=int, help="param initPods")
    p.add_argument("--pods", type=int, help="param measurePods or pods")
    p.add_argument("--pods-per-node", type=int, help="param pods = nodes × this")
    p.add_argument("--kills", type=int, help="param kills")
    p.add_argument("--window", help="param window (a duration: 60s)")
    p.add_argument("--duration", help="param duration (a duration: 70s)")
    if name == "chaos":
        p.add_argument("--faults", type=int, help="param faults: faults drawn from --kinds")
        p.add_argument(
            "--cm-faults",
            type=int,
            help="param cmFaults: controller-manager-leader faults (its leader kinds of --kinds)",
        )
        p.add_argument(
            "--kinds",
            help="param kinds: the mix, comma-separated (kill, pause, partition, "
            "kill-apiserver, restart-etcd, kill-pool); a kind named twice is drawn twice as often",
        )
        p.add_argument("--interval", help="param interval: between faults (1s)")
        p.add_argument("--for", dest="fault_for", help="param faultDuration: pause/partition (3s)")
        p.add_argument("--seed", type=int, help="param seed: of the draw")
    p.add_argument(
        "--pressure-nodes",
        type=int,
        help="param pressureNodes: nodes put under memory pressure at once (0: none)",
    )
    p.add_argument(
        "--settle", help="param settle: the sleep between all pods running and the window (15s)"
    )
    p.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="any param (repeatable)"
    )
    p.add_argument("--apiservers", type=int, help="apiserver replicas (cluster apiServers)")
    p.add_argument(
        "--schedulers",
        type=_counts,
        help="scheduler replicas; a comma-separated list sweeps them (shared-state: 1,2,4)",
    )
    p.add_argument("--controller-managers", type=int, help="controller-manager replicas")
    p.add_argument(
        "--nodes-per-pool", type=int, help="hollow nodes per node-pool actor (cluster nodesPerPool)"
    )
    p.add_argument(
        "--no-controllers",
        action="store_true",
        help="start no controller-manager (as scheduler_perf; needed past ~60 s of run on "
        "plain nodes, whose lease nobody renews)",
    )
    p.add_argument("--lease-duration", help="leader election lease duration (2s)")
    p.add_argument("--renew-deadline", help="leader election renew deadline (1500ms)")
    p.add_argument("--retry-period", help="leader election retry period (500ms)")
    p.add_argument(
        "--k8s-defaults", action="store_true", help="kube-scheduler's lease timings (15s/10s/2s)"
    )
    p.add_argument(
        "--partition",
        choices=("hash", "none"),
        help="shared-state mode: hash (each pod belongs to one scheduler) or none (all try all)",
    )
    p.add_argument(
        "--check", action="store_true", help="run the history checker at the end (a check op)"
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="runs, each on a fresh cluster; the median printed"
    )
    p.add_argument(
        "--output",
        metavar="DIR",
        help="output directory (default ./bench-results/<name>-<timestamp>)",
    )
    p.add_argument(
        "--model-cores", type=float, default=2.0, help="cores per machine in the capacity model"
    )
    p.add_argument(
        "--model-f",
        type=float,
        default=0.0,
        help="capacity model: the share of an apiserver's per-pod work every replica repeats",
    )
    p.add_argument("--ray-address", default="", metavar="ADDR", help="use an existing Ray cluster")
    p.add_argument("--etcd", default="", metavar="URL", help="use an existing etcd (cleaned first)")
    p.add_argument(
        "--timeout",
        "--running-timeout",
        type=float,
        default=900.0,
        metavar="S",
        help="seconds any one op may wait (nodes: for all pods to run)",
    )
    p.set_defaults(func=cmd_scenario, scenario=name)


def overrides(args: argparse.Namespace, workload: str | None) -> Overrides:
    """The bench flags as `Overrides` (checked), selecting `workload`."""
    from kubera.experiment.run.bench import Overrides, parse_set

    counts = [
        args.nodes,
        args.pods,
        args.pods_per_node,
        args.apiservers,
        args.kills,
        args.nodes_per_pool,
    ]
    if any(c is not None and c < 1 for c in counts) or args.repeat < 1:
        raise CliError(
            "bench: --nodes, --pods, --pods-per-node, --apiservers, --kills, --nodes-per-pool "
            "and --repeat must be >= 1"
        )
    if any((getattr(args, f, None) or 0) < 0 for f in ("faults", "cm_faults")):
        raise CliError("bench: --faults and --cm-faults must be >= 0")
    if args.pressure_nodes is not None and args.pressure_nodes < 0:
        raise CliError("bench: --pressure-nodes must be >= 0")
    if (args.init_pods is not None and args.init_pods < 0) or (
        args.controller_managers is not None and args.controller_managers < 0
    ):
        raise CliError("bench: --init-pods and --controller-managers must be >= 0")
    if args.model_cores <= 0 or not 0 <= args.model_f <= 1:
        raise CliError("bench: --model-cores must be > 0 and --model-f in [0, 1]")
    return Overrides(
        workload=workload,
        nodes=args.nodes,
        init_pods=args.init_pods,
        pods=args.pods,
        pods_per_node=args.pods_per_node,
        kills=args.kills,
        window=args.window,
        duration=args.duration,
        settle=args.settle,
        pressure_nodes=args.pressure_nodes,
        faults=getattr(args, "faults", None),
        cm_faults=getattr(args, "cm_faults", None),
        interval=getattr(args, "interval", None),
        fault_for=getattr(args, "fault_for", None),
        seed=getattr(args, "seed", None),
        kinds=tuple(
            k.strip() for k in (getattr(args, "kinds", None) or "").split(",") if k.strip()
        ),
        params=parse_set(args.set),
        apiservers=args.apiservers,
        schedulers=args.schedulers or (),
        controller_managers=args.controller_managers,
        nodes_per_pool=args.nodes_per_pool,
        no_controllers=args.no_controllers,
        lease_duration=args.lease_duration,
        renew_deadline=args.renew_deadline,
        retry_period=args.retry_period,
        k8s_defaults=args.k8s_defaults,
        partition=args.partition,
        check=args.check,
        repeat=args.repeat,
    )


def cmd_scenario(args: argparse.Namespace) -> int:
    from kubera.cli.experiment import execute
    from kubera.experiment.output import figures
    from kubera.experiment.run import bench as scenarios
    from kubera.experiment.spec import config

    try:
        path, workload = scenarios.scenario_path(
            args.scenario, args.workload, getattr(args, "target", None)
        )
        workload = scenarios.mix_workload(args.scenario, workload, vars(args))
        o = overrides(args, workload)
        experiment = config.load(str(path), edit=lambda raw: scenarios.edit(raw, o, str(path)))
    except config.ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.output) if args.output else Path("bench-results") / f"{path.stem}-{stamp}"
    args.workload = None  # the edited file holds the one workload (its repeats, its sweep)
    code, result = execute(experiment, out, args)
    done = [r for r in result.runs if not r.error]
    for run in result.runs:
        print(figures.run_line(run))
    groups: dict[str, list[RunResult]] = {}
    for run in done:  # a sweep point's repeats together: `W/run=2/schedulers=4` → `W/schedulers=4`
        key = "/".join(part for part in run.id.split("/") if not part.startswith("run="))
        groups.setdefault(key, []).append(run)
    for runs in groups.values():
        print()
        print(
            figures.render(
                figures.median_run(runs), runs=runs, cores=args.model_cores, f=args.model_f
            )
        )
    return code


def _register_capacity(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "capacity",
        help="the capacity model again from `kubera bench`/`experiment run` output directories",
    )
    p.add_argument(
        "runs",
        nargs="+",
        metavar="DIR",
        help="output directories (or results.json files); a K = 1 and a K > 1 run "
        "(--apiservers) give the model its f",
    )
    p.add_argument("--machines", default="1,2,4,8", help="machine counts (default 1,2,4,8)")
    p.add_argument("--cores", type=float, default=2.0, help="cores per machine (default 2)")
    p.add_argument(
        "--f", type=float, default=None, help="apiserver fixed share (default: estimated)"
    )
    p.add_argument("--output", default="", help="also write the table as JSON here")
    p.set_defaults(func=cmd_capacity)


def cmd_capacity(args: argparse.Namespace) -> int:
    from kubera.experiment.measure import capacity
    from kubera.experiment.measure.model import ExperimentResult

    try:
        machines = tuple(int(x) for x in args.machines.split(",") if x.strip())
        runs: list[RunResult] = []
        for given in args.runs:
            path = Path(given)
            if path.is_dir():
                path = path / "results.json"
            result = ExperimentResult.from_json(json.loads(path.read_text()))
            runs.extend(r for r in result.runs if not r.error)
    except (OSError, ValueError, KeyError) as e:
        raise CliError(f"bench capacity: {e}") from None
    if not machines or min(machines) < 1 or args.cores <= 0:
        raise CliError("bench capacity: --machines wants counts >= 1, --cores > 0")
    if args.f is not None and not 0 <= args.f <= 1:
        raise CliError("bench capacity: --f must be in [0, 1]")
    try:
        model = capacity.from_runs(runs, machines=machines, cores=args.cores, f=args.f)
    except ValueError as e:
        raise CliError(f"bench capacity: {e}") from None
    print(
        capacity.render(
            model["predictions"],
            measured=model["measured_pods_per_s"],
            f=model["apiserver_fixed_share"],
        )
    )
    if args.output:
        Path(args.output).write_text(json.dumps(model, indent=2) + "\n")
        print(f"model written to {args.output}")
    return 0


def _register_compare(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "compare",
        help="A/B: an experiment on a baseline commit and on this checkout, alternately",
        description="Build REV once (in --cache), then run EXPERIMENT with `kubera experiment "
        "run` on the baseline and on this checkout, --runs pairs, the side that goes first "
        "alternating; print each figure's ratio current/baseline (median of the pairs, and "
        "their min-max) beside both sides' medians and the machine, and write compare.json.",
    )
    p.add_argument("experiment", metavar="EXPERIMENT", help="a bench name or an experiment file")
    p.add_argument("--baseline", required=True, metavar="REV", help="the commit to compare to")
    p.add_argument("--runs", type=int, default=3, help="pairs of runs (default 3)")
    p.add_argument("--workload", metavar="NAME", help="only this workload of the file")
    p.add_argument("--timeout", type=float, help="seconds any one op may wait")
    p.add_argument(
        "--output", metavar="DIR", help="default ./bench-results/compare-<name>-<timestamp>"
    )
    p.add_argument("--cache", metavar="DIR", help="where baselines are built (~/.cache/kubera)")
    p.set_defaults(func=cmd_compare)


def cmd_compare(args: argparse.Namespace) -> int:
    from kubera.bench import ab
    from kubera.experiment.run import bench as scenarios

    if args.runs < 1:
        raise CliError("bench compare: --runs must be >= 1")
    repo = Path(__file__).resolve().parents[2]
    if not (repo / ".git").exists():
        raise CliError(f"bench compare: needs kubera run from a git checkout, not {repo}")
    named = scenarios.SCENARIOS / f"{args.experiment}.yaml"
    path = named if named.is_file() else Path(args.experiment)
    if not path.is_file():
        raise CliError(
            f"bench compare: {args.experiment!r} is neither a bench name "
            f"({', '.join(scenarios.names())}) nor a file"
        )
    argv = ["experiment", "run", str(path.resolve())]
    if args.workload:
        argv += ["--workload", args.workload]
    if args.timeout:
        argv += ["--timeout", str(args.timeout)]
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = Path(args.output or Path("bench-results") / f"compare-{path.stem}-{stamp}").resolve()
    current = ab.current_side(repo)
    baseline = ab.baseline_side(repo, args.baseline, Path(args.cache) if args.cache else ab.CACHE)
    table = ab.compare(baseline, current, argv, args.runs, out)
    print(ab.render(table, baseline, current, ab.machine()))
    print(f"\nwritten: {out / 'compare.json'}")
    return 0
