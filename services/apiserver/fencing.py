"""Fencing tokens on any write: the election key a leader won, and the create_revision it
won it at, compared in the same etcd txn as the write.

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
from dataclasses import dataclass

from services.api.errors import FieldError, InvalidError, PreconditionError, invalid
from services.storage import KeyValue

#: gRPC metadata carrying a fencing token on any write.
METADATA_KEY = "kubera-fencing"

#: The annotation a bind leaves on the pod: who was allowed to bind it, for `kubera check`.
BOUND_BY = "kubera.io/bound-by"


@dataclass(frozen=True)
class Fencing:
    """A leader's fencing token: its election key and the create_revision it won it at."""

    key: str
    create_revision: int

    def __str__(self) -> str:
        return f"{self.key}@{self.create_revision}"

    def validate(self, kind: str, name: str) -> None:
        if not self.key or self.create_revision <= 0:
            raise InvalidError(
                kind,
                name,
                [
                    invalid(
                        "fencing",
                        str(self),
                        "a fencing token needs the election key and its create_revision (> 0)",
                    )
                ],
            )

    @classmethod
    def parse(cls, text: str) -> Fencing:
        key, sep, rev = text.rpartition("@")
        if not sep or not key or not rev.isdigit() or int(rev) <= 0:
            raise InvalidError(
                "Request",
                METADATA_KEY,
                [
                    FieldError(
                        f"metadata.{METADATA_KEY}",
                        f"Invalid value: {text!r}: expected <election key>@<create_revision>",
                    )
                ],
            )
        return cls(key, int(rev))


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


# -- what a bind records ----------------------------------------------------------------


def bound_by_fenced(fencing: Fencing) -> str:
    return f"fenced {fencing}"


def bound_by_allocation(allocation_key: str) -> str:
    return f"allocation {allocation_key}"


def parse_bound_by(value: str) -> tuple[str, str, int]:
    """("fenced", key, create_revision) | ("allocation", key, 0) | ("", "", 0)."""
    mode, _, rest = value.partition(" ")
    if mode == "fenced":
        key, _, rev = rest.rpartition("@")
        return ("fenced", key, int(rev)) if rev.isdigit() else ("", "", 0)
    if mode == "allocation" and rest:
        return "allocation", rest, 0
    return "", "", 0
