"""The work of kubera's own opcodes: `chaos` faults (kubera.chaos on the leader of record, etcd,
the apiserver or a node pool) and `check` (the history checker's verdict)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from kubera import chaos
from kubera.errors import CliError
from kubera.experiment import ops as o
from kubera.experiment.model import CheckVerdict, Fault
from kubera.launch.context import Context
from services.chaos import check_history, wait_settled
from services.storage.etcd import EtcdStorage

#: chaos actions → the fault kind recorded in results.
FAULT_KIND = {
    "killLeader": "kill",
    "pauseLeader": "pause",
    "partitionLeader": "partition",
    "restartEtcd": "restart-etcd",
    "killPool": "kill-pool",
    "killApiserver": "kill-apiserver",
}


class FaultError(CliError):
    """A fault that cannot be injected (the op's error)."""


async def inject(
    op: o.Chaos,
    ctx: Context,
    *,
    now: Callable[[], float],
    record: Callable[[Fault], None],
    wait: float,
    load_context: Callable[[], Context],
) -> None:
    """One fault of `op`, `record`ed (on the run's clock, `now`) when it is injected; `wait`
    bounds the waits for a leader and for a restarted etcd or apiserver."""
    kind = FAULT_KIND[op.action]
    if kind in ("kill", "pause", "partition"):
        lease = chaos.COMPONENT_LEASES[op.component]
        storage = await chaos.connect_storage(ctx)
        try:
            target = await chaos.wait_leader(storage, lease, wait)
        finally:
            await storage.close()
        t = now()
        seconds = op.duration or 0.0
        record(
            Fault(
                t=round(t, 3),
                kind=kind,
                target=target.identity,
                duration=seconds if kind != "kill" else None,
            )
        )
        if kind == "kill":
            chaos.kill(target)
        elif kind == "pause":
            await chaos.pause(target, seconds)
        else:
            await chaos.partition(target, seconds)
    elif kind == "restart-etcd":
        record(Fault(t=round(now(), 3), kind=kind, target="etcd"))
        await asyncio.to_thread(chaos.restart_etcd, ctx, wait)
    elif kind == "kill-pool":
        pools = ctx.node_pools
        if not pools:
            raise FaultError(f"{op.phase}: killPool needs hollow nodes (cluster.hollowNodes)")
        name = op.pool or str(pools[0]["name"])
        record(Fault(t=round(now(), 3), kind=kind, target=name))
        chaos.kill_pool(ctx, name)
    else:
        record(Fault(t=round(now(), 3), kind=kind, target="apiserver"))
        await chaos.kill_apiserver(ctx, timeout=wait, context_loader=load_context)


async def wait_faults(
    tasks: list[asyncio.Task[None]], timeout: float
) -> tuple[list[str], BaseException | None]:
    """Wait up to `timeout` s for the fault tasks; those still running are cancelled (a
    paused process gets its SIGCONT). The names of those cut short, and the first error."""
    done, pending = await asyncio.wait(tasks, timeout=timeout)
    if pending:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=30)
    errors = [
        e
        for task in tasks
        if task in done and not task.cancelled() and (e := task.exception()) is not None
    ]
    return sorted(task.get_name() for task in pending), (errors[0] if errors else None)


async def check(
    etcd: str, settle: float, *, start_revision: int = 1
) -> tuple[CheckVerdict, dict[str, int]]:
    """`kubera check --settle S --json`'s verdict: wait for the pods to settle, then replay
    etcd's history (from `start_revision`) through the checker; with the fenced binds per
    leader identity it counted."""
    storage = EtcdStorage(etcd)
    try:
        await wait_settled(storage, settle)
        verdict = await check_history(storage, start_revision=start_revision)
    finally:
        await storage.close()
    lines = verdict.lines()
    return (
        CheckVerdict(
            ok=verdict.ok, violations=tuple(str(v) for v in verdict.violations), summary=lines[-1]
        ),
        dict(verdict.counts.binds_by_holder),
    )
