"""Name and label validators must accept, reject and word errors exactly like apimachinery."""

from __future__ import annotations

import pytest

from services.api.machinery.names import (
    dns1035_label,
    dns1123_label,
    dns1123_subdomain,
    generate_name_prefix,
    label_value,
    mask_trailing_dash,
    qualified_name,
    regex_error,
)

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
    "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
    "'my_value',  or '12345', regex used for validation is "
    "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)


def test_regex_error_matches_upstream_spacing() -> None:
    # Upstream appends "', " after every example and " or " between them.
    assert regex_error("m", "f") == "m (regex used for validation is 'f')"
    assert (
        regex_error("m", "f", "a", "b") == "m (e.g. 'a',  or 'b', regex used for validation is 'f')"
    )


SUBDOMAINS = [
    ("example.com", [], "dotted lowercase name"),
    ("a", [], "single character"),
    ("my-pod-1", [], "dashes inside"),
    ("1.2.3.4", [], "digits may start labels"),
    ("a" * 253, [], "exactly 253 characters"),
    ("a" * 254, ["must be no more than 253 characters"], "254 characters"),
    ("", [SUBDOMAIN_MSG], "empty"),
    ("Example.com", [SUBDOMAIN_MSG], "upper case"),
    ("-a", [SUBDOMAIN_MSG], "leading dash"),
    ("a-", [SUBDOMAIN_MSG], "trailing dash"),
    ("a..b", [SUBDOMAIN_MSG], "empty label"),
    (".a", [SUBDOMAIN_MSG], "leading dot"),
    ("a_b", [SUBDOMAIN_MSG], "underscore"),
    ("a\n", [SUBDOMAIN_MSG], "trailing newline is not ignored"),
    ("-" * 254, ["must be no more than 253 characters", SUBDOMAIN_MSG], "both errors"),
    ("é", [SUBDOMAIN_MSG], "non-ASCII"),
]


@pytest.mark.parametrize(("value", "errs", "rule"), SUBDOMAINS, ids=[c[2] for c in SUBDOMAINS])
def test_dns1123_subdomain(value: str, errs: list[str], rule: str) -> None:
    assert dns1123_subdomain(value) == errs


LABELS = [
    ("my-name", [], "lowercase with dash"),
    ("123-abc", [], "may start with a digit"),
    ("a" * 63, [], "exactly 63"),
    ("a" * 64, ["must be no more than 63 characters"], "64 characters"),
    ("a.b", ["must not contain dots"], "a valid subdomain is not a label"),
    ("", [LABEL_MSG], "empty"),
    ("A", [LABEL_MSG], "upper case"),
    ("a-", [LABEL_MSG], "trailing dash"),
    ("a" * 64 + ".b", ["must be no more than 63 characters", "must not contain dots"], "both"),
]


@pytest.mark.parametrize(("value", "errs", "rule"), LABELS, ids=[c[2] for c in LABELS])
def test_dns1123_label(value: str, errs: list[str], rule: str) -> None:
    assert dns1123_label(value) == errs


DNS1035 = [
    ("my-svc", [], "starts with a letter"),
    ("1svc", [DNS1035_MSG], "may not start with a digit"),
    ("svc-", [DNS1035_MSG], "trailing dash"),
    ("a" * 64, ["must be no more than 63 characters"], "too long"),
]


@pytest.mark.parametrize(("value", "errs", "rule"), DNS1035, ids=[c[2] for c in DNS1035])
def test_dns1035_label(value: str, errs: list[str], rule: str) -> None:
    assert dns1035_label(value) == errs


QUALIFIED = [
    ("app", [], "simple key"),
    ("MyName", [], "upper case is allowed in keys"),
    ("my.name_x-1", [], "dot, underscore, dash inside"),
    ("example.com/MyName", [], "with DNS prefix"),
    ("kubernetes.io/hostname", [], "well-known key"),
    ("a" * 63, [], "name of 63"),
    ("a" * 64, ["name part must be no more than 63 characters"], "name of 64"),
    ("", ["name part must be non-empty", NAME_PART_MSG], "empty"),
    ("/a", ["prefix part must be non-empty"], "empty prefix"),
    ("a/", ["name part must be non-empty", NAME_PART_MSG], "empty name after prefix"),
    ("Example.com/a", ["prefix part " + SUBDOMAIN_MSG], "prefix must be lowercase"),
    ("-a", [NAME_PART_MSG], "leading dash"),
    ("a_", [NAME_PART_MSG], "trailing underscore"),
    ("bad key", [NAME_PART_MSG], "space"),
    (
        "a/b/c",
        [
            "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must "
            "start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or "
            "'123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') "
            "with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ],
        "two slashes",
    ),
]


@pytest.mark.parametrize(("value", "errs", "rule"), QUALIFIED, ids=[c[2] for c in QUALIFIED])
def test_qualified_name(value: str, errs: list[str], rule: str) -> None:
    assert qualified_name(value) == errs


VALUES = [
    ("", [], "empty is valid"),
    ("MyValue", [], "mixed case"),
    ("my_value.1-x", [], "inner punctuation"),
    ("a" * 63, [], "63 characters"),
    ("a" * 64, ["must be no more than 63 characters"], "64 characters"),
    ("-x", [VALUE_MSG], "leading dash"),
    ("x.", [VALUE_MSG], "trailing dot"),
    ("a/b", [VALUE_MSG], "slash"),
    ("a b", [VALUE_MSG], "space"),
]


@pytest.mark.parametrize(("value", "errs", "rule"), VALUES, ids=[c[2] for c in VALUES])
def test_label_value(value: str, errs: list[str], rule: str) -> None:
    assert label_value(value) == errs


PREFIXES = [
    ("web-", "wea", [], "trailing dash is masked (upstream drops two characters)"),
    ("web", "web", [], "no dash, unchanged"),
    ("-", "-", [SUBDOMAIN_MSG], "a lone dash is not masked"),
    ("Web-", "Wea", [SUBDOMAIN_MSG], "masking does not fix other problems"),
]


@pytest.mark.parametrize(
    ("prefix", "masked", "errs", "rule"), PREFIXES, ids=[c[3] for c in PREFIXES]
)
def test_generate_name_prefix(prefix: str, masked: str, errs: list[str], rule: str) -> None:
    assert mask_trailing_dash(prefix) == masked
    assert generate_name_prefix(prefix) == errs


def test_generate_name_prefix_with_label_validator() -> None:
    assert generate_name_prefix("ns-", dns1123_label) == []
    assert generate_name_prefix("a.b-", dns1123_label) == ["must not contain dots"]
