"""Validation of the Dynamic Resource Allocation kinds (resource.k8s.io/v1: DeviceClass,
ResourceSlice; and the vocabulary resource_claims.py builds on for ResourceClaim,
ResourceClaimTemplate and a pod's claims) and of PodGroup (scheduling.x-k8s.io/v1alpha1).

Why this module exists: the scheduler's allocator, the resourceclaim controller and the
hollow kubelets read these objects without re-checking them, so the apiserver refuses what
kube-apiserver refuses (pkg/apis/resource/validation/validation.go), in its words and
field paths: names are DNS labels or subdomains, qualified attribute names are C
identifiers with an optional driver domain, a request is `exactly` or `firstAvailable`,
constraints and configs name requests that exist, a claim's spec never changes, and its
status keeps the invariants the scheduler relies on (reservedFor only when allocated, at
most 256 unique consumers, an allocation is replaced only by removing it first).

Deliberate adaptations:
* kubera has no defaulting pass before validation, so an unset allocationMode is
  ExactCount and a count of 0 with ExactCount means upstream's default of 1;
* CEL selectors compile through services.api.dra.cel.compile_selector; upstream's split
  between "new" and "stored" expression environments is not modelled;
* opaque parameters are a google.protobuf.Value (any JSON); their size is measured on the
  compact JSON encoding;
* PodGroup is a CRD upstream, checked by its OpenAPI schema (minMember minimum 1); kubera
  cannot tell an unset minMember from 0, so 0 is refused, and scheduleTimeoutSeconds
  must not be negative (kubera's rule: it is a timer).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Hashable, Sequence
from typing import Any, TypeVar

from google.protobuf import json_format

from protos.kubera.v1 import podgroup_pb2, resource_pb2
from services.api.dra import cel, celkube
from services.api.dra.bindingconditions import MAX_CONDITIONS
from services.api.helpers.resources import is_extended_resource_name
from services.api.machinery import names
from services.api.machinery.errors import (
    TOO_MANY,
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
)
from services.api.validation import resource_counters
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    IS_NOT_POSITIVE,
    Errors,
    Shown,
    child,
    field_quantity,
    index,
    label_name,
    name_errors,
    show,
)
from services.api.validation.pod_scheduling import validate_node_selector

# ----------------------------------------------------------------------------- limits

DEVICE_REQUESTS_MAX = 32
DEVICE_CONSTRAINTS_MAX = 32
DEVICE_CONFIG_MAX = 32
DEVICE_SELECTORS_MAX = 32
FIRST_AVAILABLE_MAX = 8
ALLOCATION_RESULTS_MAX = 32
CEL_EXPRESSION_MAX_LENGTH = 10 * 1024
OPAQUE_PARAMETERS_MAX_LENGTH = 10 * 1024
SLICE_MAX_DEVICES = 128
POOL_NAME_MAX_LENGTH = 253
DRIVER_NAME_MAX_LENGTH = 63
DEVICE_MAX_DOMAIN_LENGTH = 63
DEVICE_MAX_ID_LENGTH = 32
ATTRIBUTE_MAX_VALUE_LENGTH = 64
ATTRIBUTES_AND_CAPACITIES_MAX = 32

ALLOCATION_MODES = ("All", "ExactCount")
CONFIG_SOURCES = ("FromClaim", "FromClass")

REQUEST_REF = (
    "must be the name of a request in the claim or the name of a request and a subrequest "
    "separated by '/'"
)
ONE_REQUEST_TYPE = "exactly one of `exactly` or `firstAvailable` is required"
ONE_NODE_SELECTION = (
    "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
)
ONE_VALUE = "exactly one value must be specified"
#: upstream's words for a selector over the cost limit (a Forbidden, not an Invalid).
CEL_TOO_COMPLEX = "too complex, exceeds cost limit"

_C_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_C_IDENTIFIER_ERR = names.regex_error(
    "a valid C identifier must start with alphabetic character or '_', followed by a string "
    "of alphanumeric characters or '_'",
    "[A-Za-z_][A-Za-z0-9_]*",
    "my_name",
    "MY_NAME",
    "MyName",
)
_NUM = r"(0|[1-9]\d*)"
_PRE = r"(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)"
_BUILD = r"[0-9a-zA-Z-]+"
_SEMVER = re.compile(
    rf"{_NUM}\.{_NUM}\.{_NUM}(-{_PRE}(\.{_PRE})*)?(\+{_BUILD}(\.{_BUILD})*)?", re.ASCII
)

T = TypeVar("T")


# ----------------------------------------------------------------------------- helpers


def too_many(path: str, actual: int, maximum: int) -> FieldError:
    """field.TooMany."""
    return FieldError(path, TOO_MANY, f"must have at most {maximum} items", actual)


def validate_list(
    path: str,
    items: Sequence[T],
    maximum: int,
    item: Callable[[str, T], Errors],
    key: Callable[[T], tuple[Hashable, str]] | None = None,
) -> Errors:
    """upstream's validateSlice (each item, then the size) and, with `key`, validateSet:
    a duplicate key is reported at the item (or its key field, when it names one)."""
    errs: Errors = []
    for i, x in enumerate(items):
        errs += item(index(path, i), x)
    if maximum >= 0 and len(items) > maximum:
        errs.append(too_many(path, len(items), maximum))
    if key is not None:
        seen: set[Hashable] = set()
        for i, x in enumerate(items):
            k, field = key(x)
            if k in seen:
                errs.append(duplicate(child(index(path, i), field) if field else index(path, i), k))
            seen.add(k)
    return errs


def by_itself(x: str) -> tuple[Hashable, str]:
    return x, ""


def dns_label(path: str, value: str) -> Errors:
    return name_errors(path, value, names.dns1123_label)


def dns_subdomain(path: str, value: str) -> Errors:
    return name_errors(path, value, names.dns1123_subdomain)


def validate_driver_name(path: str, driver: str) -> Errors:
    """ValidateCSIDriverName, which DRA reuses: required, at most 63 characters, a DNS
    subdomain (compared in lower case)."""
    errs: Errors = []
    if not driver:
        errs.append(required(path))
    if len(driver) > DRIVER_NAME_MAX_LENGTH:
        errs.append(too_long(path, DRIVER_NAME_MAX_LENGTH))
    errs += [invalid(path, driver, m) for m in names.dns1123_subdomain(driver.lower())]
    return errs


def validate_pool_name(path: str, pool: str) -> Errors:
    """Required, at most 253 characters, each '/'-separated part a DNS subdomain."""
    if not pool:
        return [required(path)]
    errs: Errors = []
    if len(pool) > POOL_NAME_MAX_LENGTH:
        errs.append(too_long(path, POOL_NAME_MAX_LENGTH))
    for part in pool.split("/"):
        errs += dns_subdomain(path, part)
    return errs


def _c_identifier(path: str, ident: str) -> Errors:
    errs: Errors = []
    if len(ident) > DEVICE_MAX_ID_LENGTH:
        errs.append(too_long(path, DEVICE_MAX_ID_LENGTH))
    if not _C_IDENTIFIER.fullmatch(ident):
        errs.append(invalid(path, ident, _C_IDENTIFIER_ERR))
    return errs


def validate_qualified_name(path: str, name: str) -> Errors:
    """An attribute or capacity name: a C identifier, or `<driver domain>/<C identifier>`."""
    if not name:
        return [required(path, "name required")]
    parts = name.split("/")
    errs: Errors = []
    if len(parts) == 1:
        errs += _c_identifier(path, parts[0])
    elif len(parts) == 2:
        domain, ident = parts
        if not domain:
            errs.append(required(path, "the domain must not be empty"))
        else:
            errs += validate_driver_name(path, domain)
        if not ident:
            errs.append(required(path, "the name must not be empty"))
        else:
            errs += _c_identifier(path, ident)
    return errs


def validate_fully_qualified_name(path: str, name: str) -> Errors:
    """A qualified name that has its domain (constraints' matchAttribute)."""
    errs = validate_qualified_name(path, name)
    if name and "/" not in name:
        errs.append(invalid(path, name, "must include a domain"))
    return errs


def _key_path(path: str, key: str) -> str:
    """A map entry's path, a long key shortened in the middle as upstream does."""
    limit = max(DEVICE_MAX_DOMAIN_LENGTH + 1 + DEVICE_MAX_ID_LENGTH, 16)
    if len(key) > limit:
        keep = limit - 3
        key = key[: (keep + 1) // 2] + "..." + key[len(key) - keep // 2 :]
    return index(path, key)


# ----------------------------------------------------------------------------- selectors, config


def _validate_cel(path: str, sel: resource_pb2.CELDeviceSelector) -> Errors:
    expr_path = child(path, "expression")
    if len(sel.expression) > CEL_EXPRESSION_MAX_LENGTH:
        return [too_long(expr_path, CEL_EXPRESSION_MAX_LENGTH)]
    try:
        selector = cel.compile_selector(sel.expression)
    except NotImplementedError:
        # The CEL helper's skeleton: no compiler yet, so the expression goes unchecked.
        return []
    except cel.CELCompileError as exc:
        return [invalid(expr_path, sel.expression, str(exc))]
    if selector.max_cost > cel.MAX_COST:
        # upstream: the estimated cost of a new expression (a stored one is not validated
        # again); one that still gets evaluated is stopped at run time.
        return [forbidden(expr_path, CEL_TOO_COMPLEX)]
    return []


def _validate_selector(path: str, sel: resource_pb2.DeviceSelector) -> Errors:
    if not sel.HasField("cel"):
        return [required(child(path, "cel"))]
    return _validate_cel(child(path, "cel"), sel.cel)


def validate_selectors(path: str, selectors: Sequence[resource_pb2.DeviceSelector]) -> Errors:
    return validate_list(path, selectors, DEVICE_SELECTORS_MAX, _validate_selector)


def _validate_parameters(path: str, opaque: resource_pb2.OpaqueDeviceConfiguration) -> Errors:
    """validateRawExtension: present, not too large, a JSON object."""
    if not opaque.HasField("parameters") or opaque.parameters.WhichOneof("kind") in (
        None,
        "null_value",
    ):
        return [required(path)]
    text = json.dumps(json_format.MessageToDict(opaque.parameters), separators=(",", ":"))
    if len(text.encode()) > OPAQUE_PARAMETERS_MAX_LENGTH:
        return [too_long(path, OPAQUE_PARAMETERS_MAX_LENGTH)]
    if opaque.parameters.WhichOneof("kind") != "struct_value":
        return [invalid(path, "<value omitted>", "parameters must be a valid JSON object")]
    return []


def validate_opaque_holder(path: str, holder: Any) -> Errors:
    """validateDeviceConfiguration: the `opaque` member is required (it is the only one)."""
    if not holder.HasField("opaque"):
        return [required(child(path, "opaque"))]
    p = child(path, "opaque")
    errs = validate_driver_name(child(p, "driver"), holder.opaque.driver)
    return errs + _validate_parameters(child(p, "parameters"), holder.opaque)


# ----------------------------------------------------------------------------- DeviceClass


def validate_device_class(dc: resource_pb2.DeviceClass) -> Errors:
    errs = validate_selectors("spec.selectors", dc.spec.selectors)
    errs += validate_list("spec.config", dc.spec.config, DEVICE_CONFIG_MAX, validate_opaque_holder)
    if dc.spec.HasField("extended_resource_name") and not is_extended_resource_name(
        dc.spec.extended_resource_name
    ):
        # DRAExtendedResource: the implicit deviceclass.resource.kubernetes.io/<class> is in
        # kubernetes.io/, so no class can name another's implicit resource.
        errs.append(
            invalid(
                "spec.extendedResourceName",
                dc.spec.extended_resource_name,
                "must be a valid extended resource name",
            )
        )
    return errs


# ----------------------------------------------------------------------------- ResourceSlice


def _validate_attribute(path: str, attr: resource_pb2.DeviceAttribute) -> Errors:
    errs: Errors = []
    set_fields = [f.name for f, _ in attr.ListFields()]
    if attr.HasField("string") and len(attr.string) > ATTRIBUTE_MAX_VALUE_LENGTH:
        errs.append(too_long(child(path, "string"), ATTRIBUTE_MAX_VALUE_LENGTH))
    if attr.HasField("version"):
        errs += _validate_version(child(path, "version"), attr.version)
    # dracore: list values (DRAListTypeAttributes), each element as its scalar.
    for i, value in enumerate(attr.strings):
        if len(value) > ATTRIBUTE_MAX_VALUE_LENGTH:
            errs.append(too_long(f"{child(path, 'strings')}[{i}]", ATTRIBUTE_MAX_VALUE_LENGTH))
    for i, value in enumerate(attr.versions):
        errs += _validate_version(f"{child(path, 'versions')}[{i}]", value)
    if not set_fields:
        errs.append(required(path, ONE_VALUE))
    elif len(set_fields) > 1:
        errs.append(invalid(path, show(attr), ONE_VALUE))
    return errs


def _validate_version(vpath: str, version: str) -> Errors:
    errs: Errors = []
    if not _SEMVER.fullmatch(version):
        errs.append(
            invalid(vpath, version, "must be a string compatible with semver.org spec 2.0.0")
        )
    else:
        # The regex takes numbers of any size; the allocator must be able to turn every
        # stored version into its CEL value, so the CEL layer's parse has the last word.
        try:
            celkube.parse_semver(version)
        except ValueError as err:
            errs.append(invalid(vpath, version, f"must be a usable semantic version: {err}"))
    if len(version) > ATTRIBUTE_MAX_VALUE_LENGTH:
        errs.append(too_long(vpath, ATTRIBUTE_MAX_VALUE_LENGTH))
    return errs


def _validate_device(path: str, device: resource_pb2.Device, per_device: bool = False) -> Errors:
    errs = dns_label(child(path, "name"), device.name)
    attrs_path, caps_path = child(path, "attributes"), child(path, "capacity")
    for key in sorted(device.attributes):
        kp = _key_path(attrs_path, key)
        errs += validate_qualified_name(kp, key)
        errs += _validate_attribute(kp, device.attributes[key])
    for key in sorted(device.capacity):
        kp = _key_path(caps_path, key)
        errs += validate_qualified_name(kp, key)
        # A capacity's quantity is parsed (and made canonical) before validation.
        field_quantity(child(kp, "value"), device.capacity[key].value, errs)
    errs += validate_binding_parameters(path, device)
    combined = len(device.attributes) + len(device.capacity)
    if combined > ATTRIBUTES_AND_CAPACITIES_MAX:
        errs.append(
            invalid(
                path,
                combined,
                "the total number of attributes and capacities must not exceed "
                f"{ATTRIBUTES_AND_CAPACITIES_MAX}",
            )
        )
    return errs + resource_counters.validate_device(path, device, per_device)


def validate_binding_parameters(path: str, device: resource_pb2.Device) -> Errors:
    conds, fails = list(device.binding_conditions), list(device.binding_failure_conditions)
    cpath, fpath = child(path, "bindingConditions"), child(path, "bindingFailureConditions")
    errs = validate_list(cpath, conds, MAX_CONDITIONS, label_name)
    errs += validate_list(fpath, fails, MAX_CONDITIONS, label_name)
    for i, c in enumerate(conds):
        if c in conds[:i]:
            errs.append(duplicate(index(cpath, i), c))
    for i, c in enumerate(fails):
        if c in fails[:i]:
            errs.append(duplicate(index(fpath, i), c))
        if c in conds:
            errs.append(
                invalid(
                    index(fpath, i),
                    c,
                    "bindingFailureConditions must not overlap with bindingConditions",
                )
            )
    if not conds and fails:
        errs.append(
            invalid(cpath, conds, "bindingConditions are required to use bindingFailureConditions")
        )
    if not fails and conds:
        errs.append(
            invalid(fpath, fails, "bindingFailureConditions are required to use bindingConditions")
        )
    return errs


def validate_resource_slice(rs: resource_pb2.ResourceSlice) -> Errors:
    spec = rs.spec
    errs = validate_driver_name("spec.driver", spec.driver)
    errs += validate_pool_name("spec.pool.name", spec.pool.name)
    if spec.pool.resource_slice_count <= 0:
        errs.append(
            invalid("spec.pool.resourceSliceCount", spec.pool.resource_slice_count, IS_NOT_POSITIVE)
        )
    if spec.pool.generation < 0:
        errs.append(
            invalid(
                "spec.pool.generation",
                spec.pool.generation,
                "must be greater than or equal to zero",
            )
        )
    set_fields: list[str] = []
    if spec.node_name:
        set_fields.append("`nodeName`")
        errs += dns_subdomain("spec.nodeName", spec.node_name)
    if spec.HasField("node_selector"):
        set_fields.append("`nodeSelector`")
        errs += validate_node_selector("spec.nodeSelector", spec.node_selector)
        if len(spec.node_selector.node_selector_terms) != 1:
            errs.append(
                invalid(
                    "spec.nodeSelector.nodeSelectorTerms",
                    Shown(
                        json.dumps(
                            [
                                json_format.MessageToDict(t)
                                for t in spec.node_selector.node_selector_terms
                            ]
                        )
                    ),
                    "must have exactly one node selector term",
                )
            )
    if spec.all_nodes:
        set_fields.append("`allNodes`")
    per_device, counter_errs, max_devices = resource_counters.validate_slice_spec(spec)
    set_fields += per_device
    errs += counter_errs
    if not set_fields:
        errs.append(required("spec", ONE_NODE_SELECTION))
    elif len(set_fields) > 1:
        errs.append(
            invalid(
                "spec",
                "{" + ", ".join(set_fields) + "}",
                ONE_NODE_SELECTION + ", but multiple fields are set",
            )
        )
    per_device_selection = bool(per_device)
    errs += validate_list(
        "spec.devices",
        spec.devices,
        max_devices if max_devices >= 0 else SLICE_MAX_DEVICES,
        lambda p, d: _validate_device(p, d, per_device_selection),
        lambda d: (d.name, "name"),
    )
    return errs


def validate_resource_slice_update(
    new: resource_pb2.ResourceSlice, old: resource_pb2.ResourceSlice
) -> Errors:
    errs: Errors = []
    if new.spec.pool.name != old.spec.pool.name:
        errs.append(invalid("spec.pool.name", new.spec.pool.name, FIELD_IMMUTABLE))
    if new.spec.driver != old.spec.driver:
        errs.append(invalid("spec.driver", new.spec.driver, FIELD_IMMUTABLE))
    if new.spec.node_name != old.spec.node_name:
        errs.append(invalid("spec.nodeName", new.spec.node_name, FIELD_IMMUTABLE))
    return errs


# ----------------------------------------------------------------------------- PodGroup


def validate_pod_group(pg: podgroup_pb2.PodGroup) -> Errors:
    errs: Errors = []
    if pg.spec.min_member < 1:
        errs.append(
            invalid(
                "spec.minMember",
                pg.spec.min_member,
                "spec.minMember in body should be greater than or equal to 1",
            )
        )
    for name in sorted(pg.spec.min_resources):
        field_quantity(index("spec.minResources", name), pg.spec.min_resources[name], errs)
    if pg.spec.HasField("schedule_timeout_seconds") and pg.spec.schedule_timeout_seconds < 0:
        errs.append(
            invalid(
                "spec.scheduleTimeoutSeconds",
                pg.spec.schedule_timeout_seconds,
                "spec.scheduleTimeoutSeconds in body should be greater than or equal to 0",
            )
        )
    return errs
