"""A pass over a checked CEL expression (cel.expr.CheckedExpr, as cel-expr-python
serializes it) for what the C++ runtime does not do the way Kubernetes does.

Two things (see cel.py for why): ``device.attributes`` and ``device.capacity`` hold an
empty map for every domain a selector indexes by a string literal (upstream's default
for a missing domain), so every other read of them (``in``, has(), iteration, a computed
key) is pointed at a sibling map without those defaults; and a cost bound for
comprehensions, since the runtime has no cost limit: a polynomial in the size of the
device's maps and lists (`m`), evaluated at MAX_MAP_SIZE for the worst case validation
holds against the limit, and at a device's own sizes before it is evaluated (cel.py).

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
#: A comprehension over a device map runs at most upstream's
#: ResourceSliceMaxAttributesAndCapacitiesPerDevice times, over anything else that is not
#: a literal (split() of an attribute of at most 64 characters, ...) at most MAX_RANGE.
#: Worst cases, as upstream's estimator assumes.
MAX_MAP_SIZE: Final = 32
MAX_RANGE: Final = 65

#: A cost: coefficients of m**0, m**1, … where m bounds the size of any map or list of the
#: device a comprehension ranges over.
Poly = tuple[int, ...]


def padd(*polys: Poly) -> Poly:
    out = [0] * max((len(p) for p in polys), default=1)
    for p in polys:
        for i, c in enumerate(p):
            out[i] += c
    return tuple(out)


def pmul(a: Poly, b: Poly) -> Poly:
    out = [0] * (len(a) + len(b) - 1)
    for i, x in enumerate(a):
        for j, y in enumerate(b):
            out[i + j] += x * y
    return tuple(out)


def peval(p: Poly, m: int) -> int:
    """The cost for maps and lists of at most `m` elements."""
    return sum(c * m**i for i, c in enumerate(p))


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
    #: The map fields read other than by a literal domain (``in``, has(), iteration, a
    #: computed key): those reads were renamed to the exact map, ``exact[f]``.
    exact: set[str] = field(default_factory=set)
    #: Worst-case cost in CEL's units (one per node visit, loops multiplied): `bound` at
    #: MAX_MAP_SIZE.
    cost: int = 0
    #: The cost as a polynomial in the size of the device's maps and lists.
    bound: Poly = (0,)


def rewrite(checked: bytes, *, device: str, exact: dict[str, str], whole: str) -> Rewrite:
    """Rename every read of ``device.<f>`` (f in `exact`) that is not an index by a string
    literal (``device.<f>["d"]``, ``device.<f>.d``) to ``device.<exact[f]>``, and every use
    of ``device`` other than a field select (an alias: ``cel.bind(d, device, ...)``) to
    ``device.<whole>`` (recorded in `exact` as `whole`); record the literal domains;
    estimate the cost."""
    msg = _CheckedExpr()
    msg.ParseFromString(checked)
    out = Rewrite(checked=b"", domains={f: set() for f in exact})
    pass_ = _Pass(device, exact, whole, out, _max_id(msg.expr))
    out.bound = pass_.visit(msg.expr, frozenset())
    out.cost = peval(out.bound, MAX_MAP_SIZE)
    out.checked = msg.SerializeToString()
    return out


def _max_id(e: Any) -> int:
    """The largest node id under `e` (new nodes take ids above it)."""
    best = e.id
    for child in _children(e):
        best = max(best, _max_id(child))
    return best


def _children(e: Any) -> list[Any]:
    if e.HasField("select_expr"):
        return [e.select_expr.operand]
    if e.HasField("call_expr"):
        c = e.call_expr
        return ([c.target] if c.HasField("target") else []) + list(c.args)
    if e.HasField("list_expr"):
        return list(e.list_expr.elements)
    if e.HasField("struct_expr"):
        out = []
        for entry in e.struct_expr.entries:
            if entry.HasField("map_key"):
                out.append(entry.map_key)
            out.append(entry.value)
        return out
    if e.HasField("comprehension_expr"):
        c = e.comprehension_expr
        return [c.iter_range, c.accu_init, c.loop_condition, c.loop_step, c.result]
    return []


class _Pass:
    def __init__(
        self, device: str, exact: dict[str, str], whole: str, out: Rewrite, max_id: int
    ) -> None:
        self.device = device
        self.exact = exact
        self.whole = whole
        self.out = out
        self.next_id = max_id + 1

    def _is_device(self, e: Any, shadowed: frozenset[str]) -> bool:
        return (
            e.HasField("ident_expr")
            and e.ident_expr.name == self.device
            and self.device not in shadowed
        )

    def _device_map(self, e: Any, shadowed: frozenset[str]) -> Any | None:
        """The Select of ``device.<f>`` (f a map field) that `e` is, else None."""
        if not e.HasField("select_expr"):
            return None
        sel = e.select_expr
        if sel.test_only or sel.field not in self.exact:
            return None
        op = sel.operand
        if op.HasField("ident_expr") and op.ident_expr.name == self.device:
            return None if self.device in shadowed else sel
        return None

    def visit(self, e: Any, shadowed: frozenset[str]) -> Poly:
        if self._is_device(e, shadowed):
            # `device` used whole (every field select returns before visiting it): make
            # it device.<whole>, the device without default domains.
            # The ident keeps its id: the reference map resolves that id to the variable.
            e.ClearField("ident_expr")
            e.select_expr.operand.id = e.id
            e.select_expr.operand.ident_expr.name = self.device
            e.select_expr.field = self.whole
            e.id = self.next_id
            self.next_id += 1
            self.out.exact.add(self.whole)
            return (2,)
        if e.HasField("ident_expr") or e.HasField("const_expr"):
            return (1,)
        if e.HasField("select_expr"):
            sel = e.select_expr
            if self._is_device(sel.operand, shadowed) and sel.field not in self.exact:
                return (2,)  # device.driver
            whole = self._device_map(e, shadowed)
            if whole is not None:
                # device.<f> read as a whole: the exact map (no default domains).
                self.out.exact.add(whole.field)
                whole.field = self.exact[whole.field]
                return (2,)
            inner = self._device_map(sel.operand, shadowed)
            if inner is not None and not sel.test_only:
                # device.attributes.<domain>: a select on a map is a lookup by that key.
                self.out.domains[inner.field].add(sel.field)
                return (3,)
            return padd((1,), self.visit(sel.operand, shadowed))
        if e.HasField("call_expr"):
            call = e.call_expr
            cost: Poly = (1,)
            args = list(call.args)
            if call.function == "_[_]" and len(args) == 2:
                inner = self._device_map(args[0], shadowed)
                key = args[1]
                if (
                    inner is not None
                    and key.HasField("const_expr")
                    and key.const_expr.HasField("string_value")
                ):
                    self.out.domains[inner.field].add(key.const_expr.string_value)
                    return (4,)
            if call.HasField("target"):
                cost = padd(cost, self.visit(call.target, shadowed))
            return padd(cost, *(self.visit(arg, shadowed) for arg in args))
        if e.HasField("list_expr"):
            return padd((1,), *(self.visit(x, shadowed) for x in e.list_expr.elements))
        if e.HasField("struct_expr"):
            cost = (1,)
            for entry in e.struct_expr.entries:
                if entry.HasField("map_key"):
                    cost = padd(cost, self.visit(entry.map_key, shadowed))
                cost = padd(cost, self.visit(entry.value, shadowed))
            return cost
        if e.HasField("comprehension_expr"):
            c = e.comprehension_expr
            cost = padd(self.visit(c.iter_range, shadowed), self.visit(c.accu_init, shadowed))
            inner_scope = shadowed | {c.iter_var, c.accu_var} | ({c.iter_var2} - {""})
            per_step = padd(
                self.visit(c.loop_condition, inner_scope), self.visit(c.loop_step, inner_scope)
            )
            cost = padd(cost, pmul(_range_size(c.iter_range), per_step))
            return padd(cost, self.visit(c.result, shadowed | {c.accu_var}))
        return (1,)


def _range_size(e: Any) -> Poly:
    """The most elements `e` can have: literals count, concatenations add up, a
    comprehension's result (map, filter) is at most its range; the device's maps and lists
    m (at most MAX_MAP_SIZE in the worst case; a list-type attribute may hold up to 64
    values, so its loops are under-estimated there, not on a device); anything else
    (split(), ...) at most MAX_RANGE."""
    if e.HasField("list_expr"):
        return (len(e.list_expr.elements),)
    if e.HasField("struct_expr"):
        return (len(e.struct_expr.entries),)
    if e.HasField("call_expr") and e.call_expr.function == "_+_" and len(e.call_expr.args) == 2:
        return padd(_range_size(e.call_expr.args[0]), _range_size(e.call_expr.args[1]))
    if e.HasField("comprehension_expr"):
        return _range_size(e.comprehension_expr.iter_range)
    if e.HasField("select_expr") or (e.HasField("call_expr") and e.call_expr.function == "_[_]"):
        return (0, 1)  # device.attributes, device.capacity["d"], ...: m
    return (MAX_RANGE,)
