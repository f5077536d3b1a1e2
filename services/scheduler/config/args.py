"""pluginConfig: each plugin's `args` checked and built into its typed Args.

Why it exists: in-tree args are checked against their v1 schema and upstream's validation
rules, then built with the plugin's `from_dict` or field by field from camelCase keys
(`build_dataclass`, which the framework also uses to type args read while a plugin module was
missing). None of this depends on how the rest of the file is loaded.
"""

from __future__ import annotations

import dataclasses
import enum
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.machinery.duration import parse_duration
from services.api.machinery.errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.scheduler import registry as reg
from services.scheduler.config.checks import (
    Errors,
    as_list,
    as_mapping,
    check_keys,
    is_int,
    is_number,
    short_value,
    unknown_field,
)
from services.scheduler.config.types import API_VERSION
from services.scheduler.framework.interface import PluginSpec

_RESOURCE: dict[str, Any] = {"name": str, "weight": int}
#: The in-tree plugins' v1 args, by YAML key (nested dict: object; [x]: list; a protobuf class:
#: that message's Kubernetes JSON). Plugins absent here take no args.
ARGS_SCHEMAS: dict[str, dict[str, Any]] = {
    "NodeResourcesFit": {
        "ignoredResources": [str],
        "ignoredResourceGroups": [str],
        "scoringStrategy": {
            "type": str,
            "resources": [_RESOURCE],
            "requestedToCapacityRatio": {"shape": [{"utilization": int, "score": int}]},
        },
    },
    "NodeResourcesBalancedAllocation": {"resources": [_RESOURCE]},
    "NodeAffinity": {"addedAffinity": core_pb2.NodeAffinity},
    "PodTopologySpread": {
        "defaultConstraints": [core_pb2.TopologySpreadConstraint],
        "defaultingType": str,
    },
    "InterPodAffinity": {"hardPodAffinityWeight": int, "ignorePreferredTermsOfExistingPods": bool},
    "DefaultPreemption": {"minCandidateNodesPercentage": int, "minCandidateNodesAbsolute": int},
    "DynamicResources": {"filterTimeout": str, "bindingTimeout": str},
    "VolumeBinding": {"bindTimeoutSeconds": int, "shape": [{"utilization": int, "score": int}]},
    "Coscheduling": {
        "permitWaitingTimeSeconds": int,
        "podGroupBackoffSeconds": int,
        "podGroupRejectPercentage": int,
    },
}


def read_plugin_config(
    raw: Any,
    path: str,
    points_of: Mapping[str, tuple[str, ...]],
    out_of_tree: Mapping[str, PluginSpec],
    errs: Errors,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, entry in enumerate(as_list(raw, path, errs) or []):
        ep = f"{path}[{i}]"
        obj = as_mapping(entry, ep, errs)
        if obj is None:
            continue
        check_keys(obj, ("name", "args"), ep, errs)
        name = obj.get("name")
        if not isinstance(name, str) or not name:
            errs.append(required(f"{ep}.name"))
            continue
        if name in out:
            errs.append(duplicate(ep, name))
            continue
        if name not in points_of:
            errs.append(invalid(f"{ep}.name", name, "unknown plugin"))
            continue
        spec = out_of_tree.get(name)
        args_type = spec.args_type if spec is not None else reg.in_tree_args_type(name)
        args = build_args(
            name,
            obj.get("args"),
            f"{ep}.args",
            errs,
            args_type=args_type,
            schema=ARGS_SCHEMAS.get(name, {}) if spec is None else None,
        )
        if args is not _INVALID:
            out[name] = args
    return out


_INVALID = object()


def build_args(
    name: str,
    raw: Any,
    path: str,
    errs: Errors,
    *,
    args_type: type | None,
    schema: Mapping[str, Any] | None,
) -> Any:
    """One plugin's args: checked against `schema` (in-tree) and the plugin's rules, then
    built as `args_type` (via its from_dict when it has one). Returns _INVALID on errors."""
    obj = as_mapping(raw, path, errs)
    if obj is None:
        return _INVALID
    obj = dict(obj)
    before = len(errs)
    kind = obj.pop("kind", None)
    if kind is not None and kind != f"{name}Args":
        errs.append(unsupported(f"{path}.kind", kind, [f"{name}Args"]))
    api_version = obj.pop("apiVersion", None)
    if api_version is not None and api_version != API_VERSION:
        errs.append(unsupported(f"{path}.apiVersion", api_version, [API_VERSION]))
    if schema is not None:
        _check_schema(obj, schema, path, errs)
        if len(errs) == before:
            validator = _ARGS_VALIDATORS.get(name)
            if validator is not None:
                validator(obj, path, errs)
    if len(errs) > before:
        return _INVALID
    if args_type is None:
        return obj
    from_dict = getattr(args_type, "from_dict", None)
    try:
        if callable(from_dict):
            return from_dict(obj)
        if dataclasses.is_dataclass(args_type):
            return build_dataclass(args_type, obj, path, errs)
        return args_type(**obj)
    except (TypeError, ValueError, KeyError) as e:
        errs.append(invalid(path, short_value(obj), f"cannot build {name} args: {e}"))
        return _INVALID


def _check_schema(value: Any, schema: Any, path: str, errs: Errors) -> None:
    if value is None:
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errs.append(invalid(path, short_value(value), "must be an object"))
            return
        for key, sub in value.items():
            if key not in schema:
                errs.append(unknown_field(f"{path}.{key}"))
            else:
                _check_schema(sub, schema[key], f"{path}.{key}", errs)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            errs.append(invalid(path, short_value(value), "must be a list"))
            return
        for i, item in enumerate(value):
            _check_schema(item, schema[0], f"{path}[{i}]", errs)
    elif isinstance(schema, type) and issubclass(schema, Message):
        _check_proto(value, schema, path, errs)
    elif schema is int:
        if not is_int(value):
            errs.append(invalid(path, short_value(value), "must be an integer"))
    elif schema is bool:
        if not isinstance(value, bool):
            errs.append(invalid(path, short_value(value), "must be a bool"))
    elif schema is str and not isinstance(value, str):
        errs.append(invalid(path, short_value(value), "must be a string"))


def _check_proto(value: Any, cls: type[Message], path: str, errs: Errors) -> None:
    before = len(errs)
    _check_proto_fields(value, cls.DESCRIPTOR, path, errs)
    if len(errs) > before:
        return
    try:
        json_format.ParseDict(value, cls())
    except json_format.ParseError as e:
        errs.append(invalid(path, short_value(value), str(e)))


def _check_proto_fields(value: Any, desc: Descriptor, path: str, errs: Errors) -> None:
    if not isinstance(value, dict):
        errs.append(invalid(path, short_value(value), "must be an object"))
        return
    fields = {f.json_name: f for f in desc.fields}
    for key, sub in value.items():
        f = fields.get(key)
        if f is None:
            errs.append(unknown_field(f"{path}.{key}"))
            continue
        mt = f.message_type
        if mt is None or mt.GetOptions().map_entry or sub is None:
            continue
        if mt.full_name.startswith("google.protobuf."):
            continue
        if f.is_repeated:
            if isinstance(sub, list):
                for i, item in enumerate(sub):
                    _check_proto_fields(item, mt, f"{path}.{key}[{i}]", errs)
        else:
            _check_proto_fields(sub, mt, f"{path}.{key}", errs)


def _positive_weight(value: Any) -> int:
    """v1 defaulting of a resource weight: unset or 0 means 1."""
    return 1 if not value else int(value)


def _validate_fit(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    for i, group in enumerate(obj.get("ignoredResourceGroups") or []):
        if "/" in group:
            errs.append(
                invalid(
                    f"{path}.ignoredResourceGroups[{i}]",
                    group,
                    "resource group name can't contain '/'",
                )
            )
    ss = obj.get("scoringStrategy")
    if ss is None:
        return
    sp = f"{path}.scoringStrategy"
    kind = ss.get("type", "")
    if kind not in _STRATEGIES:
        errs.append(unsupported(f"{sp}.type", kind, _STRATEGIES))
    for i, r in enumerate(ss.get("resources") or []):
        w = _positive_weight(r.get("weight"))
        if not 0 < w <= 100:
            errs.append(
                invalid(
                    f"{sp}.resources[{i}].weight",
                    w,
                    f"resource weight of {r.get('name')} not in valid range (0, 100]",
                )
            )
    rtcr = ss.get("requestedToCapacityRatio")
    if kind == "RequestedToCapacityRatio":
        if rtcr is None:
            errs.append(
                required(
                    f"{sp}.requestedToCapacityRatio",
                    "must be specified when type is RequestedToCapacityRatio",
                )
            )
        else:
            _validate_shape(rtcr.get("shape") or [], f"{sp}.requestedToCapacityRatio.shape", errs)
    elif rtcr is not None:
        errs.append(
            forbidden(
                f"{sp}.requestedToCapacityRatio",
                "must be nil when type is not RequestedToCapacityRatio",
            )
        )


_STRATEGIES = ("LeastAllocated", "MostAllocated", "RequestedToCapacityRatio")


def _validate_shape(shape: Sequence[Mapping[str, Any]], path: str, errs: Errors) -> None:
    if not shape:
        errs.append(required(path, "at least one point must be specified"))
        return
    for i in range(1, len(shape)):
        if shape[i - 1].get("utilization", 0) >= shape[i].get("utilization", 0):
            errs.append(
                invalid(
                    f"{path}[{i}].utilization",
                    shape[i].get("utilization", 0),
                    "values must be sorted in increasing order",
                )
            )
            break
    for i, point in enumerate(shape):
        u, s = point.get("utilization", 0), point.get("score", 0)
        if not 0 <= u <= 100:
            errs.append(invalid(f"{path}[{i}].utilization", u, "not in valid range [0, 100]"))
        if not 0 <= s <= 10:
            errs.append(invalid(f"{path}[{i}].score", s, "not in valid range [0, 10]"))


def _validate_balanced(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    seen: set[str] = set()
    for i, r in enumerate(obj.get("resources") or []):
        rp = f"{path}.resources[{i}]"
        if r.get("name") in seen:
            errs.append(duplicate(f"{rp}.name", r.get("name")))
        seen.add(r.get("name"))
        w = _positive_weight(r.get("weight"))
        if w != 1:
            errs.append(invalid(f"{rp}.weight", w, "must be 1"))


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")


def _validate_node_affinity(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    added = obj.get("addedAffinity")
    if not added:
        return
    ap = f"{path}.addedAffinity"
    req = added.get("requiredDuringSchedulingIgnoredDuringExecution") or {}
    terms = [
        (f"{ap}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[{i}]", t)
        for i, t in enumerate(req.get("nodeSelectorTerms") or [])
    ]
    for i, pref in enumerate(added.get("preferredDuringSchedulingIgnoredDuringExecution") or []):
        pp = f"{ap}.preferredDuringSchedulingIgnoredDuringExecution[{i}]"
        w = pref.get("weight", 0)
        if not 1 <= w <= 100:
            errs.append(invalid(f"{pp}.weight", w, "must be in the range 1-100"))
        terms.append((f"{pp}.preference", pref.get("preference") or {}))
    for tp, term in terms:
        for key in ("matchExpressions", "matchFields"):
            for j, expr in enumerate(term.get(key) or []):
                op = expr.get("operator", "")
                if op not in _OPERATORS:
                    errs.append(unsupported(f"{tp}.{key}[{j}].operator", op, _OPERATORS))


def _validate_topology_spread(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    constraints = obj.get("defaultConstraints") or []
    defaulting = obj.get("defaultingType", "System")
    if defaulting not in ("System", "List"):
        errs.append(unsupported(f"{path}.defaultingType", defaulting, ["System", "List"]))
    elif defaulting == "System" and constraints:
        errs.append(
            invalid(f"{path}.defaultingType", defaulting, "when .defaultConstraints are not empty")
        )
    seen: set[tuple[str, str]] = set()
    for i, c in enumerate(constraints):
        cp = f"{path}.defaultConstraints[{i}]"
        if c.get("maxSkew", 0) <= 0:
            errs.append(
                invalid(f"{cp}.maxSkew", c.get("maxSkew", 0), "not in valid range (0, inf)")
            )
        if not c.get("topologyKey"):
            errs.append(required(f"{cp}.topologyKey", "can not be empty"))
        when = c.get("whenUnsatisfiable", "")
        if not when:
            errs.append(required(f"{cp}.whenUnsatisfiable", "can not be empty"))
        elif when not in ("DoNotSchedule", "ScheduleAnyway"):
            errs.append(
                unsupported(f"{cp}.whenUnsatisfiable", when, ["DoNotSchedule", "ScheduleAnyway"])
            )
        if c.get("labelSelector") is not None:
            errs.append(
                forbidden(
                    f"{cp}.labelSelector",
                    "constraint must not define a selector, as they deduced for each pod",
                )
            )
        key = (c.get("topologyKey", ""), when)
        if key in seen:
            errs.append(duplicate(cp, f"{{{key[0]}, {key[1]}}}"))
        seen.add(key)


def _validate_inter_pod_affinity(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    w = obj.get("hardPodAffinityWeight")
    if w is not None and not 0 <= w <= 100:
        errs.append(invalid(f"{path}.hardPodAffinityWeight", w, "not in valid range [0, 100]"))


def _validate_default_preemption(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    """Upstream ValidateDefaultPreemptionArgs (unset fields take their defaults, 10 and 100)."""
    pct_path, abs_path = f"{path}.minCandidateNodesPercentage", f"{path}.minCandidateNodesAbsolute"
    pct = obj.get("minCandidateNodesPercentage", 10)
    absolute = obj.get("minCandidateNodesAbsolute", 100)
    if not 0 <= pct <= 100:
        errs.append(invalid(pct_path, pct, "not in valid range [0, 100]"))
    if absolute < 0:
        errs.append(invalid(abs_path, absolute, "not in valid range [0, inf)"))
    if pct == 0 and absolute == 0:
        errs.append(
            invalid(pct_path, 0, "cannot be zero at the same time as minCandidateNodesAbsolute")
        )
        errs.append(
            invalid(abs_path, 0, "cannot be zero at the same time as minCandidateNodesPercentage")
        )


def _validate_dynamic_resources(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    """Upstream ValidateDynamicResourcesArgs: filterTimeout is a duration, zero or
    positive; bindingTimeout (the binding-condition gates are on, their default) at least
    one second."""
    for name, least, message in (
        ("filterTimeout", 0.0, "must be zero or positive"),
        ("bindingTimeout", 1.0, "must be at least 1 second"),
    ):
        raw = obj.get(name)
        if raw is None:
            continue
        try:
            seconds = parse_duration(raw)
        except ValueError:
            errs.append(invalid(f"{path}.{name}", raw, "must be a duration such as 10s"))
            continue
        if seconds < least:
            errs.append(invalid(f"{path}.{name}", raw, message))


def _validate_volume_binding(obj: Mapping[str, Any], path: str, errs: Errors) -> None:
    """Upstream ValidateVolumeBindingArgsWithOptions with StorageCapacityScoring on (an
    empty or absent shape takes the default one)."""
    timeout = obj.get("bindTimeoutSeconds")
    if timeout is not None and timeout < 0:
        errs.append(
            invalid(
                f"{path}.bindTimeoutSeconds",
                timeout,
                "invalid BindTimeoutSeconds, should not be a negative value",
            )
        )
    if obj.get("shape"):
        _validate_shape(obj["shape"], f"{path}.shape", errs)


_ARGS_VALIDATORS: dict[str, Callable[[Mapping[str, Any], str, Errors], None]] = {
    "NodeResourcesFit": _validate_fit,
    "NodeResourcesBalancedAllocation": _validate_balanced,
    "NodeAffinity": _validate_node_affinity,
    "PodTopologySpread": _validate_topology_spread,
    "InterPodAffinity": _validate_inter_pod_affinity,
    "DefaultPreemption": _validate_default_preemption,
    "DynamicResources": _validate_dynamic_resources,
    "VolumeBinding": _validate_volume_binding,
}


# ================================================================ generic dataclasses


def camel_to_snake(name: str) -> str:
    """ "hardPodAffinityWeight" -> "hard_pod_affinity_weight"."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def build_dataclass(cls: type, data: Any, path: str, errs: list[FieldError]) -> Any:
    """An instance of dataclass `cls` from a camelCase mapping, recursively (nested
    dataclasses, lists, dicts, Optional, enums, protobuf messages). Unknown keys are errors."""
    if data is None:
        return cls()
    if not isinstance(data, dict):
        errs.append(invalid(path, short_value(data), "must be an object"))
        return None
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    before = len(errs)
    for key, value in data.items():
        attr = camel_to_snake(key) if isinstance(key, str) else ""
        if attr not in names:
            errs.append(unknown_field(f"{path}.{key}"))
            continue
        kwargs[attr] = _convert(hints.get(attr, Any), value, f"{path}.{key}", errs)
    if len(errs) > before:
        return None
    return cls(**kwargs)


def _convert(tp: Any, value: Any, path: str, errs: list[FieldError]) -> Any:
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if value is None:
            return None
        for opt in options:
            trial: list[FieldError] = []
            out = _convert(opt, value, path, trial)
            if not trial:
                return out
        errs.append(invalid(path, short_value(value), f"must be {tp}"))
        return None
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            errs.append(unsupported(path, value, [str(a) for a in typing.get_args(tp)]))
        return value
    if origin in (list, tuple, Sequence, set, frozenset) or tp in (list, tuple):
        if not isinstance(value, list):
            errs.append(invalid(path, short_value(value), "must be a list"))
            return None
        args = typing.get_args(tp)
        item = args[0] if args else Any
        items = [_convert(item, v, f"{path}[{i}]", errs) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            errs.append(invalid(path, short_value(value), "must be an object"))
            return None
        args = typing.get_args(tp)
        vt = args[1] if len(args) == 2 else Any
        return {k: _convert(vt, v, f"{path}[{k}]", errs) for k, v in value.items()}
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return build_dataclass(tp, value, path, errs)
        if issubclass(tp, Message):
            before = len(errs)
            _check_proto(value, tp, path, errs)
            return json_format.ParseDict(value, tp()) if len(errs) == before else None
        if issubclass(tp, enum.Enum):
            try:
                return tp(value)
            except ValueError:
                errs.append(unsupported(path, value, [str(m.value) for m in tp]))
                return None
        if tp is bool:
            if not isinstance(value, bool):
                errs.append(invalid(path, short_value(value), "must be a bool"))
            return value
        if tp is int:
            if not is_int(value):
                errs.append(invalid(path, short_value(value), "must be an integer"))
            return value
        if tp is float:
            if not is_number(value):
                errs.append(invalid(path, short_value(value), "must be a number"))
                return value
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                errs.append(invalid(path, short_value(value), "must be a string"))
            return value
    return value
