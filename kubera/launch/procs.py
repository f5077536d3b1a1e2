"""Processes kubera started, identified so that stopping them can never hit another's.

A PID alone can be reused after a crash or reboot, so kubera records each process's start
time (field 22 of /proc/PID/stat, clock ticks since boot) with it and only signals a PID
whose start time still matches. A detached supervisor leads its own session; everything
it started (etcd, Ray's processes) is in that session, which `sweep_session` empties.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

#: Clock ticks per second (/proc times) and bytes per page (/proc sizes).
CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE_BYTES = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def parse_stat(text: str) -> list[str]:
    """The fields of a /proc/PID/stat text from field 3 (state) on: index i is field i+3
    (ppid 1, session 3, utime 11, stime 12, start time 19, rss pages 21). The command name
    (field 2) may hold spaces and parentheses: the split is after the last ')'."""
    return text.rsplit(") ", 1)[1].split()


def stat(pid: int) -> list[str] | None:
    """`parse_stat` of the process's /proc/PID/stat; None when it does not exist."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return parse_stat(text)


def cpu_and_rss(fields: list[str]) -> tuple[float, float]:
    """(CPU seconds used: utime + stime, resident memory in MB) from `parse_stat` fields."""
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS, int(fields[21]) * PAGE_BYTES / 2**20


def usage(pid: int) -> tuple[float, float] | None:
    """`cpu_and_rss` of a process now; None when it is gone."""
    fields = stat(pid)
    try:
        return cpu_and_rss(fields) if fields is not None else None
    except (IndexError, ValueError):
        return None


def start_time(pid: int) -> int:
    """The process's start time in clock ticks since boot; 0 when it does not exist."""
    fields = stat(pid)
    return int(fields[19]) if fields else 0


def alive(pid: int, started: int = 0) -> bool:
    """Whether `pid` runs (not a zombie) and, when `started` is given, is still that process."""
    if pid <= 0:
        return False
    fields = stat(pid)
    if fields is None or fields[0] == "Z":
        return False
    return not started or int(fields[19]) == started


def stop(pid: int, started: int = 0, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `timeout`; nothing when it is gone or not the same process."""
    if not alive(pid, started):
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(pid, started) and time.monotonic() < deadline:
        time.sleep(0.05)
    if alive(pid, started):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def started_below(pid: int, before: set[int]) -> dict[int, int]:
    """The live processes below `pid` that are not in `before` (pid → start time)."""
    return {p: start_time(p) for p in descendants(pid) if p not in before}


def stop_all(pids: list[int] | dict[int, int], timeout: float = 5.0) -> None:
    """`stop` for many processes at once: SIGTERM to all, SIGKILL to those left after
    `timeout`. Each is identified by its start time: given (pid → start time, as read when
    it was found), else read now."""
    started = dict(pids) if isinstance(pids, dict) else {pid: start_time(pid) for pid in pids}
    for pid, st in started.items():
        if alive(pid, st):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while any(alive(p, st) for p, st in started.items()) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid, st in started.items():
        if alive(pid, st):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


def session_members(sid: int) -> list[int]:
    """PIDs of every live process (zombies left out: they run nothing and their parent or
    init reaps them) in session `sid`."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat(int(entry.name))
            if fields and int(fields[3]) == sid and fields[0] != "Z":
                out.append(int(entry.name))
    return out


def descendants(pid: int) -> list[int]:
    """PIDs of every live process below `pid` in the process tree, parents before children."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            fields = stat(int(entry.name))
            if fields and fields[0] != "Z":
                children.setdefault(int(fields[1]), []).append(int(entry.name))
    out: list[int] = []
    todo = list(children.get(pid, []))
    while todo:
        p = todo.pop(0)
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def sweep_session(sid: int, leader_started: int, timeout: float = 5.0) -> None:
    """Stop what is left of the session a detached supervisor led. The kernel does not
    hand out a PID that is still some session's id, so while members remain, the session
    is still ours — unless its leader's PID now names a different process."""
    if sid <= 1 or sid == os.getsid(0):
        return
    leader_now = start_time(sid)
    if leader_now and leader_started and leader_now != leader_started:
        return  # the id was reused by another session leader
    for pid in session_members(sid):
        if pid != os.getpid():
            stop(pid, start_time(pid), timeout)
