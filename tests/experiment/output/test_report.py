"""report.html: self-contained (inline CSS and PNGs, nothing fetched), every run and table in
it, and every run-supplied string escaped."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

from kubera.experiment.measure.model import CheckVerdict, Fault, MeasuredPhase, RunResult
from kubera.experiment.output import report, results
from tests.experiment.builders import make_experiment, make_run

HOST = {"cores": "2", "memory": "4.0 GiB", "kubera": "0.1.0"}


class Tags(HTMLParser):
    """Every start tag with its attributes, to check what the page would fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(page: str) -> Tags:
    p = Tags()
    p.feed(page)
    return p


def test_the_report_holds_every_run_and_table(tmp_path: Path) -> None:
    exp = make_experiment(
        make_run(),
        make_run("SchedulingBasic/500Nodes/schedulers=2", sweep={"schedulers": 2}),
        make_run("SchedulingBasic/500Nodes/schedulers=4", sweep={"schedulers": 4}),
    )
    page = report.render(exp, host=HOST)
    for run in exp.runs:
        assert f"Run {run.id}" in page
    for heading in ("Summary", "Sweep: SchedulingBasic/500Nodes", "Faults", "Leader terms"):
        assert heading in page
    for heading in ("Phases", "Scheduler replicas", "DataItems"):
        assert heading in page
    assert "scheduler_scheduling_attempt_duration_seconds" in page
    assert "SchedulingThroughput" in page
    assert "4.0 GiB" in page
    assert page.count('class="pass">pass (vs 5)</td>') == 3


def test_plots_are_inlined_and_nothing_is_external(tmp_path: Path) -> None:
    path = results.write(tmp_path, make_experiment())
    page = path.read_text()
    tags = parse(page).tags
    images = [a for t, a in tags if t == "img"]
    assert len(images) == 8  # every run plot, fragmentation included
    assert all((a.get("src") or "").startswith("data:image/png;base64,") for a in images)
    assert not [t for t, a in tags if t in ("script", "link", "iframe")]
    assert not re.search(r"(src|href)=\"(https?:|//)", page)
    assert not re.search(r"url\(", page)


def test_threshold_failure_and_checker_violations_show(tmp_path: Path) -> None:
    run = make_run(
        threshold=50.0,
        check=CheckVerdict(ok=False, violations=("pod a bound twice",), summary="1 violation"),
        error="cluster did not start",
    )
    page = report.render(make_experiment(run), host=HOST)
    assert 'class="fail">FAIL (vs 50)</td>' in page
    assert "expected SchedulingThroughput Average to be higher" in page
    assert "<code>pod a bound twice</code>" in page
    assert "cluster did not start" in page


def test_a_hostile_run_id_is_escaped() -> None:
    evil = '<script>alert("x")</script>/<img src=x onerror=alert(1)>'
    run = make_run(
        evil,
        faults=[Fault(t=1.0, kind="kill", target="<b>leader</b>")],
        params={"<i>": "&amp;"},
        check=CheckVerdict(ok=False, violations=("<svg onload=1>",), summary="<u>"),
    )
    exp = make_experiment(run)
    exp.config = "<iframe src=//evil>"
    page = report.render(exp, host={"host": "<marquee>"})
    tags = {t for t, _ in parse(page).tags}
    assert not tags & {"script", "iframe", "svg", "marquee", "b", "i", "u"}
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert "&lt;b&gt;leader&lt;/b&gt;" in page
    assert "&amp;amp;" in page
    assert all(not k.startswith("on") for _, attrs in parse(page).tags for k in attrs)


def test_machine_reports_cores_memory_and_version() -> None:
    m = report.machine()
    assert int(m["cores"]) >= 1
    assert m["memory"].endswith("GiB")
    assert m["kubera"]


def test_a_run_that_failed_before_measuring_still_reports(tmp_path: Path) -> None:
    run = RunResult(id="Broken/w", test_case="Broken", workload="w", error="etcd did not start")
    path = results.write(tmp_path, make_experiment(run, make_run()))
    page = path.read_text()
    assert "etcd did not start" in page and "Run Broken/w" in page
    assert results.load(tmp_path).runs[0].error == "etcd did not start"
    assert not list((tmp_path / "plots").glob("Broken*"))


def test_attempts_are_labelled_as_buckets_and_warnings_show() -> None:
    run = make_run(attempts={1: 90, 4: 8, 17: 2}, warnings=["churn[2]: 1 round failed"])
    page = report.render(make_experiment(run), host=HOST)
    assert "attempts (bucket ≤)" in page
    assert report.attempts_bucket(4) == "4" and report.attempts_bucket(17) == "> 16"
    assert "&gt; 16" in page
    assert "Warnings" in page and "churn[2]: 1 round failed" in page


def test_the_research_measures_show_per_run() -> None:
    page = report.render(make_experiment(make_run()), host=HOST)
    assert "Research measures (as the run ended)" in page
    assert "2 pods pending on 500 nodes; queue drained never" in page
    assert "extended: nvidia.com/gpu" in page
    drained = make_run(research={"nodes": 3, "pendingPods": 0, "queueDrainSeconds": 1.5})
    assert "queue drained 1.50 s after the last pod was created" in report.render(
        make_experiment(drained), host=HOST
    )


def test_a_scale_out_sweep_shows_the_model_beside_each_measured_point() -> None:
    phase = [MeasuredPhase(window="namespace-1", pods=100, seconds=1.0, cpu={"apiserver": 0.4})]
    runs = [
        make_run(
            f"ScaleOut/w/apiServers={k}",
            sweep={"apiServers": k},
            cluster={"apiservers": k, "schedulers": 1, "scheduler_mode": "shared-state"},
            measured=phase,
        )
        for k in (1, 2)
    ]
    page = report.render(make_experiment(*runs), host=HOST)
    assert "Measured and modelled" in page
    for header in ("measured pods/s", "model, 1 machine", "model, 2 machines", "model, 4 machines"):
        assert f">{header}</th>" in page
    assert "a model, not a measurement" in page
    # no CPU measured: no model table
    bare = [make_run(f"S/w/apiServers={k}", sweep={"apiServers": k}) for k in (1, 2)]
    assert "Measured and modelled" not in report.render(make_experiment(*bare), host=HOST)
