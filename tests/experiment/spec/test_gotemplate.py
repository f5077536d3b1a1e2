"""Go's text/template as kubera runs experiment templates: rows ported from Go's
src/text/template/exec_test.go (execTests "If", "Booleans" and "Whitespace" sections, and
cmpTests), with Go's data values written as the JSON values templates see here (Go's tVal
fields SI, SIEmpty, MSI, MSIEmpty, FloatZero become list/dict/float params)."""

from __future__ import annotations

from typing import Any

import pytest

from kubera.experiment.spec import gotemplate as g
from kubera.experiment.spec.templates import FUNCS, Template, environment, render_text


def _die() -> bool:
    raise g.TemplateError("die")


#: exec_test.go's FuncMap entries the ported rows call, besides upstream's FUNCS.
_TEST_FUNCS = {**FUNCS, "die": _die, "add": lambda *xs: sum(xs)}

#: tVal's fields the ported rows read.
_DATA: dict[str, Any] = {
    "True": True,
    "I": 17,
    "X": "x",
    "FloatZero": 0.0,
    "SI": [3, 4, 5],
    "SIEmpty": [],
    "MSI": {"one": 1, "two": 2, "three": 3},
    "MSIEmpty": {},
    "MXI": {"one": 1},
    "Empty0": None,
}


def _run(text: str, data: Any = None) -> str:
    return g.execute(g.parse(text, _TEST_FUNCS), data, _TEST_FUNCS)


# (name, template, output) from execTests: these execute without error.
EXEC_OK = [
    ("empty", "", ""),
    ("text", "some text", "some text"),
    ("if true", "{{if true}}TRUE{{end}}", "TRUE"),
    ("if false", "{{if false}}TRUE{{else}}FALSE{{end}}", "FALSE"),
    ("if 1", "{{if 1}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO"),
    ("if 0", "{{if 0}}NON-ZERO{{else}}ZERO{{end}}", "ZERO"),
    ("if 1.5", "{{if 1.5}}NON-ZERO{{else}}ZERO{{end}}", "NON-ZERO"),
    ("if 0.0", "{{if .FloatZero}}NON-ZERO{{else}}ZERO{{end}}", "ZERO"),
    ("if emptystring", "{{if ``}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY"),
    ("if string", "{{if `notempty`}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY"),
    ("if emptyslice", "{{if .SIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY"),
    ("if slice", "{{if .SI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY"),
    ("if emptymap", "{{if .MSIEmpty}}NON-EMPTY{{else}}EMPTY{{end}}", "EMPTY"),
    ("if map", "{{if .MSI}}NON-EMPTY{{else}}EMPTY{{end}}", "NON-EMPTY"),
    ("if map unset", "{{if .MXI.none}}NON-ZERO{{else}}ZERO{{end}}", "ZERO"),
    ("if map not unset", "{{if not .MXI.none}}ZERO{{else}}NON-ZERO{{end}}", "ZERO"),
    ("if else if", "{{if false}}FALSE{{else if true}}TRUE{{end}}", "TRUE"),
    ("if else chain", "{{if eq 1 3}}1{{else if eq 2 3}}2{{else if eq 3 3}}3{{end}}", "3"),
    ("bug4 nil interface in if", "{{if .Empty0}}non-nil{{else}}nil{{end}}", "nil"),
    ("not", "{{not true}} {{not false}}", "false true"),
    ("and", "{{and false 0}} {{and 1 0}} {{and 0 true}} {{and 1 1}}", "false 0 0 1"),
    ("or", "{{or 0 0}} {{or 1 0}} {{or 0 true}} {{or 1 1}}", "0 1 true 1"),
    ("or short-circuit", "{{or 0 1 (die)}}", "1"),
    ("and short-circuit", "{{and 1 0 (die)}}", "0"),
    ("and pipe-true", "{{1 | and 1}}", "1"),
    ("and pipe-false", "{{0 | and 1}}", "0"),
    ("or pipe-true", "{{1 | or 0}}", "1"),
    ("or pipe-false", "{{0 | or 0}}", "0"),
    ("boolean if", "{{if and true 1 `hi`}}TRUE{{else}}FALSE{{end}}", "TRUE"),
    ("boolean if not", "{{if and true 1 `hi` | not}}TRUE{{else}}FALSE{{end}}", "FALSE"),
    ("boolean if pipe", "{{if true | not | and 1}}TRUE{{else}}FALSE{{end}}", "FALSE"),
    ("or as if true", '{{or .SI "slice is empty"}}', "[3 4 5]"),
    ("or as if false", '{{or .SIEmpty "slice is empty"}}', "slice is empty"),
    ("parens in pipeline", "{{printf `%d %d %d` (1) (2 | add 3) (add 4 (add 5 6))}}", "1 5 15"),
    ("map .one", "{{.MSI.one}}", "1"),
    ("dot map", "<{{.MSIEmpty}}>", "<map[]>"),
    ("decimal _", "{{12_34}}", "1234"),
    ("hex", "{{0x123}}", "291"),
    ("octal0", "{{0377}}", "255"),
    ("binary", "{{0b101}}", "5"),
    ("hex float", "{{+0x1.ep+2}}", "7.5"),
    ("char", "{{eq 'x' 120}}", "true"),
    # Whitespace trimming (the text/template docs' example and lex_test.go's markers).
    ("trim both", "{{23 -}} < {{- 45}}", "23<45"),
    ("trim newlines and tabs", "a \t\r\n{{- 3 -}}\n\t b", "a3b"),
    ("no trim without space", "{{-3}}", "-3"),
    ("trimmed comment", "x  {{- /* comment */ -}}  y", "xy"),
    ("comment", "{{/* a comment */}}z", "z"),
    ("quoted braces", '{{"}}"}}', "}}"),
]


@pytest.mark.parametrize(("name", "text", "want"), EXEC_OK, ids=[r[0] for r in EXEC_OK])
def test_go_exec_rows_render_as_go_does(name: str, text: str, want: str) -> None:
    assert _run(text, _DATA) == want


# (name, template) from execTests rows whose ok is false: execution fails.
EXEC_ERR = [
    ("if nil", "{{if nil}}TRUE{{end}}"),
    ("or short-circuit2", "{{or 0 0 (die)}}"),
    ("and short-circuit2", "{{and 1 1 (die)}}"),
    ("bug7a non-function with args", "{{3 2}}"),
    ("not with two args", "{{not 1 2}}"),
    ("and without args", "{{and}}"),
]


@pytest.mark.parametrize(("name", "text"), EXEC_ERR, ids=[r[0] for r in EXEC_ERR])
def test_go_exec_error_rows_fail(name: str, text: str) -> None:
    with pytest.raises(g.TemplateError):
        _run(text, _DATA)


#: cmpTests rows over the basic kinds JSON values have (bool, int, float64, string); Go's
#: uint rows have no JSON counterpart.
CMP_OK = [
    ("eq true true", True), ("eq true false", False), ("eq 1.5 1.5", True),
    ("eq 1.5 2.5", False), ("eq 1 1", True), ("eq 1 2", False), ("eq `xy` `xy`", True),
    ("eq `xy` `xyz`", False), ("eq 3 4 5 6 3", True), ("eq 3 4 5 6 7", False),
    ("ne true true", False), ("ne true false", True), ("ne 1.5 1.5", False),
    ("ne 1.5 2.5", True), ("ne 1 1", False), ("ne 1 2", True), ("ne `xy` `xy`", False),
    ("ne `xy` `xyz`", True), ("lt 1.5 1.5", False), ("lt 1.5 2.5", True), ("lt 1 1", False),
    ("lt 1 2", True), ("lt `xy` `xy`", False), ("lt `xy` `xyz`", True),
    ("le 1.5 1.5", True), ("le 1.5 2.5", True), ("le 2.5 1.5", False), ("le 1 1", True),
    ("le 1 2", True), ("le 2 1", False), ("le `xy` `xy`", True), ("le `xy` `xyz`", True),
    ("le `xyz` `xy`", False), ("gt 1.5 1.5", False), ("gt 1.5 2.5", False),
    ("gt 1 1", False), ("gt 2 1", True), ("gt 1 2", False), ("gt `xy` `xy`", False),
    ("gt `xy` `xyz`", False), ("ge 1.5 1.5", True), ("ge 1.5 2.5", False),
    ("ge 2.5 1.5", True), ("ge 1 1", True), ("ge 1 2", False), ("ge 2 1", True),
    ("ge `xy` `xy`", True), ("ge `xy` `xyz`", False), ("ge `xyz` `xy`", True),
    ("eq .NegOne .Three", False), ("lt .NegOne .Three", True),
    ("eq .Map nil", True), ("eq nil .Map", True), ("eq .NilIface 0", False),
    ("eq 0 .NilIface", False), ("eq .NilIface .NilIface", True),
    ("eq .Map .NonNilMap", False),
]  # fmt: skip
CMP_ERR = [
    "eq `xy` 1",  # different types
    "eq 2 2.0",  # different types
    "lt true true",  # unordered types
    "eq .NonNilMap .NonNilMap",  # uncomparable types
    "lt .NilIface 1",  # nil is not ordered
    "ne 1",  # missing argument
    "eq 1",  # missing argument for comparison
]
_CMP_DATA = {"NegOne": -1, "Three": 3, "Map": None, "NonNilMap": {}, "NilIface": None}


@pytest.mark.parametrize(("expr", "want"), CMP_OK, ids=[r[0] for r in CMP_OK])
def test_go_comparison_rows(expr: str, want: bool) -> None:
    assert (
        _run(f"{{{{if {expr}}}}}true{{{{else}}}}false{{{{end}}}}", _CMP_DATA) == str(want).lower()
    )


@pytest.mark.parametrize("expr", CMP_ERR)
def test_go_comparison_error_rows(expr: str) -> None:
    with pytest.raises(g.TemplateError):
        _run(f"{{{{if {expr}}}}}true{{{{else}}}}false{{{{end}}}}", _CMP_DATA)


PARSE_ERR = [
    ("missing end", "{{if true}}x", g.TemplateError),
    ("unexpected end", "x{{end}}", g.TemplateError),
    ("else outside if", "{{else}}", g.TemplateError),
    ("two elses", "{{if 1}}a{{else}}b{{else}}c{{end}}", g.TemplateError),
    ("if without value", "{{if}}x{{end}}", g.TemplateError),
    ("unclosed action", "{{.x", g.TemplateError),
    ("unknown function", "{{nope 1}}", g.UnsupportedTemplate),
    ("with", "{{with .X}}{{.}}{{end}}", g.UnsupportedTemplate),
    ("two range variables", "{{range $i, $e := .SI}}{{end}}", g.UnsupportedTemplate),
    ("range without end", "{{range .SI}}x", g.TemplateError),
    ("else if in range", "{{range .SI}}{{else if 1}}{{end}}", g.TemplateError),
    ("else with", "{{if 0}}{{else with 1}}{{end}}", g.UnsupportedTemplate),
]


@pytest.mark.parametrize(("name", "text", "error"), PARSE_ERR, ids=[r[0] for r in PARSE_ERR])
def test_templates_that_do_not_parse_or_use_what_is_not_implemented_fail_at_parse(
    name: str, text: str, error: type[Exception]
) -> None:
    with pytest.raises(error):
        g.parse(text, _TEST_FUNCS)


# (name, template, output) from execTests' "Range" and "Variables" sections (Go 1.22's
# range over an int among them), on the same data.
RANGE_OK = [
    ("$ int", "{{$}}", "map[I:17]"),
    ("with $x int", "{{$x := .I}}{{$x}}", "17"),
    ("declare in action", "{{$x := $.I}}{{$x}}", "17"),
    ("simple assignment", "{{$x := 2}}{{$x = 3}}{{$x}}", "3"),
    ("nested assignment", "{{$x := 2}}{{if true}}{{$x = 3}}{{end}}{{$x}}", "3"),
    ("nested declaration", "{{$x := 2}}{{if true}}{{$x := 3}}{{end}}{{$x}}", "2"),
    ("range []int", "{{range .SI}}-{{.}}-{{end}}", "-3--4--5-"),
    ("range empty no else", "{{range .SIEmpty}}-{{.}}-{{end}}", ""),
    ("range []int else", "{{range .SI}}-{{.}}-{{else}}EMPTY{{end}}", "-3--4--5-"),
    ("range empty else", "{{range .SIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY"),
    ("range map", "{{range .MSI}}-{{.}}-{{end}}", "-1--3--2-"),
    ("range empty map no else", "{{range .MSIEmpty}}-{{.}}-{{end}}", ""),
    ("range map else", "{{range .MSI}}-{{.}}-{{else}}EMPTY{{end}}", "-1--3--2-"),
    ("range empty map else", "{{range .MSIEmpty}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY"),
    ("range empty interface", "{{range .Empty0}}-{{.}}-{{else}}EMPTY{{end}}", "EMPTY"),
    ("range $x SI", "{{range $x := .SI}}<{{$x}}>{{end}}", "<3><4><5>"),
    ("range $x MSI", "{{range $x := .MSI}}<{{$x}}>{{end}}", "<1><3><2>"),
    ("range $ in block", "{{range .SI}}{{$.I}}{{end}}", "171717"),
    ("range int", "{{range .I}}{{.}}{{end}}", "012345678910111213141516"),
    ("range 3", "{{range 3}}-{{.}}{{end}}", "-0-1-2"),
    ("range declared in body", "{{range .SI}}{{$y := .}}{{$y}}{{end}}", "345"),
    ("field of a variable", "{{$x := .MSI}}{{$x.one}}", "1"),
]


@pytest.mark.parametrize(("name", "text", "want"), RANGE_OK, ids=[r[0] for r in RANGE_OK])
def test_go_range_and_variable_rows(name: str, text: str, want: str) -> None:
    data = {"I": 17} if name == "$ int" else _DATA
    assert _run(text, data) == want


@pytest.mark.parametrize(
    "text",
    [
        "{{range .X}}{{end}}",
        "{{range true}}{{end}}",
        "{{$x = 1}}",
        "{{range .SI}}{{$y := 1}}{{end}}{{$y}}",
    ],
    ids=["range over a string", "range over a bool", "assign undeclared", "out of scope"],
)
def test_range_and_variable_errors(text: str) -> None:
    with pytest.raises(g.TemplateError):
        _run(text, _DATA)


def test_upstreams_claim_template_renders_its_requests_from_params() -> None:
    """dra/templates/resourceclaimtemplate.yaml: Int turns a JSON number into a range
    count, JSON prints a param's value (null when not given) into the YAML."""
    text = (
        "{{$n := (or .numRequests 1) | Int}}{{$sel := (or .selectors nil) | JSON}}"
        "{{range $n}}[req-{{.}} {{$sel}}]{{end}}"
    )
    assert render_text(text, environment(0, 1, {})) == "[req-0 null]"
    params = {"numRequests": 2, "selectors": [{"cel": {"expression": "true"}}]}
    want = '[req-0 [{"cel":{"expression":"true"}}]][req-1 [{"cel":{"expression":"true"}}]]'
    assert render_text(text, environment(0, 1, params)) == want


def test_printing_a_value_nobody_gave_fails_but_testing_it_is_false() -> None:
    assert _run("{{if .zz}}a{{else}}b{{end}}", {}) == "b"
    assert _run("{{if eq .zz `single`}}a{{else}}b{{end}}", {}) == "b"
    with pytest.raises(g.MissingValue):
        _run("{{.zz}}", {})
    with pytest.raises(g.MissingValue):
        _run("{{AddInt 0 .zz}}", {})


def test_template_params_are_json_numbers_and_index_an_int() -> None:
    """upstream decodes template params with encoding/json: `eq .n 2` compares a float64
    with an int and fails there, `eq .n 2.0` holds; .Index and .Count are Go ints."""
    env = environment(3, 4, {"n": 2, "s": "x", "b": True, "l": [1]})
    assert env == {"n": 2.0, "s": "x", "b": True, "l": [1.0], "Index": 3, "Count": 4}
    assert render_text("{{if eq .n 2.0}}{{.n}}{{end}}-{{eq .Index 3}}", env) == "2-true"
    with pytest.raises(g.TemplateError, match="incompatible types"):
        render_text("{{eq .n 2}}", env)


def test_upstream_gang_pod_template_attaches_the_pod_to_its_group_only_with_a_mode(
    tmp_path: Any,
) -> None:
    """default_preemption/templates/gang-pod.yaml's actions, as upstream runs them."""
    text = (
        "kind: Pod\nspec:\n"
        "  priority: {{if .priority}}{{AddInt 0 .priority}}{{else}}1000{{end}}\n"
        "  {{if .disruptionMode}}\n  schedulingGroup:\n"
        "    podGroupName: gang-{{DivideInt .Index .podsPerGroup}}\n  {{end}}\n"
    )
    t = Template(path="p.yaml", source="p.yaml", text=text)
    with_mode = {"priority": 7, "podsPerGroup": 2, "disruptionMode": "all"}
    assert t.render(3, 4, with_mode)["spec"] == {
        "priority": 7,
        "schedulingGroup": {"podGroupName": "gang-1"},
    }
    assert t.render(3, 4, {"podsPerGroup": 2, "disruptionMode": ""})["spec"] == {"priority": 1000}


def test_a_function_map_entry_overrides_a_builtin_as_gos_funcmap_does() -> None:
    funcs = {"eq": lambda *xs: "mine", "and": lambda *xs: "also mine"}
    assert g.execute(g.parse("{{eq 1 2.0}} {{and 0 1}}", funcs), {}, funcs) == "mine also mine"
