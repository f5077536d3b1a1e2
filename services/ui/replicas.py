"""The replicas of every replicated component, for the UI's leaders panel.

Each replica registers a record under /kubera/replicas/<lease namespace>/<lease name>/
<identity> (services/hosts/replica.py): its process, its chaos control address and, for a
scheduler, its API. The Lease names the leader; the records name the standbys beside it.
A record outlives a process killed without a clean shutdown, so each replica is asked
whether it runs (its chaos control's Status, which anyone may call, as the replica it
claims to be); one that does not answer within `ALIVE_TIMEOUT` is shown as gone.
"""

from __future__ import annotations

import asyncio
from typing import Any

from services.chaos import control_status, replica_records
from services.storage import Storage

#: Seconds a replica has to say it runs.
ALIVE_TIMEOUT = 1.0


async def _alive(rec: dict[str, Any]) -> bool:
    status = await control_status(str(rec.get("control", "")), ALIVE_TIMEOUT)
    return status is not None and status.identity == rec.get("identity")


def _seconds(later: Any, earlier: Any) -> float | None:
    if isinstance(later, int | float) and isinstance(earlier, int | float) and later and earlier:
        return round(later - earlier, 3)
    return None


def term(rec: dict[str, Any]) -> dict[str, Any] | None:
    """The replica's last term as a scheduler records it (services/hosts/scheduler.py):
    its fencing token, when it was acquired, how long the lease was free before (the
    failover's gap) and how long until the term's first bind."""
    t = rec.get("last_term")
    if not isinstance(t, dict):
        return None
    return {
        "token": t.get("token", 0),
        "acquired_at": t.get("acquired_at", 0),
        "takeover_seconds": _seconds(t.get("acquired_at"), t.get("free_at")),
        "first_bind_seconds": _seconds(t.get("first_bind_at"), t.get("acquired_at")),
    }


async def replicas(storage: Storage) -> list[dict[str, Any]]:
    """What the leaders panel shows of each replica, alive or not."""
    recs = await replica_records(storage)
    alive = await asyncio.gather(*(_alive(r) for r in recs))
    return [
        {
            "lease": r["lease"],
            "identity": r.get("identity", ""),
            "component": r.get("component", ""),
            "pid": r.get("pid", 0),
            "host": r.get("host", ""),
            "mode": r.get("mode", ""),
            "last_term": term(r),
            "alive": ok,
        }
        for r, ok in zip(recs, alive, strict=True)
    ]
