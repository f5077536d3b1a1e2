"""Device selectors in CEL (upstream k8s.io/dynamic-resource-allocation/cel).

A DeviceClass and every exactly-request of a ResourceClaim carry CEL selectors; the
allocator keeps a device only if every selector evaluates to true for it. Validation
compiles the same expressions to refuse bad ones with upstream's wording. Evaluation
sits on the scheduler's hot path (nodes x devices x selectors), so the library and the
per-device data layout are chosen for speed.

The library: cel-expr-python 0.1.3 (Google's CEL C++ runtime behind pybind11), chosen
by measurement (scripts/bench_cel.py; docs/results/issue-16/cel.md). One typical GPU
selector, best of 5 on this shared 2-core machine: 2.1 µs per evaluation on a ready
activation and 6-9 µs converting the device dict each time, against 2.2 and 38-42 µs for
common-expression-language 0.10.0 (Rust cel-interpreter) and 340-450 µs for cel-python
0.5.0 (pure Python). It also type-checks at compile time (``1`` fails as "not bool"
before any device is seen) and takes custom functions, member overloads included,
which Kubernetes' quantity and semver libraries need (celkube.py). Through kubera's
path (device conversion cached) a match costs ~2.7 µs; the first match of a device
~35 µs (conversion).

The environment (upstream newCompiler): one variable ``device`` with ``driver``
(string), ``allowMultipleAllocations`` (bool, DRAConsumableCapacity), ``attributes`` and
``capacity``: maps from a domain to a map of names
(``device.attributes["gpu.example.com"].model``); an attribute written "model" in a
slice belongs to the driver's domain, "other.io/model" to "other.io". Values are int,
bool, string, ``kubernetes.Semver`` (version attributes), lists of these (list-type
attributes) and ``kubernetes.Quantity`` (capacities) with Kubernetes' CEL libraries
(quantity(), isQuantity(), compareTo, isGreaterThan, isLessThan, add, sub, mul,
asInteger, asApproximateFloat, sign, isInteger; semver(), isSemver(), major/minor/patch),
includes(), cel.bind, the strings extension (split, format, ...), and the base
environment's ip(), cidr(), find()/findAll() and list functions (celbase.py). The checker sees ``device`` as an object type (an undeclared
field is a compile error, as upstream); programs run on a plain map.

Semantics kept from upstream:
- A domain the device lacks reads as an empty map (upstream's mapper with a default),
  so ``has(device.attributes["x.io"].a)`` is false and ``device.attributes["x.io"].a``
  fails with "no such key: a", while ``"x.io" in device.attributes`` stays false. Done
  by a pass over the checked AST (celast.py): the device's maps hold an empty map for
  every domain some compiled selector indexes by a string literal, and every other
  read of the maps (``in``, has(), iteration, a computed key) is pointed at a sibling
  map without those defaults.
- A missing attribute that is not guarded by has()/in is a runtime error
  (CELRuntimeError "no such key: <name>").
- The result must be bool or dyn: "must evaluate to bool or the unknown type, not int".
- Expressions longer than CELSelectorExpressionMaxLength do not compile.

The cost limit (upstream CELSelectorExpressionMaxCost, 1,000,000): the C++ runtime has no
cost tracking to stop an evaluation, so kubera bounds it before it starts. celast.py gives
each selector a cost polynomial in the size m of the device's maps and lists (one unit per
node, loops multiplied by their range, 65 for other runtime lists such as split()).
Validation refuses a new selector whose worst case (m = 32, upstream's per-device
attribute limit) exceeds the limit ("too complex, exceeds cost limit", upstream's
words); such a selector still compiles (a stored one, as upstream's compiler does), and
before it is evaluated for a device its bound at that device's own sizes is held
against the limit: over it, the evaluation does not run and fails with cel-go's
"operation cancelled: actual cost limit exceeded", which the allocator reports as
upstream's does ("CEL runtime error: …").

Deliberate differences:
- The runtime limit is a bound computed from the device's sizes before evaluating, not
  cel-go's count of the operations actually run: a loop that would stop early
  (exists(), a false &&) is charged its whole range, so an expression near the limit
  may fail here where upstream's evaluation stays under it. Only selectors whose worst
  case exceeds the limit are checked (every other one evaluates as before).
- An index of ``device.attributes`` by a computed (non-literal) key, or through an
  alias (``cel.bind(m, device.attributes, m["x.io"])``, ``cel.bind(d, device, ...)``),
  does not default to an empty map: a missing domain is then a runtime error.
- isGreaterThan, isLessThan and compareTo take dyn arguments (the C++ runtime cannot
  hold two message-typed overloads of one name); a call on other types fails at run
  time ("no such overload") instead of at compile time.
- List-type attributes (DRAListTypeAttributes) read as CEL lists (versions as Semver
  values) and ``x.includes(v)`` is declared whatever the gate (upstream declares it for
  new expressions only with the gate on, for stored ones always): kubera compiles every
  selector in one environment.
- The base environment's IP, CIDR, regex find/findAll and lists libraries are
  celbase.py's (see there for what differs); not provided: quantity div/divInt, the
  URL and sets libraries, the named formats (format.dns1123Label() ...) and the lists
  library's indexOf/lastIndexOf (the strings extension's names).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from typing import Any, Final

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_strings
from google.protobuf import any_pb2

from protos.kubera.v1 import resource_pb2
from services.api.dra import celast, celbase, celkube

#: upstream resourceapi.CELSelectorExpressionMaxLength.
MAX_EXPRESSION_LENGTH: Final = 10 * 1024
#: upstream resourceapi.CELSelectorExpressionMaxCost.
MAX_COST: Final = 1_000_000
#: cel-go's error when an evaluation's actual cost passes the limit (interpreter
#: runtimecost.go), the text upstream's allocator wraps in "CEL runtime error: ".
COST_LIMIT_EXCEEDED: Final = "operation cancelled: actual cost limit exceeded"
#: How many compiled selectors are kept (DeviceClasses and claims of a cluster).
COMPILE_CACHE_SIZE: Final = 4096
#: How many devices are kept converted to Python values (~1-2 KB each); a scheduling
#: cycle walks every device of the candidate nodes, so this should exceed the devices of
#: one cluster's slices.
DEVICE_CACHE_SIZE: Final = 32768
#: How many of those also keep a ready CEL activation (~3.5 KB each in a shared arena,
#: measured): a match on one costs ~3 µs instead of ~8 µs.
ACTIVATION_CACHE_SIZE: Final = 16384

_DEVICE: Final = "device"
_DRIVER: Final = "driver"
_ATTRIBUTES: Final = "attributes"
_CAPACITY: Final = "capacity"
_MULTI: Final = "allowMultipleAllocations"
#: The sibling maps, without default domains, that every other read of the two maps is
#: renamed to. A name no selector can write (CEL field names are identifiers).
_EXACT: Final = {_ATTRIBUTES: "attributes@exact", _CAPACITY: "capacity@exact"}
#: The same for the whole device (an alias of `device`): driver and the exact maps.
_WHOLE: Final = "device@exact"


class CELCompileError(ValueError):
    """The expression does not compile or is not a bool; the message is upstream's
    wording, for validation's field errors."""


class CELRuntimeError(RuntimeError):
    """Evaluation failed for a device (e.g. a missing attribute that is not guarded)."""


def _env(device_type: Any, base: Any) -> Any:
    return cel.NewEnv(
        celkube.POOL,
        variables={_DEVICE: device_type},
        extensions=[
            celkube.EXTENSION,
            base,
            ext_bindings.ExtBindings(),
            ext_strings.ExtStrings(),
        ],
    )


# Two environments, one library: the checker sees `device` as the object type
# kubernetes.DRADevice (undeclared fields are compile errors, attributes[d] is a map, as
# upstream); programs run with `device` a plain map, since Quantity and Semver values do
# not fit that type's Struct values. A checked expression moves from one to the other
# serialized (the runtime does not check again).
_CHECK_ENV: Final = _env(celkube.DEVICE, celbase.CHECK_EXTENSION)
_ENV: Final = _env(cel.Type.Map(cel.Type.STRING, cel.Type.DYN), celbase.RUN_EXTENSION)

_VERSION_FIELD: Final = resource_pb2.DeviceAttribute.VERSION_FIELD_NUMBER
_VERSIONS_FIELD: Final = resource_pb2.DeviceAttribute.VERSIONS_FIELD_NUMBER
_LIST_FIELDS: Final = frozenset(
    f.number for f in resource_pb2.DeviceAttribute.DESCRIPTOR.fields if f.is_repeated
)

_lock = threading.Lock()
# Every string literal that some compiled selector indexes a map field by, and the map
# fields some selector reads whole (so devices carry their exact sibling). Both only
# grow; a device converted before they changed is converted again (generation check).
_domains: dict[str, frozenset[str]] = {_ATTRIBUTES: frozenset(), _CAPACITY: frozenset()}
_exact_used: frozenset[str] = frozenset()
_generation = 0
_compiled: OrderedDict[str, Selector] = OrderedDict()


class Selector:
    """One compiled selector: compile once (compile_selector caches by expression), match
    many devices."""

    expression: str
    #: The worst-case cost (celast.py at MAX_MAP_SIZE): validation refuses a new selector
    #: above MAX_COST ("too complex, exceeds cost limit").
    max_cost: int

    def __init__(self, expression: str, program: Any, bound: celast.Poly = (0,)) -> None:
        self.expression = expression
        self._program = program
        self._bound = bound
        self.max_cost = celast.peval(bound, celast.MAX_MAP_SIZE)

    def matches(self, driver: str, device: resource_pb2.Device) -> bool:
        """Whether the device satisfies the selector. Raises CELRuntimeError, also
        (COST_LIMIT_EXCEEDED, without evaluating) when the selector's cost for this
        device's sizes exceeds MAX_COST."""
        if self.max_cost > MAX_COST and self.cost(driver, device) > MAX_COST:
            raise CELRuntimeError(COST_LIMIT_EXCEEDED)
        result = self._program.eval(_devices.activation(driver, device))
        value = result.value()
        if value is True or value is False:
            return value
        if result.type() == cel.Type.ERROR:
            raise CELRuntimeError(_runtime_message(str(value)))
        # upstream names the type without its parameters (cel-go TypeName: "list")
        kind = str(result.type().name()).lower().partition("<")[0]
        raise CELRuntimeError(f"CEL result of type {kind} could not be converted to bool")

    def cost(self, driver: str, device: resource_pb2.Device) -> int:
        """The selector's cost bound for `device`: its maps and lists as large as they
        are (the default domains selectors add included)."""
        return celast.peval(self._bound, _device_size(driver, device))

    def __repr__(self) -> str:
        return f"Selector({self.expression!r})"


def _device_size(driver: str, device: resource_pb2.Device) -> int:
    """The largest map or list a selector can range over on `device`: its attribute and
    capacity domains, the names of one domain, a list value (a loop over the maps never
    sees the default domains: it reads the exact map)."""
    sizes = [1]
    items: Any
    for items in (device.attributes, device.capacity):
        per_domain: dict[str, int] = {}
        for name in items:
            domain = _split(name, driver)[0]
            per_domain[domain] = per_domain.get(domain, 0) + 1
        sizes.append(len(per_domain))
        sizes.extend(per_domain.values())
    for attr in device.attributes.values():
        fields = attr.ListFields()
        if fields and fields[0][0].number in _LIST_FIELDS:
            sizes.append(len(fields[0][1]))
    return max(sizes)


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
    global _generation, _exact_used
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise CELCompileError(f"may not be more than {MAX_EXPRESSION_LENGTH} bytes")
    try:
        checked = _CHECK_ENV.compile(expression)
    except RuntimeError as err:
        raise CELCompileError("compilation failed: " + _compile_message(str(err))) from None
    out = checked.return_type()
    if out != cel.Type.BOOL and out != cel.Type.DYN:
        raise CELCompileError(f"must evaluate to bool or the unknown type, not {_type_name(out)}")
    wrapped = any_pb2.Any()
    wrapped.ParseFromString(checked.serialize())
    rewrite = celast.rewrite(wrapped.value, device=_DEVICE, exact=_EXACT, whole=_WHOLE)
    wrapped.value = rewrite.checked
    program = _ENV.deserialize(wrapped.SerializeToString())
    with _lock:
        # Copy on write: a conversion running meanwhile iterates the old sets.
        for field, names in rewrite.domains.items():
            if names - _domains[field]:
                _domains[field] = _domains[field] | names
                _generation += 1
        if rewrite.exact - _exact_used:
            _exact_used = _exact_used | rewrite.exact
            _generation += 1
    return Selector(expression, program, rewrite.bound)


class _DeviceCache:
    """Devices converted for CEL, keyed by id() of the message. An entry holds the message,
    so its id cannot be reused while the entry lives; informer objects are immutable, so
    a message seen again is the same device. An entry is valid for one driver and one
    generation of the default domains.

    Two levels: the Python value of up to DEVICE_CACHE_SIZE devices (oldest dropped
    first), and a CEL activation for up to ACTIVATION_CACHE_SIZE of them, all in one
    arena that is dropped whole (with the activations) when full: the C++ runtime frees
    an arena only once nothing of it is referenced."""

    def __init__(self) -> None:
        self._values: OrderedDict[int, tuple[resource_pb2.Device, str, int, Any]] = OrderedDict()
        self._activations: dict[int, tuple[resource_pb2.Device, str, int, Any]] = {}
        self._arena = cel.Arena()

    def activation(self, driver: str, device: resource_pb2.Device) -> Any:
        key = id(device)
        generation = _generation
        hit = self._activations.get(key)
        if hit is not None and hit[0] is device and hit[1] == driver and hit[2] == generation:
            return hit[3]
        entry = self._values.get(key)
        if (
            entry is not None
            and entry[0] is device
            and entry[1] == driver
            and entry[2] == generation
        ):
            value = entry[3]
        else:
            value = _device_value(driver, device)
            with _lock:
                self._values[key] = (device, driver, generation, value)
                while len(self._values) > DEVICE_CACHE_SIZE:
                    self._values.popitem(last=False)
        with _lock:
            if len(self._activations) >= ACTIVATION_CACHE_SIZE:
                self._activations = {}
                self._arena = cel.Arena()
            activation = _ENV.Activation({_DEVICE: value}, arena=self._arena)
            self._activations[key] = (device, driver, generation, activation)
        return activation

    def clear(self) -> None:
        with _lock:
            self._values.clear()
            self._activations = {}
            self._arena = cel.Arena()


_devices: Final = _DeviceCache()


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
    multi = device.allow_multiple_allocations
    value: dict[str, Any] = {_DRIVER: driver, _MULTI: multi}
    if _WHOLE in _exact_used:
        value[_WHOLE] = {
            _DRIVER: driver,
            _MULTI: multi,
            _ATTRIBUTES: attributes,
            _CAPACITY: capacity,
        }
    for field, exact in ((_ATTRIBUTES, attributes), (_CAPACITY, capacity)):
        if field in _exact_used:
            value[_EXACT[field]] = exact
        with_defaults = exact
        for domain in _domains[field]:
            if domain not in exact:
                if with_defaults is exact:
                    with_defaults = dict(exact)
                with_defaults[domain] = {}
        value[field] = with_defaults
    return value


def _attribute_value(name: str, attr: resource_pb2.DeviceAttribute) -> Any:
    """upstream getAttributeValue: the one value set (validation allows exactly one)."""
    fields = attr.ListFields()  # one call for the set field, in field-number order
    if not fields:
        raise CELRuntimeError(f"attribute {name}: unsupported attribute value")
    descriptor, value = fields[0]
    number = descriptor.number
    try:
        if number == _VERSION_FIELD:
            return celkube.semver_message(value)
        if number == _VERSIONS_FIELD:  # list-type attributes: a CEL list
            return [celkube.semver_message(v) for v in value]
    except ValueError as err:
        raise CELRuntimeError(f"attribute {name}: parse semantic version: {err}") from None
    return list(value) if number in _LIST_FIELDS else value


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
    """cel-cpp's error text in upstream's (cel-go) wording: without the status code
    ("NOT_FOUND: ", "UNKNOWN: " for an exception of a library function), and a missing
    map key as "no such key: <key>"."""
    code = _STATUS_CODE.match(text)
    if code:
        text = text[code.end() :]
    if text.startswith(_KEY_NOT_FOUND):
        return "no such key: " + text[len(_KEY_NOT_FOUND) :].strip().strip('"')
    return text


_STATUS_CODE: Final = re.compile(r"^[A-Z_]+: ")
_KEY_NOT_FOUND: Final = "Key not found in map : "
