"""The CPU-per-pod table (kubera/experiment/measure/cpu.py) from fake samples, the processes
the collector reads for a context, and the one /proc reader (kubera/launch/procs.py).

Replaces tests/bench/test_cpu.py with the bench's own /proc reader and process list
(kubera/bench/cpu.py, deleted as a duplicate of launch/procs.py and the collector's)."""

from __future__ import annotations

import os
import time

import pytest

from kubera.experiment.measure import cpu
from kubera.experiment.measure.collect import Collector
from kubera.launch import procs
from kubera.launch.context import Context


def test_processes_from_a_context() -> None:
    ctx = Context(
        apiserver="",
        etcd="",
        apiserver_pid=11,
        apiservers=[{"pid": 11}, {"pid": 12}],
        node_pools=[{"name": "pool-0", "pid": 14}, {"name": "pool-1"}],
        pids={"etcd": 20, "ray-gcs-0": 21, "ray-raylet-0": 22},
    )
    c = Collector(ctx, t0=time.monotonic())
    assert c._local_processes() == {  # noqa: SLF001
        "runner": [os.getpid()],
        "etcd": [20],
        "apiserver": [11, 12],
        "pool-0": [14],
        "ray": [21, 22],
    }
    assert [cpu.kind_of(n) for n in ("apiserver", "pool-0", "scheduler-1", "ray", "runner")] == [
        "apiserver",
        "node-pool",
        "scheduler",
        "ray",
        "runner",
    ]
    assert cpu.kind_of("controller-manager-0") == "controller-manager"


def test_processes_fall_back_to_the_apiserver_pid_before_components_are_recorded() -> None:
    c = Collector(Context(apiserver="", etcd="", apiserver_pid=7), t0=time.monotonic())
    assert c._local_processes() == {"runner": [os.getpid()], "apiserver": [7]}  # noqa: SLF001


def test_cpu_now_reads_every_local_process_and_leaves_out_the_gone() -> None:
    c = Collector(Context(apiserver="", etcd="", pids={"etcd": 2**22 + 12345}), t0=time.monotonic())
    now = c.cpu_now()
    assert set(now) == {"runner"}
    assert now["runner"][0] == (os.getpid(),) and now["runner"][1] > 0


def test_table_per_process_and_per_kind() -> None:
    before = {
        "apiserver": ((1, 2), 3.0),
        "scheduler-0": ((3,), 10.0),
        "etcd": ((4,), 0.5),
        "pool-0": ((5,), 1.0),
        "pool-1": ((6,), 0.0),
    }
    # pool-0 restarted (another PID): no figure; pool-1 was gone by the end.
    after = {
        "apiserver": ((1, 2), 6.0),
        "scheduler-0": ((3,), 18.0),
        "etcd": ((4,), 1.5),
        "pool-0": ((9,), 0.1),
    }
    t = cpu.table(cpu.used(before, after), pods=1000, seconds=4.0)
    rows = {r["name"]: r for r in t["processes"]}
    assert rows["scheduler-0"]["cpu_s"] == pytest.approx(8.0)
    assert rows["scheduler-0"]["cpu_s_per_pod"] == pytest.approx(0.008)
    assert rows["scheduler-0"]["cores"] == pytest.approx(2.0)
    assert rows["pool-0"]["cpu_s"] is None and rows["pool-1"]["cpu_s"] is None
    assert list(t["by_kind"]) == ["apiserver", "scheduler", "node-pool", "etcd"]
    assert t["by_kind"]["apiserver"] == {
        "processes": 1,
        "cpu_s": pytest.approx(3.0),
        "cpu_s_per_pod": pytest.approx(0.003),
        "cores": pytest.approx(0.75),
    }
    assert t["by_kind"]["node-pool"]["cpu_s"] == 0.0
    assert t["total_cpu_s"] == pytest.approx(12.0)
    assert t["total_cpu_s_per_pod"] == pytest.approx(0.012)
    assert cpu.demands(t)["scheduler"] == pytest.approx(0.008)
    text = cpu.render(t)
    assert "scheduler" in text and "8.000" in text
    assert "pool-0, pool-1" in text


def test_table_with_no_pods_bound_divides_by_nothing() -> None:
    t = cpu.table({"etcd": 1.0}, pods=0, seconds=0.0)
    assert t["processes"][0]["cpu_s_per_pod"] is None
    assert t["by_kind"]["etcd"]["cpu_s_per_pod"] == 0.0


def test_read_stat_of_this_process_and_of_none() -> None:
    st = procs.usage(os.getpid())
    assert st is not None and st[0] > 0 and st[1] > 0
    assert procs.usage(2**22 + 12345) is None
