"""What a component process says about itself, and whether a PID it gives is ours to read.

Every component (apiserver, scheduler and controller-manager replicas, node pools) reports
`self_report()` in its health() and its chaos control's Status: its PID, CPU seconds
(utime + stime) and RSS bytes read from its own /proc/self, its start time, and where it
runs — the hostname, the kernel's boot id and its PID namespace. A PID names a process only
inside one PID namespace of one running kernel: `is_local(report)` says whether the
reporter's PID namespace is this process's (same boot id and same PID namespace; a report
without a namespace falls back to the hostname), so /proc and signals may be used on it.
Anything else (another machine of a Ray cluster, another container) is reached through its
figures and its chaos control RPCs instead.
"""

from __future__ import annotations

import os
import socket
from functools import cache
from typing import Any

#: Clock ticks per second and the page size, for /proc/self/stat.
TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


@cache
def boot_id() -> str:
    """The running kernel's boot id ("" when /proc does not say)."""
    return _read("/proc/sys/kernel/random/boot_id")


@cache
def pid_namespace() -> str:
    """This process's PID namespace, e.g. "pid:[4026531836]" ("" when unreadable)."""
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def where() -> dict[str, str]:
    """Where this process runs: hostname, boot id, PID namespace."""
    return {"host": socket.gethostname(), "boot_id": boot_id(), "pid_ns": pid_namespace()}


def stat_fields(pid: int | str = "self") -> list[str] | None:
    """Fields 3… of /proc/PID/stat (after the command name), or None."""
    text = _read(f"/proc/{pid}/stat")
    if ") " not in text:
        return None
    return text.rsplit(") ", 1)[1].split()


def self_report() -> dict[str, Any]:
    """This process: pid, start time (clock ticks since boot), CPU seconds, RSS bytes,
    and where() it runs."""
    fields = stat_fields()
    cpu = rss = 0.0
    start = 0
    if fields is not None:
        cpu = (int(fields[11]) + int(fields[12])) / TICKS
        start = int(fields[19])
        rss = float(int(fields[21]) * PAGE)
    return {
        "pid": os.getpid(),
        "start_ticks": start,
        "cpu_seconds": cpu,
        "rss_bytes": rss,
        **where(),
    }


def is_local(report: Any) -> bool:
    """Whether the process `report` describes (a self_report() dict, a replica record or a
    Status message) shares this process's PID namespace, so its PID may be read in /proc
    and signalled. Without any locality field (an older record) it is taken as local."""
    get = report.get if isinstance(report, dict) else lambda k: getattr(report, k, "")
    theirs_boot, theirs_ns, theirs_host = get("boot_id"), get("pid_ns"), get("host")
    if not (theirs_boot or theirs_ns or theirs_host):
        return True
    if theirs_boot and boot_id() and theirs_boot != boot_id():
        return False  # another kernel: another machine
    if theirs_ns and pid_namespace():
        return bool(theirs_ns == pid_namespace())
    return bool(theirs_host == socket.gethostname())
