"""Fault injection on a running cluster, for `kubera chaos` and the benchmarks: find the
leader of an election from etcd, then kill it (SIGKILL), pause it (SIGSTOP … SIGCONT),
cut it off from etcd and the apiserver (its partition relays, through its chaos control
RPC), restart etcd, or kill a node pool.

The leader of record is the value of the election key (`/kubera/leaderelection/<ns>/<name>`);
replicas register their process id and control address under `/kubera/replicas/…`
(actors/replica.py), so nothing here needs Ray.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import time
from dataclasses import dataclass

import grpc

from kubera import procs
from kubera.context import Context
from kubera.errors import CliError
from protos.kubera.v1 import chaos_pb2, chaos_pb2_grpc
from services.storage.etcd import EtcdStorage

ELECTION_PREFIX = "/kubera/leaderelection/"
REPLICAS_PREFIX = "/kubera/replicas/"

#: `--component` names → the Lease their replicas elect on.
COMPONENT_LEASES = {
    "scheduler": "kube-system/kube-scheduler",
    "controller-manager": "kube-system/kube-controller-manager",
}


@dataclass(frozen=True)
class Leader:
    lease: str  # namespace/name
    identity: str
    term: int  # the election key's create_revision: the fencing token of the term
    pid: int
    control: str
    record: dict


async def replicas(storage: EtcdStorage, lease: str = "") -> list[dict]:
    """The live replicas registered for `lease` ("namespace/name"; "": every lease), each
    record with its "lease" added (records of dead processes skipped)."""
    prefix = f"{REPLICAS_PREFIX}{lease}/" if lease else REPLICAS_PREFIX
    kvs, _ = await storage.list(prefix)
    out = []
    for kv in kvs:
        try:
            rec = json.loads(kv.value)
        except ValueError:
            continue
        if procs.alive(int(rec.get("pid", 0))):
            namespace, name = kv.key[len(REPLICAS_PREFIX) :].split("/")[:2]
            out.append({**rec, "lease": f"{namespace}/{name}"})
    return out


async def leader(storage: EtcdStorage, lease: str) -> Leader | None:
    """The current holder of `lease`'s election and its process, or None."""
    kv = await storage.get(f"{ELECTION_PREFIX}{lease}")
    if kv is None:
        return None
    identity = kv.value.decode(errors="replace")
    for rec in await replicas(storage, lease):
        if rec.get("identity") == identity:
            return Leader(lease, identity, kv.create_revision, int(rec["pid"]), rec["control"], rec)
    return None


async def wait_leader(
    storage: EtcdStorage, lease: str, timeout: float, *, not_term: int = 0
) -> Leader:
    """The leader of `lease` once there is one (of a term other than `not_term`)."""
    deadline = time.monotonic() + timeout
    while True:
        found = await leader(storage, lease)
        if found is not None and found.term != not_term:
            return found
        if time.monotonic() >= deadline:
            raise CliError(
                f"no leader for Lease {lease} within {timeout:g}s"
                + (" (is it running in shared-state mode, or not at all?)" if not found else "")
            )
        await asyncio.sleep(0.05)


def kill(target: Leader) -> None:
    os.kill(target.pid, signal.SIGKILL)


async def pause(target: Leader, seconds: float) -> None:
    """SIGSTOP, wait, SIGCONT (SIGCONT even if the wait is cancelled)."""
    os.kill(target.pid, signal.SIGSTOP)
    try:
        await asyncio.sleep(seconds)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(target.pid, signal.SIGCONT)


async def partition(target: Leader, seconds: float) -> float:
    """Cut the leader off from etcd and the apiserver for `seconds` (its relays hold all
    traffic, then deliver it); returns the seconds the partition lasts."""
    async with grpc.aio.insecure_channel(target.control) as ch:
        resp = await chaos_pb2_grpc.ChaosStub(ch).Partition(
            chaos_pb2.PartitionRequest(seconds=seconds), timeout=10
        )
    return resp.until_seconds_from_now


def restart_etcd(ctx: Context, timeout: float = 60.0) -> int:
    """SIGTERM the embedded etcd (SIGKILL can corrupt etcd 3.5.0–3.5.2's data, see
    etcd-io/etcd#13766); the supervisor starts it again on the same ports and data dir.
    Returns the new etcd's PID once the supervisor has recorded it and it answers."""
    from kubera.context import load_context

    pid = ctx.pids.get("etcd")
    if not pid:
        raise CliError(
            "this cluster's etcd was not started by kubera (--etcd): restart it yourself"
        )
    if not procs.alive(pid, ctx.started.get(str(pid), 0)):
        raise CliError(f"etcd (pid {pid}) is not running")
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        new = load_context().pids.get("etcd", 0)
        if new and new != pid and procs.alive(new):
            return new
    raise CliError(f"etcd did not come back within {timeout:g}s (see the supervisor's log)")


def kill_pool(ctx: Context, name: str) -> dict:
    pools = {p["name"]: p for p in ctx.node_pools}
    if name.isdigit() and f"pool-{name}" in pools:
        name = f"pool-{name}"
    pool = pools.get(name)
    if pool is None:
        raise CliError(f"no node pool {name!r}; this cluster has: {', '.join(pools) or 'none'}")
    try:
        os.kill(int(pool["pid"]), signal.SIGKILL)
    except ProcessLookupError:
        raise CliError(f"node pool {name} (pid {pool['pid']}) is not running") from None
    return pool
