"""The plots: one PNG per kind a run has data for, named after the run; sweeps get theirs."""

from __future__ import annotations

from pathlib import Path

from kubera.experiment.measure.model import RunResult
from kubera.experiment.output import plots, results
from tests.experiment.builders import make_experiment, make_run, scale_out_run

PNG = b"\x89PNG\r\n\x1a\n"


def assert_png(path: Path) -> None:
    data = path.read_bytes()
    assert data.startswith(PNG) and len(data) > 5_000, path


def test_every_plot_of_a_full_run(tmp_path: Path) -> None:
    out = plots.plot_run(make_run(), tmp_path)
    assert sorted(out) == sorted(plots.RUN_PLOTS)
    for kind, path in out.items():
        assert path.name == f"SchedulingBasic_500Nodes-{kind}.png"
        assert_png(path)


def test_a_run_without_data_draws_nothing(tmp_path: Path) -> None:
    assert plots.plot_run(RunResult(id="A/b", test_case="A", workload="b"), tmp_path) == {}
    assert list(tmp_path.iterdir()) == []


def test_a_run_without_leaders_or_cpu_skips_those(tmp_path: Path) -> None:
    run = make_run(leaders=[], faults=[], research={})
    run.series = {k: v for k, v in run.series.items() if not k.startswith(("cpu:", "rss_mb:"))}
    assert sorted(plots.plot_run(run, tmp_path)) == ["latency", "queues", "throughput"]


def test_the_fragmentation_plot_needs_pods_pending(tmp_path: Path) -> None:
    run = make_run()
    assert_png(plots.plot_fragmentation(run, tmp_path / "f.png") or tmp_path / "none")
    drained = make_run(research={**run.research, "pendingPods": 0})
    assert plots.plot_fragmentation(drained, tmp_path / "g.png") is None


def test_a_sweep_gets_its_plot(tmp_path: Path) -> None:
    exp = make_experiment(
        *(
            make_run(
                f"SchedulingBasic/500Nodes/schedulers={n}",
                sweep={"schedulers": n},
                series={},
                leaders=[],
                research={},
            )
            for n in (4, 1, 2)
        ),
        make_run("Other/w", series={}, leaders=[], research={}),
    )
    out = plots.plot_experiment(exp, tmp_path / "plots")
    assert_png(out["sweep:SchedulingBasic/500Nodes"]["sweep"])
    assert (tmp_path / "plots" / "sweep-SchedulingBasic-500Nodes.png").is_file()
    # each run only has its latency CDF; one sweep plot
    assert len(list((tmp_path / "plots").glob("*.png"))) == 4 + 1


def test_a_sweep_over_text_values_plots_categories(tmp_path: Path) -> None:
    runs = [
        make_run(f"T/w/mode={m}", sweep={"schedulerMode": m}) for m in ("leader", "shared-state")
    ]
    assert_png(plots.plot_sweep(runs, tmp_path / "s.png", [10.0, 12.0], [100.0, 90.0]))


def test_a_sweep_with_cpu_figures_gets_the_model_beside_the_measurement(tmp_path: Path) -> None:
    runs = [scale_out_run(k, s, 0.004, 0.003, 100.0) for k in (1, 2) for s in (1, 2)]
    out = plots.plot_experiment(make_experiment(*runs), tmp_path / "plots")
    assert_png(out["sweep:ScaleOut/w"]["sweep-model"])
    assert (tmp_path / "plots" / "sweep-ScaleOut-w-model.png").is_file()


def test_write_puts_the_plots_beside_the_results(tmp_path: Path) -> None:
    results.write(tmp_path, make_experiment())
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == sorted(f"SchedulingBasic_500Nodes-{k}.png" for k in plots.RUN_PLOTS)
