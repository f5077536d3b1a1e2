"""`kubera bench fuzz`: the fuzz harness of tests/fuzz/ (kubera.fuzz) at a large size.

It starts a real apiserver gRPC server in this process (on in-memory storage, or on an
etcd it starts itself with `--storage etcd`), sends every method `--examples` inputs of
each shape (random bytes, random fields, bent valid requests), then checks the server
still answers Health, a create, a get and a watch; then the same for every route of
the HTTP API (kubera/fuzz/http_inputs.py); then fuzzes the CLI's manifest decoder. It prints the inputs tried per method, the count of each status code and every
failure class (UNKNOWN, INTERNAL, a hang, a traceback in the server's log) with its
smallest input, and exits 1 when there is one. hypothesis is a test dependency, so it is
imported only when the bench runs.
"""

from __future__ import annotations

import argparse
import logging
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from kubera.errors import CliError


def register(bsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = bsub.add_parser(
        "fuzz",
        help="hypothesis over every apiserver gRPC method, every HTTP route and the manifest decoder",
    )
    p.add_argument(
        "--examples", type=int, default=500, help="inputs per shape per method (3 shapes)"
    )
    p.add_argument("--manifests", type=int, default=5000, help="inputs for the manifest decoder")
    p.add_argument("--storage", choices=("memory", "etcd"), default="memory")
    p.add_argument("--max-batch", type=int, default=2000, help="largest batch sent")
    p.add_argument("--max-depth", type=int, default=100_000, help="deepest patch sent")
    p.add_argument("--dump", default="", help="write each failure's smallest input here")
    p.set_defaults(func=cmd_bench_fuzz)


def cmd_bench_fuzz(args: argparse.Namespace) -> int:
    try:
        from kubera.fuzz import grpc_inputs, harness, manifests
    except ImportError as e:
        raise CliError(f"bench fuzz needs the test dependencies (hypothesis): {e}") from None
    if args.examples < 1 or args.manifests < 0:
        raise CliError("--examples must be at least 1 and --manifests at least 0")
    size = grpc_inputs.Size(
        examples=args.examples, max_batch=args.max_batch, max_depth=args.max_depth, max_raw=4096
    )
    errors = harness.ErrorLog()
    root = logging.getLogger()
    root.addHandler(errors)
    # Counted by the harness; not printed as they happen (thousands of tracebacks).
    quiet = [h for h in root.handlers if h is not errors]
    for h in quiet:
        root.removeHandler(h)
    etcd_dir = ""
    etcd = None
    try:
        if args.storage == "etcd":
            from kubera.launch.etcd import EtcdProcess
            from services.storage.etcd import EtcdStorage

            etcd_dir = tempfile.mkdtemp(prefix="kubera-fuzz-")
            etcd = EtcdProcess(
                Path(etcd_dir) / "data", log_path=Path(etcd_dir) / "etcd.log"
            ).start()
            endpoint = etcd.endpoint
            server = harness.ServerThread(lambda: EtcdStorage(endpoint), harness.FUZZ_API_CONFIG)
        else:
            server = harness.ServerThread(config=harness.FUZZ_API_CONFIG)
        caller = harness.Caller(server.start(), errors)
        tally = harness.Tally()
        start = time.monotonic()
        try:
            grpc_inputs.fuzz_all(caller, tally, size)
            elapsed = time.monotonic() - start
            broken = caller.serves("fz-after")
        finally:
            caller.close()
            server.stop()
        print(tally.report())
        after = "all answer" if not broken else "BROKEN: " + ", ".join(broken)
        print(
            f"{tally.total} inputs in {elapsed:.0f} s on {args.storage} storage; "
            f"then Health, Create, Get, Watch: {after}"
        )
        if args.dump:
            tally.dump(args.dump)
            print(f"smallest failing inputs written to {args.dump}")
        http_tally, http_broken = _fuzz_http(args, errors, harness)
        decoder = manifests.DecoderTally()
        start = time.monotonic()
        if args.manifests:
            manifests.fuzz_decoder(decoder, args.manifests)
            print(decoder.report())
            print(f"in {time.monotonic() - start:.0f} s")
    finally:
        root.removeHandler(errors)
        for h in quiet:
            root.addHandler(h)
        if etcd is not None:
            etcd.stop()
        if etcd_dir:
            shutil.rmtree(etcd_dir, ignore_errors=True)
    failed = tally.failures or broken or decoder.failures or http_tally.failures or http_broken
    return 1 if failed else 0


def _fuzz_http(args: argparse.Namespace, errors: Any, harness: Any) -> tuple[Any, bool]:
    """The HTTP API's routes, `--examples` inputs per shape, on in-memory storage whose
    writes are recorded (a request answered with an error must not have written)."""
    from kubera.fuzz import http_inputs

    server = harness.ServerThread(config=harness.FUZZ_API_CONFIG, http=True, record_writes=True)
    server.start()
    tally = harness.Tally()
    try:
        caller = http_inputs.HttpCaller(server.url, errors, writes=server.writes)
        seeded = http_inputs.seed_http(caller)
        start = time.monotonic()
        for shape in ("raw", "random", "crafted"):
            http_inputs.fuzz_http(caller, tally, shape, examples=args.examples)
        elapsed = time.monotonic() - start
        after = http_inputs.Request(
            "GET", http_inputs.Route("/api/v1/namespaces/default/pods", "pods"), "", "", "", b""
        )
        broken = caller.call(after)[0] != "200"
    finally:
        server.stop()
    print(tally.report())
    print(
        f"HTTP: {tally.total} inputs in {elapsed:.0f} s ({seeded} seed objects); then a list of "
        f"pods: {'BROKEN' if broken else 'answers'}"
    )
    return tally, broken
