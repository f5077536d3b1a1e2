"""Building one plugin of a profile from the registry and the profile's pluginConfig
(the Framework's constructor, runtime.py, builds every plugin it needs this way)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from services.scheduler.framework.interface import Handle, PluginSpec


def instantiate(
    profile_name: str,
    name: str,
    registry: Mapping[str, PluginSpec],
    plugin_config: Mapping[str, Any],
    handle: Handle,
) -> Any:
    """The plugin `name`, built with its args (typed, or the args type's defaults); raises
    ValueError when it is not registered, its factory fails, or it calls itself otherwise."""
    spec = registry.get(name)
    if spec is None:
        raise ValueError(f"profile {profile_name!r}: plugin {name!r} is not registered")
    args = plugin_config.get(name)
    if args is None and spec.args_type is not None:
        args = spec.args_type()
    elif isinstance(args, Mapping) and spec.args_type is not None:
        args = typed_args(name, spec.args_type, args)
    try:
        plugin = spec.factory(args, handle)
    except Exception as e:  # noqa: BLE001 - reported with the plugin's name
        raise ValueError(f"initializing plugin {name!r}: {e}") from e
    got = getattr(plugin, "name", None)
    if got != name:
        raise ValueError(f"plugin registered as {name!r} calls itself {got!r}")
    return plugin


def typed_args(name: str, args_type: type, raw: Mapping[str, Any]) -> Any:
    """Config read while the plugin module was missing keeps a dict: type it now."""
    from services.scheduler.config import build_dataclass  # config imports the registry

    from_dict = getattr(args_type, "from_dict", None)
    if callable(from_dict):
        return from_dict(raw)
    if dataclasses.is_dataclass(args_type):
        errs: list[Any] = []
        args = build_dataclass(args_type, dict(raw), f"{name}.args", errs)
        if errs:
            raise ValueError("; ".join(map(str, errs)))
        return args
    return args_type(**raw)
