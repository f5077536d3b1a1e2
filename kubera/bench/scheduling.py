"""`kubera bench scheduling-basic`: scheduler_perf's SchedulingBasic (and its topology
spreading and pod anti-affinity variants, and PreemptionBasic) through the real apiserver
and etcd.

PreemptionBasic (`--workload preemption`): every node is filled with 4 low-priority pods
(900m CPU each, of 4 CPUs), then high-priority pods (3970m, priority 10000 through a
PriorityClass) are created, each of which must preempt a node's low-priority pods; the
measured rate is high-priority pods bound per second, and the scheduler's preemption
attempts and victims are reported (from its Health RPC).

Nodes and initial pods are created and scheduled first; then the measured pods are
created (batched) and every bind is timestamped from a watch. Throughput is pods bound per
second: the average over the measured phase and p50/p90/p99 over 1-second windows, as
scheduler_perf reports it, beside the raw etcd put rate measured in the same run. With
--profile the scheduler runs inside the benchmark process under cProfile (the cluster is
started without its own scheduler) and the hottest functions are printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import math
import pstats
import time
from pathlib import Path
from typing import Any

from google.protobuf import json_format

from kubera.bench.harness import bounded, count_binds, create_all
from kubera.errors import CliError
from kubera.testing import Cluster

#: Upstream scheduler_perf thresholds (pods/s) for these workloads at 5,000 nodes (None:
#: scheduler_perf sets none; its PreemptionBasic 5000Nodes case is disabled upstream).
UPSTREAM: dict[str, int | None] = {
    "basic": 680,
    "topology-spread": 460,
    "anti-affinity": 60,
    "preemption": None,
}
HIGH_PRIORITY_CLASS = "bench-high-priority"
ZONES = 3


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "scheduling-basic",
        help="scheduler throughput (scheduler_perf SchedulingBasic and variants)",
    )
    p.add_argument("--workload", choices=sorted(UPSTREAM), default="basic")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument(
        "--init-pods", type=int, default=None, help="default 1000 (preemption: 4 per node)"
    )
    p.add_argument("--pods", type=int, default=None, help="default 10000 (preemption: 1 per node)")
    p.add_argument("--repeat", type=int, default=1, help="runs; the median run is reported")
    p.add_argument(
        "--timeout", type=float, default=900.0, help="seconds allowed for the measured pods to bind"
    )
    p.add_argument(
        "--profile", action="store_true", help="run the scheduler in-process under cProfile"
    )
    p.add_argument("--output", default="", help="also write the report as JSON here")
    p.set_defaults(func=cmd_scheduling_basic)


def _node(i: int):
    from protos.kubera.v1 import core_pb2

    name = f"node-{i}"
    return json_format.ParseDict(
        {
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                },
            },
            "status": {
                "capacity": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "32Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        },
        core_pb2.Node(),
    )


def _pod(name: str, workload: str, group: str):
    from protos.kubera.v1 import core_pb2

    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": "100m", "memory": "500Mi"}},
            }
        ]
    }
    labels = {"group": group}
    if workload == "preemption":
        # scheduler_perf's pod-low-priority.yaml / default_preemption pod-high-priority.yaml
        high = group != "init"
        cpu = "3970m" if high else "900m"
        spec["terminationGracePeriodSeconds"] = 0
        spec["containers"][0]["resources"] = {
            "requests": {"cpu": cpu, "memory": "500Mi"},
            "limits": {"cpu": cpu, "memory": "500Mi"},
        }
        if high:
            spec["priorityClassName"] = HIGH_PRIORITY_CLASS
    elif workload == "topology-spread":
        labels["color"] = "blue"
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"color": "blue"}},
            }
        ]
    elif workload == "anti-affinity":
        labels["color"] = "green"
        spec["affinity"] = {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "labelSelector": {"matchLabels": {"color": "green"}},
                        "topologyKey": "kubernetes.io/hostname",
                    }
                ]
            }
        }
    return json_format.ParseDict(
        {"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": spec},
        core_pb2.Pod(),
    )


def _windows(stamps: list[float], start: float) -> list[int]:
    """Pods bound in each whole second after `start` (scheduler_perf's throughput samples)."""
    if not stamps:
        return []
    counts = [0] * (int(stamps[-1] - start) + 1)
    for t in stamps:
        counts[int(t - start)] += 1
    return counts


def _pct(xs: list[int], q: float) -> float:
    if not xs:
        return 0.0
    s = sorted(xs)
    return float(s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))])


async def _run(ctx: dict, args: argparse.Namespace) -> dict[str, Any]:
    from services.client import Client
    from services.storage import Put
    from services.storage.etcd import EtcdStorage

    client = Client(ctx["apiserver"], timeout=120)
    etcd = EtcdStorage(ctx["etcd"])
    await etcd.connect()
    profiler: cProfile.Profile | None = None
    sched_task: asyncio.Task[None] | None = None
    stop = asyncio.Event()
    try:
        payload = _pod("x", args.workload, "x").SerializeToString()
        t0 = time.perf_counter()
        await bounded(2000, 64, lambda i: etcd.txn([], [Put(f"/bench/sched/{i}", payload)]))
        etcd_rate = 2000 / (time.perf_counter() - t0)

        if args.workload == "preemption":
            await _priority_class(client)
        sched: Any = None
        if args.profile:
            from services.scheduler import Scheduler, SchedulerOptions

            sched = Scheduler(client, SchedulerOptions(seed=1))
            sched_task = asyncio.create_task(sched.run(stop))

        t0 = time.perf_counter()
        await create_all(client, [_node(i) for i in range(args.nodes)])
        nodes_s = time.perf_counter() - t0

        if args.init_pods:
            started = asyncio.Event()
            waiter = asyncio.create_task(
                count_binds(client, "init", args.init_pods, args.timeout, started)
            )
            await started.wait()
            await create_all(
                client, [_pod(f"init-{i}", args.workload, "init") for i in range(args.init_pods)]
            )
            await waiter

        started = asyncio.Event()
        waiter = asyncio.create_task(
            count_binds(client, "measured", args.pods, args.timeout, started)
        )
        await started.wait()
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
        t_start = time.perf_counter()
        await create_all(
            client, [_pod(f"m-{i}", args.workload, "measured") for i in range(args.pods)]
        )
        created_s = time.perf_counter() - t_start
        stamps = await waiter
        if profiler is not None:
            profiler.disable()
        elapsed = stamps[-1] - t_start
        windows = _windows(stamps, t_start)
        full = windows[:-1] if len(windows) > 1 else windows  # the last second is partial
        report: dict[str, Any] = {
            "workload": args.workload,
            "nodes": args.nodes,
            "init_pods": args.init_pods,
            "pods": args.pods,
            "create_nodes_s": nodes_s,
            "create_measured_pods_s": created_s,
            "measured_s": elapsed,
            "throughput_avg": args.pods / elapsed,
            "throughput_p50": _pct(full, 0.50),
            "throughput_p90": _pct(full, 0.90),
            "throughput_p99": _pct(full, 0.99),
            "etcd_put_concurrent_per_s": etcd_rate,
            "upstream_threshold": UPSTREAM[args.workload],
        }
        if args.workload == "preemption":
            report.update(await _preemption_counts(ctx, sched))
        if profiler is not None:
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(30)
            report["profile"] = buf.getvalue()
        return report
    finally:
        stop.set()
        if sched_task is not None:
            await asyncio.wait_for(sched_task, 30)
        await client.close()
        await etcd.close()


async def _priority_class(client: Any) -> None:
    from protos.kubera.v1 import scheduling_pb2
    from services.api.errors import AlreadyExistsError

    pc = scheduling_pb2.PriorityClass(value=10000, description="kubera bench preemptors")
    pc.metadata.name = HIGH_PRIORITY_CLASS
    with contextlib.suppress(AlreadyExistsError):
        await client.create(pc)


async def _preemption_counts(ctx: dict, sched: Any) -> dict[str, int]:
    """The scheduler's preemption attempts and victims: in-process, or from its Health RPC."""
    if sched is not None:
        return {
            "preemption_attempts": sched.cycles.preemption_attempts,
            "preemption_victims": sched.cycles.preemption_victims,
        }
    import grpc

    from protos.kubera.v1 import scheduler_pb2, scheduler_pb2_grpc

    async with grpc.aio.insecure_channel(ctx["scheduler"]) as ch:
        h = await scheduler_pb2_grpc.SchedulerStub(ch).Health(
            scheduler_pb2.SchedulerHealthRequest(), timeout=10
        )
    return {
        "preemption_attempts": h.preemption_attempts,
        "preemption_victims": h.preemption_victims,
    }


def cmd_scheduling_basic(args: argparse.Namespace) -> int:
    if args.init_pods is None:
        args.init_pods = 4 * args.nodes if args.workload == "preemption" else 1000
    if args.pods is None:
        args.pods = args.nodes if args.workload == "preemption" else 10000
    if min(args.nodes, args.pods, args.repeat) < 1 or args.init_pods < 0:
        raise CliError("bench: --nodes, --pods and --repeat must be >= 1, --init-pods >= 0")
    reports = []
    for r in range(args.repeat):
        cluster = Cluster()
        try:
            up_args: tuple[str, ...] = ("--no-scheduler",) if args.profile else ()
            if args.workload == "preemption":
                # As scheduler_perf: apiserver and scheduler only. The bench's nodes have no
                # kubelet, and preemption runs longer than the node monitor grace period:
                # the node lifecycle controller would taint them unreachable mid-run.
                up_args += ("--no-controllers",)
            cluster.up(*up_args)
            reports.append(asyncio.run(_run(cluster.context, args)))
            print(
                f"run {r + 1}/{args.repeat}: {reports[-1]['throughput_avg']:.0f} pods/s", flush=True
            )
        finally:
            cluster.down()
    rep = sorted(reports, key=lambda x: x["throughput_avg"])[len(reports) // 2]
    rep["runs_throughput_avg"] = [x["throughput_avg"] for x in reports]
    print(
        f"\nkubera bench scheduling-basic — workload {rep['workload']}, {rep['nodes']} nodes, "
        f"{rep['init_pods']} initial pods, {rep['pods']} measured pods (median of {args.repeat} run(s))"
    )
    print(
        f"  pods bound/s: avg {rep['throughput_avg']:.0f}, p50 {rep['throughput_p50']:.0f}, "
        f"p90 {rep['throughput_p90']:.0f}, p99 {rep['throughput_p99']:.0f} (1-second windows)"
    )
    print(
        f"  raw etcd put rate (same run, 64 in flight): {rep['etcd_put_concurrent_per_s']:.0f}/s → ratio "
        f"{rep['throughput_avg'] / rep['etcd_put_concurrent_per_s']:.3f}"
    )
    if "preemption_attempts" in rep:
        print(
            f"  preemption attempts: {rep['preemption_attempts']}, victims: "
            f"{rep['preemption_victims']} (whole run)"
        )
    if rep["upstream_threshold"]:
        print(
            f"  upstream threshold (Go, 5,000 nodes): {rep['upstream_threshold']} pods/s → we "
            f"reach {rep['throughput_avg'] / rep['upstream_threshold']:.2f}×"
        )
    else:
        print("  upstream threshold: none (scheduler_perf sets none for this workload)")
    print(
        f"  setup: nodes created in {rep['create_nodes_s']:.1f}s; measured pods created in {rep['create_measured_pods_s']:.1f}s"
    )
    if "profile" in rep:
        print("\nprofile of the in-process scheduler during the measured phase (cumulative):")
        print(rep["profile"])
    if args.output:
        Path(args.output).write_text(json.dumps(rep, indent=2) + "\n")
        print(f"report written to {args.output}")
    return 0
