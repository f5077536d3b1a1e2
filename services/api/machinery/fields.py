"""Field selectors, with Kubernetes semantics (apimachinery's ``pkg/fields``).

Field selectors (``?fieldSelector=spec.nodeName=n1``) filter lists and watches on a
fixed set of fields per kind. They must parse, escape, match and print exactly like
upstream's, so that kubectl-style clients behave the same against kubera. Only ``=``,
``==`` and ``!=`` exist; errors are :class:`~services.api.machinery.labels.SelectorError` with
upstream's wording.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from services.api.machinery.labels import DOUBLE_EQUALS, EQUALS, NOT_EQUALS, SelectorError


@dataclass(frozen=True)
class FieldRequirement:
    """``field = value`` or ``field != value``; ``==`` is stored as ``=``."""

    field: str
    operator: str
    value: str

    def __post_init__(self) -> None:
        op = EQUALS if self.operator == DOUBLE_EQUALS else self.operator
        if op not in (EQUALS, NOT_EQUALS):
            raise SelectorError(f"invalid field selector operator: {self.operator!r}")
        object.__setattr__(self, "operator", op)

    def matches(self, get: Callable[[str], str]) -> bool:
        actual = get(self.field)
        return actual == self.value if self.operator == EQUALS else actual != self.value

    def __str__(self) -> str:
        return f"{self.field}{self.operator}{escape_field_value(self.value)}"


def escape_field_value(value: str) -> str:
    """EscapeValue: backslash-escape ``\\``, ``,`` and ``=``."""
    return value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")


def _unescape_field_value(value: str) -> str:
    """UnescapeValue: undo escaping; bare ``,``/``=`` and unknown escapes are errors."""
    out: list[str] = []
    in_slash = False
    for ch in value:
        if in_slash:
            if ch not in "\\,=":
                raise SelectorError(f"invalid field selector: invalid escape sequence: \\{ch}")
            out.append(ch)
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch in ",=":
            # Upstream prints the rune with %v, i.e. its code point number.
            raise SelectorError(f"invalid field selector: unescaped character in value: {ord(ch)}")
        else:
            out.append(ch)
    if in_slash:
        raise SelectorError("invalid field selector: invalid escape sequence: \\")
    return "".join(out)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not backslash-escaped."""
    if not text:
        return []
    terms: list[str] = []
    start = 0
    in_slash = False
    for i, ch in enumerate(text):
        if in_slash:
            in_slash = False
        elif ch == "\\":
            in_slash = True
        elif ch == ",":
            terms.append(text[start:i])
            start = i + 1
    terms.append(text[start:])
    return terms


def _split_term(term: str) -> tuple[str, str, str] | None:
    """First position where "!=", "==" or "=" starts (checked in that order)."""
    for i in range(len(term)):
        for op in (NOT_EQUALS, DOUBLE_EQUALS, EQUALS):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op) :]
    return None


def parse_field_selector(text: str, allowed: Collection[str]) -> list[FieldRequirement]:
    """Parse ``a=b,c!=d`` (ParseSelector) and reject fields not in ``allowed``.

    As upstream, terms are sorted, empty terms skipped and nothing is trimmed
    (``"a = b"`` names the field ``"a "``).  The result is in sorted-term order.
    """
    reqs: list[FieldRequirement] = []
    for part in sorted(_split_terms(text)):
        if not part:
            continue
        split = _split_term(part)
        if split is None:
            raise SelectorError(f"invalid selector: '{text}'; can't understand '{part}'")
        lhs, op, rhs = split
        reqs.append(FieldRequirement(lhs, op, _unescape_field_value(rhs)))
    for req in reqs:
        if req.field not in allowed:
            raise SelectorError(f"field label not supported: {req.field}")
    return reqs


def field_matches(reqs: Iterable[FieldRequirement], get: Callable[[str], str]) -> bool:
    """Whether every requirement holds; ``get`` returns an object's value for a field."""
    return all(r.matches(get) for r in reqs)
