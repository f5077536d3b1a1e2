"""Shared plugin helpers: score normalisation, Go arithmetic, toleration matching."""

from __future__ import annotations

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2
from services.api.helpers.taints import (
    find_matching_untolerated_taint,
    is_decimal_integer,
    toleration_tolerates_taint,
)
from services.scheduler.framework.interface import MAX_NODE_SCORE, NodeScore
from services.scheduler.plugins.helpers import (
    default_normalize_score,
    do_not_schedule_taints_filter,
    go_div,
    go_round_div,
)

# Upstream helper/normalize_score_test.go TestDefaultNormalizeScore, all nine cases.
NORMALIZE = [
    (False, [1, 2, 3, 4], [25, 50, 75, 100], "scales to the max"),
    (True, [1, 2, 3, 4], [75, 50, 25, 0], "reverse subtracts from 100"),
    (False, [1000, 10, 20, 30], [100, 1, 2, 3], "integer division truncates"),
    (True, [1000, 10, 20, 30], [0, 99, 98, 97], "reverse after truncation"),
    (False, [1, 1, 1, 1], [100, 100, 100, 100], "all equal become max"),
    (False, [1000, 1, 1, 1], [100, 0, 0, 0], "small scores vanish"),
    (True, [0, 1, 1, 1], [100, 0, 0, 0], "reverse of zero is max"),
    (False, [0, 0, 0, 0], [0, 0, 0, 0], "all zero stay zero"),
    (True, [0, 0, 0, 0], [100, 100, 100, 100], "all zero reversed become max"),
]


@pytest.mark.parametrize(
    ("reverse", "scores", "want", "rule"), NORMALIZE, ids=[c[3] for c in NORMALIZE]
)
def test_default_normalize_score(
    reverse: bool, scores: list[int], want: list[int], rule: str
) -> None:
    got = [NodeScore(f"n{i}", s) for i, s in enumerate(scores)]
    assert default_normalize_score(MAX_NODE_SCORE, reverse, got).is_success()
    assert [s.score for s in got] == want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)],
    ids=["positive", "negative dividend truncates up", "negative divisor", "both negative", "zero"],
)
def test_go_div_truncates_toward_zero(a: int, b: int, want: int) -> None:
    assert go_div(a, b) == want


@pytest.mark.parametrize(
    ("a", "b", "want"),
    [(75, 2, 38), (74, 2, 37), (5, 3, 2), (4, 3, 1), (0, 7, 0)],
    ids=["half rounds away from zero", "exact", "above half", "below half", "zero"],
)
def test_go_round_div_is_math_round(a: int, b: int, want: int) -> None:
    assert go_round_div(a, b) == want


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("0", True),
        ("950", True),
        ("-5", True),
        ("", False),
        ("-", False),
        ("-0", False),
        ("007", False),
        ("+5", False),
        ("1.5", False),
        ("high", False),
    ],
    ids=[
        "zero",
        "positive",
        "negative",
        "empty",
        "lone minus",
        "minus zero",
        "leading zeros",
        "plus sign",
        "decimal point",
        "word",
    ],
)
def test_is_decimal_integer_is_canonical_form(value: str, ok: bool) -> None:
    assert is_decimal_integer(value) is ok


def tol(**kw: object) -> core_pb2.Toleration:
    return json_format.ParseDict(kw, core_pb2.Toleration())


def taint(key: str, value: str, effect: str) -> core_pb2.Taint:
    return core_pb2.Taint(key=key, value=value, effect=effect)


TOLERATES = [
    (
        tol(key="k", operator="Equal", value="v", effect="NoSchedule"),
        taint("k", "v", "NoSchedule"),
        True,
        "Equal with same key value and effect",
    ),
    (
        tol(key="k", value="v", effect="NoSchedule"),
        taint("k", "v", "NoSchedule"),
        True,
        "empty operator means Equal",
    ),
    (
        tol(key="k", operator="Equal", value="w", effect="NoSchedule"),
        taint("k", "v", "NoSchedule"),
        False,
        "Equal with another value",
    ),
    (
        tol(key="k", operator="Exists", effect="NoSchedule"),
        taint("k", "any", "NoSchedule"),
        True,
        "Exists matches any value",
    ),
    (
        tol(key="k", operator="Exists", effect="NoSchedule"),
        taint("other", "v", "NoSchedule"),
        False,
        "Exists still needs the key",
    ),
    (
        tol(operator="Exists"),
        taint("whatever", "v", "NoExecute"),
        True,
        "empty key with Exists tolerates everything",
    ),
    (
        tol(operator="Exists", effect="NoSchedule"),
        taint("whatever", "v", "NoExecute"),
        False,
        "empty key with Exists still matches the effect",
    ),
    (
        tol(key="k", operator="Equal", value="v"),
        taint("k", "v", "PreferNoSchedule"),
        True,
        "empty effect matches every effect",
    ),
    (
        tol(key="k", operator="Equal", value="v", effect="NoSchedule"),
        taint("k", "v", "NoExecute"),
        False,
        "different effect",
    ),
    (
        tol(value="v"),
        taint("k", "v", "NoSchedule"),
        True,
        "empty key with Equal compares only the value (validation forbids it)",
    ),
    (
        tol(key="sla", operator="Gt", value="900", effect="NoSchedule"),
        taint("sla", "950", "NoSchedule"),
        True,
        "Gt: taint value 950 greater than 900",
    ),
    (
        tol(key="sla", operator="Gt", value="950", effect="NoSchedule"),
        taint("sla", "800", "NoSchedule"),
        False,
        "Gt: taint value 800 not greater than 950",
    ),
    (
        tol(key="sla", operator="Gt", value="950"),
        taint("sla", "950", "NoSchedule"),
        False,
        "Gt is strict",
    ),
    (
        tol(key="sla", operator="Lt", value="1000", effect="NoSchedule"),
        taint("sla", "950", "NoSchedule"),
        True,
        "Lt: taint value 950 less than 1000",
    ),
    (
        tol(key="sla", operator="Lt", value="900"),
        taint("sla", "950", "NoSchedule"),
        False,
        "Lt: taint value 950 not less than 900",
    ),
    (
        tol(key="sla", operator="Lt", value="0"),
        taint("sla", "-5", "NoSchedule"),
        True,
        "Lt with negative taint value",
    ),
    (
        tol(key="sla", operator="Gt", value="900"),
        taint("sla", "high", "NoSchedule"),
        False,
        "Gt with a non-numeric taint value never matches",
    ),
    (
        tol(key="sla", operator="Gt", value="900"),
        taint("sla", "0950", "NoSchedule"),
        False,
        "Gt with a non-canonical taint value never matches",
    ),
    (
        tol(key="sla", operator="Gt", value="abc"),
        taint("sla", "950", "NoSchedule"),
        False,
        "Gt with a non-numeric toleration value never matches",
    ),
    (
        tol(key="sla", operator="Gt", value="9"),
        taint("sla", "99999999999999999999", "NoSchedule"),
        False,
        "Gt with a taint value beyond int64 never matches",
    ),
    (
        tol(key="k", operator="Bogus", value="v"),
        taint("k", "v", "NoSchedule"),
        False,
        "unknown operator never matches",
    ),
]


@pytest.mark.parametrize(
    ("toleration", "the_taint", "want", "rule"), TOLERATES, ids=[c[3] for c in TOLERATES]
)
def test_toleration_tolerates_taint(
    toleration: core_pb2.Toleration, the_taint: core_pb2.Taint, want: bool, rule: str
) -> None:
    assert toleration_tolerates_taint(toleration, the_taint) is want


def test_find_matching_untolerated_taint_returns_first_filtered_in_node_order() -> None:
    taints = [
        taint("soft", "", "PreferNoSchedule"),
        taint("a", "1", "NoSchedule"),
        taint("b", "2", "NoExecute"),
    ]
    tolerations = [tol(key="a", operator="Exists")]
    got = find_matching_untolerated_taint(taints, tolerations, do_not_schedule_taints_filter)
    assert got is not None and got.key == "b"
    assert find_matching_untolerated_taint(taints, [tol(operator="Exists")]) is None
