"""Device selectors in CEL (upstream k8s.io/dynamic-resource-allocation/cel).

A DeviceClass and every exactly-request of a ResourceClaim carry CEL selectors; the
allocator keeps a device only if every selector evaluates to true for it. Validation
compiles the same expressions to refuse bad ones with upstream's wording. Evaluation
sits on the scheduler's hot path (nodes x devices x selectors), so the library and
the per-device data layout are chosen for speed.

The library: cel-expr-python (Google's CEL C++ runtime behind pybind11). Measured on
this machine (scripts/bench_cel.py, docs/results/issue-16/cel.md), one typical GPU
selector on a dict activation: cel-expr-python ~3 µs/eval, common-expression-language
(Rust cel-interpreter) ~15 µs, cel-python (pure Python) ~340 µs. cel-expr-python also
type-checks at compile time (``1`` is "not bool" before any device is seen) and
declares custom functions with member overloads, which Kubernetes' quantity and
semver libraries need.

The environment (upstream newCompiler): one variable ``device`` with ``driver``
(string), ``attributes`` and ``capacity``: maps from a domain to a map of names
(``device.attributes["gpu.example.com"].model``); an attribute written "model" in a
slice belongs to the driver's domain, "other.io/model" to "other.io". Values are int,
bool, string, ``kubernetes.Semver`` (version attributes) and ``kubernetes.Quantity``
(capacities), with Kubernetes' CEL libraries (celkube.py): quantity(), isQuantity(),
compareTo, isGreaterThan, isLessThan, add, sub, asInteger, asApproximateFloat, sign,
isInteger; semver(), isSemver(), major/minor/patch; and cel.bind.

Semantics kept from upstream:
- A domain that the device lacks reads as an empty map (upstream's mapper with a
  default), so ``has(device.attributes["x.io"].a)`` is false and
  ``device.attributes["x.io"].a`` fails with "no such key: a"; ``"x.io" in
  device.attributes`` stays false. Done by rewriting the checked AST: an index of
  ``device.attributes``/``device.capacity`` by a string literal reads a sibling map that
  also holds an empty map for every literal domain any compiled selector names.
- A missing attribute that is not guarded by has()/in is a runtime error (CELRuntimeError).
- The result must be bool or dyn: "must evaluate to bool or the unknown type, not int".

Deliberate differences (the C++ runtime exposes no cost accounting to Python):
- No runtime cost limit. Instead expressions are bounded by upstream's maximum length
  (CELSelectorExpressionMaxLength) and by a static worst-case estimate of
  comprehension work (cost.py-like walk of the checked AST, see _estimate_cost) against
  upstream's CELSelectorExpressionMaxCost; beyond it compile fails with upstream's
  validation wording "too complex, exceeds cost limit".
- An index of ``device.attributes`` by a computed (non-literal) key does not default to
  an empty map: a missing domain is then a runtime error.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings
from google.protobuf import any_pb2

from protos.kubera.v1 import resource_pb2
from services.api.dra import celast, celkube

#: upstream resourceapi.CELSelectorExpressionMaxLength.
MAX_EXPRESSION_LENGTH: Final = 10 * 1024
#: upstream resourceapi.CELSelectorExpressionMaxCost.
MAX_COST: Final = 1_000_000
#: upstream resourceapi.ResourceSliceMaxAttributesAndCapacitiesPerDevice: the most entries
#: of a device's attribute or capacity map, the bound of a comprehension over one.
MAX_ATTRIBUTES_PER_DEVICE: Final = 32

#: How many compiled selectors are kept (DeviceClasses and claims of a cluster).
COMPILE_CACHE_SIZE: Final = 4096
#: How many converted devices are kept; a scheduler cycle walks every device of the
#: candidate nodes, so this should exceed the devices of one cluster's slices.
DEVICE_CACHE_SIZE: Final = 65536

_DEVICE: Final = "device"
_DRIVER: Final = "driver"
_ATTRIBUTES: Final = "attributes"
_CAPACITY: Final = "capacity"
#: The sibling maps that literal-domain lookups read after the AST rewrite. A name no
#: selector can write (CEL field names are identifiers) so user expressions never see it.
_LOOKUP: Final = {_ATTRIBUTES: "attributes@lookup", _CAPACITY: "capacity@lookup"}


class CELCompileError(ValueError):
    """The expression does not compile, is not a bool, or exceeds the cost limit; the
    message is upstream's wording, for validation's field errors."""


class CELRuntimeError(RuntimeError):
    """Evaluation failed for a device (e.g. a missing attribute that is not guarded)."""


_ENV: Final = cel.NewEnv(
    celkube.POOL,
    variables={_DEVICE: cel.Type.Map(cel.Type.STRING, cel.Type.DYN)},
    extensions=[
        celkube.EXTENSION,
        ext_bindings.ExtBindings(),
        ext_strings.ExtStrings(),
    ],
)

_lock = threading.Lock()
# Every string literal that some compiled selector uses as a domain index. Only grows; a
# device converted before a new domain appeared is converted again (generation check).
_domains: dict[str, set[str]] = {_ATTRIBUTES: set(), _CAPACITY: set()}
_domains_generation = 0
_compiled: OrderedDict[str, Selector] = OrderedDict()
# id(device message) -> (the message, its driver, generation, activation). The message is
# held so its id cannot be reused while the entry lives; informer objects are immutable.
_devices: OrderedDict[int, tuple[resource_pb2.Device, str, int, Any]] = OrderedDict()


class Selector:
    """One compiled selector: compile once (compile_selector caches by expression), match
    many devices."""

    expression: str

    def __init__(self, expression: str, program: Any) -> None:
        self.expression = expression
        self._program = program

    def matches(self, driver: str, device: resource_pb2.Device) -> bool:
        """Whether the device satisfies the selector. Raises CELRuntimeError."""
        result = self._program.eval(_activation(driver, device))
        value = result.value()
        if value is True or value is False:
            return value
        if result.type() == cel.Type.ERROR:
            raise CELRuntimeError(_runtime_message(str(value)))
        raise CELRuntimeError(
            f"CEL result of type {str(result.type().name()).lower()} could not be converted to bool"
        )

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


def compile_selector(expression: str) -> Selector:
    """The compiled selector (cached by expression). Raises CELCompileError."""
    with _lock:
        hit = _compiled.get(expression)
        if hit is not None:
            _compiled.move_to_end(expression)
            return hit
    selector = _compile(expression)
    with _lock:
        _compiled[expression] = selector
        while len(_compiled) > COMPILE_CACHE_SIZE:
            _compiled.popitem(last=False)
    return selector


def _compile(expression: str) -> Selector:
    global _domains_generation
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CELCompileError(
            f"may not be longer than {MAX_EXPRESSION_LENGTH} bytes (got {len(expression)})"
        )
    try:
        checked = _ENV.compile(expression)
    except RuntimeError as err:
        raise CELCompileError("compilation failed: " + _compile_message(str(err))) from None
    out = checked.return_type()
    if out != cel.Type.BOOL and out != cel.Type.DYN:
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {_type_name(out)}")
    wrapped = any_pb2.Any()
    wrapped.ParseFromString(checked.serialize())
    rewrite = celast.rewrite(
        wrapped.value, device=_DEVICE, fields=(_DRIVER, _ATTRIBUTES, _CAPACITY), lookup=_LOOKUP
    )
    if rewrite.undefined_field is not None:
        raise CELCompileError(
            f"compilation failed: ERROR: <input>: undefined field '{rewrite.undefined_field}'"
        )
    if rewrite.cost > MAX_COST:
        raise CELCompileError("too complex, exceeds cost limit")
    wrapped.value = rewrite.checked
    program = _ENV.deserialize(wrapped.SerializeToString())
    with _lock:
        for field, names in rewrite.domains.items():
            new = names - _domains[field]
            if new:
                _domains[field] |= new
                _domains_generation += 1
    return Selector(expression, program)


def _activation(driver: str, device: resource_pb2.Device) -> Any:
    key = id(device)
    generation = _domains_generation
    entry = _devices.get(key)
    if entry is not None and entry[0] is device and entry[1] == driver and entry[2] == generation:
        return entry[3]
    activation = _ENV.Activation({_DEVICE: _device_value(driver, device)})
    with _lock:
        _devices[key] = (device, driver, generation, activation)
        while len(_devices) > DEVICE_CACHE_SIZE:
            _devices.popitem(last=False)
    return activation


def _device_value(driver: str, device: resource_pb2.Device) -> dict[str, Any]:
    """The ``device`` variable (upstream DeviceMatches): qualified names split into
    domain -> name, values converted to CEL (version -> Semver, capacity -> Quantity)."""
    attributes: dict[str, dict[str, Any]] = {}
    for name, attr in device.attributes.items():
        domain, ident = _split(name, driver)
        attributes.setdefault(domain, {})[ident] = _attribute_value(name, attr)
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, driver)
        try:
            capacity.setdefault(domain, {})[ident] = celkube.quantity_message(cap.value)
        except ValueError as err:
            raise CELRuntimeError(f"capacity {name}: {err}") from None
    value = {_DRIVER: driver, _ATTRIBUTES: attributes, _CAPACITY: capacity}
    for field, source in ((_ATTRIBUTES, attributes), (_CAPACITY, capacity)):
        lookup = dict(source)
        for domain in _domains[field]:
            lookup.setdefault(domain, {})
        value[_LOOKUP[field]] = lookup
    return value


def _attribute_value(name: str, attr: resource_pb2.DeviceAttribute) -> Any:
    if attr.HasField("int"):
        return attr.int
    if attr.HasField("bool"):
        return attr.bool
    if attr.HasField("string"):
        return attr.string
    if attr.HasField("version"):
        try:
            return celkube.semver_message(attr.version)
        except ValueError as err:
            raise CELRuntimeError(f"attribute {name}: parse semantic version: {err}") from None
    raise CELRuntimeError(f"attribute {name}: unsupported attribute value")


def _split(name: str, default_domain: str) -> tuple[str, str]:
    """upstream parseQualifiedName: "domain/id", or the driver's domain for a bare id."""
    domain, sep, ident = name.partition("/")
    if not sep:
        return default_domain, name
    return domain, ident


def _type_name(t: Any) -> str:
    return str(t.name()).lower()


def _compile_message(text: str) -> str:
    """cel-cpp's status text minus its status-code wrapper ("INVALID_ARGUMENT: ... [..]")."""
    text = text.removeprefix("INVALID_ARGUMENT: ")
    if text.endswith(" [INVALID_ARGUMENT]"):
        text = text[: -len(" [INVALID_ARGUMENT]")]
    return text


def _runtime_message(text: str) -> str:
    """cel-cpp's error text in upstream's (cel-go) wording where they differ."""
    for prefix in ("NOT_FOUND: Key not found in map : ", "Key not found in map : "):
        if text.startswith(prefix):
            key = text[len(prefix) :].strip().strip('"')
            return f"no such key: {key}"
    return text
