"""The hollow nodes' figures (measure/nodes.py), as `kubera bench nodes` defined them."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from kubera.experiment.measure import nodes
from kubera.experiment.measure.model import Phase, RunResult
from kubera.experiment.output import figures


def test_a_renewal_is_late_by_how_long_after_the_previous_renew_time_plus_the_interval() -> None:
    w = nodes.LeaseWatch({"a": 100.0, "b": 100.0})
    w.saw("a", 110.0, 110.5)  # 0.5 s late: on time
    w.saw("b", 112.0, 112.5)  # 2.5 s late
    w.saw("a", 110.0, 111.0)  # the same renewTime again: not a renewal
    got = w.close(now=115.0, duration=40.0)
    assert got["lease_renewals"] == 2
    assert got["leases"] == 2
    assert got["leases_on_time"] == 1
    assert got["leases_on_time_fraction"] == 0.5
    assert got["lease_lateness_worst_s"] == pytest.approx(2.5)
    assert got["leases_expired"] == 0


def test_a_lease_not_renewed_by_the_window_end_is_late_by_its_age_and_expires() -> None:
    w = nodes.LeaseWatch({"a": 100.0})
    got = w.close(now=150.0, duration=40.0)
    assert got["lease_lateness_worst_s"] == pytest.approx(40.0)
    assert got["leases_on_time"] == 0
    assert got["leases_expired"] == 1
    assert got["lease_renewals"] == 0


def test_the_lease_log_counts_only_renewals_inside_the_window() -> None:
    log = nodes.LeaseLog()
    t0 = 1000.0
    log.saw("a", 1000.0, 0.0, 40)  # listed at the start
    log.saw("a", 1010.0, 10.2)  # before the window: where it starts
    log.saw("a", 1020.0, 23.0)  # in it: 3 s late
    log.saw("a", 1030.0, 30.1)  # in it: on time
    log.saw("a", 1040.0, 45.0)  # after it
    got = log.figures(15.0, 35.0, t0)
    assert got["lease_renewals"] == 2
    assert got["lease_lateness_worst_s"] == pytest.approx(3.0)
    assert got["leases_on_time"] == 0
    assert len(log) == 5


def test_ready_nodes_wants_ready_true_and_no_unreachable_taint() -> None:
    def node(ready: str, taints: tuple[str, ...] = ()) -> SimpleNamespace:
        return SimpleNamespace(
            status=SimpleNamespace(conditions=[SimpleNamespace(type="Ready", status=ready)]),
            spec=SimpleNamespace(taints=[SimpleNamespace(key=k) for k in taints]),
        )

    got = nodes.ready_nodes(
        [node("True"), node("False"), node("True", ("node.kubernetes.io/unreachable",))]
    )
    assert got == 1


def test_the_steady_window_is_the_last_sleep() -> None:
    phases = [
        Phase("createPods[1]", "createPods", 0, 10),
        Phase("sleep[2]", "sleep", 10, 13),
        Phase("sleep[3]", "sleep", 13, 28),
        Phase("check[4]", "check", 28, 31),
    ]
    assert nodes.steady_window(phases, 31.0) == (13, 28)
    assert nodes.steady_window([], 31.0) == (0.0, 31.0)


def test_window_figures_sum_the_pools_and_divide_their_memory_by_the_nodes() -> None:
    series = {
        "t": [0.0, 1.0, 2.0, 3.0],
        "cpu:pool-0": [1.0, 0.1, 0.3, 2.0],
        "cpu:pool-1": [1.0, 0.1, 0.1, 2.0],
        "rss_mb:pool-0": [50, 60, 100, 100],
        "rss_mb:pool-1": [50, 60, 100, 100],
        "cpu:etcd": [0, 0.05, 0.05, 0],
        "rss_mb:etcd": [10, 10, 20, 20],
        "cpu:apiserver:1,2": [9, 9, 9, 9],  # a summed-pids key form is not a component
        "machine_cpu": [2.0, 0.5, 0.7, 2.0],
        "cpu:scheduler-0": [0.5, 0.1, 0, 0],  # killed in the window
        "rss_mb:scheduler-0": [100, 100, 0, 0],
    }
    got = nodes.window_figures(series, 1.0, 3.0, ["pool-0", "pool-1"], 2000)
    assert got["cpu_pct_pools"] == pytest.approx(30.0)
    assert got["rss_mb_pools"] == 200
    assert got["memory_per_node_kb"] == pytest.approx(200 * 1024 / 2000)
    assert got["pool_cpu_pct_per_1000_nodes"] == pytest.approx(15.0)
    assert got["cpu_pct_etcd"] == pytest.approx(5.0)
    assert got["rss_mb_etcd"] == 20
    assert got["machine_cpu_pct"] == pytest.approx(60.0)
    assert "cpu_pct_apiserver:1,2" not in got
    assert "rss_mb_scheduler-0" not in got and "cpu_pct_scheduler-0" not in got


def test_a_run_with_node_figures_prints_them_and_round_trips() -> None:
    run = RunResult(id="HollowNodes/100Nodes", test_case="HollowNodes", workload="100Nodes")
    run.nodes = {
        "nodes": 50,
        "nodes_ready": 50,
        "leases": 50,
        "leases_on_time": 49,
        "leases_on_time_fraction": 0.98,
        "leases_expired": 0,
        "lease_renewals": 100,
        "lease_lateness_p99_s": 1.2,
        "lease_lateness_worst_s": 1.5,
        "rss_mb_pools": 100,
        "memory_per_node_kb": 2048,
        "eviction_reaction_s": 12.0,
        "eviction_reaction_periods": 1.2,
        "pressure_nodes": 5,
    }
    assert RunResult.from_json(run.to_json()).nodes == run.nodes
    text = figures.render(run)
    for line in (
        "nodes Ready (as the run ends): 50 / 50",
        "leases on time: 49 / 50 = 0.9800",
        "lease lateness: worst 1.50 s, p99 1.20 s over 100 renewals",
        "memory per hollow node: 2048.0 KiB (pools 100 MiB)",
        "eviction reaction, 5 nodes: 12.0 s = 1.20 monitoring periods",
    ):
        assert line in text
    assert "nodes" not in RunResult(id="x", test_case="a", workload="b").to_json()


def test_reaction_periods_count_the_kubelets_clock() -> None:
    assert nodes.reaction_periods(20.0) == 2.0
    assert nodes.reaction_periods(20.0, time_scale=2.0) == 4.0
