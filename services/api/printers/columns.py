"""The pieces every `kubectl get` table is made of: a column, a kind's columns and row
function, and the AGE arithmetic (apimachinery's HumanDuration).

Why this module exists: the tables are split by API group (printers.py for the core,
apps, policy, scheduling and node kinds; resource.py for resource.k8s.io and
scheduling.x-k8s.io), and both build on these shared pieces; printers.py joins the
groups' tables into one COLUMNS and re-exports these names, so callers import printers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2
from services.clock import parse_rfc3339

NONE = "<none>"
UNKNOWN = "<unknown>"
S, INT = "string", "integer"


# ------------------------------------------------------------------ time


def parse_time(text: str) -> float | None:
    """An RFC 3339 timestamp (seconds or micro-seconds, as metav1.Time and MicroTime) →
    epoch seconds; None when empty or unreadable."""
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def human_duration(seconds: float) -> str:
    """apimachinery's duration.HumanDuration: `5s`, `3m20s`, `2h`, `4d5h`, `3y`."""
    s = int(seconds)
    if s < -1:
        return "<invalid>"
    if s < 0:
        return "0s"
    if s < 60 * 2:
        return f"{s}s"
    minutes = s // 60
    if minutes < 10:
        rest = s % 60
        return f"{minutes}m" if rest == 0 else f"{minutes}m{rest}s"
    if minutes < 60 * 3:
        return f"{minutes}m"
    hours = s // 3600
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h" if rest == 0 else f"{hours}h{rest}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{hours // 24}d" if rest == 0 else f"{hours // 24}d{rest}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        days = (hours // 24) % 365
        years = hours // 24 // 365
        return f"{years}y" if days == 0 else f"{years}y{days}d"
    return f"{hours // 24 // 365}y"


def age(timestamp: str, now: float) -> str:
    t = parse_time(timestamp)
    return UNKNOWN if t is None else human_duration(now - t)


@dataclass(frozen=True)
class Column:
    """One column as meta.k8s.io/v1 TableColumnDefinition describes it. kubectl prints
    `name` upper-cased; priority 1 columns only show with `-o wide`."""

    name: str
    type: str = "string"
    description: str = ""
    format: str = ""
    priority: int = 0
    #: kubera's own column, not kubectl's (left out of the HTTP Table).
    kubera_only: bool = False
    #: kubectl's column that kubera's own CLI does not print (only in the HTTP Table).
    table_only: bool = False

    @property
    def header(self) -> str:
        return self.name.upper()


@dataclass(frozen=True)
class Columns:
    """A kind's table: its columns (default ones first, then `-o wide`'s) and the row
    function, which returns the default cells and, when wide, the wide ones after them."""

    columns: tuple[Column, ...]
    row: Callable[[Message, float, bool], list[str]]
    #: The order of kubectl's Table columns by name, when it interleaves wide columns
    #: with the default ones (empty: the order of `columns`).
    table_order: tuple[str, ...] = ()

    @property
    def headers(self) -> tuple[str, ...]:
        """kubera's CLI headers (its `-o wide` ones are `wide`)."""
        return tuple(c.header for c in self.columns if c.priority == 0 and not c.table_only)

    @property
    def wide(self) -> tuple[str, ...]:
        return tuple(c.header for c in self.columns if c.priority > 0 and not c.table_only)


NAME = Column("Name", format="name", description="The object's name, unique in its namespace.")
AGE = Column("Age", description="Time since the object was created (metadata.creationTimestamp).")


def wide_columns(*columns: Column) -> tuple[Column, ...]:
    """`columns` as `-o wide` ones (priority 1)."""
    return tuple(dataclasses.replace(c, priority=1) for c in columns)


def format_label_selector(sel: meta_pb2.LabelSelector | None) -> str:
    """metav1.FormatLabelSelector: `app=web,tier in (a,b),!gone`."""
    if sel is None:
        return NONE
    parts = [f"{k}={v}" for k, v in sorted(sel.match_labels.items())]
    for req in sel.match_expressions:
        op = req.operator
        if op == "In":
            parts.append(f"{req.key} in ({','.join(req.values)})")
        elif op == "NotIn":
            parts.append(f"{req.key} notin ({','.join(req.values)})")
        elif op == "Exists":
            parts.append(req.key)
        elif op == "DoesNotExist":
            parts.append(f"!{req.key}")
        else:
            parts.append(f"{req.key} {op} ({','.join(req.values)})")
    return ",".join(parts) or NONE
