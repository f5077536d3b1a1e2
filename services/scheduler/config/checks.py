"""Field-path checking shared by every reader of the configuration.

Why it exists: load, plugins and args all walk raw YAML and report problems the apimachinery
way (a FieldError naming the path) without stopping at the first one, so that a single
ConfigError lists every problem. They share these helpers; keeping them in a module of their
own lets the readers use them without importing one another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.api.machinery.errors import FieldError, invalid


def unknown_field(path: str) -> FieldError:
    return FieldError(path, "unknown field")


#: The field errors found so far (validation goes on after the first one).
Errors = list[FieldError]


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def as_mapping(value: Any, path: str, errs: Errors) -> dict[str, Any] | None:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errs.append(invalid(path, short_value(value), "must be an object"))
        return None
    return value


def as_list(value: Any, path: str, errs: Errors) -> list[Any] | None:
    if value is None:
        return []
    if not isinstance(value, list):
        errs.append(invalid(path, short_value(value), "must be a list"))
        return None
    return value


def short_value(value: Any) -> Any:
    text = value if isinstance(value, str | int | float | bool) else repr(value)
    if isinstance(text, str) and len(text) > 60:
        return text[:57] + "..."
    return text


def check_keys(obj: Mapping[str, Any], allowed: Sequence[str], path: str, errs: Errors) -> None:
    for key in obj:
        if key not in allowed:
            errs.append(unknown_field(f"{path}.{key}" if path else str(key)))
