"""Objects for the apiserver from rendered templates, and small predicates on them, shared by
op execution (opexec.py) and kubera's own ops. No I/O."""

from __future__ import annotations

from typing import Any

from google.protobuf.message import Message

from kubera.errors import CliError
from services.api import codec


class OpError(CliError):
    """An op that could not complete; the run records it as its error."""


def to_message(doc: dict[str, Any], *, kind: str = "", namespace: str = "") -> Message:
    """A rendered template → its protobuf message (apiVersion/kind defaulted to `kind`'s
    core/v1 when the template leaves them out), in `namespace` when the kind has one."""
    doc = dict(doc)
    if kind:
        doc.setdefault("apiVersion", "v1")
        doc.setdefault("kind", kind)
    try:
        decoded = codec.decode(doc, validate="ignore")
    except codec.DecodeError as e:
        raise OpError(f"cannot decode {doc.get('kind', 'object')}: {e}") from None
    if namespace and decoded.kind.namespaced:
        decoded.obj.metadata.namespace = namespace  # type: ignore[attr-defined]
    return decoded.obj


def generated_name(obj: Message) -> bool:
    """Whether the apiserver named `obj` (generateName, no name of its own)."""
    m = obj.metadata  # type: ignore[attr-defined]
    return bool(m.generate_name) and not m.name


def node_ready(node: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in node.status.conditions)
