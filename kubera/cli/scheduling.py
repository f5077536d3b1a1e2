"""Scheduling verbs: `explain pod`, which prints the scheduler's decision traces for a pod,
and `schedulers`, the scheduler replicas and what each is doing. (`cordon` and `taint`
change nodes: they are in `kubera.cli.nodes`.)"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import grpc

from kubera.errors import CliError
from kubera.launch.context import load_context
from kubera.launch.credentials import admin_channel
from protos.kubera.v1 import scheduler_pb2 as spb
from protos.kubera.v1 import scheduler_pb2_grpc as spb_grpc
from services.clock import rfc3339


def register(sub: argparse._SubParsersAction) -> None:
    e = sub.add_parser(
        "explain", help="why a pod is where it is, or still pending (scheduler traces)"
    )
    e.add_argument("kind", choices=["pod", "pods", "po"])
    e.add_argument("name")
    e.add_argument("-n", "--namespace", default="default")
    e.set_defaults(func=cmd_explain)
    r = sub.add_parser(
        "schedulers",
        help="the scheduler replicas: deployment, leader or standby, pods scheduled, pending, "
        "and in shared-state mode Omega's measures",
    )
    r.add_argument("-o", "--output", choices=["table", "json"], default="table")
    r.set_defaults(func=cmd_schedulers)


def render_attempts(key: str, attempts: list[spb.TraceAttempt]) -> str:
    if not attempts:
        return f"No scheduling attempts recorded for pod {key} (not tried yet, bound by nodeName, or the scheduler restarted)."
    out = [f"Pod {key}: {len(attempts)} attempt(s), latest last"]
    for i, a in enumerate(attempts, 1):
        head = f"#{i} {rfc3339(a.time)}  profile {a.profile}  cycle {a.cycle}  {a.result}"
        if a.node:
            head += f" → {a.node}"
        out.append(f"{head}  ({a.duration_seconds * 1000:.1f} ms)")
        if a.message:
            out.append(f"   {a.message}")
        if a.result == "gated":  # held before any scheduling cycle: no nodes were looked at
            continue
        out.append(
            f"   nodes: {a.nodes_total} in cluster, {a.nodes_evaluated} evaluated, {a.nodes_feasible} feasible"
        )
        if a.rejections:
            out.append("   rejected by:")
            width = max(len(r.plugin) for r in a.rejections)
            for r in a.rejections:
                sample = ", ".join(r.nodes[:5]) + (" …" if r.count > 5 else "")
                out.append(f"     {r.plugin:<{width}}  {r.count:>5} × {r.reason}  [{sample}]")
        if a.HasField("preemption"):
            out.extend(_preemption_lines(a.preemption))
        if a.top_scores:
            out.append("   top scores:")
            for s in a.top_scores:
                parts = ", ".join(f"{p} {v}" for p, v in sorted(s.by_plugin.items()))
                out.append(f"     {s.node}: {s.total}  ({parts})")
    return "\n".join(out)


#: Candidates `explain pod` lists per preemption attempt (the chosen one always).
MAX_CANDIDATES_SHOWN = 10


def _preemption_lines(p: Any) -> list[str]:
    """The preemption part of an attempt: eligibility, candidates considered, victims."""
    if not p.eligible:
        return [f"   preemption: {p.reason}"]
    out = [
        f"   preemption: {p.potential_nodes} node(s) where it might help, "
        f"{p.dry_runs} dry run(s), {len(p.candidates)} candidate(s)"
    ]
    shown = [c for c in p.candidates[:MAX_CANDIDATES_SHOWN]]
    shown += [c for c in p.candidates[MAX_CANDIDATES_SHOWN:] if c.node == p.node]
    for c in shown:
        chosen = "  ← chosen" if c.node == p.node else ""
        out.append(
            f"     {c.node}: {len(c.victims)} victim(s) [{', '.join(c.victims)}], "
            f"{c.pdb_violations} PDB violation(s){chosen}"
        )
    if len(p.candidates) > len(shown):
        out.append(f"     … {len(p.candidates) - len(shown)} more candidate(s)")
    if p.node:
        out.append(f"   nominated {p.node}; preempting {', '.join(p.victims)}")
        if p.why:
            out.append(f"   chosen by: {p.why}")
    elif p.reason:
        out.append(f"   no candidate: {p.reason}")
    return out


async def _scheduler_replicas(ctx) -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    """The record of every live scheduler replica (all deployments, leaders and standbys),
    with its deployment's Lease as "lease" (namespace/name); falls back to the address
    `kubera up` recorded when etcd cannot be read."""
    from kubera import chaos
    from services.storage.etcd import EtcdStorage

    fallback = [{"scheduler": ctx.scheduler, "lease": "", "identity": ""}] if ctx.scheduler else []
    storage = EtcdStorage(ctx.etcd, timeout=5)
    try:
        await storage.connect()
        recs = await chaos.replicas(storage)
    except Exception:  # noqa: BLE001 - fall back to the address `kubera up` recorded
        return fallback
    finally:
        await storage.close()
    out = [r for r in recs if r.get("component") == "kube-scheduler" and r.get("scheduler")]
    return out or fallback


async def _scheduler_addresses(ctx) -> list[str]:  # type: ignore[no-untyped-def]
    """Every live scheduler replica's API (the attempts of a pod may have been made by
    several leaders in turn)."""
    return [rec["scheduler"] for rec in await _scheduler_replicas(ctx)]


def cmd_explain(args: argparse.Namespace) -> int:
    ctx = load_context()

    async def one(address: str) -> list[spb.TraceAttempt]:
        async with admin_channel(address) as ch:
            stub = spb_grpc.SchedulerStub(ch)
            resp = await stub.Explain(
                spb.ExplainRequest(namespace=args.namespace, name=args.name), timeout=10
            )
            return list(resp.attempts)

    async def run() -> list[spb.TraceAttempt]:
        addresses = await _scheduler_addresses(ctx)
        if not addresses:
            raise CliError("this cluster runs no scheduler (started with --no-scheduler?)")
        found = await asyncio.gather(*(one(a) for a in addresses), return_exceptions=True)
        attempts = [a for r in found if isinstance(r, list) for a in r]
        errors = [r for r in found if isinstance(r, BaseException)]
        if not attempts and errors:
            e = errors[0]
            if isinstance(e, grpc.aio.AioRpcError):
                raise CliError(f"scheduler: {e.details()}")
            raise e
        return sorted(attempts, key=lambda a: a.time)

    attempts = asyncio.run(run())
    print(render_attempts(f"{args.namespace}/{args.name}", attempts))
    return 0


async def _health(address: str) -> spb.SchedulerHealthResponse | str:
    """A replica's health, or what went wrong asking it."""
    try:
        async with admin_channel(address) as ch:
            return await spb_grpc.SchedulerStub(ch).Health(  # type: ignore[no-any-return]
                spb.SchedulerHealthRequest(), timeout=5
            )
    except grpc.aio.AioRpcError as e:
        return f"unreachable ({e.code().name})"


def _replica_row(rec: dict[str, Any], h: spb.SchedulerHealthResponse | str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "lease": rec.get("lease", ""),
        "identity": rec.get("identity", ""),
        "pid": rec.get("pid", 0),
        "address": rec.get("scheduler", ""),
    }
    if isinstance(h, str):
        return {**row, "error": h}
    row.update(
        mode=h.mode or "leader",
        leading=h.leading,
        terms=h.terms,
        scheduled=h.scheduled,
        pending=dict(h.pending),
    )
    if h.HasField("shared_state"):
        # Field by field: MessageToDict would render the int64 counts as strings.
        stats = h.shared_state
        row["shared_state"] = {f.name: getattr(stats, f.name) for f in stats.DESCRIPTOR.fields}
    return row


def render_replicas(rows: list[dict[str, Any]]) -> str:
    """One line per replica; shared-state replicas get a second line with Omega's measures."""
    head = ["DEPLOYMENT", "IDENTITY", "PID", "MODE", "ROLE", "TERMS", "SCHEDULED", "PENDING"]
    table = [head]
    omega: list[tuple[int, dict[str, Any]]] = []
    for row in rows:
        if "error" in row:
            table.append(
                [row["lease"], row["identity"], str(row["pid"]), "", row["error"], "", "", ""]
            )
            continue
        mode = row["mode"]
        role = "active" if mode == "shared-state" else ("leader" if row["leading"] else "standby")
        if mode == "shared-state" and not row["leading"]:
            role = "starting"
        pending = "/".join(
            str(row["pending"].get(q, 0)) for q in ("active", "backoff", "unschedulable")
        )
        table.append(
            [
                row["lease"],
                row["identity"],
                str(row["pid"]),
                mode,
                role,
                str(row["terms"]),
                str(row["scheduled"]),
                pending,
            ]
        )
        if "shared_state" in row:
            omega.append((len(table) - 1, row["shared_state"]))
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = ["   ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.append("PENDING: active/backoff/unschedulable")
    for i, s in omega:
        lines.append(
            f"{table[i][1]}: binds {s['binds']}, conflicts {s['conflicts']} "
            f"(conflict fraction {s['conflict_fraction']:.4f}), lost pods {s['lost_pods']}, "
            f"busy useful {s['useful_busy_seconds']:.2f}s wasted {s['wasted_busy_seconds']:.2f}s, "
            f"queue wait p50/p90/p99 {s['queue_wait_p50_seconds']:.3f}/"
            f"{s['queue_wait_p90_seconds']:.3f}/{s['queue_wait_p99_seconds']:.3f}s, "
            f"attempts per pod {s['attempts_per_pod_mean']:.3f} (max {s['attempts_per_pod_max']})"
        )
    return "\n".join(lines)


def cmd_schedulers(args: argparse.Namespace) -> int:
    ctx = load_context()

    async def run() -> list[dict[str, Any]]:
        recs = await _scheduler_replicas(ctx)
        healths = await asyncio.gather(*(_health(r["scheduler"]) for r in recs))
        rows = [_replica_row(r, h) for r, h in zip(recs, healths, strict=True)]
        return sorted(rows, key=lambda r: (r["lease"], r["identity"]))

    rows = asyncio.run(run())
    if not rows:
        raise CliError("this cluster runs no scheduler (started with --no-scheduler?)")
    if args.output == "json":
        print(json.dumps(rows, indent=2))
    else:
        print(render_replicas(rows))
    return 0
