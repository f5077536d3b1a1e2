"""Printing objects the way kubectl prints them, so what users know carries over.

This module holds the output formats and what they share: `-o json` / `-o yaml` give
exactly the Kubernetes shape (one object for `get KIND NAME`, otherwise a `v1` `List`,
map keys sorted as Go's encoding/json sorts them); `-o name` gives `pod/nginx`
(`deployment.apps/web` for kinds in a group). The per-kind table columns (the default and
`-o wide` format) are in `kubera.printing.tables`, the `describe` text in `kubera.printing.describe`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import yaml
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from services.api.machinery import codec
from services.api.machinery.kinds import Kind, kind_of
from services.api.machinery.kubeobject import object_meta

OUTPUT_FORMATS = ("wide", "json", "yaml", "name")


# ----------------------------------------------------------------- names


def resource_name(kind: Kind) -> str:
    """kubectl's `pod`, `deployment.apps`, `priorityclass.scheduling.k8s.io`."""
    return f"{kind.singular}.{kind.group}" if kind.group else kind.singular


def object_name(obj: Message, kind: Kind | None = None) -> str:
    """`-o name`: `pod/nginx`."""
    return f"{resource_name(kind or kind_of(obj))}/{object_meta(obj).name}"


def no_resources(namespace: str | None) -> str:
    """kubectl's wording when a list is empty."""
    if namespace:
        return f"No resources found in {namespace} namespace."
    return "No resources found"


# ------------------------------------------------------------ documents


def _is_map_field(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _own_message(f: FieldDescriptor) -> Descriptor | None:
    """The message type of a field holding one of our messages (not a well-known type)."""
    t = f.message_type
    return None if t is None or t.full_name.startswith("google.protobuf.") else t


def sort_map_keys(d: dict[str, Any], desc: Descriptor) -> None:
    """Go's encoding/json order, in place: the keys of map-valued fields (labels,
    annotations, nodeSelector, requests/limits, capacity, ...) sorted, struct fields left
    in their declared order."""
    for f in desc.fields:
        value = d.get(f.json_name)
        if value is None:
            continue
        if _is_map_field(f):
            if not isinstance(value, dict):
                continue
            inner = _own_message(f.message_type.fields_by_name["value"])
            d[f.json_name] = {k: value[k] for k in sorted(value)}
            if inner is not None:
                for item in value.values():
                    if isinstance(item, dict):
                        sort_map_keys(item, inner)
            continue
        inner = _own_message(f)
        if inner is None:
            continue
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, dict):
                sort_map_keys(item, inner)


def to_dict(obj: Message) -> dict[str, Any]:
    """An object as Kubernetes serves it: apiVersion, kind, metadata, spec, status."""
    kind = kind_of(obj)
    d = codec.encode(obj)
    sort_map_keys(d, obj.DESCRIPTOR)
    d["apiVersion"] = d.get("apiVersion") or kind.api_version
    d["kind"] = d.get("kind") or kind.kind
    ordered = {"apiVersion": d.pop("apiVersion"), "kind": d.pop("kind")}
    ordered.update(d)
    return ordered


def list_document(objs: Sequence[Message]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "List",
        "items": [to_dict(o) for o in objs],
        "metadata": {"resourceVersion": ""},
    }


def document(objs: Sequence[Message], *, single: bool) -> dict[str, Any]:
    """One object for `get KIND NAME`, otherwise a List."""
    if single and len(objs) == 1:
        return to_dict(objs[0])
    return list_document(objs)


def dump_json(doc: Any) -> str:
    return json.dumps(doc, indent=4, ensure_ascii=False) + "\n"


def dump_yaml(doc: Any) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


def print_documents(
    objs: Sequence[Message], fmt: str, *, single: bool, out: TextIO | None = None
) -> None:
    out = out or sys.stdout
    doc = document(objs, single=single)
    out.write(dump_json(doc) if fmt == "json" else dump_yaml(doc))
