"""ResourceQuota and LimitRange validation (services/api/validation/policy.py), with cases of
upstream's pkg/apis/core/validation/validation_test.go (TestValidateResourceQuota,
TestValidateLimitRange): field paths and words as upstream's."""

from __future__ import annotations

from typing import Any

import pytest

from services.api import validation
from tests.builders import limit_range, resource_quota


def _errors(kind: str, obj: Any) -> list[str]:
    return [str(e) for e in validation.validate_create(kind, obj)]


def test_a_valid_quota_and_limit_range_pass() -> None:
    rq = resource_quota(
        hard={
            "cpu": "100",
            "memory": "10000",
            "requests.cpu": "100",
            "limits.memory": "10000",
            "pods": "10",
            "count/deployments.apps": "5",
        },
        scope_selector=[
            {"scopeName": "PriorityClass", "operator": "In", "values": ["cluster-services"]}
        ],
    )
    assert _errors("ResourceQuota", rq) == []
    lr = limit_range(
        "abc",
        "default",
        {"type": "Pod", "max": {"cpu": "100m"}, "min": {"cpu": "10m"}},
        {
            "type": "Container",
            "max": {"cpu": "100m"},
            "min": {"cpu": "5m"},
            "default": {"cpu": "50m"},
            "defaultRequest": {"cpu": "10m"},
            "maxLimitRequestRatio": {"cpu": "10"},
        },
    )
    assert _errors("LimitRange", lr) == []


QUOTA_ERRORS = [
    ("negative hard", dict(hard={"cpu": "-10"}), "spec.hard[cpu]: Invalid value: \"-10\": must be greater than or equal to 0"),
    ("unknown scope", dict(hard={"pods": "1"}, scopes=["BadScope"]), "spec.scopes: Invalid value: \"BadScope\": unsupported scope"),
    ("conflicting scopes", dict(hard={"pods": "1"}, scopes=["Terminating", "NotTerminating"]), "conflicting scopes"),
    ("best effort with cpu", dict(hard={"cpu": "1"}, scopes=["BestEffort"]), "unsupported scope applied to resource"),
    (
        "In without values",
        dict(hard={"pods": "1"}, scope_selector=[{"scopeName": "PriorityClass", "operator": "In"}]),
        "spec.scopeSelector.matchExpressions[0].values: Required value: must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
    ),
    (
        "Exists with values",
        dict(hard={"pods": "1"}, scope_selector=[{"scopeName": "PriorityClass", "operator": "Exists", "values": ["a"]}]),
        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
    ),
    (
        "Terminating with In",
        dict(hard={"pods": "1"}, scope_selector=[{"scopeName": "Terminating", "operator": "In", "values": ["a"]}]),
        "spec.scopeSelector.matchExpressions[0].operator: Invalid value: \"In\": must be 'Exist' when scope is any of",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("name", "kw", "want"), QUOTA_ERRORS, ids=[c[0] for c in QUOTA_ERRORS])
def test_bad_quotas_are_refused_naming_the_field(name: str, kw: dict[str, Any], want: str) -> None:
    errs = _errors("ResourceQuota", resource_quota(**kw))
    assert any(want in e for e in errs), errs


LIMIT_ERRORS = [
    ("duplicate type", [{"type": "Pod"}, {"type": "Pod"}], "spec.limits[1].type: Duplicate value: \"Pod\""),
    ("default on a Pod item", [{"type": "Pod", "default": {"cpu": "1"}}], "spec.limits[0].default: Forbidden: may not be specified when `type` is 'Pod'"),
    ("min above max", [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "2"}}], "spec.limits[0].min[cpu]: Invalid value: \"2\": min value 2 is greater than max value 1"),
    ("default above max", [{"type": "Container", "max": {"cpu": "1"}, "default": {"cpu": "2"}}], "default value 2 is greater than max value 1"),
    ("default request above default", [{"type": "Container", "default": {"cpu": "1"}, "defaultRequest": {"cpu": "2"}}], "default request value 2 is greater than default limit value 1"),
    ("ratio below 1", [{"type": "Container", "maxLimitRequestRatio": {"cpu": "800m"}}], "ratio 800m is less than 1"),
    ("ratio above max/min", [{"type": "Container", "min": {"cpu": "1"}, "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "3"}}], "ratio 3 is greater than max/min = 2"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "items", "want"), LIMIT_ERRORS, ids=[c[0] for c in LIMIT_ERRORS])
def test_bad_limit_ranges_are_refused_naming_the_field(
    name: str, items: list[dict[str, Any]], want: str
) -> None:
    errs = _errors("LimitRange", limit_range("abc", "default", *items))
    assert any(want in e for e in errs), errs
