"""Field-path checking shared by every reader of the configuration.

Why it exists: load, plugins and args all walk raw YAML and report problems the apimachinery
way (a FieldError naming the path) without stopping at the first one, so that a single
ConfigError lists every problem. They share these helpers; keeping them in a module of their
own lets the readers use them without importing one another.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from services.api.errors import FieldError, invalid


def _unknown(path: str) -> FieldError:
    return FieldError(path, "unknown field")


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
