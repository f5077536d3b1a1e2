"""DynamicResourcesArgs (kubescheduler.config.k8s.io/v1): the plugin's configuration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from services.api.dra.bindingconditions import DEFAULT_BINDING_TIMEOUT
from services.api.machinery.duration import parse_duration

DEFAULT_FILTER_TIMEOUT = 10.0


@dataclass
class Args:
    """DynamicResourcesArgs (kubescheduler.config.k8s.io/v1)."""

    #: filterTimeout: how long Filter may search one node, in seconds (default 10 s, 0: no
    #: limit), from a Duration string such as "10s".
    filter_timeout: float = DEFAULT_FILTER_TIMEOUT
    #: bindingTimeout: how long PreBind waits for binding conditions, in seconds (default
    #: 600 s, at least 1 s; upstream's DynamicResourcesBindingTimeoutDefault).
    binding_timeout: float = DEFAULT_BINDING_TIMEOUT

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        d = d or {}
        unknown = set(d) - {"filterTimeout", "bindingTimeout"}
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}")
        raw = d.get("filterTimeout")
        timeout = DEFAULT_FILTER_TIMEOUT if raw is None else parse_duration(str(raw))
        if timeout < 0:
            raise ValueError(f"filterTimeout: Invalid value: {raw!r}: must be zero or positive")
        raw = d.get("bindingTimeout")
        binding_timeout = DEFAULT_BINDING_TIMEOUT if raw is None else parse_duration(str(raw))
        if binding_timeout < 1:
            raise ValueError(f"bindingTimeout: Invalid value: {raw!r}: must be at least 1 second")
        return cls(timeout, binding_timeout)
