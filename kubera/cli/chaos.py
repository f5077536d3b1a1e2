"""`kubera chaos`: break things on purpose.

- `kill-node` / `revive-node`: a hollow node's kubelet stops (no lease renewals or
  status, its pods stop progressing) and comes back; through the node pools' gRPC API.
- `kill-leader`, `pause-leader --for S`, `partition-leader --for S`: the leader of a
  scheduler (or controller-manager) election is SIGKILLed, SIGSTOPped, or cut off from
  etcd and the apiserver while it still believes it leads.
- `kill-apiserver`: SIGKILL the apiserver's process; it comes back on its address (Ray
  re-creates it, the supervisor starts it) and the verb reports the time from the kill
  to the first successful write and to the first bind.
- `restart-etcd`, `kill-pool P`; `run --faults N --interval S`: a scripted mix.

`kubera check` afterwards proves nothing was bound twice, overcommitted or lost. The actions
themselves are `kubera.chaos`; this module parses the flags and prints.
"""

from __future__ import annotations

import argparse
import asyncio
import time

import grpc

from kubera import chaos
from kubera.errors import CliError
from kubera.launch.context import load_context
from services.api.machinery.duration import parse_duration


def _leader_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--component",
        choices=sorted(chaos.COMPONENT_LEASES),
        default="scheduler",
        help="whose leader (default: scheduler)",
    )
    p.add_argument(
        "--lease",
        default="",
        metavar="NAMESPACE/NAME",
        help="the election's Lease instead (another scheduler deployment's, e.g. kube-system/my-scheduler)",
    )
    p.add_argument(
        "--wait", type=float, default=30.0, metavar="S", help="seconds to wait for a leader"
    )


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "chaos", help="fault injection: leaders, etcd, node pools, hollow nodes"
    )
    verbs = parser.add_subparsers(dest="chaos_command", metavar="ACTION")
    verbs.required = True
    p = verbs.add_parser("kill-leader", help="SIGKILL the leader's process")
    _leader_args(p)
    p.set_defaults(func=cmd_leader_fault, fault="kill", seconds=0.0)
    for verb, fault, words in (
        ("pause-leader", "pause", "SIGSTOP the leader, SIGCONT it after --for"),
        (
            "partition-leader",
            "partition",
            "cut the leader off from etcd and the apiserver for --for (it still believes it leads)",
        ),
    ):
        p = verbs.add_parser(verb, help=words)
        _leader_args(p)
        p.add_argument("--for", dest="seconds", required=True, metavar="D", help="e.g. 5s")
        p.set_defaults(func=cmd_leader_fault, fault=fault)
    p = verbs.add_parser("restart-etcd", help="stop the embedded etcd; kubera starts it again")
    p.set_defaults(func=cmd_restart_etcd)
    p = verbs.add_parser(
        "kill-apiserver",
        help="SIGKILL the apiserver; time kill → first successful write and → first bind",
    )
    p.add_argument(
        "--wait", type=float, default=60.0, metavar="S", help="seconds to wait for it to be back"
    )
    p.set_defaults(func=cmd_kill_apiserver)
    p = verbs.add_parser(
        "kill-pool",
        help="SIGKILL a node pool (Ray brings it back and it takes its nodes over; they go "
        "NotReady only if that takes longer than their lease)",
    )
    p.add_argument("pool", metavar="POOL", help="pool name (pool-0) or index")
    p.set_defaults(func=cmd_kill_pool)
    p = verbs.add_parser("run", help="a scripted mix of leader faults, one every --interval")
    _leader_args(p)
    p.add_argument("--faults", type=int, required=True, metavar="N")
    p.add_argument("--interval", required=True, metavar="D", help="pause between faults, e.g. 3s")
    p.add_argument(
        "--kinds",
        default="kill,pause,partition",
        help=(
            "comma-separated fault kinds to draw from, uniformly (name one twice to draw it "
            f"twice as often): {', '.join(chaos.RUN_KINDS)}"
        ),
    )
    p.add_argument(
        "--for",
        dest="seconds",
        default="",
        metavar="D",
        help="how long a pause or partition lasts (default: 1.5 × the lease's duration)",
    )
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(func=cmd_run)
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


def cmd_set_alive(args: argparse.Namespace) -> int:
    ctx = load_context()
    if not ctx.node_pools:
        raise CliError("this cluster runs no hollow nodes (start it with `kubera up --nodes N`)")
    try:
        changed, unchanged = asyncio.run(chaos.set_alive(ctx.node_pools, args.nodes, args.alive))
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


def _seconds(flag: str, text: str) -> float:
    try:
        value = parse_duration(text)
    except ValueError as e:
        raise CliError(f"{flag}: {e}") from None
    if not 0 < value <= 3600:
        raise CliError(f"{flag}: must be > 0 and <= 1h, got {text}")
    return value


def _lease(args: argparse.Namespace) -> str:
    lease = args.lease or chaos.COMPONENT_LEASES[args.component]
    if lease.count("/") != 1 or not all(lease.split("/")):
        raise CliError(f"--lease: expected NAMESPACE/NAME, got {lease!r}")
    return lease


def cmd_leader_fault(args: argparse.Namespace) -> int:
    ctx = load_context()
    seconds = _seconds("--for", args.seconds) if args.fault != "kill" else 0.0
    try:
        print(asyncio.run(chaos.leader_fault(ctx, _lease(args), args.fault, seconds, args.wait)))
    except grpc.aio.AioRpcError as e:
        raise CliError(f"leader's chaos control: {e.details()}") from None
    except ProcessLookupError:
        raise CliError("the leader's process exited before the fault landed") from None
    return 0


def cmd_restart_etcd(args: argparse.Namespace) -> int:
    ctx = load_context()
    t0 = time.monotonic()
    pid = chaos.restart_etcd(ctx)
    print(f"etcd restarted (pid {pid}) in {time.monotonic() - t0:.1f}s")
    return 0


def cmd_kill_apiserver(args: argparse.Namespace) -> int:
    ctx = load_context()
    recovery = asyncio.run(chaos.kill_apiserver(ctx, timeout=args.wait))
    print(chaos.describe_recovery(recovery))
    return 0


def cmd_kill_pool(args: argparse.Namespace) -> int:
    pool = chaos.kill_pool(load_context(), args.pool)
    print(f"killed node pool {pool['name']} (pid {pool['pid']}, nodes {pool['count']})")
    return 0


def _run_plan(args: argparse.Namespace) -> chaos.RunPlan:
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in chaos.RUN_KINDS]
    if not kinds or bad:
        raise CliError(
            f"--kinds: unknown fault kind(s) {', '.join(bad) or '(none given)'}; "
            f"expected {', '.join(chaos.RUN_KINDS)}"
        )
    if args.faults < 1:
        raise CliError(f"--faults: must be >= 1, got {args.faults}")
    return chaos.RunPlan(
        kinds=tuple(kinds),
        faults=args.faults,
        interval=_seconds("--interval", args.interval),
        seconds=_seconds("--for", args.seconds) if args.seconds else 0.0,
        seed=args.seed,
        wait=args.wait,
    )


def cmd_run(args: argparse.Namespace) -> int:
    ctx = load_context()
    t0 = time.monotonic()
    try:
        counts = asyncio.run(chaos.run(ctx, _run_plan(args), _lease(args)))
    except grpc.aio.AioRpcError as e:
        raise CliError(f"leader's chaos control: {e.details()}") from None
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    print(f"{sum(counts.values())} faults in {time.monotonic() - t0:.0f}s ({summary})")
    print("check the run with: kubera check")
    return 0
