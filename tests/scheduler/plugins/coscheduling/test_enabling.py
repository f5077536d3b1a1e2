"""How a kubera user gets gang scheduling: Coscheduling runs in the default profile at its
single points (not QueueSort), a KubeSchedulerConfiguration may select its QueueSort, and
disabling it in multiPoint removes it everywhere."""

from __future__ import annotations

import pytest

from services.scheduler.config import ConfigError, default_config
from services.scheduler.config.load import load_config
from services.scheduler.framework.runtime import Framework
from services.scheduler.registry import in_tree_registry
from tests.scheduler.plugins.coscheduling._gang import GangHandle

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
GANG_POINTS = ("preEnqueue", "preFilter", "postFilter", "reserve", "permit")


def test_the_default_profile_runs_coscheduling_everywhere_but_queue_sort() -> None:
    profile = default_config().profiles[0]
    for point in GANG_POINTS:
        assert profile.names(point)[-1] == "Coscheduling", point
    assert profile.names("queueSort") == ["PrioritySort"]
    assert profile.names("postFilter") == ["DynamicResources", "DefaultPreemption", "Coscheduling"]


def test_a_configuration_may_select_coschedulings_queue_sort() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n"
        + "  - plugins:\n"
        + "      queueSort:\n"
        + "        enabled: [{name: Coscheduling}]\n"
        + "        disabled: [{name: '*'}]\n"
        + "    pluginConfig:\n"
        + "      - name: Coscheduling\n"
        + "        args: {permitWaitingTimeSeconds: 10, podGroupBackoffSeconds: 3}\n"
    )
    profile = cfg.profiles[0]
    assert profile.names("queueSort") == ["Coscheduling"]
    fwk = Framework(profile, in_tree_registry(), handle=GangHandle())  # type: ignore[arg-type]
    plugin = fwk.plugins["Coscheduling"]
    assert fwk.queue_sort_less == plugin.less
    assert (plugin.args.permit_waiting_time_seconds, plugin.args.pod_group_backoff_seconds) == (
        10,
        3,
    )


def test_disabling_coscheduling_in_multipoint_removes_it_from_every_point() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n  - plugins:\n      multiPoint:\n        disabled: [{name: Coscheduling}]\n"
    )
    profile = cfg.profiles[0]
    for point in GANG_POINTS:
        assert "Coscheduling" not in profile.names(point), point


@pytest.mark.parametrize(
    "args,field",
    [
        ("{permitWaitingTimeSeconds: -1}", "permitWaitingTimeSeconds"),
        ("{podGroupBackoffSeconds: -1}", "podGroupBackoffSeconds"),
        ("{podGroupRejectPercentage: 101}", "podGroupRejectPercentage"),
    ],
)
def test_invalid_coscheduling_args_are_refused_naming_the_field(args: str, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        load_config(
            HEADER
            + "profiles:\n  - pluginConfig:\n      - name: Coscheduling\n"
            + f"        args: {args}\n"
        )


def test_the_gang_example_decodes_to_a_group_and_its_members() -> None:
    import pathlib

    import yaml

    from services.api.machinery import codec

    text = (pathlib.Path(__file__).parents[4] / "examples" / "gang.yaml").read_text()
    objs = [codec.decode(d, validate="strict").obj for d in yaml.safe_load_all(text)]
    group, *pods = objs
    assert group.spec.min_member == len(pods) == 3
    assert {p.metadata.labels["scheduling.x-k8s.io/pod-group"] for p in pods} == {"trainer"}
