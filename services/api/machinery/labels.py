"""Label selectors, with Kubernetes semantics (apimachinery's ``pkg/labels``).

Label selectors decide which pods a Deployment, Service or PDB owns, and
``kubectl get -l`` / ``?labelSelector=`` filter lists with them. They must parse,
validate, match and print exactly like apimachinery's ``pkg/labels`` so that
kubectl-style clients and controllers behave the same against kubera. Field
selectors (``pkg/fields``) are in ``fields``, which shares this module's operators
and :class:`SelectorError`.

Error messages reuse upstream's wording; label-selector parse errors also say
at which character offset the offending token starts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from services.api.machinery.names import label_value, qualified_name

# Canonical operator spellings (selection.Operator values, except Gt/Lt which
# use the NodeSelector spelling).
EQUALS: Final = "="
DOUBLE_EQUALS: Final = "=="
NOT_EQUALS: Final = "!="
IN: Final = "in"
NOT_IN: Final = "notin"
EXISTS: Final = "exists"
DOES_NOT_EXIST: Final = "!"
GREATER_THAN: Final = "Gt"
LESS_THAN: Final = "Lt"

_OPERATOR_ALIASES: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
    "gt": GREATER_THAN,
    "lt": LESS_THAN,
}
_OPERATORS: Final = frozenset(
    {EQUALS, DOUBLE_EQUALS, NOT_EQUALS, IN, NOT_IN, EXISTS, DOES_NOT_EXIST, GREATER_THAN, LESS_THAN}
)
# validRequirementOperators, in upstream's order and spelling.
_VALID_OPERATOR_NAMES: Final = ("in", "notin", "=", "==", "!=", "gt", "lt", "exists", "!")
_BINARY_OPERATOR_NAMES: Final = ", ".join(_VALID_OPERATOR_NAMES[:7])

# metav1.LabelSelectorOperator -> requirement operator.
_LABEL_SELECTOR_OPERATORS: Final = {
    "In": IN,
    "NotIn": NOT_IN,
    "Exists": EXISTS,
    "DoesNotExist": DOES_NOT_EXIST,
}

_MIN_INT64: Final = -(2**63)
_MAX_INT64: Final = 2**63 - 1


class SelectorError(ValueError):
    """A label or field selector (or one of its requirements) is invalid.

    ``errors`` holds the individual messages; ``str()`` aggregates them the
    way apimachinery's ``utilerrors.Aggregate`` does.  ``position`` is the
    character offset of the offending token for parse errors, else None.
    """

    def __init__(
        self, message: str, errors: Sequence[str] = (), position: int | None = None
    ) -> None:
        super().__init__(message)
        self.errors: tuple[str, ...] = tuple(errors) or (message,)
        self.position = position

    @classmethod
    def aggregate(cls, errors: Sequence[str]) -> SelectorError:
        return cls(_aggregate(errors), errors)


def _aggregate(errors: Sequence[str]) -> str:
    """utilerrors.Aggregate.Error(): one message as is, several deduplicated in brackets."""
    unique = list(dict.fromkeys(errors))
    if len(unique) == 1:
        return unique[0]
    return "[" + ", ".join(unique) + "]"


def _go_quote(s: str) -> str:
    """Go's %q for a string."""
    out = ['"']
    escapes = {'"': '\\"', "\\": "\\\\", "\a": "\\a", "\b": "\\b", "\f": "\\f"}
    escapes |= {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
    for ch in s:
        if ch in escapes:
            out.append(escapes[ch])
        elif ch.isprintable():
            out.append(ch)
        elif ord(ch) < 0x80:
            out.append(f"\\x{ord(ch):02x}")
        elif ord(ch) <= 0xFFFF:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(f"\\U{ord(ch):08x}")
    out.append('"')
    return "".join(out)


def _go_string_slice(values: Sequence[str]) -> str:
    """Go's %#v for a []string."""
    return "[]string{" + ", ".join(_go_quote(v) for v in values) + "}"


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _invalid(path: str, value: str, detail: str) -> str:
    """field.Invalid(...).Error() for a string-ish value (already formatted)."""
    return f"{path}: Invalid value: {value}: {detail}"


def parse_int64(text: str) -> int | None:
    """strconv.ParseInt(text, 10, 64)."""
    body = text[1:] if text[:1] in ("+", "-") else text
    if not body or not body.isascii() or not body.isdigit():
        return None
    digits = body.lstrip("0")
    if len(digits) > 19:  # beyond int64 (and int() refuses past 4300 digits)
        return None
    n = int(digits or "0")
    n = -n if text[0] == "-" else n
    return n if _MIN_INT64 <= n <= _MAX_INT64 else None


def _requirement_errors(key: str, op: str, values: Sequence[str], path: str = "") -> list[str]:
    """NewRequirement's checks, with its messages."""
    errs: list[str] = []
    key_errs = qualified_name(key)
    if key_errs:
        errs.append(_invalid(_child(path, "key"), _go_quote(key), "; ".join(key_errs)))

    values_path = _child(path, "values")
    if op in (IN, NOT_IN):
        if not values:
            errs.append(
                _invalid(
                    values_path,
                    _go_string_slice(values),
                    "for 'in', 'notin' operators, values set can't be empty",
                )
            )
    elif op in (EQUALS, DOUBLE_EQUALS, NOT_EQUALS):
        if len(values) != 1:
            errs.append(
                _invalid(
                    values_path,
                    _go_string_slice(values),
                    "exact-match compatibility requires one single value",
                )
            )
    elif op in (EXISTS, DOES_NOT_EXIST):
        if values:
            errs.append(
                _invalid(
                    values_path,
                    _go_string_slice(values),
                    "values set must be empty for exists and does not exist",
                )
            )
    elif op in (GREATER_THAN, LESS_THAN):
        if len(values) != 1:
            errs.append(
                _invalid(
                    values_path,
                    _go_string_slice(values),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                )
            )
        for i, v in enumerate(values):
            if parse_int64(v) is None:
                errs.append(
                    _invalid(
                        f"{values_path}[{i}]",
                        _go_quote(v),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    )
                )
    else:
        supported = ", ".join(_go_quote(o) for o in _VALID_OPERATOR_NAMES)
        errs.append(
            f"{_child(path, 'operator')}: Unsupported value: {_go_quote(op)}: "
            f"supported values: {supported}"
        )

    for i, v in enumerate(values):
        value_errs = label_value(v)
        if value_errs:
            errs.append(_invalid(f"{values_path}[{i}][{key}]", _go_quote(v), "; ".join(value_errs)))
    return errs


@dataclass(frozen=True)
class Requirement:
    """One ``key <operator> values`` condition of a label selector.

    ``operator`` is stored canonically: the matchExpressions spellings
    ``In``/``NotIn``/``Exists``/``DoesNotExist`` become ``in``/``notin``/
    ``exists``/``!``.  ``in``/``notin`` values are kept sorted and unique (a
    set, as upstream).  Construction validates like NewRequirement and raises
    :class:`SelectorError`.
    """

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        op = _OPERATOR_ALIASES.get(self.operator, self.operator)
        values = (self.values,) if isinstance(self.values, str) else tuple(self.values)
        errs = _requirement_errors(self.key, op, values)
        if errs:
            raise SelectorError.aggregate(errs)
        if op in (IN, NOT_IN):
            values = tuple(sorted(set(values)))
        object.__setattr__(self, "operator", op)
        object.__setattr__(self, "values", values)

    def matches(self, labels: Mapping[str, str]) -> bool:
        op = self.operator
        if op in (IN, EQUALS, DOUBLE_EQUALS):
            return self.key in labels and labels[self.key] in self.values
        if op in (NOT_IN, NOT_EQUALS):
            return self.key not in labels or labels[self.key] not in self.values
        if op == EXISTS:
            return self.key in labels
        if op == DOES_NOT_EXIST:
            return self.key not in labels
        if op in (GREATER_THAN, LESS_THAN):
            if self.key not in labels or len(self.values) != 1:
                return False
            have = parse_int64(labels[self.key])
            want = parse_int64(self.values[0])
            if have is None or want is None:
                return False
            return have > want if op == GREATER_THAN else have < want
        return False

    def __str__(self) -> str:
        op = self.operator
        if op == EXISTS:
            return self.key
        if op == DOES_NOT_EXIST:
            return "!" + self.key
        joined = ",".join(sorted(self.values))
        if op in (IN, NOT_IN):
            return f"{self.key} {op} ({joined})"
        symbol = {GREATER_THAN: ">", LESS_THAN: "<"}.get(op, op)
        return f"{self.key}{symbol}{joined}"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements, kept sorted by key; empty matches everything."""

    requirements: tuple[Requirement, ...] = ()

    def __post_init__(self) -> None:
        ordered = tuple(sorted(self.requirements, key=lambda r: r.key))
        object.__setattr__(self, "requirements", ordered)

    @classmethod
    def everything(cls) -> Selector:
        return cls()

    @classmethod
    def parse(cls, text: str) -> Selector:
        """Parse kubectl ``-l`` syntax, e.g. ``app=web,tier in (a,b),!canary``."""
        return cls(tuple(_Parser(text).parse()))

    @classmethod
    def from_set(cls, labels: Mapping[str, str]) -> Selector:
        """Exact match on every key/value of ``labels`` (ValidatedSelectorFromSet)."""
        return cls(tuple(Requirement(k, EQUALS, (v,)) for k, v in labels.items()))

    def is_empty(self) -> bool:
        return not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.requirements)

    def requires_exact_match(self, label: str) -> str | None:
        """The single value ``label`` must have, if the selector pins one (RequiresExactMatch)."""
        for r in self.requirements:
            if r.key == label:
                if r.operator in (EQUALS, DOUBLE_EQUALS, IN) and len(r.values) == 1:
                    return r.values[0]
                return None
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)


# --- kubectl -l parser (a port of pkg/labels' lexer and recursive descent) ---

_ERROR, _EOS, _CLOSE, _COMMA, _NOT, _DEQ, _EQ, _GT, _IDENT, _IN, _LT, _NEQ, _NOTIN, _OPEN = range(
    14
)
_SYMBOL_TOKENS: Final = {
    ")": _CLOSE,
    ",": _COMMA,
    "!": _NOT,
    "==": _DEQ,
    "=": _EQ,
    ">": _GT,
    "<": _LT,
    "!=": _NEQ,
    "(": _OPEN,
}
_KEYWORDS: Final = {"in": _IN, "notin": _NOTIN}
_SPECIAL: Final = frozenset("=!(),><")
_WHITESPACE: Final = frozenset(" \t\r\n")


@dataclass(frozen=True)
class _Token:
    kind: int
    literal: str
    position: int


def _lex(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    pos, end = 0, len(text)
    while True:
        while pos < end and text[pos] in _WHITESPACE:
            pos += 1
        if pos >= end:
            tokens.append(_Token(_EOS, "", pos))
            return tokens
        start = pos
        if text[pos] in _SPECIAL:
            # Longest run of special symbols that still forms a known token.
            best: tuple[int, int] | None = None
            while pos < end and text[pos] in _SPECIAL:
                candidate = text[start : pos + 1]
                if candidate in _SYMBOL_TOKENS:
                    best = (_SYMBOL_TOKENS[candidate], pos + 1)
                elif best is not None:
                    break
                pos += 1
            if best is None:
                literal = f"error expected: keyword found '{text[start:pos]}'"
                tokens.append(_Token(_ERROR, literal, start))
            else:
                kind, pos = best
                tokens.append(_Token(kind, text[start:pos], start))
        else:
            while pos < end and text[pos] not in _SPECIAL and text[pos] not in _WHITESPACE:
                pos += 1
            word = text[start:pos]
            tokens.append(_Token(_KEYWORDS.get(word, _IDENT), word, start))


class _Parser:
    """Recursive descent over the token list; ``values`` context turns in/notin into identifiers."""

    def __init__(self, text: str) -> None:
        self.tokens = _lex(text)
        self.index = 0

    def _peek(self, values: bool = True) -> _Token:
        tok = self.tokens[self.index]
        if values and tok.kind in (_IN, _NOTIN):
            return _Token(_IDENT, tok.literal, tok.position)
        return tok

    def _next(self, values: bool = True) -> _Token:
        tok = self._peek(values)
        self.index += 1
        return tok

    @staticmethod
    def _fail(tok: _Token, message: str, wrap: bool = True) -> SelectorError:
        if wrap:
            message = f"unable to parse requirement: {message}"
        return SelectorError(f"{message} (at position {tok.position})", position=tok.position)

    def parse(self) -> list[Requirement]:
        requirements: list[Requirement] = []
        while True:
            tok = self._peek()
            if tok.kind == _EOS:
                return requirements
            if tok.kind not in (_IDENT, _NOT):
                raise self._fail(
                    tok,
                    f"found '{tok.literal}', expected: !, identifier, or 'end of string'",
                    wrap=False,
                )
            requirements.append(self._requirement())
            tok = self._next()
            if tok.kind == _EOS:
                return requirements
            if tok.kind != _COMMA:
                raise self._fail(
                    tok, f"found '{tok.literal}', expected: ',' or 'end of string'", wrap=False
                )
            after = self._peek()
            if after.kind not in (_IDENT, _NOT):
                raise self._fail(
                    after, f"found '{after.literal}', expected: identifier after ','", wrap=False
                )

    def _requirement(self) -> Requirement:
        start = self._peek()
        op = ""
        tok = self._next()
        if tok.kind == _NOT:
            op = DOES_NOT_EXIST
            tok = self._next()
        if tok.kind != _IDENT:
            raise self._fail(tok, f"found '{tok.literal}', expected: identifier")
        key = tok.literal
        key_errs = qualified_name(key)
        if key_errs:
            detail = _invalid("key", _go_quote(key), "; ".join(key_errs))
            raise self._fail(tok, detail)
        # "!key" is complete by itself; whatever follows is the caller's problem.
        if op == DOES_NOT_EXIST or self._peek().kind in (_EOS, _COMMA):
            return self._build(start, key, op or EXISTS, ())

        op_tok = self._next(values=False)
        op = {
            _IN: IN,
            _NOTIN: NOT_IN,
            _EQ: EQUALS,
            _DEQ: DOUBLE_EQUALS,
            _NEQ: NOT_EQUALS,
            _GT: GREATER_THAN,
            _LT: LESS_THAN,
        }.get(op_tok.kind, "")
        if not op:
            raise self._fail(
                op_tok, f"found '{op_tok.literal}', expected: {_BINARY_OPERATOR_NAMES}"
            )
        values = self._set_values() if op in (IN, NOT_IN) else self._exact_value()
        return self._build(start, key, op, tuple(sorted(values)))

    def _build(self, start: _Token, key: str, op: str, values: tuple[str, ...]) -> Requirement:
        try:
            return Requirement(key, op, values)
        except SelectorError as exc:
            raise self._fail(start, str(exc)) from None

    def _set_values(self) -> set[str]:
        tok = self._next()
        if tok.kind != _OPEN:
            raise self._fail(tok, f"found '{tok.literal}' expected: '('")
        tok = self._peek()
        if tok.kind == _CLOSE:  # "()" means the single empty value
            self._next()
            return {""}
        if tok.kind not in (_IDENT, _COMMA):
            raise self._fail(tok, f"found '{tok.literal}', expected: ',', ')' or identifier")
        values: set[str] = set()
        while True:
            tok = self._next()
            if tok.kind == _IDENT:
                values.add(tok.literal)
                after = self._peek()
                if after.kind == _CLOSE:
                    self._next()
                    return values
                if after.kind != _COMMA:
                    raise self._fail(after, f"found '{after.literal}', expected: ',' or ')'")
            elif tok.kind == _COMMA:
                # Empty entries ("(,a)", "(a,,b)", "(a,)") stand for the empty value.
                if not values:
                    values.add("")
                after = self._peek()
                if after.kind == _CLOSE:
                    values.add("")
                    self._next()
                    return values
                if after.kind == _COMMA:
                    self._next()
                    values.add("")
            else:
                raise self._fail(tok, f"found '{tok.literal}', expected: ',', or identifier")

    def _exact_value(self) -> set[str]:
        tok = self._peek()
        if tok.kind in (_EOS, _COMMA):
            return {""}
        tok = self._next()
        if tok.kind != _IDENT:
            raise self._fail(tok, f"found '{tok.literal}', expected: identifier")
        return {tok.literal}


def from_label_selector(
    match_labels: Mapping[str, str] | None,
    match_expressions: Iterable[tuple[str, str, Sequence[str]] | Mapping[str, object]] | None,
    path: str = "",
) -> Selector:
    """Build a selector from a metav1.LabelSelector's ``matchLabels``/``matchExpressions``.

    Validates like ValidateLabelSelector, naming fields under ``path`` (e.g.
    ``spec.selector``); all problems are reported together in one
    :class:`SelectorError`.  Expressions may be ``(key, operator, values)``
    tuples or ``{"key", "operator", "values"}`` mappings.  Both parts empty
    gives the match-everything selector (a *nil* selector, which matches
    nothing, is the caller's concern).
    """
    labels = dict(match_labels or {})
    expressions: list[tuple[str, str, tuple[str, ...]]] = []
    for expr in match_expressions or ():
        if isinstance(expr, Mapping):
            key, op, values = expr.get("key", ""), expr.get("operator", ""), expr.get("values")
        else:
            key, op, values = expr
        expressions.append((str(key), str(op), tuple(values or ())))  # type: ignore[arg-type]

    errs: list[str] = []
    labels_path = _child(path, "matchLabels")
    for k in sorted(labels):
        v = labels[k]
        errs.extend(_invalid(labels_path, _go_quote(k), msg) for msg in qualified_name(k))
        errs.extend(_invalid(labels_path, _go_quote(v), msg) for msg in label_value(v))
    for i, (key, op, values) in enumerate(expressions):
        expr_path = f"{_child(path, 'matchExpressions')}[{i}]"
        values_path = _child(expr_path, "values")
        if op in ("In", "NotIn"):
            if not values:
                errs.append(
                    f"{values_path}: Required value: "
                    "must be specified when `operator` is 'In' or 'NotIn'"
                )
        elif op in ("Exists", "DoesNotExist"):
            if values:
                errs.append(
                    f"{values_path}: Forbidden: "
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                )
        else:
            errs.append(
                _invalid(
                    _child(expr_path, "operator"), _go_quote(op), "not a valid selector operator"
                )
            )
        key_path = _child(expr_path, "key")
        errs.extend(_invalid(key_path, _go_quote(key), msg) for msg in qualified_name(key))
        for j, v in enumerate(values):
            errs.extend(
                _invalid(f"{values_path}[{j}]", _go_quote(v), msg) for msg in label_value(v)
            )
    if errs:
        raise SelectorError.aggregate(errs)

    requirements = [Requirement(k, EQUALS, (v,)) for k, v in labels.items()]
    requirements += [
        Requirement(key, _LABEL_SELECTOR_OPERATORS[op], values) for key, op, values in expressions
    ]
    return Selector(tuple(requirements))
