"""A measurement window's memory figures (MeasuredPhase.memory): each component's RSS,
the apiserver's bytes per pod and the node pools' bytes per hollow node; kept through
results.json."""

from __future__ import annotations

from kubera.experiment.measure.model import MeasuredPhase, memory_figures


def test_bytes_per_pod_and_per_node() -> None:
    rss = {"apiserver": 300.0, "pool-0": 100.0, "pool-1": 50.0, "etcd": 80.0}
    got = memory_figures(rss, {"pool-0", "pool-1"}, pods=6000, nodes=500)
    assert got["rss_mb:apiserver"] == 300.0 and got["rss_mb:pool-1"] == 50.0
    assert got["apiserver_bytes_per_pod"] == round(300 * 2**20 / 6000, 1)
    assert got["pool_bytes_per_node"] == round(150 * 2**20 / 500, 1)


def test_growth_per_pod_over_the_window() -> None:
    got = memory_figures(
        {"apiserver": 110.0},
        set(),
        pods=2000,
        nodes=0,
        before={"apiserver": 100.0},
        window_pods=1000,
    )
    assert got["apiserver_growth_bytes_per_pod"] == round(10 * 2**20 / 1000, 1)
    assert "apiserver_growth_bytes_per_pod" not in memory_figures(
        {"apiserver": 110.0}, set(), pods=2000, nodes=0, before={}, window_pods=1000
    )


def test_no_ratio_without_pods_nodes_or_pools() -> None:
    got = memory_figures({"apiserver": 300.0, "etcd": 80.0}, set(), pods=0, nodes=500)
    assert "apiserver_bytes_per_pod" not in got and "pool_bytes_per_node" not in got
    got = memory_figures({"pool-0": 10.0}, {"pool-0"}, pods=5, nodes=0)
    assert "pool_bytes_per_node" not in got and "apiserver_bytes_per_pod" not in got


def test_memory_round_trips_through_json() -> None:
    phase = MeasuredPhase(
        window="w",
        pods=10,
        seconds=1.0,
        cpu={"apiserver": 0.5},
        memory=memory_figures({"apiserver": 64.0}, set(), pods=10, nodes=0),
    )
    assert MeasuredPhase.from_json(phase.to_json()) == phase
    assert MeasuredPhase.from_json({"window": "old", "pods": 1}).memory == {}
