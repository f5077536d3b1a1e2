"""Fencing tokens on any write: the election key a leader won, and the create_revision it
won it at (services/api/helpers/fencing.py), compared in the same etcd txn as the write.

Why this module exists: client-go's leader election does not fence, so a deposed leader
(paused past its lease, or cut off while it still believes it leads) can write after a new
leader has started. Here a fenced write's txn also compares `create_revision(key) == rev`;
a stale token fails the whole txn and the write is refused as "stale leader".

Binds carry the token in BindRequest.fencing; every other RPC may carry it as gRPC
metadata (`METADATA_KEY: "<key>@<create_revision>"`), which the server's edge puts in the
`CURRENT` context variable for the request's task, and `Store.txn` (store.py) adds the compare.
"""

from __future__ import annotations

import contextvars

from services.api.helpers.fencing import Fencing
from services.api.machinery.errors import PreconditionError
from services.storage import KeyValue

#: The token of the request being served (set by the gRPC edge, per request task).
CURRENT: contextvars.ContextVar[Fencing | None] = contextvars.ContextVar(
    "kubera_fencing", default=None
)


def stale(fencing: Fencing, holder: KeyValue | None, what: str) -> PreconditionError | None:
    """The error for a write whose token is no longer current; None when it still is."""
    held = holder.create_revision if holder else 0
    if held == fencing.create_revision:
        return None
    now = f"is held since revision {held}" if held else "is not held by anyone (the lease expired)"
    return PreconditionError(
        f"stale leader: fencing token {fencing} is no longer current; "
        f"the election key {now}. {what} refused"
    )
