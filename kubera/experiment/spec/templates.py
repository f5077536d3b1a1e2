"""Object templates: YAML files that may carry Go text/template actions, as upstream's are.

scheduler_perf renders every node, pod and createAny template with Go's template package
before decoding it (`{{.Index}}`, `{{.Count}}`, template params, arithmetic helpers such as
`{{AddInt .Index 1}}` or `{{Mod .Index 3}}`, and `{{if .param}}…{{else}}…{{end}}`). kubera
reads the same files: gotemplate.py parses and runs them with Go's semantics; this module
holds upstream's functions (operations.go getTemplateFuncs), the values a template sees
(template params as encoding/json decodes them: numbers are float64, .Index and .Count int)
and the Template read once when the experiment is loaded.

What the renderer does not implement (with, define …) is rejected when the
template is loaded, so an experiment fails before it starts rather than in the middle. A
template without actions is plain YAML.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kubera.experiment.spec.gotemplate import (
    MissingValue,
    TemplateError,
    UnsupportedTemplate,
    execute,
    parse,
)
from services.api.machinery import yamlload

__all__ = ["FUNCS", "MissingValue", "Template", "TemplateError", "UnsupportedTemplate"]


def _num(value: Any) -> float:
    if isinstance(value, bool):
        raise TemplateError(f"cannot cast {value!r} to float64")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"cannot cast {value!r} to float64")


def _div(a: Any, b: Any) -> float:
    if _num(b) == 0:
        raise TemplateError("division by zero")
    return _num(a) / _num(b)


def _printf(fmt: Any, *args: Any) -> str:
    # Go verbs map onto Python's % verbs for the cases templates use (%d %s %v %f %x).
    return str(fmt).replace("%v", "%s") % args


def _product(xs: tuple[Any, ...]) -> float:
    out = 1.0
    for x in xs:
        out *= _num(x)
    return out


def _int(value: Any) -> int:
    """Int: a template param (a float64 as encoding/json decodes numbers) as an int, for
    `{{range}}` over it."""
    if isinstance(value, bool):
        raise TypeError(f"cannot convert {value!r} to int")
    if isinstance(value, str):
        return int(value.strip())
    return int(_num(value))


def _json(value: Any) -> str:
    """JSON: the value as Go's json.Marshal writes it (compact, sorted map keys, an
    integral float64 without a fraction): a param's list or map printed into YAML."""

    def go(v: Any) -> Any:
        if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
            return int(v)
        if isinstance(v, dict):
            return {str(k): go(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [go(x) for x in v]
        return v

    return json.dumps(go(value), separators=(",", ":"), sort_keys=True)


#: upstream's template functions (operations.go getTemplateFuncs) plus printf; Go's
#: builtins (and, or, not, eq, ne, lt, le, gt, ge) come with gotemplate.
FUNCS: dict[str, Callable[..., Any]] = {
    "AddInt": lambda *xs: int(sum(_num(x) for x in xs)),
    "AddFloat": lambda *xs: sum(_num(x) for x in xs),
    "SubtractInt": lambda a, b: int(_num(a) - _num(b)),
    "SubtractFloat": lambda a, b: _num(a) - _num(b),
    "MultiplyInt": lambda *xs: int(_product(xs)),
    "MultiplyFloat": lambda *xs: _product(xs),
    "DivideInt": lambda a, b: int(_div(a, b)),
    "DivideFloat": _div,
    "Mod": lambda a, b: int(_num(a)) % int(_num(b)),
    "Int": _int,
    "JSON": _json,
    "printf": _printf,
}


@functools.lru_cache(maxsize=256)
def _parsed(text: str) -> list[Any]:
    return parse(text, FUNCS)


def as_json(value: Any) -> Any:
    """A template param as upstream's encoding/json hands it to the template: every number
    a float64 (so `eq .n 1` compares a float with an int and fails, as upstream's)."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [as_json(v) for v in value]
    return value


def render_text(text: str, env: Mapping[str, Any]) -> str:
    """`text` run as a Go template on `env`."""
    return execute(_parsed(text), env, FUNCS)


def validate_text(text: str) -> None:
    """Raise TemplateError if `text` does not parse or uses what the renderer lacks."""
    _parsed(text)


def environment(index: int, count: int, params: Mapping[str, Any] | None) -> dict[str, Any]:
    """What a template sees: its params (as JSON values), .Index and .Count."""
    return {**as_json(dict(params or {})), "Index": index, "Count": count}


@dataclass(frozen=True)
class Template:
    """One template file, read and checked when the experiment is loaded."""

    path: str
    """Absolute path of the file."""
    source: str
    """The path as the config file wrote it (relative to the config file)."""
    text: str = field(repr=False)
    """The file's contents, actions included."""
    data: dict[str, Any] = field(default_factory=dict, repr=False)
    """The object rendered for index 0 of 1 (with the op's template params once planned): a
    preview, and the object itself for templates without actions."""

    @property
    def has_actions(self) -> bool:
        return "{{" in self.text

    def render(
        self, index: int = 0, count: int = 1, params: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """The object for `index` of `count`, with `params` (template params) in scope."""
        if not self.has_actions:
            return copy_data(self.data)
        return decode(render_text(self.text, environment(index, count, params)), self.source)


def decode(text: str, source: str) -> dict[str, Any]:
    """YAML text → one object (a mapping)."""
    try:
        data = yamlload.safe_load(text)
    except yaml.YAMLError as e:
        raise TemplateError(f"invalid YAML: {e}".replace("\n", " ")) from e
    if not isinstance(data, dict):
        raise TemplateError(f"{source}: expected a YAML mapping, got {type(data).__name__}")
    return data


def copy_data(value: Any) -> Any:
    """A deep copy of plain YAML data (mappings, lists, scalars)."""
    if isinstance(value, dict):
        return {k: copy_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [copy_data(v) for v in value]
    return value


def read_template(path: str, source: str, params: Mapping[str, Any] | None = None) -> Template:
    """Read, check and preview-render a template; TemplateError/OSError on failure."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    validate_text(text)
    try:
        data = decode(
            render_text(text, environment(0, 1, params)) if "{{" in text else text, source
        )
    except MissingValue:
        data = {}  # uses template params: previewed once they are known (config.plan)
    return Template(path=path, source=source, text=text, data=data)
