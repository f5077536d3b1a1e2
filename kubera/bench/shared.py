"""`kubera bench shared-state`: Omega's measures with 1, 2 and 4 active schedulers on the
same load, through the real apiserver and etcd.

For each K (`--schedulers 1,2,4`) and each repeat, a fresh cluster starts without a
scheduler (`kubera up --no-scheduler --no-controllers`); the nodes are created, then K
scheduler replicas start, each in its own OS process (this module's `replica` entry point,
stopped by PID with SIGTERM, then SIGKILL), with SharedState(i, K, partition): their binds
are checked against the nodes' allocation records. The pods are created (batched) and
every bind is timestamped from a watch. Reported per K (the median run by throughput):
pods bound per second, conflict fraction (allocation conflicts per successful bind) and
lost pods (binds another replica won first, "none" partition), useful and wasted busy
seconds per scheduler (scheduling cycles; see services/scheduler/omega.py), the mean bind
latency, queue wait p50/p90/p99 over every bound pod, attempts per pod, and
a final check from the listed pods and nodes that no node is overcommitted.

The load: nodes of 4 cpu / 16Gi / 110 pods; pods request a mix of 0.5×, 1× and 1.5× a base
size chosen so that all pods together request `--fill` of the cluster's cpu and memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from kubera.bench.harness import count_binds, create_all
from kubera.errors import CliError
from kubera.testing import Cluster

NODE_CPU_M = 4000
NODE_MEMORY_MI = 16 * 1024
NODE_PODS = 110
SIZES = (0.5, 1.0, 1.5)
#: Seconds a replica may take to sync its informers, and to stop after SIGTERM.
READY_TIMEOUT = 120.0
STOP_TIMEOUT = 30.0
#: How long a replica waits for its binds in flight after SIGTERM: 500 × 20 ms = 10 s.
DRAIN_POLLS, DRAIN_POLL_S = 500, 0.02


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "shared-state",
        help="Omega shared-state scheduling: throughput and conflicts with K active schedulers",
    )
    p.add_argument(
        "--schedulers",
        default="1,2,4",
        help="comma-separated counts of active schedulers, one run set each (default 1,2,4)",
    )
    p.add_argument("--nodes", type=int, default=500)
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument(
        "--fill",
        type=float,
        default=0.85,
        help="fraction of the cluster's cpu and memory all pods request together (default 0.85)",
    )
    p.add_argument(
        "--partition",
        choices=("hash", "none"),
        default="hash",
        help="hash: each pod belongs to one scheduler; none: every scheduler tries every pod",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs per K; the median is reported")
    p.add_argument(
        "--timeout", type=float, default=600.0, help="seconds allowed for all pods to bind"
    )
    p.add_argument("--seed", type=int, default=1, help="seed of the pod sizes and their order")
    p.add_argument("--output", default="", help="also write the report as JSON here")
    p.set_defaults(func=cmd_shared_state)


# ----------------------------------------------------------------------------- the load


def _node(i: int):
    from protos.kubera.v1 import core_pb2

    name = f"node-{i}"
    alloc = {"cpu": f"{NODE_CPU_M}m", "memory": f"{NODE_MEMORY_MI}Mi", "pods": str(NODE_PODS)}
    return json_format.ParseDict(
        {
            "metadata": {
                "name": name,
                "labels": {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "z"},
            },
            "status": {
                "capacity": alloc,
                "allocatable": alloc,
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        core_pb2.Node(),
    )


def _pods(args: argparse.Namespace) -> list:
    """The pods, sizes mixed and shuffled by `--seed`, requesting `--fill` of the cluster."""
    from protos.kubera.v1 import core_pb2

    base_cpu = args.fill * args.nodes * NODE_CPU_M / args.pods
    base_mem = args.fill * args.nodes * NODE_MEMORY_MI / args.pods
    rng = random.Random(args.seed)
    sizes = [SIZES[i % len(SIZES)] for i in range(args.pods)]
    rng.shuffle(sizes)
    out = []
    for i, size in enumerate(sizes):
        requests = {
            "cpu": f"{max(1, int(base_cpu * size))}m",
            "memory": f"{max(1, int(base_mem * size))}Mi",
        }
        out.append(
            json_format.ParseDict(
                {
                    "metadata": {
                        "name": f"p-{i}",
                        "namespace": "default",
                        "labels": {"group": "omega"},
                    },
                    "spec": {
                        "containers": [
                            {
                                "name": "pause",
                                "image": "registry.k8s.io/pause:3.9",
                                "resources": {"requests": requests},
                            }
                        ]
                    },
                },
                core_pb2.Pod(),
            )
        )
    return out


def overcommitted(pods: list, nodes: list) -> list[str]:
    """Every node whose bound pods request more than its allocatable (any resource, or the
    pod count), said in words; empty when none is."""
    from services.api.helpers.resources import Resource, pod_requests

    used: dict[str, Resource] = {}
    count: dict[str, int] = {}
    for p in pods:
        n = p.spec.node_name
        if n:
            used.setdefault(n, Resource()).add(pod_requests(p))
            count[n] = count.get(n, 0) + 1
    out = []
    by_name = {n.metadata.name: n for n in nodes}
    for name, r in sorted(used.items()):
        node = by_name.get(name)
        if node is None:
            out.append(f"{name}: {count[name]} pods bound to a node that does not exist")
            continue
        alloc = Resource.from_list(node.status.allocatable)
        if count[name] > alloc.allowed_pod_number:
            out.append(f"{name}: {count[name]} pods > {alloc.allowed_pod_number}")
        for res in ("cpu", "memory", "ephemeral-storage", *sorted(r.scalar)):
            if r.get(res) > alloc.get(res):
                out.append(f"{name}: {res} requested {r.get(res)} > allocatable {alloc.get(res)}")
    return out


# ----------------------------------------------------------------------- one replica


async def _replica(args: argparse.Namespace) -> None:
    """One shared-state scheduler: schedule until SIGTERM, then write its stats."""
    from services.client import Client
    from services.scheduler import Scheduler, SchedulerOptions, SharedState

    client = Client(args.apiserver, timeout=60)
    sched = Scheduler(
        client,
        SchedulerOptions(
            seed=args.replica,
            identity=f"omega-{args.replica}-of-{args.replicas}",
            shared_state=SharedState(args.replica, args.replicas, args.partition),
        ),
    )
    stop = asyncio.Event()
    term = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, term.set)

    async def drain() -> None:
        """On SIGTERM, let the binds on the wire come back (bounded) before stopping, so
        that every bind the apiserver accepted is counted."""
        await term.wait()
        for _ in range(DRAIN_POLLS):
            if not sched.binding_cycles:
                break
            await asyncio.sleep(DRAIN_POLL_S)
        stop.set()

    drainer = asyncio.create_task(drain())
    try:
        await sched.warm()
        print("ready", flush=True)
        await sched.lead(stop)
    finally:
        drainer.cancel()
        await sched.close()
        await client.close()
    assert sched.omega is not None
    report = {
        "replica": args.replica,
        "summary": sched.omega.summary(),
        "queue_waits": list(sched.omega.queue_waits),
        "attempts": list(sched.omega.attempts),
    }
    tmp = Path(args.out + ".tmp")
    tmp.write_text(json.dumps(report))
    tmp.replace(args.out)


def _replica_main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="python -m kubera.bench.shared replica")
    p.add_argument("--apiserver", required=True)
    p.add_argument("--replica", type=int, required=True)
    p.add_argument("--replicas", type=int, required=True)
    p.add_argument("--partition", choices=("hash", "none"), required=True)
    p.add_argument("--out", required=True)
    asyncio.run(_replica(p.parse_args(argv)))
    return 0


class _Replicas:
    """K replica processes, each started here and stopped here by its PID."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.procs: list[asyncio.subprocess.Process] = []
        self.outs: list[Path] = []
        self.logs: list[Path] = []

    async def start(self, apiserver: str, k: int, partition: str) -> None:
        for i in range(k):
            out, log = self.workdir / f"replica-{i}.json", self.workdir / f"replica-{i}.log"
            with log.open("wb") as err:
                proc = await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "kubera.bench.shared",
                    "replica",
                    "--apiserver",
                    apiserver,
                    "--replica",
                    str(i),
                    "--replicas",
                    str(k),
                    "--partition",
                    partition,
                    "--out",
                    str(out),
                    stdout=asyncio.subprocess.PIPE,
                    stderr=err,
                )
            self.procs.append(proc)
            self.outs.append(out)
            self.logs.append(log)
        for i, proc in enumerate(self.procs):
            assert proc.stdout is not None
            try:
                line = await asyncio.wait_for(proc.stdout.readline(), READY_TIMEOUT)
            except TimeoutError:
                line = b""
            if line.strip() != b"ready":
                raise CliError(f"bench: scheduler replica {i} did not start:\n{self._tail(i)}")

    def _tail(self, i: int) -> str:
        with contextlib.suppress(OSError):
            return "\n".join(self.logs[i].read_text().splitlines()[-20:])
        return ""

    async def stop(self) -> None:
        """SIGTERM each still running (SIGKILL after STOP_TIMEOUT); idempotent."""
        for proc in self.procs:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGTERM)
        for proc in self.procs:
            try:
                await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                await proc.wait()

    def stats(self) -> list[dict[str, Any]]:
        """What each stopped replica wrote on its way out."""
        out = []
        for i, path in enumerate(self.outs):
            if not path.exists():
                raise CliError(f"bench: scheduler replica {i} wrote no stats:\n{self._tail(i)}")
            out.append(json.loads(path.read_text()))
        return out


# ------------------------------------------------------------------------------ one run


def _pct(xs: list[float], q: float) -> float:
    from services.scheduler import percentile

    return percentile(xs, q)


async def _run(ctx: dict, args: argparse.Namespace, k: int, workdir: Path) -> dict[str, Any]:
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client

    client = Client(ctx["apiserver"], timeout=120)
    replicas = _Replicas(workdir)
    try:
        await create_all(client, [_node(i) for i in range(args.nodes)])
        await replicas.start(ctx["apiserver"], k, args.partition)
        started = asyncio.Event()
        waiter = asyncio.create_task(count_binds(client, "omega", args.pods, args.timeout, started))
        await started.wait()
        t_start = time.perf_counter()
        await create_all(client, _pods(args))
        stamps = await waiter
        elapsed = stamps[-1] - t_start
        await replicas.stop()
        stats = replicas.stats()
        pods, _ = await client.list(BY_KIND["Pod"], namespace="default")
        nodes, _ = await client.list(BY_KIND["Node"])
    finally:
        await replicas.stop()
        await client.close()
    summaries = [s["summary"] for s in stats]
    waits = [w for s in stats for w in s["queue_waits"]]
    attempts = [a for s in stats for a in s["attempts"]]
    binds = sum(s["binds"] for s in summaries)
    conflicts = sum(s["conflicts"] for s in summaries)
    lost = sum(s["lost_pods"] for s in summaries)
    return {
        "schedulers": k,
        "partition": args.partition,
        "throughput": args.pods / elapsed,
        "elapsed_s": elapsed,
        "binds": binds,
        "conflicts": conflicts,
        "lost_pods": lost,
        "conflict_fraction": conflicts / binds if binds else 0.0,
        "lost_per_bind": lost / binds if binds else 0.0,
        "useful_busy_s": [s["useful_busy_s"] for s in summaries],
        "wasted_busy_s": [s["wasted_busy_s"] for s in summaries],
        "bind_latency_mean_s": statistics.fmean(s["bind_latency_mean_s"] for s in summaries),
        "queue_wait_p50_s": _pct(waits, 0.50),
        "queue_wait_p90_s": _pct(waits, 0.90),
        "queue_wait_p99_s": _pct(waits, 0.99),
        "attempts_per_pod_mean": statistics.fmean(attempts) if attempts else 0.0,
        "attempts_per_pod_max": max(attempts, default=0),
        "bound": sum(1 for p in pods if p.spec.node_name),
        "overcommitted": overcommitted(pods, nodes),
        "per_scheduler": summaries,
    }


def _row(r: dict[str, Any]) -> list[str]:
    k = r["schedulers"]
    return [
        str(k),
        f"{r['throughput']:.0f}",
        f"{r['conflict_fraction']:.4f}",
        f"{r['lost_per_bind']:.3f}",
        f"{statistics.fmean(r['useful_busy_s']):.2f}",
        f"{statistics.fmean(r['wasted_busy_s']):.2f}",
        f"{r['bind_latency_mean_s'] * 1000:.0f}",
        f"{r['queue_wait_p50_s']:.2f}/{r['queue_wait_p90_s']:.2f}/{r['queue_wait_p99_s']:.2f}",
        f"{r['attempts_per_pod_mean']:.3f}/{r['attempts_per_pod_max']}",
        f"{r['bound']}/{r['binds']}",
        str(len(r["overcommitted"])),
    ]


HEADER = [
    "K",
    "pods/s",
    "conflicts/bind",
    "lost/bind",
    "useful s/sched",
    "wasted s/sched",
    "bind ms",
    "queue wait p50/p90/p99 s",
    "attempts mean/max",
    "bound/binds",
    "overcommitted",
]


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in [HEADER, *rows]) for i in range(len(HEADER))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths, strict=True)) for r in [HEADER, *rows]]
    return "\n".join("  " + line for line in lines)


def _counts(text: str) -> list[int]:
    try:
        ks = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise CliError(f"bench: --schedulers wants comma-separated counts, not {text!r}") from None
    if not ks or min(ks) < 1:
        raise CliError("bench: --schedulers wants counts >= 1")
    return ks


def cmd_shared_state(args: argparse.Namespace) -> int:
    ks = _counts(args.schedulers)
    if min(args.nodes, args.pods, args.repeat) < 1 or not 0 < args.fill <= 1:
        raise CliError("bench: --nodes, --pods and --repeat must be >= 1, --fill in (0, 1]")
    results = []
    for k in ks:
        runs = []
        for r in range(args.repeat):
            cluster = Cluster()
            try:
                cluster.up("--no-scheduler", "--no-controllers")
                runs.append(asyncio.run(_run(cluster.context, args, k, Path(cluster.home))))
            finally:
                cluster.down()
            last = runs[-1]
            print(
                f"K={k} run {r + 1}/{args.repeat}: {last['throughput']:.0f} pods/s, "
                f"conflict fraction {last['conflict_fraction']:.4f}, "
                f"{len(last['overcommitted'])} overcommitted node(s)",
                flush=True,
            )
        rep = sorted(runs, key=lambda x: x["throughput"])[len(runs) // 2]
        rep["runs_throughput"] = [x["throughput"] for x in runs]
        results.append(rep)
    print(
        f"\nkubera bench shared-state — {args.nodes} nodes, {args.pods} pods requesting "
        f"{args.fill:.0%} of the cluster, partition {args.partition} "
        f"(median of {args.repeat} run(s) per K)"
    )
    print(_table([_row(r) for r in results]))
    print(
        "  conflicts/bind: binds refused by the node's allocation record per successful bind; "
        "lost/bind: binds of pods another scheduler had bound first;\n  busy: scheduling-cycle "
        "seconds of attempts that ended bound (useful) or in either kind of conflict (wasted); "
        "bind ms: mean wait for the apiserver's answer to a bind"
    )
    bad = [(r["schedulers"], o) for r in results for o in r["overcommitted"]]
    for k, o in bad[:20]:
        print(f"  OVERCOMMITTED (K={k}): {o}")
    if args.output:
        report = {
            "config": {k: v for k, v in vars(args).items() if k != "func"},
            "results": results,
        }
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
        print(f"report written to {args.output}")
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1:2] != ["replica"]:
        sys.exit("usage: python -m kubera.bench.shared replica --apiserver ADDR ...")
    sys.exit(_replica_main(sys.argv[2:]))
