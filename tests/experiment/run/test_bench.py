"""`kubera bench NAME` (kubera/experiment/run/bench.py, kubera/cli/bench.py): the flags
become the experiment file's params and cluster settings, the command runs the file through
the experiment runner (a fake here) and prints the figures. No timed tests.

Replaces tests/bench/test_scheduling_cli.py, whose workloads (kubera/bench/workloads.py),
statistics (kubera/bench/report.py) and run loop (kubera/bench/scheduling.py) were deleted
as duplicates of the experiment files, DataItems and runner: each of its tests has its
counterpart here, under the same name where the rule is the same."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from kubera.cli import bench
from kubera.errors import CliError
from kubera.experiment.measure.model import ExperimentResult, MeasuredPhase, RunResult, Window
from kubera.experiment.run import bench as scenarios
from kubera.experiment.run import runner as runner_module
from kubera.experiment.run.runner import cluster_args
from kubera.experiment.spec import config
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.templates import read_template


def parse(*argv: str, scenario: str = "scheduling-basic") -> argparse.Namespace:
    p = argparse.ArgumentParser()
    bench.register(p.add_subparsers(dest="cmd"))
    return p.parse_args(["bench", scenario, *argv])


def load(args: argparse.Namespace) -> tuple[Path, config.Experiment]:
    path, workload = scenarios.scenario_path(
        args.scenario, args.workload, getattr(args, "target", None)
    )
    o_ = bench.overrides(args, workload)
    return path, config.load(str(path), edit=lambda raw: scenarios.edit(raw, o_, str(path)))


def shape(experiment: config.Experiment) -> tuple[int, ...]:
    (tc, w), *_ = experiment.runs()
    ops = config.plan(tc, w)
    nodes = sum(op.count for op in ops if isinstance(op, o.CreateNodes))
    pods = [op.count for op in ops if isinstance(op, o.CreatePods)]
    return (nodes, *pods)


@pytest.mark.parametrize(
    ("argv", "file", "expected"),
    [
        ((), "scheduling-basic", (5000, 1000, 10000)),
        (("--init-pods", "5000", "--pods", "50000"), "scheduling-basic", (5000, 5000, 50000)),
        (("--workload", "topology-spread"), "topology-spread", (5000, 5000, 5000)),
        (("--workload", "anti-affinity"), "anti-affinity", (5000, 1000, 2000)),
        (("--workload", "node-affinity"), "node-affinity", (5000, 5000, 10000)),
        (("--workload", "unschedulable"), "unschedulable", (5000, 100, 10000)),
        (("--workload", "mixed-churn"), "mixed-churn", (5000, 10000)),
        (("--workload", "preemption"), "preemption", (5000, 20000, 5000)),
        (
            ("--workload", "preemption", "--nodes", "10", "--init-pods", "40", "--pods", "10"),
            "preemption",
            (10, 40, 10),
        ),
        (("--nodes", "500"), "scheduling-basic", (500, 1000, 10000)),
        (("--workload", "500Nodes"), "scheduling-basic", (500, 500, 1000)),
    ],
)
def test_default_shapes_are_upstreams(
    argv: tuple[str, ...], file: str, expected: tuple[int, ...]
) -> None:
    path, experiment = load(parse(*argv))
    assert path.stem == file
    assert len(experiment.runs()) == 1
    assert shape(experiment) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ("--nodes", "0"),
        ("--pods", "0"),
        ("--repeat", "0"),
        ("--apiservers", "0"),
        ("--init-pods", "-1"),
        ("--model-cores", "0"),
        ("--model-f", "1.5"),
    ],
)
def test_bad_arguments_are_refused(argv: tuple[str, ...]) -> None:
    with pytest.raises(CliError):
        bench.overrides(parse(*argv), None)


def test_unknown_workload_is_an_argparse_error(capsys: pytest.CaptureFixture[str]) -> None:
    args = parse("--workload", "nope")
    assert args.func(args) == 2
    assert "no workload 'nope'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        parse("--schedulers", "0")
    with pytest.raises(config.ConfigError, match="no scenario"):
        scenarios.scenario_path("nope")


def test_a_flag_the_workload_has_no_param_for_is_an_error() -> None:
    with pytest.raises(config.ConfigError, match="--init-pods sets none"):
        load(parse("--workload", "mixed-churn", "--init-pods", "5"))
    with pytest.raises(config.ConfigError, match="no param 'nope'"):
        load(parse("--set", "nope=1"))
    _, e = load(parse("--set", "measurePods=7"))
    assert shape(e) == (5000, 1000, 7)


def test_one_apiserver_needs_no_keyword_and_more_need_the_option() -> None:
    _, one = load(parse())
    _, two = load(parse("--apiservers", "2", "--no-controllers"))
    (tc1, w1), (tc2, w2) = one.runs()[0], two.runs()[0]
    args1 = cluster_args(w1.cluster, config.plan(tc1, w1), runner_module.RunOptions())
    args2 = cluster_args(w2.cluster, config.plan(tc2, w2), runner_module.RunOptions())
    assert "--apiservers" not in args1 and "--no-controllers" not in args1
    assert args2[args2.index("--apiservers") + 1] == "2" and "--no-controllers" in args2


def test_threshold_applies_to_its_exact_shape_only() -> None:
    _, same = load(parse())
    assert same.runs()[0][1].threshold == 680
    _, small = load(parse("--nodes", "500"))
    assert small.runs()[0][1].threshold is None
    _, pre = load(parse("--workload", "preemption"))
    assert pre.runs()[0][1].threshold is None  # upstream sets none


def test_nodes_flags_set_the_settle_param_and_the_pool_size() -> None:
    _, e = load(
        parse(
            "--settle",
            "3s",
            "--nodes-per-pool",
            "7",
            "--nodes",
            "20",
            "--pressure-nodes",
            "4",
            scenario="nodes",
        )
    )
    (tc, w) = e.runs()[0]
    assert w.params["settle"] == "3s"
    assert w.params["pressureNodes"] == 4
    pressure = [op for op in config.plan(tc, w) if isinstance(op, o.MemoryPressure)]
    assert [op.nodes for op in pressure] == [4]
    assert w.cluster.nodes_per_pool == 7
    planned = config.plan(tc, w)
    sleeps = [op for op in planned if isinstance(op, o.Sleep)]
    assert [op.duration for op in sleeps] == [3.0, 60.0]  # settle, then the window
    args = cluster_args(w.cluster, planned, runner_module.RunOptions())
    assert args[args.index("--nodes-per-pool") + 1] == "7"
    _, e = load(parse(scenario="nodes"))
    assert e.runs()[0][1].cluster.nodes_per_pool == 2500  # the old bench's pools
    _, e = load(parse(scenario="scheduling-basic"))
    (tc, w) = e.runs()[0]
    assert "--nodes-per-pool" not in cluster_args(
        w.cluster, config.plan(tc, w), runner_module.RunOptions()
    )


def test_failover_target_names_the_test_case_that_kills_it() -> None:
    _, e = load(parse("--target", "apiserver", "--kills", "2", scenario="failover"))
    [(tc, w)] = e.runs()
    assert (tc.name, w.name) == ("ApiserverFailover", "20Nodes_10Kills")
    chaos = [op for op in config.plan(tc, w) if isinstance(op, o.Chaos)]
    assert [(op.action, op.times) for op in chaos] == [("killApiserver", 2)]
    _, e = load(parse("--target", "scheduler", scenario="failover"))
    assert e.runs()[0][0].name == "SchedulerFailover"
    _, e = load(parse(scenario="failover"))
    assert e.runs()[0][0].name == "SchedulerFailover"
    with pytest.raises(config.ConfigError, match="give one"):
        scenarios.scenario_path("failover", "20Nodes_10Kills", "apiserver")
    with pytest.raises(config.ConfigError, match="only for failover"):
        scenarios.scenario_path("chaos", None, "apiserver")


def test_chaos_mix_flags_select_the_random_mix_and_set_its_params() -> None:
    _, e = load(parse(scenario="chaos"))
    assert e.runs()[0][0].name == "Chaos"  # the fixed schedule by default
    args = parse(
        "--faults", "6", "--kinds", "kill,kill,restart-etcd", "--cm-faults", "2",
        "--interval", "2s", "--for", "1s", "--seed", "7", scenario="chaos",
    )  # fmt: skip
    path, workload = scenarios.scenario_path(args.scenario, args.workload)
    workload = scenarios.mix_workload(args.scenario, workload, vars(args))
    assert workload == "ChaosMix"
    o_ = bench.overrides(args, workload)
    e = config.load(str(path), edit=lambda raw: scenarios.edit(raw, o_, str(path)))
    [(tc, w)] = e.runs()
    assert tc.name == "ChaosMix"
    ops = [op for op in config.plan(tc, w) if isinstance(op, o.Chaos)]
    assert [(op.component, op.kinds, op.times, op.every, op.duration, op.seed) for op in ops] == [
        ("scheduler", ("kill", "kill", "restart-etcd"), 6, 2.0, 1.0, 7),
        ("controller-manager", ("kill", "kill"), 2, 2.0, 1.0, 7),
    ]
    draws = ops[0].draws()
    assert len(draws) == 6 and set(draws) <= {"killLeader", "restartEtcd"}
    assert draws == ops[0].draws()  # seeded: the same draw again
    assert scenarios.mix_workload("chaos", "Chaos", {"faults": 3}) == "Chaos"
    assert scenarios.mix_workload("failover", None, {"faults": 3}) is None


def test_a_random_chaos_op_wants_known_kinds_and_a_duration_for_pauses(tmp_path: Path) -> None:
    from tests.experiment.configfiles import write

    def load_op(op: str) -> config.Experiment:
        text = f"""
- name: T
  cluster: {{hollowNodes: true}}
  workloadTemplate:
  - opcode: createNodes
    count: 2
  - {op}
  - opcode: createPods
    count: 2
    collectMetrics: true
  workloads:
  - name: w
"""
        return config.load(str(write(tmp_path, text)))

    load_op("{opcode: chaos, action: random, kinds: [kill, restart-etcd], every: 1s, times: 2}")
    for op, match in (
        ("{opcode: chaos, action: random, every: 1s, times: 2}", "kinds"),
        ("{opcode: chaos, action: random, kinds: [boom], every: 1s, times: 2}", "unknown kind"),
        ("{opcode: chaos, action: random, kinds: [pause], every: 1s, times: 2}", "duration"),
        ("{opcode: chaos, action: killLeader, kinds: [kill]}", "only for action random"),
    ):
        with pytest.raises(config.ConfigError, match=match):
            load_op(op)


def test_cluster_flags_leases_sweeps_check_and_repeats() -> None:
    _, e = load(parse("--k8s-defaults", "--retry-period", "1s", "--check", scenario="failover"))
    (tc, w) = e.runs()[0]
    le = w.cluster.leader_election
    assert le is not None
    assert (le.lease_duration, le.renew_deadline, le.retry_period) == (15.0, 10.0, 1.0)
    assert sum(isinstance(op, o.Check) for op in tc.ops) == 1  # the file's own: none added
    _, e = load(parse("--check", "--nodes", "5", "--init-pods", "5", "--pods", "5"))
    assert isinstance(e.runs()[0][0].ops[-1], o.Check)
    _, e = load(
        parse("--schedulers", "1,2", "--nodes", "4", "--pods", "24", scenario="shared-state")
    )
    assert [w.name for _, w in e.runs()] == [
        "500Nodes_5000Pods/schedulers=1",
        "500Nodes_5000Pods/schedulers=2",
    ]
    assert [w.cluster.schedulers for _, w in e.runs()] == [1, 2]
    _, e = load(parse("--schedulers", "2", scenario="shared-state"))  # the sweep replaced
    assert [(w.name, w.cluster.schedulers) for _, w in e.runs()] == [("500Nodes_5000Pods", 2)]
    _, e = load(parse("--partition", "none", scenario="shared-state"))
    (tc, w) = e.runs()[0]
    assert w.cluster.shared_state_partition == "none"
    args = cluster_args(w.cluster, config.plan(tc, w), runner_module.RunOptions())
    assert args[args.index("--shared-state-partition") + 1] == "none"
    _, e = load(parse(scenario="shared-state"))
    (tc, w) = e.runs()[0]
    assert "--shared-state-partition" not in cluster_args(
        w.cluster, config.plan(tc, w), runner_module.RunOptions()
    )
    _, e = load(parse("--repeat", "2", "--pods-per-node", "3", "--nodes", "10", scenario="nodes"))
    assert [w.name for _, w in e.runs()] == ["1000Nodes/run=1", "1000Nodes/run=2"]
    assert e.runs()[0][1].params["pods"] == 30


def run_result(rid: str, rate: float, *, error: str | None = None) -> RunResult:
    pods = 1000
    return RunResult(
        id=rid,
        test_case="SchedulingBasic",
        workload=rid.split("/")[1],
        params={"initNodes": 5000, "initPods": 1000, "measurePods": pods},
        threshold=680.0 if rid.endswith("Pods") else None,
        cluster={"apiservers": 1},
        collected=[Window(start=0.0, end=pods / rate, name="namespace-2")],
        series={"t": [0.0, 1.0, 2.0, 3.0, 4.0], "bound": [rate, rate, rate, rate, rate]},
        etcd_put_rate=4000.0,
        measured=[
            MeasuredPhase(
                window="namespace-2",
                pods=pods,
                seconds=pods / rate,
                cpu={"apiserver": 2.0, "scheduler-0": 3.0, "etcd": 1.0, "runner": 0.5},
            )
        ],
        error=error,
    )


def test_command_runs_fresh_clusters_and_writes_the_json(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[list[str]] = []

    class FakeRunner:
        def __init__(self, experiment: config.Experiment, opts: Any, progress: Any) -> None:
            self.experiment = experiment
            self.result = ExperimentResult(config=experiment.path, started="", runs=[])

        def run(self, workload: str | None) -> ExperimentResult:
            names = [f"{tc.name}/{w.name}" for tc, w in self.experiment.runs(workload)]
            seen.append(names)
            rates = iter([200.0, 300.0, 250.0])
            self.result.runs = [run_result(n, next(rates)) for n in names]
            return self.result

    monkeypatch.setattr(runner_module, "Runner", FakeRunner)
    out = tmp_path / "out"
    args = parse("--repeat", "3", "--output", str(out))
    assert args.func(args) == 0
    assert seen == [[f"SchedulingBasic/5000Nodes_10000Pods/run={i}" for i in (1, 2, 3)]]
    assert (out / "results.json").exists() and (out / "report.html").exists()
    text = capsys.readouterr().out
    assert "SchedulingBasic/5000Nodes_10000Pods/run=3: 250 pods/s" in text
    assert "median of 3 runs: 200, 300, 250" in text
    assert "pods bound/s: avg 250" in text


def test_command_takes_the_cluster_down_when_a_run_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class FailingRunner:
        def __init__(self, experiment: config.Experiment, opts: Any, progress: Any) -> None:
            self.result = ExperimentResult(config=experiment.path, started="", runs=[])

        def run(self, workload: str | None) -> ExperimentResult:
            # the runner takes each cluster down and records the error (test_runner.py)
            self.result.runs = [run_result("SchedulingBasic/x", 1.0, error="only 3 of 10 bound")]
            return self.result

    monkeypatch.setattr(runner_module, "Runner", FailingRunner)
    args = parse("--no-controllers", "--output", str(tmp_path / "out"))
    assert args.func(args) == 1
    assert "only 3 of 10 bound" in capsys.readouterr().err


def test_churn_modes() -> None:
    _, e = load(parse("--workload", "mixed-churn"))
    churn = next(op for op in e.runs()[0][0].ops if isinstance(op, o.Churn))
    assert (churn.mode, churn.number, churn.interval_milliseconds) == ("recreate", 1, 1000)
    assert [Path(t.path).name for t in churn.templates] == ["node-churn.yaml", "pod-large-cpu.yaml"]
    _, e = load(parse("--workload", "unschedulable"))
    churn = next(op for op in e.runs()[0][0].ops if isinstance(op, o.Churn))
    assert (churn.mode, churn.interval_milliseconds) == ("create", 200)


def test_templates_are_upstreams() -> None:
    def render(name: str, index: int = 0) -> Any:
        path = str(scenarios.SCENARIOS / "templates" / name)
        return read_template(path, name).render(index, index + 1)

    term = render("pod-anti-affinity.yaml")["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    big = render("pod-large-cpu.yaml")["spec"]
    assert big["containers"][0]["resources"]["requests"]["cpu"] == 9
    assert big["priorityClassName"] == "bench-priority-10"
    assert render("node-zones.yaml", 4)["metadata"]["labels"] == {
        "topology.kubernetes.io/zone": "zone-1"
    }
    assert render("node-churn.yaml")["status"]["capacity"]["pods"] == "0"
    assert render("pod-high-priority.yaml")["spec"]["priorityClassName"] == "bench-high-priority"
