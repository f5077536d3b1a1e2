"""Between Kubernetes-shaped JSON/YAML and kubera's protobuf messages.

The protobuf JSON mapping does most of the work (our json_names are Kubernetes'); this
module adds what it cannot: unknown fields reported by field path (warn, strict, or
ignore, like kubectl's --validate), YAML numbers accepted where Kubernetes accepts them
(quantities, int-or-string), type errors with paths, int64 written as JSON numbers,
quantities kept canonical, and packing objects into google.protobuf.Any for the wire.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from google.protobuf import any_pb2, json_format
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from protos.kubera.v1 import options_pb2
from services.api.machinery import kinds as kinds_mod
from services.api.machinery.errors import INVALID, FieldError, invalid
from services.api.machinery.kinds import Kind
from services.api.machinery.quantity import QuantityError, canonicalize
from services.api.machinery.zerovalues import ALWAYS_WRITTEN, STRUCT_WRITTEN

_STRUCT = "google.protobuf.Struct"
_INT_TYPES = {
    FieldDescriptor.TYPE_INT32,
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT32,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT32,
    FieldDescriptor.TYPE_SINT64,
}
_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
}
_INT64_TYPES = {
    FieldDescriptor.TYPE_INT64,
    FieldDescriptor.TYPE_UINT64,
    FieldDescriptor.TYPE_SINT64,
}
VALIDATE_MODES = ("warn", "strict", "ignore")


def _is_map(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _is_repeated(f: FieldDescriptor) -> bool:
    return bool(f.is_repeated)


def _opt(f: FieldDescriptor, ext: Any) -> bool:
    return bool(f.GetOptions().Extensions[ext])


def _type_name(v: Any) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return type(v).__name__


class DecodeError(ValueError):
    """A manifest that cannot become an object; `errors` name the field paths."""

    def __init__(self, message: str, errors: list[FieldError] | None = None) -> None:
        super().__init__(message)
        self.errors = errors or []


@dataclass
class _Walk:
    unknown: list[str] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _base64_error_at(text: str) -> int | None:
    """Where `text` is not strict standard base64 (Go's base64.StdEncoding: the standard
    alphabet, padded to a multiple of 4), or None: the first stray character, else the end
    of the data for a bad length. Python's decoder would drop stray characters instead."""
    body = text.rstrip("=")
    pad = len(text) - len(body)
    for i, c in enumerate(body):
        if c not in _BASE64:
            return i
    if pad > 2 or len(text) % 4:
        return len(body)
    return None


def _scalar(
    value: Any, f: FieldDescriptor, path: str, w: _Walk, *, quantity: bool, intstr: bool
) -> Any:
    """Check one scalar against its field type; returns the value to hand to ParseDict."""
    t = f.type
    if t == FieldDescriptor.TYPE_STRING:
        if isinstance(value, str):
            return value
        if (quantity or intstr) and isinstance(value, int | float) and not isinstance(value, bool):
            return repr(value) if isinstance(value, float) else str(value)
        w.errors.append(invalid(path, value, f"expected string, got {_type_name(value)}"))
        return None
    if t in _INT_TYPES:
        if isinstance(value, int) and not isinstance(value, bool):
            lo, hi = _INT_RANGES.get(t, (-(2**63), 2**63 - 1))
            if not lo <= value <= hi:
                w.errors.append(
                    invalid(path, value, f"out of range: must be between {lo} and {hi}")
                )
                return None
            return value
        w.errors.append(invalid(path, value, f"expected integer, got {_type_name(value)}"))
        return None
    if t == FieldDescriptor.TYPE_BOOL:
        if isinstance(value, bool):
            return value
        w.errors.append(invalid(path, value, f"expected boolean, got {_type_name(value)}"))
        return None
    if t in (FieldDescriptor.TYPE_DOUBLE, FieldDescriptor.TYPE_FLOAT):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return value
        w.errors.append(invalid(path, value, f"expected number, got {_type_name(value)}"))
        return None
    if t == FieldDescriptor.TYPE_BYTES:
        # Bytes are a Secret's data: the errors never echo the value.
        if not isinstance(value, str):
            w.errors.append(
                FieldError(path, INVALID, f"expected base64 string, got {_type_name(value)}")
            )
            return None
        bad = _base64_error_at(value)
        if bad is not None:
            w.errors.append(FieldError(path, INVALID, f"illegal base64 data at input byte {bad}"))
            return None
        return value
    return value


def _walk_message(obj: Any, desc: Descriptor, path: str, w: _Walk) -> dict[str, Any] | None:
    if not isinstance(obj, dict):
        w.errors.append(invalid(path or "<root>", obj, f"expected object, got {_type_name(obj)}"))
        return None
    fields = {f.json_name: f for f in desc.fields}
    empty_is_unset = STRUCT_WRITTEN.get(desc.full_name, ())
    out: dict[str, Any] = {}
    for key, value in obj.items():
        sub = f"{path}.{key}" if path else str(key)
        f = fields.get(key) if isinstance(key, str) else None
        if f is None:
            w.unknown.append(sub)
            continue
        if value is None:  # YAML/JSON null: the field is unset, as in Kubernetes.
            continue
        checked = _walk_field(value, f, sub, w)
        if checked is None or checked == {} and key in empty_is_unset:
            continue  # a struct Go writes `{}` when empty: empty is unset (zerovalues)
        out[key] = checked
    return out


def _walk_value(
    value: Any, f: FieldDescriptor, path: str, w: _Walk, *, quantity: bool, intstr: bool
) -> Any:
    if f.message_type is not None:
        if f.message_type.full_name == _STRUCT or f.message_type.full_name.startswith(
            "google.protobuf."
        ):
            if f.message_type.full_name == _STRUCT and not isinstance(value, dict):
                w.errors.append(invalid(path, value, f"expected object, got {_type_name(value)}"))
                return None
            return value
        return _walk_message(value, f.message_type, path, w)
    return _scalar(value, f, path, w, quantity=quantity, intstr=intstr)


def _walk_field(value: Any, f: FieldDescriptor, path: str, w: _Walk) -> Any:
    quantity = _opt(f, options_pb2.quantity)
    intstr = _opt(f, options_pb2.int_or_string)
    if _is_map(f):
        if not isinstance(value, dict):
            w.errors.append(invalid(path, value, f"expected object, got {_type_name(value)}"))
            return None
        vf = f.message_type.fields_by_name["value"]
        out = {}
        for k, v in value.items():
            sub = f"{path}[{k}]"
            if not isinstance(k, str):
                w.errors.append(invalid(sub, k, f"expected string key, got {_type_name(k)}"))
                continue
            if v is None:
                w.errors.append(invalid(sub, v, "expected a value, got null"))
                continue
            checked = _walk_value(v, vf, sub, w, quantity=quantity, intstr=intstr)
            if checked is not None:
                out[k] = checked
        return out
    if _is_repeated(f):
        if not isinstance(value, list):
            w.errors.append(invalid(path, value, f"expected array, got {_type_name(value)}"))
            return None
        items = []
        for i, v in enumerate(value):
            checked = _walk_value(v, f, f"{path}[{i}]", w, quantity=quantity, intstr=intstr)
            if checked is not None:
                items.append(checked)
        return items
    return _walk_value(value, f, path, w, quantity=quantity, intstr=intstr)


@dataclass(frozen=True)
class Decoded:
    kind: Kind
    obj: Message
    #: Field paths present in the manifest that the kind does not have.
    unknown_fields: tuple[str, ...]


def decode(doc: Any, *, validate: str = "warn") -> Decoded:
    """A Kubernetes-shaped dict (one YAML document) → its kind and message.

    validate: "warn" (unknown fields are dropped and listed), "strict" (they are an
    error), "ignore" (dropped silently). Type errors are always errors.
    """
    if validate not in VALIDATE_MODES:
        raise ValueError(f"validate must be one of {VALIDATE_MODES}, not {validate!r}")
    if not isinstance(doc, dict):
        raise DecodeError(f"expected a Kubernetes object (a mapping), got {_type_name(doc)}")
    api_version, kind_name = doc.get("apiVersion"), doc.get("kind")
    if not api_version or not isinstance(api_version, str):
        raise DecodeError("Object 'apiVersion' is missing or not a string")
    if not kind_name or not isinstance(kind_name, str):
        raise DecodeError("Object 'Kind' is missing or not a string")
    try:
        kind = kinds_mod.for_manifest(api_version, kind_name)
    except kinds_mod.UnknownKindError as e:
        raise DecodeError(str(e)) from None
    obj = kind.message()
    unknown = decode_into(doc, obj, validate=validate)
    if api_version != kind.api_version:  # an alias (kinds.VERSION_ALIASES): same fields
        obj.api_version = kind.api_version  # type: ignore[attr-defined]
    return Decoded(kind, obj, unknown)


def decode_into(doc: dict[str, Any], obj: Message, *, validate: str = "warn") -> tuple[str, ...]:
    """Parse a Kubernetes-shaped dict into a message of any type (what `decode` does once it
    knows the kind); the unknown field paths under "warn", else ()."""
    w = _Walk()
    checked = _walk_message(doc, obj.DESCRIPTOR, "", w)
    if w.errors:
        raise DecodeError("; ".join(map(str, w.errors)), w.errors)
    if w.unknown and validate == "strict":
        shown = ", ".join(f'unknown field "{p}"' for p in w.unknown)
        raise DecodeError(f"strict decoding error: {shown}")
    try:
        json_format.ParseDict(checked, obj)
    except json_format.ParseError as e:
        raise DecodeError(str(e)) from None
    return tuple(w.unknown) if validate == "warn" else ()


#: ALWAYS_WRITTEN without the struct fields (STRUCT_WRITTEN): the required fields alone.
_REQUIRED_WRITTEN = {
    name: {k: v for k, v in row.items() if k not in STRUCT_WRITTEN.get(name, ())}
    for name, row in ALWAYS_WRITTEN.items()
}


def _fix_output(
    d: dict[str, Any], desc: Descriptor, table: dict[str, dict[str, Any]] = ALWAYS_WRITTEN
) -> None:
    """MessageToDict writes int64 as strings; Kubernetes writes numbers. Same for int-or-string.
    It also drops zero values, which upstream writes for every field its Go types do not mark
    `omitempty` (restartCount 0, ready false) and for every struct (lastState {}): those are
    written back (zerovalues)."""
    zeros = table.get(desc.full_name)
    if zeros:
        for name, zero in zeros.items():
            if name not in d:
                d[name] = copy.copy(zero)
    for f in desc.fields:
        if f.json_name not in d:
            continue
        v = d[f.json_name]
        if _is_map(f):
            vf = f.message_type.fields_by_name["value"]
            if vf.message_type is not None and not vf.message_type.full_name.startswith(
                "google.protobuf."
            ):
                for item in v.values():
                    _fix_output(item, vf.message_type, table)
            continue
        if f.message_type is not None:
            if f.message_type.full_name in _JSON_TYPES:
                d[f.json_name] = _json_numbers(v)
                continue
            if f.message_type.full_name.startswith("google.protobuf."):
                continue
            for item in v if _is_repeated(f) else [v]:
                _fix_output(item, f.message_type, table)
        elif f.type in _INT64_TYPES:
            d[f.json_name] = [int(x) for x in v] if _is_repeated(f) else int(v)
        elif _opt(f, options_pb2.int_or_string) and isinstance(v, str) and v.lstrip("-").isdigit():
            d[f.json_name] = int(v)


#: The well-known types that hold arbitrary JSON (a Struct, one Value, a ListValue).
_JSON_TYPES = frozenset(
    {"google.protobuf.Struct", "google.protobuf.Value", "google.protobuf.ListValue"}
)


def _json_numbers(v: Any) -> Any:
    """Arbitrary JSON as the user wrote it: protobuf keeps every JSON number as a double, so
    `1` comes back `1.0`; whole numbers are written as integers again (exact up to 2**53,
    as in any JSON reader that uses doubles)."""
    if isinstance(v, float) and v.is_integer() and abs(v) <= 2**53:
        return int(v)
    if isinstance(v, dict):
        return {k: _json_numbers(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_json_numbers(x) for x in v]
    return v


def encode(obj: Message, *, go_structs: bool = True) -> dict[str, Any]:
    """A message → the dict Kubernetes would serve (apiVersion, kind, metadata, spec, status).

    go_structs=False leaves out the empty structs Go writes (`resources: {}`): the form
    kubera's own hashes (pod-template-hash, a ControllerRevision's data) were computed from
    before the codec wrote them, kept so a template's hash survives an upgrade."""
    d = json_format.MessageToDict(obj)
    _fix_output(d, obj.DESCRIPTOR, ALWAYS_WRITTEN if go_structs else _REQUIRED_WRITTEN)
    return d


@functools.cache
def _may_hold_quantities(desc: Descriptor) -> bool:
    """Whether a message type has a quantity map anywhere inside (schema only, cached)."""
    return _holds(desc, set())


def _holds(desc: Descriptor, seen: set[str]) -> bool:
    if desc.full_name in seen:
        return False
    seen.add(desc.full_name)
    for f in desc.fields:
        if _opt(f, options_pb2.quantity):
            return True
        mt = f.message_type
        if mt is None or mt.full_name.startswith("google.protobuf."):
            continue
        if _is_map(f):
            mt = mt.fields_by_name["value"].message_type
            if mt is None:
                continue
        if _holds(mt, seen):
            return True
    return False


#: What the quantity walks do with a field: (yield the map itself, walk its values or its
#: items, repeated, yield the field itself: a scalar quantity such as DeviceCapacity.value).
_Step = tuple[bool, bool, bool, bool]


def _ours(mt: Descriptor | None) -> bool:
    return mt is not None and not mt.full_name.startswith("google.protobuf.")


@functools.cache
def _quantity_steps(desc: Descriptor) -> dict[int, _Step]:
    """Field number -> its step, for the fields of `desc` that can hold a quantity map
    (schema only, cached); the other fields are never walked."""
    steps: dict[int, _Step] = {}
    for f in desc.fields:
        if _is_map(f):
            vt = f.message_type.fields_by_name["value"].message_type
            walk = _ours(vt) and _may_hold_quantities(vt)
            if _opt(f, options_pb2.quantity) or walk:
                steps[f.number] = (_opt(f, options_pb2.quantity), walk, False, False)
        elif _ours(f.message_type) and _may_hold_quantities(f.message_type):
            steps[f.number] = (False, True, _is_repeated(f), False)
        elif f.message_type is None and not _is_repeated(f) and _opt(f, options_pb2.quantity):
            steps[f.number] = (False, False, False, True)
    return steps


def _iter_quantities(
    msg: Message, path: str, *, scalars: bool
) -> Iterator[tuple[str, Any, FieldDescriptor | None]]:
    """(path, map container, None) for each quantity map and, when `scalars`, (path, owner
    message, field) for each scalar quantity field set, anywhere inside `msg`."""
    steps = _quantity_steps(msg.DESCRIPTOR)
    if not steps:
        return
    for f, value in msg.ListFields():
        step = steps.get(f.number)
        if step is None:
            continue
        is_quantities, walk, repeated, scalar = step
        sub = f"{path}.{f.json_name}" if path else f.json_name
        if scalar:
            if scalars:
                yield sub, msg, f
        elif _is_map(f):
            if is_quantities:
                yield sub, value, None
            if walk:
                for k, item in value.items():
                    yield from _iter_quantities(item, f"{sub}[{k}]", scalars=scalars)
        elif repeated:
            for i, item in enumerate(value):
                yield from _iter_quantities(item, f"{sub}[{i}]", scalars=scalars)
        else:
            yield from _iter_quantities(value, sub, scalars=scalars)


@functools.cache
def _struct_steps(desc: Descriptor) -> tuple[frozenset[int], dict[int, bool]]:
    """(numbers of the struct fields of `desc` that read `{}` as unset, {number: repeated} of
    the message fields that may hold such fields deeper), from the schema; cached."""
    names = STRUCT_WRITTEN.get(desc.full_name, frozenset())
    clear: set[int] = set()
    walk: dict[int, bool] = {}
    for f in desc.fields:
        mt = f.message_type
        if mt is None or _is_map(f):
            continue
        if f.json_name in names and not _is_repeated(f):
            clear.add(f.number)
        if _ours(mt) and _may_hold_structs(mt):
            walk[f.number] = _is_repeated(f)
    return frozenset(clear), walk


@functools.cache
def _may_hold_structs(desc: Descriptor) -> bool:
    return _holds_structs(desc, set())


def _holds_structs(desc: Descriptor, seen: set[str]) -> bool:
    if desc.full_name in seen:
        return False
    seen.add(desc.full_name)
    names = STRUCT_WRITTEN.get(desc.full_name, frozenset())
    if any(f.json_name in names and f.message_type and not _is_repeated(f) for f in desc.fields):
        return True
    return any(
        _ours(f.message_type) and not _is_map(f) and _holds_structs(f.message_type, seen)
        for f in desc.fields
    )


def clear_empty_structs(msg: Message, *, dry_run: bool = False) -> bool:
    """Unset every struct field (STRUCT_WRITTEN) that is set but empty, anywhere inside `msg`,
    so kubera stores one form of "empty" and an object read back from JSON (where Go writes
    `resources: {}` and the codec reads it as unset) compares equal to the stored one.
    Returns whether there was one; `dry_run` only looks."""
    clear, walk = _struct_steps(msg.DESCRIPTOR)
    found = False
    for f, value in msg.ListFields():
        repeated = walk.get(f.number)
        if repeated is not None:
            for item in value if repeated else [value]:
                found |= clear_empty_structs(item, dry_run=dry_run)
        if f.number in clear and not value.ListFields():
            found = True
            if dry_run:
                return True
            msg.ClearField(f.name)
    return found


def iter_quantity_maps(msg: Message, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every (field path, map container) holding quantities, anywhere inside `msg`."""
    for sub, m, _ in _iter_quantities(msg, path, scalars=False):
        yield sub, m


def canonicalize_quantities(msg: Message) -> list[FieldError]:
    """Rewrite every quantity (map values and scalar quantity fields) in place in canonical
    form; errors for those that do not parse."""
    errors = []
    for path, holder, f in _iter_quantities(msg, "", scalars=True):
        if f is not None:
            value = getattr(holder, f.name)
            try:
                setattr(holder, f.name, canonicalize(value))
            except QuantityError as e:
                errors.append(invalid(path, value, str(e)))
            continue
        for k in list(holder):
            try:
                holder[k] = canonicalize(holder[k])
            except QuantityError as e:
                errors.append(invalid(f"{path}[{k}]", holder[k], str(e)))
    return errors


def pack(obj: Message) -> any_pb2.Any:
    a = any_pb2.Any()
    a.Pack(obj)
    return a


def pack_bytes(kind: Kind, data: bytes) -> any_pb2.Any:
    """An Any around an already serialized object (the watch cache's hot path)."""
    return any_pb2.Any(type_url=kind.type_url, value=data)


def unpack(a: any_pb2.Any) -> Message:
    kind = kinds_mod.BY_TYPE_URL.get(a.type_url)
    if kind is None:
        raise DecodeError(f"unknown object type {a.type_url!r}")
    obj = kind.message()
    obj.ParseFromString(a.value)
    return obj


M = TypeVar("M", bound=Message)


def clone(obj: M) -> M:
    """A deep copy of `obj`, of its own type (copy what a cache hands out before changing it)."""
    return copy.deepcopy(obj)
