"""kubera/launch/procs.py: finding and stopping the processes a supervisor started, by PID."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from kubera.launch import procs

#: A child that starts a grandchild, then both sleep.
PARENT = (
    "import subprocess, sys, time; "
    "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
)


def poll(condition, timeout: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.02)  # polling for a condition, bounded
    return bool(condition())


def test_descendants_lists_children_and_grandchildren_parents_first() -> None:
    child = subprocess.Popen([sys.executable, "-c", PARENT])
    try:
        assert poll(lambda: len(procs.descendants(child.pid)) == 1)
        grandchild = procs.descendants(child.pid)[0]
        mine = procs.descendants(os.getpid())
        assert mine.index(child.pid) < mine.index(grandchild)
    finally:
        procs.stop_all([child.pid, *procs.descendants(child.pid)], timeout=5)
        child.wait(10)
    assert poll(lambda: not procs.alive(grandchild))


def test_stop_all_kills_a_process_that_ignores_sigterm() -> None:
    stubborn = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "print('ready', flush=True); time.sleep(60)",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert stubborn.stdout is not None and stubborn.stdout.readline() == "ready\n"
    procs.stop_all([stubborn.pid], timeout=0.5)
    assert stubborn.wait(10) == -9


def test_session_members_leaves_out_zombies() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"], start_new_session=True)
    assert poll(lambda: not procs.alive(child.pid))  # exited: a zombie until waited for
    assert procs.session_members(child.pid) == []
    child.wait(10)


def test_stat_reads_cpu_and_rss_past_a_command_with_spaces() -> None:
    fields = ["S"] + ["0"] * 40
    fields[11], fields[12] = str(3 * procs.CLOCK_TICKS), str(procs.CLOCK_TICKS)  # utime, stime
    fields[21] = str(2**20 // procs.PAGE_BYTES * 7)  # rss pages: 7 MiB
    fields[1] = "42"  # ppid
    parsed = procs.parse_stat("1234 (ray::Sched) uler) " + " ".join(fields))
    assert parsed[0] == "S" and parsed[1] == "42"
    cpu, rss = procs.cpu_and_rss(parsed)
    assert cpu == pytest.approx(4.0)
    assert rss == pytest.approx(7.0)
    mine = procs.usage(os.getpid())
    assert mine is not None and mine[0] > 0 and mine[1] > 1
    assert procs.usage(2**22 + 1) is None  # above pid_max: never a process


def test_started_below_leaves_out_what_was_there_before() -> None:
    old = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    before = set(procs.descendants(os.getpid()))
    new = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        found = procs.started_below(os.getpid(), before)
        assert new.pid in found and old.pid not in found
        assert found[new.pid] == procs.start_time(new.pid) > 0
    finally:
        procs.stop_all([old.pid, new.pid], timeout=5)
        old.wait(10)
        new.wait(10)
