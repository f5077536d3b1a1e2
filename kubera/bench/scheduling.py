"""`kubera bench scheduling-basic`: scheduler_perf's workloads (kubera/bench/workloads.py:
SchedulingBasic, TopologySpreading, SchedulingPodAntiAffinity, SchedulingNodeAffinity,
Unschedulable, SchedulingWithMixedChurn, PreemptionBasic) through the real apiserver and etcd,
with upstream's shapes and thresholds at 5,000 nodes.

Each run starts a fresh cluster (`kubera up`, K apiservers with --apiservers). Nodes and the
initial pods are created and scheduled first; then the measured pods are created (batched)
while the workload's churn, if any, runs, and every bind is timestamped from a watch.
Throughput is pods bound per second: the average over the measured phase and p50/p90/p99
over 1-second windows, as scheduler_perf reports it, as a share of upstream's threshold for
that exact shape, beside the raw etcd put rate measured in the same run. The CPU seconds of
every component process over the measured phase, per pod bound (kubera/bench/cpu.py), feed
a capacity model for N machines (kubera/bench/capacity.py). With --repeat N the median run
(by average pods/s) is reported and every run is kept in the JSON (--output).

PreemptionBasic: the measured rate is high-priority pods bound per second, and the
scheduler's preemption attempts and victims are reported (from its Health RPC). With
--profile the scheduler runs inside the benchmark process under cProfile (the cluster is
started without its own scheduler; its CPU then counts as the bench client's) and the
hottest functions are printed.

The bench's nodes are API objects with no kubelet and no lease, as in scheduler_perf: past
the node lifecycle controller's startup grace period (60 s) it would mark them unreachable.
The bench watches the nodes and stops the run with that advice when one is tainted: for
runs longer than that give --no-controllers (scheduler_perf runs no controller-manager).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import io
import json
import pstats
import time
from pathlib import Path
from typing import Any

from kubera.bench import cpu
from kubera.bench.harness import bounded, count_binds, create_all, first_lifecycle_taint, unless
from kubera.bench.report import assemble, render, run_line, summarize
from kubera.bench.workloads import (
    PRIORITY_CLASSES,
    WORKLOADS,
    Churn,
    Workload,
    churn_node,
    default_shape,
    node,
    pod,
)
from kubera.errors import CliError
from kubera.launch.credentials import admin_channel
from kubera.testing import Cluster

HINT = (
    "the bench's nodes have no kubelet or lease, and the controller-manager gave up on them "
    "after its startup grace period: rerun with --no-controllers (as scheduler_perf runs)"
)


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "scheduling-basic",
        help="scheduler throughput (scheduler_perf SchedulingBasic and its other workloads)",
    )
    p.add_argument("--workload", choices=sorted(WORKLOADS), default="basic")
    p.add_argument("--nodes", type=int, default=None, help="default: upstream's 5000")
    p.add_argument(
        "--init-pods",
        type=int,
        default=None,
        help="default: the workload's upstream case (preemption: 4 per node)",
    )
    p.add_argument(
        "--pods",
        type=int,
        default=None,
        help="measured pods; default: the workload's upstream case (preemption: 1 per node)",
    )
    p.add_argument("--repeat", type=int, default=1, help="runs; the median run is reported")
    p.add_argument(
        "--apiservers", type=int, default=1, help="apiserver replicas (`kubera up --apiservers`)"
    )
    p.add_argument(
        "--no-controllers",
        action="store_true",
        help="start no controller-manager (as scheduler_perf; needed past ~60 s of run)",
    )
    p.add_argument(
        "--timeout", type=float, default=900.0, help="seconds allowed for the measured pods to bind"
    )
    p.add_argument(
        "--profile", action="store_true", help="run the scheduler in-process under cProfile"
    )
    p.add_argument(
        "--model-cores", type=float, default=2.0, help="cores per machine in the capacity model"
    )
    p.add_argument(
        "--model-f",
        type=float,
        default=0.0,
        help="capacity model: the share of an apiserver's per-pod work every replica repeats",
    )
    p.add_argument("--output", default="", help="also write the report as JSON here")
    p.set_defaults(func=cmd_scheduling_basic)


async def _prepare(client: Any, w: Workload) -> None:
    """The PriorityClasses and namespaces the workload's pods name."""
    from protos.kubera.v1 import core_pb2, scheduling_pb2
    from services.api.machinery.errors import AlreadyExistsError

    for name, value in PRIORITY_CLASSES.items():
        pc = scheduling_pb2.PriorityClass(value=value, description="kubera bench")
        pc.metadata.name = name
        with contextlib.suppress(AlreadyExistsError):
            await client.create(pc)
    for ns in w.namespaces():
        obj = core_pb2.Namespace()
        obj.metadata.name = ns
        with contextlib.suppress(AlreadyExistsError):
            await client.create(obj)


async def churn(client: Any, spec: Churn, stop: asyncio.Event, counts: dict[str, int]) -> None:
    """scheduler_perf's churn op until `stop`: every `spec.interval_s`, create one object of
    each kind (mode create), or create them and delete them on the next tick (recreate)."""
    from services.api.machinery.kinds import BY_KIND

    live: list[tuple[str, str]] = []
    tick = 0
    while not stop.is_set():
        if spec.mode == "recreate" and live:
            for kind, name in live:
                with contextlib.suppress(Exception):  # already gone: nothing to undo
                    if kind == "Pod":
                        await client.delete(BY_KIND["Pod"], name, "default", grace_period_seconds=0)
                    else:
                        await client.delete(BY_KIND["Node"], name)
                    counts["deleted"] = counts.get("deleted", 0) + 1
            live = []
        else:
            for what in spec.kinds:
                name = f"churn-{what}-{tick}"
                obj = churn_node(name) if what == "churn-node" else pod(name, "large-cpu", "churn")
                await client.create(obj)
                counts["created"] = counts.get("created", 0) + 1
                live.append(("Node" if what == "churn-node" else "Pod", name))
        tick += 1
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), spec.interval_s)


def _processes(cluster: Cluster) -> list[cpu.Proc]:
    """The cluster's processes as the context file names them now (the supervisor adds
    each component's pid once it answers)."""
    try:
        ctx = json.loads(cluster.context_file.read_text())
    except (OSError, ValueError):
        ctx = cluster.context
    return cpu.processes(ctx)


async def _run(cluster: Cluster, args: argparse.Namespace, w: Workload) -> dict[str, Any]:
    from services.client import Client
    from services.storage import Put
    from services.storage.etcd import EtcdStorage

    ctx = cluster.context
    client = Client(ctx["apiserver"], timeout=120)
    etcd = EtcdStorage(ctx["etcd"])
    await etcd.connect()
    profiler: cProfile.Profile | None = None
    sched_task: asyncio.Task[None] | None = None
    churn_task: asyncio.Task[None] | None = None
    guard: asyncio.Task[str] | None = None
    stop = asyncio.Event()
    churn_stop = asyncio.Event()
    churned: dict[str, int] = {}
    try:
        payload = pod("x", w.measured_template, "x").SerializeToString()
        t0 = time.perf_counter()
        await bounded(2000, 64, lambda i: etcd.txn([], [Put(f"/bench/sched/{i}", payload)]))
        etcd_rate = 2000 / (time.perf_counter() - t0)

        await _prepare(client, w)
        sched: Any = None
        if args.profile:
            from services.scheduler import Scheduler, SchedulerOptions

            sched = Scheduler(client, SchedulerOptions(seed=1))
            sched_task = asyncio.create_task(sched.run(stop))

        if not (args.no_controllers or w.no_controllers):
            guard = asyncio.create_task(first_lifecycle_taint(client))
        t0 = time.perf_counter()
        await create_all(client, [node(i, w) for i in range(args.nodes)])
        nodes_s = time.perf_counter() - t0

        if args.init_pods:
            started = asyncio.Event()
            waiter = asyncio.create_task(
                count_binds(client, "init", args.init_pods, args.timeout, started, w.init_namespace)
            )
            await started.wait()
            await create_all(
                client,
                [
                    pod(f"init-{i}", w.init_template, "init", w.init_namespace)
                    for i in range(args.init_pods)
                ],
            )
            await unless(waiter, guard, HINT)

        started = asyncio.Event()
        waiter = asyncio.create_task(
            count_binds(client, "measured", args.pods, args.timeout, started, w.measured_namespace)
        )
        await started.wait()
        procs = _processes(cluster)
        before = cpu.sample(procs)
        if args.profile:
            profiler = cProfile.Profile()
            profiler.enable()
        t_start = time.perf_counter()
        if w.churn is not None:
            churn_task = asyncio.create_task(churn(client, w.churn, churn_stop, churned))
        await create_all(
            client,
            [
                pod(f"m-{i}", w.measured_template, "measured", w.measured_namespace)
                for i in range(args.pods)
            ],
        )
        created_s = time.perf_counter() - t_start
        stamps = await unless(waiter, guard, HINT)
        after = cpu.sample(procs)
        if profiler is not None:
            profiler.disable()
        churn_stop.set()
        if churn_task is not None:
            await asyncio.wait_for(churn_task, 60)
        report = summarize(stamps, t_start, pods=args.pods)
        report.update(
            {
                "workload": w.name,
                "upstream_workload": w.upstream,
                "nodes": args.nodes,
                "init_pods": args.init_pods,
                "apiservers": args.apiservers,
                "controllers": not (args.no_controllers or w.no_controllers),
                "create_nodes_s": nodes_s,
                "create_measured_pods_s": created_s,
                "etcd_put_concurrent_per_s": etcd_rate,
                "cpu": cpu.table(procs, before, after, args.pods, report["measured_s"]),
            }
        )
        if w.churn is not None:
            report["churn"] = {"mode": w.churn.mode, **churned}
        if w.name == "preemption":
            report.update(await _preemption_counts(ctx, sched))
        if profiler is not None:
            buf = io.StringIO()
            pstats.Stats(profiler, stream=buf).sort_stats("cumulative").print_stats(30)
            report["profile"] = buf.getvalue()
        return report
    finally:
        churn_stop.set()
        for task in (churn_task, guard):
            if task is not None and not task.done():
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        stop.set()
        if sched_task is not None:
            await asyncio.wait_for(sched_task, 30)
        await client.close()
        await etcd.close()


async def _preemption_counts(ctx: dict, sched: Any) -> dict[str, int]:
    """The scheduler's preemption attempts and victims: in-process, or from its Health RPC."""
    if sched is not None:
        return {
            "preemption_attempts": sched.cycles.preemption_attempts,
            "preemption_victims": sched.cycles.preemption_victims,
        }

    from protos.kubera.v1 import scheduler_pb2, scheduler_pb2_grpc

    async with admin_channel(ctx["scheduler"]) as ch:
        h = await scheduler_pb2_grpc.SchedulerStub(ch).Health(
            scheduler_pb2.SchedulerHealthRequest(), timeout=10
        )
    return {
        "preemption_attempts": h.preemption_attempts,
        "preemption_victims": h.preemption_victims,
    }


def new_cluster(apiservers: int) -> Cluster:
    """A Cluster with `apiservers` replicas. The keyword comes with `kubera up
    --apiservers`: one replica needs nothing, more on a kubera without it is an error."""
    if apiservers == 1:
        return Cluster()
    try:
        return Cluster(apiservers=apiservers)  # type: ignore[call-arg,unused-ignore]
    except TypeError:
        raise CliError("bench: this kubera cannot start more than one apiserver") from None


def resolve(args: argparse.Namespace) -> Workload:
    """The workload, with the run's shape filled in from its upstream case; checks the
    arguments."""
    w = WORKLOADS[args.workload]
    if args.nodes is None:
        args.nodes = w.default.nodes
    init, pods = default_shape(w, args.nodes)
    if args.init_pods is None:
        args.init_pods = init
    if args.pods is None:
        args.pods = pods
    if min(args.nodes, args.pods, args.repeat, args.apiservers) < 1 or args.init_pods < 0:
        raise CliError(
            "bench: --nodes, --pods, --repeat and --apiservers must be >= 1, --init-pods >= 0"
        )
    if args.model_cores <= 0 or not 0 <= args.model_f <= 1:
        raise CliError("bench: --model-cores must be > 0 and --model-f in [0, 1]")
    return w


def cmd_scheduling_basic(args: argparse.Namespace) -> int:
    w = resolve(args)
    up_args: tuple[str, ...] = ("--no-scheduler",) if args.profile else ()
    if args.no_controllers or w.no_controllers:
        up_args += ("--no-controllers",)
    reports = []
    for r in range(args.repeat):
        cluster = new_cluster(args.apiservers)
        try:
            cluster.up(*up_args)
            reports.append(asyncio.run(_run(cluster, args, w)))
            print(run_line(reports[-1], w, r + 1, args.repeat), flush=True)
        finally:
            cluster.down()
    rep = assemble(
        reports,
        w,
        machines=(1, 2, 4, 8),
        cores=args.model_cores,
        f=args.model_f,
    )
    print()
    print(render(rep))
    if args.output:
        Path(args.output).write_text(json.dumps(rep, indent=2) + "\n")
        print(f"report written to {args.output}")
    return 0
