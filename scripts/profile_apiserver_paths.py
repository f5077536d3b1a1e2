"""Apiserver CPU per create and per bind, under load, on a real etcd.

The apiserver runs in its own process (optionally under cProfile), the load comes from
this one, so the figures are the apiserver's CPU alone (from /proc/<pid>/stat):

    .venv/bin/python scripts/profile_apiserver_paths.py --pods 2000 --concurrency 64 \
        [--profile /tmp/apiserver.prof]

Phases: N single Creates; N single Binds (Bind RPC); N more pods created, then bound
through `Client.bind` (coalesced into BindBatch calls when the server has it). It prints
µs of apiserver CPU per operation and the wall rate; it asserts nothing about speed.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
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


async def serve_forever(endpoint: str, port_file: str, profile: str) -> None:
    from services.apiserver.registry import ApiServer
    from services.apiserver.server import serve
    from services.storage.etcd import EtcdStorage

    storage = EtcdStorage(endpoint)
    await storage.connect()
    api = ApiServer(storage)
    await api.start()
    server, port = await serve(api)
    prof = cProfile.Profile() if profile else None
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGUSR1, lambda: prof.enable() if prof else None)
    Path(port_file).write_text(str(port))
    await stop.wait()
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    await server.stop(0.5)
    await api.stop()
    await storage.close()


async def drive(args: argparse.Namespace, port: int, pid: int) -> None:
    from protos.kubera.v1 import apiserver_pb2 as pb
    from services.api.machinery.kinds import BY_KIND
    from services.client import Client
    from tests.builders import MakeNode, pod

    client = Client(f"127.0.0.1:{port}", timeout=60)
    alloc = {"cpu": "1000", "memory": "1000Gi", "pods": "100000"}
    await client.create(MakeNode().typed().name("n1").allocatable(alloc).capacity(alloc).obj())
    sem = asyncio.Semaphore(args.concurrency)

    async def bounded(coro):  # type: ignore[no-untyped-def]
        async with sem:
            return await coro

    async def phase(name: str, coros: list) -> None:  # type: ignore[type-arg]
        c0, t0 = cpu_seconds(pid), time.perf_counter()
        await asyncio.gather(*(bounded(c) for c in coros))
        cpu, wall = cpu_seconds(pid) - c0, time.perf_counter() - t0
        n = len(coros)
        print(
            f"{name:<24} n={n:<6} apiserver CPU {cpu * 1e6 / n:8.0f} µs/op   "
            f"wall {n / wall:8.0f} op/s",
            flush=True,
        )

    n = args.pods
    if args.profile:
        os.kill(pid, signal.SIGUSR1)
    await phase("create (Create RPC)", [client.create(pod(f"a{i}")) for i in range(n)])
    single = getattr(client, "bind_single", None)

    def bind_req(name: str) -> pb.BindRequest:
        return pb.BindRequest(namespace="default", name=name, node_name="n1")

    if single is not None:
        await phase("bind (Bind RPC)", [single(bind_req(f"a{i}")) for i in range(n)])
    else:
        await phase("bind (Bind RPC)", [client.bind(f"a{i}", "n1") for i in range(n)])
    await asyncio.gather(*(bounded(client.create(pod(f"b{i}"))) for i in range(n)))
    await phase("bind (Client.bind)", [client.bind(f"b{i}", "n1") for i in range(n)])
    binds = getattr(client, "binds", None)
    if binds is not None and hasattr(binds, "calls"):
        print(f"  coalesced: {binds.binds} binds in {binds.calls} BindBatch calls")
    pods, _ = await client.list(BY_KIND["Pod"], namespace="default")
    assert sum(1 for p in pods if p.spec.node_name == "n1") == 2 * n  # type: ignore[attr-defined]
    await client.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pods", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--profile", default="")
    ap.add_argument("--serve", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        asyncio.run(serve_forever(args.serve[0], args.serve[1], args.profile))
        return
    from kubera.launch.etcd import EtcdProcess

    with tempfile.TemporaryDirectory() as d:
        etcd = EtcdProcess(Path(d) / "etcd").start()
        port_file = Path(d) / "port"
        cmd = [sys.executable, __file__, "--serve", etcd.endpoint, str(port_file)]
        server = subprocess.Popen([*cmd, "--profile", args.profile])
        try:
            for _ in range(600):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.05)
            asyncio.run(drive(args, int(port_file.read_text()), server.pid))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
            etcd.stop()


if __name__ == "__main__":
    main()
