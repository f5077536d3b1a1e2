"""Reading typed fields out of an experiment file's YAML, with errors that name the place.

Every reader takes a `Ctx` (the file, its directory, the warnings collected so far) and a
`where` (`[0].workloadTemplate[2].countParam`), and raises `ConfigError` whose message is
`<file>: <where>: <what is wrong>`. Field names match case-insensitively, as Go's
encoding/json matches struct fields, so every file upstream accepts is accepted here.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubera.errors import CliError
from kubera.experiment.spec.templates import (
    Template,
    TemplateError,
    UnsupportedTemplate,
    read_template,
)
from services.api.machinery.duration import parse_duration


class ConfigError(CliError):
    """An experiment file that cannot run; the message starts with the file's path."""


class Unsupported(ConfigError):
    """A valid upstream feature kubera does not implement (steady-state persistent volumes, updateAny, …): the
    test case using it is left out of the experiment rather than failing the whole file."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        #: The message without the file: `<where>: <what>`.
        self.reason = reason


@dataclass
class Ctx:
    """Where errors point and relative paths start."""

    file: str
    """The config file as given (messages start with it)."""
    base_dir: str
    """Its directory; template and trace paths are relative to it."""
    warnings: list[str] = field(default_factory=list)
    """Accepted-but-ignored things, each `<file>: <where>: …`."""

    def error(self, where: str, message: str) -> ConfigError:
        return ConfigError(
            f"{self.file}: {where}: {message}" if where else f"{self.file}: {message}"
        )

    def unsupported(self, where: str, message: str) -> Unsupported:
        reason = f"{where}: {message}"
        return Unsupported(f"{self.file}: {reason}", reason)

    def warn(self, where: str, message: str) -> None:
        text = f"{self.file}: {where}: {message}"
        if text not in self.warnings:  # every workload is planned; say it once
            self.warnings.append(text)

    def resolve(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.base_dir, os.path.expanduser(path)))


Kind = Callable[[Ctx, str, Any], Any]


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    return {
        bool: "bool",
        int: "int",
        float: "float",
        str: "string",
        list: "list",
        dict: "mapping",
    }.get(type(value), type(value).__name__)


def k_str(ctx: Ctx, where: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ctx.error(where, f"expected a string, got {type_name(value)} {value!r}")
    return value


def k_nonempty_str(ctx: Ctx, where: str, value: Any) -> str:
    s = k_str(ctx, where, value)
    if not s:
        raise ctx.error(where, "must not be empty")
    return s


def k_bool(ctx: Ctx, where: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ctx.error(where, f"expected true or false, got {type_name(value)} {value!r}")
    return value


def k_int(ctx: Ctx, where: str, value: Any) -> int:
    """A whole number (Go decodes JSON numbers as float64 then truncates: 5.0 is 5)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ctx.error(where, f"expected an integer, got {type_name(value)} {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ctx.error(where, f"expected an integer, got {value!r}")
    return int(value)


def k_count(ctx: Ctx, where: str, value: Any) -> int:
    n = k_int(ctx, where, value)
    if n < 0:
        raise ctx.error(where, f"must not be negative, got {n}")
    return n


def k_positive_int(ctx: Ctx, where: str, value: Any) -> int:
    n = k_int(ctx, where, value)
    if n < 1:
        raise ctx.error(where, f"must be at least 1, got {n}")
    return n


def k_float(ctx: Ctx, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ctx.error(where, f"expected a number, got {type_name(value)} {value!r}")
    return float(value)


def k_positive_float(ctx: Ctx, where: str, value: Any) -> float:
    x = k_float(ctx, where, value)
    if x <= 0:
        raise ctx.error(where, f"must be positive, got {value!r}")
    return x


def k_duration(ctx: Ctx, where: str, value: Any) -> float:
    """A Go duration string ("500ms", "2m30s"), or a number of seconds; ≥ 0."""
    if isinstance(value, str):
        try:
            seconds = parse_duration(value)
        except ValueError:
            raise ctx.error(
                where, f'invalid duration "{value}" (expected e.g. "500ms", "10s", "2m")'
            ) from None
    else:
        seconds = k_float(ctx, where, value)
    if seconds < 0:
        raise ctx.error(where, f"must not be negative, got {value!r}")
    return seconds


def k_param(ctx: Ctx, where: str, value: Any) -> str:
    """A reference to a workload parameter: `$name`."""
    s = k_str(ctx, where, value)
    if not s.startswith("$") or len(s) < 2:
        raise ctx.error(where, f'expected a parameter reference like "$name", got "{s}"')
    return s


def k_str_list(ctx: Ctx, where: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list):
        raise ctx.error(where, f"expected a list of strings, got {type_name(value)}")
    return tuple(k_str(ctx, f"{where}[{i}]", v) for i, v in enumerate(value))


def k_str_map(ctx: Ctx, where: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error(where, f"expected a mapping of strings, got {type_name(value)}")
    return {str(k): k_str(ctx, f"{where}.{k}", v) for k, v in value.items()}


def k_bool_map(ctx: Ctx, where: str, value: Any) -> dict[str, bool]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error(where, f"expected a mapping of names to true/false, got {type_name(value)}")
    return {str(k): k_bool(ctx, f"{where}.{k}", v) for k, v in value.items()}


def k_map(ctx: Ctx, where: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ctx.error(where, f"expected a mapping, got {type_name(value)}")
    return {str(k): v for k, v in value.items()}


def k_list(ctx: Ctx, where: str, value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ctx.error(where, f"expected a list, got {type_name(value)}")
    return value


def k_labels(ctx: Ctx, where: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    return k_str_list(ctx, where, value)


def k_file(ctx: Ctx, where: str, value: Any) -> str:
    """A path that must exist → absolute: relative to the config file, else (as upstream's
    older files are written, relative to where `go test` ran) to the working directory."""
    path = k_nonempty_str(ctx, where, value)
    full = ctx.resolve(path)
    if not os.path.isfile(full):
        cwd = os.path.abspath(os.path.expanduser(path))
        if not os.path.isfile(cwd):
            raise ctx.error(where, f"file not found: {path}")
        full = cwd
    return full


def load_template(
    ctx: Ctx, where: str, value: Any, params: Mapping[str, Any] | None = None
) -> Template:
    """A template path relative to the config file → the Template, read and checked."""
    path = k_nonempty_str(ctx, where, value)
    full = k_file(ctx, where, path)
    try:
        return read_template(full, path, params)
    except UnsupportedTemplate as e:
        raise ctx.unsupported(where, f"{path}: {e}") from None
    except TemplateError as e:
        raise ctx.error(where, f"{path}: {e}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ctx.error(where, f"{path}: cannot read: {e}") from None


def k_template(ctx: Ctx, where: str, value: Any) -> Template:
    return load_template(ctx, where, value)


def k_templates(ctx: Ctx, where: str, value: Any) -> tuple[Template, ...]:
    if not isinstance(value, list):
        raise ctx.error(where, f"expected a list of template paths, got {type_name(value)}")
    return tuple(load_template(ctx, f"{where}[{i}]", v) for i, v in enumerate(value))


def one_of(*choices: str) -> Kind:
    def kind(ctx: Ctx, where: str, value: Any) -> str:
        s = k_str(ctx, where, value)
        if s not in choices:
            raise ctx.error(where, f'invalid value "{s}" (expected one of: {", ".join(choices)})')
        return s

    return kind


@dataclass(frozen=True)
class Spec:
    """One YAML field: its attribute, reader, whether required, whether `$param` may stand in."""

    attr: str
    kind: Kind
    required: bool = False
    param_ok: bool = False


def check_mapping(ctx: Ctx, where: str, raw: Any, what: str) -> dict[Any, Any]:
    if not isinstance(raw, dict):
        raise ctx.error(where, f"expected a mapping ({what}), got {type_name(raw)}")
    return raw


def read_fields(
    ctx: Ctx,
    where: str,
    raw: Mapping[Any, Any],
    specs: Mapping[str, Spec],
    *,
    skip: tuple[str, ...] = (),
) -> tuple[dict[str, Any], dict[str, str]]:
    """Read `raw` by `specs` (canonical camelCase name → Spec).

    Returns (attr → value, canonical name → "$param" for fields given as parameter
    references). Unknown fields, duplicates differing only in case, wrong types and missing
    required fields raise ConfigError naming `where.<field>`."""
    by_lower = {name.lower(): name for name in (*specs, *skip)}
    values: dict[str, Any] = {}
    refs: dict[str, str] = {}
    seen: dict[str, str] = {}
    for key, value in raw.items():
        canon = by_lower.get(str(key).lower())
        at = f"{where}.{key}" if where else str(key)
        if canon is None:
            expected = ", ".join(sorted((*specs, *skip), key=str.lower))
            raise ctx.error(at, f"unknown field (expected one of: {expected})")
        if canon in seen:
            raise ctx.error(at, f"duplicate field (also given as {seen[canon]})")
        seen[canon] = str(key)
        if canon in skip:
            continue
        spec = specs[canon]
        if spec.param_ok and isinstance(value, str) and value.startswith("$"):
            refs[canon] = k_param(ctx, at, value)
            continue
        values[spec.attr] = spec.kind(ctx, at, value)
    for name, spec in specs.items():
        if spec.required and spec.attr not in values and name not in refs:
            raise ctx.error(f"{where}.{name}" if where else name, "required field missing")
    return values, refs
