"""The capacity model's arithmetic (kubera/experiment/measure/capacity.py), by tables: bounds, placement,
the bottleneck it names, and the apiserver fixed share."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from kubera.cli import bench
from kubera.errors import CliError
from kubera.experiment.measure import capacity
from kubera.experiment.measure.capacity import predict
from kubera.experiment.measure.model import ExperimentResult, MeasuredPhase, RunResult
from tests.experiment.builders import scale_out_run


@pytest.mark.parametrize(
    ("demands", "machines", "cores", "pods_per_s", "bottleneck"),
    [
        # One machine: 2 cores shared by everything (total 10 ms/pod → 200/s) beats the
        # scheduler's own core (1 / 4 ms = 250/s).
        (
            {"scheduler": 0.004, "apiserver": 0.003, "etcd": 0.002, "bench-client": 0.001},
            1,
            2.0,
            200.0,
            "machine 0",
        ),
        # Two machines: the scheduler's serial core is the bound (250/s); machine loads are
        # 4 + 1.5 + … ms ≤ 8 ms at most.
        (
            {"scheduler": 0.004, "apiserver": 0.003, "etcd": 0.002, "bench-client": 0.001},
            2,
            2.0,
            250.0,
            "scheduler",
        ),
        # The apiserver alone, one core per replica: K = N replicas of 8/N ms each.
        ({"apiserver": 0.008}, 1, 2.0, 125.0, "apiserver-0"),
        ({"apiserver": 0.008}, 2, 2.0, 250.0, "apiserver-0"),
        ({"apiserver": 0.008}, 4, 2.0, 500.0, "apiserver-0"),
        # etcd is multi-core: its bound is C / D (2 / 4 ms = 500/s), equal to its machine's,
        # and the process is named before its machine.
        ({"etcd": 0.004}, 1, 2.0, 500.0, "etcd"),
        ({"etcd": 0.004}, 8, 2.0, 500.0, "etcd"),
        # Node pools spread over every machine.
        ({"node-pool": 0.008}, 1, 2.0, 125.0, "node-pools-0"),
        ({"node-pool": 0.008}, 4, 2.0, 500.0, "node-pools-0"),
        # A machine of 1 core: the per-process bound and the machine bound coincide.
        ({"scheduler": 0.005}, 1, 1.0, 200.0, "scheduler"),
        # A half core: a process cannot use more than its machine has.
        ({"scheduler": 0.005}, 1, 0.5, 100.0, "scheduler"),
    ],
)
def test_predicted_rate_and_what_saturates_first(
    demands: dict[str, float], machines: int, cores: float, pods_per_s: float, bottleneck: str
) -> None:
    p = predict(demands, machines, cores)
    assert p.pods_per_s == pytest.approx(pods_per_s)
    assert p.bottleneck == bottleneck


def test_singletons_go_largest_first_to_the_least_loaded_machine() -> None:
    p = predict(
        {"scheduler": 0.004, "etcd": 0.003, "controller-manager": 0.002, "ray": 0.001}, 2, 2
    )
    where = {x.label: x.machine for x in p.placement}
    assert where == {"scheduler": 0, "etcd": 1, "controller-manager": 1, "ray": 0}
    assert p.loads == pytest.approx([0.005, 0.005])


def test_apiserver_replicas_are_spread_round_robin_and_split_the_work() -> None:
    p = predict({"apiserver": 0.006}, 2, 2.0, apiservers=3)
    reps = [x for x in p.placement if x.kind == "apiserver"]
    assert [x.machine for x in reps] == [0, 1, 0]
    assert [x.demand for x in reps] == pytest.approx([0.002] * 3)
    assert p.apiservers == 3


@pytest.mark.parametrize(
    ("total_k1", "total_kn", "k", "f"),
    [
        (0.004, 0.004, 2, 0.0),  # the work splits: the total does not grow
        (0.004, 0.006, 2, 0.5),
        (0.004, 0.008, 2, 1.0),  # every replica repeats all of it
        (0.004, 0.010, 2, 1.0),  # clamped
        (0.004, 0.003, 2, 0.0),  # clamped (noise below the K = 1 figure)
        (0.004, 0.008, 3, 0.5),
        (0.0, 0.004, 2, 0.0),
        (0.004, 0.006, 1, 0.0),
    ],
)
def test_fixed_share_from_two_runs(total_k1: float, total_kn: float, k: int, f: float) -> None:
    assert capacity.fixed_share(total_k1, total_kn, k) == pytest.approx(f)


def test_fixed_share_makes_each_replica_repeat_part_of_the_work() -> None:
    # f = 0.5: at K = 2 the total is 1.5 × the K = 1 figure, 0.75 × it per replica.
    p = predict({"apiserver": 0.004}, 2, 2.0, f=0.5)
    assert [x.demand for x in p.placement] == pytest.approx([0.003, 0.003])
    # A run measured with 2 replicas (total 6 ms at f = 0.5) is the same cluster.
    q = predict({"apiserver": 0.006}, 2, 2.0, f=0.5, measured_apiservers=2)
    assert [x.demand for x in q.placement] == pytest.approx([0.003, 0.003])
    assert capacity.apiserver_total(0.004, 4, 0.5) == pytest.approx(0.010)


def test_model_table_covers_each_machine_count_and_renders() -> None:
    preds = capacity.model_table({"scheduler": 0.004, "apiserver": 0.004}, machines=(1, 2, 4, 8))
    assert [p.machines for p in preds] == [1, 2, 4, 8]
    assert [p.apiservers for p in preds] == [1, 2, 4, 8]
    assert [round(p.pods_per_s) for p in preds] == [250, 250, 250, 250]
    assert preds[1].bottleneck == "scheduler"
    text = capacity.render([p.as_dict() for p in preds], measured=200.0)
    assert "a model, not a measurement" in text
    assert "200 measured" in text


def test_nothing_measured_and_bad_input() -> None:
    assert predict({}, 2, 2.0).bottleneck == "nothing measured"
    with pytest.raises(ValueError):
        predict({"scheduler": 0.001}, 0, 2.0)
    with pytest.raises(ValueError):
        predict({"scheduler": 0.001}, 1, 2.0, apiservers=0)


def report(k: int, apiserver: float, scheduler: float = 0.003, rate: float = 200.0) -> RunResult:
    """A run with K apiservers whose measured phase bound 100 pods at `rate` pods/s, its
    apiservers and its scheduler spending these CPU seconds per pod."""
    return RunResult(
        id=f"Basic/k{k}",
        test_case="Basic",
        workload=f"k{k}",
        cluster={"apiservers": k},
        measured=[
            MeasuredPhase(window="init", pods=0, seconds=1.0, cpu={"apiserver": 9.0}),
            MeasuredPhase(
                window="namespace-2",
                pods=100,
                seconds=100 / rate,
                cpu={"apiserver": apiserver * 100, "scheduler-0": scheduler * 100},
            ),
        ],
    )


def test_from_reports_estimates_f_from_a_k1_and_a_k2_run() -> None:
    model = capacity.from_runs(
        [report(2, 0.006), report(1, 0.004)], machines=(1, 2), cores=2.0, f=None
    )
    assert model["apiserver_fixed_share"] == pytest.approx(0.5)
    assert model["measured_apiservers"] == 1
    assert model["demands_cpu_s_per_pod"] == {"apiserver": 0.004, "scheduler": 0.003}
    assert [p["machines"] for p in model["predictions"]] == [1, 2]
    # Given f wins; one run alone gives f = 0.
    given = capacity.from_runs([report(1, 0.004), report(2, 0.006)], machines=(1,), cores=2, f=0.1)
    assert given["apiserver_fixed_share"] == 0.1
    alone = capacity.from_runs([report(2, 0.006)], machines=(1,), cores=2, f=None)
    assert alone["apiserver_fixed_share"] == 0.0 and alone["measured_apiservers"] == 2


def write(directory: Path, *runs: RunResult) -> Path:
    directory.mkdir()
    result = ExperimentResult(config="x.yaml", started="", runs=list(runs))
    (directory / "results.json").write_text(json.dumps(result.to_json()))
    return directory


def test_bench_capacity_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = write(tmp_path / "k1", report(1, 0.004))
    b = write(tmp_path / "k2", report(2, 0.006)) / "results.json"  # a dir or its results.json
    out = tmp_path / "model.json"
    p = argparse.ArgumentParser()
    bench.register(p.add_subparsers(dest="cmd"))
    args = p.parse_args(
        ["bench", "capacity", str(a), str(b), "--machines", "1,3", "--output", str(out)]
    )
    assert args.func(args) == 0
    assert "f = 0.50" in capsys.readouterr().out
    assert [x["machines"] for x in json.loads(out.read_text())["predictions"]] == [1, 3]
    for bad in (["--machines", "0"], ["--cores", "0"], ["--f", "2"]):
        args = p.parse_args(["bench", "capacity", str(a), *bad])
        with pytest.raises(CliError):
            args.func(args)
    empty = write(tmp_path / "empty")
    args = p.parse_args(["bench", "capacity", str(empty)])
    with pytest.raises(CliError, match="no run has a measured phase"):
        args.func(args)
    args = p.parse_args(["bench", "capacity", str(tmp_path / "missing.json")])
    with pytest.raises(CliError):
        args.func(args)


def test_a_run_reports_its_model_from_its_measured_phase() -> None:
    run = report(1, 0.004, rate=250.0)
    assert capacity.run_demands(run) == pytest.approx({"apiserver": 0.004, "scheduler": 0.003})
    model = capacity.run_model(run, machines=(1, 2))
    assert model is not None
    assert model["measured_pods_per_s"] == pytest.approx(250.0)
    assert [p["machines"] for p in model["predictions"]] == [1, 2]
    assert capacity.run_model(RunResult(id="x", test_case="x", workload="x")) is None


def test_shared_state_schedulers_spread_and_split_the_work() -> None:
    p = predict({"scheduler": 0.006}, 2, 2.0, schedulers=3)
    reps = [x for x in p.placement if x.kind == "scheduler"]
    assert [x.machine for x in reps] == [0, 1, 0]
    assert [x.demand for x in reps] == pytest.approx([0.002] * 3)
    assert p.schedulers == 3 and p.as_dict()["schedulers"] == 3
    # g = 0.5: at S = 2 each replica repeats half of a pod's work
    q = predict({"scheduler": 0.004}, 1, 2.0, schedulers=2, g=0.5)
    assert [x.demand for x in q.placement] == pytest.approx([0.003, 0.003])
    # a run measured with 2 replicas is brought back to S = 1 first
    r = predict({"scheduler": 0.006}, 1, 2.0, schedulers=2, measured_schedulers=2, g=0.5)
    assert [x.demand for x in r.placement] == pytest.approx([0.003, 0.003])
    # one replica (or a leader) stays a singleton, placed as before
    assert [x.label for x in predict({"scheduler": 0.004}, 2, 2.0).placement] == ["scheduler"]
    with pytest.raises(ValueError):
        predict({"scheduler": 0.001}, 1, 2.0, schedulers=0)


def test_a_sweep_puts_the_models_prediction_beside_every_measured_scale_out_run() -> None:
    runs = [
        scale_out_run(2, 2, 0.007, 0.007, 150.0),
        scale_out_run(1, 1, 0.004, 0.004, 200.0),
        scale_out_run(2, 1, 0.006, 0.004, 180.0),  # f = 0.5
        scale_out_run(1, 2, 0.004, 0.006, 190.0),  # g = 0.5
    ]
    model = capacity.sweep_model(runs, machines=(1, 2))
    assert model is not None
    assert model["base"] == "ScaleOut/w/apiServers=1,schedulers=1"
    assert model["apiserver_fixed_share"] == pytest.approx(0.5)
    assert model["scheduler_fixed_share"] == pytest.approx(0.5)
    assert model["demands_cpu_s_per_pod"] == pytest.approx({"apiserver": 0.004, "scheduler": 0.004})
    assert "a model, not a measurement" in model["statement"]
    by_run = {p["run"]: p for p in model["points"]}
    assert len(by_run) == 4
    for run in runs:
        got = by_run[run.id]
        k, s = run.cluster["apiservers"], run.cluster["schedulers"]
        assert (got["apiservers"], got["schedulers"]) == (k, s)
        assert got["measured_pods_per_s"] == pytest.approx(run.measured[0].pods_per_s)
        expected = [
            predict(
                {"apiserver": 0.004, "scheduler": 0.004},
                n,
                2.0,
                apiservers=k,
                f=0.5,
                schedulers=s,
                g=0.5,
            )
            for n in (1, 2)
        ]
        assert [p["pods_per_s"] for p in got["predictions"]] == pytest.approx(
            [e.pods_per_s for e in expected]
        )
        assert [p["machines"] for p in got["predictions"]] == [1, 2]
    # one machine: 2 cores for everything; at K = S = 2 each pod costs 6 + 6 ms in all
    assert by_run[runs[0].id]["predictions"][0]["pods_per_s"] == pytest.approx(2 / 0.012)


def test_a_sweep_without_cpu_figures_has_no_model() -> None:
    run = scale_out_run(1, 1, 0.004, 0.004, 200.0)
    run.measured = []
    assert capacity.sweep_model([run]) is None
    # a leader-mode run counts one binding scheduler whatever its replicas
    leader = RunResult(id="x", test_case="T", workload="w", cluster={"schedulers": 3})
    assert capacity.shared_schedulers_of(leader) == 1
