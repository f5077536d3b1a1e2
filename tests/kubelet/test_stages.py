"""A pod's `kubera.io/stages` annotation: what the hollow kubelet's timers cannot take is
refused with the field named (the pod then plays the node's stages)."""

from __future__ import annotations

import json

import pytest

from services.api.helpers.stages import STAGES_ANNOTATION, Stages, TemplateError


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            '{"startDelay": NaN}',
            "kubera.io/stages.startDelay: nan: expected a finite duration",
            id="nan",
        ),
        pytest.param(
            '{"jitter": Infinity}',
            "kubera.io/stages.jitter: inf: expected a finite duration",
            id="infinity",
        ),
        pytest.param(
            '{"runDuration": 1e400}',
            "kubera.io/stages.runDuration: inf: expected a finite duration",
            id="overflowing-number",
        ),
        pytest.param(
            '{"creatingDelay": 1e18}',
            "kubera.io/stages.creatingDelay: 1e+18: must be at most 2147483647s (kubera's limit)",
            id="beyond-int32-seconds",
        ),
        pytest.param(
            '{"startDelay": "600000000h"}',
            "kubera.io/stages.startDelay: '600000000h': must be at most 2147483647s",
            id="beyond-int32-seconds-as-a-duration",
        ),
        pytest.param(
            '{"creatingDelay": -5}',
            "kubera.io/stages.creatingDelay: -5: must not be negative",
            id="negative-number",
        ),
        pytest.param(
            '{"jobRunDuration": -1}',
            "kubera.io/stages.jobRunDuration: -1: must not be negative",
            id="negative-job-run-duration",
        ),
        pytest.param(
            '{"failureRate": NaN}',
            "kubera.io/stages.failureRate: nan: expected a number from 0 to 1",
            id="nan-rate",
        ),
    ],
)
def test_stage_values_the_timers_cannot_take_are_refused(text: str, message: str) -> None:
    with pytest.raises(TemplateError) as info:
        Stages().for_pod({STAGES_ANNOTATION: text})
    assert str(info.value).startswith(message), str(info.value)


def test_the_longest_stage_is_accepted() -> None:
    stages = Stages().for_pod({STAGES_ANNOTATION: json.dumps({"runDuration": 2**31 - 1})})
    assert stages.run_duration == 2**31 - 1
