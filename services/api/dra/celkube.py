"""Kubernetes' CEL libraries for quantities and semantic versions (upstream
k8s.io/apiserver/pkg/cel/library quantity.go and semverlib.go), for the CEL C++ runtime.

cel-expr-python cannot carry opaque Python objects through an evaluation, so the two
Kubernetes types are protobuf messages in a private descriptor pool, named as upstream
names them (``kubernetes.Quantity``, ``kubernetes.Semver``). Their fields are chosen so
that CEL's ``==`` on messages (field equality) is upstream's value equality:
a Quantity holds its exact value as a normalized decimal ("1Ki" and "1024" are one
message), a Semver holds major, minor, patch and prerelease but not the build metadata
(blang/semver's EQ ignores it).
"""

from __future__ import annotations

import decimal
import functools
import re
from decimal import Decimal
from typing import Any, Final

from cel_expr_python import cel
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from services.api.machinery.quantity import Quantity, QuantityError, parse_quantity

_F = descriptor_pb2.FieldDescriptorProto


def _pool() -> descriptor_pool.DescriptorPool:
    pool = descriptor_pool.DescriptorPool()
    struct = descriptor_pb2.FileDescriptorProto()
    struct_pb2.DESCRIPTOR.CopyToProto(struct)
    pool.Add(struct)
    fd = descriptor_pb2.FileDescriptorProto(
        name="kubera/cel/kubernetes.proto",
        package="kubernetes",
        syntax="proto3",
        dependency=["google/protobuf/struct.proto"],
    )
    # The type the checker sees for `device` (upstream's kubernetes.DRADevice object):
    # driver string, attributes and capacity map(string, map(string, dyn)) (a Struct is
    # map(string, dyn) to CEL). Only the checker uses it: at run time `device` is a map,
    # since a Struct cannot hold a Quantity or Semver.
    dev = fd.message_type.add(name="DRADevice")
    dev.field.add(name="driver", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    for number, name in ((2, "attributes"), (3, "capacity")):
        entry = dev.nested_type.add(name=name.capitalize() + "Entry")
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(
            name="value",
            number=2,
            type=_F.TYPE_MESSAGE,
            type_name=".google.protobuf.Struct",
            label=_F.LABEL_OPTIONAL,
        )
        dev.field.add(
            name=name,
            number=number,
            type=_F.TYPE_MESSAGE,
            type_name=f".kubernetes.DRADevice.{entry.name}",
            label=_F.LABEL_REPEATED,
        )
    # dracounters: DRAConsumableCapacity's device.allowMultipleAllocations (false unset).
    dev.field.add(
        name="allowMultipleAllocations", number=4, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL
    )
    q = fd.message_type.add(name="Quantity")
    q.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    s = fd.message_type.add(name="Semver")
    for number, name in enumerate(("major", "minor", "patch"), start=1):
        s.field.add(name=name, number=number, type=_F.TYPE_INT64, label=_F.LABEL_OPTIONAL)
    s.field.add(name="pre", number=4, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    pool.Add(fd)
    # The base environment's network types (upstream library/ip.go, cidr.go: net.IP and
    # net.CIDR), for celbase.py: a canonical address, a canonical "address/bits" (CEL's
    # field equality is then netip's ==).
    net = descriptor_pb2.FileDescriptorProto(
        name="kubera/cel/net.proto", package="net", syntax="proto3"
    )
    for name in ("IP", "CIDR"):
        m = net.message_type.add(name=name)
        m.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    pool.Add(net)
    return pool


#: The descriptor pool the CEL environment resolves the two types in.
POOL: Final = _pool()
QuantityMessage: Final[Any] = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName("kubernetes.Quantity")
)
SemverMessage: Final[Any] = message_factory.GetMessageClass(
    POOL.FindMessageTypeByName("kubernetes.Semver")
)
QUANTITY: Final = cel.Type("kubernetes.Quantity")
SEMVER: Final = cel.Type("kubernetes.Semver")
#: The declared type of the `device` variable for the checker.
DEVICE: Final = cel.Type("kubernetes.DRADevice")

_EXACT: Final = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


# ---- quantity ---------------------------------------------------------------------------


def _normalized(value: Decimal) -> str:
    if value.is_zero():
        return "0"
    return format(value.normalize(context=_EXACT), "f")


@functools.lru_cache(maxsize=4096)
def quantity_message(text: str) -> Any:
    """The CEL value of a quantity string. Raises ValueError (upstream's parse error)."""
    try:
        q = parse_quantity(text)
    except QuantityError as err:
        raise ValueError(str(err)) from None
    return QuantityMessage(value=_normalized(q.value))


def _q(message: Any) -> Decimal:
    return parse_quantity(message.value).value


def _from_decimal(value: Decimal) -> Any:
    return QuantityMessage(value=_normalized(value))


def _quantity(text: str) -> Any:
    return quantity_message(text)


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def _cmp(a: Any, b: Any) -> int:
    return (a > b) - (a < b)


def _sign(message: Any) -> int:
    return _cmp(_q(message), 0)


def _as_int64(value: Decimal) -> int | None:
    """upstream Quantity.AsInt64: the value if it is an integer that fits an int64."""
    if value != value.to_integral_value(context=_EXACT):
        return None
    n = int(value)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def _as_integer(message: Any) -> int:
    n = _as_int64(_q(message))
    if n is None:
        raise ValueError("cannot convert value to integer")
    return n


def _quantity_overloads() -> list[Any]:
    Q, B, N, S, D = QUANTITY, cel.Type.BOOL, cel.Type.INT, cel.Type.STRING, cel.Type.DOUBLE
    ov = cel.Overload
    return [
        cel.FunctionDecl("quantity", [ov("string_to_quantity", Q, [S], impl=_quantity)]),
        cel.FunctionDecl("isQuantity", [ov("is_quantity_string", B, [S], impl=_is_quantity)]),
        cel.FunctionDecl(
            "sign",
            [
                # upstream declares sign(q) global and documents q.sign(): both work here.
                ov("quantity_sign", N, [Q], impl=_sign),
                ov("quantity_sign_member", N, [Q], is_member=True, impl=_sign),
            ],
        ),
        cel.FunctionDecl(
            "mul",
            [
                ov(
                    "quantity_multiply_int",
                    Q,
                    [Q, N],
                    is_member=True,
                    impl=lambda a, n: _from_decimal(_q(a) * n),
                )
            ],
        ),
        cel.FunctionDecl(
            "isInteger",
            [
                ov(
                    "quantity_is_integer",
                    B,
                    [Q],
                    is_member=True,
                    impl=lambda q: _as_int64(_q(q)) is not None,
                )
            ],
        ),
        cel.FunctionDecl(
            "asInteger", [ov("quantity_get_value", N, [Q], is_member=True, impl=_as_integer)]
        ),
        cel.FunctionDecl(
            "asApproximateFloat",
            [ov("quantity_get_float", D, [Q], is_member=True, impl=lambda q: float(_q(q)))],
        ),
        cel.FunctionDecl(
            "add",
            [
                ov(
                    "quantity_add",
                    Q,
                    [Q, Q],
                    is_member=True,
                    impl=lambda a, b: _from_decimal(_q(a) + _q(b)),
                ),
                ov(
                    "quantity_add_int",
                    Q,
                    [Q, N],
                    is_member=True,
                    impl=lambda a, n: _from_decimal(_q(a) + n),
                ),
            ],
        ),
        cel.FunctionDecl(
            "sub",
            [
                ov(
                    "quantity_sub",
                    Q,
                    [Q, Q],
                    is_member=True,
                    impl=lambda a, b: _from_decimal(_q(a) - _q(b)),
                ),
                ov(
                    "quantity_sub_int",
                    Q,
                    [Q, N],
                    is_member=True,
                    impl=lambda a, n: _from_decimal(_q(a) - n),
                ),
            ],
        ),
    ]


# ---- semver -----------------------------------------------------------------------------

_IDENT: Final = re.compile(r"^[0-9A-Za-z-]+$")


def _parse_number(part: str, what: str) -> int:
    if not part.isascii() or not part.isdigit():
        raise ValueError(f"Invalid character(s) found in {what} number {part!r}")
    if len(part) > 1 and part[0] == "0":
        raise ValueError(f"{what.capitalize()} number must not contain leading zeroes {part!r}")
    n = int(part)
    if n > _INT64_MAX:
        # blang parses uint64; a CEL int (major(), comparisons) is int64, so a larger number
        # could not become a value here: refused alike by validation and conversion.
        raise ValueError(f"{what.capitalize()} number out of range {part!r}")
    return n


def parse_semver(text: str) -> tuple[int, int, int, tuple[str, ...]]:
    """blang/semver v4 Parse (semver 2.0.0): (major, minor, patch, prerelease parts); the
    build metadata is validated and dropped. Major, minor and patch must fit an int64 (blang:
    uint64), the bound of the CEL values they become. Raises ValueError."""
    if not text:
        raise ValueError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    major = _parse_number(parts[0], "major")
    minor = _parse_number(parts[1], "minor")
    rest = parts[2]
    build = ""
    if "+" in rest:
        rest, build = rest.split("+", 1)
    pre = ""
    if "-" in rest:
        rest, pre = rest.split("-", 1)
    patch = _parse_number(rest, "patch")
    prerelease: tuple[str, ...] = ()
    if pre or "-" in parts[2].split("+", 1)[0]:
        prerelease = tuple(pre.split("."))
        for p in prerelease:
            if not p:
                raise ValueError("Prerelease is empty")
            if not _IDENT.match(p):
                raise ValueError(f"Invalid character(s) found in prerelease {p!r}")
            if p.isdigit() and len(p) > 1 and p[0] == "0":
                raise ValueError(f"Prerelease number must not contain leading zeroes {p!r}")
    if "+" in parts[2]:
        for b in build.split("."):
            if not b:
                raise ValueError("Build meta data is empty")
            if not _IDENT.match(b):
                raise ValueError(f"Invalid character(s) found in build meta data {b!r}")
    return major, minor, patch, prerelease


def _normalize_semver(text: str) -> str:
    """upstream normalizeAndParse: strip "v", drop leading zeros, fill minor and patch."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


@functools.lru_cache(maxsize=4096)
def semver_message(text: str, normalize: bool = False) -> Any:
    """The CEL value of a semantic version string. Raises ValueError."""
    major, minor, patch, pre = parse_semver(_normalize_semver(text) if normalize else text)
    return SemverMessage(major=major, minor=minor, patch=patch, pre=".".join(pre))


def _prerelease_key(part: str) -> tuple[int, int, str]:
    # Numeric identifiers sort below alphanumeric ones, numerically among themselves.
    return (0, int(part), "") if part.isdigit() else (1, 0, part)


def semver_compare(a: Any, b: Any) -> int:
    """blang Version.Compare: -1, 0 or 1 (prerelease < release; build ignored)."""
    c = _cmp((a.major, a.minor, a.patch), (b.major, b.minor, b.patch))
    if c:
        return c
    if a.pre == b.pre:
        return 0
    if not a.pre:
        return 1
    if not b.pre:
        return -1
    ka = [_prerelease_key(p) for p in a.pre.split(".")]
    kb = [_prerelease_key(p) for p in b.pre.split(".")]
    return _cmp(ka, kb)


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        semver_message(text, normalize)
    except ValueError:
        return False
    return True


def _semver_overloads() -> list[Any]:
    V, B, N, S = SEMVER, cel.Type.BOOL, cel.Type.INT, cel.Type.STRING
    ov = cel.Overload
    return [
        cel.FunctionDecl(
            "semver",
            [
                ov("string_to_semver", V, [S], impl=lambda s: semver_message(s)),
                ov("string_bool_to_semver", V, [S, B], impl=semver_message),
            ],
        ),
        cel.FunctionDecl(
            "isSemver",
            [
                ov("is_semver_string", B, [S], impl=lambda s: _is_semver(s)),
                ov("is_semver_string_bool", B, [S, B], impl=_is_semver),
            ],
        ),
        cel.FunctionDecl(
            "major", [ov("semver_major", N, [V], is_member=True, impl=lambda v: v.major)]
        ),
        cel.FunctionDecl(
            "minor", [ov("semver_minor", N, [V], is_member=True, impl=lambda v: v.minor)]
        ),
        cel.FunctionDecl(
            "patch", [ov("semver_patch", N, [V], is_member=True, impl=lambda v: v.patch)]
        ),
    ]


def _compare(a: Any, b: Any) -> int:
    if isinstance(a, QuantityMessage) and isinstance(b, QuantityMessage):
        return _cmp(_q(a), _q(b))
    if isinstance(a, SemverMessage) and isinstance(b, SemverMessage):
        return semver_compare(a, b)
    raise TypeError("no such overload")


def _comparisons() -> list[Any]:
    """isGreaterThan, isLessThan and compareTo. The C++ runtime keys an implementation by
    the kinds of its arguments, and both Kubernetes types are messages, so a typed
    overload per type would collide: one dyn overload dispatches on the message type
    (statically unchecked, as upstream's dyn-typed attributes are anyway)."""
    B, N, D = cel.Type.BOOL, cel.Type.INT, cel.Type.DYN
    ov = cel.Overload
    return [
        cel.FunctionDecl(
            "isGreaterThan",
            [ov("is_greater_than", B, [D, D], True, lambda a, b: _compare(a, b) == 1)],
        ),
        cel.FunctionDecl(
            "isLessThan", [ov("is_less_than", B, [D, D], True, lambda a, b: _compare(a, b) == -1)]
        ),
        cel.FunctionDecl("compareTo", [ov("compare_to", N, [D, D], True, _compare)]),
    ]


#: upstream ResourceSliceMaxAttributeValuesPerDevice: includes() refuses longer lists.
MAX_ATTRIBUTE_VALUES: Final = 48


def _includes(target: Any, arg: Any) -> bool:
    """upstream includesFunc (list-type attributes): whether a list holds `arg`, or a
    scalar equals it."""
    if isinstance(target, list):
        if len(target) > MAX_ATTRIBUTE_VALUES:
            raise ValueError(
                "'includes' function cannot be applied to lists longer than "
                f"{MAX_ATTRIBUTE_VALUES} values"
            )
        return any(_equal(item, arg) for item in target)
    return _equal(target, arg)


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, SemverMessage) and isinstance(b, SemverMessage):
        return semver_compare(a, b) == 0
    return type(a) is type(b) and a == b


def _list_functions() -> list[Any]:
    D = cel.Type.DYN
    return [
        cel.FunctionDecl(
            "includes",
            [cel.Overload("dra_includes_dyn_dyn", cel.Type.BOOL, [D, D], True, _includes)],
        )
    ]


#: The extension that declares and implements both libraries, and includes().
EXTENSION: Final = cel.CelExtension(
    "kubernetes",
    _quantity_overloads() + _semver_overloads() + _comparisons() + _list_functions(),
)

__all__ = [
    "EXTENSION",
    "POOL",
    "QUANTITY",
    "SEMVER",
    "Quantity",
    "QuantityMessage",
    "SemverMessage",
    "parse_semver",
    "quantity_message",
    "semver_compare",
    "semver_message",
]
