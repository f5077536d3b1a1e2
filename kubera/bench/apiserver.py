"""`kubera bench apiserver`: the apiserver's figures, each next to raw etcd measured in
the same run on the same etcd, as a ratio (these machines are shared and noisy).

It starts its own cluster with `kubera up --detach` (in a private KUBERA_HOME), so it
measures the real thing: etcd subprocess, Ray actor, gRPC. Every figure is the median
of `--repeat` runs; loops are bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

from kubera.bench.harness import bounded, pod
from kubera.errors import CliError
from kubera.testing import Cluster


def register(bsub: argparse._SubParsersAction) -> None:
    api = bsub.add_parser("apiserver", help="up-to-ready, pod creates/s, watch latency vs raw etcd")
    api.add_argument(
        "--repeat", type=int, default=3, help="runs per figure; the median is reported"
    )
    api.add_argument("--serial", type=int, default=300, help="pods per serial-create run")
    api.add_argument("--concurrent", type=int, default=2000, help="pods per concurrent-create run")
    api.add_argument(
        "--inflight", type=int, default=64, help="requests in flight for concurrent runs"
    )
    api.add_argument("--batched", type=int, default=5000, help="pods per batched-create run")
    api.add_argument("--batch-size", type=int, default=500)
    api.add_argument("--watch-events", type=int, default=300, help="events per watch-latency run")
    api.add_argument("--output", default="", help="also write the figures as JSON here")
    api.set_defaults(func=cmd_bench_apiserver)


async def _measure(ctx: dict, args: argparse.Namespace, run: int) -> dict[str, float]:
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client
    from services.storage import Put
    from services.storage.etcd import EtcdStorage

    out: dict[str, float] = {}
    payload = pod("x").SerializeToString()
    etcd = EtcdStorage(ctx["etcd"])
    await etcd.connect()
    client = Client(ctx["apiserver"], timeout=60)
    prefix = f"/bench/{run}/"
    ns = f"bench-{run}"
    try:
        from protos.kubera.v1 import core_pb2

        await client.create(core_pb2.Namespace(metadata={"name": ns}))

        # raw etcd: serial and concurrent puts of a pod-sized value
        t0 = time.perf_counter()
        for i in range(args.serial):
            await etcd.txn([], [Put(f"{prefix}s{i}", payload)])
        out["etcd_put_serial_per_s"] = args.serial / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        await bounded(
            args.concurrent, args.inflight, lambda i: etcd.txn([], [Put(f"{prefix}c{i}", payload)])
        )
        out["etcd_put_concurrent_per_s"] = args.concurrent / (time.perf_counter() - t0)
        # raw etcd, batched as the apiserver batches: 100 puts per txn
        t0 = time.perf_counter()
        for start in range(0, args.batched, 100):
            await etcd.txn(
                [],
                [
                    Put(f"{prefix}b{i}", payload)
                    for i in range(start, min(start + 100, args.batched))
                ],
            )
        out["etcd_put_batched_per_s"] = args.batched / (time.perf_counter() - t0)

        # the apiserver: serial, concurrent, batched creates
        t0 = time.perf_counter()
        for i in range(args.serial):
            await client.create(pod(f"s{i}", ns))
        out["create_serial_per_s"] = args.serial / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        await bounded(args.concurrent, args.inflight, lambda i: client.create(pod(f"c{i}", ns)))
        out["create_concurrent_per_s"] = args.concurrent / (time.perf_counter() - t0)
        t0 = time.perf_counter()
        created = 0
        for start in range(0, args.batched, args.batch_size):
            pods = [
                pod(f"b{i}", ns) for i in range(start, min(start + args.batch_size, args.batched))
            ]
            res = await client.batch_create(pods)
            created += sum(r.error is None for r in res)
        out["create_batched_per_s"] = created / (time.perf_counter() - t0)
        if created != args.batched:
            raise CliError(f"bench: batched create made {created} of {args.batched} pods")

        # watch latency: time from just before a write to its event at the watcher
        out.update(
            await _watch_latency(client, etcd, BY_KIND["Pod"], ns, prefix, args.watch_events)
        )
    finally:
        await client.close()
        await etcd.close()
    return out


async def _watch_latency(client, etcd, pods_kind, ns: str, prefix: str, n: int) -> dict[str, float]:
    from services.storage import Put

    async def latencies(start_watch, write, name_of) -> list[float]:
        """Write n objects one after another; the latency of each is the time from just
        before its write to its event at the watcher. A warm-up write goes first, so the
        watch stream is established before anything is timed."""
        sent: dict[str, float] = {}
        got: list[float] = []
        done = asyncio.Event()
        ready = asyncio.Event()
        warmup = name_of(-1)

        async def reader() -> None:
            async for name in start_watch():
                t = time.perf_counter()
                if name == warmup:
                    ready.set()
                elif name in sent:
                    got.append(t - sent.pop(name))
                    if len(got) >= n:
                        done.set()
                        return

        task = asyncio.create_task(reader())
        try:
            for _ in range(300):  # until the stream delivers the warm-up (bounded)
                await write(-1)
                try:
                    await asyncio.wait_for(ready.wait(), 0.1)
                    break
                except TimeoutError:
                    if task.done():
                        task.result()  # the watch failed: raise its error
                        raise CliError("bench: the watch ended early") from None
            if not ready.is_set():
                raise CliError("bench: the watch never delivered the warm-up write")
            for i in range(n):
                name = name_of(i)
                sent[name] = time.perf_counter()
                await write(i)
            await asyncio.wait_for(done.wait(), 60)
        finally:
            task.cancel()
        return got

    # the apiserver's watch (through its watch cache, over gRPC)
    _, rv = await client.list(pods_kind, namespace=ns)

    async def api_watch():
        from services.api.machinery.listoptions import ListOptions

        options = ListOptions(resource_version=rv)
        async for ev in client.watch(pods_kind, namespace=ns, options=options):
            yield ev.object.metadata.name

    async def api_write(i: int) -> None:
        if i < 0:  # warm-up: a label change on one pod, repeatable
            await client.patch(
                pods_kind,
                "w-warmup",
                json.dumps({"metadata": {"labels": {"t": str(time.perf_counter_ns())}}}),
                namespace=ns,
            )
        else:
            await client.create(pod(f"w{i}", ns))

    await client.create(pod("w-warmup", ns))
    api = await latencies(api_watch, api_write, lambda i: "w-warmup" if i < 0 else f"w{i}")

    # raw etcd watch on the same etcd
    start = await etcd.revision() + 1
    wprefix = prefix + "watch/"

    async def etcd_watch():
        async for batch in etcd.watch(wprefix, start):
            for e in batch.events:
                yield e.kv.key

    def etcd_key(i: int) -> str:
        return f"{wprefix}{'warmup' if i < 0 else i}"

    payload = pod("x").SerializeToString()
    raw = await latencies(etcd_watch, lambda i: etcd.txn([], [Put(etcd_key(i), payload)]), etcd_key)

    def pct(xs: list[float], q: float) -> float:
        xs = sorted(xs)
        return xs[min(len(xs) - 1, int(q * len(xs)))] * 1000

    return {
        "watch_latency_p50_ms": pct(api, 0.50),
        "watch_latency_p99_ms": pct(api, 0.99),
        "etcd_watch_latency_p50_ms": pct(raw, 0.50),
        "etcd_watch_latency_p99_ms": pct(raw, 0.99),
    }


def cmd_bench_apiserver(args: argparse.Namespace) -> int:
    if (
        min(
            args.repeat,
            args.serial,
            args.concurrent,
            args.batched,
            args.watch_events,
            args.inflight,
            args.batch_size,
        )
        < 1
    ):
        raise CliError("bench: every count must be >= 1")
    ups: list[float] = []
    runs: list[dict[str, float]] = []
    for r in range(args.repeat):
        cluster = Cluster()
        try:
            ups.append(cluster.up())
            print(f"run {r + 1}/{args.repeat}: up in {ups[-1]:.2f}s", flush=True)
            runs.append(asyncio.run(_measure(cluster.context, args, r)))
        finally:
            cluster.down()
    med = {k: statistics.median(run[k] for run in runs) for k in runs[0]}
    med["up_to_ready_s"] = statistics.median(ups)
    ratios = {
        "create_serial_vs_etcd_put_serial": med["create_serial_per_s"]
        / med["etcd_put_serial_per_s"],
        "create_concurrent_vs_etcd_put_concurrent": med["create_concurrent_per_s"]
        / med["etcd_put_concurrent_per_s"],
        "create_batched_vs_etcd_put_batched": med["create_batched_per_s"]
        / med["etcd_put_batched_per_s"],
        "watch_p50_vs_etcd_watch_p50": med["watch_latency_p50_ms"]
        / med["etcd_watch_latency_p50_ms"],
        "watch_p99_vs_etcd_watch_p99": med["watch_latency_p99_ms"]
        / med["etcd_watch_latency_p99_ms"],
    }
    print(f"\nkubera bench apiserver — median of {args.repeat} runs (each on a fresh `kubera up`)")
    rows = [
        ("kubera up → ready", f"{med['up_to_ready_s']:.2f} s", ""),
        (
            "pod creates, serial",
            f"{med['create_serial_per_s']:.0f} /s",
            f"raw etcd put {med['etcd_put_serial_per_s']:.0f} /s → ratio {ratios['create_serial_vs_etcd_put_serial']:.3f}",
        ),
        (
            f"pod creates, {args.inflight} in flight",
            f"{med['create_concurrent_per_s']:.0f} /s",
            f"raw etcd put {med['etcd_put_concurrent_per_s']:.0f} /s → ratio {ratios['create_concurrent_vs_etcd_put_concurrent']:.3f}",
        ),
        (
            f"pod creates, batches of {args.batch_size}",
            f"{med['create_batched_per_s']:.0f} /s",
            f"raw etcd put, 100 per txn {med['etcd_put_batched_per_s']:.0f} /s → ratio {ratios['create_batched_vs_etcd_put_batched']:.3f}",
        ),
        (
            "watch latency p50",
            f"{med['watch_latency_p50_ms']:.2f} ms",
            f"raw etcd watch {med['etcd_watch_latency_p50_ms']:.2f} ms → ratio {ratios['watch_p50_vs_etcd_watch_p50']:.2f}",
        ),
        (
            "watch latency p99",
            f"{med['watch_latency_p99_ms']:.2f} ms",
            f"raw etcd watch {med['etcd_watch_latency_p99_ms']:.2f} ms → ratio {ratios['watch_p99_vs_etcd_watch_p99']:.2f}",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    for name, value, base in rows:
        print(f"  {name:<{width}}  {value:>12}  {base}")
    if args.output:
        Path(args.output).write_text(
            json.dumps({"median": med, "ratios": ratios, "runs": runs, "up_s": ups}, indent=2)
            + "\n"
        )
        print(f"\nfigures written to {args.output}")
    return 0
