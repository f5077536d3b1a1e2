"""Faults on a process whose PID is not ours to signal: the local-or-remote decision
(services.chaos.is_local), the chaos control's Status figures, Kill and Pause on a real
control server in a subprocess, and kubera.chaos / the collector choosing the RPC path
for a process recorded elsewhere (and the signal path, start time checked, for a local
one)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from kubera import chaos
from kubera.errors import CliError
from kubera.experiment.measure.collect import Collector
from kubera.launch import procs
from kubera.launch.context import Context
from protos.kubera.v1 import chaos_pb2, chaos_pb2_grpc
from services.chaos import is_local, self_report
from services.chaos.process import boot_id, pid_namespace, stat_fields
from tests.waiting import eventually

ROOT = Path(__file__).resolve().parents[2]

#: A process that serves nothing but its chaos control (as a node pool or the apiserver
#: does beside its own API) and prints the port.
SERVER = """
import asyncio, sys
from services.chaos import serve_control

async def main():
    server, port = await serve_control([], "proc-under-test", "test")
    print(port, flush=True)
    await server.wait_for_termination()

asyncio.run(main())
"""


@dataclass
class Served:
    proc: subprocess.Popen[str]
    address: str

    @property
    def pid(self) -> int:
        return self.proc.pid


@pytest.fixture
def served() -> Iterator[Served]:
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        yield Served(proc, f"127.0.0.1:{port}")
    finally:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGCONT)
            proc.kill()
        proc.wait(10)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process a wrongly chosen signal path would hit instead."""
    proc = subprocess.Popen(["sleep", "60"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(10)


def state(pid: int) -> str:
    fields = stat_fields(pid)
    return fields[0] if fields else "gone"


# ---------------------------------------------------------------- the decision


def test_our_own_report_is_local() -> None:
    me = self_report()
    assert is_local(me)
    assert me["cpu_seconds"] > 0 and me["rss_bytes"] > 0 and me["start_ticks"] > 0


@pytest.mark.parametrize(
    ("where", "local"),
    [
        ({}, True),  # an older record: no locality fields
        ({"boot_id": "another-kernel"}, False),
        ({"boot_id": "SAME", "pid_ns": "pid:[1]"}, False),  # a container on this machine
        ({"boot_id": "SAME", "pid_ns": "SAME", "host": "other-name"}, True),
        ({"host": "some-other-machine"}, False),
    ],
)
def test_local_means_the_same_kernel_and_pid_namespace(where: dict, local: bool) -> None:
    same = {"boot_id": boot_id(), "pid_ns": pid_namespace()}
    report = {k: same[k] if v == "SAME" else v for k, v in where.items()}
    assert is_local(report) is local


# ------------------------------------------------------ the RPCs, on a real process


async def test_status_reports_the_process_and_where_it_runs(served: Served) -> None:
    answer = await chaos.status(served.address)
    assert answer is not None
    assert answer.pid == served.pid and answer.component == "test"
    assert answer.cpu_seconds > 0 and answer.rss_bytes > 10 * 2**20
    assert answer.start_ticks == procs.start_time(served.pid)
    assert is_local(answer)
    assert await chaos.status("127.0.0.1:1", timeout=1.0) is None


async def test_pause_stops_the_process_and_its_watchdog_resumes_it(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.address) as ch:
        stub = chaos_pb2_grpc.ChaosStub(ch)
        resp = await stub.Pause(chaos_pb2.PauseRequest(seconds=1.0), timeout=5)
        assert resp.pid == served.pid and resp.watchdog_pid > 0
        await eventually(lambda: state(served.pid) == "T", timeout=5)
        stopped = time.monotonic()
        await eventually(lambda: state(served.pid) in ("S", "R"), timeout=10)
        assert time.monotonic() - stopped >= 0.8
        assert (await stub.Status(chaos_pb2.StatusRequest(), timeout=5)).pid == served.pid
        with pytest.raises(grpc.aio.AioRpcError) as e:
            await stub.Pause(chaos_pb2.PauseRequest(seconds=0), timeout=5)
        assert e.value.code() == grpc.StatusCode.INVALID_ARGUMENT


async def test_kill_answers_then_the_process_dies_by_sigkill(served: Served) -> None:
    async with grpc.aio.insecure_channel(served.address) as ch:
        resp = await chaos_pb2_grpc.ChaosStub(ch).Kill(chaos_pb2.KillRequest(), timeout=5)
    assert resp.pid == served.pid
    assert await asyncio.to_thread(served.proc.wait, 10) == -signal.SIGKILL


# ------------------------------------------- kubera.chaos picks the path by the record


def leader(served: Served, pid: int, **where: object) -> chaos.Leader:
    record = {"pid": pid, "control": served.address, **where}
    return chaos.Leader("kube-system/kube-scheduler", "x", 1, pid, served.address, record)


async def test_a_leader_elsewhere_is_killed_through_its_control(
    served: Served, bystander: subprocess.Popen[bytes]
) -> None:
    # Recorded with another kernel's boot id: its PID means nothing here (the bystander
    # has that number in our namespace and must not be hit).
    target = leader(served, bystander.pid, boot_id="another-kernel")
    assert chaos.local_pid(target) == 0
    await chaos.kill(target)
    assert await asyncio.to_thread(served.proc.wait, 10) == -signal.SIGKILL
    assert bystander.poll() is None


async def test_a_leader_elsewhere_is_paused_through_its_control(
    served: Served, bystander: subprocess.Popen[bytes]
) -> None:
    target = leader(served, bystander.pid, boot_id="another-kernel")
    pausing = asyncio.create_task(chaos.pause(target, 1.0))
    await eventually(lambda: state(served.pid) == "T", timeout=5)
    assert state(bystander.pid) != "T"
    await pausing
    await eventually(lambda: state(served.pid) in ("S", "R"), timeout=10)


async def test_a_local_leader_gets_the_signal_only_if_it_is_the_same_process(
    served: Served,
) -> None:
    here = {k: v for k, v in self_report().items() if k in ("host", "boot_id", "pid_ns")}
    reused = leader(served, served.pid, start_ticks=procs.start_time(served.pid) + 1, **here)
    with pytest.raises(CliError, match="not running"):
        await chaos.kill(reused)
    assert served.proc.poll() is None
    target = leader(served, served.pid, start_ticks=procs.start_time(served.pid), **here)
    assert chaos.local_pid(target) == served.pid
    await chaos.kill(target)
    assert await asyncio.to_thread(served.proc.wait, 10) == -signal.SIGKILL


def pool_context(served: Served, started: int) -> Context:
    pool = {"name": "pool-0", "address": served.address, "pid": served.pid}
    return Context(apiserver="", etcd="", node_pools=[pool], started={str(served.pid): started})


async def test_kill_pool_checks_the_recorded_start_time(served: Served) -> None:
    wrong = pool_context(served, procs.start_time(served.pid) + 1)
    with pytest.raises(CliError, match="not running"):
        await asyncio.to_thread(chaos.kill_pool, wrong, "pool-0")
    assert served.proc.poll() is None
    right = pool_context(served, procs.start_time(served.pid))
    await asyncio.to_thread(chaos.kill_pool, right, "0")
    assert await asyncio.to_thread(served.proc.wait, 10) == -signal.SIGKILL


async def test_kill_pool_elsewhere_goes_through_its_control(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(chaos, "is_local", lambda where: False)
    monkeypatch.setattr(chaos.os, "kill", None)  # a signal would fail the test
    await asyncio.to_thread(chaos.kill_pool, pool_context(served, 0), "pool-0")
    assert await asyncio.to_thread(served.proc.wait, 10) == -signal.SIGKILL


# ------------------------------------- the collector keeps replicas that answer elsewhere


@dataclass
class KV:
    key: str
    value: bytes


class Records:
    """The replica records etcd would list."""

    def __init__(self, records: list[dict]) -> None:
        self.kvs = [
            KV(
                f"/kubera/replicas/kube-system/kube-scheduler/{r['identity']}",
                json.dumps(r).encode(),
            )
            for r in records
        ]

    async def list(self, prefix: str) -> tuple[list[KV], int]:
        return self.kvs, 42


async def test_the_collector_takes_a_remote_replicas_figures_from_its_status(
    served: Served, bystander: subprocess.Popen[bytes]
) -> None:
    elsewhere = {"boot_id": "another-kernel", "component": "kube-scheduler"}
    records = [
        # alive elsewhere, its pid also naming an unrelated local process
        {**elsewhere, "identity": "a", "pid": served.pid, "control": served.address,
         "metrics": "127.0.0.1:1"},
        # elsewhere and gone: nothing answers at its control address
        {**elsewhere, "identity": "b", "pid": 4242, "control": "127.0.0.1:1",
         "metrics": "127.0.0.1:1"},
    ]  # fmt: skip
    c = Collector(Context(apiserver="", etcd=""), t0=time.monotonic())
    c._storage = Records(records)  # type: ignore[assignment]  # noqa: SLF001
    values: dict[str, float] = {}
    live = await c._records(values, 1.0)  # noqa: SLF001
    assert [r.identity for r in live] == ["a"]
    c._processes(values, 1.0)  # noqa: SLF001
    assert values["rss_mb:scheduler-0"] > 10
    assert "cpu:scheduler-0" in values and "cpu:scheduler-1" not in values
    assert values["etcd_revisions"] == 0.0


async def test_an_apiserver_elsewhere_is_found_by_its_status(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    ctx = Context(
        apiserver=served.address,
        etcd="",
        apiserver_pid=served.pid,
        started={str(served.pid): procs.start_time(served.pid) + 1},  # not ours to signal
    )
    with pytest.raises(CliError, match="not running"):
        await chaos.apiserver_pid(ctx, 0)
    monkeypatch.setattr(chaos, "is_local", lambda where: False)
    assert await chaos.serving_elsewhere(served.address, served.pid)
    assert not await chaos.serving_elsewhere(served.address, served.pid + 1)
    assert (await chaos.apiserver_pid(ctx, 0))[0] == served.pid


async def test_pools_elsewhere_report_through_status_and_are_never_read_in_proc(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A Status answer (a message, not a record) comes from elsewhere: as on another machine.
    monkeypatch.setattr(
        "kubera.experiment.measure.collect.is_local",
        lambda where: isinstance(where, dict) and where.get("boot_id") != "another-kernel",
    )
    elsewhere = {"boot_id": "another-kernel"}
    pools = [
        {"name": "pool-0", "address": served.address, "pid": served.pid, **elsewhere},
        # gone; its PID names a live process here (this one), which must not be read
        {"name": "pool-1", "address": "127.0.0.1:1", "pid": os.getpid(), **elsewhere},
    ]
    c = Collector(Context(apiserver="", etcd="", node_pools=pools), t0=time.monotonic())
    values: dict[str, float] = {}
    await c._locate_others()  # noqa: SLF001
    c._processes(values, 1.0)  # noqa: SLF001
    assert values["rss_mb:pool-0"] > 10 and "cpu:pool-0" in values
    assert "cpu:pool-1" not in values and "rss_mb:pool-1" not in values
    assert "cpu:runner" in values
