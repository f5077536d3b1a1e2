"""Helpers of kubera's own opcodes: the fault kinds `chaos` records, waiting for its faults
at the end (bounded), and `check` (the history checker's verdict)."""

from __future__ import annotations

import asyncio

from kubera.experiment.measure.model import CheckVerdict
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
