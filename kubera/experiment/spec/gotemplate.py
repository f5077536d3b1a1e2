"""Go's text/template, the part scheduler_perf's object templates use, parsed once and run per
object (issue 28).

    text {{ pipeline }} text          an action prints its value (Go's %v)
    {{- … -}}                         trim the white space before / after (space, \\t, \\r, \\n)
    {{/* … */}}                       a comment
    {{if p}} … {{else if q}} … {{else}} … {{end}}
    {{range p}} … {{else}} … {{end}}   over an int (0…n-1, Go 1.22), a list or a map (sorted
                                      keys); `.` is each element; {{range $v := p}} names it
    {{$x := p}}  {{$x = p}}           variables, scoped to the enclosing block; `$` is the data
    pipeline = command ('|' command)*   a command's value is the next one's last argument
    command  = operand+                 a function and its arguments, or one value
    operand  = .Name.Name | . | $x | $ | "s" | `s` | 'c' | 12 | 0x1f | 1.5 | true | false
               | nil | (pipeline) | function

Values are Go's as encoding/json gives them: bool, int, float (float64), str, list, dict and
None (nil). `if` is true for a non-zero number, true, a non-empty string/list/dict; false for
nil and a key the data does not have. The builtins are Go's: `and`/`or` (short-circuit,
returning an operand), `not`, `eq` (a == b || a == c …), `ne`, `lt`, `le`, `gt`, `ge` (same
basic kind only: an int and a float do not compare, as in Go); a function map (upstream's,
in templates.py) adds the rest, and overrides a builtin of the same name as Go's FuncMap.

Where kubera differs on purpose: printing a key the data does not have fails (Go prints
`<no value>`), so a template param nobody gives stops the experiment at load. Not
implemented (UnsupportedTemplate: the test case using it is left out): `with`,
`define`/`template`/`block`, `break`/`continue`, `range $i, $e := …` (two variables),
fields of a parenthesised value, complex numbers. Upstream's scheduler_perf executes templates with html/template, which
escapes `<>&'"` in printed values; kubera prints them as they are.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any


class TemplateError(ValueError):
    """A template that does not parse, render or decode; the message says why."""


class UnsupportedTemplate(TemplateError):
    """Valid Go template syntax the renderer does not implement (`with`, `define`, comments
    in the middle of an action): the test case using it is left out, not the whole file."""


class MissingValue(TemplateError):
    """A `.Name` the data does not define, printed or given to a function."""


class _Missing:
    """Go's invalid reflect.Value: a map key that is not there."""

    def __repr__(self) -> str:
        return "<no value>"


MISSING: Any = _Missing()
#: No value piped into a command yet; also "the dot" as a field chain's start.
_NOFINAL: Any = object()

_UNSUPPORTED = {"with", "define", "template", "block", "break", "continue"}
_SPACE = " \t\r\n"

# ---------------------------------------------------------------------------------------------
# lexing


@dataclass(frozen=True)
class _Tok:
    kind: str  # field dot str num bool nil ident pipe lparen rparen
    text: str
    value: Any = None


_TOKEN = re.compile(
    r"""(?P<str>"(?:[^"\\\n]|\\.)*")
      | (?P<raw>`[^`]*`)
      | (?P<char>'(?:[^'\\\n]|\\.[^']*)')
      | (?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)
      | (?P<dot>\.)(?![0-9])
      | (?P<num>[+-]?(?:0[xX][0-9a-fA-F_.]+(?:[pP][+-]?[0-9_]+)?|0[bB][01_]+|0[oO][0-7_]+|[0-9_]*\.?[0-9_]+(?:[eE][+-]?[0-9_]+)?)i?)
      | (?P<var>\$[A-Za-z0-9_]*)
      | (?P<decl>:?=)
      | (?P<ident>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<pipe>\|)
      | (?P<lparen>\()
      | (?P<rparen>\))
    """,
    re.X,
)
_FIELDS = re.compile(r"(?:\.[A-Za-z_][A-Za-z0-9_]*)+")
_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|[0-7]{3}|.)", re.S)
_SIMPLE_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    '"': '"',
    "'": "'",
}


def _unquote(body: str) -> str:
    """Go's strconv.Unquote of a quoted body."""

    def one(m: re.Match[str]) -> str:
        esc = m.group(0)[1:]
        if esc[0] in "xuU":
            return chr(int(esc[1:], 16))
        if esc[0] in "01234567":
            return chr(int(esc, 8))
        if esc in _SIMPLE_ESCAPES:
            return _SIMPLE_ESCAPES[esc]
        raise TemplateError(f"invalid escape \\{esc} in a string")

    return _ESCAPE.sub(one, body)


def _number(text: str) -> int | float:
    """A Go number literal (underscores, 0x/0o/0b, leading-0 octal, hex floats)."""
    if text.endswith("i"):
        raise UnsupportedTemplate(f"complex numbers are not supported: {text}")
    t = text.replace("_", "")
    sign = -1 if t.startswith("-") else 1
    t = t.lstrip("+-")
    try:
        if t[:2].lower() == "0x" and any(c in t for c in ".pP"):
            return sign * float.fromhex(t)
        if t[:2].lower() in ("0x", "0o", "0b"):
            return sign * int(t, 0)
        if re.fullmatch(r"0[0-7]+", t):
            return sign * int(t, 8)
        if re.fullmatch(r"[0-9]+", t):
            return sign * int(t)
        return sign * float(t)
    except ValueError:
        raise TemplateError(f"bad number syntax: {text!r}") from None


def _lex_action(body: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while True:
        while pos < len(body) and body[pos] in _SPACE:
            pos += 1
        if pos >= len(body):
            return out
        m = _TOKEN.match(body, pos)
        if m is None:
            raise TemplateError(f"unexpected {body[pos]!r} in {{{{{body.strip()}}}}}")
        kind, text = m.lastgroup or "", m.group(0)
        pos = m.end()
        if kind == "var":
            chain = _FIELDS.match(body, pos)
            if chain is not None:  # $x.a.b: fields of a variable's value
                out.append(_Tok("var", text + chain.group(0)))
                pos = chain.end()
                continue
        if kind == "field" and out and out[-1].kind == "rparen" and body[m.start() - 1] == ")":
            raise UnsupportedTemplate(f"fields of a parenthesised value: {{{{{body.strip()}}}}}")
        if kind == "str":
            out.append(_Tok("str", text, _unquote(text[1:-1])))
        elif kind == "raw":
            out.append(_Tok("str", text, text[1:-1]))
        elif kind == "char":
            value = _unquote(text[1:-1])
            if len(value) != 1:
                raise TemplateError(f"malformed character constant: {text}")
            out.append(_Tok("num", text, ord(value)))
        elif kind == "num":
            out.append(_Tok("num", text, _number(text)))
        elif kind == "ident" and text in ("true", "false"):
            out.append(_Tok("bool", text, text == "true"))
        elif kind == "ident" and text == "nil":
            out.append(_Tok("nil", text))
        else:
            out.append(_Tok(kind, text))


# ---------------------------------------------------------------------------------------------
# parsing


@dataclass
class _Cmd:
    """One command: its operands (a _Tok, or a list of _Cmd for a parenthesised pipeline)."""

    args: list[Any]


@dataclass
class _If:
    cond: list[_Cmd]
    then: list[Any] = field(default_factory=list)
    orelse: list[Any] = field(default_factory=list)


@dataclass
class _Range:
    pipe: list[_Cmd]
    var: str = ""  # {{range $v := p}}: the element's variable
    then: list[Any] = field(default_factory=list)
    orelse: list[Any] = field(default_factory=list)


@dataclass
class _Action:
    pipe: list[_Cmd]


@dataclass
class _Assign:
    """{{$x := p}} (declare) or {{$x = p}} (assign an existing variable); prints nothing."""

    var: str
    declare: bool
    pipe: list[_Cmd]


def _split_actions(text: str) -> list[tuple[str, str]]:
    """Text → [("text", s) | ("action", body)], trim markers applied."""
    out: list[tuple[str, str]] = []
    pos = 0
    while True:
        start = text.find("{{", pos)
        if start < 0:
            out.append(("text", text[pos:]))
            return out
        before = text[pos:start]
        inner = start + 2
        if text[inner : inner + 1] == "-" and text[inner + 1 : inner + 2] in tuple(_SPACE):
            before = before.rstrip(_SPACE)
            inner += 1
        out.append(("text", before))
        end, trim_after = _find_close(text, inner)
        out.append(("action", text[inner:end]))
        pos = end + (4 if trim_after else 2)
        if trim_after:
            pos += len(text[pos:]) - len(text[pos:].lstrip(_SPACE))


def _find_close(text: str, pos: int) -> tuple[int, bool]:
    """Where the action opened before `pos` ends (quotes and comments skipped)."""
    i = pos
    while i < len(text):
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                raise TemplateError("unclosed comment")
            i = j + 2
            continue
        if c in "\"'`":
            j = i + 1
            while j < len(text) and text[j] != c:
                if c != "`" and text[j] == "\\":
                    j += 1
                elif c != "`" and text[j] == "\n":
                    raise TemplateError("unterminated quoted string")
                j += 1
            if j >= len(text):
                raise TemplateError("unterminated quoted string")
            i = j + 1
            continue
        if c in _SPACE and text.startswith("-}}", i + 1):
            return i, True
        if text.startswith("}}", i):
            return i, False
        i += 1
    raise TemplateError("unclosed action")


def _parse_pipeline(toks: list[_Tok], pos: int, funcs: Mapping[str, Any]) -> tuple[list[_Cmd], int]:
    cmds: list[_Cmd] = []
    cmd = _Cmd([])
    while pos < len(toks):
        tok = toks[pos]
        if tok.kind == "rparen":
            break
        pos += 1
        if tok.kind == "pipe":
            if not cmd.args:
                raise TemplateError("missing command before '|'")
            cmds.append(cmd)
            cmd = _Cmd([])
        elif tok.kind == "lparen":
            sub, pos = _parse_pipeline(toks, pos, funcs)
            if pos >= len(toks) or toks[pos].kind != "rparen":
                raise TemplateError("unclosed left paren")
            if not sub:
                raise TemplateError("missing value in parentheses")
            pos += 1
            cmd.args.append(sub)
        elif tok.kind == "decl":
            raise TemplateError(f"unexpected {tok.text!r} in a command")
        elif tok.kind == "ident":
            if tok.text in _UNSUPPORTED or tok.text in ("if", "range", "else", "end"):
                raise TemplateError(f"unexpected keyword {tok.text!r} in a command")
            if tok.text not in funcs:
                raise UnsupportedTemplate(f'function "{tok.text}" not defined')
            cmd.args.append(tok)
        else:
            cmd.args.append(tok)
    if cmd.args:
        cmds.append(cmd)
    elif cmds:
        raise TemplateError("missing command after '|'")
    for i, c in enumerate(cmds[1:], 1):
        if not isinstance(c.args[0], _Tok) or c.args[0].kind in ("str", "num", "bool", "nil"):
            raise TemplateError(f"non executable command in pipeline stage {i + 1}")
    return cmds, pos


def _condition(toks: list[_Tok], funcs: Mapping[str, Any], what: str) -> list[_Cmd]:
    pipe, pos = _parse_pipeline(toks, 0, funcs)
    if pos < len(toks):
        raise TemplateError("unexpected right paren")
    if not pipe:
        raise TemplateError(f"missing value for {what}")
    return pipe


def parse(text: str, funcs: Mapping[str, Callable[..., Any]]) -> list[Any]:
    """Text → its node list; TemplateError (or UnsupportedTemplate) on a bad template."""
    funcs = function_names(funcs)
    root: list[Any] = []
    # The node lists being filled, innermost last, each with the {{if}} it belongs to. An
    # {{else if p}} replaces its {{if}}'s frame by its own: one {{end}} closes the chain.
    stack: list[tuple[list[Any], _If | _Range | None]] = [(root, None)]
    for kind, chunk in _split_actions(text):
        body, nodes = chunk.strip(_SPACE), stack[-1][0]
        if kind == "text":
            if chunk:
                nodes.append(chunk)
            continue
        if body.startswith("/*"):
            if not body.endswith("*/"):
                raise UnsupportedTemplate("a comment must be the whole action")
            continue
        if re.match(r"range\s+\$\w*\s*,", body):
            raise UnsupportedTemplate(f"{{{{{body}}}}}: two range variables are not supported")
        toks = _lex_action(chunk)
        head = toks[0].text if toks and toks[0].kind == "ident" else ""
        if head in _UNSUPPORTED:
            raise UnsupportedTemplate(f"{{{{{head}}}}} is not supported")
        if head == "if":
            node = _If(_condition(toks[1:], funcs, "if"))
            nodes.append(node)
            stack.append((node.then, node))
        elif head == "range":
            var, rest = "", toks[1:]
            if len(rest) > 1 and rest[0].kind == "var" and rest[1].kind == "decl":
                if rest[1].text != ":=":
                    raise TemplateError("range can only initialize variables")
                var, rest = rest[0].text, rest[2:]
            loop = _Range(_condition(rest, funcs, "range"), var)
            nodes.append(loop)
            stack.append((loop.then, loop))
        elif len(toks) > 1 and toks[0].kind == "var" and toks[1].kind == "decl":
            if toks[0].text == "$":
                raise TemplateError("cannot assign to $")
            nodes.append(
                _Assign(toks[0].text, toks[1].text == ":=", _condition(toks[2:], funcs, "="))
            )
        elif head in ("else", "end"):
            if head == "else" and len(stack) == 1:
                raise TemplateError("unexpected {{else}}")
            frame, owner = stack.pop()
            if owner is None:
                raise TemplateError(f"unexpected {{{{{head}}}}}")
            if head == "end":
                if len(toks) > 1:
                    raise TemplateError("unexpected token after {{end}}")
                continue
            if frame is owner.orelse:
                raise TemplateError("expected {{end}}, found a second {{else}}")
            if len(toks) == 1:
                stack.append((owner.orelse, owner))
            elif isinstance(owner, _If) and toks[1].kind == "ident" and toks[1].text == "if":
                inner = _If(_condition(toks[2:], funcs, "else if"))
                owner.orelse.append(inner)
                stack.append((inner.then, inner))
            else:
                raise UnsupportedTemplate(f"{{{{{body}}}}} is not supported")
        else:
            nodes.append(_Action(_condition(toks, funcs, "command")))
    if len(stack) > 1:
        raise TemplateError("unexpected EOF: an {{if}} or {{range}} has no {{end}}")
    return root


# ---------------------------------------------------------------------------------------------
# executing


def truth(value: Any) -> bool:
    """Go's isTrue: the zero value of its type and nil are false."""
    if value is MISSING or value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | dict | tuple):
        return len(value) > 0
    return True


def _kind(value: Any) -> str:
    """Go's basicKind for the values templates see; "" for nil, lists and maps."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return ""


_BAD_TYPE = "invalid type for comparison"
_INCOMPATIBLE = "incompatible types for comparison"


def _eq(arg1: Any, *rest: Any) -> bool:
    if not rest:
        raise TemplateError("error calling eq: missing argument for comparison")
    k1 = _kind(arg1)
    nil1 = arg1 is None or arg1 is MISSING
    for arg in rest:
        k2, nil2 = _kind(arg), arg is None or arg is MISSING
        if k1 != k2:
            if not nil1 and not nil2:
                raise TemplateError(f"error calling eq: {_INCOMPATIBLE}")
            continue  # nil against a value: not equal
        if k1:
            if arg1 == arg:
                return True
        elif nil1 or nil2:
            if nil1 and nil2:
                return True
        else:
            raise TemplateError(f"error calling eq: non-comparable type {type(arg).__name__}")
    return False


def _lt(a: Any, b: Any, name: str = "lt") -> bool:
    ka, kb = _kind(a), _kind(b)
    if not ka or not kb:
        raise TemplateError(f"error calling {name}: {_BAD_TYPE}")
    if ka != kb:
        raise TemplateError(f"error calling {name}: {_INCOMPATIBLE}")
    if ka == "bool":
        raise TemplateError(f"error calling {name}: {_BAD_TYPE}")
    return bool(a < b)


def _le(a: Any, b: Any) -> bool:
    return _lt(a, b, "le") or _eq(a, b)


#: Go's builtins that are plain functions (and/or are evaluated lazily by the executor).
BUILTINS: dict[str, Callable[..., Any]] = {
    "not": lambda a: not truth(a),
    "eq": _eq,
    "ne": lambda a, b: not _eq(a, b),
    "lt": _lt,
    "le": _le,
    "gt": lambda a, b: not _le(a, b),
    "ge": lambda a, b: not _lt(a, b, "ge"),
}
_ARITY = {"not": 1, "ne": 2, "lt": 2, "le": 2, "gt": 2, "ge": 2}
_LAZY = ("and", "or")


def format_value(value: Any) -> str:
    """As Go's fmt %v prints it: true/false, 2.0 as 2, [a b], map[k:v] (sorted keys)."""
    if value is MISSING:
        return "<no value>"
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + " ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: str(kv[0]))
        return "map[" + " ".join(f"{format_value(k)}:{format_value(v)}" for k, v in items) + "]"
    return str(value)


def _elements(value: Any) -> list[Any]:
    """What {{range}} visits (Go's walkRange): 0…n-1 of an int, a list's items, a map's
    values by sorted key; nothing for nil or a missing key."""
    if value is MISSING or value is None:
        return []
    if isinstance(value, bool) or not isinstance(value, int | list | tuple | dict):
        raise TemplateError(f"range can't iterate over {format_value(value)}")
    if isinstance(value, int):
        return list(range(max(value, 0)))
    if isinstance(value, dict):
        return [value[k] for k in sorted(value, key=str)]
    return list(value)


@dataclass
class _Exec:
    funcs: Mapping[str, Callable[..., Any]]
    data: Any
    #: Variable scopes, innermost last; the outermost holds `$` (the data).
    scopes: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.scopes = [{"$": self.data}]

    def run(self, nodes: list[Any], out: list[str]) -> None:
        for node in nodes:
            if isinstance(node, str):
                out.append(node)
            elif isinstance(node, _If):
                value = self.pipeline(node.cond)
                self.block(node.then if truth(value) else node.orelse, self.data, out)
            elif isinstance(node, _Range):
                items = _elements(self.pipeline(node.pipe))
                for item in items:
                    self.block(node.then, item, out, {node.var: item} if node.var else {})
                if not items:
                    self.block(node.orelse, self.data, out)
            elif isinstance(node, _Assign):
                self.assign(node)
            else:
                value = self.pipeline(node.pipe)
                if value is MISSING:
                    raise MissingValue(f"no value for {_describe(node.pipe)}")
                out.append(format_value(value))

    def block(
        self, nodes: list[Any], dot: Any, out: list[str], names: dict[str, Any] | None = None
    ) -> None:
        """Run `nodes` with `.` = dot in a scope of their own (Go pops the variables a block
        declared at its end)."""
        saved = self.data
        self.data = dot
        self.scopes.append(dict(names or {}))
        try:
            self.run(nodes, out)
        finally:
            self.scopes.pop()
            self.data = saved

    def assign(self, node: _Assign) -> None:
        value = self.pipeline(node.pipe)
        if node.declare:
            self.scopes[-1][node.var] = value
            return
        for scope in reversed(self.scopes):
            if node.var in scope:
                scope[node.var] = value
                return
        raise TemplateError(f"undefined variable: {node.var}")

    def variable(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        raise TemplateError(f"undefined variable: {name}")

    def pipeline(self, pipe: list[_Cmd]) -> Any:
        value: Any = _NOFINAL
        for cmd in pipe:
            value = self.command(cmd, value)
        return value

    def command(self, cmd: _Cmd, final: Any) -> Any:
        first, args = cmd.args[0], cmd.args[1:]
        if isinstance(first, _Tok) and first.kind == "ident":
            return self.call(first.text, args, final)
        if args or final is not _NOFINAL:
            raise TemplateError(f"can't give argument to non-function {_text(first)}")
        if isinstance(first, _Tok) and first.kind == "nil":
            raise TemplateError("nil is not a command")
        return self.operand(first)

    def operand(self, arg: Any) -> Any:
        if isinstance(arg, list):
            return self.pipeline(arg)
        if arg.kind == "ident":
            return self.call(arg.text, [], _NOFINAL)
        if arg.kind == "dot":
            return self.data
        if arg.kind == "var":
            name, dot, chain = arg.text.partition(".")
            value = self.variable(name)
            return self.field("." + chain, value) if dot else value
        if arg.kind == "field":
            return self.field(arg.text)
        if arg.kind == "nil":
            return None
        return arg.value

    def field(self, chain: str, start: Any = _NOFINAL) -> Any:
        """`.a.b` of the dot (or of `start`, a variable's value)."""
        value = self.data if start is _NOFINAL else start
        for name in chain[1:].split("."):
            if value is MISSING or value is None:
                return MISSING  # Go: a field of a missing key is missing too
            if not isinstance(value, Mapping):
                raise TemplateError(
                    f"can't evaluate field {name} in type {type(value).__name__} ({chain})"
                )
            value = value.get(name, MISSING)
        return value

    def call(self, name: str, args: list[Any], final: Any) -> Any:
        n = len(args) + (final is not _NOFINAL)
        if name in _LAZY and name not in self.funcs:
            if n == 0:
                raise TemplateError(f"wrong number of args for {name}: want at least 1 got 0")
            value: Any = MISSING
            for arg in args:
                value = self.operand(arg)
                if truth(value) == (name == "or"):
                    return value
            return final if final is not _NOFINAL else value
        builtin = name not in self.funcs  # a FuncMap entry overrides a builtin, as in Go
        want = _ARITY.get(name) if builtin else None
        if want is not None and n != want:
            raise TemplateError(f"wrong number of args for {name}: want {want} got {n}")
        values = [self.operand(a) for a in args]
        if final is not _NOFINAL:
            values.append(final)
        fn = BUILTINS[name] if builtin else self.funcs[name]
        if not builtin and any(v is MISSING for v in values):
            raise MissingValue(f"no value for an argument of {name}")
        try:
            return fn(*values)
        except TemplateError:
            raise
        except (TypeError, ValueError, ArithmeticError) as e:
            raise TemplateError(f"error calling {name}: {e}") from None


def _text(arg: Any) -> str:
    return "(…)" if isinstance(arg, list) else str(arg.text)


def _describe(pipe: list[_Cmd]) -> str:
    return " | ".join(" ".join(_text(a) for a in cmd.args) for cmd in pipe)


def execute(nodes: list[Any], data: Any, funcs: Mapping[str, Callable[..., Any]]) -> str:
    """Run parsed `nodes` on `data` (a mapping, usually): the text they print."""
    out: list[str] = []
    _Exec(funcs, data).run(nodes, out)
    return "".join(out)


def function_names(funcs: Mapping[str, Any]) -> dict[str, Any]:
    """`funcs` with Go's builtins: what parse() accepts as a function name."""
    return {**{name: None for name in (*BUILTINS, *_LAZY)}, **funcs}
