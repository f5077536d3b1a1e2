"""Which plugins exist: one explicit table of the in-tree plugins, plus out-of-tree ones by path.

Upstream keeps this in framework/plugins/registry.go: a plain map from name to factory, no
init() side effects. Here the table is data (`IN_TREE`) that config validation can read without
importing anything; `in_tree_registry()` imports the plugin modules only when a scheduler is
actually built, so a missing module fails there, naming the plugin and the module.

A plugin module exposes `NAME`, an `Args` dataclass and `new(args, handle)`. Out-of-tree
plugins follow the same contract and are registered from the configuration by import path
(`package.module` or `package.module:ATTR`, ATTR being an object in the module with
NAME/Args/new, or a ready `PluginSpec`).
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from services.scheduler.framework.interface import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PluginSpec,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)

# The extension points, named as KubeSchedulerConfiguration names them, in pipeline order.
PRE_ENQUEUE = "preEnqueue"
QUEUE_SORT = "queueSort"
PRE_FILTER = "preFilter"
FILTER = "filter"
POST_FILTER = "postFilter"
PRE_SCORE = "preScore"
SCORE = "score"
RESERVE = "reserve"
PERMIT = "permit"
PRE_BIND = "preBind"
BIND = "bind"
POST_BIND = "postBind"
EXTENSION_POINTS: tuple[str, ...] = (
    PRE_ENQUEUE,
    QUEUE_SORT,
    PRE_FILTER,
    FILTER,
    POST_FILTER,
    PRE_SCORE,
    SCORE,
    RESERVE,
    PERMIT,
    PRE_BIND,
    BIND,
    POST_BIND,
)

#: The protocol a plugin must implement to run at each extension point.
PROTOCOLS: dict[str, type] = {
    PRE_ENQUEUE: PreEnqueuePlugin,
    QUEUE_SORT: QueueSortPlugin,
    PRE_FILTER: PreFilterPlugin,
    FILTER: FilterPlugin,
    POST_FILTER: PostFilterPlugin,
    PRE_SCORE: PreScorePlugin,
    SCORE: ScorePlugin,
    RESERVE: ReservePlugin,
    PERMIT: PermitPlugin,
    PRE_BIND: PreBindPlugin,
    BIND: BindPlugin,
    POST_BIND: PostBindPlugin,
}

#: The methods that make a class a plugin of each extension point (for classes, not instances).
_METHODS: dict[str, tuple[str, ...]] = {
    PRE_ENQUEUE: ("pre_enqueue",),
    QUEUE_SORT: ("less",),
    PRE_FILTER: ("pre_filter",),
    FILTER: ("filter",),
    POST_FILTER: ("post_filter",),
    PRE_SCORE: ("pre_score",),
    SCORE: ("score",),
    RESERVE: ("reserve", "unreserve"),
    PERMIT: ("permit",),
    PRE_BIND: ("pre_bind",),
    BIND: ("bind",),
    POST_BIND: ("post_bind",),
}

PLUGINS_PACKAGE = "services.scheduler.plugins"


class RegistryError(ValueError):
    """A plugin cannot be found or does not follow the NAME/Args/new contract."""


@dataclass(frozen=True)
class InTreePlugin:
    """One row of the in-tree table."""

    #: The plugin's name in KubeSchedulerConfiguration.
    name: str
    #: Module under services/scheduler/plugins/.
    module: str
    #: The extension points it implements; the default profile enables it at all of them
    #: through multiPoint, so this is also where multiPoint expands it.
    points: tuple[str, ...]
    #: Its score weight in the default profile (0: not a score plugin).
    weight: int = 0
    #: The module attributes holding its NAME, Args and new (for a module that bundles
    #: several plugins; in-tree modules hold one plugin each).
    attrs: tuple[str, str, str] = ("NAME", "Args", "new")


#: Every in-tree plugin (upstream plugins/registry.go + the v1 default profile's facts).
IN_TREE: tuple[InTreePlugin, ...] = (
    InTreePlugin("PrioritySort", "prioritysort", (QUEUE_SORT,)),
    InTreePlugin("SchedulingGates", "schedulinggates", (PRE_ENQUEUE,)),
    InTreePlugin("NodeUnschedulable", "nodeunschedulable", (FILTER,)),
    InTreePlugin("NodeName", "nodename", (FILTER,)),
    # Behind the NodeDeclaredFeatures gate (alpha, off): with it off the plugin does
    # nothing, and it is not in the default profile (upstream adds it there with the gate).
    InTreePlugin("NodeDeclaredFeatures", "nodedeclaredfeatures", (PRE_FILTER, FILTER)),
    InTreePlugin("TaintToleration", "tainttoleration", (FILTER, PRE_SCORE, SCORE), 3),
    InTreePlugin("NodeAffinity", "nodeaffinity", (PRE_FILTER, FILTER, PRE_SCORE, SCORE), 2),
    InTreePlugin("NodePorts", "nodeports", (PRE_FILTER, FILTER)),
    InTreePlugin(
        "NodeResourcesFit", "noderesources.fit", (PRE_FILTER, FILTER, PRE_SCORE, SCORE), 1
    ),
    InTreePlugin("VolumeRestrictions", "volumerestrictions", (PRE_FILTER, FILTER)),
    InTreePlugin("NodeVolumeLimits", "nodevolumelimits", (PRE_FILTER, FILTER)),
    InTreePlugin("VolumeZone", "volumezone", (PRE_FILTER, FILTER)),
    InTreePlugin(
        "VolumeBinding",
        "volumebinding.plugin",
        (PRE_FILTER, FILTER, PRE_SCORE, SCORE, RESERVE, PRE_BIND),
        1,
    ),
    InTreePlugin(
        "PodTopologySpread", "podtopologyspread.plugin", (PRE_FILTER, FILTER, PRE_SCORE, SCORE), 2
    ),
    InTreePlugin("InterPodAffinity", "interpodaffinity", (PRE_FILTER, FILTER, PRE_SCORE, SCORE), 2),
    InTreePlugin(
        "DynamicResources",
        "dynamicresources.plugin",
        (PRE_ENQUEUE, PRE_FILTER, FILTER, POST_FILTER, SCORE, RESERVE, PRE_BIND),
        1,
    ),
    InTreePlugin("DefaultPreemption", "defaultpreemption", (POST_FILTER,)),
    InTreePlugin(
        "NodeResourcesBalancedAllocation",
        "noderesources.balanced_allocation",
        (PRE_SCORE, SCORE),
        1,
    ),
    InTreePlugin("DefaultBinder", "defaultbinder", (BIND,)),
    # scheduler-plugins' Coscheduling (gang scheduling), built in; kubera's default
    # configuration enables it in a second profile, scheduler-plugins-scheduler, at every
    # point but QueueSort (config/defaults.py SCHEDULER_PLUGINS_PROFILE_PLUGINS).
    InTreePlugin(
        "Coscheduling",
        "coscheduling",
        (PRE_ENQUEUE, QUEUE_SORT, PRE_FILTER, POST_FILTER, RESERVE, PERMIT),
    ),
    # Upstream's GangScheduling (Workload pod groups and PodGroups; PreFilter for a
    # PodGroup's topology constraint), off by default as behind upstream's GangScheduling
    # feature gate: a profile enables it (plugins.multiPoint.enabled).
    InTreePlugin("GangScheduling", "gangscheduling", (PRE_ENQUEUE, PRE_FILTER, RESERVE, PERMIT)),
)

IN_TREE_BY_NAME: dict[str, InTreePlugin] = {p.name: p for p in IN_TREE}


def in_tree_registry() -> dict[str, PluginSpec]:
    """Import every in-tree plugin module and return name -> PluginSpec.

    Raises RegistryError naming the plugin and module when one is missing or malformed."""
    registry: dict[str, PluginSpec] = {}
    for row in IN_TREE:
        module = _import_in_tree(row)
        if module is None:
            raise RegistryError(
                f"in-tree plugin {row.name!r}: module {PLUGINS_PACKAGE}.{row.module} does not exist"
            )
        name_attr, args_attr, new_attr = row.attrs
        if getattr(module, name_attr, None) != row.name:
            raise RegistryError(
                f"in-tree plugin {row.name!r}: {module.__name__}.{name_attr} is "
                f"{getattr(module, name_attr, None)!r}"
            )
        factory = getattr(module, new_attr, None)
        if not callable(factory):
            raise RegistryError(f"in-tree plugin {row.name!r}: no {module.__name__}.{new_attr}")
        args_type = getattr(module, args_attr, None)
        registry[row.name] = PluginSpec(
            name=row.name,
            factory=factory,
            args_type=args_type if isinstance(args_type, type) else None,
            default_points=row.points,
            default_weight=row.weight,
        )
    return registry


def in_tree_args_type(name: str) -> type | None:
    """The Args dataclass of an in-tree plugin, or None when its module does not exist (yet)
    or has none. Config uses it to type pluginConfig args."""
    row = IN_TREE_BY_NAME.get(name)
    module = _import_in_tree(row) if row is not None else None
    if row is None or module is None:
        return None
    args = getattr(module, row.attrs[1], None)
    return args if isinstance(args, type) else None


def _import_in_tree(row: InTreePlugin) -> ModuleType | None:
    """The plugin's module, or None when that module itself does not exist (an import error
    inside an existing module is a bug and propagates)."""
    path = f"{PLUGINS_PACKAGE}.{row.module}"
    try:
        return importlib.import_module(path)
    except ModuleNotFoundError as e:
        if e.name == path:
            return None
        raise


def load_out_of_tree(import_path: str) -> PluginSpec:
    """A plugin from its import path: "package.module" (the module exposes NAME/Args/new) or
    "package.module:ATTR" (ATTR exposes them, or is a PluginSpec).

    Its extension points come from an `EXTENSION_POINTS` sequence next to NAME when given,
    otherwise from the methods of the class `new` is annotated to return."""
    module_path, _, attr = import_path.partition(":")
    if not module_path:
        raise RegistryError(f"out-of-tree plugin {import_path!r}: empty module path")
    try:
        module = importlib.import_module(module_path)
    except ImportError as e:
        raise RegistryError(f"out-of-tree plugin {import_path!r}: cannot import: {e}") from e
    source: Any = module
    if attr:
        if not hasattr(module, attr):
            raise RegistryError(f"out-of-tree plugin {import_path!r}: {module_path} has no {attr}")
        source = getattr(module, attr)
    if isinstance(source, PluginSpec):
        if source.name in IN_TREE_BY_NAME:
            raise RegistryError(
                f"out-of-tree plugin {import_path!r}: name {source.name!r} is an in-tree plugin"
            )
        if not source.default_points:
            raise RegistryError(
                f"out-of-tree plugin {import_path!r}: its PluginSpec lists no default_points"
            )
        return source
    name = getattr(source, "NAME", None)
    if not isinstance(name, str) or not name:
        raise RegistryError(f"out-of-tree plugin {import_path!r}: no NAME")
    if name in IN_TREE_BY_NAME:
        raise RegistryError(
            f"out-of-tree plugin {import_path!r}: NAME {name!r} is an in-tree plugin"
        )
    declared = getattr(source, "EXTENSION_POINTS", None)
    if declared is not None:
        points = tuple(declared)
        unknown = [p for p in points if p not in EXTENSION_POINTS]
        if unknown:
            raise RegistryError(
                f"out-of-tree plugin {import_path!r}: unknown extension points {unknown}"
            )
    else:
        cls = plugin_class(source)
        if cls is None:
            raise RegistryError(
                f"out-of-tree plugin {import_path!r}: cannot tell its extension points; "
                "annotate new() with the plugin class or set EXTENSION_POINTS"
            )
        points = class_points(cls)
    if not points:
        raise RegistryError(f"out-of-tree plugin {import_path!r}: implements no extension point")
    weight = int(getattr(source, "WEIGHT", 1 if SCORE in points else 0))
    return _spec(source, name, points=points, weight=weight)


def plugin_class(source: Any) -> type | None:
    """The class `source.new` is annotated to return, if it is one."""
    new = getattr(source, "new", None)
    if new is None:
        return None
    try:
        hints = typing.get_type_hints(new)
    except Exception:  # noqa: BLE001 - unresolvable annotations: fall back to the caller's rule
        return None
    ret = hints.get("return")
    return ret if inspect.isclass(ret) else None


def class_points(cls: type) -> tuple[str, ...]:
    """The extension points whose methods `cls` defines, in pipeline order."""
    return tuple(
        point
        for point in EXTENSION_POINTS
        if all(callable(getattr(cls, m, None)) for m in _METHODS[point])
    )


def instance_points(plugin: object) -> tuple[str, ...]:
    """The extension points a plugin instance implements (protocol checks)."""
    return tuple(p for p in EXTENSION_POINTS if isinstance(plugin, PROTOCOLS[p]))


def _spec(source: Any, name: str, *, points: tuple[str, ...], weight: int) -> PluginSpec:
    if isinstance(source, PluginSpec):
        return source
    new = getattr(source, "new", None)
    if not callable(new):
        raise RegistryError(f"plugin {name!r}: no new(args, handle)")
    args_type = getattr(source, "Args", None)
    if args_type is not None and not isinstance(args_type, type):
        raise RegistryError(f"plugin {name!r}: Args is not a type")
    return PluginSpec(
        name=name,
        factory=new,
        args_type=args_type,
        default_points=points,
        default_weight=weight,
    )


def merged(
    in_tree: Mapping[str, PluginSpec], out_of_tree: Mapping[str, PluginSpec]
) -> dict[str, PluginSpec]:
    """One registry from both; an out-of-tree plugin may not shadow an in-tree one."""
    clash = sorted(set(in_tree) & set(out_of_tree))
    if clash:
        raise RegistryError(f"out-of-tree plugins shadow in-tree ones: {clash}")
    return {**in_tree, **out_of_tree}
