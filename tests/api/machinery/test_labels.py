"""Label and field selectors must parse, validate, match and print like apimachinery."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from services.api.machinery.fields import (
    FieldRequirement,
    escape_field_value,
    field_matches,
    parse_field_selector,
)
from services.api.machinery.labels import (
    Requirement,
    Selector,
    SelectorError,
    from_label_selector,
)

PARSE = [
    # (text, canonical string, rule)
    ("", "", "empty selects everything"),
    ("   ", "", "blank selects everything"),
    ("a=b", "a=b", "equals"),
    ("a==b", "a==b", "double equals is kept"),
    ("a!=b", "a!=b", "not equals"),
    ("a in (x,y)", "a in (x,y)", "set inclusion"),
    ("a notin (y, x)", "a notin (x,y)", "set exclusion sorts values"),
    ("a", "a", "bare key means exists"),
    ("!a", "!a", "bang means does not exist"),
    (" a = b ,  c in ( z ) ", "a=b,c in (z)", "whitespace is tolerated"),
    ("z=1,a=2", "a=2,z=1", "requirements are sorted by key"),
    ("x in (foo,,baz),y,z notin ()", "x in (,baz,foo),y,z notin ()", "empty values in sets"),
    ("a=", "a=", "empty exact value"),
    ("a in ()", "a in ()", "empty set means the empty value"),
    ("a in (,x)", "a in (,x)", "leading empty value"),
    ("a in (x,)", "a in (,x)", "trailing empty value"),
    ("a in (x,x)", "a in (x)", "duplicate values collapse"),
    ("in in (in,notin)", "in in (in,notin)", "keywords are identifiers in value positions"),
    ("a>1", "a>1", "greater than"),
    ("a<10", "a<10", "less than"),
    ("example.com/app=web", "example.com/app=web", "prefixed keys"),
    ("a=b,!c,d", "a=b,!c,d", "mixed requirements"),
]


@pytest.mark.parametrize(("text", "canonical", "rule"), PARSE, ids=[c[2] for c in PARSE])
def test_parse_and_print_round_trip(text: str, canonical: str, rule: str) -> None:
    selector = Selector.parse(text)
    assert str(selector) == canonical
    assert Selector.parse(canonical) == selector


PARSE_ERRORS = [
    # (text, message fragment, position, rule)
    (",a", "found ',', expected: !, identifier, or 'end of string'", 0, "leading comma"),
    ("a,", "found '', expected: identifier after ','", 2, "trailing comma"),
    ("a=b c", "found 'c', expected: ',' or 'end of string'", 4, "junk after a value"),
    ("!a=b", "found '=', expected: ',' or 'end of string'", 2, "bang takes no operator"),
    (
        "a b",
        "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt",
        2,
        "missing operator",
    ),
    ("a in x", "unable to parse requirement: found 'x' expected: '('", 5, "set without parens"),
    ("a in (b c)", "found 'c', expected: ',' or ')'", 8, "missing comma in set"),
    ("a in (b", "found '', expected: ',' or ')'", 7, "unclosed set"),
    ("a in (=)", "found '=', expected: ',', ')' or identifier", 6, "operator inside set"),
    ("a=(", "unable to parse requirement: found '(', expected: identifier", 2, "paren as value"),
    ("=a", "found '=', expected: !, identifier, or 'end of string'", 0, "missing key"),
    ("!", "found '', expected: identifier", 1, "bang without key"),
    ("A/b=c", 'key: Invalid value: "A/b": prefix part a lowercase RFC 1123', 0, "bad key"),
    ("a=-b", 'values[0][a]: Invalid value: "-b": a valid label must be', 0, "bad value"),
    ("a in (x,-y)", 'values[0][a]: Invalid value: "-y"', 0, "set values are indexed sorted"),
    ("a>b", "for 'Gt', 'Lt' operators, the value must be an integer", 0, "Gt needs an integer"),
    ("b=c,a<x", "for 'Gt', 'Lt' operators, the value must be an integer", 4, "position of 2nd"),
]


@pytest.mark.parametrize(
    ("text", "fragment", "position", "rule"), PARSE_ERRORS, ids=[c[3] for c in PARSE_ERRORS]
)
def test_parse_errors_name_token_expectation_and_position(
    text: str, fragment: str, position: int, rule: str
) -> None:
    with pytest.raises(SelectorError) as info:
        Selector.parse(text)
    assert fragment in str(info.value)
    assert info.value.position == position
    assert f"(at position {position})" in str(info.value)


MATCHES = [
    # (selector, labels, matches, rule)
    ("", {}, True, "empty selector matches everything"),
    ("a=b", {"a": "b"}, True, "equal value"),
    ("a=b", {"a": "c"}, False, "different value"),
    ("a=b", {}, False, "equals needs the key"),
    ("a!=b", {}, True, "not equals matches an absent key"),
    ("a!=b", {"a": "b"}, False, "not equals rejects the value"),
    ("a in (x,y)", {"a": "y"}, True, "in matches a member"),
    ("a in (x,y)", {}, False, "in needs the key"),
    ("a notin (x,y)", {}, True, "notin matches an absent key"),
    ("a notin (x,y)", {"a": "x"}, False, "notin rejects members"),
    ("a notin (x,y)", {"a": "z"}, True, "notin accepts non-members"),
    ("a", {"a": ""}, True, "exists with an empty value"),
    ("a", {}, False, "exists needs the key"),
    ("!a", {}, True, "does not exist"),
    ("!a", {"a": "x"}, False, "does not exist rejects the key"),
    ("a=", {"a": ""}, True, "empty value matches empty"),
    ("a>5", {"a": "6"}, True, "greater than compares integers"),
    ("a>5", {"a": "10"}, True, "integer, not string, comparison"),
    ("a>5", {"a": "5"}, False, "greater than is strict"),
    ("a>5", {"a": "x"}, False, "non-integer label never matches"),
    ("a>5", {}, False, "gt needs the key"),
    ("a<5", {"a": "-3"}, True, "negative label values parse"),
    ("a<5", {"a": "99999999999999999999"}, False, "beyond int64 is not an integer"),
    ("a=b,c=d", {"a": "b", "c": "d"}, True, "conjunction all hold"),
    ("a=b,c=d", {"a": "b", "c": "x"}, False, "conjunction one fails"),
]


@pytest.mark.parametrize(
    ("text", "labels", "expected", "rule"), MATCHES, ids=[c[3] for c in MATCHES]
)
def test_matching_semantics(text: str, labels: dict[str, str], expected: bool, rule: str) -> None:
    assert Selector.parse(text).matches(labels) is expected


REQUIREMENTS = [
    (("a", "In", ("y", "x")), ("in", ("x", "y")), "In is stored as in, values as a sorted set"),
    (("a", "NotIn", ("x",)), ("notin", ("x",)), "NotIn is stored as notin"),
    (("a", "Exists", ()), ("exists", ()), "Exists"),
    (("a", "DoesNotExist", ()), ("!", ()), "DoesNotExist is stored as !"),
    (("a", "gt", ("1",)), ("Gt", ("1",)), "selection.GreaterThan spelling"),
    (("a", "Lt", ("1",)), ("Lt", ("1",)), "node selector spelling"),
]


@pytest.mark.parametrize(("args", "stored", "rule"), REQUIREMENTS, ids=[c[2] for c in REQUIREMENTS])
def test_requirement_normalises_operators(
    args: tuple[str, str, tuple[str, ...]], stored: tuple[str, tuple[str, ...]], rule: str
) -> None:
    r = Requirement(*args)
    assert (r.operator, r.values) == stored


REQUIREMENT_ERRORS = [
    (
        ("a", "in", ()),
        "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty",
        "in needs values",
    ),
    (
        ("a", "=", ("x", "y")),
        'values: Invalid value: []string{"x", "y"}: exact-match compatibility requires one single '
        "value",
        "equals needs one value",
    ),
    (
        ("a", "exists", ("x",)),
        'values: Invalid value: []string{"x"}: values set must be empty for exists and does not '
        "exist",
        "exists takes no values",
    ),
    (
        ("a", "Gt", ("1", "2")),
        "values: Invalid value: []string{\"1\", \"2\"}: for 'Gt', 'Lt' operators, exactly one value "
        "is required",
        "Gt takes one value",
    ),
    (
        ("a", "bogus", ("x",)),
        'operator: Unsupported value: "bogus": supported values: "in", "notin", "=", "==", "!=", '
        '"gt", "lt", "exists", "!"',
        "unknown operator",
    ),
]


@pytest.mark.parametrize(
    ("args", "message", "rule"), REQUIREMENT_ERRORS, ids=[c[2] for c in REQUIREMENT_ERRORS]
)
def test_requirement_validation_messages(
    args: tuple[str, str, tuple[str, ...]], message: str, rule: str
) -> None:
    with pytest.raises(SelectorError) as info:
        Requirement(*args)
    assert str(info.value) == message


def test_several_requirement_errors_aggregate_in_brackets() -> None:
    with pytest.raises(SelectorError) as info:
        Requirement("-a", "=", ())
    assert len(info.value.errors) == 2
    assert str(info.value).startswith('[key: Invalid value: "-a": name part must consist')
    assert str(info.value).endswith("exact-match compatibility requires one single value]")


def test_from_set_and_requires_exact_match() -> None:
    selector = Selector.from_set({"tier": "web", "app": "shop"})
    assert str(selector) == "app=shop,tier=web"
    assert selector.requires_exact_match("app") == "shop"
    assert selector.requires_exact_match("missing") is None
    assert Selector.parse("a in (x,y)").requires_exact_match("a") is None
    assert Selector.parse("a in (x)").requires_exact_match("a") == "x"
    assert Selector.everything().is_empty()
    with pytest.raises(SelectorError):
        Selector.from_set({"a": "-bad"})


LABEL_SELECTORS = [
    ({}, [], "", "empty selector matches everything"),
    ({"app": "web"}, [], "app=web", "matchLabels become equals"),
    (
        {"app": "web"},
        [("tier", "In", ["b", "a"]), ("canary", "DoesNotExist", [])],
        "app=web,!canary,tier in (a,b)",
        "expressions are added and sorted by key",
    ),
    (
        {},
        [
            {"key": "env", "operator": "NotIn", "values": ["prod"]},
            {"key": "x", "operator": "Exists"},
        ],
        "env notin (prod),x",
        "expressions as mappings",
    ),
]


@pytest.mark.parametrize(
    ("labels", "exprs", "expected", "rule"), LABEL_SELECTORS, ids=[c[3] for c in LABEL_SELECTORS]
)
def test_from_label_selector_builds_selector(
    labels: dict[str, str], exprs: list, expected: str, rule: str
) -> None:
    assert str(from_label_selector(labels, exprs, "spec.selector")) == expected


LABEL_SELECTOR_ERRORS = [
    (
        {},
        [("tier", "In", [])],
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "In requires values",
    ),
    (
        {},
        [("tier", "NotIn", ())],
        "spec.selector.matchExpressions[0].values: Required value: must be specified when "
        "`operator` is 'In' or 'NotIn'",
        "NotIn requires values",
    ),
    (
        {},
        [("x", "Exists", ["a"])],
        "spec.selector.matchExpressions[0].values: Forbidden: may not be specified when "
        "`operator` is 'Exists' or 'DoesNotExist'",
        "Exists forbids values",
    ),
    (
        {},
        [("a", "In", ["b"]), ("x", "Gt", ["1"])],
        'spec.selector.matchExpressions[1].operator: Invalid value: "Gt": not a valid selector '
        "operator",
        "Gt is not a label selector operator",
    ),
    (
        {},
        [("-x", "Exists", [])],
        'spec.selector.matchExpressions[0].key: Invalid value: "-x": name part must consist',
        "expression keys are validated",
    ),
    (
        {},
        [("x", "In", ["ok", "-no"])],
        'spec.selector.matchExpressions[0].values[1]: Invalid value: "-no": a valid label must',
        "expression values are validated",
    ),
    (
        {"bad key": "v"},
        [],
        'spec.selector.matchLabels: Invalid value: "bad key": name part must consist',
        "matchLabels keys are validated",
    ),
    (
        {"k": "v v"},
        [],
        'spec.selector.matchLabels: Invalid value: "v v": a valid label must',
        "matchLabels values are validated",
    ),
]


@pytest.mark.parametrize(
    ("labels", "exprs", "fragment", "rule"),
    LABEL_SELECTOR_ERRORS,
    ids=[c[3] for c in LABEL_SELECTOR_ERRORS],
)
def test_from_label_selector_validation_names_the_field(
    labels: dict[str, str], exprs: list, fragment: str, rule: str
) -> None:
    with pytest.raises(SelectorError) as info:
        from_label_selector(labels, exprs, "spec.selector")
    assert fragment in str(info.value)


def test_from_label_selector_reports_all_errors_and_works_without_path() -> None:
    with pytest.raises(SelectorError) as info:
        from_label_selector({}, [("a", "In", []), ("b", "Nope", [])])
    assert info.value.errors == (
        "matchExpressions[0].values: Required value: must be specified when `operator` is 'In' "
        "or 'NotIn'",
        'matchExpressions[1].operator: Invalid value: "Nope": not a valid selector operator',
    )
    assert str(info.value).startswith("[matchExpressions[0].values: Required value")


# --- field selectors ---

ALLOWED = {"metadata.name", "metadata.namespace", "spec.nodeName", "status.phase"}

FIELD_PARSE = [
    ("", [], "empty selects everything"),
    ("metadata.name=foo", [("metadata.name", "=", "foo")], "equals"),
    ("metadata.name==foo", [("metadata.name", "=", "foo")], "double equals is equals"),
    ("spec.nodeName!=", [("spec.nodeName", "!=", "")], "not equals empty"),
    (
        "status.phase=Running,spec.nodeName=n1",
        [("spec.nodeName", "=", "n1"), ("status.phase", "=", "Running")],
        "terms are sorted",
    ),
    ("metadata.name=a\\,b\\=c\\\\", [("metadata.name", "=", "a,b=c\\")], "escapes"),
    ("metadata.name=foo,", [("metadata.name", "=", "foo")], "empty terms are skipped"),
]


@pytest.mark.parametrize(("text", "expected", "rule"), FIELD_PARSE, ids=[c[2] for c in FIELD_PARSE])
def test_parse_field_selector(text: str, expected: list[tuple[str, str, str]], rule: str) -> None:
    reqs = parse_field_selector(text, ALLOWED)
    assert [(r.field, r.operator, r.value) for r in reqs] == expected


FIELD_ERRORS = [
    ("a=b", "field label not supported: a", "unknown field"),
    (
        "metadata.name = foo",
        "field label not supported: metadata.name ",
        "no trimming, as upstream",
    ),
    (
        "metadata.name",
        "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
        "no op",
    ),
    ("metadata.name=a=b", "invalid field selector: unescaped character in value: 61", "bare ="),
    ("metadata.name!==b", "invalid field selector: unescaped character in value: 61", "!=="),
    ("metadata.name=a\\x", "invalid field selector: invalid escape sequence: \\x", "bad escape"),
    ("metadata.name=a\\", "invalid field selector: invalid escape sequence: \\", "dangling \\"),
]


@pytest.mark.parametrize(
    ("text", "message", "rule"), FIELD_ERRORS, ids=[c[2] for c in FIELD_ERRORS]
)
def test_field_selector_errors(text: str, message: str, rule: str) -> None:
    with pytest.raises(SelectorError) as info:
        parse_field_selector(text, ALLOWED)
    assert str(info.value) == message


FIELD_MATCHES = [
    ("spec.nodeName=n1", True, "equal"),
    ("spec.nodeName=n2", False, "different"),
    ("spec.nodeName!=n2", True, "not equal"),
    ("spec.nodeName!=", True, "bound to some node"),
    ("spec.nodeName=n1,status.phase=Pending", False, "conjunction"),
    ("", True, "empty matches"),
]


@pytest.mark.parametrize(
    ("text", "expected", "rule"), FIELD_MATCHES, ids=[c[2] for c in FIELD_MATCHES]
)
def test_field_matches(text: str, expected: bool, rule: str) -> None:
    fields = {"spec.nodeName": "n1", "status.phase": "Running"}
    reqs = parse_field_selector(text, ALLOWED)
    assert field_matches(reqs, lambda f: fields.get(f, "")) is expected


def test_field_requirement_prints_escaped_and_rejects_bad_operator() -> None:
    assert str(FieldRequirement("metadata.name", "==", "a,b")) == "metadata.name=a\\,b"
    with pytest.raises(SelectorError):
        FieldRequirement("metadata.name", "in", "x")


@given(st.text(alphabet=st.sampled_from("ab,=\\!x "), max_size=12))
def test_escaped_field_values_round_trip(value: str) -> None:
    text = str(FieldRequirement("metadata.name", "=", value))
    assert text == "metadata.name=" + escape_field_value(value)
    [req] = parse_field_selector(text, ALLOWED)
    assert req.value == value


_KEYS = st.from_regex(r"[a-z]([-a-z0-9._]{0,8}[a-z0-9])?", fullmatch=True).filter(
    lambda k: k not in ("in", "notin")
)
_VALUES = st.one_of(
    st.just(""), st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9._]{0,8}[A-Za-z0-9])?", fullmatch=True)
)


@st.composite
def requirements(draw: st.DrawFn) -> Requirement:
    key = draw(_KEYS)
    op = draw(st.sampled_from(["=", "==", "!=", "in", "notin", "exists", "!"]))
    if op in ("in", "notin"):
        values = tuple(draw(st.lists(_VALUES, min_size=1, max_size=3)))
    elif op in ("exists", "!"):
        values = ()
    else:
        values = (draw(_VALUES),)
    return Requirement(key, op, values)


@given(st.lists(requirements(), max_size=4), st.dictionaries(_KEYS, _VALUES, max_size=4))
def test_printed_selectors_parse_back_equal_and_match_the_same(
    reqs: list[Requirement], labels: dict[str, str]
) -> None:
    selector = Selector(tuple(reqs))
    reparsed = Selector.parse(str(selector))
    assert reparsed == selector
    assert reparsed.matches(labels) == selector.matches(labels)
