"""Device selectors in CEL: upstream's compile_test.go table (k8s.io/dynamic-resource-allocation/cel,
scalar attributes; list-type attributes are test_cel_lists.py; no consumable capacity), and
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
    # Upstream's expression (regex find included, celbase.py): it compiles and is stopped
    # at run time; kubera's bound for the device exceeds the limit before evaluating.
    "expensive": (
        "[1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(x, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(y, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z2, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z3, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z4, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].all(z5, int('1'.find('[0-9]*')) < 100)))))))",
        DRA,
        {},
        {},
        ("runtime", "operation cancelled: actual cost limit exceeded"),
    ),
    # Upstream's allow_multiple_allocations_enabled (DRAConsumableCapacity is on by
    # default): an unset allowMultipleAllocations reads false. Its _disabled twin (an
    # undeclared field with the gate off) is not kept: kubera's CEL environment is one.
    "allow_multiple_allocations_enabled": (
        "device.allowMultipleAllocations == false",
        DRA,
        {},
        {},
        True,
    ),
    "undeclared-device-field": (
        "device.allowsMultipleAllocations == false",
        DRA,
        {},
        {},
        ("compile", "undefined field 'allowsMultipleAllocations'"),
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
    "alias-of-device-has-no-default-domains": (
        'device.attributes["alias.example.com"].size() == 0 && cel.bind(d, device, !("alias.example.com" in d.attributes))',
        DRA,
        {},
        {},
        True,
    ),
    "alias-of-map-has-no-default-domains": (
        'device.capacity["alias.example.com"].size() == 0 && cel.bind(m, device.capacity, !("alias.example.com" in m))',
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


# Kubernetes' CEL libraries, upstream's TestQuantity and TestSemver tables
# (k8s.io/apiserver/pkg/cel/library/quantity_test.go, dynamic-resource-allocation/cel/
# semver_test.go). A selector must be bool, so a value case is written `expr == value`.
LIBRARY: dict[str, tuple[str, Any]] = {
    "quantity/parse": ('quantity("12Mi") == quantity("12582912")', True),
    "quantity/parseInvalidSuffix": (
        'quantity("10Mo") == quantity("1")',
        ("runtime", "quantities must match the regular expression"),
    ),
    "quantity/parseInvalidSuffixPassesRegex": (
        'quantity("10Mm") == quantity("1")',
        ("runtime", "unable to parse quantity's suffix"),
    ),
    "quantity/isQuantity": ('isQuantity("20")', True),
    "quantity/isQuantity_megabytes": ('isQuantity("20M")', True),
    "quantity/isQuantity_mebibytes": ('isQuantity("20Mi")', True),
    "quantity/isQuantity_invalidSuffix": ('isQuantity("20Mo")', False),
    "quantity/isQuantity_passingRegex": ('isQuantity("10Mm")', False),
    "quantity/isQuantity_noOverload": (
        "isQuantity([1, 2, 3])",
        ("compile", "found no matching overload for 'isQuantity' applied to"),
    ),
    "quantity/equality_reflexivity": ('quantity("200M") == quantity("200M")', True),
    "quantity/equality_symmetry": (
        'quantity("200M") == quantity("0.2G") && quantity("0.2G") == quantity("200M")',
        True,
    ),
    "quantity/equality_transitivity": (
        'quantity("2M") == quantity("0.002G") && quantity("2000k") == quantity("2M") && quantity("0.002G") == quantity("2000k")',
        True,
    ),
    "quantity/inequality": ('quantity("200M") == quantity("0.3G")', False),
    "quantity/quantity_less": ('quantity("50M").isLessThan(quantity("50Mi"))', True),
    "quantity/quantity_less_obvious": ('quantity("50M").isLessThan(quantity("100M"))', True),
    "quantity/quantity_less_false": ('quantity("100M").isLessThan(quantity("50M"))', False),
    "quantity/quantity_greater": ('quantity("50Mi").isGreaterThan(quantity("50M"))', True),
    "quantity/quantity_greater_obvious": (
        'quantity("150Mi").isGreaterThan(quantity("100Mi"))',
        True,
    ),
    "quantity/quantity_greater_false": ('quantity("50M").isGreaterThan(quantity("100M"))', False),
    "quantity/compare_equal": ('quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    "quantity/compare_less": ('quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    "quantity/compare_greater": ('quantity("50Mi").compareTo(quantity("50M")) == 1', True),
    "quantity/add_quantity": ('quantity("50k").add(quantity("20")) == quantity("50.02k")', True),
    "quantity/add_int": ('quantity("50k").add(20).isLessThan(quantity("50020"))', False),
    "quantity/sub_quantity": ('quantity("50k").sub(quantity("20")) == quantity("49.98k")', True),
    "quantity/sub_int": ('quantity("50k").sub(20) == quantity("49980")', True),
    "quantity/multiply": ('quantity("50k").mul(2) == quantity("100000")', True),
    "quantity/arith_chain_1": (
        'quantity("50k").add(20).sub(quantity("100k")).asInteger() == -49980',
        True,
    ),
    "quantity/arith_chain": (
        'quantity("50k").add(20).sub(quantity("100k")).sub(-50000).asInteger() == 20',
        True,
    ),
    "quantity/as_integer": ('quantity("50k").asInteger() == 50000', True),
    "quantity/as_integer_error": (
        'quantity("9999999999999999999999999999999999999G").asInteger() == 0',
        ("runtime", "cannot convert value to integer"),
    ),
    "quantity/is_integer_overflow": (
        'quantity("9999999999999999999999999999999999999G").isInteger()',
        False,
    ),
    "quantity/is_integer": ('quantity("50").isInteger()', True),
    "quantity/is_integer_fraction": ('quantity("500m").isInteger()', False),
    "quantity/as_float": ('quantity("50.703k").asApproximateFloat() == 50703.0', True),
    "quantity/sign": (
        'sign(quantity("-1")) == -1 && quantity("0").sign() == 0 && quantity("1m").sign() == 1',
        True,
    ),
    "semver/parse": ('semver("1.2.3") == semver("1.2.3")', True),
    "semver/parseInvalidVersion": (
        'semver("v1.0") == semver("1.0.0")',
        ("runtime", "No Major.Minor.Patch elements found"),
    ),
    "semver/isSemver": ('isSemver("1.2.3-beta.1+build.1")', True),
    "semver/isSemver_false": ('isSemver("v1.0")', False),
    "semver/isSemver_noOverload": (
        "isSemver([1, 2, 3])",
        ("compile", "found no matching overload for 'isSemver' applied to"),
    ),
    "semver/equality_reflexivity": ('semver("1.2.3") == semver("1.2.3")', True),
    "semver/equality_ignores_build": ('semver("1.2.3+a") == semver("1.2.3+b")', True),
    "semver/inequality": ('semver("1.2.3") == semver("1.0.0")', False),
    "semver/semver_less": ('semver("1.0.0").isLessThan(semver("1.2.3"))', True),
    "semver/semver_less_false": ('semver("1.0.0").isLessThan(semver("1.0.0"))', False),
    "semver/semver_greater": ('semver("1.2.3").isGreaterThan(semver("1.0.0"))', True),
    "semver/semver_greater_false": ('semver("1.0.0").isGreaterThan(semver("1.0.0"))', False),
    "semver/compare_equal": ('semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    "semver/compare_less": ('semver("1.0.0").compareTo(semver("1.2.3")) == -1', True),
    "semver/compare_greater": ('semver("1.2.3").compareTo(semver("1.0.0")) == 1', True),
    "semver/major": ('semver("1.2.3").major() == 1', True),
    "semver/minor": ('semver("1.2.3").minor() == 2', True),
    "semver/patch": ('semver("1.2.3").patch() == 3', True),
    "semver/normalize": (
        'semver("v01.01", true) == semver("1.1.0") && isSemver("1.0", true) && !isSemver("1.0")',
        True,
    ),
    "semver/normalize_short_prerelease": (
        'isSemver("1.0-alpha", true)',
        False,
    ),
    "comparison/mixed_types_is_runtime_error": (
        'quantity("1").isGreaterThan(semver("1.0.0"))',
        ("runtime", "no such overload"),
    ),
}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_kubernetes_library_functions_as_upstream(name: str) -> None:
    expression, outcome = LIBRARY[name]
    if isinstance(outcome, tuple) and outcome[0] == "compile":
        with pytest.raises(cel.CELCompileError, match=_literal(outcome[1])):
            cel.compile_selector(expression)
        return
    selector = cel.compile_selector(expression)
    if isinstance(outcome, tuple):
        with pytest.raises(cel.CELRuntimeError, match=_literal(outcome[1])):
            selector.matches(DRA, device())
        return
    assert selector.matches(DRA, device()) is outcome


# semver.org's precedence example, each lower than the next.
PRECEDENCE = [
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-alpha.beta",
    "1.0.0-beta",
    "1.0.0-beta.2",
    "1.0.0-beta.11",
    "1.0.0-rc.1",
    "1.0.0",
    "1.0.1",
    "1.1.0",
    "2.0.0",
]


@pytest.mark.parametrize("lower,higher", list(zip(PRECEDENCE, PRECEDENCE[1:], strict=False)))
def test_semver_orders_by_semver_precedence(lower: str, higher: str) -> None:
    sel = cel.compile_selector(
        f'semver("{lower}").isLessThan(semver("{higher}")) && '
        f'semver("{higher}").compareTo(semver("{lower}")) == 1'
    )
    assert sel.matches(DRA, device()) is True


@pytest.mark.parametrize(
    "text,valid",
    [
        ("1.2.3", True),
        ("0.0.0", True),
        ("1.2.3-beta.1+build.1", True),
        ("1.2.3+build-7", True),
        ("1.2.3-0a", True),
        ("01.2.3", False),  # leading zero
        ("1.02.3", False),
        ("1.2.03", False),
        ("1.2", False),
        ("v1.2.3", False),
        ("1.2.3-", False),  # empty prerelease
        ("1.2.3-01", False),  # numeric prerelease with a leading zero
        ("1.2.3-a..b", False),
        ("1.2.3+", False),  # empty build
        ("1.2.3-a_b", False),
        ("", False),
        ("9223372036854775807.0.0", True),  # the largest CEL int
        ("9223372036854775808.0.0", False),  # beyond int64: no CEL value (blang: uint64)
        ("1.99999999999999999999999.0", False),
        ("1.0.99999999999999999999999", False),
    ],
)
def test_semver_parse_follows_semver_2(text: str, valid: bool) -> None:
    sel = cel.compile_selector(f'isSemver("{text}")')
    assert sel.matches(DRA, device()) is valid


def test_version_attribute_that_is_not_semver_is_runtime_error() -> None:
    sel = cel.compile_selector('device.attributes["dra.example.com"].v.major() == 1')
    with pytest.raises(cel.CELRuntimeError, match="attribute v: parse semantic version"):
        sel.matches(DRA, device("d", {"v": {"version": "1.0"}}))


def test_compile_selector_caches_by_expression() -> None:
    expr = 'device.driver == "cache.example.com"'
    assert cel.compile_selector(expr) is cel.compile_selector(expr)


def test_expression_longer_than_upstream_limit_does_not_compile() -> None:
    expr = "true || " * (cel.MAX_EXPRESSION_LENGTH // 8) + "true"
    with pytest.raises(cel.CELCompileError, match="may not be more than 10240 bytes"):
        cel.compile_selector(expr)


def test_domain_named_after_device_was_seen_still_reads_as_empty_map() -> None:
    # The device is converted (and cached) before any selector names "late.example.com";
    # a later selector that does must still see the upstream default.
    dev = device("late", {"model": "A100"})
    assert cel.compile_selector('device.attributes["dra.example.com"].model == "A100"').matches(
        DRA, dev
    )
    late = cel.compile_selector('has(device.attributes["late.example.com"].model)')
    assert late.matches(DRA, dev) is False


def test_whole_map_read_after_device_was_seen_has_no_default_domains() -> None:
    dev = device("whole", {"model": "A100"})
    assert cel.compile_selector('device.attributes["gone.example.com"].size() == 0').matches(
        DRA, dev
    )
    # "gone.example.com" is a default domain of the indexed map, not a real one.
    assert (
        cel.compile_selector('device.attributes.exists(d, d == "gone.example.com")').matches(
            DRA, dev
        )
        is False
    )
    assert (
        cel.compile_selector('"gone.example.com" in device.attributes').matches(DRA, dev) is False
    )


def test_comprehension_variable_named_device_is_not_the_device() -> None:
    sel = cel.compile_selector('["x.io"].all(device, device == "x.io")')
    assert sel.matches(DRA, device()) is True


def test_same_device_message_with_another_driver_converts_again() -> None:
    dev = device("shared", {"model": "A100"})
    sel = cel.compile_selector('has(device.attributes["dra.example.com"].model)')
    assert sel.matches(DRA, dev) is True
    assert sel.matches("other.example.com", dev) is False


@pytest.mark.parametrize(
    "expression,compiles",
    [
        # 10^7 iterations (upstream's "expensive" case) and 32^4 over device data: too
        # complex for validation.
        (
            "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, true))))))",
            False,
        ),
        (
            "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, device.attributes.all(d, true))))",
            False,
        ),
        # Concatenated lists count by their total length: 40^4 > 10^6.
        (
            "("
            + "+".join(["[1,2,3,4,5,6,7,8,9,10]"] * 4)
            + ").all(a, ("
            + "+".join(["[1,2,3,4,5,6,7,8,9,10]"] * 4)
            + ").all(b, ("
            + "+".join(["[1,2,3,4,5,6,7,8,9,10]"] * 4)
            + ").all(c, ("
            + "+".join(["[1,2,3,4,5,6,7,8,9,10]"] * 4)
            + ").all(d, true))))",
            False,
        ),
        # Two nested loops over device data, or a typical selector: far below the limit.
        ("device.attributes.all(a, device.attributes.exists(b, a == b))", True),
        (
            'device.driver == "gpu.example.com" && device.attributes["gpu.example.com"].model == "A100"',
            True,
        ),
    ],
)
def test_worst_case_cost_above_upstream_limit_is_too_complex(
    expression: str, compiles: bool
) -> None:
    """Every one compiles (as upstream's compiler, for stored expressions); validation holds
    the worst case against the limit."""
    assert (cel.compile_selector(expression).max_cost <= cel.MAX_COST) is compiles


NESTED_OVER_DEVICE = (
    "device.attributes.all(a, device.attributes.all(b, device.attributes.all(c, "
    "device.attributes.all(d, true))))"
)


@pytest.mark.parametrize(
    ("domains", "stopped"),
    [(1, False), (8, False), (32, True)],
    ids=["one domain", "8 domains", "32 domains"],
)
def test_a_selector_too_costly_for_a_devices_sizes_stops_before_evaluating(
    domains: int, stopped: bool
) -> None:
    """Four nested loops over the device's attribute domains: m**4 steps and more; the
    bound at the device's own m decides, so small devices match and a device with 32
    domains fails with cel-go's error instead of running 32**4 loops."""
    sel = cel.compile_selector(NESTED_OVER_DEVICE)
    assert sel.max_cost > cel.MAX_COST
    dev = device("dev", {f"d{i}.example.com/a": i for i in range(domains)}, {})
    if stopped:
        with pytest.raises(
            cel.CELRuntimeError, match="^operation cancelled: actual cost limit exceeded$"
        ):
            sel.matches(DRA, dev)
    else:
        assert sel.cost(DRA, dev) <= cel.MAX_COST
        assert sel.matches(DRA, dev) is True


def test_a_list_attribute_counts_by_its_length() -> None:
    """A loop over a list-type attribute costs its length: 64 values nested four deep
    (16.7M steps) are stopped; 8 values are not."""
    sel = cel.compile_selector(
        'device.attributes["dra.example.com"].l.all(a, device.attributes["dra.example.com"].l'
        '.all(b, device.attributes["dra.example.com"].l.all(c, device.attributes["dra.example.com"]'
        ".l.all(d, true))))"
    )
    small = device("small", {"l": {"ints": list(range(8))}}, {})
    large = device("large", {"l": {"ints": list(range(64))}}, {})
    assert sel.matches(DRA, small) is True
    with pytest.raises(cel.CELRuntimeError, match="actual cost limit exceeded"):
        sel.matches(DRA, large)


def test_the_allocator_reports_the_cost_limit_as_upstreams_runtime_error() -> None:
    from services.api.dra.allocator import AllocationError

    with pytest.raises(cel.CELRuntimeError) as err:
        cel.compile_selector(CASES["expensive"][0]).matches(DRA, device("dev", {}, {}))
    assert str(err.value) == cel.COST_LIMIT_EXCEEDED
    assert AllocationError  # the allocator wraps it: "...: CEL runtime error: <this>"


def test_matches_stay_right_when_device_caches_roll_over(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cel, "ACTIVATION_CACHE_SIZE", 2)
    monkeypatch.setattr(cel, "DEVICE_CACHE_SIZE", 3)
    devices = [device(f"d{i}", {"index": i}) for i in range(10)]
    sel = cel.compile_selector('device.attributes["dra.example.com"].index % 2 == 0')
    for _ in range(2):
        assert [sel.matches(DRA, d) for d in devices] == [i % 2 == 0 for i in range(10)]


@pytest.mark.parametrize(
    "expression,message",
    [
        ('device.attributes["dra.example.com"].missing', "no such key: missing"),
        (
            'quantity("9999999999999999999999999999999999999G").asInteger() == 0',
            "cannot convert value to integer",
        ),
    ],
)
def test_runtime_error_message_is_upstream_wording_without_status_code(
    expression: str, message: str
) -> None:
    with pytest.raises(cel.CELRuntimeError) as err:
        cel.compile_selector(expression).matches(DRA, device())
    assert str(err.value) == message


def test_device_is_converted_once_for_many_selectors_and_matches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    converted: list[str] = []
    real = cel._device_value

    def counting(driver: str, dev: Any) -> Any:
        converted.append(dev.name)
        return real(driver, dev)

    monkeypatch.setattr(cel, "_device_value", counting)
    cel._devices.clear()
    first, same_content = device("once", {"index": 1}), device("once", {"index": 1})
    selectors = [
        cel.compile_selector(f'device.attributes["dra.example.com"].index < {n}') for n in (2, 3)
    ]
    for _ in range(3):
        assert all(s.matches(DRA, first) for s in selectors)
    assert converted == ["once"]
    # Another message (a new informer object) is another device, even with equal content.
    assert selectors[0].matches(DRA, same_content)
    assert converted == ["once", "once"]


def test_compile_cache_keeps_the_least_recently_used_out(monkeypatch: pytest.MonkeyPatch) -> None:
    """upstream TestCacheSemantic: successes are cached, failures are not, and a third
    entry pushes out the least recently used of two."""
    from collections import OrderedDict

    monkeypatch.setattr(cel, "COMPILE_CACHE_SIZE", 2)
    monkeypatch.setattr(cel, "_compiled", OrderedDict())
    true = cel.compile_selector("true")
    assert cel.compile_selector("true") is true
    for _ in range(2):
        with pytest.raises(cel.CELCompileError):
            cel.compile_selector("no-such-variable")
    assert "no-such-variable" not in cel._compiled
    false = cel.compile_selector("false")
    assert cel.compile_selector("false") is false
    assert cel.compile_selector("true") is true  # now the most recently used
    other = cel.compile_selector("false && true")
    assert cel.compile_selector("false && true") is other
    assert cel.compile_selector("true") is true
    assert cel.compile_selector("false") is not false  # evicted, compiled anew


def test_compile_and_match_from_many_threads() -> None:
    """upstream TestCacheConcurrency, with matching too."""
    from concurrent.futures import ThreadPoolExecutor

    dev = device("threads", {"index": 3})

    def work(i: int) -> bool:
        sel = cel.compile_selector(f'{i} == {i} && device.attributes["dra.example.com"].index == 3')
        return sel.matches(DRA, dev)

    with ThreadPoolExecutor(max_workers=8) as pool:
        assert all(pool.map(work, range(64)))
