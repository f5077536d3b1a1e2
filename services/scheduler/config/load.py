"""load_config: YAML text or a file in, a validated SchedulerConfiguration out.

Why it exists: it is the entry point that ties the package together: it parses the YAML,
reads the global fields (durations included) and leaderElection, imports outOfTreePlugins,
reads each profile through `plugins` and `args`, checks what must hold across profiles, and
raises one ConfigError with every problem found.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from services.api.machinery import yamlload
from services.api.machinery.duration import parse_duration
from services.api.machinery.errors import (
    duplicate,
    forbidden,
    invalid,
    required,
    unsupported,
)
from services.leaderelection import JITTER_FACTOR, LeaseTimings, violations
from services.scheduler import registry as reg
from services.scheduler.config.args import read_plugin_config
from services.scheduler.config.checks import (
    Errors,
    as_list,
    as_mapping,
    check_keys,
    is_int,
    is_number,
    short_value,
)
from services.scheduler.config.defaults import DEFAULT_SCHEDULER_NAME
from services.scheduler.config.plugins import read_plugin_sets, resolve_plugins
from services.scheduler.config.types import (
    API_VERSION,
    KIND,
    ConfigError,
    LeaderElectionConfiguration,
    Profile,
    SchedulerConfiguration,
)
from services.scheduler.framework.interface import PluginSpec


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
_CAMEL = {
    "lease_duration": "leaseDuration",
    "renew_deadline": "renewDeadline",
    "retry_period": "retryPeriod",
}
#: Upstream's texts (ValidateLeaderElectionConfiguration) for the rules LeaseTimings checks.
_RULE_TEXT = {
    "positive": "must be greater than zero",
    "over_renew": "LeaseDuration must be greater than RenewDeadline",
    "over_jittered_retry": f"RenewDeadline must be greater than retryPeriod*{JITTER_FACTOR}",
}


def load_config(text_or_path: str | os.PathLike[str]) -> SchedulerConfiguration:
    """Parse, default and validate a KubeSchedulerConfiguration (YAML text or a file path).

    Raises ConfigError listing every problem with its field path."""
    text = _read_file_or_text(text_or_path)
    try:
        doc = yamlload.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError([f"yaml: {e}"]) from None
    errs: Errors = []
    if not isinstance(doc, dict):
        raise ConfigError(
            [invalid("<root>", short_value(doc), "must be a KubeSchedulerConfiguration")]
        )
    if doc.get("apiVersion") != API_VERSION:
        errs.append(unsupported("apiVersion", doc.get("apiVersion"), [API_VERSION]))
    if doc.get("kind") != KIND:
        errs.append(unsupported("kind", doc.get("kind"), [KIND]))
    if errs:  # another version's fields mean other things: stop here
        raise ConfigError(errs)
    check_keys(doc, _TOP_LEVEL, "", errs)
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
    raw_profiles = as_list(doc.get("profiles"), "profiles", errs)
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


def _int_field(doc: Mapping[str, Any], key: str, path: str, default: int, errs: Errors) -> int:
    value = doc.get(key)
    if value is None:
        return default
    if not is_int(value):
        errs.append(invalid(path, short_value(value), "must be an integer"))
        return default
    return int(value)


def _number_field(doc: Mapping[str, Any], key: str, default: float, errs: Errors) -> float:
    value = doc.get(key)
    if value is None:
        return default
    if not is_number(value):
        errs.append(invalid(key, short_value(value), "must be a number"))
        return default
    return value


def _percentage(value: Any, path: str, errs: Errors) -> int | None:
    if value is None:
        return None
    if not is_int(value):
        errs.append(invalid(path, short_value(value), "must be an integer"))
        return None
    if not 0 <= value <= 100:
        errs.append(invalid(path, value, "not in valid range [0-100]"))
        return None
    return int(value)


def _duration(obj: Mapping[str, Any], key: str, path: str, default: float, errs: Errors) -> float:
    value = obj.get(key)
    if value is None:
        return default
    if not isinstance(value, str):
        errs.append(invalid(path, short_value(value), 'must be a duration string such as "15s"'))
        return default
    try:
        return parse_duration(value)
    except ValueError:
        errs.append(invalid(path, value, 'must be a duration such as "15s" or "1500ms"'))
        return default


def _leader_election(raw: Any, errs: Errors) -> LeaderElectionConfiguration:
    le = LeaderElectionConfiguration()
    obj = as_mapping(raw, "leaderElection", errs)
    if not obj:
        return le
    check_keys(obj, _LEADER_KEYS, "leaderElection", errs)
    p = "leaderElection"
    if "leaderElect" in obj:
        if isinstance(obj["leaderElect"], bool):
            le.leader_elect = obj["leaderElect"]
        else:
            errs.append(
                invalid(f"{p}.leaderElect", short_value(obj["leaderElect"]), "must be a bool")
            )
    lease_duration = _duration(obj, "leaseDuration", f"{p}.leaseDuration", 15.0, errs)
    renew_deadline = _duration(obj, "renewDeadline", f"{p}.renewDeadline", 10.0, errs)
    retry_period = _duration(obj, "retryPeriod", f"{p}.retryPeriod", 2.0, errs)
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
                errs.append(invalid(f"{p}.{key}", short_value(value), "must be a string"))
    broken = violations(lease_duration, renew_deadline, retry_period)
    if not broken:
        le.timings = LeaseTimings(
            lease_duration=lease_duration, renew_deadline=renew_deadline, retry_period=retry_period
        )
    if not le.leader_elect:
        return le
    for v in broken:
        errs.append(invalid(f"{p}.{_CAMEL[v.field]}", _go_duration(v.value), _RULE_TEXT[v.rule]))
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


def _out_of_tree(raw: Any, errs: Errors) -> dict[str, PluginSpec]:
    items = as_list(raw, "outOfTreePlugins", errs)
    specs: dict[str, PluginSpec] = {}
    for i, path in enumerate(items or []):
        fp = f"outOfTreePlugins[{i}]"
        if not isinstance(path, str) or not path:
            errs.append(
                invalid(fp, short_value(path), 'must be an import path "package.module[:ATTR]"')
            )
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


def _profile(
    raw: Any,
    path: str,
    points_of: Mapping[str, tuple[str, ...]],
    out_of_tree: Mapping[str, PluginSpec],
    errs: Errors,
) -> Profile | None:
    obj = as_mapping(raw, path, errs)
    if obj is None:
        return None
    check_keys(obj, _PROFILE_KEYS, path, errs)
    profile = Profile(plugins={})
    name = obj.get("schedulerName", DEFAULT_SCHEDULER_NAME)
    if not isinstance(name, str):
        errs.append(invalid(f"{path}.schedulerName", short_value(name), "must be a string"))
    elif not name:
        errs.append(required(f"{path}.schedulerName"))
    else:
        profile.scheduler_name = name
    profile.percentage_of_nodes_to_score = _percentage(
        obj.get("percentageOfNodesToScore"), f"{path}.percentageOfNodesToScore", errs
    )
    custom = read_plugin_sets(obj.get("plugins"), f"{path}.plugins", points_of, errs)
    profile.plugins = resolve_plugins(custom, points_of)
    for point, minimum, maximum, detail in (
        (reg.QUEUE_SORT, 1, 1, "exactly one queue sort plugin must be enabled"),
        (reg.BIND, 1, None, "at least one bind plugin is needed"),
    ):
        n = len(profile.plugins[point])
        if n < minimum or (maximum is not None and n > maximum):
            errs.append(invalid(f"{path}.plugins.{point}", n, detail))
    profile.plugin_config = read_plugin_config(
        obj.get("pluginConfig"), f"{path}.pluginConfig", points_of, out_of_tree, errs
    )
    return profile


def _common_queue_sort(profiles: Sequence[Profile], errs: Errors) -> None:
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
