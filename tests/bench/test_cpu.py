"""The CPU-per-pod table (kubera/bench/cpu.py) from fake /proc samples, and the processes a
context names."""

from __future__ import annotations

import os

import pytest

from kubera.bench import cpu
from kubera.bench.cpu import Proc


def test_processes_from_a_context() -> None:
    ctx = {
        "apiserver_pid": 11,
        "components": [
            {"name": "apiserver", "kind": "apiserver", "pid": 11, "state": "alive"},
            {"name": "apiserver-1", "kind": "apiserver", "pid": 12, "state": "alive"},
            {"name": "scheduler", "kind": "scheduler", "pid": 13, "state": "alive"},
            {"name": "pool-0", "kind": "node-pool", "pid": 14, "state": "restarting"},
            {"name": "far", "kind": "node-pool", "pid": 15, "host": "another-host-xyz"},
        ],
        "pids": {"etcd": 20, "ray-gcs-0": 21, "ray-raylet-0": 22},
    }
    procs = cpu.processes(ctx, self_pid=99)
    assert [(p.name, p.kind, p.pid) for p in procs] == [
        ("apiserver", "apiserver", 11),
        ("apiserver-1", "apiserver", 12),
        ("scheduler", "scheduler", 13),
        ("etcd", "etcd", 20),
        ("ray-gcs-0", "ray", 21),
        ("ray-raylet-0", "ray", 22),
        ("bench client", "bench-client", 99),
    ]


def test_processes_fall_back_to_the_apiserver_pid_before_components_are_recorded() -> None:
    procs = cpu.processes({"apiserver_pid": 7, "pids": {}}, self_pid=8)
    assert [(p.kind, p.pid) for p in procs] == [("apiserver", 7), ("bench-client", 8)]


def test_table_per_process_and_per_kind() -> None:
    procs = [
        Proc("apiserver", "apiserver", 1),
        Proc("apiserver-1", "apiserver", 2),
        Proc("scheduler", "scheduler", 3),
        Proc("etcd", "etcd", 4),
        Proc("pool-0", "node-pool", 5),
        Proc("pool-1", "node-pool", 6),
    ]
    before = {1: (100, 1.0), 2: (100, 2.0), 3: (100, 10.0), 4: (100, 0.5), 5: (100, 1.0), 6: None}
    # pid 5 restarted (another start time): no figure; pid 6 was gone at the start.
    after = {1: (100, 3.0), 2: (100, 3.0), 3: (100, 18.0), 4: (100, 1.5), 5: (200, 0.1), 6: None}
    t = cpu.table(procs, before, after, pods=1000, seconds=4.0)
    rows = {r["name"]: r for r in t["processes"]}
    assert rows["scheduler"]["cpu_s"] == pytest.approx(8.0)
    assert rows["scheduler"]["cpu_s_per_pod"] == pytest.approx(0.008)
    assert rows["scheduler"]["cores"] == pytest.approx(2.0)
    assert rows["pool-0"]["cpu_s"] is None and rows["pool-1"]["cpu_s"] is None
    assert list(t["by_kind"]) == ["apiserver", "scheduler", "node-pool", "etcd"]
    assert t["by_kind"]["apiserver"] == {
        "processes": 2,
        "cpu_s": pytest.approx(3.0),
        "cpu_s_per_pod": pytest.approx(0.003),
        "cores": pytest.approx(0.75),
    }
    assert t["by_kind"]["node-pool"]["cpu_s"] == 0.0
    assert t["total_cpu_s"] == pytest.approx(12.0)
    assert t["total_cpu_s_per_pod"] == pytest.approx(0.012)
    text = cpu.render(t)
    assert "scheduler" in text and "8.000" in text
    assert "pool-0, pool-1" in text


def test_table_with_no_pods_bound_divides_by_nothing() -> None:
    t = cpu.table([Proc("etcd", "etcd", 1)], {1: (1, 0.0)}, {1: (1, 1.0)}, pods=0, seconds=0.0)
    assert t["processes"][0]["cpu_s_per_pod"] is None
    assert t["by_kind"]["etcd"]["cpu_s_per_pod"] == 0.0


def test_read_stat_of_this_process_and_of_none() -> None:
    st = cpu.read_stat(os.getpid())
    assert st is not None and st[0] > 0 and st[1] >= 0
    assert cpu.read_stat(2**22 + 12345) is None
