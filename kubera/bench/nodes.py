"""`kubera bench nodes`: what hollow nodes cost and how fast their eviction managers react.

Each run starts a fresh `kubera up --nodes N` (detached, real etcd and Ray, no scheduler),
creates pods-per-node pods bound by nodeName (each using memory by the usage annotation),
waits until all run (the pools' own counts, then the apiserver's), then measures over a
steady-state window with nothing changing but leases and heartbeats:

- nodes Ready: Ready=True and no unreachable taint, at the end of the window;
- leases on time: every lease renewal of the window watched as it lands; a renewal is
  late by how long after (previous renewTime + renew interval) it arrived; a lease is on
  time when none of its renewals was more than LATE_GRACE late and it never expired;
- memory: each component's resident memory (pools: also per hollow node);
- CPU at idle: each component's CPU seconds per wall second over the window, and the
  whole machine's (which includes whatever else runs on it);

then injects memory pressure on `--pressure-nodes` nodes at once (a node-level usage that
leaves 50Mi below the 100Mi hard threshold, so one pod's eviction resolves it) and reports
the time until every one of them has evicted a pod, in monitoring periods.

At 10,000 nodes x 10 pods (100,000 pods): `kubera bench nodes --nodes 10000
--pods-per-node 10 --repeat 1` (the pools default to 2,500 nodes each).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

import grpc

from kubera.errors import CliError
from kubera.launch import procs
from kubera.launch.credentials import admin_channel
from kubera.testing import Cluster
from services.api.machinery.errors import AlreadyExistsError, UnavailableError
from services.api.machinery.quantity import parse_quantity
from services.kubelet import default_template

#: Memory every bench pod uses (its usage annotation), bytes.
POD_MEMORY = 100 * 2**20
#: The pools' lease renew interval and lease duration (PoolConfig's defaults), seconds.
RENEW_INTERVAL = 10.0
#: How late a renewal may land (past previous renewTime + RENEW_INTERVAL) and still count
#: as on time, seconds.
LATE_GRACE = 1.0
#: Pod creates in flight at once (each a batch of CREATE_BATCH).
CREATE_BATCH = 500
CREATES_IN_FLIGHT = 2
CREATE_ATTEMPTS = 5


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "nodes", help="hollow-node cost (memory, CPU, leases) and eviction reaction"
    )
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--nodes-per-pool", type=int, default=2500)
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--window", type=float, default=60.0, help="steady-state seconds measured")
    p.add_argument(
        "--pressure-nodes", type=int, default=500, help="nodes put under memory pressure (0: none)"
    )
    p.add_argument(
        "--running-timeout", type=float, default=1800.0, help="seconds for all pods to run"
    )
    p.add_argument(
        "--settle", type=float, default=15.0, help="seconds between all Running and the window"
    )
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--output", default="")
    p.set_defaults(func=cmd_bench_nodes)


def _proc_cpu(pid: int) -> float:
    used = procs.usage(pid)
    if used is None:
        raise ProcessLookupError(f"process {pid} is gone")
    return used[0]


def _machine_busy() -> tuple[float, float]:
    """(busy, total) CPU seconds of the whole machine since boot, from /proc/stat."""
    parts = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = parts[3] + (parts[4] if len(parts) > 4 else 0)
    tick = os.sysconf("SC_CLK_TCK")
    return (sum(parts) - idle) / tick, sum(parts) / tick


def _proc_rss(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def _components(ctx: dict) -> dict[str, list[int]]:
    """Component -> its process ids, from the context (pools summed as one)."""
    out: dict[str, list[int]] = {"pools": [p["pid"] for p in ctx["node_pools"]]}
    for c in ctx.get("components", []):
        if c.get("kind") in ("apiserver", "controller-manager", "scheduler") and c.get("pid"):
            out.setdefault(c["kind"], []).append(c["pid"])
    etcd = ctx.get("pids", {}).get("etcd")
    if etcd:
        out["etcd"] = [etcd]
    return out


def _cpu_rss(pids: list[int]) -> tuple[float, int]:
    cpu, rss = 0.0, 0
    for pid in pids:
        cpu += _proc_cpu(pid)
        rss += _proc_rss(pid)
    return cpu, rss


async def _pool_phases(pools: list[dict]) -> dict[str, int]:
    """Pod phases as the pools' kubelets see them (cheap: no pod crosses the wire)."""
    from protos.kubera.v1 import nodepool_pb2 as npb
    from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc

    total: dict[str, int] = {}
    for p in pools:
        async with admin_channel(p["address"]) as ch:
            resp = await npb_grpc.NodePoolStub(ch).Stats(npb.PoolStatsRequest(), timeout=30)
        for phase, n in json.loads(resp.json)["pods"].items():
            total[phase] = total.get(phase, 0) + n
    return total


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
                self.late[name] = max(self.late[name], overdue)
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


async def _create_pods(c: Any, names: list[str], per_node: int) -> int:
    from services.api.machinery import codec

    usage = json.dumps({"memory": {"start": str(POD_MEMORY)}})
    docs = [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"p-{i}-{j}",
                "namespace": "default",
                "annotations": {"kubera.io/usage": usage},
            },
            "spec": {
                "nodeName": name,
                "containers": [
                    {
                        "name": "c",
                        "image": "registry.k8s.io/pause:3.9",
                        "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
                    }
                ],
            },
        }
        for j in range(per_node)  # round the nodes: every pool gets work from the start
        for i, name in enumerate(names)
    ]
    batches = [docs[k : k + CREATE_BATCH] for k in range(0, len(docs), CREATE_BATCH)]
    created = 0
    gate = asyncio.Semaphore(CREATES_IN_FLIGHT)

    async def one(batch: list[dict]) -> None:
        nonlocal created
        async with gate:  # decoded when its turn comes: sending starts at once
            objs = [codec.decode(d, validate="strict").obj for d in batch]
            for attempt in range(CREATE_ATTEMPTS):
                try:
                    res = await c.batch_create(objs)
                    break
                except UnavailableError as e:  # etcd slow on a loaded machine: again
                    if attempt == CREATE_ATTEMPTS - 1:
                        raise
                    print(f"  pod create: {e}; retrying", flush=True)
                    await asyncio.sleep(1.0 + attempt)
        # a retried batch finds the pods its failed attempt did create
        created += sum(r.error is None or isinstance(r.error, AlreadyExistsError) for r in res)

    await asyncio.gather(*(one(b) for b in batches))
    return created


async def _measure(ctx: dict, args: argparse.Namespace) -> dict[str, float]:
    from protos.kubera.v1 import nodepool_pb2 as npb
    from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client
    from services.clock import parse_rfc3339

    pods_kind, nodes_kind, leases = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]
    pools = ctx["node_pools"]
    components = _components(ctx)
    out: dict[str, float] = {}
    async with Client(ctx["apiserver"], timeout=300) as c:
        nodes, _ = await c.list(nodes_kind)
        names = sorted(n.metadata.name for n in nodes)
        if len(names) != args.nodes:
            raise CliError(f"bench: expected {args.nodes} nodes, found {len(names)}")
        t0 = time.monotonic()
        total = await _create_pods(c, names, args.pods_per_node)
        out["pods_created"] = total
        out["create_s"] = time.monotonic() - t0

        async def running() -> int:
            items, _ = await c.list(pods_kind, field_selector="status.phase=Running")
            return len(items)

        async def patiently(count: Any) -> int:
            """A count, or -1 when asking failed (a loaded machine): asked again later."""
            try:
                return int(await count())
            except (UnavailableError, grpc.aio.AioRpcError) as e:
                print(f"  counting pods: {e}; again", flush=True)
                return -1

        async def pools_running() -> int:
            return (await _pool_phases(pools)).get("Running", 0)

        deadline = time.monotonic() + args.running_timeout
        for count, every in ((pools_running, 2.0), (running, 5.0)):  # then the writes landed
            while (n := await patiently(count)) < total:
                if time.monotonic() > deadline:
                    raise CliError(
                        f"bench: only {n}/{total} pods Running after {args.running_timeout}s"
                    )
                await asyncio.sleep(every)
        out["all_running_s"] = time.monotonic() - t0
        await asyncio.sleep(args.settle)

        # steady state: nothing changes but leases and heartbeats
        ls, rv = await c.list(leases, namespace="kube-node-lease")
        duration = max((lease.spec.lease_duration_seconds for lease in ls), default=40)
        watch = LeaseWatch({x.metadata.name: parse_rfc3339(x.spec.renew_time) for x in ls})

        async def follow() -> None:
            async for ev in c.watch(leases, namespace="kube-node-lease", resource_version=rv):
                lease = ev.object
                if ev.type in ("ADDED", "MODIFIED"):
                    watch.saw(
                        lease.metadata.name, parse_rfc3339(lease.spec.renew_time), time.time()
                    )

        watcher = asyncio.create_task(follow())
        before = {k: _cpu_rss(v)[0] for k, v in components.items()}
        busy0, _ = _machine_busy()
        w0 = time.monotonic()
        await asyncio.sleep(args.window)
        after = {k: _cpu_rss(v) for k, v in components.items()}
        busy1, _ = _machine_busy()
        wall = time.monotonic() - w0
        watcher.cancel()
        await asyncio.gather(watcher, return_exceptions=True)
        out.update(watch.close(time.time(), duration))
        out["machine_cpu_pct"] = 100 * (busy1 - busy0) / wall
        for k, (cpu, rss) in after.items():
            out[f"cpu_pct_{k}"] = 100 * (cpu - before[k]) / wall
            out[f"rss_mb_{k}"] = rss / 2**20
        out["memory_per_node_kb"] = after["pools"][1] / args.nodes / 1024
        out["pool_cpu_pct_per_1000_nodes"] = out["cpu_pct_pools"] / (args.nodes / 1000)

        nodes, _ = await c.list(nodes_kind)
        out["nodes_ready"] = sum(
            1
            for n in nodes
            if any(cd.type == "Ready" and cd.status == "True" for cd in n.status.conditions)
            and not any(t.key.startswith("node.kubernetes.io/unreachable") for t in n.spec.taints)
        )
        out["pods_running"] = await running()

        if args.pressure_nodes <= 0:
            return out
        # eviction reaction
        k = min(args.pressure_nodes, len(names))
        targets = names[:: max(1, len(names) // k)][:k]
        # leave 50Mi under the 100Mi hard threshold: one pod's eviction (100Mi) resolves it
        kind = default_template().kinds[0]
        cap = parse_quantity(kind.capacity["memory"]).int_value()
        pods_use = args.pods_per_node * POD_MEMORY
        inject = cap - kind.system["memory"] - pods_use - 50 * 2**20  # 50Mi left available
        _, rv = await c.list(pods_kind, field_selector="status.phase=Failed")
        evicted_nodes: set[str] = set()

        async def evictions() -> None:
            async for ev in c.watch(pods_kind, resource_version=rv):
                p = ev.object
                if p.status.phase == "Failed" and p.status.reason == "Evicted":
                    evicted_nodes.add(p.spec.node_name)
                    if evicted_nodes >= set(targets):
                        return

        watcher = asyncio.create_task(evictions())
        t_inject = time.monotonic()
        for p in pools:
            async with admin_channel(p["address"]) as ch:
                await npb_grpc.NodePoolStub(ch).InjectUsage(
                    npb.InjectUsageRequest(nodes=targets, usage={"memory": str(inject)}),
                    timeout=30,
                )
        await asyncio.wait_for(watcher, 300)
        reaction = time.monotonic() - t_inject
        out["pressure_nodes"] = k
        out["eviction_reaction_s"] = reaction
        out["eviction_reaction_periods"] = reaction * ctx.get("time_scale", 1.0) / 10.0
    return out


def _report(args: argparse.Namespace, med: dict[str, float]) -> list[tuple[str, str]]:
    comps = sorted(k[len("rss_mb_") :] for k in med if k.startswith("rss_mb_"))
    rows = [
        ("kubera up (nodes registered)", f"{med['up_s']:.1f} s"),
        (
            "pods created (bound by nodeName)",
            f"{med['pods_created']:.0f} in {med['create_s']:.1f} s",
        ),
        ("time to all pods Running", f"{med['all_running_s']:.1f} s"),
        ("nodes Ready (end of window)", f"{med['nodes_ready']:.0f} / {args.nodes}"),
        (
            "leases on time",
            f"{med['leases_on_time']:.0f} / {med['leases']:.0f} = "
            f"{med['leases_on_time_fraction']:.4f} (late > {LATE_GRACE:g} s: not on time; "
            f"expired {med['leases_expired']:.0f})",
        ),
        (
            "lease lateness",
            f"worst {med['lease_lateness_worst_s']:.2f} s, p99 {med['lease_lateness_p99_s']:.2f} s "
            f"over {med['lease_renewals']:.0f} renewals",
        ),
        ("pods Running (apiserver, end of window)", f"{med['pods_running']:.0f}"),
        (
            "memory per hollow node",
            f"{med['memory_per_node_kb']:.1f} KiB (pools {med['rss_mb_pools']:.0f} MiB)",
        ),
        *[(f"RSS {k}", f"{med['rss_mb_' + k]:.0f} MiB") for k in comps],
        *[(f"CPU at idle, {k}", f"{med['cpu_pct_' + k]:.1f} % of a core") for k in comps],
        (
            "CPU at idle, pools per 1,000 nodes",
            f"{med['pool_cpu_pct_per_1000_nodes']:.2f} % of a core",
        ),
        ("CPU at idle, whole machine", f"{med['machine_cpu_pct']:.1f} % (of 100 per core)"),
    ]
    if "eviction_reaction_s" in med:
        rows.append(
            (
                f"eviction reaction, {med['pressure_nodes']:.0f} nodes",
                f"{med['eviction_reaction_s']:.1f} s = "
                f"{med['eviction_reaction_periods']:.2f} monitoring periods",
            )
        )
    return rows


def cmd_bench_nodes(args: argparse.Namespace) -> int:
    if min(args.nodes, args.nodes_per_pool, args.repeat) < 1 or args.pods_per_node < 0:
        raise CliError("bench: counts must be >= 1 (pods-per-node >= 0)")
    runs = []
    for r in range(args.repeat):
        cluster = Cluster()
        try:
            up = cluster.up(
                "--nodes",
                str(args.nodes),
                "--nodes-per-pool",
                str(args.nodes_per_pool),
                "--no-scheduler",
            )
            print(f"run {r + 1}/{args.repeat}: up with {args.nodes} nodes in {up:.1f}s", flush=True)
            fig = asyncio.run(_measure(cluster.context, args))
            fig["up_s"] = up
            print("  " + json.dumps({k: round(v, 3) for k, v in fig.items()}), flush=True)
            runs.append(fig)
        finally:
            cluster.down()
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    print(
        f"\nkubera bench nodes — {args.nodes} nodes × {args.pods_per_node} pods "
        f"({args.nodes_per_pool} per pool), median of {args.repeat}"
    )
    rows = _report(args, med)
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"  {a:<{width}}  {b}")
    if args.output:
        Path(args.output).write_text(json.dumps({"median": med, "runs": runs}, indent=2) + "\n")
        print(f"\nfigures written to {args.output}")
    return 0
