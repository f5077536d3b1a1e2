"""meta.k8s.io/v1 Table: `kubectl get`'s columns computed by the server.

kubectl asks for lists and objects as a Table (Accept `application/json;as=Table;v=v1;
g=meta.k8s.io`) and prints the server's columns: that is how a real cluster's `kubectl get
pods` shows READY and STATUS without kubectl knowing pods. The columns and cells are
`services.api.printers.printers`', the ones `kubera get` prints, so both CLIs agree.

As upstream, the server sends every column, `-o wide`'s ones with priority 1; kubectl
hides those unless asked for `-o wide`, so the HTTP edge passes `wide=True`. kubera's own
node columns (CONDITIONS, TAINTS, CPU/MEMORY/PODS usage) are left out: they need the pods
of each node, and a real cluster's table has no such columns.

Each row carries its object per `includeObject`: `Metadata` (the default, as upstream; a
PartialObjectMetadata, which kubectl reads for -A's NAMESPACE, --show-labels and -L),
`Object` (the whole object) or `None`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.protobuf.message import Message

from services.api.machinery import codec
from services.api.machinery.errors import BadRequestError
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.printers import printers
from services.clock import RealClock

INCLUDE_OBJECT = ("None", "Metadata", "Object")
TABLE_API_VERSION = "meta.k8s.io/v1"


def wants_table(accept: str) -> bool:
    """Whether an Accept header asks for a meta.k8s.io/v1 Table (kubectl get names it first,
    then v1beta1, then plain JSON as the fallback; only v1 is served)."""
    for part in accept.split(","):
        params = {p.strip() for p in part.split(";")[1:]}
        if {"as=Table", "v=v1", "g=meta.k8s.io"} <= params:
            return True
    return False


class IncludeObjectError(BadRequestError):
    """An includeObject value other than None, Metadata or Object (a 400 at the edge)."""


def _shown(kind: Kind, *, wide: bool) -> list[int]:
    """Indices into the kind's columns (and row cells) of the Table's columns, in kubectl's
    order: kubera's own columns left out, priority-1 ones only when `wide`."""
    cols = printers.columns_of(kind)
    shown = [
        i for i, c in enumerate(cols.columns) if not c.kubera_only and (wide or c.priority == 0)
    ]
    if cols.table_order:
        rank = {name: n for n, name in enumerate(cols.table_order)}
        shown.sort(key=lambda i: rank.get(cols.columns[i].name, len(rank)))
    return shown


def column_definitions(kind: Kind, *, wide: bool) -> list[dict[str, Any]]:
    """TableColumnDefinitions of `kind`, priority-1 ones included when `wide`."""
    columns = printers.columns_of(kind).columns
    return [
        {
            "name": columns[i].name,
            "type": columns[i].type,
            "format": columns[i].format,
            "description": columns[i].description,
            "priority": columns[i].priority,
        }
        for i in _shown(kind, wide=wide)
    ]


def _cell(value: str, column: printers.Column) -> Any:
    """Cells are typed as their column says: integers and booleans as JSON numbers and
    booleans (kubectl prints them alike, other clients read the type)."""
    if column.type == "integer" and value.lstrip("-").isdigit():
        return int(value)
    if column.type == "boolean" and value in ("true", "false"):
        return value == "true"
    return value


def partial_object_metadata(obj: Message) -> dict[str, Any]:
    """meta.k8s.io/v1 PartialObjectMetadata of an object: its metadata alone."""
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": TABLE_API_VERSION,
        "metadata": codec.encode(object_meta(obj)),
    }


def _row_object(obj: Message, include_object: str) -> dict[str, Any] | None:
    if include_object == "Metadata":
        return partial_object_metadata(obj)
    if include_object == "Object":
        return codec.encode(obj)
    return None


def to_table(
    kind: Kind,
    objects: Sequence[Message],
    *,
    wide: bool,
    include_object: str = "Metadata",
    list_meta: dict[str, Any] | None = None,
    now: float | None = None,
) -> dict[str, Any]:
    """A meta.k8s.io/v1 Table of `objects` (all of `kind`). `list_meta` is the list's
    metadata (resourceVersion, continue) or None for a single object; `now` (epoch
    seconds) is what AGE counts from: the apiserver's clock, the cluster's (simulated)
    time under the time scale, as upstream's server-side printers count from the
    apiserver's own clock (the wall clock when not given)."""
    if include_object not in INCLUDE_OBJECT:
        raise IncludeObjectError(
            f"includeObject: unsupported value {include_object!r}, "
            f"must be one of {', '.join(INCLUDE_OBJECT)}"
        )
    all_columns = printers.columns_of(kind).columns
    shown = _shown(kind, wide=wide)
    at = RealClock().now() if now is None else now
    cells = printers.rows(kind, objects, now=at, wide=wide, table=True)
    rows = []
    for obj, row in zip(objects, cells, strict=True):
        out: dict[str, Any] = {"cells": [_cell(row[i], all_columns[i]) for i in shown]}
        included = _row_object(obj, include_object)
        if included is not None:
            out["object"] = included
        rows.append(out)
    return {
        "kind": "Table",
        "apiVersion": TABLE_API_VERSION,
        "metadata": dict(list_meta or {}),
        "columnDefinitions": column_definitions(kind, wide=wide),
        "rows": rows,
    }
