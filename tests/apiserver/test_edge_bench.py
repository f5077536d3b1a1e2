"""Benchmark (marked bench): apiserver memory for one BatchCreate of 20,000 pods, with the
item cap (refused at the edge) and without it (the cap patched off: the old behaviour).

    .venv/bin/pytest -m bench -s -p no:cacheprovider tests/apiserver/test_edge_bench.py

The apiserver runs in a process of its own on a real etcd, as in `kubera up`, so its
resident memory (VmRSS, and the peak VmHWM) is its alone.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from kubera.launch.etcd import EtcdProcess
from protos.kubera.v1 import apiserver_pb2 as pb
from services.api.machinery import codec
from tests.builders import pod

pytestmark = pytest.mark.bench
PODS_SENT = 20_000

SERVER = """
import asyncio, sys
from services.apiserver import server
from services.apiserver.registry import ApiServer
from services.storage.etcd import EtcdStorage

async def main(endpoint, cap):
    if cap == "off":
        server.MAX_BATCH_ITEMS = 10**9
    api = ApiServer(EtcdStorage(endpoint))
    await api.start()
    _, port = await server.serve(api)
    print(port, flush=True)
    await asyncio.Event().wait()

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


def _mem(pid: int) -> dict[str, float]:
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) / 1024  # MB
    return out


@pytest.fixture
def etcd(tmp_path: Path) -> Iterator[EtcdProcess]:
    proc = EtcdProcess(tmp_path / "etcd", log_path=tmp_path / "etcd.log").start()
    try:
        yield proc
    finally:
        proc.stop()


async def _send(address: str) -> tuple[grpc.StatusCode, str, float]:
    request = pb.BatchCreateRequest(
        resource="pods", objects=[codec.pack(pod(f"p{i}")) for i in range(PODS_SENT)]
    )
    big = 256 * 1024 * 1024
    options = [("grpc.max_send_message_length", big), ("grpc.max_receive_message_length", big)]
    async with grpc.aio.insecure_channel(address, options=options) as ch:
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            await ch.unary_unary("/kubera.v1.ApiServer/BatchCreate")(
                request.SerializeToString(), timeout=600
            )
            return grpc.StatusCode.OK, f"{request.ByteSize()} bytes", loop.time() - t0
        except grpc.aio.AioRpcError as e:
            return e.code(), e.details() or "", loop.time() - t0


@pytest.mark.parametrize("cap", ["on", "off"])
def test_memory_of_a_20000_pod_batch_create(etcd: EtcdProcess, cap: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVER, etcd.endpoint, cap],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        before = _mem(proc.pid)
        code, details, seconds = asyncio.run(_send(f"127.0.0.1:{port}"))
        after = _mem(proc.pid)
        print(
            f"\ncap {cap}: BatchCreate of {PODS_SENT} pods -> {code.name} in {seconds:.2f}s "
            f"({details[:90]}); apiserver RSS {before['VmRSS']:.0f} -> {after['VmRSS']:.0f} MB, "
            f"peak {before['VmHWM']:.0f} -> {after['VmHWM']:.0f} MB"
        )
        if cap == "on":
            assert code == grpc.StatusCode.RESOURCE_EXHAUSTED
            assert after["VmHWM"] - before["VmRSS"] < 20
    finally:
        proc.terminate()
        proc.wait(10)
