"""`kubectl get`'s tables as kubera's CLI prints them: the default output format and `-o wide`.

The columns and cells of each kind live in `services.api.printers.printers` (shared with the HTTP
API's Table output, so `kubera get` and `kubectl get` agree); this module lays them out:
NAMESPACE and `kind/name` prefixes, and text. When stdout is not a terminal tables come out
as plain space-aligned columns like kubectl's tabwriter (so scripts and tests can read
them), on a terminal through rich. The cell helpers are re-exported for existing callers.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from typing import TextIO

from google.protobuf.message import Message

from kubera.printing.output import resource_name
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.printers import printers
from services.api.printers.printers import (
    NONE,
    UNKNOWN,
    NodeUsage,
    age,
    bound_pods_selector,
    format_amount,
    human_duration,
    is_terminated,
    node_problems,
    node_status,
    node_usage,
    parse_time,
    pod_status,
)

__all__ = [
    "NONE",
    "UNKNOWN",
    "NodeUsage",
    "age",
    "bound_pods_selector",
    "format_amount",
    "human_duration",
    "is_terminated",
    "node_problems",
    "node_status",
    "node_usage",
    "parse_time",
    "plain_table",
    "pod_status",
    "print_table",
    "table",
]


def table(
    kind: Kind,
    objs: Sequence[Message],
    *,
    now: float,
    wide: bool = False,
    all_namespaces: bool = False,
    prefix_names: bool = False,
    usage: Mapping[str, NodeUsage] | None = None,
) -> tuple[list[str], list[list[str]]]:
    """Headers and rows for `objs` of one kind, as `kubectl get` lays them out. `usage`
    (`node_usage` of the bound pods) fills the CPU / MEMORY / PODS columns of nodes in
    `-o wide`; without it they say <unknown>."""
    cols = printers.columns_of(kind)
    headers = list(cols.headers) + (list(cols.wide) if wide else [])
    name_col = headers.index("NAME") if "NAME" in headers else -1
    rows = []
    cells = printers.rows(kind, objs, now=now, wide=wide, usage=usage)
    for obj, row in zip(objs, cells, strict=True):
        if prefix_names and name_col >= 0:
            row[name_col] = f"{resource_name(kind)}/{row[name_col]}"
        if all_namespaces and kind.namespaced:
            row.insert(0, object_meta(obj).namespace)
        rows.append(row)
    if all_namespaces and kind.namespaced:
        headers.insert(0, "NAMESPACE")
    return headers, rows


def plain_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """kubectl's tabwriter layout (min width 6, padding 3); the last column is not padded."""
    lines = [list(headers), *[list(r) for r in rows]]
    ncols = len(headers)
    widths = [
        max(6, max(len(line[i]) for line in lines) + 3) if i < ncols - 1 else 0
        for i in range(ncols)
    ]
    out = []
    for line in lines:
        text = "".join(
            cell.ljust(widths[i]) if i < ncols - 1 else cell for i, cell in enumerate(line)
        )
        out.append(text.rstrip())
    return "\n".join(out) + "\n"


def print_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO | None = None
) -> None:
    """Plain columns when `out` is not a terminal; a rich table (bold headers) when it is."""
    out = out or sys.stdout
    if not out.isatty():
        out.write(plain_table(headers, rows))
        return
    from rich.console import Console
    from rich.table import Table

    t = Table(box=None, pad_edge=False, padding=(0, 3, 0, 0), header_style="bold")
    for h in headers:
        t.add_column(h, no_wrap=True, overflow="ellipsis")
    for r in rows:
        t.add_row(*r)
    Console(file=out, highlight=False, soft_wrap=False).print(t)
