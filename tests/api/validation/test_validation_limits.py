"""Values kubera cannot represent are refused at validation, each with its field path.

Upstream accepts any non-negative quantity and any int64 duration; kubera sums quantities
as int64 milli-units and adds durations to "now" for timers and timestamps, so it refuses
what would overflow there, and says that the limit is its own. One row per place a value
is stored and later summed or timed; the edge rows show the largest value still accepted.
"""

from __future__ import annotations

from typing import Any

import pytest

from services.api.validation import validate_grace_period_seconds
from tests.api.validation.test_validation import (
    DEPLOYMENT,
    NODE,
    PDB,
    POD,
    RUNTIME_CLASS,
    edit,
    errors_of,
)

TOO_BIG = "must be at most 9223372036854775807m (kubera holds quantities as int64 milli-units)"
TOO_LONG = (
    "must be at most 2147483647 (kubera holds durations in seconds as int32: "
    "it adds them to the current time for timers and timestamps)"
)


def _container(**resources: Any) -> list[dict[str, Any]]:
    return [{"name": "app", "image": "nginx", "resources": resources}]


REFUSED = [
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(requests={"cpu": "1e17"})),
        f'spec.containers[0].resources.requests[cpu]: Invalid value: "100e15": {TOO_BIG}',
        id="cpu-request-1e17",
    ),
    pytest.param(
        "Pod",
        edit(
            POD, spec__containers=_container(requests={"cpu": "99999999999999999999999999999999"})
        ),
        "spec.containers[0].resources.requests[cpu]: Invalid value: "
        f'"99999999999999999999999999999999": {TOO_BIG}',
        id="cpu-request-32-digits",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(requests={"memory": "1e400"})),
        f'spec.containers[0].resources.requests[memory]: Invalid value: "10e399": {TOO_BIG}',
        id="memory-request-1e400",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(limits={"memory": "8Ei"})),
        f'spec.containers[0].resources.limits[memory]: Invalid value: "9223372036854775807": {TOO_BIG}',
        id="memory-limit-8Ei-is-int64-bytes-not-milli",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(requests={"cpu": "9223372036854775808m"})),
        f'spec.containers[0].resources.requests[cpu]: Invalid value: "9223372036854775808m": {TOO_BIG}',
        id="cpu-one-milli-past-int64",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__initContainers=_container(requests={"ephemeral-storage": "1e19"}),
        ),
        f'spec.initContainers[0].resources.requests[ephemeral-storage]: Invalid value: "10e18": {TOO_BIG}',
        id="init-container-request",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__containers=_container(
                requests={"example.com/gpu": "1e40"}, limits={"example.com/gpu": "1e40"}
            ),
        ),
        f'spec.containers[0].resources.limits[example.com/gpu]: Invalid value: "10e39": {TOO_BIG}',
        id="extended-resource-checked-before-the-integer-rule",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__containers=_container(
                requests={"cpu": "1", "hugepages-2Mi": "1e400"},
                limits={"hugepages-2Mi": "1e400"},
            ),
        ),
        f'spec.containers[0].resources.limits[hugepages-2Mi]: Invalid value: "10e399": {TOO_BIG}',
        id="hugepages-checked-before-the-page-multiple-rule",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__overhead={"cpu": "1e17"}),
        f'spec.overhead[cpu]: Invalid value: "100e15": {TOO_BIG}',
        id="pod-overhead",
    ),
    pytest.param(
        "Node",
        edit(NODE, status={"capacity": {"memory": "1e400"}}),
        f'status.capacity[memory]: Invalid value: "10e399": {TOO_BIG}',
        id="node-capacity",
    ),
    pytest.param(
        "Node",
        edit(NODE, status={"allocatable": {"cpu": "1e17"}}),
        f'status.allocatable[cpu]: Invalid value: "100e15": {TOO_BIG}',
        id="node-allocatable",
    ),
    pytest.param(
        "RuntimeClass",
        edit(RUNTIME_CLASS, overhead={"podFixed": {"memory": "1e17"}}),
        f'overhead.podFixed[memory]: Invalid value: "100e15": {TOO_BIG}',
        id="runtime-class-overhead",
    ),
    pytest.param(
        "Deployment",
        edit(
            DEPLOYMENT,
            spec__template__spec__containers=_container(requests={"cpu": "1e17"}),
        ),
        "spec.template.spec.containers[0].resources.requests[cpu]: "
        f'Invalid value: "100e15": {TOO_BIG}',
        id="workload-template",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__terminationGracePeriodSeconds=str(2**63 - 1)),
        f"spec.terminationGracePeriodSeconds: Invalid value: 9223372036854775807: {TOO_LONG}",
        id="termination-grace-period-int64-max",
    ),
    pytest.param(
        "Deployment",
        edit(DEPLOYMENT, spec__template__spec__terminationGracePeriodSeconds="1000000000000"),
        f"spec.template.spec.terminationGracePeriodSeconds: Invalid value: 1000000000000: {TOO_LONG}",
        id="termination-grace-period-in-a-template",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__tolerations=[
                {
                    "key": "k",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": "1000000000000000000",
                }
            ],
        ),
        f"spec.tolerations[0].tolerationSeconds: Invalid value: 1000000000000000000: {TOO_LONG}",
        id="toleration-seconds-1e18",
    ),
    pytest.param(
        "RuntimeClass",
        edit(
            RUNTIME_CLASS,
            scheduling={
                "tolerations": [
                    {
                        "operator": "Exists",
                        "effect": "NoExecute",
                        "tolerationSeconds": "2147483648",
                    }
                ]
            },
        ),
        f"scheduling.tolerations[0].tolerationSeconds: Invalid value: 2147483648: {TOO_LONG}",
        id="runtime-class-toleration-seconds",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__activeDeadlineSeconds="2147483648"),
        "spec.activeDeadlineSeconds: Invalid value: 2147483648: must be between 1 and 2147483647, inclusive",
        id="active-deadline-upstream-int32-bound",
    ),
]


# Integers written as strings: beyond int64 (or past Python's 4300-digit int() limit) they
# get upstream's "must be an integer" words, never an exception out of validation.
LONG = "9" * 5000
GT = {"key": "cores", "operator": "Gt", "values": [LONG]}
REFUSED += [
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__affinity={
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [GT]}]
                    }
                }
            },
        ),
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        f'.nodeSelectorTerms[0].matchExpressions[0].values[0]: Invalid value: "{LONG}": '
        "for 'Gt', 'Lt' operators, the value must be an integer",
        id="gt-value-5000-digits",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__tolerations=[
                {"key": "cores", "operator": "Lt", "value": LONG, "effect": "NoSchedule"}
            ],
        ),
        f'spec.tolerations[0].value: Invalid value: "{LONG}": '
        "value must be a valid integer for operator 'Lt'",
        id="toleration-lt-value-5000-digits",
    ),
    pytest.param(
        "Deployment",
        edit(
            DEPLOYMENT,
            spec__strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": LONG + "%"}},
        ),
        f'spec.strategy.rollingUpdate.maxSurge: Invalid value: "{LONG}%": '
        "must be at most 2147483647% (kubera holds percentages as int32)",
        id="max-surge-percent-5000-digits",
    ),
    pytest.param(
        "PodDisruptionBudget",
        edit(PDB, spec__minAvailable=LONG),
        f'spec.minAvailable: Invalid value: "{LONG}": a valid percent string must be',
        id="pdb-min-available-5000-digits",
    ),
]


@pytest.mark.parametrize(("kind", "manifest", "expected"), REFUSED)
def test_an_unrepresentable_value_is_refused_with_its_path(
    kind: str, manifest: dict[str, Any], expected: str
) -> None:
    errs = errors_of(kind, manifest)
    assert any(e.startswith(expected) for e in errs), f"{expected[:300]!r} not in {errs}"


ACCEPTED = [
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(requests={"cpu": "9223372036854775807m"})),
        id="cpu-int64-max-milli",
    ),
    pytest.param(
        "Pod",
        edit(POD, spec__containers=_container(limits={"memory": "8Pi"})),
        id="memory-8Pi",
    ),
    pytest.param(
        "Node",
        edit(NODE, status={"capacity": {"cpu": "9223372036854775", "pods": "110"}}),
        id="node-cpu-largest-whole-number",
    ),
    pytest.param(
        "Pod",
        edit(
            POD,
            spec__terminationGracePeriodSeconds="2147483647",
            spec__tolerations=[
                {
                    "key": "k",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": "-9223372036854775808",
                }
            ],
        ),
        id="int32-max-grace-and-a-negative-toleration-as-upstream",
    ),
]


@pytest.mark.parametrize(("kind", "manifest"), ACCEPTED)
def test_the_largest_representable_values_are_accepted(kind: str, manifest: dict[str, Any]) -> None:
    assert errors_of(kind, manifest) == []


@pytest.mark.parametrize(
    ("grace", "expected"),
    [
        (0, []),
        (2**31 - 1, []),
        (-1, ["gracePeriodSeconds: Invalid value: -1: must be >= 0"]),
        (2**31, [f"gracePeriodSeconds: Invalid value: 2147483648: {TOO_LONG}"]),
        (2**63 - 1, [f"gracePeriodSeconds: Invalid value: 9223372036854775807: {TOO_LONG}"]),
    ],
)
def test_a_delete_grace_period_is_an_int32_of_seconds(grace: int, expected: list[str]) -> None:
    errs = [str(e) for e in validate_grace_period_seconds(grace)]
    assert errs == expected
