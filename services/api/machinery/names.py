"""Kubernetes name, label-key and label-value validators.

Object names, namespaces, label keys/values, annotation keys and taint keys
all follow the apimachinery ``util/validation`` rules.  Clients (kubectl,
controllers, tests) match on the exact error wording, so each function returns
upstream's messages verbatim as a list of strings; an empty list means valid.

The checks are hand-written character scans equivalent to upstream's regular
expressions (which we still quote in the messages), so they stay linear-time
on hostile input.  Lengths are counted in UTF-8 bytes, as Go's ``len`` does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Final

DNS1123_LABEL_MAX_LENGTH: Final = 63
DNS1123_SUBDOMAIN_MAX_LENGTH: Final = 253
DNS1035_LABEL_MAX_LENGTH: Final = 63
LABEL_VALUE_MAX_LENGTH: Final = 63
QUALIFIED_NAME_MAX_LENGTH: Final = 63

DNS1123_LABEL_FMT: Final = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT: Final = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT: Final = "[a-z]([-a-z0-9]*[a-z0-9])?"
QUALIFIED_NAME_FMT: Final = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
LABEL_VALUE_FMT: Final = "(" + QUALIFIED_NAME_FMT + ")?"

_DNS1123_LABEL_ERR: Final = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character"
)
_DNS1123_SUBDOMAIN_ERR: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character"
)
_DNS1035_LABEL_ERR: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
    "start with an alphabetic character, and end with an alphanumeric character"
)
_QUALIFIED_NAME_ERR: Final = (
    "must consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_LABEL_VALUE_ERR: Final = (
    "a valid label must be an empty string or consist of alphanumeric characters, "
    "'-', '_' or '.', and must start and end with an alphanumeric character"
)

_LOWER_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")
_LOWER_ALPHA: Final = frozenset("abcdefghijklmnopqrstuvwxyz")
_ALNUM: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
_DNS_LABEL_INNER: Final = _LOWER_ALNUM | {"-"}
_QNAME_INNER: Final = _ALNUM | {"-", "_", "."}


def max_len_error(length: int) -> str:
    """MaxLenError."""
    return f"must be no more than {length} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """RegexError: the message, optional examples and the regex used."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    quoted = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {quoted}regex used for validation is '{fmt}')"


def empty_error() -> str:
    """EmptyError."""
    return "must be non-empty"


#: Longest value whose verdict is remembered: any name a cluster uses twice (namespaces,
#: container names, label and toleration keys) is far shorter; a longer one is invalid
#: anyway, and is checked afresh each time so hostile input cannot fill the memory.
_MEMO_MAX_CHARS: Final = DNS1123_SUBDOMAIN_MAX_LENGTH
_MEMO_SIZE: Final = 16384


def _memoized(fn: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """`fn` with its verdicts remembered (the same names are checked for every object
    created); each call still gets its own list."""
    remembered = functools.lru_cache(maxsize=_MEMO_SIZE)(lambda value: tuple(fn(value)))

    @functools.wraps(fn)
    def check(value: str) -> list[str]:
        if len(value) > _MEMO_MAX_CHARS:
            return fn(value)
        return list(remembered(value))

    return check


def _byte_len(value: str) -> int:
    return len(value.encode("utf-8", "surrogatepass"))


def _framed(value: str, first: frozenset[str], inner: frozenset[str], last: frozenset[str]) -> bool:
    """Non-empty; first char in ``first``, last in ``last``, all others in ``inner``."""
    if not value or value[0] not in first or value[-1] not in last:
        return False
    return inner.issuperset(value[1:-1])


def _is_dns1123_label(value: str) -> bool:
    return _framed(value, _LOWER_ALNUM, _DNS_LABEL_INNER, _LOWER_ALNUM)


def _is_dns1123_subdomain(value: str) -> bool:
    return all(_is_dns1123_label(part) for part in value.split("."))


def _is_qualified_name_part(value: str) -> bool:
    return _framed(value, _ALNUM, _QNAME_INNER, _ALNUM)


@_memoized
def dns1123_label(value: str) -> list[str]:
    """IsDNS1123Label: e.g. namespace names, container names."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_LABEL_MAX_LENGTH))
    if not _is_dns1123_label(value):
        if _is_dns1123_subdomain(value):
            # A valid subdomain but not a label: it must contain dots.
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_ERR, DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_memoized
def dns1123_subdomain(value: str) -> list[str]:
    """IsDNS1123Subdomain: most object names (pods, deployments, nodes, ...)."""
    errs: list[str] = []
    if _byte_len(value) > DNS1123_SUBDOMAIN_MAX_LENGTH:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH))
    if not _is_dns1123_subdomain(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_ERR, DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


@_memoized
def dns1035_label(value: str) -> list[str]:
    """IsDNS1035Label: service names (must start with a letter)."""
    errs: list[str] = []
    if _byte_len(value) > DNS1035_LABEL_MAX_LENGTH:
        errs.append(max_len_error(DNS1035_LABEL_MAX_LENGTH))
    if not _framed(value, _LOWER_ALPHA, _DNS_LABEL_INNER, _LOWER_ALNUM):
        errs.append(regex_error(_DNS1035_LABEL_ERR, DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


@_memoized
def qualified_name(value: str) -> list[str]:
    """IsQualifiedName: label, annotation and taint keys, ``[prefix/]name``.

    The optional prefix must be a DNS subdomain; the name is at most 63
    characters of ``[-A-Za-z0-9_.]`` starting and ending alphanumeric.
    """
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + msg for msg in dns1123_subdomain(prefix))
    else:
        return [
            "a valid label key "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]

    if not name:
        errs.append("name part " + empty_error())
    elif _byte_len(name) > QUALIFIED_NAME_MAX_LENGTH:
        errs.append("name part " + max_len_error(QUALIFIED_NAME_MAX_LENGTH))
    if not _is_qualified_name_part(name):
        errs.append(
            "name part "
            + regex_error(_QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, "MyName", "my.name", "123-abc")
        )
    return errs


@_memoized
def label_value(value: str) -> list[str]:
    """IsValidLabelValue: empty, or at most 63 chars of ``[-A-Za-z0-9_.]`` framed by alphanumerics."""
    errs: list[str] = []
    if _byte_len(value) > LABEL_VALUE_MAX_LENGTH:
        errs.append(max_len_error(LABEL_VALUE_MAX_LENGTH))
    if value and not _is_qualified_name_part(value):
        errs.append(regex_error(_LABEL_VALUE_ERR, LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def mask_trailing_dash(name: str) -> str:
    """maskTrailingDash, quirk included: a trailing '-' drops the last *two* chars and adds 'a'.

    Used for ``metadata.generateName``, where a suffix will be appended, so a
    trailing dash is acceptable.
    """
    if len(name) > 1 and name.endswith("-"):
        return name[:-2] + "a"
    return name


def generate_name_prefix(
    prefix: str, validate: Callable[[str], list[str]] = dns1123_subdomain
) -> list[str]:
    """Validate a ``generateName`` prefix (ValidateNameFunc with prefix=true)."""
    return validate(mask_trailing_dash(prefix))
