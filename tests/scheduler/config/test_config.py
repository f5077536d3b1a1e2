"""KubeSchedulerConfiguration: the v1 default profile, merging enabled/disabled sets and
multiPoint over it, plugin args, the seeds' example files, field-path errors, the adaptive
percentageOfNodesToScore, and the plugin registry (in-tree table and out-of-tree import)."""

from __future__ import annotations

import importlib
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from services.scheduler import config as cfgmod
from services.scheduler import registry as reg
from services.scheduler.config import (
    ConfigError,
    EnabledPlugin,
    default_config,
    load_config,
    num_feasible_nodes_to_find,
    parse_duration,
)

HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def load(body: str) -> cfgmod.SchedulerConfiguration:
    return load_config(HEADER + textwrap.dedent(body))


def errors_of(body: str, *, header: str = HEADER) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config(header + textwrap.dedent(body))
    return info.value.errors


def arg(args: Any, attr: str, key: str) -> Any:
    """A field of typed Args, or the key of the dict kept when the plugin module is missing."""
    return args[key] if isinstance(args, dict) else getattr(args, attr)


# ============================================================== the default profile

#: Upstream's v1 default lists (1.34 default_plugins.go, with kubera's plugin set).
DEFAULT_NAMES = {
    "preEnqueue": ["SchedulingGates", "DynamicResources"],
    "queueSort": ["PrioritySort"],
    "preFilter": [
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "filter": [
        "NodeUnschedulable",
        "NodeName",
        "TaintToleration",
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
    ],
    "postFilter": ["DynamicResources", "DefaultPreemption"],
    "preScore": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "NodeResourcesBalancedAllocation",
    ],
    # DynamicResources scores prioritized lists (weight 1: upstream's multiPoint entry has
    # none, and the framework takes 0 as 1).
    "score": [
        "TaintToleration",
        "NodeAffinity",
        "NodeResourcesFit",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
    ],
    "reserve": ["VolumeBinding", "DynamicResources"],
    "permit": [],
    "preBind": ["VolumeBinding", "DynamicResources"],
    "bind": ["DefaultBinder"],
    "postBind": [],
}
#: kubera's second default profile, scheduler-plugins' scheduler: the default lists plus
#: Coscheduling at every point it extends but QueueSort (all profiles of one scheduler
#: share the queue sort, upstream validateCommonQueueSort), after the default plugins.
SCHEDULER_PLUGINS_NAMES = {
    point: names + ["Coscheduling"]
    if point in ("preEnqueue", "preFilter", "postFilter", "reserve", "permit")
    else names
    for point, names in DEFAULT_NAMES.items()
}
DEFAULT_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "DynamicResources": 1,
    "NodeResourcesBalancedAllocation": 1,
}


def test_default_profile_expands_multipoint_to_upstream_lists_per_extension_point() -> None:
    profile = default_config().profiles[0]
    assert profile.scheduler_name == "default-scheduler"
    assert {p: profile.names(p) for p in reg.EXTENSION_POINTS} == DEFAULT_NAMES


def test_default_config_adds_scheduler_plugins_profile_with_coscheduling() -> None:
    names = [p.scheduler_name for p in default_config().profiles]
    assert names == ["default-scheduler", "scheduler-plugins-scheduler"]
    profile = default_config().profile("scheduler-plugins-scheduler")
    assert profile is not None
    assert {p: profile.names(p) for p in reg.EXTENSION_POINTS} == SCHEDULER_PLUGINS_NAMES
    assert profile.score_weights() == DEFAULT_WEIGHTS
    assert profile.plugin_config == {}


def test_scheduler_plugins_profile_equals_its_file_form() -> None:
    """The second default profile is what this KubeSchedulerConfiguration profile says
    (scheduler-plugins' chart: Coscheduling in multiPoint), QueueSort left to PrioritySort."""
    loaded = load(
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "- schedulerName: scheduler-plugins-scheduler\n"
        "  plugins:\n"
        "    multiPoint: {enabled: [{name: Coscheduling}]}\n"
        "    queueSort: {disabled: [{name: Coscheduling}]}\n"
    )
    assert loaded.profiles == default_config().profiles


def test_coscheduling_queue_sort_cannot_be_shared_with_the_default_profile() -> None:
    """scheduler-plugins' sample sorts with Coscheduling; in one scheduler beside the default
    profile that breaks the common queue sort rule, hence PrioritySort in kubera's profile."""
    with pytest.raises(ConfigError) as e:
        load(
            "profiles:\n"
            "- schedulerName: default-scheduler\n"
            "- schedulerName: scheduler-plugins-scheduler\n"
            "  plugins:\n"
            "    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: '*'}]}\n"
        )
    assert "profiles[1].plugins.queueSort" in str(e.value)


def test_default_profile_score_weights_are_upstreams() -> None:
    assert default_config().profiles[0].score_weights() == DEFAULT_WEIGHTS


def test_only_score_entries_carry_weights() -> None:
    profile = default_config().profiles[0]
    for point, entries in profile.plugins.items():
        if point != "score":
            assert all(e.weight == 0 for e in entries), point


def test_default_globals() -> None:
    cfg = default_config()
    assert cfg.percentage_of_nodes_to_score is None
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (1, 10)
    assert cfg.parallelism == 16
    le = cfg.leader_election
    assert le.leader_elect is True
    assert (le.timings.lease_duration, le.timings.renew_deadline, le.timings.retry_period) == (
        15.0,
        10.0,
        2.0,
    )
    assert (le.resource_lock, le.resource_namespace, le.resource_name) == (
        "leases",
        "kube-system",
        "kube-scheduler",
    )


def test_a_minimal_file_is_upstreams_default_with_its_one_profile() -> None:
    """A file replaces kubera's two default profiles: without `profiles` it gets upstream's
    default profile alone, globals as the default configuration's."""
    cfg = load("")
    assert cfg.profiles == default_config().profiles[:1]
    cfg.profiles = default_config().profiles
    assert cfg == default_config()


def test_empty_profiles_list_means_one_default_profile() -> None:
    assert load("profiles: []\n").profiles == default_config().profiles[:1]


def test_load_config_reads_a_file_path(tmp_path: Path) -> None:
    f = tmp_path / "sched.yaml"
    f.write_text(HEADER + "percentageOfNodesToScore: 30\n")
    assert load_config(f).percentage_of_nodes_to_score == 30
    assert load_config(str(f)).percentage_of_nodes_to_score == 30


# ============================================================ the seeds' examples

SEED_ADDED_AFFINITY = """\
profiles:
  - schedulerName: default-scheduler
  - schedulerName: foo-scheduler
    pluginConfig:
      - name: NodeAffinity
        args:
          addedAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions:
                - key: scheduler-profile
                  operator: In
                  values:
                  - foo
"""

SEED_SPREAD_LIST = """\
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultConstraints:
            - maxSkew: 1
              topologyKey: topology.kubernetes.io/zone
              whenUnsatisfiable: ScheduleAnyway
          defaultingType: List
"""

SEED_SPREAD_NONE = """\
profiles:
  - schedulerName: default-scheduler
    pluginConfig:
      - name: PodTopologySpread
        args:
          defaultConstraints: []
          defaultingType: List
"""

SEED_MOST_ALLOCATED = """\
profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - name: cpu
          weight: 1
        - name: memory
          weight: 1
        - name: intel.com/foo
          weight: 3
        - name: intel.com/bar
          weight: 3
        type: MostAllocated
    name: NodeResourcesFit
"""

SEED_RTCR = """\
profiles:
- pluginConfig:
  - args:
      scoringStrategy:
        resources:
        - name: intel.com/foo
          weight: 3
        - name: intel.com/bar
          weight: 3
        requestedToCapacityRatio:
          shape:
          - utilization: 0
            score: 0
          - utilization: 100
            score: 10
        type: RequestedToCapacityRatio
    name: NodeResourcesFit
"""

SEED_PERCENTAGE_V1ALPHA1 = """\
apiVersion: kubescheduler.config.k8s.io/v1alpha1
kind: KubeSchedulerConfiguration
algorithmSource:
  provider: DefaultProvider

percentageOfNodesToScore: 50
"""

SEED_DYNAMIC_RESOURCES = """\
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DynamicResources
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: DynamicResourcesArgs
      bindingTimeout: 60s
"""


def test_seed_added_affinity_applies_to_the_second_profile_only() -> None:
    cfg = load(SEED_ADDED_AFFINITY)
    assert [p.scheduler_name for p in cfg.profiles] == ["default-scheduler", "foo-scheduler"]
    default, foo = cfg.profiles
    assert default.plugin_config == {}
    added = arg(foo.plugin_config["NodeAffinity"], "added_affinity", "addedAffinity")
    terms = added["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0] == {
        "key": "scheduler-profile",
        "operator": "In",
        "values": ["foo"],
    }
    # Both profiles keep every default plugin.
    assert foo.plugins == default.plugins == default_config().profiles[0].plugins


def test_seed_pod_topology_spread_list_defaulting() -> None:
    args = load(SEED_SPREAD_LIST).profiles[0].plugin_config["PodTopologySpread"]
    assert arg(args, "defaulting_type", "defaultingType") == "List"
    constraints = arg(args, "default_constraints", "defaultConstraints")
    assert len(constraints) == 1


def test_seed_pod_topology_spread_without_default_constraints() -> None:
    args = load(SEED_SPREAD_NONE).profiles[0].plugin_config["PodTopologySpread"]
    assert arg(args, "defaulting_type", "defaultingType") == "List"
    assert list(arg(args, "default_constraints", "defaultConstraints")) == []


def test_seed_most_allocated_builds_typed_fit_args() -> None:
    noderesources = pytest.importorskip("services.scheduler.plugins.noderesources")
    profile = load(SEED_MOST_ALLOCATED).profiles[0]
    assert profile.scheduler_name == "default-scheduler"
    args = profile.plugin_config["NodeResourcesFit"]
    assert isinstance(args, noderesources.Args)
    assert args.scoring_strategy.type == "MostAllocated"
    assert [(r.name, r.weight) for r in args.scoring_strategy.resources] == [
        ("cpu", 1),
        ("memory", 1),
        ("intel.com/foo", 3),
        ("intel.com/bar", 3),
    ]


def test_seed_requested_to_capacity_ratio_keeps_the_shape() -> None:
    pytest.importorskip("services.scheduler.plugins.noderesources")
    args = load(SEED_RTCR).profiles[0].plugin_config["NodeResourcesFit"]
    assert args.scoring_strategy.type == "RequestedToCapacityRatio"
    assert [(p.utilization, p.score) for p in args.scoring_strategy.shape] == [(0, 0), (100, 10)]


def test_seed_v1alpha1_percentage_example_is_refused_by_api_version() -> None:
    errors = errors_of(SEED_PERCENTAGE_V1ALPHA1, header="")
    assert errors == [
        'apiVersion: Unsupported value: "kubescheduler.config.k8s.io/v1alpha1": '
        'supported values: "kubescheduler.config.k8s.io/v1"'
    ]


def test_seed_percentage_in_v1_loads() -> None:
    assert load("percentageOfNodesToScore: 50\n").percentage_of_nodes_to_score == 50


def test_seed_dynamic_resources_binding_timeout_loads() -> None:
    # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus are on (their defaults
    # since 1.36 and 1.33), so upstream accepts bindingTimeout: the seed's 60s.
    args = load(SEED_DYNAMIC_RESOURCES).profiles[0].plugin_config["DynamicResources"]
    assert (args.binding_timeout, args.filter_timeout) == (60.0, 10.0)


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("999ms", '"999ms": must be at least 1 second'),
        ("never", '"never": must be a duration such as 10s'),
    ],
)
def test_dynamic_resources_binding_timeout_is_at_least_one_second(value: str, error: str) -> None:
    doc = SEED_DYNAMIC_RESOURCES.replace("60s", value)
    assert errors_of(doc) == [
        f"profiles[0].pluginConfig[0].args.bindingTimeout: Invalid value: {error}"
    ]


def test_dynamic_resources_binding_timeout_defaults_to_upstreams_600s() -> None:
    from services.scheduler.plugins import dynamicresources

    assert dynamicresources.Args().binding_timeout == 600.0


@pytest.mark.parametrize(
    ("value", "seconds", "error"),
    [
        ("250ms", 0.25, ""),
        ("0s", 0.0, ""),
        ("-1s", None, '"-1s": must be zero or positive'),
        ("soon", None, '"soon": must be a duration such as 10s'),
    ],
)
def test_dynamic_resources_filter_timeout_is_a_duration_zero_or_positive(
    value: str, seconds: float | None, error: str
) -> None:
    doc = SEED_DYNAMIC_RESOURCES.replace("bindingTimeout: 60s", f"filterTimeout: {value}")
    if error:
        assert errors_of(doc) == [
            f"profiles[0].pluginConfig[0].args.filterTimeout: Invalid value: {error}"
        ]
    else:
        assert load(doc).profiles[0].plugin_config["DynamicResources"].filter_timeout == seconds


def test_dynamic_resources_filter_timeout_defaults_to_upstreams_10s() -> None:
    from services.scheduler.plugins import dynamicresources

    assert dynamicresources.Args().filter_timeout == 10.0


# ========================================================================= profiles


TWO_PROFILES = """\
percentageOfNodesToScore: 40
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 30
parallelism: 8
profiles:
  - schedulerName: spread
  - schedulerName: pack
    percentageOfNodesToScore: 0
    plugins:
      score:
        enabled:
          - name: NodeResourcesFit
            weight: 10
    pluginConfig:
      - name: NodeResourcesFit
        args:
          scoringStrategy:
            type: MostAllocated
"""


def test_two_profiles_are_looked_up_by_scheduler_name() -> None:
    cfg = load(TWO_PROFILES)
    assert cfg.profile("spread") is cfg.profiles[0]
    assert cfg.profile("pack") is cfg.profiles[1]
    assert cfg.profile("nope") is None
    assert (cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds) == (2, 30)
    assert cfg.parallelism == 8


def test_profile_percentage_overrides_the_global_one_even_when_zero() -> None:
    cfg = load(TWO_PROFILES)
    spread, pack = cfg.profiles
    assert cfg.percentage_for(spread) == 40
    assert cfg.percentage_for(pack) == 0  # 0 = adaptive, chosen by this profile


def test_explicit_score_entry_overrides_multipoint_weight_and_runs_first() -> None:
    spread, pack = load(TWO_PROFILES).profiles
    assert pack.plugins["score"][0] == EnabledPlugin("NodeResourcesFit", 10)
    assert pack.score_weights() == {**DEFAULT_WEIGHTS, "NodeResourcesFit": 10}
    assert spread.score_weights() == DEFAULT_WEIGHTS
    # The other points are untouched.
    assert pack.names("filter") == DEFAULT_NAMES["filter"]


def test_profiles_with_different_scoring_strategies() -> None:
    pytest.importorskip("services.scheduler.plugins.noderesources")
    spread, pack = load(TWO_PROFILES).profiles
    assert "NodeResourcesFit" not in spread.plugin_config
    assert pack.plugin_config["NodeResourcesFit"].scoring_strategy.type == "MostAllocated"


def test_disabled_star_replaces_a_points_plugins_with_the_enabled_list() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              score:
                disabled:
                  - name: "*"
                enabled:
                  - name: NodeResourcesBalancedAllocation
                    weight: 1
                  - name: NodeAffinity
                    weight: 5
        """
    ).profiles[0]
    assert profile.plugins["score"] == [
        EnabledPlugin("NodeResourcesBalancedAllocation", 1),
        EnabledPlugin("NodeAffinity", 5),
    ]
    # "*" at score does not touch the other points.
    assert profile.names("preScore") == DEFAULT_NAMES["preScore"]
    assert profile.names("filter") == DEFAULT_NAMES["filter"]


def test_disabling_one_plugin_at_one_point_keeps_it_elsewhere() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              filter:
                disabled:
                  - name: TaintToleration
        """
    ).profiles[0]
    assert "TaintToleration" not in profile.names("filter")
    assert "TaintToleration" in profile.names("score")
    assert "TaintToleration" in profile.names("preScore")


def test_multipoint_disabled_removes_a_plugin_everywhere() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              multiPoint:
                disabled:
                  - name: NodeResourcesBalancedAllocation
        """
    ).profiles[0]
    for point in reg.EXTENSION_POINTS:
        assert "NodeResourcesBalancedAllocation" not in profile.names(point)


def test_multipoint_disabled_star_leaves_only_the_listed_plugins() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              multiPoint:
                disabled:
                  - name: "*"
                enabled:
                  - name: PrioritySort
                  - name: NodeName
                  - name: TaintToleration
                    weight: 4
                  - name: DefaultBinder
        """
    ).profiles[0]
    assert {p: profile.names(p) for p in reg.EXTENSION_POINTS if profile.names(p)} == {
        "queueSort": ["PrioritySort"],
        "filter": ["NodeName", "TaintToleration"],
        "preScore": ["TaintToleration"],
        "score": ["TaintToleration"],
        "bind": ["DefaultBinder"],
    }
    assert profile.score_weights() == {"TaintToleration": 4}


def test_multipoint_reconfigured_default_keeps_its_place_with_the_new_weight() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              multiPoint:
                enabled:
                  - name: NodeAffinity
                    weight: 9
        """
    ).profiles[0]
    assert profile.names("score") == DEFAULT_NAMES["score"]
    assert profile.score_weights()["NodeAffinity"] == 9


def test_multipoint_reconfigured_without_weight_resets_it_to_one_as_upstream() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              multiPoint:
                enabled:
                  - name: TaintToleration
        """
    ).profiles[0]
    assert profile.score_weights()["TaintToleration"] == 1


def test_explicit_filter_entry_of_a_multipoint_plugin_moves_it_first() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              filter:
                enabled:
                  - name: NodeResourcesFit
        """
    ).profiles[0]
    assert profile.names("filter") == ["NodeResourcesFit"] + [
        n for n in DEFAULT_NAMES["filter"] if n != "NodeResourcesFit"
    ]


def test_explicit_entry_after_disabling_star_at_multipoint_keeps_per_point_order() -> None:
    profile = load(
        """\
        profiles:
          - plugins:
              multiPoint:
                disabled:
                  - name: "*"
              queueSort:
                enabled:
                  - name: PrioritySort
              filter:
                enabled:
                  - name: NodePorts
                  - name: NodeName
              bind:
                enabled:
                  - name: DefaultBinder
        """
    ).profiles[0]
    assert profile.names("filter") == ["NodePorts", "NodeName"]
    assert profile.names("score") == []


# ======================================================================= plugin args


def test_interpod_affinity_and_balanced_allocation_args() -> None:
    profile = load(
        """\
        profiles:
          - pluginConfig:
              - name: InterPodAffinity
                args:
                  hardPodAffinityWeight: 7
              - name: NodeResourcesBalancedAllocation
                args:
                  resources:
                    - name: cpu
                      weight: 1
        """
    ).profiles[0]
    ipa = profile.plugin_config["InterPodAffinity"]
    assert arg(ipa, "hard_pod_affinity_weight", "hardPodAffinityWeight") == 7
    pytest.importorskip("services.scheduler.plugins.noderesources")
    ba = profile.plugin_config["NodeResourcesBalancedAllocation"]
    assert [(r.name, r.weight) for r in ba.resources] == [("cpu", 1)]


def test_args_may_name_their_kind_and_api_version() -> None:
    profile = load(
        """\
        profiles:
          - pluginConfig:
              - name: InterPodAffinity
                args:
                  apiVersion: kubescheduler.config.k8s.io/v1
                  kind: InterPodAffinityArgs
                  hardPodAffinityWeight: 3
        """
    ).profiles[0]
    ipa = profile.plugin_config["InterPodAffinity"]
    assert arg(ipa, "hard_pod_affinity_weight", "hardPodAffinityWeight") == 3


def test_dict_args_are_typed_when_the_plugin_module_exists() -> None:
    """A plugin whose module exists gets its Args type; a missing module keeps the dict."""
    profile = load(SEED_SPREAD_LIST).profiles[0]
    args = profile.plugin_config["PodTopologySpread"]
    args_type = reg.in_tree_args_type("PodTopologySpread")
    if args_type is None:
        assert isinstance(args, dict)
    else:
        assert isinstance(args, args_type)


# ====================================================================== bad inputs

BAD_INPUTS = [
    pytest.param(
        "profiles:\n- schedulerName: x\n- schedulerName: x\n",
        'profiles[1].schedulerName: Duplicate value: "x"',
        id="duplicate-scheduler-name",
    ),
    pytest.param(
        "profiles:\n- schedulerName: ''\n",
        "profiles[0].schedulerName: Required value",
        id="empty-scheduler-name",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: Foo\n",
        'profiles[0].plugins.score.enabled[0].name: Invalid value: "Foo": unknown plugin',
        id="unknown-plugin",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: PrioritySort\n",
        'profiles[0].plugins.filter.enabled[0].name: Invalid value: "PrioritySort": '
        "plugin does not extend filter",
        id="plugin-at-a-point-it-does-not-implement",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enabled:\n"
        "      - name: NodeAffinity\n        weight: 101\n",
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: 101: "
        "not in valid range [1, 100]",
        id="score-weight-too-high",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    score:\n      enabled:\n"
        "      - name: NodeAffinity\n        weight: 0\n",
        "profiles[0].plugins.score.enabled[0].weight: Invalid value: 0: "
        "not in valid range [1, 100]",
        id="score-weight-zero",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n"
        "      - name: TaintToleration\n        weight: -1\n",
        "profiles[0].plugins.multiPoint.enabled[0].weight: Invalid value: -1",
        id="multipoint-weight",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    filter:\n      enabled:\n"
        "      - name: NodeName\n      - name: NodeName\n",
        'profiles[0].plugins.filter.enabled[1].name: Duplicate value: "NodeName"',
        id="duplicate-enabled",
    ),
    pytest.param(
        "percentageOfNodesToScore: 101\n",
        "percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]",
        id="percentage-global",
    ),
    pytest.param(
        "profiles:\n- percentageOfNodesToScore: -1\n",
        "profiles[0].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
        id="percentage-profile",
    ),
    pytest.param(
        "percentageOfNodesToScore: fifty\n",
        'percentageOfNodesToScore: Invalid value: "fifty": must be an integer',
        id="percentage-not-int",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    queueSort:\n      disabled:\n      - name: '*'\n",
        "profiles[0].plugins.queueSort: Invalid value: 0: "
        "exactly one queue sort plugin must be enabled",
        id="no-queue-sort",
    ),
    pytest.param(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: DefaultBinder\n",
        "profiles[0].plugins.bind: Invalid value: 0: at least one bind plugin is needed",
        id="no-binder",
    ),
    pytest.param(
        "profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n"
        "      disabled:\n      - name: PrioritySort\n",
        'profiles[1].plugins.queueSort: Invalid value: "": must be the same for all profiles',
        id="queue-sort-differs",
    ),
    pytest.param("foo: 1\n", "foo: unknown field", id="unknown-top-level-field"),
    pytest.param(
        "profiles:\n- schedulerName: a\n  scheduler: b\n",
        "profiles[0].scheduler: unknown field",
        id="unknown-profile-field",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n  - name: NodeAffinity\n",
        'profiles[0].pluginConfig[1]: Duplicate value: "NodeAffinity"',
        id="duplicate-plugin-config",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: MostAllocated\n        foo: 1\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.foo: unknown field",
        id="unknown-arg",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: Bogus\n",
        'profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Bogus"',
        id="unknown-scoring-strategy",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: MostAllocated\n        resources:\n"
        "        - name: cpu\n          weight: 101\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101",
        id="resource-weight",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: RequestedToCapacityRatio\n"
        "        requestedToCapacityRatio:\n          shape:\n"
        "          - {utilization: 50, score: 1}\n          - {utilization: 10, score: 2}\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio.shape[1]"
        ".utilization: Invalid value: 10: values must be sorted in increasing order",
        id="shape-unsorted",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n"
        "      scoringStrategy:\n        type: RequestedToCapacityRatio\n",
        "profiles[0].pluginConfig[0].args.scoringStrategy.requestedToCapacityRatio: Required value",
        id="shape-missing",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
        "      hardPodAffinityWeight: 101\n",
        "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101",
        id="hard-pod-affinity-weight",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
        "      defaultConstraints:\n      - {maxSkew: 1, topologyKey: zone,"
        " whenUnsatisfiable: ScheduleAnyway}\n",
        'profiles[0].pluginConfig[0].args.defaultingType: Invalid value: "System": '
        "when .defaultConstraints are not empty",
        id="spread-system-with-constraints",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
        "      defaultingType: Sometimes\n",
        'profiles[0].pluginConfig[0].args.defaultingType: Unsupported value: "Sometimes"',
        id="spread-defaulting-type",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n"
        "      defaultingType: List\n      defaultConstraints:\n"
        "      - {maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}\n",
        "profiles[0].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0",
        id="spread-max-skew",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n"
        "      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n          - matchExpression: []\n",
        "profiles[0].pluginConfig[0].args.addedAffinity."
        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpression: "
        "unknown field",
        id="added-affinity-unknown-field",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: NodeAffinity\n    args:\n"
        "      addedAffinity:\n        requiredDuringSchedulingIgnoredDuringExecution:\n"
        "          nodeSelectorTerms:\n          - matchExpressions:\n"
        "            - {key: a, operator: Near}\n",
        'nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near"',
        id="added-affinity-operator",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: PrioritySort\n    args:\n      reverse: true\n",
        "profiles[0].pluginConfig[0].args.reverse: unknown field",
        id="args-for-a-plugin-without-args",
    ),
    pytest.param(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n"
        "      kind: NodeAffinityArgs\n",
        'profiles[0].pluginConfig[0].args.kind: Unsupported value: "NodeAffinityArgs"',
        id="args-kind",
    ),
    pytest.param(
        "leaderElection:\n  leaseDuration: 5s\n  renewDeadline: 10s\n",
        'leaderElection.leaseDuration: Invalid value: "5s": '
        "LeaseDuration must be greater than RenewDeadline",
        id="lease-shorter-than-renew",
    ),
    pytest.param(
        "leaderElection:\n  retryPeriod: soon\n",
        'leaderElection.retryPeriod: Invalid value: "soon"',
        id="bad-duration",
    ),
    pytest.param(
        "leaderElection:\n  renewDeadline: 2s\n  retryPeriod: 2s\n",
        "leaderElection.renewDeadline: Invalid value",
        id="renew-within-jittered-retry",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2\n",
        "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to "
        "PodInitialBackoffSeconds",
        id="max-backoff-below-initial",
    ),
    pytest.param(
        "podInitialBackoffSeconds: 0\n",
        "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
        id="initial-backoff-zero",
    ),
    pytest.param(
        "parallelism: 0\n",
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        id="parallelism",
    ),
    pytest.param(
        "extenders:\n- urlPrefix: http://x\n",
        "extenders: Forbidden",
        id="extenders",
    ),
    pytest.param(
        "outOfTreePlugins:\n- no_such_module_for_kubera_tests\n",
        'outOfTreePlugins[0]: Invalid value: "no_such_module_for_kubera_tests"',
        id="out-of-tree-missing",
    ),
]


@pytest.mark.parametrize(("body", "expected"), BAD_INPUTS)
def test_bad_inputs_name_the_field_path(body: str, expected: str) -> None:
    errors = errors_of(body)
    assert any(expected in e for e in errors), errors


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(HEADER.replace("KubeSchedulerConfiguration", "Pod"), "kind: Unsupported"),
        pytest.param("just a string\n", "<root>: Invalid value"),
        pytest.param("a: [\n", "yaml:"),
    ],
)
def test_documents_that_are_not_a_configuration(doc: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(doc)
    assert expected in str(info.value)


def test_every_error_is_reported_at_once() -> None:
    errors = errors_of(
        "parallelism: 0\npercentageOfNodesToScore: 200\n"
        "profiles:\n- schedulerName: x\n- schedulerName: x\n"
    )
    assert len(errors) == 3
    assert isinstance(ConfigError(errors), ValueError)


# ========================================================== percentageOfNodesToScore


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        pytest.param(None, 0, 0, id="no-nodes"),
        pytest.param(None, 50, 50, id="small-cluster-all"),
        pytest.param(10, 99, 99, id="under-100-all-even-with-a-percentage"),
        pytest.param(None, 100, 100, id="adaptive-floor-100-nodes"),
        pytest.param(None, 1000, 420, id="adaptive-42pct"),
        pytest.param(None, 5000, 500, id="adaptive-10pct-at-5000"),
        pytest.param(None, 6000, 300, id="adaptive-floor-5pct"),
        pytest.param(None, 20000, 1000, id="adaptive-5pct-large"),
        pytest.param(0, 5000, 500, id="zero-means-adaptive"),
        pytest.param(50, 1000, 500, id="explicit-50pct"),
        pytest.param(10, 500, 100, id="explicit-floor-100"),
        pytest.param(1, 20000, 200, id="explicit-below-5pct-allowed"),
        pytest.param(100, 5000, 5000, id="all"),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int | None, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("15s", 15.0),
        ("1500ms", 1.5),
        ("1m30s", 90.0),
        ("2h", 7200.0),
        ("0", 0.0),
        ("0.5s", 0.5),
        ("100us", 0.0001),
        ("-1s", -1.0),
    ],
)
def test_parse_duration_reads_go_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "15", "s", "1x", "1s2"])
def test_parse_duration_rejects_what_go_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


def test_leader_election_durations_are_parsed() -> None:
    le = load(
        "leaderElection:\n  leaderElect: false\n  leaseDuration: 1m\n"
        "  renewDeadline: 1500ms\n  retryPeriod: 500ms\n  resourceName: sched\n"
    ).leader_election
    t = le.timings
    assert (le.leader_elect, t.lease_duration, t.renew_deadline, t.retry_period) == (
        False,
        60.0,
        1.5,
        0.5,
    )
    assert le.resource_name == "sched"


# ========================================================================= registry

OUT_OF_TREE = '''\
"""A test plugin outside the tree."""

from __future__ import annotations

from dataclasses import dataclass, field

from services.scheduler.framework.status import Status

NAME = "Blinky"


@dataclass
class Args:
    lights_per_point: int = 1
    colours: list[str] = field(default_factory=list)


class Blinky:
    name = NAME

    def __init__(self, args: Args) -> None:
        self.args = args

    def filter(self, state, pod_info, node_info) -> Status:
        return Status.success()

    def score(self, state, pod_info, node_info) -> tuple[int, Status]:
        return self.args.lights_per_point, Status.success()


def new(args: Args | None, handle: object) -> Blinky:
    return Blinky(args or Args())


class Bundle:
    NAME = "Blinky2"
    Args = Args
    EXTENSION_POINTS = ("filter",)

    @staticmethod
    def new(args, handle):
        plugin = Blinky(args or Args())
        plugin.name = "Blinky2"
        return plugin
'''


@pytest.fixture
def out_of_tree_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = "kubera_test_blinky"
    (tmp_path / f"{name}.py").write_text(OUT_OF_TREE)
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield name
    sys.modules.pop(name, None)


def test_out_of_tree_plugin_points_come_from_its_class(out_of_tree_module: str) -> None:
    spec = reg.load_out_of_tree(out_of_tree_module)
    assert spec.name == "Blinky"
    assert tuple(spec.default_points) == ("filter", "score")
    spec2 = reg.load_out_of_tree(f"{out_of_tree_module}:Bundle")
    assert (spec2.name, tuple(spec2.default_points)) == ("Blinky2", ("filter",))


def test_out_of_tree_plugin_registered_from_the_config(out_of_tree_module: str) -> None:
    cfg = load(
        f"""\
        outOfTreePlugins:
          - {out_of_tree_module}
        profiles:
          - plugins:
              multiPoint:
                enabled:
                  - name: Blinky
                    weight: 4
            pluginConfig:
              - name: Blinky
                args:
                  lightsPerPoint: 3
                  colours: [red]
        """
    )
    profile = cfg.profiles[0]
    assert profile.names("filter")[-1] == "Blinky"
    assert profile.plugins["score"][-1] == EnabledPlugin("Blinky", 4)
    args = profile.plugin_config["Blinky"]
    assert (type(args).__name__, args.lights_per_point, args.colours) == ("Args", 3, ["red"])
    assert set(cfg.out_of_tree_plugins) == {"Blinky"}


def test_out_of_tree_args_unknown_key_names_the_path(out_of_tree_module: str) -> None:
    errors = errors_of(
        f"outOfTreePlugins: [{out_of_tree_module}]\n"
        "profiles:\n- pluginConfig:\n  - name: Blinky\n    args:\n      lightsPerNode: 3\n"
    )
    assert errors == ["profiles[0].pluginConfig[0].args.lightsPerNode: unknown field"]


def test_out_of_tree_may_not_reuse_an_in_tree_name(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "kubera_test_shadow.py").write_text(
        "NAME = 'NodeName'\nclass Args: pass\ndef new(args, handle): return None\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(reg.RegistryError, match="in-tree"):
        reg.load_out_of_tree("kubera_test_shadow")
    sys.modules.pop("kubera_test_shadow", None)


def test_in_tree_table_names_every_default_plugin() -> None:
    assert set(cfgmod.DEFAULT_MULTI_POINT) <= set(reg.IN_TREE_BY_NAME)


@pytest.mark.parametrize("row", reg.IN_TREE, ids=lambda r: r.name)
def test_in_tree_plugin_implements_exactly_its_table_points(row: reg.InTreePlugin) -> None:
    module = pytest.importorskip(f"{reg.PLUGINS_PACKAGE}.{row.module}")
    name_attr, args_attr, new_attr = row.attrs
    assert getattr(module, name_attr) == row.name
    plugin = getattr(module, new_attr)(getattr(module, args_attr)(), None)
    assert plugin.name == row.name
    assert reg.instance_points(plugin) == row.points


def test_in_tree_registry_is_complete_once_every_module_exists() -> None:
    for row in reg.IN_TREE:
        pytest.importorskip(f"{reg.PLUGINS_PACKAGE}.{row.module}")
    registry = reg.in_tree_registry()
    assert set(registry) == set(reg.IN_TREE_BY_NAME)
    for name, spec in registry.items():
        assert spec.name == name
        assert tuple(spec.default_points) == reg.IN_TREE_BY_NAME[name].points
    assert default_config().registry().keys() == registry.keys()


def test_a_missing_config_file_is_a_file_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_config(str(tmp_path / "nope.yaml"))
