"""How a kubera user gets gang scheduling: Coscheduling runs in kubera's second default
profile, scheduler-plugins-scheduler, at every point but QueueSort (the default profile runs
none of it); a KubeSchedulerConfiguration may select its QueueSort, and a file's profiles
run it only where they enable it."""

from __future__ import annotations

import pytest

from services.scheduler.config import ConfigError, default_config
from services.scheduler.config.load import load_config
from services.scheduler.framework.runtime import Framework
from services.scheduler.registry import in_tree_registry
from tests.scheduler.plugins.coscheduling._gang import GangHandle

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
GANG_POINTS = ("preEnqueue", "preFilter", "postFilter", "reserve", "permit")


def test_scheduler_plugins_profile_runs_coscheduling_everywhere_but_queue_sort() -> None:
    profile = default_config().profile("scheduler-plugins-scheduler")
    assert profile is not None
    for point in GANG_POINTS:
        assert profile.names(point)[-1] == "Coscheduling", point
    assert profile.names("queueSort") == ["PrioritySort"]
    assert profile.names("postFilter") == ["DynamicResources", "DefaultPreemption", "Coscheduling"]


def test_the_default_profile_runs_no_coscheduling() -> None:
    profile = default_config().profile("default-scheduler")
    assert profile is not None
    for point in (*GANG_POINTS, "queueSort"):
        assert "Coscheduling" not in profile.names(point), point


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


@pytest.mark.parametrize("name", ["default-scheduler", "scheduler-plugins-scheduler"])
def test_a_files_profile_runs_coscheduling_only_where_it_enables_it(name: str) -> None:
    cfg = load_config(HEADER + f"profiles:\n  - schedulerName: {name}\n")
    assert [p.scheduler_name for p in cfg.profiles] == [name]
    for point in GANG_POINTS:
        assert "Coscheduling" not in cfg.profiles[0].names(point), point


def test_disabling_coscheduling_in_multipoint_removes_it_from_every_point() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n  - plugins:\n      multiPoint:\n        disabled: [{name: Coscheduling}]\n"
    )
    profile = cfg.profiles[0]
    for point in GANG_POINTS:
        assert "Coscheduling" not in profile.names(point), point


def test_disabling_coscheduling_at_one_point_keeps_its_multipoint_others() -> None:
    cfg = load_config(
        HEADER
        + "profiles:\n  - plugins:\n"
        + "      multiPoint: {enabled: [{name: Coscheduling}]}\n"
        + "      queueSort: {disabled: [{name: Coscheduling}]}\n"
        + "      permit: {disabled: [{name: Coscheduling}]}\n"
    )
    profile = cfg.profiles[0]
    assert [p for p in GANG_POINTS if "Coscheduling" in profile.names(p)] == [
        "preEnqueue",
        "preFilter",
        "postFilter",
        "reserve",
    ]
    assert profile.names("queueSort") == ["PrioritySort"]


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
    assert {p.spec.scheduler_name for p in pods} == {"scheduler-plugins-scheduler"}
