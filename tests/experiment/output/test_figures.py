"""`kubera bench`'s printout (kubera/experiment/output/figures.py): every figure the bench
always printed, from a run's DataItems and measured phase (made-up figures, no cluster)."""

from __future__ import annotations

from kubera.experiment.output import figures
from tests.experiment.run.test_bench import run_result


def test_assemble_reports_the_median_run_and_keeps_every_run() -> None:
    runs = [run_result(f"SchedulingBasic/5000Nodes_10000Pods/run={i}", r) for i, r in
            enumerate((300.0, 200.0, 250.0), 1)]  # fmt: skip
    assert figures.median_run(runs) is runs[2]
    assert figures.median_run(runs[:2]) is runs[0]  # the upper one of an even count
    text = figures.render(runs[2], runs=runs)
    assert "median of 3 runs: 300, 200, 250" in text


def test_each_run_line_has_its_share_and_etcd_ratio() -> None:
    line = figures.run_line(run_result("SchedulingBasic/5000Nodes_10000Pods", 340.0))
    assert line == "SchedulingBasic/5000Nodes_10000Pods: 340 pods/s, 0.50× of 680, etcd ratio 0.085"
    failed = run_result("SchedulingBasic/x", 1.0, error="boom")
    assert figures.run_line(failed) == "SchedulingBasic/x: error: boom"


def test_render_names_every_figure() -> None:
    text = figures.render(run_result("SchedulingBasic/5000Nodes_10000Pods", 250.0))
    for needle in (
        "pods bound/s: avg 250 (1000 pods in 4.0s, the whole measured phase)",
        "upstream's collector (SchedulingThroughput): Average 250, p50 250",
        "raw etcd put rate (same run, 64 in flight): 4000/s → ratio 0.062",
        "upstream threshold: 680 pods/s → we reach 0.37×",
        "CPU per pod during the measured phase",
        "capacity model (a model, not a measurement",
    ):
        assert needle in text, needle
    small = figures.render(run_result("SchedulingBasic/500Nodes", 250.0))
    assert "none for this shape" in small
