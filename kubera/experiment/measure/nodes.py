"""What hollow nodes cost and how they keep up: the figures `kubera bench nodes` printed,
measured in every run whose cluster has hollow nodes (as the old bench defined them).

The steady window is the run's last `sleep` op (nodes.yaml: after every pod runs and a
settle sleep, `window` seconds with nothing changing but leases and heartbeats); a run
without one measures over all of it.

- leases on time (`LeaseWatch`): every renewal of a Lease in kube-node-lease seen as it
  lands (the collector's lease watch, `LeaseLog`); a renewal is late by how long after
  (previous renewTime + RENEW_INTERVAL) it arrived; a lease is on time when none of its
  renewals in the window was more than LATE_GRACE late and it was not overdue at the
  window's end; expired: not renewed for a lease duration at the window's end;
- nodes Ready: Ready=True and no unreachable taint (`ready_nodes`), counted once as the
  run ends (its last op: the check's settle after the window);
- memory per hollow node: the node pools' summed RSS at the window's end / nodes;
- CPU at idle: each component's mean cores over the window (its `cpu:` series), the pools'
  per 1,000 nodes, and the whole machine's (`machine_cpu`, from /proc/stat: whatever else
  runs on it included);
- eviction reaction (`evict` op, opexec.py): its own figure in `run.nodes`.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

#: The pools' lease renew interval (PoolConfig's default), seconds.
RENEW_INTERVAL = 10.0
#: How late a renewal may land (past previous renewTime + RENEW_INTERVAL) and still count
#: as on time, seconds.
LATE_GRACE = 1.0
#: The hollow kubelets' node monitoring period (the eviction manager's), seconds.
MONITOR_PERIOD = 10.0
NODE_LEASES = "kube-node-lease"
UNREACHABLE = "node.kubernetes.io/unreachable"


class LeaseWatch:
    """Every lease renewal landing during the window: how late each was."""

    def __init__(self, renew_times: dict[str, float]) -> None:
        #: lease name -> the renewTime last seen
        self.last = dict(renew_times)
        self.late: dict[str, float] = dict.fromkeys(renew_times, 0.0)
        self.lateness: list[float] = []
        self.renewals = 0

    def saw(self, name: str, renew_time: float, arrived: float) -> None:
        prev = self.last.get(name)
        self.last[name] = renew_time
        if prev is None or renew_time <= prev:
            return
        self.renewals += 1
        lateness = max(0.0, arrived - (prev + RENEW_INTERVAL))
        self.lateness.append(lateness)
        self.late[name] = max(self.late.get(name, 0.0), lateness)

    def close(self, now: float, duration: float) -> dict[str, float]:
        """Figures at the window's end; a lease not renewed since is late by its age."""
        expired = 0
        for name, renewed in self.last.items():
            overdue = now - (renewed + RENEW_INTERVAL)
            if overdue > 0:
                self.late[name] = max(self.late.get(name, 0.0), overdue)
            expired += now - renewed > duration
        on_time = sum(1 for v in self.late.values() if v <= LATE_GRACE)
        ordered = sorted(self.lateness) or [0.0]
        return {
            "leases": len(self.last),
            "lease_renewals": self.renewals,
            "leases_on_time": on_time,
            "leases_on_time_fraction": on_time / max(1, len(self.last)),
            "leases_expired": expired,
            "lease_lateness_p99_s": ordered[int(0.99 * (len(ordered) - 1))],
            "lease_lateness_worst_s": max(self.late.values(), default=0.0),
        }


class LeaseLog:
    """Every node Lease renewTime seen during a run, compactly (10,000 nodes renew 60,000
    times a minute): when it arrived (run seconds), which lease, its renewTime (unix s)."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self._index: dict[str, int] = {}
        self.t = array("d")
        self.lease = array("l")
        self.renew = array("d")
        self.duration = 0.0  # the longest leaseDurationSeconds seen

    def saw(self, name: str, renew_time: float, t: float, duration: float = 0.0) -> None:
        i = self._index.get(name)
        if i is None:
            i = self._index[name] = len(self.names)
            self.names.append(name)
        self.t.append(t)
        self.lease.append(i)
        self.renew.append(renew_time)
        self.duration = max(self.duration, duration)

    def __len__(self) -> int:
        return len(self.t)

    def figures(self, start: float, end: float, t0: float) -> dict[str, float]:
        """`LeaseWatch`'s figures over the window [start, end] (run seconds; `t0`: the
        run's start as a unix time): the renewTimes seen before it are where it starts."""
        before: dict[str, float] = {}
        inside: list[int] = []
        for k, t in enumerate(self.t):
            if t <= start:
                before[self.names[self.lease[k]]] = self.renew[k]
            elif t <= end:
                inside.append(k)
        watch = LeaseWatch(before)
        for k in inside:
            watch.saw(self.names[self.lease[k]], self.renew[k], t0 + self.t[k])
        return watch.close(t0 + end, self.duration or 40.0)


def ready_nodes(nodes: Iterable[Any]) -> int:
    """Nodes with Ready=True and no unreachable taint."""
    return sum(
        1
        for n in nodes
        if any(c.type == "Ready" and c.status == "True" for c in n.status.conditions)
        and not any(t.key.startswith(UNREACHABLE) for t in n.spec.taints)
    )


def steady_window(phases: Sequence[Any], duration: float) -> tuple[float, float]:
    """The run's last `sleep` phase (start, end), else the whole run."""
    sleeps = [p for p in phases if p.opcode == "sleep"]
    if not sleeps:
        return 0.0, duration
    return sleeps[-1].start, sleeps[-1].end


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def window_figures(
    series: dict[str, list[float]], start: float, end: float, pools: Sequence[str], nodes: int
) -> dict[str, float]:
    """Memory and CPU at idle over the window from the run's 1-second series: each
    component's mean cores (`cpu_pct_<name>`, % of a core; pools summed as `pools`), RSS at
    the window's end (`rss_mb_<name>`), memory per hollow node, the pools' CPU per 1,000
    nodes and the whole machine's CPU (% of one core, as /proc/stat counts it). A process
    with no RSS at the window's end (killed during the run) is left out."""
    t = series.get("t", [])
    rows = [i for i, x in enumerate(t) if start <= x < end] or ([len(t) - 1] if t else [])
    if not rows:
        return {}
    last = rows[-1]
    out: dict[str, float] = {}
    cpu: dict[str, float] = {}
    rss: dict[str, float] = {}
    pool_set = set(pools)
    for key, col in series.items():
        kind, _, name = key.partition(":")
        if kind not in ("cpu", "rss_mb") or not name or ":" in name:
            continue
        group = "pools" if name in pool_set else name
        if kind == "cpu":
            cpu[group] = cpu.get(group, 0.0) + _mean([col[i] for i in rows])
        else:
            rss[group] = rss.get(group, 0.0) + col[last]
    gone = {name for name, v in rss.items() if v <= 0}  # a process dead by the window's end
    for name, v in sorted(cpu.items()):
        if name not in gone:
            out[f"cpu_pct_{name}"] = round(100 * v, 3)
    for name, v in sorted(rss.items()):
        if name not in gone:
            out[f"rss_mb_{name}"] = round(v, 2)
    if "machine_cpu" in series:
        out["machine_cpu_pct"] = round(100 * _mean([series["machine_cpu"][i] for i in rows]), 3)
    if nodes > 0 and "rss_mb_pools" in out:
        out["memory_per_node_kb"] = round(out["rss_mb_pools"] * 1024 / nodes, 2)
    if nodes > 0 and "cpu_pct_pools" in out:
        out["pool_cpu_pct_per_1000_nodes"] = round(out["cpu_pct_pools"] / (nodes / 1000), 4)
    return out


def reaction_periods(seconds: float, time_scale: float = 1.0) -> float:
    """An eviction reaction in the kubelets' monitoring periods (their clock runs
    `time_scale` times as fast as the wall's)."""
    return seconds * time_scale / MONITOR_PERIOD


def render(figures: dict[str, float]) -> list[str]:
    """The figures as `kubera bench nodes` printed them (the ones present)."""
    f = figures
    lines: list[str] = []
    if "nodes" in f:
        lines.append(
            f"  nodes Ready (as the run ends): {f.get('nodes_ready', 0):.0f} / {f['nodes']:.0f}"
        )
    if "leases" in f:
        lines.append(
            f"  leases on time: {f['leases_on_time']:.0f} / {f['leases']:.0f} = "
            f"{f['leases_on_time_fraction']:.4f} (late > {LATE_GRACE:g} s: not on time; "
            f"expired {f['leases_expired']:.0f})"
        )
        lines.append(
            f"  lease lateness: worst {f['lease_lateness_worst_s']:.2f} s, "
            f"p99 {f['lease_lateness_p99_s']:.2f} s over {f['lease_renewals']:.0f} renewals"
        )
    if "memory_per_node_kb" in f:
        lines.append(
            f"  memory per hollow node: {f['memory_per_node_kb']:.1f} KiB "
            f"(pools {f['rss_mb_pools']:.0f} MiB)"
        )
    comps = sorted(k[len("rss_mb_") :] for k in f if k.startswith("rss_mb_"))
    lines += [f"  RSS {k}: {f['rss_mb_' + k]:.0f} MiB" for k in comps]
    lines += [
        f"  CPU at idle, {k}: {f['cpu_pct_' + k]:.1f} % of a core"
        for k in comps
        if "cpu_pct_" + k in f
    ]
    if "pool_cpu_pct_per_1000_nodes" in f:
        lines.append(
            f"  CPU at idle, pools per 1,000 nodes: {f['pool_cpu_pct_per_1000_nodes']:.2f} % of a core"
        )
    if "machine_cpu_pct" in f:
        lines.append(
            f"  CPU at idle, whole machine: {f['machine_cpu_pct']:.1f} % (of 100 per core)"
        )
    if "eviction_reaction_s" in f:
        lines.append(
            f"  eviction reaction, {f['pressure_nodes']:.0f} nodes: "
            f"{f['eviction_reaction_s']:.1f} s = {f['eviction_reaction_periods']:.2f} "
            "monitoring periods"
        )
    return lines
