"""`kubera bench BENCH`: one subcommand per module of `kubera.bench`."""

from __future__ import annotations

import argparse

from kubera.bench import (
    apiserver,
    capacity,
    chaos,
    failover,
    fuzz,
    httpapi,
    nodes,
    scheduling,
    shared,
)

#: Each module has `register(bench_subparsers)`, in `kubera bench --help` order.
BENCHES = (apiserver, httpapi, scheduling, capacity, nodes, shared, failover, chaos, fuzz)


def register(sub: argparse._SubParsersAction) -> None:
    bench = sub.add_parser("bench", help="measure kubera (prints figures; not a test)")
    bsub = bench.add_subparsers(dest="bench", metavar="BENCH")
    bsub.required = True
    for module in BENCHES:
        module.register(bsub)
