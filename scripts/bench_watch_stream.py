"""CPU per watch event, apiserver side and client side: Watch (one message per event)
against WatchBatches (what is ready in one message).

The apiserver runs in its own process on the in-memory store with a watch cache large
enough to hold the whole history; this process writes the history (N single creates,
one revision each, then N binds in BindBatch calls of --bind-batch, one revision each),
then replays it from the start through each RPC in turn and reads both processes' CPU:

    .venv/bin/python scripts/bench_watch_stream.py --pods 10000 [--bind-batch 64]

A replay is the best case for batching (everything is ready at once); a live watch
batches what arrived since its last message. It prints µs per event and messages sent;
it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


async def serve_forever(port_file: str, capacity: int) -> None:
    from services.apiserver.registry import ApiServer, ApiServerConfig
    from services.apiserver.server import serve
    from services.storage.memory import MemoryStorage

    api = ApiServer(MemoryStorage(), ApiServerConfig(watch_cache_capacity=capacity))
    await api.start()
    server, port = await serve(api)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    Path(port_file).write_text(str(port))
    await stop.wait()
    await server.stop(0.5)
    await api.stop()


async def drive(args: argparse.Namespace, port: int, pid: int) -> None:
    from protos.kubera.v1 import apiserver_pb2 as pb
    from protos.kubera.v1 import core_pb2
    from services.api.machinery.kinds import BY_KIND
    from services.api.machinery.listoptions import ListOptions
    from services.client import Client

    def pod(name: str) -> core_pb2.Pod:
        p = core_pb2.Pod()
        p.metadata.name, p.metadata.namespace = name, "default"
        c = p.spec.containers.add(name="c", image="pause")
        c.resources.requests["cpu"] = "100m"
        c.resources.requests["memory"] = "64Mi"
        return p

    pods = BY_KIND["Pod"]
    client = Client(f"127.0.0.1:{port}", timeout=60)
    _, start = await client.list(pods)
    sem = asyncio.Semaphore(64)

    async def create(name: str) -> None:
        async with sem:
            await client.create(pod(name))

    n = args.pods
    await asyncio.gather(*(create(f"p{i}") for i in range(n)))
    reqs = [pb.BindRequest(namespace="default", name=f"p{i}", node_name="n1") for i in range(n)]
    for i in range(0, n, args.bind_batch):
        await client.bind_batch(reqs[i : i + args.bind_batch])
    events = 2 * n
    print(f"history: {n} creates (one revision each), {n} binds in BindBatch of {args.bind_batch}")

    async def replay(batched: bool) -> tuple[int, int]:
        got = messages = 0
        if batched:
            async for batch in client.watch_batches(
                pods, options=ListOptions(resource_version=start)
            ):
                got += len(batch)
                messages += 1
                if got >= events:
                    break
        else:
            async for _ in client.watch(pods, options=ListOptions(resource_version=start)):
                got += 1
                messages += 1
                if got >= events:
                    break
        return got, messages

    for _ in range(args.repeat):
        for batched in (False, True):
            s0, c0, t0 = cpu_seconds(pid), time.process_time(), time.perf_counter()
            got, messages = await replay(batched)
            server = cpu_seconds(pid) - s0
            mine, wall = time.process_time() - c0, time.perf_counter() - t0
            name = "WatchBatches" if batched else "Watch"
            print(
                f"{name:<13} {got} events in {messages:>6} messages: apiserver "
                f"{server * 1e6 / got:6.1f} µs/event, client {mine * 1e6 / got:6.1f} µs/event "
                f"(decode included), {got / wall:8.0f} events/s",
                flush=True,
            )
    await client.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--bind-batch", type=int, default=64)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve_forever(args.serve[0], int(args.serve[1])))
        return
    with tempfile.TemporaryDirectory() as d:
        port_file = Path(d) / "port"
        capacity = 2 * args.pods + 100
        cmd = [sys.executable, __file__, "--serve", str(port_file), str(capacity)]
        server = subprocess.Popen(cmd)
        try:
            for _ in range(600):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.05)
            asyncio.run(drive(args, int(port_file.read_text()), server.pid))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)


if __name__ == "__main__":
    main()
