"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1), read from real YAML.

Why here and not in the framework: upstream splits the same work between apis/config/v1
(defaults: the default plugins and how a profile's enabled/disabled sets merge over them) and
apis/config/validation (field-path errors); the framework only instantiates what this module
resolved. The result is plain data:

- `SchedulerConfiguration`: global knobs and the profiles;
- `Profile.plugins`: for every extension point, the ordered `EnabledPlugin(name, weight)` list
  after merging the profile's sets over the defaults and expanding multiPoint exactly as
  upstream does (explicit per-point entries first when they re-configure a multiPoint plugin,
  then multiPoint plugins, then the other explicit ones; `disabled: "*"` at a point stops the
  expansion there). A score weight comes from `score.enabled` first, then multiPoint; an
  unset weight is 1 (so re-listing a default plugin without a weight resets it to 1, as
  upstream);
- `Profile.plugin_config`: plugin name -> its typed Args (the plugin module's Args, built with
  its `from_dict` when it has one, else field by field with camelCase keys mapped), or the
  checked dict when the plugin module does not exist yet.

Errors name the field path the way apimachinery does (`profiles[1].schedulerName: Duplicate
value: "x"`); all of them are reported at once in one `ConfigError`.

A kubera extension: `outOfTreePlugins: [package.module, package.module:ATTR]` registers
out-of-tree plugins (see registry.load_out_of_tree) before the profiles are read.
"""

from __future__ import annotations

import dataclasses
import enum
import os
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import yaml
from google.protobuf import json_format
from google.protobuf.descriptor import Descriptor
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.errors import (
    FieldError,
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.scheduler import registry as reg
from services.scheduler.framework.interface import PluginSpec

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"
MULTI_POINT = "multiPoint"
MIN_SCORE_WEIGHT, MAX_SCORE_WEIGHT = 1, 100
#: schedule_one.go: below this many nodes every node is checked, and never fewer are found.
MIN_FEASIBLE_NODES_TO_FIND = 100
#: ... and the adaptive percentage never drops below this.
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

#: The v1 default profile's multiPoint list, in upstream's order (default_plugins.go; the
#: volume plugins, DefaultPreemption and ImageLocality are not part of kubera yet).
DEFAULT_MULTI_POINT: tuple[str, ...] = (
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
    "DefaultBinder",
    "SchedulingGates",
)


class ConfigError(ValueError):
    """An invalid configuration; `errors` are the field errors, all of them."""

    def __init__(self, errors: Sequence[FieldError | str]) -> None:
        self.errors = [str(e) for e in errors]
        super().__init__("invalid KubeSchedulerConfiguration: " + "; ".join(self.errors))


def _unknown(path: str) -> FieldError:
    return FieldError(path, "unknown field")


# ============================================================================ the data


class EnabledPlugin(NamedTuple):
    """A plugin at one extension point: its name and, at `score`, its weight (else 0)."""

    name: str
    weight: int = 0


@dataclass
class LeaderElectionConfig:
    """componentbaseconfig.LeaderElectionConfiguration (durations in seconds)."""

    #: Whether to run leader election at all (one replica may run without it).
    leader_elect: bool = True
    #: How long a non-leader waits after the last renewal before it may take the lease.
    lease_duration: float = 15.0
    #: How long the leader keeps retrying to renew before it gives up leading.
    renew_deadline: float = 10.0
    #: How long clients wait between tries to acquire or renew.
    retry_period: float = 2.0
    #: The lock object's type; only "leases" is supported (as upstream today).
    resource_lock: str = "leases"
    #: The Lease's name.
    resource_name: str = "kube-scheduler"
    #: The Lease's namespace.
    resource_namespace: str = "kube-system"


def _default_plugins() -> dict[str, list[EnabledPlugin]]:
    return {point: list(plugins) for point, plugins in _DEFAULT_RESOLVED.items()}


@dataclass
class Profile:
    """One KubeSchedulerProfile: a framework of its own, chosen by pods' spec.schedulerName."""

    #: The spec.schedulerName of the pods this profile schedules.
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    #: Extension point (registry.EXTENSION_POINTS, camelCase as in the YAML) -> the plugins
    #: run there, in order, with their score weights.
    plugins: dict[str, list[EnabledPlugin]] = field(default_factory=_default_plugins)
    #: Plugin name -> its args (typed Args, or a dict when the plugin module is missing).
    #: Only plugins configured in pluginConfig appear; the framework defaults the others.
    plugin_config: dict[str, Any] = field(default_factory=dict)
    #: This profile's percentageOfNodesToScore; None: the global value.
    percentage_of_nodes_to_score: int | None = None

    def names(self, point: str) -> list[str]:
        """The plugin names enabled at `point`, in order."""
        return [p.name for p in self.plugins.get(point, ())]

    def score_weights(self) -> dict[str, int]:
        return {p.name: p.weight for p in self.plugins.get(reg.SCORE, ())}


@dataclass
class SchedulerConfiguration:
    """KubeSchedulerConfiguration: what kube-scheduler reads from --config."""

    #: One per schedulerName; pods naming another schedulerName are left alone.
    profiles: list[Profile] = field(default_factory=lambda: [Profile()])
    #: Global percentageOfNodesToScore; None (or 0): adaptive (50% - nodes/125, at least 5%).
    percentage_of_nodes_to_score: int | None = None
    #: The first backoff of an unschedulable pod, doubled per attempt.
    pod_initial_backoff_seconds: float = 1
    #: The backoff's ceiling.
    pod_max_backoff_seconds: float = 10
    #: How many nodes are filtered/scored concurrently (upstream's parallelizer width).
    parallelism: int = 16
    #: The leader election's settings.
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    #: Out-of-tree plugins loaded from `outOfTreePlugins`, by NAME; merge them with
    #: registry.in_tree_registry() to build frameworks (see `registry()`).
    out_of_tree_plugins: dict[str, PluginSpec] = field(default_factory=dict)

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

    def percentage_for(self, profile: Profile) -> int | None:
        """The profile's percentageOfNodesToScore when set, else the global one."""
        if profile.percentage_of_nodes_to_score is not None:
            return profile.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score

    def registry(self) -> dict[str, PluginSpec]:
        """Every plugin these profiles may use: in-tree (imported now) and out-of-tree."""
        return reg.merged(reg.in_tree_registry(), self.out_of_tree_plugins)


def default_config() -> SchedulerConfiguration:
    """The configuration kube-scheduler runs with when given none."""
    return SchedulerConfiguration()


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring (schedule_one.go numFeasibleNodesToFind).

    Fewer than 100 nodes: all. percentage None/0: adaptive, 50 - nodes/125 (integer
    division) but at least 5. Never fewer than 100 nodes; 100% or more: all."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return num_all_nodes
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)


# ========================================================================= durations

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_duration(text: str) -> float:
    """Go's time.ParseDuration ("15s", "1500ms", "1m30s", "-2h", "0") in seconds."""
    s = text.strip()
    sign = 1.0
    if s[:1] in "+-" and s:
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f"invalid duration {text!r}")
    total, pos = 0.0, 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f"invalid duration {text!r}")
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


# ======================================================================= reading YAML


#: The field errors found so far (validation goes on after the first one).
_Errors = list[FieldError]


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _mapping(value: Any, path: str, errs: _Errors) -> dict[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.append(invalid(path, _short(value), "must be an object"))
        return None
    return value


def _list(value: Any, path: str, errs: _Errors) -> list[Any] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.append(invalid(path, _short(value), "must be a list"))
        return None
    return value


def _short(value: Any) -> Any:
    text = value if isinstance(value, str | int | float | bool) else repr(value)
    if isinstance(text, str) and len(text) > 60:
        return text[:57] + "..."
    return text


def _check_keys(obj: Mapping[str, Any], allowed: Sequence[str], path: str, errs: _Errors) -> None:
    for key in obj:
        if key not in allowed:
            errs.append(_unknown(f"{path}.{key}" if path else str(key)))


def _read_file_or_text(text_or_path: str | os.PathLike[str]) -> str:
    """A PathLike, or a one-line string without ":" (no configuration is that short), is a
    file to read; anything else is the YAML itself."""
    if isinstance(text_or_path, os.PathLike):
        return Path(text_or_path).read_text()
    one_line = "\n" not in text_or_path
    if one_line and (":" not in text_or_path or Path(text_or_path).is_file()):
        return Path(text_or_path.strip()).read_text()
    return text_or_path


_TOP_LEVEL = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "healthzBindAddress",
    "metricsBindAddress",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
    "outOfTreePlugins",
)
_PROFILE_KEYS = ("schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig")
_LEADER_KEYS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
#: client-go's JitterFactor: the renew deadline must leave room for a jittered retry.
_JITTER_FACTOR = 1.2


def load_config(text_or_path: str | os.PathLike[str]) -> SchedulerConfiguration:
    """Parse, default and validate a KubeSchedulerConfiguration (YAML text or a file path).

    Raises ConfigError listing every problem with its field path."""
    text = _read_file_or_text(text_or_path)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError([f"yaml: {e}"]) from None
    errs: _Errors = []
    if not isinstance(doc, dict):
        raise ConfigError([invalid("<root>", _short(doc), "must be a KubeSchedulerConfiguration")])
    if doc.get("apiVersion") != API_VERSION:
        errs.append(unsupported("apiVersion", doc.get("apiVersion"), [API_VERSION]))
    if doc.get("kind") != KIND:
        errs.append(unsupported("kind", doc.get("kind"), [KIND]))
    if errs:  # another version's fields mean other things: stop here
        raise ConfigError(errs)
    _check_keys(doc, _TOP_LEVEL, "", errs)
    cfg = SchedulerConfiguration()

    cfg.parallelism = _int_field(doc, "parallelism", "parallelism", cfg.parallelism, errs)
    if cfg.parallelism <= 0:
        errs.append(
            invalid("parallelism", cfg.parallelism, "should be an integer value greater than zero")
        )
    cfg.percentage_of_nodes_to_score = _percentage(
        doc.get("percentageOfNodesToScore"), "percentageOfNodesToScore", errs
    )
    initial = _number_field(doc, "podInitialBackoffSeconds", 1, errs)
    maximum = _number_field(doc, "podMaxBackoffSeconds", 10, errs)
    if initial <= 0:
        errs.append(invalid("podInitialBackoffSeconds", initial, "must be greater than 0"))
    if maximum < initial:
        errs.append(
            invalid(
                "podMaxBackoffSeconds",
                maximum,
                "must be greater than or equal to PodInitialBackoffSeconds",
            )
        )
    cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds = initial, maximum
    if doc.get("extenders"):
        errs.append(forbidden("extenders", "scheduler extenders are not supported by kubera"))
    cfg.leader_election = _leader_election(doc.get("leaderElection"), errs)
    cfg.out_of_tree_plugins = _out_of_tree(doc.get("outOfTreePlugins"), errs)

    points_of: dict[str, tuple[str, ...]] = {p.name: p.points for p in reg.IN_TREE}
    for spec in cfg.out_of_tree_plugins.values():
        points_of[spec.name] = tuple(spec.default_points)
    raw_profiles = _list(doc.get("profiles"), "profiles", errs)
    if raw_profiles:
        cfg.profiles = []
        seen: dict[str, int] = {}
        for i, raw in enumerate(raw_profiles):
            path = f"profiles[{i}]"
            profile = _profile(raw, path, points_of, cfg.out_of_tree_plugins, errs)
            if profile is None:
                continue
            if profile.scheduler_name in seen:
                errs.append(duplicate(f"{path}.schedulerName", profile.scheduler_name))
            seen[profile.scheduler_name] = i
            cfg.profiles.append(profile)
        _common_queue_sort(cfg.profiles, errs)
    if errs:
        raise ConfigError(errs)
    return cfg


def _int_field(doc: Mapping[str, Any], key: str, path: str, default: int, errs: _Errors) -> int:
    value = doc.get(key)
    if value is None:
        return default
    if not _is_int(value):
        errs.append(invalid(path, _short(value), "must be an integer"))
        return default
    return int(value)


def _number_field(doc: Mapping[str, Any], key: str, default: float, errs: _Errors) -> float:
    value = doc.get(key)
    if value is None:
        return default
    if not _is_number(value):
        errs.append(invalid(key, _short(value), "must be a number"))
        return default
    return value


def _percentage(value: Any, path: str, errs: _Errors) -> int | None:
    if value is None:
        return None
    if not _is_int(value):
        errs.append(invalid(path, _short(value), "must be an integer"))
        return None
    if not 0 <= value <= 100:
        errs.append(invalid(path, value, "not in valid range [0-100]"))
        return None
    return int(value)


def _duration(obj: Mapping[str, Any], key: str, path: str, default: float, errs: _Errors) -> float:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        errs.append(invalid(path, _short(value), 'must be a duration string such as "15s"'))
        return default
    try:
        return parse_duration(value)
    except ValueError:
        errs.append(invalid(path, value, 'must be a duration such as "15s" or "1500ms"'))
        return default


def _leader_election(raw: Any, errs: _Errors) -> LeaderElectionConfig:
    le = LeaderElectionConfig()
    obj = _mapping(raw, "leaderElection", errs)
    if not obj:
        return le
    _check_keys(obj, _LEADER_KEYS, "leaderElection", errs)
    p = "leaderElection"
    if "leaderElect" in obj:
        if isinstance(obj["leaderElect"], bool):
            le.leader_elect = obj["leaderElect"]
        else:
            errs.append(invalid(f"{p}.leaderElect", _short(obj["leaderElect"]), "must be a bool"))
    le.lease_duration = _duration(obj, "leaseDuration", f"{p}.leaseDuration", 15.0, errs)
    le.renew_deadline = _duration(obj, "renewDeadline", f"{p}.renewDeadline", 10.0, errs)
    le.retry_period = _duration(obj, "retryPeriod", f"{p}.retryPeriod", 2.0, errs)
    for key, attr in (
        ("resourceLock", "resource_lock"),
        ("resourceName", "resource_name"),
        ("resourceNamespace", "resource_namespace"),
    ):
        if key in obj:
            value = obj[key]
            if isinstance(value, str):
                setattr(le, attr, value)
            else:
                errs.append(invalid(f"{p}.{key}", _short(value), "must be a string"))
    if not le.leader_elect:
        return le
    for key, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            errs.append(invalid(f"{p}.{key}", _go_duration(value), "must be greater than zero"))
    if le.lease_duration <= le.renew_deadline:
        errs.append(
            invalid(
                f"{p}.leaseDuration",
                _go_duration(le.lease_duration),
                "LeaseDuration must be greater than RenewDeadline",
            )
        )
    if le.renew_deadline <= _JITTER_FACTOR * le.retry_period:
        errs.append(
            invalid(
                f"{p}.renewDeadline",
                _go_duration(le.renew_deadline),
                f"RenewDeadline must be greater than retryPeriod*{_JITTER_FACTOR}",
            )
        )
    if le.resource_lock != "leases":
        errs.append(
            invalid(f"{p}.resourceLock", le.resource_lock, 'resourceLock value must be "leases"')
        )
    if not le.resource_name:
        errs.append(required(f"{p}.resourceName"))
    if not le.resource_namespace:
        errs.append(required(f"{p}.resourceNamespace"))
    return le


def _go_duration(seconds: float) -> str:
    if seconds == int(seconds):
        return f"{int(seconds)}s"
    return f"{seconds}s"


def _out_of_tree(raw: Any, errs: _Errors) -> dict[str, PluginSpec]:
    items = _list(raw, "outOfTreePlugins", errs)
    specs: dict[str, PluginSpec] = {}
    for i, path in enumerate(items or []):
        fp = f"outOfTreePlugins[{i}]"
        if not isinstance(path, str) or not path:
            errs.append(invalid(fp, _short(path), 'must be an import path "package.module[:ATTR]"'))
            continue
        try:
            spec = reg.load_out_of_tree(path)
        except reg.RegistryError as e:
            errs.append(invalid(fp, path, str(e)))
            continue
        if spec.name in specs:
            errs.append(duplicate(fp, spec.name))
            continue
        specs[spec.name] = spec
    return specs


# ========================================================================== profiles


@dataclass
class _PluginSet:
    """One extension point's enabled/disabled lists, merged (upstream v1.PluginSet)."""

    #: (name, weight or None, the field path it came from)
    enabled: list[tuple[str, int | None, str]] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)


def _profile(
    raw: Any,
    path: str,
    points_of: Mapping[str, tuple[str, ...]],
    out_of_tree: Mapping[str, PluginSpec],
    errs: _Errors,
) -> Profile | None:
    obj = _mapping(raw, path, errs)
    if obj is None:
        return None
    _check_keys(obj, _PROFILE_KEYS, path, errs)
    profile = Profile(plugins={})
    name = obj.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str):
        errs.append(invalid(f"{path}.schedulerName", _short(name), "must be a string"))
    elif not name:
        errs.append(required(f"{path}.schedulerName"))
    else:
        profile.scheduler_name = name
    profile.percentage_of_nodes_to_score = _percentage(
        obj.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore", errs
    )
    custom = _read_plugin_sets(obj.get("plugins"), f"{path}.plugins", points_of, errs)
    profile.plugins = resolve_plugins(custom, points_of)
    for point, minimum, maximum, detail in (
        (reg.QUEUE_SORT, 1, 1, "exactly one queue sort plugin must be enabled"),
        (reg.BIND, 1, None, "at least one bind plugin is needed"),
    ):
        n = len(profile.plugins[point])
        if n < minimum or (maximum is not None and n > maximum):
            errs.append(invalid(f"{path}.plugins.{point}", n, detail))
    profile.plugin_config = _plugin_config(
        obj.get("pluginConfig"), f"{path}.pluginConfig", points_of, out_of_tree, errs
    )
    return profile


def _read_plugin_sets(
    raw: Any, path: str, points_of: Mapping[str, tuple[str, ...]], errs: _Errors
) -> dict[str, _PluginSet]:
    """The profile's own `plugins:` block, checked entry by entry."""
    sets: dict[str, _PluginSet] = {p: _PluginSet() for p in (MULTI_POINT, *reg.EXTENSION_POINTS)}
    obj = _mapping(raw, path, errs)
    if not obj:
        return sets
    _check_keys(obj, tuple(sets), path, errs)
    for point, ps in sets.items():
        block = _mapping(obj.get(point), f"{path}.{point}", errs)
        if not block:
            continue
        bp = f"{path}.{point}"
        _check_keys(block, ("enabled", "disabled"), bp, errs)
        seen: set[str] = set()
        for i, entry in enumerate(_list(block.get("enabled"), f"{bp}.enabled", errs) or []):
            ep = f"{bp}.enabled[{i}]"
            got = _plugin_entry(entry, ep, errs, with_weight=True)
            if got is None:
                continue
            name, weight = got
            if name not in points_of:
                errs.append(invalid(f"{ep}.name", name, "unknown plugin"))
                continue
            implements = points_of[name]
            if point != MULTI_POINT and point not in implements:
                errs.append(invalid(f"{ep}.name", name, f"plugin does not extend {point}"))
                continue
            if name in seen:
                errs.append(duplicate(f"{ep}.name", name))
                continue
            seen.add(name)
            scored = point in (reg.SCORE, MULTI_POINT) and reg.SCORE in implements
            if scored and weight is not None and not MIN_SCORE_WEIGHT <= weight <= MAX_SCORE_WEIGHT:
                errs.append(
                    invalid(
                        f"{ep}.weight",
                        weight,
                        f"not in valid range [{MIN_SCORE_WEIGHT}, {MAX_SCORE_WEIGHT}]",
                    )
                )
                continue
            ps.enabled.append((name, weight, ep))
        for i, entry in enumerate(_list(block.get("disabled"), f"{bp}.disabled", errs) or []):
            got = _plugin_entry(entry, f"{bp}.disabled[{i}]", errs, with_weight=False)
            if got is not None:
                ps.disabled.add(got[0])
    return sets


def _plugin_entry(
    entry: Any, path: str, errs: _Errors, *, with_weight: bool
) -> tuple[str, int | None] | None:
    obj = _mapping(entry, path, errs)
    if obj is None:
        return None
    _check_keys(obj, ("name", "weight") if with_weight else ("name",), path, errs)
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        errs.append(required(f"{path}.name"))
        return None
    weight = obj.get("weight")
    if weight is not None and not _is_int(weight):
        errs.append(invalid(f"{path}.weight", _short(weight), "must be an integer"))
        return None
    return name, weight


def _merge_plugin_set(default: _PluginSet, custom: _PluginSet) -> _PluginSet:
    """Upstream mergePluginSet: custom disabled (incl. "*") removes defaults; a custom entry
    naming a default plugin replaces it in place; other custom entries are appended."""
    disabled = set(custom.disabled) | set(default.disabled)
    custom_by_name = {name: (name, w, p) for name, w, p in custom.enabled}
    replaced: set[str] = set()
    enabled: list[tuple[str, int | None, str]] = []
    if "*" not in disabled:
        for entry in default.enabled:
            if entry[0] in disabled:
                continue
            if entry[0] in custom_by_name:
                entry = custom_by_name[entry[0]]
                replaced.add(entry[0])
            enabled.append(entry)
    enabled.extend(e for e in custom.enabled if e[0] not in replaced)
    return _PluginSet(enabled, disabled)


def _default_sets() -> dict[str, _PluginSet]:
    sets = {p: _PluginSet() for p in (MULTI_POINT, *reg.EXTENSION_POINTS)}
    sets[MULTI_POINT].enabled = [
        (name, reg.IN_TREE_BY_NAME[name].weight or None, "<default>")
        for name in DEFAULT_MULTI_POINT
    ]
    return sets


def resolve_plugins(
    custom: Mapping[str, _PluginSet] | None,
    points_of: Mapping[str, tuple[str, ...]],
) -> dict[str, list[EnabledPlugin]]:
    """Merge a profile's plugin sets over the defaults and expand multiPoint (upstream
    mergePlugins + frameworkImpl.expandMultiPointPlugins + getScoreWeights). The sets were
    checked entry by entry when read, so nothing here can fail."""
    defaults = _default_sets()
    merged = {
        point: _merge_plugin_set(defaults[point], custom[point]) if custom else defaults[point]
        for point in defaults
    }
    multi = merged[MULTI_POINT]
    resolved: dict[str, list[str]] = {}
    for point in reg.EXTENSION_POINTS:
        ps = merged[point]
        explicit = [name for name, _, _ in ps.enabled]
        if "*" in ps.disabled:
            resolved[point] = explicit
            continue
        overrides: list[str] = []
        from_multi: list[str] = []
        for name, _, _ in multi.enabled:
            if point not in points_of.get(name, ()) or name in ps.disabled:
                continue
            if name in explicit:
                overrides.append(name)
            elif name not in from_multi:
                from_multi.append(name)
        resolved[point] = (
            [n for n in explicit if n in overrides]
            + from_multi
            + [n for n in explicit if n not in overrides]
        )

    weights: dict[str, int] = {}
    for name, weight, _ in (*merged[reg.SCORE].enabled, *multi.enabled):
        if name not in weights:
            weights[name] = weight or 1
    return {
        point: [EnabledPlugin(n, weights.get(n, 1) if point == reg.SCORE else 0) for n in names]
        for point, names in resolved.items()
    }


def _common_queue_sort(profiles: Sequence[Profile], errs: _Errors) -> None:
    """Every profile shares the one scheduling queue, so they must sort it alike."""
    if len(profiles) < 2:
        return
    canon = profiles[0].names(reg.QUEUE_SORT)
    canon_args = profiles[0].plugin_config.get(canon[0]) if canon else None
    for i, p in enumerate(profiles[1:], start=1):
        names = p.names(reg.QUEUE_SORT)
        if names != canon:
            errs.append(
                invalid(
                    f"profiles[{i}].plugins.queueSort",
                    ", ".join(names),
                    "must be the same for all profiles",
                )
            )
        elif canon and p.plugin_config.get(canon[0]) != canon_args:
            errs.append(
                invalid(
                    f"profiles[{i}].pluginConfig",
                    canon[0],
                    "queueSort args must be the same for all profiles",
                )
            )


# ======================================================================= plugin args

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
}


def _plugin_config(
    raw: Any,
    path: str,
    points_of: Mapping[str, tuple[str, ...]],
    out_of_tree: Mapping[str, PluginSpec],
    errs: _Errors,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for i, entry in enumerate(_list(raw, path, errs) or []):
        ep = f"{path}[{i}]"
        obj = _mapping(entry, ep, errs)
        if obj is None:
            continue
        _check_keys(obj, ("name", "args"), ep, errs)
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
    errs: _Errors,
    *,
    args_type: type | None,
    schema: Mapping[str, Any] | None,
) -> Any:
    """One plugin's args: checked against `schema` (in-tree) and the plugin's rules, then
    built as `args_type` (via its from_dict when it has one). Returns _INVALID on errors."""
    obj = _mapping(raw, path, errs)
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
        errs.append(invalid(path, _short(obj), f"cannot build {name} args: {e}"))
        return _INVALID


def _check_schema(value: Any, schema: Any, path: str, errs: _Errors) -> None:
    if value is None:
        return
    if isinstance(schema, dict):
        if not isinstance(value, dict):
            errs.append(invalid(path, _short(value), "must be an object"))
            return
        for key, sub in value.items():
            if key not in schema:
                errs.append(_unknown(f"{path}.{key}"))
            else:
                _check_schema(sub, schema[key], f"{path}.{key}", errs)
    elif isinstance(schema, list):
        if not isinstance(value, list):
            errs.append(invalid(path, _short(value), "must be a list"))
            return
        for i, item in enumerate(value):
            _check_schema(item, schema[0], f"{path}[{i}]", errs)
    elif isinstance(schema, type) and issubclass(schema, Message):
        _check_proto(value, schema, path, errs)
    elif schema is int:
        if not _is_int(value):
            errs.append(invalid(path, _short(value), "must be an integer"))
    elif schema is bool:
        if not isinstance(value, bool):
            errs.append(invalid(path, _short(value), "must be a bool"))
    elif schema is str and not isinstance(value, str):
        errs.append(invalid(path, _short(value), "must be a string"))


def _check_proto(value: Any, cls: type[Message], path: str, errs: _Errors) -> None:
    before = len(errs)
    _check_proto_fields(value, cls.DESCRIPTOR, path, errs)
    if len(errs) > before:
        return
    try:
        json_format.ParseDict(value, cls())
    except json_format.ParseError as e:
        errs.append(invalid(path, _short(value), str(e)))


def _check_proto_fields(value: Any, desc: Descriptor, path: str, errs: _Errors) -> None:
    if not isinstance(value, dict):
        errs.append(invalid(path, _short(value), "must be an object"))
        return
    fields = {f.json_name: f for f in desc.fields}
    for key, sub in value.items():
        f = fields.get(key)
        if f is None:
            errs.append(_unknown(f"{path}.{key}"))
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


def _validate_fit(obj: Mapping[str, Any], path: str, errs: _Errors) -> None:
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


def _validate_shape(shape: Sequence[Mapping[str, Any]], path: str, errs: _Errors) -> None:
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


def _validate_balanced(obj: Mapping[str, Any], path: str, errs: _Errors) -> None:
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


def _validate_node_affinity(obj: Mapping[str, Any], path: str, errs: _Errors) -> None:
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


def _validate_topology_spread(obj: Mapping[str, Any], path: str, errs: _Errors) -> None:
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


def _validate_inter_pod_affinity(obj: Mapping[str, Any], path: str, errs: _Errors) -> None:
    w = obj.get("hardPodAffinityWeight")
    if w is not None and not 0 <= w <= 100:
        errs.append(invalid(f"{path}.hardPodAffinityWeight", w, "not in valid range [0, 100]"))


_ARGS_VALIDATORS: dict[str, Callable[[Mapping[str, Any], str, _Errors], None]] = {
    "NodeResourcesFit": _validate_fit,
    "NodeResourcesBalancedAllocation": _validate_balanced,
    "NodeAffinity": _validate_node_affinity,
    "PodTopologySpread": _validate_topology_spread,
    "InterPodAffinity": _validate_inter_pod_affinity,
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
        errs.append(invalid(path, _short(data), "must be an object"))
        return None
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    kwargs: dict[str, Any] = {}
    before = len(errs)
    for key, value in data.items():
        attr = camel_to_snake(key) if isinstance(key, str) else ""
        if attr not in names:
            errs.append(_unknown(f"{path}.{key}"))
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
        errs.append(invalid(path, _short(value), f"must be {tp}"))
        return None
    if origin is typing.Literal:
        if value not in typing.get_args(tp):
            errs.append(unsupported(path, value, [str(a) for a in typing.get_args(tp)]))
        return value
    if origin in (list, tuple, Sequence, set, frozenset) or tp in (list, tuple):
        if not isinstance(value, list):
            errs.append(invalid(path, _short(value), "must be a list"))
            return None
        args = typing.get_args(tp)
        item = args[0] if args else Any
        items = [_convert(item, v, f"{path}[{i}]", errs) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, dict):
            errs.append(invalid(path, _short(value), "must be an object"))
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
                errs.append(invalid(path, _short(value), "must be a bool"))
            return value
        if tp is int:
            if not _is_int(value):
                errs.append(invalid(path, _short(value), "must be an integer"))
            return value
        if tp is float:
            if not _is_number(value):
                errs.append(invalid(path, _short(value), "must be a number"))
                return value
            return float(value)
        if tp is str:
            if not isinstance(value, str):
                errs.append(invalid(path, _short(value), "must be a string"))
            return value
    return value


# The default profile's resolved plugins, computed once from the tables above.
_DEFAULT_RESOLVED = resolve_plugins(None, {p.name: p.points for p in reg.IN_TREE})
