"""CPU seconds per component process over a bench's measured phase, from /proc/<pid>/stat.

The processes are the ones the cluster's context names: each component the supervisor
records (`kubera components`: apiserver replicas, schedulers, controller-managers, node
pools), etcd and the local Ray processes kubera started (`pids`), and the bench process
itself. Each is sampled at the start and at the end of the phase; a process that is gone or
was replaced (another start time) by the end is reported without a figure rather than
guessed at. The table divides each one's CPU seconds by the pods bound in the phase: the
input of the capacity model (kubera/bench/capacity.py).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

#: Component kinds in table order; Ray's own processes and the bench client come last.
KIND_ORDER = (
    "apiserver",
    "scheduler",
    "controller-manager",
    "node-pool",
    "etcd",
    "ray",
    "bench-client",
)


@dataclass(frozen=True)
class Proc:
    name: str
    kind: str
    pid: int


#: (start time in clock ticks since boot, user + system CPU seconds) of a pid, or None.
StatReader = Callable[[int], "tuple[int, float] | None"]


def read_stat(pid: int) -> tuple[int, float] | None:
    """/proc/<pid>/stat's starttime and utime + stime (in seconds), or None when gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            text = f.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: split after its last ')'.
    fields = text.rsplit(")", 1)[1].split()
    # fields[0] is field 3 (state): utime, stime are fields 14, 15; starttime is field 22.
    utime, stime, start = int(fields[11]), int(fields[12]), int(fields[19])
    return start, (utime + stime) / os.sysconf("SC_CLK_TCK")


def _local(rec: dict[str, Any]) -> bool:
    host = rec.get("host")
    return not host or host == socket.gethostname()


def processes(ctx: dict[str, Any], *, self_pid: int | None = None) -> list[Proc]:
    """Every process of the cluster context `ctx` (a context.json as a dict) that runs on
    this machine, and the bench process (`self_pid`, default this one)."""
    out: list[Proc] = []
    seen: set[int] = set()

    def add(name: str, kind: str, pid: Any) -> None:
        if pid and int(pid) not in seen:
            seen.add(int(pid))
            out.append(Proc(name, kind, int(pid)))

    for rec in ctx.get("components", []):
        if rec.get("state", "alive") == "alive" and _local(rec):
            add(rec["name"], rec.get("kind", rec["name"]), rec.get("pid"))
    if not any(p.kind == "apiserver" for p in out):
        add("apiserver", "apiserver", ctx.get("apiserver_pid"))
    for name, pid in sorted(ctx.get("pids", {}).items()):
        add(name, "etcd" if name == "etcd" else "ray" if name.startswith("ray") else name, pid)
    add("bench client", "bench-client", os.getpid() if self_pid is None else self_pid)
    return out


Sample = dict[int, "tuple[int, float] | None"]


def sample(procs: list[Proc], read: StatReader = read_stat) -> Sample:
    return {p.pid: read(p.pid) for p in procs}


def table(
    procs: list[Proc], before: Sample, after: Sample, pods: int, seconds: float
) -> dict[str, Any]:
    """The CPU-per-pod table: one row per process (cpu_s None when it died or was
    replaced meanwhile), and per kind the sums (`by_kind`, kinds in KIND_ORDER first)."""
    rows: list[dict[str, Any]] = []
    for p in procs:
        a, b = before.get(p.pid), after.get(p.pid)
        cpu = b[1] - a[1] if a is not None and b is not None and a[0] == b[0] else None
        rows.append(
            {
                "name": p.name,
                "kind": p.kind,
                "pid": p.pid,
                "cpu_s": cpu,
                "cpu_s_per_pod": None if cpu is None or pods <= 0 else cpu / pods,
                "cores": None if cpu is None or seconds <= 0 else cpu / seconds,
            }
        )
    kinds: list[str] = sorted(
        {str(r["kind"]) for r in rows},
        key=lambda k: (KIND_ORDER.index(k) if k in KIND_ORDER else len(KIND_ORDER), k),
    )
    by_kind: dict[str, dict[str, Any]] = {}
    for k in kinds:
        mine = [r for r in rows if r["kind"] == k and r["cpu_s"] is not None]
        used = sum(r["cpu_s"] for r in mine)
        by_kind[k] = {
            "processes": sum(1 for r in rows if r["kind"] == k),
            "cpu_s": used,
            "cpu_s_per_pod": used / pods if pods > 0 else 0.0,
            "cores": used / seconds if seconds > 0 else 0.0,
        }
    total = sum(v["cpu_s"] for v in by_kind.values())
    return {
        "seconds": seconds,
        "pods": pods,
        "processes": rows,
        "by_kind": by_kind,
        "total_cpu_s": total,
        "total_cpu_s_per_pod": total / pods if pods > 0 else 0.0,
    }


def render(t: dict[str, Any]) -> str:
    """The table as text: per kind, then per process."""
    lines = [
        f"  CPU per pod during the measured phase ({t['pods']} pods in {t['seconds']:.1f}s, "
        "from /proc/<pid>/stat):",
        f"    {'component':<28} {'procs':>5} {'CPU s':>8} {'ms/pod':>8} {'cores':>6}",
    ]
    for kind, v in t["by_kind"].items():
        lines.append(
            f"    {kind:<28} {v['processes']:>5} {v['cpu_s']:>8.2f} "
            f"{v['cpu_s_per_pod'] * 1000:>8.3f} {v['cores']:>6.2f}"
        )
    lines.append(
        f"    {'total':<28} {'':>5} {t['total_cpu_s']:>8.2f} "
        f"{t['total_cpu_s_per_pod'] * 1000:>8.3f} "
        f"{t['total_cpu_s'] / t['seconds'] if t['seconds'] > 0 else 0.0:>6.2f}"
    )
    missing = [r["name"] for r in t["processes"] if r["cpu_s"] is None]
    if missing:
        lines.append(f"    (no figure: gone or restarted during the phase: {', '.join(missing)})")
    return "\n".join(lines)
