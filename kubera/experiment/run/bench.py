"""`kubera bench NAME`: examples/experiments/NAME.yaml with its command-line overrides.

A bench is an experiment file with a name: no scenario lives in Python. The file is loaded
as `kubera experiment run` loads it, after `edit` has narrowed it to one workload and
written the flags into it:

    --target T        failover only: the test case that kills T (scheduler, apiserver)
    --workload W      the workload W of the file (its name, TestCase/Workload, or a test
                      case's name: its default workload); default
                      the one labelled `performance` (upstream's 5,000-node shape), else
                      the file's first. For `scheduling-basic`, the old workload names of
                      `kubera bench scheduling-basic --workload` (basic, topology-spread,
                      anti-affinity, node-affinity, unschedulable, mixed-churn, preemption)
                      name the file that holds that shape (`SCENARIO_OF_WORKLOAD`).
    --nodes, --pods, --init-pods, --pods-per-node, --kills, --window, --duration, --settle,
                      --pressure-nodes, --faults, --cm-faults, --kinds (also the
                      controller-manager's leader kinds), --interval, --for, --seed (chaos:
                      given without --workload, they select the random mix ChaosMix)
                      the workload's params (`PARAMS`: the first of the names the workload
                      defines); a flag the workload has no param for is an error
    --set KEY=VALUE   any param (VALUE read as YAML)
    --apiservers, --schedulers, --controller-managers, --no-controllers,
    --lease-duration/--renew-deadline/--retry-period, --k8s-defaults, --partition,
    --nodes-per-pool
                      the workload's `cluster:` settings (`--schedulers 1,2,4`: a sweep)
    --check           a `check` op at the end when the file has none

A workload whose params were changed loses its `threshold`: upstream's thresholds hold for
their exact shape only. `--repeat N` makes N copies of the workload (`W/run=1`, …), each
run on a fresh cluster; the median run (by the measured phase's pods/s) is the one printed.
"""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import yaml

from kubera.experiment.spec.fields import ConfigError

#: Where the named scenarios live (the repository's examples/experiments/).
SCENARIOS = Path(__file__).resolve().parents[3] / "examples" / "experiments"

#: `kubera bench scheduling-basic --workload X` (its old names) → the file with that shape.
SCENARIO_OF_WORKLOAD = {
    "basic": "scheduling-basic",
    "topology-spread": "topology-spread",
    "anti-affinity": "anti-affinity",
    "node-affinity": "node-affinity",
    "unschedulable": "unschedulable",
    "mixed-churn": "mixed-churn",
    "preemption": "preemption",
}

#: `kubera bench failover --target X` → the test case of failover.yaml that kills X.
TARGETS = {"scheduler": "SchedulerFailover", "apiserver": "ApiserverFailover"}

#: Flag (its `Overrides` field) → the params it sets: the first one the workload defines.
PARAMS: dict[str, tuple[str, ...]] = {
    "nodes": ("initNodes", "nodes"),
    "init_pods": ("initPods",),
    "pods": ("measurePods", "pods"),
    "kills": ("kills",),
    "window": ("window",),
    "duration": ("duration",),
    "settle": ("settle",),
    "pressure_nodes": ("pressureNodes",),
    "faults": ("faults",),
    "cm_faults": ("cmFaults",),
    "interval": ("interval",),
    "fault_for": ("faultDuration",),
    "seed": ("seed",),
}
#: The flags of chaos.yaml's random fault mix: given without --workload, they pick it.
MIX_FLAGS = ("faults", "cm_faults", "interval", "fault_for", "seed", "kinds")
MIX_TEST_CASE = "ChaosMix"
#: The controller-manager's share of --kinds: its leader's kinds.
LEADER_KINDS = ("kill", "pause", "partition")

#: kube-scheduler's lease timings (`--k8s-defaults`).
K8S_LEASES = {"leaseDuration": "15s", "renewDeadline": "10s", "retryPeriod": "2s"}
PERFORMANCE_LABEL = "performance"


@dataclasses.dataclass(frozen=True, kw_only=True)
class Overrides:
    """The flags of one `kubera bench NAME` (None / False / empty: as the file says)."""

    workload: str | None = None
    nodes: int | None = None
    init_pods: int | None = None
    pods: int | None = None
    pods_per_node: int | None = None
    kills: int | None = None
    window: str | None = None
    duration: str | None = None
    settle: str | None = None
    pressure_nodes: int | None = None
    faults: int | None = None
    cm_faults: int | None = None
    interval: str | None = None
    fault_for: str | None = None
    seed: int | None = None
    kinds: tuple[str, ...] = ()
    params: dict[str, Any] = dataclasses.field(default_factory=dict)
    apiservers: int | None = None
    schedulers: tuple[int, ...] = ()
    controller_managers: int | None = None
    nodes_per_pool: int | None = None
    no_controllers: bool = False
    lease_duration: str | None = None
    renew_deadline: str | None = None
    retry_period: str | None = None
    k8s_defaults: bool = False
    partition: str | None = None
    check: bool = False
    repeat: int = 1


def scenario_path(
    name: str, workload: str | None = None, target: str | None = None
) -> tuple[Path, str | None]:
    """The file of scenario `name` (a name in SCENARIOS, or a path to a YAML file), and the
    workload to select in it: `scheduling-basic --workload topology-spread` is the file
    topology-spread.yaml with its default workload; `failover --target apiserver` the test
    case ApiserverFailover (`TARGETS`). ConfigError for an unknown name."""
    if target is not None:
        if name != "failover":
            raise ConfigError(f"--target: only for failover, not {name!r}")
        if workload is not None:
            raise ConfigError("--target and --workload: give one")
        workload = TARGETS[target]
    if workload in SCENARIO_OF_WORKLOAD and name == "scheduling-basic":
        name, workload = SCENARIO_OF_WORKLOAD[workload], None
    path = Path(name)
    if path.suffix not in (".yaml", ".yml"):
        path = SCENARIOS / f"{name}.yaml"
    if not path.is_file():
        raise ConfigError(f"no scenario {name!r} (there are: {', '.join(names())})")
    return path, workload


def mix_workload(name: str, workload: str | None, flags: dict[str, Any]) -> str | None:
    """`kubera bench chaos` with a flag of the random mix and no --workload: ChaosMix."""
    if name == "chaos" and workload is None and any(flags.get(f) for f in MIX_FLAGS):
        return MIX_TEST_CASE
    return workload


def names() -> list[str]:
    """Every scenario `kubera bench` can run by name."""
    return sorted(p.stem for p in SCENARIOS.glob("*.yaml"))


def describe(path: Path) -> str:
    """A scenario's leading comment, without its `NAME:` head (for --help)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    head: list[str] = []
    for line in lines:
        if not line.startswith("#"):
            break
        head.append(line.lstrip("#").strip())
    text = " ".join(head)
    name = f"{path.stem}:"
    return text[len(name) :].strip() if text.startswith(name) else text


def _pick(raw: list[Any], workload: str | None, where: str) -> tuple[dict, dict]:
    """(test case, workload) of the raw file that `workload` names, else the default."""
    pairs = [
        (tc, w)
        for tc in raw
        if isinstance(tc, dict)
        for w in tc.get("workloads") or []
        if isinstance(w, dict)
    ]
    if not pairs:
        raise ConfigError(f"{where}: no workloads")
    if workload is not None:
        for tc, w in pairs:
            if workload in (w.get("name"), f"{tc.get('name')}/{w.get('name')}"):
                return tc, w
        named = [(tc, w) for tc, w in pairs if tc.get("name") == workload]  # a test case
        if named:
            return _default(named)
        known = ", ".join(f"{tc.get('name')}/{w.get('name')}" for tc, w in pairs)
        raise ConfigError(f"{where}: no workload {workload!r} (there are: {known})")
    return _default(pairs)


def _default(pairs: list[tuple[dict, dict]]) -> tuple[dict, dict]:
    """The one labelled performance, else the first."""
    for tc, w in pairs:
        if PERFORMANCE_LABEL in (w.get("labels") or []):
            return tc, w
    return pairs[0]


def _param_key(params: dict[str, Any], flag: str, where: str) -> str:
    for key in PARAMS.get(flag, (flag,)):
        if key in params:
            return key
    raise ConfigError(
        f"{where}: --{flag.replace('_', '-')} sets none of this workload's params "
        f"({', '.join(sorted(params)) or 'it has none'})"
    )


def edit(raw: Any, o: Overrides, where: str = "bench") -> list[Any]:
    """The parsed file narrowed to one workload with the flags `o` written in (a copy)."""
    if not isinstance(raw, list):
        return raw  # the load reports what is wrong with it
    raw = copy.deepcopy(raw)
    tc, w = _pick(raw, o.workload, where)
    tc["workloads"] = [w]
    params: dict[str, Any] = w.setdefault("params", {}) or {}
    w["params"] = params
    before = dict(params)
    for flag in PARAMS:
        value = getattr(o, flag)
        if value is not None:
            params[_param_key(params, flag, where)] = value
    if o.kinds:
        params[_param_key(params, "kinds", where)] = list(o.kinds)
        if "cmKinds" in params:
            params["cmKinds"] = [k for k in o.kinds if k in LEADER_KINDS]
    if o.pods_per_node is not None:
        nodes = params[_param_key(params, "nodes", where)]
        params[_param_key(params, "pods", where)] = int(nodes) * o.pods_per_node
    for key, value in o.params.items():
        if key not in params:
            raise ConfigError(f"{where}: --set {key}: the workload has no param {key!r}")
        params[key] = value
    if params != before:
        w.pop("threshold", None)
    cluster: dict[str, Any] = dict(w.get("cluster") or {})
    if o.apiservers is not None:
        cluster["apiServers"] = o.apiservers
    if o.partition is not None:
        cluster["sharedStatePartition"] = o.partition
    if o.nodes_per_pool is not None:
        cluster["nodesPerPool"] = o.nodes_per_pool
    if o.no_controllers:
        cluster["controllerManagers"] = 0
    elif o.controller_managers is not None:
        cluster["controllerManagers"] = o.controller_managers
    if len(o.schedulers) == 1:
        cluster["schedulers"] = o.schedulers[0]
        sweep = {k: v for k, v in (w.get("sweep") or {}).items() if k != "schedulers"}
        if "sweep" in w:  # one count given: the file's sweep over the counts is replaced
            w["sweep"] = sweep
            if not sweep:
                del w["sweep"]
    elif o.schedulers:
        w["sweep"] = {**(w.get("sweep") or {}), "schedulers": list(o.schedulers)}
    leases = dict(K8S_LEASES) if o.k8s_defaults else {}
    for key, value in (
        ("leaseDuration", o.lease_duration),
        ("renewDeadline", o.renew_deadline),
        ("retryPeriod", o.retry_period),
    ):
        if value is not None:
            leases[key] = value
    if leases:
        cluster["leaderElection"] = {
            **((tc.get("cluster") or {}).get("leaderElection") or {}),
            **(cluster.get("leaderElection") or {}),
            **leases,
        }
    if o.schedulers and len(o.schedulers) > 1:
        cluster.pop("schedulers", None)
    if cluster:
        w["cluster"] = cluster
    if o.check and not any(
        isinstance(op, dict) and op.get("opcode") == "check"
        for op in tc.get("workloadTemplate") or []
    ):
        tc["workloadTemplate"] = [*tc.get("workloadTemplate", []), {"opcode": "check"}]
    if o.repeat > 1:
        tc["workloads"] = [
            {**copy.deepcopy(w), "name": f"{w.get('name')}/run={i + 1}"} for i in range(o.repeat)
        ]
    return [tc]


def parse_set(items: list[str]) -> dict[str, Any]:
    """`--set KEY=VALUE` flags → params (each VALUE read as YAML: 10 is a number)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--set wants KEY=VALUE, not {item!r}")
        out[key] = yaml.safe_load(value)
    return out
