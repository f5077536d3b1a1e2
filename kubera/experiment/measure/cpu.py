"""CPU seconds per pod of each component over a measurement window: the input of the
capacity model (capacity.py).

The collector reads every component process's CPU (utime + stime, /proc/PID/stat through
kubera.launch.procs; a process elsewhere by its own chaos-control Status) at the window's
start and at its end (`Collector.cpu_now`). A process that is gone or was replaced (another
PID) by the end has no figure rather than a guessed one. The table divides each one's CPU
seconds by the pods the window bound, and sums them per component kind (`KIND_ORDER`), as
`kubera bench` has always reported them.
"""

from __future__ import annotations

from typing import Any

#: Component kinds in table order; Ray's own processes and the runner (the process that
#: creates the pods and watches them: the bench client) come last.
KIND_ORDER = (
    "apiserver",
    "scheduler",
    "controller-manager",
    "node-pool",
    "etcd",
    "ray",
    "runner",
)

#: A process name's prefix → its kind (the collector names replicas `scheduler-0`, …).
PREFIXES = (
    ("scheduler", "scheduler"),
    ("controller-manager", "controller-manager"),
    ("pool-", "node-pool"),
    ("apiserver", "apiserver"),
    ("ray", "ray"),
)

#: Process name → (its PIDs, CPU seconds used so far).
CpuSample = dict[str, tuple[tuple[int, ...], float]]


def kind_of(name: str) -> str:
    """The component kind of a process named as the collector names it."""
    for prefix, kind in PREFIXES:
        if name.startswith(prefix):
            return kind
    return name


def used(before: CpuSample, after: CpuSample) -> dict[str, float | None]:
    """CPU seconds each process used between two samples; None for one that is gone or
    was replaced (other PIDs) by the second."""
    out: dict[str, float | None] = {}
    for name, (pids, cpu) in before.items():
        later = after.get(name)
        out[name] = (
            None if later is None or later[0] != pids else round(max(0.0, later[1] - cpu), 4)
        )
    return out


def table(cpu_s: dict[str, float | None], pods: int, seconds: float) -> dict[str, Any]:
    """The CPU-per-pod table: one row per process (`cpu_s` None when it died or was replaced
    meanwhile), and per kind the sums (`by_kind`, kinds in KIND_ORDER first)."""
    rows: list[dict[str, Any]] = []
    for name, cpu in cpu_s.items():
        rows.append(
            {
                "name": name,
                "kind": kind_of(name),
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
        spent = sum(r["cpu_s"] for r in mine)
        by_kind[k] = {
            "processes": sum(1 for r in rows if r["kind"] == k),
            "cpu_s": spent,
            "cpu_s_per_pod": spent / pods if pods > 0 else 0.0,
            "cores": spent / seconds if seconds > 0 else 0.0,
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


def demands(cpu_table: dict[str, Any]) -> dict[str, float]:
    """CPU seconds per pod per component kind: the capacity model's input."""
    return {k: v["cpu_s_per_pod"] for k, v in cpu_table.get("by_kind", {}).items()}


def render(t: dict[str, Any]) -> str:
    """The table as text: per kind, then the total."""
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
