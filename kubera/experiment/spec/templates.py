"""Object templates: YAML files that may carry Go text/template actions, as upstream's are.

scheduler_perf renders every node, pod and createAny template with Go's text/template before
decoding it (`{{.Index}}`, `{{.Count}}`, template params, and arithmetic helpers such as
`{{AddInt .Index 1}}` or `{{Mod .Index 3}}`). kubera reads the same files, so it renders the
subset those files use:

    {{ .Name }}                       a value from the environment (Index, Count, params)
    {{ Func arg arg … }}              AddInt AddFloat SubtractInt SubtractFloat MultiplyInt
                                      MultiplyFloat DivideInt DivideFloat Mod, and printf
    {{ Func (Func .A 1) .B }}         nested calls in parentheses
    {{- … -}}                         whitespace trimming
    "text" 12 3.5                     literals

Anything else (if/range/with/define, pipelines with `|`, variables) is rejected when the
template is loaded, so an experiment fails before it starts rather than in the middle. A
template without actions is plain YAML.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from services.api.machinery import yamlload


class TemplateError(ValueError):
    """A template that does not parse, render or decode; the message says why."""


class UnsupportedTemplate(TemplateError):
    """Valid Go template syntax the renderer does not implement (`range`, variables, pipelines,
    comments): the test case using it is left out, not the whole file (upstream's DRA claim
    templates use them)."""


class MissingValue(TemplateError):
    """A `.Name` the environment does not define (a template param not given yet)."""


_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'\s*(\(|\)|"(?:[^"\\]|\\.)*"|`[^`]*`|[^\s()]+)')
_NUMBER = re.compile(r"^-?\d+(\.\d*)?([eE][-+]?\d+)?$")


def _num(value: Any) -> float:
    if isinstance(value, bool):
        raise TemplateError(f"not a number: {value!r}")
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            pass
    raise TemplateError(f"not a number: {value!r}")


def _div(a: Any, b: Any) -> float:
    if _num(b) == 0:
        raise TemplateError("division by zero")
    return _num(a) / _num(b)


def _printf(fmt: Any, *args: Any) -> str:
    # Go verbs map onto Python's % verbs for the cases templates use (%d %s %v %f %x).
    return str(fmt).replace("%v", "%s") % args


#: upstream's template functions (operations.go getTemplateFuncs) plus printf.
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
    "printf": _printf,
}


def _product(xs: tuple[Any, ...]) -> float:
    out = 1.0
    for x in xs:
        out *= _num(x)
    return out


def _tokens(expr: str) -> list[str]:
    out, pos, expr = [], 0, expr.strip()
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if m is None:
            raise TemplateError(f"cannot parse action {{{{{expr}}}}}")
        out.append(m.group(1))
        pos = m.end()
    return out


def _parse(tokens: list[str], pos: int, until: str | None) -> tuple[list[Any], int]:
    """Tokens → a nested list (a call) of terms; `(` opens a sub-call."""
    terms: list[Any] = []
    while pos < len(tokens):
        tok = tokens[pos]
        if tok == ")":
            if until != ")":
                raise TemplateError("unbalanced ')'")
            return terms, pos + 1
        if tok == "(":
            sub, pos = _parse(tokens, pos + 1, ")")
            terms.append(sub)
            continue
        terms.append(tok)
        pos += 1
    if until == ")":
        raise TemplateError("unbalanced '('")
    return terms, pos


def _check(terms: list[Any], expr: str) -> None:
    """Reject what the renderer does not implement, at load time."""
    if not terms:
        raise TemplateError(f"empty action {{{{{expr}}}}}")
    head = terms[0]
    if isinstance(head, str) and not head.startswith((".", '"', "`")) and not _NUMBER.match(head):
        if head not in FUNCS:
            raise UnsupportedTemplate(
                f'unsupported template action or function "{head}" in {{{{{expr}}}}}'
            )
    elif len(terms) > 1:
        raise TemplateError(f"cannot call a value in {{{{{expr}}}}}")
    for term in terms[1:] if isinstance(head, str) and head in FUNCS else terms:
        if isinstance(term, list):
            _check(term, expr)
        elif term == "|" or term.startswith("$"):
            raise UnsupportedTemplate(f"pipelines and variables are not supported: {{{{{expr}}}}}")


def _eval(term: Any, env: Mapping[str, Any]) -> Any:
    if isinstance(term, list):
        head, args = term[0], term[1:]
        if isinstance(head, str) and head in FUNCS:
            return FUNCS[head](*(_eval(a, env) for a in args))
        return _eval(head, env)
    if term.startswith("."):
        value: Any = env
        for part in term[1:].split("."):
            if not isinstance(value, Mapping) or part not in value:
                raise MissingValue(f"no value for {term}")
            value = value[part]
        return value
    if term.startswith('"'):
        return bytes(term[1:-1], "utf-8").decode("unicode_escape")
    if term.startswith("`"):
        return term[1:-1]
    if _NUMBER.match(term):
        return float(term) if any(c in term for c in ".eE") else int(term)
    raise TemplateError(f"unknown term {term}")


def _format(value: Any) -> str:
    """As Go's fmt %v prints it: true/false, 2.0 as 2, shortest float otherwise."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    return str(value)


def render_text(text: str, env: Mapping[str, Any]) -> str:
    """`text` with every action replaced by its value in `env`."""
    out: list[str] = []
    pos = 0
    for m in _ACTION.finditer(text):
        before = text[pos : m.start()]
        if m.group(1):
            before = before.rstrip()
        out.append(before)
        terms, _ = _parse(_tokens(m.group(2)), 0, None)
        out.append(_format(_eval(terms, env)))
        pos = m.end()
        if m.group(3):
            while pos < len(text) and text[pos].isspace():
                pos += 1
    out.append(text[pos:])
    return "".join(out)


def validate_text(text: str) -> None:
    """Raise TemplateError if `text` uses template syntax the renderer does not implement."""
    for m in _ACTION.finditer(text):
        expr = m.group(2)
        if expr.strip().startswith("/*"):
            raise UnsupportedTemplate("template comments are not supported")
        terms, _ = _parse(_tokens(expr), 0, None)
        _check(terms, expr)


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
        env = {**(params or {}), "Index": index, "Count": count}
        return decode(render_text(self.text, env), self.source)


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
    env = {**(params or {}), "Index": 0, "Count": 1}
    try:
        data = decode(render_text(text, env) if "{{" in text else text, source)
    except MissingValue:
        data = {}  # uses template params: previewed once they are known (config.plan)
    return Template(path=path, source=source, text=text, data=data)
