"""A pass over a checked CEL expression (cel.expr.CheckedExpr, as cel-expr-python
serializes it) for what the C++ runtime does not do the way Kubernetes does.

Three things (see cel.py for why): a literal-domain index of ``device.attributes`` or
``device.capacity`` is pointed at a sibling map that defaults missing domains to an
empty map; a field of ``device`` other than the declared ones is a compile error
(upstream declares ``device`` as an object type, cel-expr-python only as a map); and a
static worst-case cost bounds comprehensions, since the runtime has no cost limit.

Only the fields this pass reads are declared in the descriptors below; every other field
(type map, reference map, source info, other constant kinds) stays an unknown field
and is written back unchanged. The descriptors are proto2 so that present defaults
(an empty string literal, a false test_only) survive the round trip.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto
#: Comprehensions over something other than a literal are bounded by this many elements:
#: upstream's most attributes per device (32) and longest attribute string (64), the
#: larger. A worst case, as upstream's estimator assumes.
MAX_RANGE: Final = 64


def _pool() -> descriptor_pool.DescriptorPool:
    fd = descriptor_pb2.FileDescriptorProto(
        name="kubera/celast.proto", package="kubera.celast", syntax="proto2"
    )

    def message(name: str, *fields: tuple[str, int, int, str | None, bool]) -> None:
        m = fd.message_type.add(name=name)
        for fname, number, ftype, type_name, repeated in fields:
            f = m.field.add(name=fname, number=number, type=ftype)
            f.label = _F.LABEL_REPEATED if repeated else _F.LABEL_OPTIONAL
            if type_name:
                f.type_name = ".kubera.celast." + type_name

    msg, s, i64, b = _F.TYPE_MESSAGE, _F.TYPE_STRING, _F.TYPE_INT64, _F.TYPE_BOOL
    message("CheckedExpr", ("expr", 4, msg, "Expr", False))
    message(
        "Expr",
        ("id", 2, i64, None, False),
        ("const_expr", 3, msg, "Constant", False),
        ("ident_expr", 4, msg, "Ident", False),
        ("select_expr", 5, msg, "Select", False),
        ("call_expr", 6, msg, "Call", False),
        ("list_expr", 7, msg, "CreateList", False),
        ("struct_expr", 8, msg, "CreateStruct", False),
        ("comprehension_expr", 9, msg, "Comprehension", False),
    )
    message("Constant", ("string_value", 6, s, None, False))
    message("Ident", ("name", 1, s, None, False))
    message(
        "Select",
        ("operand", 1, msg, "Expr", False),
        ("field", 2, s, None, False),
        ("test_only", 3, b, None, False),
    )
    message(
        "Call",
        ("target", 1, msg, "Expr", False),
        ("function", 2, s, None, False),
        ("args", 3, msg, "Expr", True),
    )
    message("CreateList", ("elements", 1, msg, "Expr", True))
    message(
        "Entry",
        ("id", 1, i64, None, False),
        ("field_key", 2, s, None, False),
        ("map_key", 3, msg, "Expr", False),
        ("value", 4, msg, "Expr", False),
    )
    message("CreateStruct", ("message_name", 1, s, None, False), ("entries", 2, msg, "Entry", True))
    message(
        "Comprehension",
        ("iter_var", 1, s, None, False),
        ("iter_range", 2, msg, "Expr", False),
        ("accu_var", 3, s, None, False),
        ("accu_init", 4, msg, "Expr", False),
        ("loop_condition", 5, msg, "Expr", False),
        ("loop_step", 6, msg, "Expr", False),
        ("result", 7, msg, "Expr", False),
        ("iter_var2", 8, s, None, False),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fd)
    return pool


_POOL: Final = _pool()
_CheckedExpr: Final[Any] = message_factory.GetMessageClass(
    _POOL.FindMessageTypeByName("kubera.celast.CheckedExpr")
)


@dataclass
class Rewrite:
    """The rewritten CheckedExpr and what the pass found."""

    checked: bytes
    #: Per map field ("attributes", "capacity"): the literal domains it is indexed by.
    domains: dict[str, set[str]] = field(default_factory=dict)
    #: A field of ``device`` that is not declared (compile error), else None.
    undefined_field: str | None = None
    #: Worst-case cost in CEL's units (one per node visit, loops multiplied).
    cost: int = 0


def rewrite(
    checked: bytes, *, device: str, fields: tuple[str, ...], lookup: dict[str, str]
) -> Rewrite:
    """Rewrite literal-domain lookups of ``device.<f>`` (f in `lookup`) to ``device.<lookup[f]>``
    and estimate the cost. `fields` are the declared fields of ``device``."""
    msg = _CheckedExpr()
    msg.ParseFromString(checked)
    out = Rewrite(checked=b"", domains={f: set() for f in lookup})
    pass_ = _Pass(device, fields, lookup, out)
    out.cost = pass_.visit(msg.expr, frozenset())
    out.checked = msg.SerializeToString()
    return out


class _Pass:
    def __init__(
        self, device: str, fields: tuple[str, ...], lookup: dict[str, str], out: Rewrite
    ) -> None:
        self.device = device
        self.fields = fields
        self.lookup = lookup
        self.out = out

    def _device_map(self, e: Any, shadowed: frozenset[str]) -> Any | None:
        """The Select of ``device.<f>`` (f a lookup field) that `e` is, else None."""
        if not e.HasField("select_expr"):
            return None
        sel = e.select_expr
        if sel.test_only or sel.field not in self.lookup:
            return None
        op = sel.operand
        if op.HasField("ident_expr") and op.ident_expr.name == self.device:
            return None if self.device in shadowed else sel
        return None

    def visit(self, e: Any, shadowed: frozenset[str]) -> int:
        if e.HasField("ident_expr") or e.HasField("const_expr"):
            return 1
        if e.HasField("select_expr"):
            sel = e.select_expr
            op = sel.operand
            if (
                op.HasField("ident_expr")
                and op.ident_expr.name == self.device
                and self.device not in shadowed
                and sel.field not in self.fields
                and sel.field not in self.lookup.values()
            ):
                self.out.undefined_field = self.out.undefined_field or sel.field
            inner = self._device_map(op, shadowed)
            if inner is not None and not sel.test_only:
                # device.attributes.<domain>: a select on a map is a lookup by that key.
                self.out.domains[inner.field].add(sel.field)
                inner.field = self.lookup[inner.field]
            return 1 + self.visit(op, shadowed)
        if e.HasField("call_expr"):
            call = e.call_expr
            cost = 1
            if call.function == "_[_]" and len(call.args) == 2:
                inner = self._device_map(call.args[0], shadowed)
                key = call.args[1]
                if (
                    inner is not None
                    and key.HasField("const_expr")
                    and key.const_expr.HasField("string_value")
                ):
                    self.out.domains[inner.field].add(key.const_expr.string_value)
                    inner.field = self.lookup[inner.field]
            if call.HasField("target"):
                cost += self.visit(call.target, shadowed)
            for arg in call.args:
                cost += self.visit(arg, shadowed)
            return cost
        if e.HasField("list_expr"):
            return 1 + sum(self.visit(x, shadowed) for x in e.list_expr.elements)
        if e.HasField("struct_expr"):
            cost = 1
            for entry in e.struct_expr.entries:
                if entry.HasField("map_key"):
                    cost += self.visit(entry.map_key, shadowed)
                cost += self.visit(entry.value, shadowed)
            return cost
        if e.HasField("comprehension_expr"):
            c = e.comprehension_expr
            cost = self.visit(c.iter_range, shadowed) + self.visit(c.accu_init, shadowed)
            inner_scope = shadowed | {c.iter_var, c.accu_var} | ({c.iter_var2} - {""})
            per_step = self.visit(c.loop_condition, inner_scope) + self.visit(
                c.loop_step, inner_scope
            )
            cost += _range_size(c.iter_range) * per_step
            cost += self.visit(c.result, shadowed | {c.accu_var})
            return cost
        return 1


def _range_size(e: Any) -> int:
    if e.HasField("list_expr"):
        return len(e.list_expr.elements)
    if e.HasField("struct_expr"):
        return len(e.struct_expr.entries)
    return MAX_RANGE
