"""List-type attributes in CEL selectors (DRAListTypeAttributes): upstream's compile_test.go
rows with list values or includes() (k8s.io/dynamic-resource-allocation/cel, 3d036712),
run on kubera's CEL layer. A list attribute reads as a CEL list (versions as Semver
values); `x.includes(v)` is `v in x` for a list, `x == v` for a scalar, and refuses lists
longer than 48 values. Upstream's NewExpressions rows (includes() undeclared while the gate
is off) are left out: kubera compiles every selector in one environment. dracore."""

from __future__ import annotations

import re
from typing import Any

import pytest

from services.api.dra import cel
from tests.builders import device

DRA = "dra.example.com"

# name: (expression, attribute name, attribute value, outcome): True/False or
# ("runtime", part of the error).
CASES: dict[str, tuple[str, str, dict[str, Any], Any]] = {
    "list-result-type-causes-match-error": (
        'device.attributes["dra.example.com"].names',
        "names",
        {"strings": ["fish", "bird"]},
        ("runtime", "CEL result of type list could not be converted to bool"),
    ),
    "includes-function-can-evaluate": (
        'device.attributes["dra.example.com"].name.includes("fish")',
        "name",
        {"strings": ["fish", "bird"]},
        True,
    ),
    "list-of-bool": (
        'device.attributes["dra.example.com"].names.size() == 2',
        "names",
        {"bools": [True, False]},
        True,
    ),
    "list-of-int": (
        'device.attributes["dra.example.com"].names.size() == 2',
        "names",
        {"ints": [1, 2]},
        True,
    ),
    "list-of-string": (
        'device.attributes["dra.example.com"].names.size() == 2',
        "names",
        {"strings": ["fish", "bird"]},
        True,
    ),
    "list-of-semver": (
        'device.attributes["dra.example.com"].names.size() == 2',
        "names",
        {"versions": ["1.0.0", "2.0.0"]},
        True,
    ),
    "macro-on-list-of-int": (
        'device.attributes["dra.example.com"].names.exists(x, x > 0)',
        "names",
        {"ints": [1, 2]},
        True,
    ),
    "macro-on-list-of-string": (
        'device.attributes["dra.example.com"].names.all(x, x != "")',
        "names",
        {"strings": ["fish", "bird"]},
        True,
    ),
    "macro-on-list-of-semver": (
        'device.attributes["dra.example.com"].names.all(x, x.isGreaterThan(semver("0.0.1")))',
        "names",
        {"versions": ["1.0.0", "2.0.0"]},
        True,
    ),
    "includes-function-on-bool-scalar-positive": (
        'device.attributes["dra.example.com"].name.includes(true)',
        "name",
        {"bool": True},
        True,
    ),
    "includes-function-on-bool-scalar-negative": (
        'device.attributes["dra.example.com"].name.includes(true)',
        "name",
        {"bool": False},
        False,
    ),
    "includes-function-on-bool-list-positive": (
        'device.attributes["dra.example.com"].name.includes(true)',
        "name",
        {"bools": [True, False]},
        True,
    ),
    "includes-function-on-bool-list-negative": (
        'device.attributes["dra.example.com"].name.includes(false)',
        "name",
        {"bools": [True, True]},
        False,
    ),
    "includes-function-on-int-scalar-positive": (
        'device.attributes["dra.example.com"].name.includes(1)',
        "name",
        {"int": 1},
        True,
    ),
    "includes-function-on-int-scalar-negative": (
        'device.attributes["dra.example.com"].name.includes(1)',
        "name",
        {"int": 2},
        False,
    ),
    "includes-function-on-int-list-positive": (
        'device.attributes["dra.example.com"].name.includes(1)',
        "name",
        {"ints": [1, 2]},
        True,
    ),
    "includes-function-on-int-list-negative": (
        'device.attributes["dra.example.com"].name.includes(3)',
        "name",
        {"ints": [1, 2]},
        False,
    ),
    "includes-function-on-string-scalar-positive": (
        'device.attributes["dra.example.com"].name.includes("fish")',
        "name",
        {"string": "fish"},
        True,
    ),
    "includes-function-on-string-scalar-negative": (
        'device.attributes["dra.example.com"].name.includes("bird")',
        "name",
        {"string": "fish"},
        False,
    ),
    "includes-function-on-string-list-positive": (
        'device.attributes["dra.example.com"].name.includes("fish")',
        "name",
        {"strings": ["fish", "bird"]},
        True,
    ),
    "includes-function-on-string-list-negative": (
        'device.attributes["dra.example.com"].name.includes("cat")',
        "name",
        {"strings": ["fish", "bird"]},
        False,
    ),
    "includes-function-on-semver-scalar-positive": (
        'device.attributes["dra.example.com"].name.includes(semver("1.0.0"))',
        "name",
        {"version": "1.0.0"},
        True,
    ),
    "includes-function-on-semver-scalar-negative": (
        'device.attributes["dra.example.com"].name.includes(semver("2.0.0"))',
        "name",
        {"version": "1.0.0"},
        False,
    ),
    "includes-function-on-semver-list-positive": (
        'device.attributes["dra.example.com"].name.includes(semver("1.0.0"))',
        "name",
        {"versions": ["1.0.0", "2.0.0"]},
        True,
    ),
    "includes-function-on-semver-list-negative": (
        'device.attributes["dra.example.com"].name.includes(semver("3.0.0"))',
        "name",
        {"versions": ["1.0.0", "2.0.0"]},
        False,
    ),
    "in-operator-on-list": (
        '1 in device.attributes["dra.example.com"].names',
        "names",
        {"ints": [1, 2, 3]},
        True,
    ),
    # 48 values (upstream ResourceSliceMaxAttributeValuesPerDevice): searched through.
    "includes-function-on-very-long-list-positive": (
        'device.attributes["dra.example.com"].name.includes("value-48")',
        "name",
        {"strings": [f"value-{i}" for i in range(48)]},
        False,
    ),
    "includes-function-on-very-long-list-runtime-error": (
        'device.attributes["dra.example.com"].name.includes("value-49")',
        "name",
        {"strings": [f"value-{i}" for i in range(49)]},
        ("runtime", "'includes' function cannot be applied to lists longer than 48 values"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_list_attribute_selector_as_upstream(name: str) -> None:
    expression, attribute, value, outcome = CASES[name]
    selector = cel.compile_selector(expression)
    dev = device("dev", {attribute: value})
    if isinstance(outcome, tuple):
        with pytest.raises(cel.CELRuntimeError, match=re.escape(outcome[1])):
            selector.matches(DRA, dev)
        return
    assert selector.matches(DRA, dev) is outcome
