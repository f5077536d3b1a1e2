"""The quantity-map walk (codec.iter_quantity_maps) planned per message type gives the
same (path, map) sequence as the plain recursive walk it replaced, on objects of every
shape that holds quantities (and one that holds none)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from google.protobuf.message import Message

from protos.kubera.v1 import options_pb2
from services.api.machinery import codec
from services.api.machinery.codec import _is_map, _is_repeated, _may_hold_quantities, _opt


def reference(msg: Message, path: str = "") -> Iterator[tuple[str, Any]]:
    """The walk as it was: every field of every message of ours, checked as it comes."""
    if not _may_hold_quantities(msg.DESCRIPTOR):
        return
    for f, value in msg.ListFields():
        sub = f"{path}.{f.json_name}" if path else f.json_name
        if _is_map(f):
            if _opt(f, options_pb2.quantity):
                yield sub, value
            vf = f.message_type.fields_by_name["value"]
            if vf.message_type is not None and not vf.message_type.full_name.startswith(
                "google.protobuf."
            ):
                for k, item in value.items():
                    yield from reference(item, f"{sub}[{k}]")
        elif f.message_type is not None and not f.message_type.full_name.startswith(
            "google.protobuf."
        ):
            if _is_repeated(f):
                for i, item in enumerate(value):
                    yield from reference(item, f"{sub}[{i}]")
            else:
                yield from reference(value, sub)


RES = {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "2"}}
DOCS = [
    {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"a": "b"}},
        "spec": {
            "containers": [
                {"name": "c", "image": "i", "resources": RES},
                {"name": "d", "image": "i"},
            ],
            "initContainers": [{"name": "i", "image": "i", "resources": RES}],
            "overhead": {"memory": "120Mi"},
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    },
    {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "3", "pods": "110"}},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": {
                "metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": RES}]},
            },
        },
    },
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}},
]


@pytest.mark.parametrize("doc", DOCS, ids=[d["kind"] for d in DOCS])
def test_the_planned_walk_finds_what_the_plain_walk_finds(doc: dict[str, Any]) -> None:
    obj = codec.decode(doc).obj
    got = [(p, dict(m)) for p, m in codec.iter_quantity_maps(obj)]
    assert got == [(p, dict(m)) for p, m in reference(obj)]
    assert bool(got) == (doc["kind"] != "Namespace")
