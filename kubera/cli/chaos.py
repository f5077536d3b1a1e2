"""`kubera chaos`: break things on purpose.

- `kill-node` / `revive-node`: a hollow node's kubelet stops (no lease renewals or
  status, its pods stop progressing) and comes back; through the node pools' gRPC API.
- `kill-leader`, `pause-leader --for S`, `partition-leader --for S`: the leader of a
  scheduler (or controller-manager) election is SIGKILLed, SIGSTOPped, or cut off from
  etcd and the apiserver while it still believes it leads (kubera/chaos.py).
- `kill-apiserver`: SIGKILL the apiserver's process; it comes back on its address (Ray
  re-creates it, the supervisor starts it) and the verb reports the time from the kill
  to the first successful write and to the first bind.
- `restart-etcd`, `kill-pool P`; `run --faults N --interval S`: a scripted mix.

`kubera check` afterwards proves nothing was bound twice, overcommitted or lost.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time

import grpc

from kubera import chaos
from kubera.errors import CliError
from kubera.launch.context import Context, load_context
from protos.kubera.v1 import nodepool_pb2 as npb
from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc
from services.api.duration import parse_duration
from services.api.errors import ApiError
from services.api.kinds import BY_KIND
from services.client import Client
from services.storage.etcd import EtcdStorage

#: `chaos run --kinds`: leader faults (kill, pause, partition) and cluster faults.
KINDS = ("kill", "pause", "partition", "restart-etcd", "kill-apiserver")


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
    p = verbs.add_parser("kill-pool", help="SIGKILL a node pool (its nodes go NotReady)")
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
            f"twice as often): {', '.join(KINDS)}"
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


async def _storage(ctx: Context) -> EtcdStorage:
    storage = EtcdStorage(ctx.etcd, timeout=5)
    await storage.connect()
    return storage


async def _leader_fault(ctx: Context, lease: str, fault: str, seconds: float, wait: float) -> str:
    storage = await _storage(ctx)
    try:
        target = await chaos.wait_leader(storage, lease, wait)
    finally:
        await storage.close()
    who = f"leader {target.identity} (pid {target.pid}, term {target.term}) of Lease {lease}"
    if fault == "kill":
        chaos.kill(target)
        return f"killed {who}"
    if fault == "pause":
        print(f"pausing {who} for {seconds:g}s", flush=True)
        await chaos.pause(target, seconds)
        return f"resumed {who}"
    lasts = await chaos.partition(target, seconds)
    return f"partitioned {who} from etcd and the apiserver for {lasts:g}s"


def cmd_leader_fault(args: argparse.Namespace) -> int:
    ctx = load_context()
    seconds = _seconds("--for", args.seconds) if args.fault != "kill" else 0.0
    try:
        print(asyncio.run(_leader_fault(ctx, _lease(args), args.fault, seconds, args.wait)))
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


def describe_recovery(r: chaos.ApiServerRecovery) -> str:
    bind = f"{r.first_bind_s:.2f}s" if r.first_bind_s is not None else "none within the wait"
    back = f"pid {r.new_pid}" if r.new_pid else "its new pid not recorded yet"
    return (
        f"killed apiserver (pid {r.pid}) at {r.address}: first successful write after "
        f"{r.first_write_s:.2f}s, first bind after {bind}; back as {back}"
    )


def cmd_kill_apiserver(args: argparse.Namespace) -> int:
    ctx = load_context()
    recovery = asyncio.run(chaos.kill_apiserver(ctx, timeout=args.wait))
    print(describe_recovery(recovery))
    return 0


def cmd_kill_pool(args: argparse.Namespace) -> int:
    pool = chaos.kill_pool(load_context(), args.pool)
    print(f"killed node pool {pool['name']} (pid {pool['pid']}, nodes {pool['count']})")
    return 0


async def _run(ctx: Context, args: argparse.Namespace, lease: str) -> dict[str, int]:
    kinds = [k.strip() for k in args.kinds.split(",") if k.strip()]
    bad = [k for k in kinds if k not in KINDS]
    if not kinds or bad:
        raise CliError(
            f"--kinds: unknown fault kind(s) {', '.join(bad) or '(none given)'}; "
            f"expected {', '.join(KINDS)}"
        )
    if args.faults < 1:
        raise CliError(f"--faults: must be >= 1, got {args.faults}")
    interval = _seconds("--interval", args.interval)
    rng = random.Random(args.seed)
    storage = await _storage(ctx)
    counts = dict.fromkeys(kinds, 0)
    recoveries: list[chaos.ApiServerRecovery] = []
    background: set[asyncio.Task[None]] = set()
    # Read once, while the apiserver is surely up (not during one of our kills).
    lease_seconds = 0.0
    if not args.seconds and any(k in ("pause", "partition") for k in kinds):
        lease_seconds = await _lease_seconds(ctx, lease)
    try:
        for i in range(args.faults):
            kind = rng.choice(kinds)
            ctx = load_context()  # etcd's and the apiserver's PIDs change with their restarts
            if kind == "restart-etcd":
                pid = await asyncio.to_thread(chaos.restart_etcd, ctx)
                print(f"[{i + 1}/{args.faults}] restarted etcd (pid {pid})", flush=True)
                await storage.close()
                storage = await _storage(ctx)
            elif kind == "kill-apiserver":
                recovery = await chaos.kill_apiserver(ctx, timeout=args.wait)
                recoveries.append(recovery)
                print(f"[{i + 1}/{args.faults}] {describe_recovery(recovery)}", flush=True)
            else:
                target = await chaos.wait_leader(storage, lease, args.wait)
                seconds = _seconds("--for", args.seconds) if args.seconds else 1.5 * lease_seconds
                who = f"{target.identity} (pid {target.pid}, term {target.term})"
                if kind == "kill":
                    chaos.kill(target)
                    print(f"[{i + 1}/{args.faults}] killed {who}", flush=True)
                elif kind == "pause":
                    task = asyncio.create_task(chaos.pause(target, seconds))
                    background.add(task)
                    task.add_done_callback(background.discard)
                    print(f"[{i + 1}/{args.faults}] paused {who} for {seconds:g}s", flush=True)
                else:
                    await chaos.partition(target, seconds)
                    print(f"[{i + 1}/{args.faults}] partitioned {who} for {seconds:g}s", flush=True)
                # the next fault hits the next leader, not the one just hit
                await chaos.wait_leader(storage, lease, args.wait + seconds, not_term=target.term)
            counts[kind] += 1
            if i + 1 < args.faults:
                await asyncio.sleep(interval)
    finally:
        for task in list(background):
            await task  # every paused process gets its SIGCONT
        await storage.close()
    if recoveries:
        print(recovery_summary(recoveries), flush=True)
    return counts


def recovery_summary(recoveries: list[chaos.ApiServerRecovery]) -> str:
    """Median and max of kill → first write and kill → first bind over apiserver kills."""
    writes = [r.first_write_s for r in recoveries]
    binds = [r.first_bind_s for r in recoveries if r.first_bind_s is not None]
    line = (
        f"apiserver kills: {len(recoveries)}; kill → first write median "
        f"{statistics.median(writes):.2f}s, max {max(writes):.2f}s"
    )
    if binds:
        line += f"; kill → first bind median {statistics.median(binds):.2f}s, max {max(binds):.2f}s"
    missing = len(recoveries) - len(binds)
    return line + (f" ({missing} with no bind within the wait)" if missing else "")


async def _lease_seconds(ctx: Context, lease: str) -> float:
    """The Lease's leaseDurationSeconds as published (15 if it has none yet)."""
    namespace, name = lease.split("/")
    async with Client(ctx.apiserver) as c:
        try:
            obj = await c.get(BY_KIND["Lease"], name, namespace)
        except ApiError:
            return 15.0
    return float(obj.spec.lease_duration_seconds or 15)  # type: ignore[attr-defined]


def cmd_run(args: argparse.Namespace) -> int:
    ctx = load_context()
    t0 = time.monotonic()
    try:
        counts = asyncio.run(_run(ctx, args, _lease(args)))
    except grpc.aio.AioRpcError as e:
        raise CliError(f"leader's chaos control: {e.details()}") from None
    summary = ", ".join(f"{k} {v}" for k, v in counts.items())
    print(f"{sum(counts.values())} faults in {time.monotonic() - t0:.0f}s ({summary})")
    print("check the run with: kubera check")
    return 0
