"""`kubera bench chaos`: many faults during a large pod load, then `kubera check`.

A cluster with K scheduler replicas and M controller-manager replicas on short leases runs
hollow nodes; pods are created at a steady rate while `kubera chaos run` draws faults from
a mix over and over: the scheduler leader killed, paused and partitioned, the apiserver
killed (it comes back on its address; each kill's time to the first write and the first
bind is reported), etcd restarted — and, with --cm-faults, the controller-manager leader's
faults beside them. Afterwards `kubera check` replays etcd's whole history; the figures
are its counts: double binds, overcommitted nodes, binds by deposed leaders, lost pods —
all must be 0 — beside what the run did (pods, binds, leader terms, faults).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from kubera.errors import CliError

#: Scheduler-leader faults, apiserver kills and etcd restarts, mixed.
DEFAULT_KINDS = "kill,pause,partition,kill-apiserver,restart-etcd"
#: The kinds a controller-manager run may draw (the cluster-wide ones stay in one run, so
#: two kills of the apiserver or two etcd restarts never overlap).
LEADER_KINDS = ("kill", "pause", "partition")


def register(bsub: argparse._SubParsersAction) -> None:
    p = bsub.add_parser(
        "chaos", help="leader, apiserver and etcd faults during a pod load, then kubera check"
    )
    p.add_argument(
        "--faults", type=int, default=100, help="faults drawn from --kinds, one after another"
    )
    p.add_argument(
        "--cm-faults",
        type=int,
        default=0,
        help="controller-manager-leader faults (its leader kinds of --kinds), alongside",
    )
    p.add_argument(
        "--kinds",
        default=DEFAULT_KINDS,
        help=(
            "the mix: comma-separated kinds drawn uniformly, a kind named twice drawn twice "
            f"as often (kill, pause, partition, kill-apiserver, restart-etcd; default {DEFAULT_KINDS})"
        ),
    )
    p.add_argument("--interval", default="1s")
    p.add_argument("--for", dest="seconds", default="3s", help="pause/partition length")
    p.add_argument("--pods", type=int, default=10000)
    p.add_argument(
        "--rate", type=float, default=0.0, help="pods/s (default: spread over the faults)"
    )
    p.add_argument("--nodes", type=int, default=100)
    p.add_argument("--schedulers", type=int, default=3)
    p.add_argument("--controller-managers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--output", default="", help="also write the figures as JSON here")
    p.set_defaults(func=cmd_bench_chaos)


async def _load(ctx: dict, n: int, rate: float, stop: threading.Event, done: list[int]) -> None:
    from kubera.bench.harness import pod as bench_pod
    from protos.kubera.v1 import core_pb2
    from services.api.machinery.errors import AlreadyExistsError, ApiError
    from services.client import Client

    ns = "chaos-load"
    async with Client(ctx["apiserver"], timeout=30) as client:
        with contextlib.suppress(AlreadyExistsError):
            await client.create(core_pb2.Namespace(metadata={"name": ns}))
        sem = asyncio.Semaphore(32)
        t0 = time.monotonic()

        async def one(i: int) -> None:
            pod = bench_pod(f"p{i}", ns)
            pod.spec.containers[0].resources.requests["cpu"] = "10m"
            pod.spec.containers[0].resources.requests["memory"] = "16Mi"
            for attempt in range(60):  # through an apiserver kill or an etcd restart
                try:
                    await client.create(pod)
                    done[0] += 1
                    return
                except AlreadyExistsError:
                    done[0] += attempt > 0  # an earlier try went through, its answer lost
                    return
                except ApiError:
                    await asyncio.sleep(0.5)
            done[1] += 1

        tasks = []
        for i in range(n):
            if stop.is_set():
                break
            delay = t0 + i / rate - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            await sem.acquire()
            t = asyncio.create_task(one(i))
            t.add_done_callback(lambda _t: sem.release())
            tasks.append(t)
        await asyncio.gather(*tasks)


def _fault_counts(outputs: list[str]) -> list[str]:
    """Each run's "N faults in Ts (kind n, ...)" line."""
    return [ln for o in outputs for ln in o.splitlines() if " faults in " in ln]


def cmd_bench_chaos(args: argparse.Namespace) -> int:
    from kubera.testing import Cluster
    from services.api.machinery.duration import parse_duration

    interval = parse_duration(args.interval)
    seconds = parse_duration(args.seconds)
    # a fault, its takeover (~lease) and the interval: spread the pods over the whole run
    rate = args.rate or max(5.0, args.pods / (args.faults * (interval + 2.5 + seconds / 3)))
    cluster = Cluster()
    report: dict = {}
    try:
        up = cluster.up(
            "--nodes", str(args.nodes),
            "--schedulers", str(args.schedulers),
            "--controller-managers", str(args.controller_managers),
            "--leader-elect-lease-duration", "2s",
            "--leader-elect-renew-deadline", "1500ms",
            "--leader-elect-retry-period", "500ms",
        )  # fmt: skip
        print(
            f"chaos: {args.schedulers} schedulers, {args.controller_managers} controller-managers, "
            f"{args.nodes} hollow nodes (up in {up:.1f}s); {args.pods} pods at {rate:.0f}/s; "
            f"{args.faults} faults ({args.kinds}) every {args.interval}",
            flush=True,
        )
        stop = threading.Event()
        created = [0, 0]
        loader = threading.Thread(
            target=lambda: asyncio.run(_load(cluster.context, args.pods, rate, stop, created))
        )
        t0 = time.monotonic()
        loader.start()
        runs = []
        kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
        cm_kinds = ",".join(k for k in kinds if k in LEADER_KINDS) or "kill"
        for component, n, seed, run_kinds in (
            ("scheduler", args.faults, args.seed, args.kinds),
            ("controller-manager", args.cm_faults, args.seed + 1, cm_kinds),
        ):
            if n <= 0:
                continue
            runs.append(
                subprocess.Popen(
                    [
                        sys.executable,
                        "-m",
                        "kubera.cli",
                        "chaos",
                        "run",
                        "--component",
                        component,
                        "--faults",
                        str(n),
                        "--interval",
                        args.interval,
                        "--for",
                        args.seconds,
                        "--kinds",
                        run_kinds,
                        "--seed",
                        str(seed),
                        "--wait",
                        "60",
                    ],
                    env=cluster.env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                )  # fmt: skip
            )
        outputs = []
        for proc in runs:
            out, _ = proc.communicate(timeout=3600)
            outputs.append(out)
            lines = out.strip().splitlines()
            tail = [ln for ln in lines if ln.startswith("apiserver kills:")] + lines[-2:-1]
            print("  " + "\n  ".join(tail or ["(no output)"]), flush=True)
            if proc.returncode != 0:
                stop.set()
                raise CliError(f"bench chaos: chaos run failed:\n{out}")
        faults_done = time.monotonic() - t0
        loader.join(3600)
        print(f"  faults done in {faults_done:.0f}s; {created[0]} pods created", flush=True)
        t1 = time.monotonic()
        chk = cluster.run("check", "--settle", "300s", "--json", timeout=3600)
        check_s = time.monotonic() - t1
        if chk.returncode not in (0, 1):
            raise CliError(f"bench chaos: kubera check failed to run: {chk.stderr.strip()}")
        verdict = json.loads(chk.stdout)
        report = {
            "faults": args.faults,
            "cm_faults": args.cm_faults,
            "kinds": args.kinds,
            "pods_created": created[0],
            "pods_not_created": created[1],
            "fault_counts": _fault_counts(outputs),
            "apiserver_recovery": next(
                (ln for o in outputs for ln in o.splitlines() if ln.startswith("apiserver kills:")),
                "",
            ),
            "faults_seconds": faults_done,
            "runs_output": outputs,
            "check_seconds": check_s,
            "check_exit": chk.returncode,
            "verdict": verdict,
        }
    finally:
        cluster.down()
    print(json.dumps(report["verdict"], indent=2)[:4000])
    print(
        f"kubera check: exit {report['check_exit']} after {report['check_seconds']:.0f}s "
        f"({'no violations' if report['check_exit'] == 0 else 'VIOLATIONS'})"
    )
    if args.output:
        Path(args.output).write_text(json.dumps(report, indent=2))
    return 0
