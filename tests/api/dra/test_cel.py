"""Device selectors in CEL: upstream's compile_test.go table (k8s.io/dynamic-resource-allocation/cel,
scalar attributes; kubera has no list-typed attributes and no consumable capacity), and
the quantity and semver libraries (k8s.io/apiserver/pkg/cel/library)."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.dra import cel
from tests.builders import device

DRA = "dra.example.com"
V = {"version": "1.0.0"}

# name: (expression, driver, attributes, capacity, outcome). outcome: True/False (match),
# ("compile", substring) or ("runtime", substring).
CASES: dict[str, tuple[str, str, dict[str, Any], dict[str, str], Any]] = {
    "true": ("true", "", {}, {}, True),
    "false": ("false", "", {}, {}, False),
    "syntax-error": ("?!", "", {}, {}, ("compile", "Syntax error")),
    "type-error": (
        "1",
        "",
        {},
        {},
        ("compile", "must evaluate to bool or the unknown type, not int"),
    ),
    "runtime-error-lookup-identifier": (
        'device.attributes["no-such-domain"].noSuchAttr.isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        ("runtime", "no such key: noSuchAttr"),
    ),
    "runtime-error-lookup-map": (
        'device.attributes["no-such-domain"]["noSuchAttr"].isGreaterThan(quantity("0"))',
        "",
        {},
        {},
        ("runtime", "no such key: noSuchAttr"),
    ),
    "domain-check-negative": ('"no-such-domain" in device.attributes', "", {}, {}, False),
    "domain-check-positive": (
        '"dra.example.com" in device.attributes',
        "",
        {"dra.example.com/something": True},
        {},
        True,
    ),
    "empty-driver-name": ('device.driver == ""', "", {}, {}, True),
    "real-driver-name": ('device.driver == "dra.example.com"', DRA, {}, {}, True),
    "driver-name-qualifier": (
        'device.attributes["dra.example.com"].name',
        DRA,
        {"name": True},
        {},
        True,
    ),
    "driver-name-qualifier-map-lookup": (
        'device.attributes["dra.example.com"]["name"]',
        DRA,
        {"name": True},
        {},
        True,
    ),
    "bind": (
        'cel.bind(dra, device.attributes["dra.example.com"], dra.name)',
        DRA,
        {"name": True},
        {},
        True,
    ),
    "qualified-attribute-name": (
        'device.attributes["other.example.com"].name',
        DRA,
        {"other.example.com/name": True},
        {},
        True,
    ),
    "bool": ('device.attributes["dra.example.com"].name', DRA, {"name": True}, {}, True),
    "int": ('device.attributes["dra.example.com"].name > 0', DRA, {"name": 1}, {}, True),
    "string": (
        'device.attributes["dra.example.com"].name == "fish"',
        DRA,
        {"name": "fish"},
        {},
        True,
    ),
    "version": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("0.0.1"))',
        DRA,
        {"name": V},
        {},
        True,
    ),
    "version_v": (
        'device.attributes["dra.example.com"].name.isGreaterThan(semver("v0.0.1", true)) && isSemver("v1.0.0", true)',
        DRA,
        {"name": V},
        {},
        True,
    ),
    "quantity": (
        'device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        {},
        {"name": "1Mi"},
        True,
    ),
    "check-positive": (
        '"name" in device.capacity["dra.example.com"] && device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        DRA,
        {},
        {"name": "1Mi"},
        True,
    ),
    "check-negative": (
        '!("name" in device.capacity["dra.example.com"]) || device.capacity["dra.example.com"].name.isGreaterThan(quantity("1Ki"))',
        "",
        {},
        {},
        True,
    ),
    "all": (
        """
device.capacity["dra.example.com"].quantity.isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"].bool &&
device.attributes["dra.example.com"].int > 0 &&
device.attributes["dra.example.com"].string == "fish" &&
device.attributes["dra.example.com"].version.isGreaterThan(semver("0.0.1")) &&
device.capacity["dra.example.com"]["quantity"].isGreaterThan(quantity("1Ki")) &&
device.attributes["dra.example.com"]["bool"] &&
device.attributes["dra.example.com"]["int"] > 0 &&
device.attributes["dra.example.com"]["string"] == "fish" &&
device.attributes["dra.example.com"]["version"].isGreaterThan(semver("0.0.1"))
""",
        DRA,
        {"bool": True, "int": 1, "string": "fish", "version": V},
        {"quantity": "1Mi"},
        True,
    ),
    "many": (
        'device.attributes["dra.example.com"].a && device.attributes["dra.example.com"].b && device.attributes["dra.example.com"].c',
        DRA,
        {"a": True, "b": True, "c": True},
        {},
        True,
    ),
    "check_attribute_domains": (
        'device.attributes.exists_one(x, x == "dra.example.com")',
        DRA,
        {"services": "some_example_value"},
        {},
        True,
    ),
    "check_attribute_ids": (
        'device.attributes["dra.example.com"].exists_one(x, x == "services")',
        DRA,
        {"services": "some_example_value"},
        {},
        True,
    ),
    "split_attribute": (
        'device.attributes["dra.example.com"].services.split("example").size() >= 2',
        DRA,
        {"services": "some_example_value"},
        {},
        True,
    ),
    "regexp_attribute": (
        'device.attributes["dra.example.com"].services.matches("[^a]?sym")',
        DRA,
        {"services": "asymetric"},
        {},
        True,
    ),
    "check_capacity_domains": (
        'device.capacity.exists_one(x, x == "dra.example.com")',
        DRA,
        {},
        {"memory": "1Mi"},
        True,
    ),
    "check_capacity_ids": (
        'device.capacity["dra.example.com"].exists_one(x, x == "memory")',
        DRA,
        {},
        {"memory": "1Mi"},
        True,
    ),
    # Upstream compiles this one and stops it at run time ("actual cost limit exceeded");
    # the C++ runtime has no cost limit, so the static estimate refuses it at compile time.
    "expensive": (
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.size()) < 100)))))))",
        DRA,
        {},
        {},
        ("compile", "too complex, exceeds cost limit"),
    ),
    # Upstream's allow_multiple_allocations_disabled: an undeclared field of device.
    "undeclared-device-field": (
        "device.allowMultipleAllocations == false",
        DRA,
        {},
        {},
        ("compile", "undefined field 'allowMultipleAllocations'"),
    ),
    # kubera: the cases around upstream's empty-map default for a missing domain.
    "has-on-missing-domain-is-false": (
        'has(device.attributes["other.example.com"].name)',
        DRA,
        {"name": True},
        {},
        False,
    ),
    "in-on-missing-domain-is-false": (
        '"name" in device.attributes["other.example.com"]',
        DRA,
        {},
        {},
        False,
    ),
    "select-of-missing-domain-is-empty-map": (
        "device.capacity.nodomain.size() == 0",
        DRA,
        {},
        {},
        True,
    ),
    "missing-attribute-unguarded-is-runtime-error": (
        'device.attributes["dra.example.com"].model == "A100"',
        DRA,
        {"index": 1},
        {},
        ("runtime", "no such key: model"),
    ),
    "non-bool-result-is-runtime-error": (
        'device.attributes["dra.example.com"].name',
        DRA,
        {"name": "fish"},
        {},
        ("runtime", "CEL result of type string could not be converted to bool"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_selector_matches_as_upstream(name: str) -> None:
    expression, driver, attributes, capacity, outcome = CASES[name]
    if isinstance(outcome, tuple) and outcome[0] == "compile":
        with pytest.raises(cel.CELCompileError, match=_literal(outcome[1])):
            cel.compile_selector(expression)
        return
    selector = cel.compile_selector(expression)
    dev = device("dev", attributes, capacity)
    if isinstance(outcome, tuple):
        with pytest.raises(cel.CELRuntimeError, match=_literal(outcome[1])):
            selector.matches(driver, dev)
        return
    assert selector.matches(driver, dev) is outcome


def _literal(text: str) -> str:
    import re

    return re.escape(text)
