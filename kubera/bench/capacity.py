"""A capacity model: from the CPU seconds each component spends per pod (kubera/bench/cpu.py,
measured on one machine), what N machines of C cores each would reach. A model, not a
measurement: it predicts, it is not checked by a run on N machines.

The model (bottleneck analysis, the utilisation law X·D ≤ capacity for every resource):
- Demand D_p: CPU seconds per pod of each process p, as measured.
- A Python process (apiserver replica, scheduler, controller-manager, node pool, Ray, the
  bench client) runs on at most one core (one interpreter, one GIL): X·D_p ≤ 1. etcd (Go)
  uses every core of its machine: X·D_etcd ≤ C.
- Every machine has C cores shared by the processes on it: X·Σ D_p ≤ C.
- Placement: K apiserver replicas (default K = N), replica i on machine i mod N. Their total
  demand at K replicas is D_api(K) = D_api(1)·(1 + f·(K − 1)), split evenly: each replica
  pays the share f of every pod that does not split (its own watch cache decodes every event
  from etcd) and 1/K of the rest (requests are spread over replicas). f defaults to 0 and can
  be estimated from a K = 1 and a K = 2 run (`fixed_share`). A measured run with K > 1 is
  first brought back to K = 1 by the same formula.
- Node pools split evenly over the N machines (a pool serves a fixed set of nodes).
- One scheduler leader binds every pod: serial, X ≤ 1 / D_scheduler whatever N is. The
  controller-manager leader, etcd, Ray's head and the bench client are single processes too.
  These singletons are placed largest demand first, each on the least loaded machine.
- X = the least of those bounds; the component (or machine) that sets it saturates first.
`kubera bench capacity RUN.json [RUN-K2.json]` prints the table again from the JSON of
`kubera bench scheduling-basic` runs; given a K = 1 and a K > 1 run it estimates f first.
Not modelled: network and etcd disk latency, the client's watch fan-out to more apiservers,
memory, contention between processes beyond the core count.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubera.errors import CliError

#: Kinds that run as one process whatever N is (node pools and apiservers spread).
SINGLETONS = ("scheduler", "controller-manager", "etcd", "ray", "bench-client")
#: Kinds whose process uses every core of its machine (Go); the rest are one-core Python.
MULTI_CORE = ("etcd",)


@dataclass(frozen=True)
class Process:
    label: str
    kind: str
    demand: float  # CPU seconds per pod
    machine: int


@dataclass
class Prediction:
    machines: int
    cores: float
    apiservers: int
    pods_per_s: float
    #: What saturates first: a process label, or "machine i".
    bottleneck: str
    placement: list[Process] = field(default_factory=list)
    #: Each machine's CPU seconds per pod.
    loads: list[float] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "machines": self.machines,
            "cores": self.cores,
            "apiservers": self.apiservers,
            "pods_per_s": self.pods_per_s,
            "bottleneck": self.bottleneck,
            "machine_cpu_s_per_pod": self.loads,
            "placement": [
                {
                    "process": p.label,
                    "kind": p.kind,
                    "cpu_s_per_pod": p.demand,
                    "machine": p.machine,
                }
                for p in self.placement
            ],
        }


def fixed_share(total_k1: float, total_kn: float, k: int) -> float:
    """f from the apiservers' total CPU s/pod at K = 1 and at K = k > 1: total_kn =
    total_k1·(1 + f·(k − 1)); clamped to [0, 1]."""
    if k <= 1 or total_k1 <= 0:
        return 0.0
    return min(1.0, max(0.0, (total_kn / total_k1 - 1) / (k - 1)))


def apiserver_total(d1: float, k: int, f: float) -> float:
    """The apiservers' total CPU s/pod at K replicas from its value at K = 1."""
    return d1 * (1 + f * (k - 1))


def predict(
    demands: dict[str, float],
    machines: int,
    cores: float,
    *,
    apiservers: int | None = None,
    measured_apiservers: int = 1,
    f: float = 0.0,
) -> Prediction:
    """Pods/s on `machines` machines of `cores` cores from the measured CPU s/pod per kind
    (`demands`, keys as kubera/bench/cpu.py's kinds; the apiservers' total over the
    `measured_apiservers` replicas of the measured run)."""
    if machines < 1 or cores <= 0:
        raise ValueError("machines must be >= 1 and cores > 0")
    k = machines if apiservers is None else apiservers
    if k < 1:
        raise ValueError("apiservers must be >= 1")
    procs: list[Process] = []
    loads = [0.0] * machines

    def place(label: str, kind: str, demand: float, machine: int) -> None:
        procs.append(Process(label, kind, demand, machine))
        loads[machine] += demand

    d_api = demands.get("apiserver", 0.0)
    if d_api > 0:
        per = apiserver_total(d_api / (1 + f * (measured_apiservers - 1)), k, f) / k
        for i in range(k):
            place(f"apiserver-{i}", "apiserver", per, i % machines)
    d_pools = demands.get("node-pool", 0.0)
    if d_pools > 0:
        for i in range(machines):
            place(f"node-pools-{i}", "node-pool", d_pools / machines, i)
    singles = [(kind, d) for kind, d in demands.items() if kind not in ("apiserver", "node-pool")]
    for kind, d in sorted(singles, key=lambda kd: (-kd[1], kd[0])):
        if d <= 0:
            continue
        target = min(range(machines), key=lambda m: (loads[m], m))
        place(kind, kind, d, target)
    bounds: list[tuple[float, str]] = []
    for p in procs:
        cap = cores if p.kind in MULTI_CORE else min(1.0, cores)
        bounds.append((cap / p.demand, p.label))
    for m, load in enumerate(loads):
        if load > 0:
            bounds.append((cores / load, f"machine {m}"))
    if not bounds:
        return Prediction(machines, cores, k, float("inf"), "nothing measured", procs, loads)
    # The tightest bound; on a tie a process beats its machine (it is the more specific).
    x, what = min(bounds, key=lambda b: (b[0], b[1].startswith("machine")))
    return Prediction(machines, cores, k, x, what, procs, loads)


def model_table(
    demands: dict[str, float],
    *,
    machines: tuple[int, ...] = (1, 2, 4, 8),
    cores: float = 2.0,
    measured_apiservers: int = 1,
    f: float = 0.0,
) -> list[Prediction]:
    return [
        predict(demands, n, cores, measured_apiservers=measured_apiservers, f=f) for n in machines
    ]


def render(preds: list[dict[str, Any]], *, measured: float | None = None, f: float = 0.0) -> str:
    """The model's table from `Prediction.as_dict()`s; beside N = 1, the measured rate."""
    lines = [
        "  capacity model (a model, not a measurement: CPU s/pod per component as measured, "
        f"apiservers K = N, f = {f:.2f}, one scheduler leader, one etcd; "
        "see kubera/bench/capacity.py):",
        f"    {'machines':>8} {'cores':>5} {'K':>3} {'pods/s':>8}  saturates first",
    ]
    for p in preds:
        lines.append(
            f"    {p['machines']:>8} {p['cores']:>5g} {p['apiservers']:>3} "
            f"{p['pods_per_s']:>8.0f}  {p['bottleneck']}"
        )
    if measured is not None and preds and preds[0]["machines"] == 1:
        lines.append(
            f"    (the model on 1 machine: {preds[0]['pods_per_s']:.0f} pods/s against "
            f"{measured:.0f} measured: the gap is what CPU alone does not explain)"
        )
    return "\n".join(lines)


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "capacity",
        help="the capacity model from `kubera bench scheduling-basic --output` JSON (a model)",
    )
    p.add_argument(
        "runs",
        nargs="+",
        help="JSON reports; a K = 1 and a K > 1 run (--apiservers) give the model its f",
    )
    p.add_argument("--machines", default="1,2,4,8", help="machine counts (default 1,2,4,8)")
    p.add_argument("--cores", type=float, default=2.0, help="cores per machine (default 2)")
    p.add_argument(
        "--f", type=float, default=None, help="apiserver fixed share (default: estimated)"
    )
    p.add_argument("--output", default="", help="also write the table as JSON here")
    p.set_defaults(func=cmd_capacity)


def run_demands(rep: dict[str, Any]) -> dict[str, float]:
    """CPU s/pod per component kind of one scheduling-basic report."""
    by_kind = rep.get("cpu", {}).get("by_kind", {})
    if not by_kind:
        raise CliError("bench capacity: the report has no CPU table (rerun scheduling-basic)")
    return {k: float(v["cpu_s_per_pod"]) for k, v in by_kind.items()}


def from_reports(
    reports: list[dict[str, Any]], *, machines: tuple[int, ...], cores: float, f: float | None
) -> dict[str, Any]:
    """The model from the reports: demands from the run with the fewest apiservers; f
    given, or estimated from that run and the one with the most apiservers, else 0."""
    by_k = sorted(reports, key=lambda r: int(r.get("apiservers", 1)))
    base, top = by_k[0], by_k[-1]
    k1, kn = int(base.get("apiservers", 1)), int(top.get("apiservers", 1))
    demands = run_demands(base)
    if f is None:
        f = 0.0
        if kn > k1 == 1:
            f = fixed_share(
                demands.get("apiserver", 0.0), run_demands(top).get("apiserver", 0.0), kn
            )
    preds = model_table(demands, machines=machines, cores=cores, measured_apiservers=k1, f=f)
    return {
        "statement": "a model, not a measurement (kubera/bench/capacity.py)",
        "cores_per_machine": cores,
        "apiserver_fixed_share": f,
        "measured_apiservers": k1,
        "demands_cpu_s_per_pod": demands,
        "measured_pods_per_s": base.get("throughput_avg"),
        "predictions": [p.as_dict() for p in preds],
    }


def cmd_capacity(args: argparse.Namespace) -> int:
    try:
        machines = tuple(int(x) for x in args.machines.split(",") if x.strip())
        reports = [json.loads(Path(p).read_text()) for p in args.runs]
    except (OSError, ValueError) as e:
        raise CliError(f"bench capacity: {e}") from None
    if not machines or min(machines) < 1 or args.cores <= 0:
        raise CliError("bench capacity: --machines wants counts >= 1, --cores > 0")
    if args.f is not None and not 0 <= args.f <= 1:
        raise CliError("bench capacity: --f must be in [0, 1]")
    model = from_reports(reports, machines=machines, cores=args.cores, f=args.f)
    print(
        render(
            model["predictions"],
            measured=model["measured_pods_per_s"],
            f=model["apiserver_fixed_share"],
        )
    )
    if args.output:
        Path(args.output).write_text(json.dumps(model, indent=2) + "\n")
        print(f"model written to {args.output}")
    return 0
