"""`kubera bench scheduling-basic`'s argument handling, run loop and report assembly, with
fakes in place of the cluster (no timed tests: the figures here are made up)."""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from kubera.bench import report, scheduling, workloads
from kubera.bench.workloads import WORKLOADS, Churn
from kubera.cli import bench
from kubera.errors import CliError


def parse(*argv: str) -> argparse.Namespace:
    p = argparse.ArgumentParser()
    bench.register(p.add_subparsers(dest="cmd"))
    return p.parse_args(["bench", "scheduling-basic", *argv])


@pytest.mark.parametrize(
    ("argv", "shape"),
    [
        ((), (5000, 1000, 10000)),
        (("--init-pods", "5000", "--pods", "50000"), (5000, 5000, 50000)),
        (("--workload", "topology-spread"), (5000, 5000, 5000)),
        (("--workload", "anti-affinity"), (5000, 1000, 2000)),
        (("--workload", "node-affinity"), (5000, 5000, 10000)),
        (("--workload", "unschedulable"), (5000, 100, 10000)),
        (("--workload", "mixed-churn"), (5000, 0, 10000)),
        (("--workload", "preemption"), (5000, 20000, 5000)),
        (("--workload", "preemption", "--nodes", "10"), (10, 40, 10)),
        (("--nodes", "500"), (500, 1000, 10000)),
    ],
)
def test_default_shapes_are_upstreams(argv: tuple[str, ...], shape: tuple[int, int, int]) -> None:
    args = parse(*argv)
    scheduling.resolve(args)
    assert (args.nodes, args.init_pods, args.pods) == shape


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
        scheduling.resolve(parse(*argv))


def test_unknown_workload_is_an_argparse_error() -> None:
    with pytest.raises(SystemExit):
        parse("--workload", "nope")


def test_one_apiserver_needs_no_keyword_and_more_need_the_option(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[dict[str, Any]] = []

    class Old:
        def __init__(self) -> None:
            seen.append({})

    class New:
        def __init__(self, *, apiservers: int = 1) -> None:
            seen.append({"apiservers": apiservers})

    monkeypatch.setattr(scheduling, "Cluster", Old)
    scheduling.new_cluster(1)
    with pytest.raises(CliError, match="more than one apiserver"):
        scheduling.new_cluster(2)
    monkeypatch.setattr(scheduling, "Cluster", New)
    scheduling.new_cluster(2)
    assert seen == [{}, {"apiservers": 2}]


def fake_run(throughput: float, **extra: Any) -> dict[str, Any]:
    pods = extra.pop("pods", 10000)
    r = {
        "workload": "basic",
        "upstream_workload": "SchedulingBasic",
        "nodes": 5000,
        "init_pods": 1000,
        "pods": pods,
        "measured_s": pods / throughput,
        "throughput_avg": throughput,
        "throughput_p50": throughput,
        "throughput_p90": throughput * 1.1,
        "throughput_p99": throughput * 1.2,
        "apiservers": 1,
        "controllers": True,
        "create_nodes_s": 3.0,
        "create_measured_pods_s": 5.0,
        "etcd_put_concurrent_per_s": 4000.0,
        "cpu": {
            "seconds": pods / throughput,
            "pods": pods,
            "processes": [],
            "by_kind": {
                "apiserver": {"processes": 1, "cpu_s": 20, "cpu_s_per_pod": 0.002, "cores": 0.4},
                "scheduler": {"processes": 1, "cpu_s": 30, "cpu_s_per_pod": 0.003, "cores": 0.7},
                "etcd": {"processes": 1, "cpu_s": 10, "cpu_s_per_pod": 0.001, "cores": 0.2},
            },
            "total_cpu_s": 60,
            "total_cpu_s_per_pod": 0.006,
        },
    }
    r.update(extra)
    return r


def test_summarize_windows_and_percentiles() -> None:
    # 3 binds in second 0, 1 in second 1, 2 in second 2 (partial: left out of the windows).
    stamps = [10.1, 10.2, 10.9, 11.5, 12.0, 12.5]
    s = report.summarize(stamps, 10.0, pods=6)
    assert report.windows(stamps, 10.0) == [3, 1, 2]
    assert s["measured_s"] == pytest.approx(2.5)
    assert s["throughput_avg"] == pytest.approx(6 / 2.5)
    assert (s["throughput_p50"], s["throughput_p90"], s["throughput_p99"]) == (1.0, 3.0, 3.0)
    assert s["windows"] == [3, 1, 2]
    assert report.summarize([], 0.0, pods=0)["throughput_avg"] == 0.0
    assert report.pct([], 0.5) == 0.0


@pytest.mark.parametrize(
    ("windows", "average"),
    [
        pytest.param([], None, id="no pods: no sample"),
        pytest.param([0, 0, 5], None, id="pods in one window only: baseline, no sample"),
        pytest.param(
            [0, 2, 192, 157, 815],
            (192 + 157 + 815) / 3,
            id="first window with pods is the baseline",
        ),
        pytest.param(
            [4, 0, 8], 4.0, id="an empty window between: its interval shares the next rate"
        ),
    ],
)
def test_collector_average_is_upstreams_throughput_collector(
    windows: list[int], average: float | None
) -> None:
    assert report.collector_average(windows) == average


def test_assemble_reports_the_median_run_and_keeps_every_run() -> None:
    runs = [fake_run(300.0), fake_run(200.0, profile="x"), fake_run(250.0)]
    rep = report.assemble(runs, WORKLOADS["basic"])
    assert rep["throughput_avg"] == 250.0
    assert rep["median_of"] == 3
    assert rep["runs_throughput_avg"] == [300.0, 200.0, 250.0]
    assert len(rep["runs"]) == 3 and all("profile" not in r for r in rep["runs"])
    assert rep["upstream_case"] == "SchedulingBasic/5000Nodes_10000Pods"
    assert rep["upstream_threshold"] == 680
    assert rep["share_of_threshold"] == pytest.approx(250 / 680)
    assert rep["etcd_ratio"] == pytest.approx(250 / 4000)
    assert [r["share_of_threshold"] for r in rep["runs"]] == pytest.approx(
        [300 / 680, 200 / 680, 250 / 680]
    )
    model = rep["capacity_model"]
    assert [p["machines"] for p in model["predictions"]] == [1, 2, 4, 8]
    # 6 ms/pod on 2 cores → 333/s on one machine; the scheduler's 3 ms caps it at 333/s too.
    assert model["predictions"][0]["pods_per_s"] == pytest.approx(2 / 0.006)
    assert model["predictions"][3]["pods_per_s"] == pytest.approx(1 / 0.003)
    assert model["predictions"][3]["bottleneck"] == "scheduler"
    json.dumps(rep)  # the --output file


def test_threshold_applies_to_its_exact_shape_only() -> None:
    big = report.assemble([fake_run(400.0, init_pods=5000, pods=50000)], WORKLOADS["basic"])
    assert (big["upstream_threshold"], big["upstream_case"]) == (
        810,
        "SchedulingBasic/5000Nodes_50000Pods",
    )
    small = report.assemble([fake_run(400.0, nodes=500)], WORKLOADS["basic"])
    assert small["upstream_threshold"] is None and small["share_of_threshold"] is None
    assert "none for this shape" in report.render(small)
    pre = fake_run(50.0, nodes=5000, init_pods=20000, pods=5000, workload="preemption")
    rep = report.assemble([pre], WORKLOADS["preemption"])
    assert rep["upstream_case"] == "PreemptionBasic/5000Nodes" and rep["share_of_threshold"] is None


def test_render_names_every_figure() -> None:
    rep = report.assemble(
        [fake_run(250.0, churn={"mode": "create", "created": 12})], WORKLOADS["basic"]
    )
    text = report.render(rep)
    for needle in (
        "pods bound/s: avg 250, p50 250, p90 275, p99 300",
        "raw etcd put rate (same run, 64 in flight): 4000/s → ratio 0.062",
        "SchedulingBasic/5000Nodes_10000Pods, Go): 680 pods/s → we reach 0.37×",
        "churn (create): 12 objects created",
        "CPU per pod during the measured phase",
        "capacity model (a model, not a measurement",
        "median of 1 run(s): 250",
    ):
        assert needle in text, needle


def test_command_runs_fresh_clusters_and_writes_the_json(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events: list[str] = []
    rates = iter([200.0, 300.0, 250.0])

    class FakeCluster:
        def up(self, *args: str) -> None:
            events.append("up " + " ".join(args))

        def down(self) -> None:
            events.append("down")

    async def run(cluster: Any, args: argparse.Namespace, w: workloads.Workload) -> dict:
        return fake_run(next(rates), workload=w.name, upstream_workload=w.upstream)

    monkeypatch.setattr(scheduling, "new_cluster", lambda k: FakeCluster())
    monkeypatch.setattr(scheduling, "_run", run)
    out = tmp_path / "r.json"
    args = parse("--workload", "preemption", "--repeat", "3", "--profile", "--output", str(out))
    assert args.func(args) == 0
    assert events == ["up --no-scheduler --no-controllers", "down"] * 3
    rep = json.loads(out.read_text())
    assert rep["throughput_avg"] == 250.0 and len(rep["runs"]) == 3
    assert "run 3/3: 250 pods/s, etcd ratio 0.062" in capsys.readouterr().out


def test_each_run_line_has_its_share_and_etcd_ratio() -> None:
    line = report.run_line(fake_run(340.0), WORKLOADS["basic"], 1, 3)
    assert line == "run 1/3: 340 pods/s, 0.50× of 680, etcd ratio 0.085"


def test_command_takes_the_cluster_down_when_a_run_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    downs: list[int] = []

    class FakeCluster:
        def up(self, *args: str) -> None:
            pass

        def down(self) -> None:
            downs.append(1)

    async def run(*a: Any) -> dict:
        raise CliError("bench: only 3 of 10 pods bound")

    monkeypatch.setattr(scheduling, "new_cluster", lambda k: FakeCluster())
    monkeypatch.setattr(scheduling, "_run", run)
    args = parse("--no-controllers")
    with pytest.raises(CliError):
        args.func(args)
    assert downs == [1]


class FakeClient:
    def __init__(self) -> None:
        self.log: list[tuple[str, str]] = []

    async def create(self, obj: Any) -> Any:
        self.log.append(("create", obj.metadata.name))
        return obj

    async def delete(self, kind: Any, name: str, namespace: str = "", **kw: Any) -> None:
        self.log.append(("delete", name))


@pytest.mark.parametrize(
    ("spec", "ticks", "expected"),
    [
        (
            Churn("create", 0.0, ("large-cpu-pod",)),
            3,
            [("create", f"churn-large-cpu-pod-{i}") for i in range(3)],
        ),
        (
            Churn("recreate", 0.0, ("churn-node", "large-cpu-pod")),
            3,
            [
                ("create", "churn-churn-node-0"),
                ("create", "churn-large-cpu-pod-0"),
                ("delete", "churn-churn-node-0"),
                ("delete", "churn-large-cpu-pod-0"),
                ("create", "churn-churn-node-2"),
                ("create", "churn-large-cpu-pod-2"),
            ],
        ),
    ],
)
def test_churn_modes(spec: Churn, ticks: int, expected: list[tuple[str, str]]) -> None:
    client = FakeClient()
    counts: dict[str, int] = {}

    async def go() -> None:
        stop = asyncio.Event()

        async def watch() -> None:
            for _ in range(1000):  # bounded: until the expected operations are done
                if len(client.log) >= len(expected):
                    break
                await asyncio.sleep(0)
            stop.set()

        await asyncio.gather(scheduling.churn(client, spec, stop, counts), watch())

    asyncio.run(go())
    assert client.log[: len(expected)] == expected
    assert counts.get("created", 0) >= sum(1 for op, _ in expected if op == "create")


def test_templates_are_upstreams() -> None:
    p = workloads.pod("a", "anti-affinity", "measured", "sched-1")
    term = p.spec.affinity.pod_anti_affinity.required_during_scheduling_ignored_during_execution[0]
    assert list(term.namespaces) == ["sched-1", "sched-0"]
    assert term.topology_key == "kubernetes.io/hostname"
    big = workloads.pod("b", "large-cpu", "churn")
    assert big.spec.containers[0].resources.requests["cpu"] == "9"
    assert big.spec.priority_class_name == workloads.PRIORITY_10_CLASS
    n = workloads.node(4, WORKLOADS["topology-spread"])
    assert n.metadata.labels["topology.kubernetes.io/zone"] == "moon-2"
    assert workloads.churn_node("c").status.allocatable["pods"] == "0"
    with pytest.raises(ValueError):
        workloads.pod("x", "nope", "g")
