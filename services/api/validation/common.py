"""The building blocks every kind's validation shares.

Why this module exists: field paths, names, labels, quantities, resource lists, label
selectors and object metadata are checked the same way whatever the kind, and their
messages must read the same everywhere. Keeping them here lets ``pod``, ``workloads`` and
``cluster`` hold only kind-specific rules. It holds the shared constants and messages
(``FIELD_IMMUTABLE``, ``IS_NEGATIVE``, resource name sets, ...), the path helpers
(``child``, ``index``, ``show``), the primitive checks (qualified names, label maps,
ports, selectors), resource names and quantities, and ObjectMeta's create
and update rules (apimachinery's ValidateObjectMeta and ValidateObjectMetaUpdate).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from decimal import ROUND_CEILING
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2
from services.api.helpers.resources import is_extended_resource_name
from services.api.machinery import labels, names
from services.api.machinery.errors import (
    DUPLICATE,
    FORBIDDEN,
    INVALID,
    REQUIRED,
    UNSUPPORTED,
    FieldError,
    forbidden,
    invalid,
    required,
    too_long,
)
from services.api.machinery.quantity import (
    ERR_BEYOND_INT64_MILLI,
    Quantity,
    QuantityError,
    parse_quantity,
)

Errors = list[FieldError]

# ----------------------------------------------------------------------------- constants

FIELD_IMMUTABLE = "field is immutable"
IS_NEGATIVE = "must be greater than or equal to 0"
IS_NOT_POSITIVE = "must be greater than zero"
IS_NOT_INTEGER = "must be an integer"
MAX_INT32 = 2**31 - 1
#: kubera's own limit on durations upstream leaves at int64: kubera adds them to "now" for
#: timers and RFC 3339 timestamps (which end in year 9999), so it keeps them in int32.
SECONDS_TOO_LARGE = (
    f"must be at most {MAX_INT32} (kubera holds durations in seconds as int32: "
    "it adds them to the current time for timers and timestamps)"
)
#: kubera's own limit (upstream has none): every quantity is summed as int64 milli-units.
QUANTITY_TOO_LARGE = ERR_BEYOND_INT64_MILLI
TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024

STANDARD_CONTAINER_RESOURCES = frozenset({"cpu", "memory", "ephemeral-storage"})
STANDARD_RESOURCES = frozenset(
    {
        "cpu",
        "memory",
        "ephemeral-storage",
        "requests.cpu",
        "requests.memory",
        "requests.ephemeral-storage",
        "limits.cpu",
        "limits.memory",
        "limits.ephemeral-storage",
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    }
)
INTEGER_RESOURCES = frozenset(
    {
        "pods",
        "resourcequotas",
        "services",
        "replicationcontrollers",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "services.nodeports",
        "services.loadbalancers",
    }
)
HUGEPAGES_PREFIX = "hugepages-"
STANDARD_FINALIZERS = frozenset({"kubernetes", "orphan", "foregroundDeletion"})


# ----------------------------------------------------------------------------- paths


def child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def index(path: str, i: int | str) -> str:
    return f"{path}[{i}]"


class Shown:
    """A value printed as-is in an error (structs and maps, which Go prints unquoted)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text


def show(value: Message | Mapping[str, str]) -> Shown:
    if isinstance(value, Message):
        data: Any = json_format.MessageToDict(value)
    else:
        data = dict(sorted(value.items()))
    return Shown(json.dumps(data, separators=(",", ":"), sort_keys=True))


def has_field(msg: Message, field: str) -> bool:
    return msg.HasField(field)


# ----------------------------------------------------------------------------- primitives


def name_errors(path: str, value: str, fn: Callable[[str], list[str]]) -> Errors:
    return [invalid(path, value, msg) for msg in fn(value)]


def label_name(path: str, key: str) -> Errors:
    """ValidateLabelName: a qualified name."""
    return name_errors(path, key, names.qualified_name)


def label_map(path: str, values: Mapping[str, str]) -> Errors:
    """ValidateLabels: keys are qualified names, values label values (path not keyed)."""
    errs: Errors = []
    for k in sorted(values):
        errs += label_name(path, k)
        errs += [invalid(path, values[k], msg) for msg in names.label_value(values[k])]
    return errs


def nonnegative(path: str, value: int) -> Errors:
    return [invalid(path, value, IS_NEGATIVE)] if value < 0 else []


def validate_seconds(path: str, value: int, *, non_negative: bool = True) -> Errors:
    """A duration in seconds: upstream's sign rule (when it has one), then kubera's int32
    bound."""
    if non_negative and value < 0:
        return [invalid(path, value, IS_NEGATIVE)]
    if value > MAX_INT32:
        return [invalid(path, value, SECONDS_TOO_LARGE)]
    return []


def port_number(path: str, port: int) -> Errors:
    if 1 <= port <= 65535:
        return []
    return [invalid(path, port, "must be between 1 and 65535, inclusive")]


def port_name(port: str) -> list[str]:
    """IsValidPortName (an IANA_SVC_NAME)."""
    msgs: list[str] = []
    if len(port) > 15:
        msgs.append(names.max_len_error(15))
    if not port or any(c not in "-abcdefghijklmnopqrstuvwxyz0123456789" for c in port):
        msgs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not any("a" <= c <= "z" for c in port):
        msgs.append("must contain at least one letter (a-z)")
    if "--" in port:
        msgs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        msgs.append("must not begin or end with a hyphen")
    return msgs


def validate_selector(
    path: str, selector: meta_pb2.LabelSelector
) -> tuple[labels.Selector | None, Errors]:
    """ValidateLabelSelector via labels.from_label_selector; its messages become FieldErrors."""
    exprs = [(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions]
    try:
        return labels.from_label_selector(dict(selector.match_labels), exprs, path), []
    except labels.SelectorError as exc:
        return None, [_field_error_from_text(msg) for msg in dict.fromkeys(exc.errors)]


_TYPE_MARKERS = (INVALID, REQUIRED, FORBIDDEN, UNSUPPORTED, DUPLICATE)


def _field_error_from_text(text: str) -> FieldError:
    """Rebuild a FieldError from ``path: Type: rest`` (the value stays inside the detail)."""
    best: tuple[int, str] | None = None
    for marker in _TYPE_MARKERS:
        at = text.find(f": {marker}")
        if at >= 0 and (best is None or at < best[0]):
            best = (at, marker)
    if best is None:
        return FieldError("", INVALID, text)
    at, marker = best
    rest = text[at + len(marker) + 2 :]
    return FieldError(text[:at], marker, rest[2:] if rest.startswith(": ") else rest)


# ----------------------------------------------------------------------------- resources


def field_quantity(path: str, raw: str, errs: Errors) -> Quantity | None:
    try:
        return parse_quantity(raw)
    except QuantityError as exc:
        errs.append(invalid(path, raw, str(exc)))
        return None


def is_hugepages(name: str) -> bool:
    return name.startswith(HUGEPAGES_PREFIX)


def _is_native(name: str) -> bool:
    """IsNativeResource: unprefixed or in the kubernetes.io/ namespace."""
    return "/" not in name or "kubernetes.io/" in name


_is_extended = is_extended_resource_name  # the shared helper, under its old local name


def overcommit_allowed(name: str) -> bool:
    return _is_native(name) and not is_hugepages(name)


def _is_integer_resource(name: str) -> bool:
    return name in INTEGER_RESOURCES or _is_extended(name)


def _resource_name(path: str, name: str) -> Errors:
    """validateResourceName + validateContainerResourceName."""
    errs = name_errors(path, name, names.qualified_name)
    if errs:
        return errs
    if "/" not in name:
        if name not in STANDARD_RESOURCES and not is_hugepages(name):
            return [invalid(path, name, "must be a standard resource type or fully qualified")]
        if name not in STANDARD_CONTAINER_RESOURCES and not is_hugepages(name):
            return [invalid(path, name, "must be a standard resource for containers")]
    elif not _is_native(name) and not _is_extended(name):
        return [invalid(path, name, "doesn't follow extended resource name standard")]
    return []


def quantity_value(path: str, name: str, q: Quantity) -> Errors:
    """ValidateResourceQuantityValue: not negative; integer for integer resources; and,
    kubera's own rule, representable as int64 milli-units (checked first: the other rules'
    arithmetic assumes it)."""
    if not q.fits_int64_milli():
        return [invalid(path, q.canonical(), IS_NEGATIVE if q.sign() < 0 else QUANTITY_TOO_LARGE)]
    errs: Errors = []
    if q.sign() < 0:
        errs.append(invalid(path, q.canonical(), IS_NEGATIVE))
    if _is_integer_resource(name):
        millis = (q.value * 1000).to_integral_value(rounding=ROUND_CEILING)
        if millis % 1000 != 0:
            errs.append(invalid(path, q.canonical(), IS_NOT_INTEGER))
    return errs


def _hugepages_value(path: str, name: str, q: Quantity) -> Errors:
    """Hugepage amounts must be whole multiples of the page size in the name."""
    page: Quantity | None
    try:
        page = parse_quantity(name[len(HUGEPAGES_PREFIX) :])
    except QuantityError:
        page = None
    ok = page is not None and page.sign() > 0 and page.value == page.value.to_integral_value()
    if ok and page is not None:
        ok = q.value.to_integral_value(rounding=ROUND_CEILING) % page.value == 0
    if ok:
        return []
    return [
        invalid(path, q.canonical(), f"{q.canonical()} is not positive integer multiple of {name}")
    ]


def resource_list(path: str, values: Mapping[str, str], errs: Errors) -> dict[str, Quantity]:
    """Names and quantities of a resource map (limits, overhead, capacity); parsed values."""
    parsed: dict[str, Quantity] = {}
    for name in sorted(values):
        p = index(path, name)
        errs += _resource_name(p, name)
        q = field_quantity(p, values[name], errs)
        if q is None:
            continue
        errs += quantity_value(p, name, q)
        if is_hugepages(name) and q.fits_int64_milli():
            errs += _hugepages_value(p, name, q)
        parsed[name] = q
    return parsed


# ----------------------------------------------------------------------------- metadata


def _owner_references(path: str, refs: Sequence[meta_pb2.OwnerReference]) -> Errors:
    errs: Errors = []
    first_controller = ""
    for i, ref in enumerate(refs):
        p = index(path, i)
        group, _, version = ref.api_version.rpartition("/")
        if not version:
            errs.append(
                invalid(child(p, "apiVersion"), ref.api_version, "version must not be empty")
            )
        if not ref.kind:
            errs.append(invalid(child(p, "kind"), ref.kind, "must not be empty"))
        if not ref.name:
            errs.append(invalid(child(p, "name"), ref.name, "must not be empty"))
        if not ref.uid:
            errs.append(invalid(child(p, "uid"), ref.uid, "must not be empty"))
        if (group, version, ref.kind) == ("", "v1", "Event"):
            errs.append(invalid(p, show(ref), "/v1, Kind=Event is disallowed from being an owner"))
        if ref.HasField("controller") and ref.controller:
            current = f"{ref.kind}/{ref.name}"
            if first_controller:
                detail = (
                    'Only one reference can have Controller set to true. Found "true" in '
                    f"references for {first_controller} and {current}"
                )
                errs.append(invalid(path, Shown(f"[{len(refs)} references]"), detail))
            else:
                first_controller = current
    return errs


def validate_finalizers(path: str, finalizers: Sequence[str]) -> Errors:
    errs: Errors = []
    for i, name in enumerate(finalizers):
        p = index(path, i)
        errs += name_errors(p, name, names.qualified_name)
        if "/" not in name and name not in STANDARD_FINALIZERS:
            detail = "name is neither a standard finalizer name nor is it fully qualified"
            errs.append(invalid(p, name, detail))
    if "orphan" in finalizers and "foregroundDeletion" in finalizers:
        detail = "finalizer orphan and foregroundDeletion cannot be both set"
        errs.append(invalid(path, Shown(json.dumps(list(finalizers))), detail))
    return errs


def validate_annotations(path: str, annotations: Mapping[str, str]) -> Errors:
    """ValidateAnnotations: keys are qualified names (case-insensitive), total size <= 256 KiB."""
    errs: Errors = []
    size = 0
    for k in sorted(annotations):
        errs += [invalid(path, k, msg) for msg in names.qualified_name(k.lower())]
        size += len(k.encode()) + len(annotations[k].encode())
    if size > TOTAL_ANNOTATION_SIZE_LIMIT:
        errs.append(too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT))
    return errs


def validate_object_meta(
    meta: meta_pb2.ObjectMeta,
    name_rule: Callable[[str], list[str]] | None,
    namespaced: bool | None,
) -> Errors:
    """ValidateObjectMeta, for a kind's name rule and scope (None: unknown kind)."""
    name_fn = name_rule or names.dns1123_subdomain
    errs: Errors = []
    if meta.generate_name:
        msgs = names.generate_name_prefix(meta.generate_name, name_fn)
        errs += [invalid("metadata.generateName", meta.generate_name, m) for m in msgs]
    if meta.name:
        errs += name_errors("metadata.name", meta.name, name_fn)
    elif not meta.generate_name:
        errs.append(required("metadata.name", "name or generateName is required"))
    if namespaced:
        if not meta.namespace:
            errs.append(required("metadata.namespace"))
        else:
            errs += name_errors("metadata.namespace", meta.namespace, names.dns1123_label)
    elif namespaced is not None and meta.namespace:
        errs.append(forbidden("metadata.namespace", "not allowed on this type"))
    errs += nonnegative("metadata.generation", meta.generation)
    errs += label_map("metadata.labels", meta.labels)
    errs += validate_annotations("metadata.annotations", meta.annotations)
    errs += _owner_references("metadata.ownerReferences", meta.owner_references)
    errs += validate_finalizers("metadata.finalizers", meta.finalizers)
    return errs


def validate_object_meta_update(new: meta_pb2.ObjectMeta, old: meta_pb2.ObjectMeta) -> Errors:
    errs: Errors = []
    if new.name != old.name:
        errs.append(invalid("metadata.name", new.name, FIELD_IMMUTABLE))
    if new.namespace != old.namespace:
        errs.append(invalid("metadata.namespace", new.namespace, FIELD_IMMUTABLE))
    if new.uid and new.uid != old.uid:
        errs.append(invalid("metadata.uid", new.uid, FIELD_IMMUTABLE))
    if old.deletion_timestamp:
        added = [f for f in new.finalizers if f not in set(old.finalizers)]
        if added:
            errs.append(
                forbidden(
                    "metadata.finalizers",
                    f"no new finalizers can be added if the object is being deleted, found new finalizers {json.dumps(added)}",
                )
            )
    return errs


# ----------------------------------------------------------------------------- the table's default


def no_update_rules(new: Any, old: Any) -> Errors:
    return []
