"""`kubera chaos`: break things on purpose. `kill-node` stops a hollow node's kubelet (no
more lease renewals or status, its pods stop progressing) and `revive-node` brings it
back; the node pools do it through their own gRPC API."""

from __future__ import annotations

import argparse
import asyncio

import grpc

from kubera.context import load_context
from kubera.errors import CliError
from protos.kubera.v1 import nodepool_pb2 as npb
from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc


def register(sub: argparse._SubParsersAction) -> None:
    chaos = sub.add_parser("chaos", help="fault injection: kill and revive hollow nodes")
    verbs = chaos.add_subparsers(dest="chaos_command", metavar="ACTION")
    verbs.required = True
    for verb, alive, words in (
        (
            "kill-node",
            False,
            "stop the kubelet of these nodes (no heartbeats, pods stop progressing)",
        ),
        ("revive-node", True, "start the kubelet of these nodes again"),
    ):
        p = verbs.add_parser(verb, help=words)
        p.add_argument("nodes", nargs="+", metavar="NODE")
        p.set_defaults(func=cmd_set_alive, alive=alive, verb=verb)


async def set_alive(pools: list[dict], nodes: list[str], alive: bool) -> tuple[set[str], set[str]]:
    """Ask every pool; returns (changed, already so)."""
    changed: set[str] = set()
    unchanged: set[str] = set()

    async def one(address: str) -> None:
        async with grpc.aio.insecure_channel(address) as ch:
            resp = await npb_grpc.NodePoolStub(ch).SetAlive(
                npb.SetAliveRequest(nodes=nodes, alive=alive), timeout=15
            )
            changed.update(resp.changed)
            unchanged.update(resp.unchanged)

    await asyncio.gather(*(one(p["address"]) for p in pools))
    return changed, unchanged


def cmd_set_alive(args: argparse.Namespace) -> int:
    ctx = load_context()
    if not ctx.node_pools:
        raise CliError("this cluster runs no hollow nodes (start it with `kubera up --nodes N`)")
    try:
        changed, unchanged = asyncio.run(set_alive(ctx.node_pools, args.nodes, args.alive))
    except grpc.aio.AioRpcError as e:
        raise CliError(f"node pool: {e.details()}") from None
    missing = [n for n in args.nodes if n not in changed and n not in unchanged]
    word = "revived" if args.alive else "killed"
    for n in args.nodes:
        if n in changed:
            print(f"node/{n} {word}")
        elif n in unchanged:
            print(f"node/{n} already {'running' if args.alive else 'killed'}")
    if missing:
        raise CliError(
            f"no hollow kubelet runs {', '.join(missing)} (nodes from applied manifests have none)"
        )
    return 0
