"""What `kubectl get` shows for ResourceQuota and LimitRange (core/v1).

Upstream's columns (pkg/printers/internalversion/printers.go): ResourceQuota NAME AGE
REQUEST LIMIT, where REQUEST lists every status.hard resource not prefixed `limits.` as
`name: used/hard` (sorted, joined by ", ") and LIMIT the `limits.` ones
(printResourceQuota); LimitRange NAME CREATED AT (printLimitRange), the creation time as
RFC 3339.
"""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from services.api.printers.columns import AGE, NAME, Column, Columns, S, age


def _quota_pairs(rq: Any, limits: bool) -> str:
    hard, used = rq.status.hard, rq.status.used
    cells = [
        f"{name}: {used.get(name, '0')}/{hard[name]}"
        for name in sorted(hard)
        if name.startswith("limits.") == limits
    ]
    return ", ".join(cells)


def _quota_row(rq: Message, now: float, wide: bool) -> list[str]:
    x: Any = rq
    return [
        x.metadata.name,
        age(x.metadata.creation_timestamp, now),
        _quota_pairs(x, limits=False),
        _quota_pairs(x, limits=True),
    ]


def _limit_range_row(lr: Message, now: float, wide: bool) -> list[str]:
    x: Any = lr
    return [x.metadata.name, x.metadata.creation_timestamp]


POLICY_COLUMNS: dict[str, Columns] = {
    "ResourceQuota": Columns(
        (
            NAME,
            AGE,
            Column("Request", S, "Request represents a minimum amount of cpu/memory."),
            Column("Limit", S, "Limits control the maximum amount of cpu/memory."),
        ),
        _quota_row,
    ),
    "LimitRange": Columns(
        (NAME, Column("Created At", S, "Time when the LimitRange was created.")),
        _limit_range_row,
    ),
}
