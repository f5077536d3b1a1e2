"""kubera's hollow-kubelet annotations are checked at admission: a `kubera.io/usage` or
`kubera.io/stages` the kubelet could not play (values that overflow its float sums or its
timers) is refused with the annotation and the field inside it named."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.api.machinery.errors import InvalidError
from services.apiserver.registry import ApiServer
from services.storage.memory import MemoryStorage
from tests.apiserver.conftest import obj, running_apiserver
from tests.builders import pod


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with running_apiserver(MemoryStorage()) as server:
        yield server


def annotated(annotations: dict[str, str]) -> Any:
    p = pod("p")
    p.metadata.annotations.update(annotations)
    return p


def deployment(annotations: dict[str, str]) -> Any:
    return obj(
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "d", "namespace": "default"},
            "spec": {
                "selector": {"matchLabels": {"app": "d"}},
                "template": {
                    "metadata": {"labels": {"app": "d"}, "annotations": annotations},
                    "spec": {"containers": [{"name": "c", "image": "i"}]},
                },
            },
        }
    )


@pytest.mark.parametrize(
    ("make", "annotations", "expected"),
    [
        pytest.param(
            annotated,
            {"kubera.io/usage": json.dumps({"memory": "1e400"})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/usage]: Invalid value: '
            'memory: "1e400": must be at most 9223372036854775807m '
            "(kubera holds quantities as int64 milli-units)",
            id="usage-quantity-beyond-int64",
        ),
        pytest.param(
            annotated,
            {"kubera.io/usage": '{"memory": {"ratePerSecond": NaN}}'},
            'Pod "p" is invalid: metadata.annotations[kubera.io/usage]: Invalid value: '
            'memory.ratePerSecond: nan: expected a quantity like "200Mi"',
            id="usage-rate-nan",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": json.dumps({"runDuration": 1e18})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "runDuration: 1e+18: must be at most 2147483647s (kubera's limit)",
            id="stage-beyond-int32-seconds",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": "{"},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "not valid JSON",
            id="stages-not-json",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": json.dumps({"exitCode": 256})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "exitCode: 256: expected an integer from 0 to 255",
            id="exit-code-beyond-a-byte",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": json.dumps({"containers": {"c": {"exitCode": True}}})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "containers.c.exitCode: True: expected an integer from 0 to 255",
            id="container-exit-code-not-an-integer",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": json.dumps({"containers": {"c": {"startDelay": "1s"}}})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "containers.c.startDelay: unknown field (expected one of runDuration, exitCode, "
            "failureRate)",
            id="container-key-that-is-pod-wide",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": json.dumps({"containers": {"nosuch": {"exitCode": 1}}})},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "containers.nosuch: the pod has no container or init container named 'nosuch'",
            id="container-the-pod-does-not-have",
        ),
        pytest.param(
            deployment,
            {"kubera.io/stages": json.dumps({"containers": {"c": {"failureRate": 2}}})},
            'Deployment "d" is invalid: spec.template.metadata.annotations[kubera.io/stages]: '
            "Invalid value: containers.c.failureRate: 2: expected a number from 0 to 1",
            id="template-container-failure-rate-above-one",
        ),
        pytest.param(
            annotated,
            {"kubera.io/usage": "[" * 50_000 + "]" * 50_000},
            'Pod "p" is invalid: metadata.annotations[kubera.io/usage]: Invalid value: '
            "kubera.io/usage is nested too deeply (more than 100 levels)",
            id="usage-nested-too-deeply",
        ),
        pytest.param(
            annotated,
            {"kubera.io/stages": '{"a":' * 50_000 + "1" + "}" * 50_000},
            'Pod "p" is invalid: metadata.annotations[kubera.io/stages]: Invalid value: '
            "kubera.io/stages is nested too deeply (more than 100 levels)",
            id="stages-nested-too-deeply",
        ),
        pytest.param(
            deployment,
            {
                "kubera.io/usage": json.dumps(
                    {"pids": {"periodic": {"periodSeconds": 1e-9, "amplitude": "1"}}}
                )
            },
            'Deployment "d" is invalid: spec.template.metadata.annotations[kubera.io/usage]: '
            "Invalid value: pids.periodic.periodSeconds: 1e-09: must be at least 0.001",
            id="template-usage-period-too-short",
        ),
    ],
)
async def test_an_annotation_the_kubelet_cannot_play_is_refused(
    api: ApiServer, make: Any, annotations: dict[str, str], expected: str
) -> None:
    with pytest.raises(InvalidError) as info:
        await api.create(make(annotations))
    assert str(info.value).startswith(expected), str(info.value)


async def test_annotations_the_kubelet_can_play_are_admitted(api: ApiServer) -> None:
    usage = {"memory": {"start": "200Mi", "ratePerSecond": "1Mi", "max": "8Pi"}}
    stages = {
        "runDuration": 2**31 - 1,
        "startDelay": "1s",
        "exitCode": 255,
        "containers": {"c": {"runDuration": "5s", "exitCode": 0, "failureRate": 0.5}},
    }
    await api.create(
        annotated({"kubera.io/usage": json.dumps(usage), "kubera.io/stages": json.dumps(stages)})
    )
