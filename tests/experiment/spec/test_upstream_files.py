"""Upstream's scheduler_perf files as kubera reads them: the newest affinity,
default_preemption and batching configs (copied unchanged under tests/experiment/data),
template field names matched as upstream's encoding/json matches them, and the admission
set experiments run the apiserver with."""

from __future__ import annotations

import pytest
import yaml

from kubera.experiment.run.runner import RunOptions, cluster_args, feature_gate_args
from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import ConfigError, load, plan
from kubera.experiment.spec.objects import fold_field_names, name_node, node_doc, to_message
from protos.kubera.v1 import core_pb2
from services.apiserver import SCHEDULER_PERF_DISABLED
from tests.experiment.configfiles import BASE, DATA, replace, runs, summary, write


def test_upstream_affinity_file_loads_whole_and_none_is_left_out():
    e = load(str(DATA / "affinity" / "performance-config.yaml"))
    assert [tc.name for tc in e.test_cases] == [
        "SchedulingPodAntiAffinity",
        "SchedulingPodMatchingAntiAffinity",
        "SchedulingPodAffinity",
        "SchedulingPreferredPodAffinity",
        "SchedulingPreferredPodAntiAffinity",
        "SchedulingNodeAffinity",
        "MixedSchedulingBasePod",
        "SchedulingRequiredPodAntiAffinityWithNSSelector",
        "SchedulingPreferredAntiAffinityWithNSSelector",
        "SchedulingRequiredPodAffinityWithNSSelector",
        "SchedulingPreferredAffinityWithNSSelector",
        "SchedulingGatedPodsWithPodAffinityImpactForThroughput",
    ]
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    gated = runs(e)["SchedulingGatedPodsWithPodAffinityImpactForThroughput/1Node_10GatedPods"]
    assert [type(op) for op in gated] == [o.CreateNodes, o.CreatePods, o.Barrier, o.CreatePods]
    assert gated[1].skip_wait_to_completion and gated[2].stage_requirement == "Attempted"


def test_upstream_default_preemption_file_loads_whole_and_none_is_left_out():
    """Its PodGroup templates (Go `if`/`else`/`eq`) render as upstream's: with disruptionMode
    "" the pods join no group, with single/all each pair of pods joins gang-<i/2>."""
    e = load(str(DATA / "default_preemption" / "performance-config.yaml"))
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    for mode, union in (("NoPodGroup", None), ("PodGroupDisruptionMode_All", "all")):
        ops = runs(e)[f"PreemptionPodGroupDisruptionMode/FastTest_{mode}"]
        assert summary(ops) == [
            ("createNodes[0]", 2, None),
            ("createPodGroups[1]", 2, "gang-preempt-1"),
            ("createPods[2]", 4, "gang-preempt-1"),
            ("barrier[3]", None, None),
            ("createPods[4]", 1, "gang-preempt-0"),
        ]
        groups, pods = ops[1], ops[2]
        group = to_message(groups.template.render(1, 2, groups.template_params))
        assert group.metadata.name == "gang-1" and group.spec.priority == 1000  # type: ignore[attr-defined]
        dm = group.spec.disruption_mode  # type: ignore[attr-defined]
        assert [m for m in ("single", "all") if dm.HasField(m)] == ([union] if union else [])
        pod = pods.pod_template.render(3, 4, pods.template_params)["spec"]
        assert pod["priority"] == 1000
        assert pod["containers"][0]["resources"]["requests"]["cpu"] == "1500m"
        assert pod.get("schedulingGroup") == ({"podGroupName": "gang-1"} if union else None)
    ops = runs(e)["PreemptionBasic/5Nodes"]
    assert summary(ops) == [
        ("createNodes[0]", 5, None),
        ("createPods[1]", 20, "namespace-1"),
        ("createPods[2]", 5, "namespace-2"),
    ]
    # the preemptor beside the config (templates/), the victims in ../templates
    assert ops[2].pod_template.source == "templates/pod-high-priority.yaml"
    assert ops[2].pod_template.data["spec"]["priority"] == 10000
    assert "priority" not in ops[1].pod_template.data["spec"]
    assert summary(runs(e)["Unschedulable/5kNodes/20kInit/10kPods"]) == [
        ("createNodes[0]", 5000, None),
        ("createPods[1]", 20000, "namespace-1"),
        ("churn[2]", None, "namespace-2"),
        ("createPods[3]", 10000, "namespace-3"),
    ]


def test_upstream_batching_passes_its_feature_gate_to_the_scheduler():
    """Its featureGates (OpportunisticBatching on, and off in the Disabled workloads) go to
    `kubera up --feature-gates`, unwarned; its pods carry upstream's signature label per
    signatureBatchSize and its scheduler config is used."""
    e = load(str(DATA / "batching" / "performance-config.yaml"))
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    assert [tc.name for tc in e.test_cases] == ["HostPortConflict", "ResourceSaturation"]
    for tc in e.test_cases:
        w = tc.workload("10Nodes_10Pods_10BatchSize")
        ops = plan(tc, w)
        assert summary(ops) == [("createNodes[0]", 10, None), ("createPods[1]", 10, "namespace-1")]
        assert ops[1].signature_batch_size == 10
        assert w.cluster.scheduler_config_path.endswith(
            "batching/scheduler-config-no-topology.yaml"
        )
        assert feature_gate_args(w) == ["--feature-gates", "OpportunisticBatching=true"]
        off = tc.workload("20000Nodes_20000Pods_OpportunisticBatchingDisabled")
        assert feature_gate_args(off) == ["--feature-gates", "OpportunisticBatching=false"]
    assert not any("featureGates" in str(warning) for warning in e.warnings)


def test_node_inclusion_policy_fields_written_capitalised_decode_as_upstream_does():
    """upstream's templates/pod-with-node-inclusion-policy.yaml writes NodeAffinityPolicy:
    and NodeTaintsPolicy:; sigs.k8s.io/yaml → encoding/json matches them to the fields."""
    path = DATA / "templates" / "pod-with-node-inclusion-policy.yaml"
    doc = yaml.safe_load(path.read_text())
    assert "NodeAffinityPolicy" in doc["spec"]["topologySpreadConstraints"][0]
    pod = to_message(doc, kind="Pod")
    (c,) = pod.spec.topology_spread_constraints  # type: ignore[attr-defined]
    assert (c.node_affinity_policy, c.node_taints_policy) == ("Honor", "Honor")
    assert dict(c.label_selector.match_labels) == {"foo": "bar"}


def test_folding_prefers_the_exact_name_and_leaves_map_keys_alone():
    doc = {
        "Metadata": {"Name": "n", "labels": {"App": "x", "app": "y"}},
        "spec": {
            "NodeName": "exact-loses-to-nothing",
            "Containers": [{"NAME": "c", "Image": "i"}],
            "nodeSelector": {"Zone": "a"},
            "HostNetwork": True,
            "hostNetwork": False,
        },
    }
    out = fold_field_names(doc, core_pb2.Pod.DESCRIPTOR)
    assert out["metadata"] == {"name": "n", "labels": {"App": "x", "app": "y"}}
    spec = out["spec"]
    assert spec["nodeName"] == "exact-loses-to-nothing"
    assert spec["containers"] == [{"name": "c", "image": "i"}]
    assert spec["nodeSelector"] == {"Zone": "a"}
    # both spellings given: the exact one is the field, the other stays unknown
    assert spec["hostNetwork"] is False and spec["HostNetwork"] is True


def test_experiments_run_upstream_scheduler_perfs_admission_set_unless_told_otherwise(tmp_path):
    default = load(str(write(tmp_path, BASE)))
    ((tc, w),) = default.runs()
    assert w.cluster.disable_admission_plugins == SCHEDULER_PERF_DISABLED
    args = cluster_args(w.cluster, plan(tc, w), RunOptions())
    i = args.index("--disable-admission-plugins")
    assert args[i + 1] == "ServiceAccount,TaintNodesByCondition,Priority"
    text = replace("  workloads:", "  cluster: {disableAdmissionPlugins: []}\n  workloads:")
    ((tc, w),) = load(str(write(tmp_path, text))).runs()
    assert w.cluster.disable_admission_plugins == ()
    assert "--disable-admission-plugins" not in cluster_args(w.cluster, plan(tc, w), RunOptions())


def test_an_unknown_admission_plugin_is_an_error_naming_the_place(tmp_path):
    text = replace(
        "  workloads:", "  cluster: {disableAdmissionPlugins: [Priority, Nope]}\n  workloads:"
    )
    with pytest.raises(
        ConfigError, match=r"\[0\]\.cluster\.disableAdmissionPlugins: unknown .*Nope"
    ):
        load(str(write(tmp_path, text)))


class _Draws:
    """A stand-in for random: choice() answers from a fixed sequence."""

    def __init__(self, text: str) -> None:
        self.chars = iter(text)

    def choice(self, _: str) -> str:
        return next(self.chars)


def test_created_nodes_carry_the_usual_hostname_label_equal_to_their_name():
    """upstream's IntegrationTestNodePreparer names a node itself (generateName + 5 random
    characters, drawn again if taken) to create it labelled kubernetes.io/hostname=<name>:
    hostname spreading (SchedulingWithNodeInclusionPolicy) needs the label."""
    taken = {"scheduler-perf-bbbbb"}
    doc = {
        "metadata": {"generateName": "scheduler-perf-", "labels": {"kubernetes.io/hostname": "x"}}
    }
    name_node(doc, taken, _Draws("bbbbb" + "c2x9z"))  # type: ignore[arg-type]
    assert doc["metadata"]["name"] == "scheduler-perf-c2x9z"
    assert doc["metadata"]["labels"] == {"kubernetes.io/hostname": "scheduler-perf-c2x9z"}
    assert taken == {"scheduler-perf-bbbbb", "scheduler-perf-c2x9z"}
    named = {"metadata": {"name": "scheduler-perf-node"}}
    name_node(named, taken)
    assert named["metadata"]["labels"] == {"kubernetes.io/hostname": "scheduler-perf-node"}


def test_a_node_strategy_on_the_hostname_key_is_applied_after_the_name():
    """upstream applies the strategy (DoPrepareNode) after the create: it wins."""
    strategy = o.UniqueNodeLabelStrategy(label_key="kubernetes.io/hostname")
    op = o.CreateNodes(index=3, count=2, strategy=strategy)
    taken: set[str] = set()
    docs = [node_doc(op, i, taken) for i in range(2)]
    assert [d["metadata"]["labels"]["kubernetes.io/hostname"] for d in docs] == [
        "node-3-0",
        "node-3-1",
    ]
    assert len(taken) == 2 and all(n.startswith("scheduler-perf-") for n in taken)
    plain = node_doc(o.CreateNodes(index=0, count=1), 0)  # without `taken`: unnamed, as before
    assert "name" not in plain["metadata"]


def test_upstream_dra_extended_resource_file_loads_whole_and_none_is_left_out():
    """dra/extendedresource: nodes of upstream's test driver, DeviceClasses naming
    example.com/gpu-<i> (createAny), pods asking for it in their requests."""
    e = load(str(DATA / "dra" / "extendedresource" / "performance-config.yaml"))
    assert [tc.name for tc in e.test_cases] == ["SchedulingWithExtendedResource"]
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    ops = runs(e)["SchedulingWithExtendedResource/fast"]
    assert [type(op) for op in ops] == [
        o.CreateNodes,
        o.CreateNodes,
        o.CreateResourceDriver,
        o.CreateAny,
        o.CreatePods,
        o.CreatePods,
    ]
    cls = ops[3].template.render(index=3, count=10)
    assert cls["spec"]["extendedResourceName"] == "example.com/gpu-3"
    pod = ops[5].pod_template.render(index=3, count=10)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"example.com/gpu-3": 1}


@pytest.mark.parametrize(
    ("folder", "case", "smallest", "template"),
    [
        ("basicscheduling", "BasicScheduling", "10Nodes_3Groups", "basic-pod.yaml"),
        ("gangscheduling", "GangScheduling", "10Nodes_3Gangs", "gang-pod.yaml"),
    ],
)
def test_upstream_podgroup_files_load_whole_with_create_pod_groups(
    folder: str, case: str, smallest: str, template: str
) -> None:
    """Their PodGroups (v1alpha3 for basic, v1beta1 for gang) become scheduling.k8s.io
    v1beta1 PodGroups; pod i names group i // podsPerGroup."""
    e = load(str(DATA / "podgroup" / folder / "performance-config.yaml"))
    (tc,) = e.test_cases
    assert (tc.name, tc.unsupported) == (case, None)
    assert len(tc.workloads) == 16
    ops = plan(tc, tc.workload(smallest))
    assert [type(op) for op in ops] == [
        o.CreateNodes, o.CreateNamespaces, o.CreatePodGroups, o.CreatePods
    ]  # fmt: skip
    groups, pods = ops[2], ops[3]
    assert (groups.count, groups.namespace, pods.count) == (3, pods.namespace, 9)
    made = [to_message(groups.template.render(i, 3, groups.template_params)) for i in range(3)]
    assert [g.api_version for g in made] == ["scheduling.k8s.io/v1beta1"] * 3
    want_gang = folder == "gangscheduling"
    assert all(g.spec.scheduling_policy.HasField("gang") == want_gang for g in made)
    assert pods.pod_template.source == f"templates/{template}"
    names = [
        to_message(pods.pod_template.render(i, 9, pods.template_params)).spec.scheduling_group
        for i in range(9)
    ]
    assert [n.pod_group_name[-1] for n in names] == list("000111222")


@pytest.mark.parametrize(
    ("case", "group_entry", "pod_entry"),
    [
        (
            "SharedPodGroupResourceClaim",
            {"name": "resource", "resourceClaimName": "test-claim-3"},
            {"name": "resource", "resourceClaimName": "test-claim-3"},
        ),
        (
            "SharedPodGroupResourceClaimTemplate",
            {"name": "resource", "resourceClaimTemplateName": "test-claim-template"},
            {"name": "resource", "resourceClaimTemplateName": "test-claim-template"},
        ),
    ],
)
def test_upstream_workload_resource_claims_file_loads_whole(
    case: str, group_entry: dict[str, str], pod_entry: dict[str, str]
) -> None:
    """dra/workloadresourceclaims (DRAWorkloadResourceClaims): PodGroups whose
    spec.resourceClaims name a claim or a template, pods whose entry matches the group's
    exactly (so they share the group's claim), its claim template rendered with Go's
    range, variables, Int and JSON."""
    e = load(str(DATA / "dra" / "workloadresourceclaims" / "performance-config.yaml"))
    assert [tc.name for tc in e.test_cases] == [
        "SharedPodGroupResourceClaim",
        "SharedPodGroupResourceClaimTemplate",
    ]
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    ops = runs(e)[f"{case}/fast"]
    (groups,) = [op for op in ops if isinstance(op, o.CreatePodGroups)]
    (pods,) = [op for op in ops if isinstance(op, o.CreatePods)]
    group = to_message(groups.template.render(3, 10, groups.template_params))
    assert group.api_version == "scheduling.k8s.io/v1beta1"
    assert [
        {k: v for k, v in (("name", c.name), ("resourceClaimName", c.resource_claim_name),
         ("resourceClaimTemplateName", c.resource_claim_template_name)) if v}
        for c in group.spec.resource_claims
    ] == [group_entry]  # fmt: skip
    pod = to_message(pods.pod_template.render(13, 10, pods.template_params))
    assert pod.spec.scheduling_group.pod_group_name == "test-dra-3"
    (entry,) = pod.spec.resource_claims
    got = {"name": entry.name}
    got.update(
        {"resourceClaimName": entry.resource_claim_name}
        if entry.HasField("resource_claim_name")
        else {"resourceClaimTemplateName": entry.resource_claim_template_name}
    )
    assert got == pod_entry
    if case.endswith("Template"):
        (tmpl,) = [op for op in ops if type(op) is o.CreateAny and op.namespace == "test"]
        doc = tmpl.template.render(0, 1, tmpl.template_params)
        assert doc["spec"]["spec"]["devices"] == {
            "constraints": None,
            "requests": [
                {"name": "req-0", "exactly": {"deviceClassName": "test-class", "selectors": None}}
            ],
        }


def test_upstream_podgroup_tas_file_loads_whole_with_racks_and_topology_constraints():
    """podgroup/tas: nodes from its node template (rack-<i // 100>, zone-<i // 100>), gangs
    of podsPerGroup pods whose PodGroup asks for one topology.kubernetes.io/rack domain."""
    e = load(str(DATA / "podgroup" / "tas" / "performance-config.yaml"))
    (tc,) = e.test_cases
    assert (tc.name, tc.unsupported) == ("TopologyAwareScheduling", None)
    assert len(tc.workloads) == 8
    ops = plan(tc, tc.workload("100Nodes_10Gangs"))
    assert [type(op) for op in ops] == [
        o.CreateNodes, o.CreateNamespaces, o.CreatePodGroups, o.CreatePods
    ]  # fmt: skip
    nodes, groups, pods = ops[0], ops[2], ops[3]
    assert nodes.node_template is not None and nodes.count == 100
    labels = [nodes.node_template.render(i, 100)["metadata"]["labels"] for i in (0, 99)]
    assert [lb["topology.kubernetes.io/rack"] for lb in labels] == ["rack-0", "rack-0"]
    group = to_message(groups.template.render(4, 10, groups.template_params))
    assert group.metadata.name == "gang-4" and group.spec.scheduling_policy.gang.min_count == 3
    assert [t.key for t in group.spec.scheduling_constraints.topology] == [
        "topology.kubernetes.io/rack"
    ]
    assert pods.count == 30
    pod = to_message(pods.pod_template.render(13, 30, pods.template_params))
    assert pod.spec.scheduling_group.pod_group_name == "gang-4"


@pytest.mark.parametrize(
    ("workload", "args"),
    [
        ("5Nodes", ["--feature-gates", "SchedulerAsyncAPICalls=false"]),
        ("5Nodes_AsyncAPICallsEnabled", ["--feature-gates", "SchedulerAsyncAPICalls=true"]),
        # a gate the schedulers do not take is not passed (it is warned about at load)
        ("5000Nodes_50000Pods_NodeDeclaredFeaturesDisabled", []),
    ],
)
def test_misc_runs_its_async_api_calls_variants_with_the_schedulers_gate(workload, args):
    e = load(str(DATA / "misc" / "performance-config.yaml"))
    assert feature_gate_args(e.test_cases[0].workload(workload)) == args
