"""Microbenchmark: µs per Allocator.allocate() for one claim of 1 GPU (class selector and
one request selector, real CEL) on a node with 8 GPUs, as the DynamicResources Filter
calls it per (pod, node). Prints figures; asserts nothing.

    PYTHONPATH=. .venv/bin/python scripts/bench_allocator.py [--rounds 5000] [--nodes 1000]

Cases: the same Allocator asked again (its slice index built); a new Allocator per call
sharing a DeviceCache (selector verdicts kept); a new Allocator with no cache (CEL runs on
every device); one Allocator over N nodes of 8 GPUs each, cold then warm cache.
"""

from __future__ import annotations

import argparse
import time

from protos.kubera.v1 import resource_pb2
from services.api.dra.allocator import Allocator, DeviceCache
from tests.builders import (
    MakeNode,
    device_class,
    exact_request,
    gpu,
    resource_claim,
    resource_slice,
)

GPU = "gpu.example.com"


def _gpus(node: str) -> resource_pb2.ResourceSlice:
    devices = [gpu(f"gpu-{i}", index=i) for i in range(8)]
    return resource_slice(f"{node}-gpu", node=node, driver=GPU, devices=devices)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rounds", type=int, default=5000)
    ap.add_argument("--nodes", type=int, default=1000)
    args = ap.parse_args()
    classes = {GPU: device_class(GPU, f'device.driver == "{GPU}"')}
    selector = 'device.attributes["gpu.example.com"].model == "A100"'
    claims = [resource_claim("c1", "default", exact_request("gpu", GPU, selector))]
    node = MakeNode().name("n1").obj()
    slices = [_gpus("n1")]

    def per_call(label: str, make: object, rounds: int) -> None:
        t = time.perf_counter()
        for _ in range(rounds):
            make().allocate(node)  # type: ignore[operator]
        print(f"{label}: {(time.perf_counter() - t) / rounds * 1e6:.1f} us")

    cache = DeviceCache()
    alloc = Allocator(claims, set(), classes, slices, cache=cache)
    t = time.perf_counter()
    alloc.allocate(node)
    print(f"first call (compiles CEL): {(time.perf_counter() - t) * 1e6:.0f} us")
    per_call("same Allocator", lambda: alloc, args.rounds)
    per_call(
        "new Allocator, shared DeviceCache",
        lambda: Allocator(claims, set(), classes, slices, cache=cache),
        args.rounds,
    )
    per_call(
        "new Allocator, no cache",
        lambda: Allocator(claims, set(), classes, slices),
        max(1, args.rounds // 5),
    )
    many = [_gpus(f"n{j}") for j in range(args.nodes)]
    nodes = [MakeNode().name(f"n{j}").obj() for j in range(args.nodes)]
    shared = DeviceCache()
    for label in ("cold", "warm"):
        t = time.perf_counter()
        alloc = Allocator(claims, set(), classes, many, cache=shared)
        for n in nodes:
            alloc.allocate(n)
        us = (time.perf_counter() - t) / args.nodes * 1e6
        print(f"{args.nodes} nodes, one Allocator, {label} cache: {us:.1f} us/node")


if __name__ == "__main__":
    main()
