"""The fencing token: the election key a leader won and the create_revision it won it at.

The vocabulary shared by the elector (which hands tokens out), the client (which sends them
with every write) and the apiserver (which checks them in the write's txn: see
services/apiserver/fencing.py), and the `kubera.io/bound-by` record a bind leaves, which the
chaos checker reads.
"""

from __future__ import annotations

from typing import NamedTuple

from services.api.machinery.errors import FieldError, InvalidError, invalid

#: gRPC metadata carrying a fencing token on any write.
METADATA_KEY = "kubera-fencing"

#: The annotation a bind leaves on the pod: who was allowed to bind it, for `kubera check`.
BOUND_BY = "kubera.io/bound-by"


class Fencing(NamedTuple):
    """A leader's fencing token: its election key and the create_revision it won it at.

    What an elector hands out while it leads (`LeaderElector.fencing_token`), what a fenced
    client sends (`METADATA_KEY` metadata, BindRequest.fencing {key, create_revision}) and
    what the apiserver compares in the write's txn. A tuple, so `key, rev = token` works."""

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
