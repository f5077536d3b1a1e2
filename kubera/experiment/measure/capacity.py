"""A capacity model: from the CPU seconds each component spends per pod (measure/cpu.py: a
run's measured phase, on one machine), what N machines of C cores each would reach. A model, not a
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
- Shared-state (Omega) schedulers, S replicas all binding: like the apiservers, replica i
  on machine i mod N, their total D_sched(S) = D_sched(1)·(1 + g·(S − 1)) split evenly (g:
  the share every replica repeats — its informers and cache see every pod — estimated
  from an S = 1 and an S > 1 run, else 0). Conflicts show up as that repeated work.
  These singletons are placed largest demand first, each on the least loaded machine.
- X = the least of those bounds; the component (or machine) that sets it saturates first.
Every run with a measured phase reports the model (results.json's runs, the report and
`kubera bench`'s printout); `kubera bench capacity DIR [DIR-K2]` prints it again from the
output directories of `kubera bench`/`kubera experiment run`; given a K = 1 and a K > 1 run
it estimates f first.
Not modelled: network and etcd disk latency, the client's watch fan-out to more apiservers,
memory, contention between processes beyond the core count.

A sweep over apiservers K and shared-state schedulers S (`sweep_model`, e.g.
examples/experiments/scale-out.yaml) predicts every point from the smallest one's demands
(f and g from the points with more replicas of one kind only), so each measured point is
set beside what the model says from the smallest point's figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubera.experiment.measure import cpu
from kubera.experiment.measure.model import MeasuredPhase, RunResult

#: Kinds that run as one process whatever N is (node pools and apiservers spread); any kind
#: but the apiserver and the node pools is placed as one.
SINGLETONS = ("scheduler", "controller-manager", "etcd", "ray", "runner")
MACHINES = (1, 2, 4, 8)
STATEMENT = "a model, not a measurement (kubera/experiment/measure/capacity.py)"
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
    #: Scheduler replicas that all bind (shared-state); 1: one leader binds.
    schedulers: int = 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "machines": self.machines,
            "cores": self.cores,
            "apiservers": self.apiservers,
            "schedulers": self.schedulers,
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
    """The apiservers' total CPU s/pod at K replicas from its value at K = 1 (the same law
    gives shared-state schedulers' total at S replicas, with g)."""
    return d1 * (1 + f * (k - 1))


def predict(
    demands: dict[str, float],
    machines: int,
    cores: float,
    *,
    apiservers: int | None = None,
    measured_apiservers: int = 1,
    f: float = 0.0,
    schedulers: int = 1,
    measured_schedulers: int = 1,
    g: float = 0.0,
) -> Prediction:
    """Pods/s on `machines` machines of `cores` cores from the measured CPU s/pod per kind
    (`demands`, keys as measure/cpu.py's kinds; the apiservers' total over the
    `measured_apiservers` replicas of the measured run; the scheduler's over its
    `measured_schedulers` shared-state replicas, predicted for `schedulers` of them)."""
    if machines < 1 or cores <= 0:
        raise ValueError("machines must be >= 1 and cores > 0")
    k = machines if apiservers is None else apiservers
    if k < 1 or schedulers < 1:
        raise ValueError("apiservers and schedulers must be >= 1")
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
    d_sched = demands.get("scheduler", 0.0)
    spread: tuple[str, ...] = ("apiserver", "node-pool")
    if d_sched > 0 and (schedulers > 1 or measured_schedulers > 1):
        base = d_sched / (1 + g * (measured_schedulers - 1))
        per_s = apiserver_total(base, schedulers, g) / schedulers
        for i in range(schedulers):
            place(f"scheduler-{i}", "scheduler", per_s, i % machines)
        spread = (*spread, "scheduler")
    singles = [(kind, d) for kind, d in demands.items() if kind not in spread]
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
        return Prediction(
            machines, cores, k, float("inf"), "nothing measured", procs, loads, schedulers
        )
    # The tightest bound; on a tie a process beats its machine (it is the more specific).
    x, what = min(bounds, key=lambda b: (b[0], b[1].startswith("machine")))
    return Prediction(machines, cores, k, x, what, procs, loads, schedulers)


def model_table(
    demands: dict[str, float],
    *,
    machines: tuple[int, ...] = MACHINES,
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
        "see kubera/experiment/measure/capacity.py):",
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


def run_demands(run: RunResult) -> dict[str, float]:
    """CPU s/pod per component kind of a run's measured phase (its last measurement window
    that bound pods); {} when it measured none."""
    phase = measured_phase(run)
    if phase is None:
        return {}
    return cpu.demands(cpu.table(phase.cpu, phase.pods, phase.seconds))


def measured_phase(run: RunResult) -> MeasuredPhase | None:
    """The run's measured phase: its last measurement window that bound pods."""
    return next((m for m in reversed(run.measured) if m.pods > 0), None)


def apiservers_of(run: RunResult) -> int:
    return int(run.cluster.get("apiservers", 1) or 1)


def shared_schedulers_of(run: RunResult) -> int:
    """The scheduler replicas that all bind: shared-state's replicas, else 1 (a leader)."""
    if run.cluster.get("scheduler_mode") != "shared-state":
        return 1
    return int(run.cluster.get("schedulers", 1) or 1)


def run_model(
    run: RunResult,
    *,
    machines: tuple[int, ...] = MACHINES,
    cores: float = 2.0,
    f: float = 0.0,
) -> dict[str, Any] | None:
    """The model from one run's measured phase (None when it measured no CPU)."""
    demands = run_demands(run)
    if not demands:
        return None
    k = apiservers_of(run)
    preds = model_table(demands, machines=machines, cores=cores, measured_apiservers=k, f=f)
    phase = measured_phase(run)
    return {
        "statement": STATEMENT,
        "cores_per_machine": cores,
        "apiserver_fixed_share": f,
        "measured_apiservers": k,
        "demands_cpu_s_per_pod": demands,
        "measured_pods_per_s": phase.pods_per_s if phase is not None else None,
        "predictions": [p.as_dict() for p in preds],
    }


def from_runs(
    runs: list[RunResult], *, machines: tuple[int, ...], cores: float, f: float | None
) -> dict[str, Any]:
    """The model from several runs: demands from the run with the fewest apiservers; f
    given, or estimated from that run and the one with the most apiservers, else 0.
    ValueError when no run measured CPU."""
    measured = [r for r in runs if run_demands(r)]
    if not measured:
        raise ValueError("no run has a measured phase with CPU figures (a collectMetrics op)")
    by_k = sorted(measured, key=apiservers_of)
    base, top = by_k[0], by_k[-1]
    k1, kn = apiservers_of(base), apiservers_of(top)
    if f is None:
        f = 0.0
        if kn > k1 == 1:
            f = fixed_share(
                run_demands(base).get("apiserver", 0.0), run_demands(top).get("apiserver", 0.0), kn
            )
    model = run_model(base, machines=machines, cores=cores, f=f)
    assert model is not None
    return model


#: Machine counts every sweep point is predicted for (1: the hardware of a run on one
#: machine, however many Ray nodes it had).
SWEEP_MACHINES = (1, 2, 4)


def _replicas(run: RunResult) -> tuple[int, int]:
    return apiservers_of(run), shared_schedulers_of(run)


def _share(base: RunResult, others: list[RunResult], kind: str) -> float:
    """f (kind "apiserver") or g ("scheduler"): from the base point and the one among
    `others` with the most replicas of `kind` (the base has one of it); 0 without."""
    if not others:
        return 0.0
    top = max(others, key=lambda r: _replicas(r)[0 if kind == "apiserver" else 1])
    n = _replicas(top)[0 if kind == "apiserver" else 1]
    return fixed_share(run_demands(base).get(kind, 0.0), run_demands(top).get(kind, 0.0), n)


def sweep_model(
    runs: list[RunResult], *, machines: tuple[int, ...] = SWEEP_MACHINES, cores: float = 2.0
) -> dict[str, Any] | None:
    """Every point of a sweep over apiservers K and shared-state schedulers S, predicted
    from the smallest point's CPU demands (f from the points with more apiservers only, g
    from those with more schedulers only, when the smallest has one of each), beside its
    measured rate. None when no point measured CPU."""
    measured = [r for r in runs if run_demands(r)]
    if not measured:
        return None
    base = min(measured, key=lambda r: (*_replicas(r), r.id))
    k0, s0 = _replicas(base)
    demands = run_demands(base)
    more_k = [r for r in measured if _replicas(r)[1] == s0 and _replicas(r)[0] > k0]
    more_s = [r for r in measured if _replicas(r)[0] == k0 and _replicas(r)[1] > s0]
    f = _share(base, more_k, "apiserver") if k0 == 1 else 0.0
    g = _share(base, more_s, "scheduler") if s0 == 1 else 0.0
    points = []
    for run in runs:
        k, s = _replicas(run)
        phase = measured_phase(run)
        preds = [
            predict(
                demands,
                n,
                cores,
                apiservers=k,
                measured_apiservers=k0,
                f=f,
                schedulers=s,
                measured_schedulers=s0,
                g=g,
            )
            for n in machines
        ]
        points.append(
            {
                "run": run.id,
                "apiservers": k,
                "schedulers": s,
                "measured_pods_per_s": phase.pods_per_s if phase is not None else None,
                "predictions": [
                    {"machines": p.machines, "pods_per_s": p.pods_per_s, "bottleneck": p.bottleneck}
                    for p in preds
                ],
            }
        )
    return {
        "statement": STATEMENT,
        "base": base.id,
        "cores_per_machine": cores,
        "apiserver_fixed_share": f,
        "scheduler_fixed_share": g,
        "demands_cpu_s_per_pod": demands,
        "points": points,
    }
