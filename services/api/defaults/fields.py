"""Reading and setting a message's fields by their Kubernetes JSON names.

The defaulters name fields as upstream's JSON does (``restartPolicy``), so one row or function
serves every kubera message of that schema, including messages added after it was written; a
field the message does not have reads as unset and is never set. "Unset" is upstream's nil or
empty: an absent `optional` field or sub-message, an empty string, list or map, a zero number
on a field without presence (proto3 cannot tell 0 from unset there, nor can Go for a value
field, so the rule is upstream's own).
"""

from __future__ import annotations

import functools
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

_STRUCT = "google.protobuf.Struct"


@functools.cache
def by_json_name(desc: Descriptor) -> dict[str, FieldDescriptor]:
    return {f.json_name: f for f in desc.fields}


def field(msg: Message, name: str) -> FieldDescriptor | None:
    """The field of `msg` whose JSON name is `name`, or None."""
    return by_json_name(msg.DESCRIPTOR).get(name)


def is_set(msg: Message, name: str) -> bool:
    f = field(msg, name)
    return False if f is None else is_set_field(msg, f)


def is_set_field(msg: Message, f: FieldDescriptor) -> bool:
    if f.is_repeated:
        return len(getattr(msg, f.name)) > 0
    if f.has_presence:
        return msg.HasField(f.name)
    return bool(getattr(msg, f.name) != f.default_value)


def get(msg: Message, name: str) -> Any:
    """The field's value (a sub-message, a container, a scalar), or None when the message
    does not have the field."""
    f = field(msg, name)
    return None if f is None else getattr(msg, f.name)


def set_value(msg: Message, name: str, value: Any) -> bool:
    """Set a field from its JSON value; False when the message does not have it."""
    f = field(msg, name)
    if f is None:
        return False
    set_field(msg, f, value)
    return True


def set_field(msg: Message, f: FieldDescriptor, value: Any) -> None:
    if f.message_type is not None and not f.is_repeated:
        sub = getattr(msg, f.name)
        sub.Clear()
        if f.message_type.full_name == _STRUCT:
            sub.update(value)
        elif value:
            json_format.ParseDict(value, sub)
        sub.SetInParent()
    elif f.type == FieldDescriptor.TYPE_STRING and not isinstance(value, str):
        setattr(msg, f.name, str(value))  # an int-or-string field given an int
    else:
        setattr(msg, f.name, value)


def clear(msg: Message, name: str) -> None:
    f = field(msg, name)
    if f is not None:
        msg.ClearField(f.name)


def default_field(msg: Message, name: str, value: Any) -> None:
    """Upstream's "if unset, set": `value` when the field is unset."""
    if not is_set(msg, name):
        set_value(msg, name, value)


def default_key(d: dict[str, Any], name: str, value: Any, *, zero_unset: bool = False) -> None:
    """The same on free-form JSON (the parts kubera keeps as a Struct): absent, null or "" is
    unset, and 0 too where upstream's field is a value rather than a pointer (`zero_unset`)."""
    v = d.get(name)
    if v is None or v == "" or (zero_unset and v == 0 and not isinstance(v, bool)):
        d[name] = value
