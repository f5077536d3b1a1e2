"""`kubera bench nodes`: what hollow nodes cost and how fast their eviction managers react.

Each run starts a fresh `kubera up --nodes N` (detached, real etcd and Ray), creates
pods-per-node pods bound by nodeName (each using memory by the usage annotation), waits
until all run, then measures over a steady-state window:

- memory per hollow node: the pool actors' resident memory / N (and the apiserver's),
- CPU per 1,000 nodes: the pool actors' CPU seconds per wall second / (N / 1000),
- nodes kept Ready with leases on time: nodes whose Lease was renewed within its
  duration and whose Ready condition is True, at the end of the window,

then injects memory pressure on `--pressure-nodes` nodes at once (a node-level usage that
leaves 50Mi below the 100Mi hard threshold, so one pod's eviction resolves it) and reports
the time until every one of them has evicted a pod, in monitoring periods.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path

import grpc

from kubera.errors import CliError
from kubera.launch import procs
from kubera.testing import Cluster
from services.api.quantity import parse_quantity
from services.kubelet import default_template

#: Memory every bench pod uses (its usage annotation), bytes.
POD_MEMORY = 100 * 2**20


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "nodes", help="hollow-node cost (memory, CPU, leases) and eviction reaction"
    )
    p.add_argument("--nodes", type=int, default=1000)
    p.add_argument("--nodes-per-pool", type=int, default=1000)
    p.add_argument("--pods-per-node", type=int, default=10)
    p.add_argument("--window", type=float, default=60.0, help="steady-state seconds measured")
    p.add_argument("--pressure-nodes", type=int, default=500)
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


async def _measure(ctx: dict, args: argparse.Namespace) -> dict[str, float]:
    from protos.kubera.v1 import nodepool_pb2 as npb
    from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc
    from services.api import codec
    from services.api.kinds import BY_KIND
    from services.client import Client
    from services.clock import parse_rfc3339

    pods_kind, nodes_kind, leases = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Lease"]
    pools = ctx["node_pools"]
    pids = [p["pid"] for p in pools]
    out: dict[str, float] = {}
    async with Client(ctx["apiserver"], timeout=300) as c:
        nodes, _ = await c.list(nodes_kind)
        names = sorted(n.metadata.name for n in nodes)
        if len(names) != args.nodes:
            raise CliError(f"bench: expected {args.nodes} nodes, found {len(names)}")
        usage = json.dumps({"memory": {"start": str(POD_MEMORY)}})
        t0 = time.monotonic()
        batch = []
        total = 0
        for i, name in enumerate(names):
            for j in range(args.pods_per_node):
                doc = {
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
                batch.append(codec.decode(doc, validate="strict").obj)
                if len(batch) == 500:
                    res = await c.batch_create(batch)
                    total += sum(r.error is None for r in res)
                    batch = []
        if batch:
            res = await c.batch_create(batch)
            total += sum(r.error is None for r in res)
        out["pods_created"] = total
        out["create_s"] = time.monotonic() - t0

        async def running() -> int:
            items, _ = await c.list(pods_kind, field_selector="status.phase=Running")
            return len(items)

        deadline = time.monotonic() + 900
        while (n := await running()) < total:
            if time.monotonic() > deadline:
                raise CliError(f"bench: only {n}/{total} pods Running after 900s")
            await asyncio.sleep(2)
        out["all_running_s"] = time.monotonic() - t0

        # steady state
        cpu0 = sum(_proc_cpu(p) for p in pids)
        busy0, _ = _machine_busy()
        w0 = time.monotonic()
        await asyncio.sleep(args.window)
        cpu1 = sum(_proc_cpu(p) for p in pids)
        busy1, _ = _machine_busy()
        wall = time.monotonic() - w0
        # everything on the machine: pools, apiserver, etcd, controller-manager, Ray
        out["machine_cpu_cores"] = (busy1 - busy0) / wall
        out["machine_cpu_cores_per_1000_nodes"] = out["machine_cpu_cores"] / (args.nodes / 1000)
        rss = sum(_proc_rss(p) for p in pids)
        out["pool_cpu_cores"] = (cpu1 - cpu0) / wall
        out["cpu_cores_per_1000_nodes"] = out["pool_cpu_cores"] / (args.nodes / 1000)
        out["pool_rss_mb"] = rss / 2**20
        out["memory_per_node_kb"] = rss / args.nodes / 1024
        now = time.time()
        ls, _ = await c.list(leases, namespace="kube-node-lease")
        fresh = {
            lease.metadata.name
            for lease in ls
            if now - parse_rfc3339(lease.spec.renew_time) <= lease.spec.lease_duration_seconds
        }
        nodes, _ = await c.list(nodes_kind)
        ready = {
            n.metadata.name
            for n in nodes
            if any(cd.type == "Ready" and cd.status == "True" for cd in n.status.conditions)
            and not any(t.key.startswith("node.kubernetes.io/unreachable") for t in n.spec.taints)
        }
        out["nodes_ready_leases_on_time"] = len(fresh & ready)
        out["pods_running"] = await running()

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

        async def follow() -> None:
            async for ev in c.watch(pods_kind, resource_version=rv):
                p = ev.object
                if p.status.phase == "Failed" and p.status.reason == "Evicted":
                    evicted_nodes.add(p.spec.node_name)
                    if evicted_nodes >= set(targets):
                        return

        watcher = asyncio.create_task(follow())
        t_inject = time.monotonic()
        for p in pools:
            async with grpc.aio.insecure_channel(p["address"]) as ch:
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
        f"\nkubera bench nodes — {args.nodes} nodes × {args.pods_per_node} pods, median of {args.repeat}"
    )
    rows = [
        ("kubera up (nodes registered)", f"{med['up_s']:.1f} s"),
        (
            "pods created (bound by nodeName)",
            f"{med['pods_created']:.0f} in {med['create_s']:.1f} s",
        ),
        ("all pods Running after", f"{med['all_running_s']:.1f} s"),
        (
            "memory per hollow node",
            f"{med['memory_per_node_kb']:.1f} KiB (pools {med['pool_rss_mb']:.0f} MiB)",
        ),
        ("CPU per 1,000 nodes (steady), pools", f"{med['cpu_cores_per_1000_nodes']:.3f} cores"),
        (
            "CPU per 1,000 nodes, whole machine",
            f"{med['machine_cpu_cores_per_1000_nodes']:.3f} cores (apiserver, etcd, controllers incl.)",
        ),
        ("nodes Ready, leases on time", f"{med['nodes_ready_leases_on_time']:.0f} / {args.nodes}"),
        ("pods Running", f"{med['pods_running']:.0f}"),
        (
            f"eviction reaction, {med['pressure_nodes']:.0f} nodes",
            f"{med['eviction_reaction_s']:.1f} s = {med['eviction_reaction_periods']:.2f} monitoring periods",
        ),
    ]
    width = max(len(a) for a, _ in rows)
    for a, b in rows:
        print(f"  {a:<{width}}  {b}")
    if args.output:
        Path(args.output).write_text(json.dumps({"median": med, "runs": runs}, indent=2) + "\n")
        print(f"\nfigures written to {args.output}")
    return 0
