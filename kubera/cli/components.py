"""`kubera components` (also `kubera get components`): every component of the running
cluster — the apiserver, the scheduler and controller-manager replicas, the node pools —
with the Ray node it runs on, its process, its address, whether it answers, its role and
its restarts.

Where each runs comes from the context file, which the supervisor (the one process that
talks to Ray) keeps current; whether it answers and its role come from asking each
component itself: the apiserver's and a scheduler's Health, a replica's chaos Status (its
identity, compared with the holder of its election key in etcd), a pool's Stats.

    NAME                 KIND                ROLE      NODE                   PID    ADDRESS          STATE   RESTARTS
    apiserver            apiserver           -         127.0.0.1 (5dbafb49)   4242   127.0.0.1:40111  alive   0
    scheduler            scheduler           leader    127.0.0.1 (5dbafb49)   4250   127.0.0.1:40211  alive   0
    scheduler-0-1        scheduler           standby   127.0.0.2 (1d3784b0)   4301   127.0.0.2:41771  alive   1
    pool-0               node-pool           -         127.0.0.3 (ad9ab71a)   4388   127.0.0.3:42001  alive   1
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
from typing import Any

from kubera import chaos
from kubera.errors import CliError
from kubera.launch.context import Context, load_context
from kubera.launch.credentials import admin_channel
from kubera.printing.tables import plain_table
from protos.kubera.v1 import chaos_pb2, chaos_pb2_grpc, scheduler_pb2, scheduler_pb2_grpc
from protos.kubera.v1 import nodepool_pb2 as npb
from protos.kubera.v1 import nodepool_pb2_grpc as npb_grpc
from services.client import Client
from services.storage.etcd import EtcdStorage
from services.storage.keys import ELECTION_PREFIX

#: Seconds each component has to answer.
PROBE_TIMEOUT = 3.0
#: The controller-manager replicas' election (as the supervisor starts them).
CONTROLLER_LEASE = chaos.COMPONENT_LEASES["controller-manager"]
HEADERS = ("NAME", "KIND", "ROLE", "NODE", "PID", "ADDRESS", "STATE", "RESTARTS")


def register(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "components",
        help="where every component runs (Ray node, process, address), its role and state",
    )
    p.add_argument("-o", "--output", choices=("json",), help="output format")
    p.set_defaults(func=cmd_components)


def cmd_components(args: argparse.Namespace) -> int:
    """Also `kubera get components [-o json]` (any other -o prints the table)."""
    ctx = load_context()
    if not ctx.components:
        raise CliError(
            "this cluster's context lists no components (started by an older kubera?); "
            "run `kubera down` and `kubera up` again"
        )
    rows = asyncio.run(probe_all(ctx))
    if args.output == "json":
        print(json.dumps({"components": rows, "placement": ctx.placement}, indent=2))
    else:
        print(table(rows), end="")
    return 0


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        [
            r["name"],
            r["kind"],
            r["role"] or "-",
            f"{r['node_ip'] or '-'} ({r['node_id'][:8]})" if r.get("node_id") else "-",
            str(r["pid"] or "-"),
            r.get("address") or "-",
            r["state"],
            str(r["restarts"]),
        ]
        for r in rows
    ]
    return plain_table(HEADERS, lines)


async def probe_all(ctx: Context) -> list[dict[str, Any]]:
    """Each component's record with `answered`, `role` and `state` filled in: "alive"
    when it answered, else Ray's state as the supervisor saw it last (restarting, dead,
    pending), or "starting"/"unreachable" when Ray has it alive but it does not answer."""
    holders = await _election_holders(ctx.etcd, [CONTROLLER_LEASE])
    rows = await asyncio.gather(*(_probe(dict(r), holders) for r in ctx.components))
    return list(rows)


async def _probe(rec: dict[str, Any], holders: dict[str, str]) -> dict[str, Any]:
    ray_state = rec.get("state", "")
    rec["ray_state"] = ray_state
    rec["role"] = ""
    answered = False
    address = rec.get("address", "")
    with contextlib.suppress(Exception):
        if address:
            rec["role"] = await asyncio.wait_for(_ask(rec, holders), PROBE_TIMEOUT)
            answered = True
    rec["answered"] = answered
    if answered:
        rec["state"] = "alive"
    elif ray_state == "alive":  # Ray has it; it has not (re)started serving, or hangs
        rec["state"] = "unreachable" if address else "starting"
    return rec


async def _ask(rec: dict[str, Any], holders: dict[str, str]) -> str:
    """The component's role, from its own answer (raises when it does not answer)."""
    kind, address = rec["kind"], rec["address"]
    if kind == "apiserver":
        client = Client(address, timeout=PROBE_TIMEOUT)
        try:
            await client.health(timeout=PROBE_TIMEOUT)
        finally:
            await client.close()
        return ""
    async with admin_channel(address) as ch:
        if kind == "scheduler":
            h = await scheduler_pb2_grpc.SchedulerStub(ch).Health(
                scheduler_pb2.SchedulerHealthRequest(), timeout=PROBE_TIMEOUT
            )
            if h.mode == "shared-state":
                return "active" if h.leading else "idle"
            return "leader" if h.leading else "standby"
        if kind == "controller-manager":
            s = await chaos_pb2_grpc.ChaosStub(ch).Status(
                chaos_pb2.StatusRequest(), timeout=PROBE_TIMEOUT
            )
            return "leader" if holders.get(CONTROLLER_LEASE) == s.identity else "standby"
        await npb_grpc.NodePoolStub(ch).Stats(npb.PoolStatsRequest(), timeout=PROBE_TIMEOUT)
        return ""


async def _election_holders(etcd: str, leases: list[str]) -> dict[str, str]:
    """lease ("namespace/name") -> the identity holding its election ({} when etcd does
    not answer: roles are then left out)."""
    out: dict[str, str] = {}
    storage = EtcdStorage(etcd, timeout=PROBE_TIMEOUT)
    try:
        await asyncio.wait_for(storage.connect(), PROBE_TIMEOUT)
        for lease in leases:
            kv = await storage.get(f"{ELECTION_PREFIX}{lease}")
            if kv is not None:
                out[lease] = kv.value.decode(errors="replace")
    except Exception:  # noqa: BLE001 - etcd down: the table shows what answers
        pass
    finally:
        with contextlib.suppress(Exception):
            await storage.close()
    return out
