"""Which plugins run at each extension point: a profile's `plugins:` block merged over the
defaults, with multiPoint expanded (upstream mergePlugins + expandMultiPointPlugins).

Why it exists: this is the one subtle part of the configuration (ordering of explicit and
multiPoint entries, `disabled: "*"`, score weights), kept apart from YAML loading so it can be
read on its own. It also computes the default profile's resolved plugins once, which
`types.Profile` copies for every new profile, and those of scheduler-plugins' profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from services.api.machinery.errors import duplicate, invalid, required
from services.scheduler import registry as reg
from services.scheduler.config.checks import (
    Errors,
    as_list,
    as_mapping,
    check_keys,
    is_int,
    short_value,
)
from services.scheduler.config.defaults import (
    DEFAULT_MULTI_POINT,
    SCHEDULER_PLUGINS_PROFILE_PLUGINS,
)

MULTI_POINT = "multiPoint"
MIN_SCORE_WEIGHT, MAX_SCORE_WEIGHT = 1, 100


class EnabledPlugin(NamedTuple):
    """A plugin at one extension point: its name and, at `score`, its weight (else 0)."""

    name: str
    weight: int = 0


@dataclass
class _PluginSet:
    """One extension point's enabled/disabled lists, merged (upstream v1.PluginSet)."""

    #: (name, weight or None, the field path it came from)
    enabled: list[tuple[str, int | None, str]] = field(default_factory=list)
    disabled: set[str] = field(default_factory=set)


def read_plugin_sets(
    raw: Any, path: str, points_of: Mapping[str, tuple[str, ...]], errs: Errors
) -> dict[str, _PluginSet]:
    """The profile's own `plugins:` block, checked entry by entry."""
    sets: dict[str, _PluginSet] = {p: _PluginSet() for p in (MULTI_POINT, *reg.EXTENSION_POINTS)}
    obj = as_mapping(raw, path, errs)
    if not obj:
        return sets
    check_keys(obj, tuple(sets), path, errs)
    for point, ps in sets.items():
        block = as_mapping(obj.get(point), f"{path}.{point}", errs)
        if not block:
            continue
        bp = f"{path}.{point}"
        check_keys(block, ("enabled", "disabled"), bp, errs)
        seen: set[str] = set()
        for i, entry in enumerate(as_list(block.get("enabled"), f"{bp}.enabled", errs) or []):
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
        for i, entry in enumerate(as_list(block.get("disabled"), f"{bp}.disabled", errs) or []):
            got = _plugin_entry(entry, f"{bp}.disabled[{i}]", errs, with_weight=False)
            if got is not None:
                ps.disabled.add(got[0])
    return sets


def _plugin_entry(
    entry: Any, path: str, errs: Errors, *, with_weight: bool
) -> tuple[str, int | None] | None:
    obj = as_mapping(entry, path, errs)
    if obj is None:
        return None
    check_keys(obj, ("name", "weight") if with_weight else ("name",), path, errs)
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        errs.append(required(f"{path}.name"))
        return None
    weight = obj.get("weight")
    if weight is not None and not is_int(weight):
        errs.append(invalid(f"{path}.weight", short_value(weight), "must be an integer"))
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


def _resolve_in_tree(plugins: Mapping[str, Any] | None) -> dict[str, list[EnabledPlugin]]:
    points_of = {p.name: p.points for p in reg.IN_TREE}
    errs: Errors = []
    custom = read_plugin_sets(plugins, "plugins", points_of, errs) if plugins else None
    if errs:
        raise AssertionError(f"kubera's own default plugins are invalid: {errs}")
    return resolve_plugins(custom, points_of)


# The default profile's resolved plugins, computed once from the tables above, and those
# of kubera's second default profile (scheduler-plugins' scheduler, defaults.py).
DEFAULT_RESOLVED = _resolve_in_tree(None)
SCHEDULER_PLUGINS_RESOLVED = _resolve_in_tree(SCHEDULER_PLUGINS_PROFILE_PLUGINS)
