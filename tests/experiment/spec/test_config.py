"""kubera.experiment.spec.config: upstream scheduler_perf files load and plan as upstream runs
them; kubera's fields and sweeps; every error names the file and the place."""

from __future__ import annotations

import textwrap

import pytest

from kubera.experiment.spec import ops as o
from kubera.experiment.spec.config import ConfigError, load, plan
from services.leaderelection import LeaseTimings
from tests.experiment.configfiles import (
    BASE,
    DATA,
    EXAMPLES,
    NODE_TEMPLATE,
    POD,
    runs,
    summary,
    write,
)

# ---------------------------------------------------------------------------------------------
# Upstream files, unchanged.


def test_upstream_misc_config_loads_every_test_case_and_workload():
    e = load(str(DATA / "misc" / "performance-config.yaml"))
    names = [tc.name for tc in e.test_cases]
    assert names == [
        "SchedulingBasic",
        "SchedulingDaemonset",
        "SchedulingWithMixedChurn",
        "SchedulingWhileGated",
        "SchedulingDeletedPodsWithFinalizers",
        "SchedulingWithExtendedResource",
    ]
    # upstream moved PreemptionBasic, PreemptionAsync and Unschedulable to
    # default_preemption/ and dropped the DRAExtendedResource=false workloads
    assert sum(len(tc.workloads) for tc in e.test_cases) == 22
    # featureGates are kept; SchedulerAsyncAPICalls is run (the schedulers get it: no
    # warning), a gate kubera runs otherwise is warned about.
    basic = e.test_cases[0]
    assert basic.workload("5Nodes").feature_gates == {"SchedulerAsyncAPICalls": False}
    assert not any("[0].workloads[0].featureGates" in w for w in e.warnings)
    assert any("featureGates" in w and "DynamicResourceAllocation=true" in w for w in e.warnings)
    # NodeDeclaredFeatures: false is how kubera runs (alpha, off): that variant runs as
    # upstream's and is not warned about.
    i = [w.name for w in basic.workloads].index("5000Nodes_50000Pods_NodeDeclaredFeaturesDisabled")
    assert basic.workloads[i].feature_gates == {"NodeDeclaredFeatures": False}
    assert not any(f"[0].workloads[{i}].featureGates" in w for w in e.warnings)


@pytest.mark.parametrize(
    ("run", "expected"),
    [
        (
            "SchedulingBasic/5000Nodes_10000Pods",
            [
                ("createNodes[0]", 5000, None),
                ("createPods[1]", 1000, "namespace-1"),
                ("createPods[2]", 10000, "namespace-2"),
            ],
        ),
        (
            "SchedulingDaemonset/5Nodes",
            [
                ("createNodes[0]", 1, None),
                ("createNodes[1]", 5, None),
                ("createPods[2]", 10, "namespace-2"),
            ],
        ),
        (
            # upstream's deletePods names namespace-3: the namespace of op 3's pods.
            "SchedulingWhileGated/1Node_10GatedPods",
            [
                ("createNodes[0]", 1, None),
                ("createPods[1]", 10, "namespace-1"),
                ("barrier[2]", None, None),
                ("createPods[3]", 10, "namespace-3"),
                ("deletePods[4]", None, "namespace-3"),
                ("createPods[5]", 10, "namespace-5"),
            ],
        ),
        (
            "SchedulingWithExtendedResource/500pods_500nodes_DRAExtendedResourceEnabled",
            [
                ("createNodes[0]", 0, None),
                ("createNodes[1]", 500, None),
                ("createPods[2]", 500, "test"),
            ],
        ),
    ],
)
def test_upstream_misc_workloads_plan_counts_from_params_and_upstream_namespaces(run, expected):
    planned = runs(load(str(DATA / "misc" / "performance-config.yaml")))
    assert summary(planned[run]) == expected


def test_upstream_templates_are_loaded_relative_to_the_config_and_rendered_per_index():
    e = load(str(DATA / "misc" / "performance-config.yaml"))
    planned = runs(e)
    basic = planned["SchedulingBasic/5Nodes"]
    pod = basic[1].pod_template  # defaultPodTemplatePath
    assert pod is not None and pod.source == "../templates/pod-default.yaml"
    assert pod.data["spec"]["containers"][0]["resources"]["requests"] == {
        "cpu": "100m",
        "memory": "500Mi",
    }
    ext = planned["SchedulingWithExtendedResource/fast_DRAExtendedResourceEnabled"]
    node = ext[1].node_template.render(index=3, count=10)
    assert node["status"]["capacity"]["foo.com/bar-3"] == 1
    pod3 = ext[2].pod_template.render(index=3, count=10)
    assert pod3["metadata"]["name"] == "test-extended-resource-3"
    assert pod3["spec"]["containers"][0]["resources"]["limits"] == {"foo.com/bar-3": 1}
    churn = planned["SchedulingWithMixedChurn/10Nodes"][1]
    assert isinstance(churn, o.Churn) and churn.mode == "recreate" and churn.number == 1
    # upstream's mixed churn, Services included, whole.
    assert [t.data["kind"] for t in churn.templates] == ["Node", "Pod", "Service"]
    assert not any("service-default.yaml" in w for w in e.warnings)
    assert churn.interval_milliseconds == 1000
    gated = planned["SchedulingWhileGated/1Node_10GatedPods"]
    assert gated[2] == o.Barrier(index=2, stage_requirement="Attempted")
    assert gated[4].delete_pods_per_second == 50 and gated[4].skip_wait_to_completion


def test_upstream_thresholds_and_default_metric():
    e = load(str(DATA / "misc" / "performance-config.yaml"))
    basic = e.test_cases[0]
    assert basic.workload("5000Nodes_10000Pods").threshold == 680
    assert basic.workload("5Nodes").threshold is None
    assert basic.workload("5Nodes").threshold_metric == "SchedulingThroughput"
    assert basic.workload("5Nodes").threshold_metric_selector.data_bucket == "Average"


def test_upstream_pod_sets_unroll_into_one_create_pods_per_namespace():
    e = load(str(DATA / "affinity" / "performance-config.yaml"))
    planned = runs(e)
    ops = planned["SchedulingRequiredPodAntiAffinityWithNSSelector/10Nodes"]
    assert summary(ops) == [
        ("createNodes[0]", 10, None),
        ("createNamespaces[1]", 2, None),
        ("createNamespaces[2]", 1, None),
        ("createPods[3]", 2, "init-ns-0"),
        ("createPods[4]", 2, "init-ns-1"),
        ("createPods[5]", 6, "measure-ns-0"),
    ]
    assert ops[1].names() == ["init-ns-0", "init-ns-1"]
    assert ops[1].namespace_template.data["metadata"]["labels"] == {"team": "devops"}
    assert ops[3].pod_template.source == "../templates/pod-anti-affinity-ns-selector.yaml"
    affinity = planned["SchedulingPodAffinity/5Nodes"][0]
    assert affinity.strategy == o.LabelNodePrepareStrategy(
        label_key="topology.kubernetes.io/zone", label_values=("zone1",)
    )


def test_upstream_default_topology_spreading_creates_its_service_with_create_any():
    """upstream's topology_spreading/performance-config.yaml, unchanged: every test case
    runs (none is left out), and DefaultTopologySpreading's createAny is a Service."""
    e = load(str(DATA / "topology_spreading" / "performance-config.yaml"))
    assert not [tc.name for tc in e.test_cases if tc.unsupported]
    ops = runs(e)["DefaultTopologySpreading/5Nodes"]
    assert summary(ops) == [
        ("createNodes[0]", 5, None),
        ("createAny[1]", 1, "service-ns"),
        ("createPods[2]", 10, "namespace-2"),
        ("createPods[3]", 10, "service-ns"),
    ]
    assert ops[1].template.data["kind"] == "Service"
    assert ops[1].template.data["spec"]["selector"] == {"app": "scheduler-perf"}
    assert ops[3].pod_template.data["metadata"]["labels"] == {"app": "scheduler-perf"}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_experiment_loads_and_plans(path):
    e = load(str(path))
    assert e.test_cases and not e.warnings
    for tc, w in e.runs():
        assert plan(tc, w)


PLANNED = [
    *sorted(EXAMPLES.glob("*.yaml")),
    DATA / "misc" / "performance-config.yaml",
    DATA / "affinity" / "performance-config.yaml",
    DATA / "topology_spreading" / "performance-config.yaml",
    DATA / "default_preemption" / "performance-config.yaml",
    DATA / "batching" / "performance-config.yaml",
]


@pytest.mark.parametrize("path", PLANNED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_a_plan_holds_only_runnable_ops_numbered_in_order_with_every_param_resolved(path):
    runnable = tuple(t for t in o.OP_TYPES.values() if t is not o.CreatePodSets)
    for tc, w in load(str(path)).runs():
        ops = plan(tc, w)
        assert [op.index for op in ops] == list(range(len(ops)))
        for op in ops:
            assert isinstance(op, runnable) and not op.param_refs
            assert getattr(op, "count", 0) >= 0
        assert plan(tc, w) == ops  # planning is pure: the same workload, the same plan


def test_demo_is_a_small_failover_with_faults_and_a_check():
    e = load(str(EXAMPLES / "demo.yaml"))
    [(tc, w)] = e.runs()
    assert w.cluster.hollow_nodes and w.cluster.schedulers == 3
    assert w.cluster.leader_election == LeaseTimings(
        lease_duration=2.0, renew_deadline=1.5, retry_period=0.5
    )
    ops = plan(tc, w)
    assert 2000 <= sum(op.count for op in ops if isinstance(op, o.CreatePods)) <= 3000
    assert 200 <= next(op.count for op in ops if isinstance(op, o.CreateNodes)) <= 300
    actions = {op.action for op in ops if isinstance(op, o.Chaos)}
    assert actions == {"killLeader", "pauseLeader", "partitionLeader"}
    assert isinstance(ops[-1], o.Check)


# ---------------------------------------------------------------------------------------------
# kubera's fields.


def test_sweep_expands_into_one_workload_per_point_with_the_value_as_setting_and_param(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: Sweep
          cluster: {schedulerMode: shared-state}
          workloadTemplate:
          - {opcode: createNodes, countParam: $nodes}
          - {opcode: createPods, countParam: $pods, collectMetrics: true}
          workloads:
          - name: base
            params: {nodes: 10}
            sweep: {schedulers: [1, 2], pods: [5, 7]}
        """,
    )
    tc = load(str(path)).test_cases[0]
    assert [w.name for w in tc.workloads] == [
        "base/schedulers=1/pods=5",
        "base/schedulers=1/pods=7",
        "base/schedulers=2/pods=5",
        "base/schedulers=2/pods=7",
    ]
    w = tc.workloads[3]
    assert w.sweep == {"schedulers": 2, "pods": 7} and w.base_name == "base"
    assert w.params == {"nodes": 10, "schedulers": 2, "pods": 7}
    assert w.cluster.schedulers == 2 and w.cluster.scheduler_mode == "shared-state"
    assert summary(plan(tc, w))[1] == ("createPods[1]", 7, "namespace-1")


def test_a_sweep_point_overrides_the_same_setting_written_in_any_case(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: S
          cluster: {Schedulers: 5, TimeScale: 3}
          workloadTemplate:
          - {opcode: createPods, count: 1, collectMetrics: true}
          workloads:
          - {name: w, cluster: {SCHEDULERS: 6}, sweep: {schedulers: [1, 2]}}
        """,
    )
    w1, w2 = load(str(path)).test_cases[0].workloads
    assert (w1.cluster.schedulers, w2.cluster.schedulers) == (1, 2)
    assert w1.cluster.time_scale == 3.0


def test_cluster_settings_merge_workload_over_test_case_and_take_params(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: C
          cluster:
            hollowNodes: true
            nodeTemplatePath: nodes.yaml
            schedulers: $k
            leaderElection: {leaseDuration: 2s, renewDeadline: 1500ms, retryPeriod: 500ms}
          workloadTemplate:
          - {opcode: createPods, count: 1, collectMetrics: true}
          workloads:
          - name: a
            params: {k: 3}
          - name: b
            params: {k: 1}
            cluster:
              controllerManagers: 0
              apiServers: 2
              timeScale: 10
              leaderElection: {leaseDuration: 4s}
        """,
        {"nodes.yaml": NODE_TEMPLATE},
    )
    a, b = load(str(path)).test_cases[0].workloads
    assert a.cluster.schedulers == 3 and a.cluster.hollow_nodes
    assert a.cluster.node_template.data["kind"] == "NodeTemplate"
    assert b.cluster.schedulers == 1 and b.cluster.controller_managers == 0
    assert (a.cluster.apiservers, b.cluster.apiservers) == (1, 2)
    assert b.cluster.time_scale == 10.0 and b.cluster.hollow_nodes
    assert b.cluster.leader_election == LeaseTimings(
        lease_duration=4.0, renew_deadline=1.5, retry_period=0.5
    )


NODE_OBJECT = """\
apiVersion: v1
kind: Node
metadata: {generateName: node-}
status: {allocatable: {cpu: "4", pods: "110"}}
"""


def test_hollow_nodes_warn_about_what_a_create_nodes_op_says_that_they_ignore(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: C
          workloadTemplate:
          - {opcode: createNodes, count: 2}
          - opcode: createNodes
            count: 3
            nodeTemplatePath: node.yaml
            uniqueNodeLabelStrategy: {labelKey: zone}
            templateParams: {x: 1}
          - {opcode: createPods, count: 1, collectMetrics: true}
          workloads:
          - name: hollow
            cluster: {hollowNodes: true}
          - name: plain
        """,
        {"node.yaml": NODE_OBJECT},
    )
    e = load(str(path))
    assert e.warnings == (
        f"{path}: [0].workloadTemplate[1]: nodeTemplatePath, uniqueNodeLabelStrategy, "
        "templateParams ignored with cluster.hollowNodes (hollow nodes come from "
        "cluster.nodeTemplatePath, or the default node, started with the cluster)",
    )
    # the plain-node workload of the same test case follows the op (no warning of its own)
    assert [w.name for w in e.test_cases[0].workloads] == ["hollow", "plain"]


def test_hollow_nodes_after_pods_are_an_error_a_plain_node_workload_is_not(tmp_path):
    text = """\
        - name: C
          workloadTemplate:
          - {opcode: createNodes, count: 2}
          - {opcode: createPods, count: 1, collectMetrics: true}
          - {opcode: createNodes, count: 1}
          workloads:
          - name: w
            cluster: {hollowNodes: HOLLOW}
        """
    assert load(str(write(tmp_path, text.replace("HOLLOW", "false")))).warnings == ()
    path = write(tmp_path, text.replace("HOLLOW", "true"))
    with pytest.raises(ConfigError) as err:
        load(str(path))
    assert str(err.value) == (
        f"{path}: [0].workloadTemplate[2]: createNodes after createPods "
        "([0].workloadTemplate[1]) with cluster.hollowNodes: hollow nodes all start with the "
        "cluster (move it before the pods, or use plain nodes)"
    )


SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
"""


def test_scheduler_config_is_read_checked_and_overridable_per_workload(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: S
          schedulerConfigPath: sched.yaml
          cluster:
            leaderElection: {leaseDuration: $lease, renewDeadline: 1500ms, retryPeriod: 500ms}
          workloadTemplate:
          - {opcode: createPods, count: 1, collectMetrics: true}
          workloads:
          - name: a
            sweep: {lease: [2s, 3s]}
          - name: b
            params: {lease: 4s}
            cluster: {schedulerConfigPath: other.yaml}
        """,
        {"sched.yaml": SCHEDULER_CONFIG, "other.yaml": SCHEDULER_CONFIG + "# other\n"},
    )
    tc = load(str(path)).test_cases[0]
    assert tc.scheduler_config == SCHEDULER_CONFIG
    assert tc.scheduler_config_path == str(tmp_path / "sched.yaml")
    a2, a3, b = tc.workloads
    assert (a2.name, a2.cluster.leader_election.lease_duration) == ("a/lease=2s", 2.0)
    assert a3.cluster.leader_election.lease_duration == 3.0
    assert a2.cluster.scheduler_config == SCHEDULER_CONFIG
    assert b.cluster.scheduler_config_path == str(tmp_path / "other.yaml")
    assert b.cluster.scheduler_config.endswith("# other\n")


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("  schedulerConfigPath: sched.yaml\n", "[0].schedulerConfigPath: "),
        ("  cluster: {schedulerConfigPath: sched.yaml}\n", "[0].cluster.schedulerConfigPath: "),
    ],
)
def test_a_bad_scheduler_config_fails_the_load_naming_where_it_was_given(tmp_path, where, message):
    text = BASE.replace("  workloadTemplate:", where + "  workloadTemplate:")
    path = write(tmp_path, text, {"sched.yaml": "apiVersion: v1\nkind: Foo\n"})
    with pytest.raises(ConfigError) as info:
        load(str(path))
    assert message in str(info.value) and "invalid KubeSchedulerConfiguration" in str(info.value)


def test_kubera_ops_take_params_and_defaults(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: K
          workloadTemplate:
          - {opcode: chaos, action: pauseLeader, duration: $d, every: 5s, times: $n}
          - {opcode: chaos, action: killPool, pool: pool-1, at: 1.5}
          - {opcode: traceReplay, podTracePath: pods.csv, limit: 2}
          - {opcode: createPods, count: 1, collectMetrics: true}
          - {opcode: check}
          workloads:
          - {name: w, params: {d: 3s, n: 4}}
        """,
        {
            "pods.csv": "name,cpu_milli,memory_mib,num_gpu,gpu_milli,qos,creation_time,"
            "deletion_time,scheduled_time\np-0,1000,1024,0,0,LS,5,,\n"
        },
    )
    tc = load(str(path)).test_cases[0]
    chaos, pool, trace, _, check = plan(tc, tc.workloads[0])
    assert chaos == o.Chaos(index=0, action="pauseLeader", duration=3.0, every=5.0, times=4)
    assert chaos.offsets() == [5.0, 10.0, 15.0, 20.0]
    assert pool.offsets() == [1.5] and pool.component == "scheduler"
    assert trace.pod_trace_path == str(tmp_path / "pods.csv") and trace.limit == 2
    assert trace.namespace == "namespace-2" and trace.time_scale == 1.0
    assert trace.gpu_resource_name == "nvidia.com/gpu"
    assert check == o.Check(index=4, settle=5.0)


def test_field_names_match_case_insensitively_as_go_json_does(tmp_path):
    path = write(
        tmp_path,
        """\
        - Name: Case
          WorkloadTemplate:
          - {Opcode: createNodes, CountParam: $n}
          - {opcode: createPods, count: 2, CollectMetrics: true}
          Workloads:
          - {name: w, Params: {n: 3}}
        """,
    )
    tc = load(str(path)).test_cases[0]
    assert summary(plan(tc, tc.workloads[0]))[0] == ("createNodes[0]", 3, None)


def test_paths_fall_back_to_the_working_directory_as_older_upstream_files_need(
    tmp_path, monkeypatch
):
    # upstream's older config/performance-config.yaml names config/templates/… relative to
    # the package directory `go test` runs in, the parent of the config's own directory.
    (tmp_path / "config" / "templates").mkdir(parents=True)
    (tmp_path / "config" / "templates" / "pod.yaml").write_text(POD)
    text = BASE.replace(
        "collectMetrics: true}", "collectMetrics: true, podTemplatePath: config/templates/pod.yaml}"
    )
    (tmp_path / "config" / "performance-config.yaml").write_text(text)
    monkeypatch.chdir(tmp_path)
    tc = load("config/performance-config.yaml").test_cases[0]
    assert tc.ops[1].pod_template.path == str(tmp_path / "config" / "templates" / "pod.yaml")


def test_template_params_and_functions_render_per_index(tmp_path):
    path = write(
        tmp_path,
        """\
        - name: T
          workloadTemplate:
          - opcode: createNodes
            count: 6
            nodeTemplatePath: node.yaml
            templateParams: {zones: $zones, prefix: n}
          - {opcode: createPods, count: 1, collectMetrics: true}
          workloads:
          - {name: w, params: {zones: 3}}
        """,
        {
            "node.yaml": textwrap.dedent(
                """\
                apiVersion: v1
                kind: Node
                metadata:
                  name: {{ .prefix }}-{{ AddInt .Index 1 }}-of-{{.Count}}
                  labels:
                    zone: "z{{- Mod .Index .zones -}}"
                    half: "{{ DivideInt (MultiplyInt .Index 2) .Count }}"
                """
            )
        },
    )
    tc = load(str(path)).test_cases[0]
    nodes = plan(tc, tc.workloads[0])[0]
    assert nodes.template_params == {"zones": 3, "prefix": "n"}
    node = nodes.node_template.render(index=4, count=6, params=nodes.template_params)
    assert node["metadata"]["name"] == "n-5-of-6"
    assert node["metadata"]["labels"] == {"zone": "z1", "half": "1"}
    assert nodes.node_template.data["metadata"]["name"] == "n-1-of-1"


def test_unknown_template_fields_are_warnings_naming_the_place(tmp_path):
    path = write(
        tmp_path,
        BASE.replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": POD + "  colour: blue\n"},
    )
    assert load(str(path)).warnings == (
        f'{path}: [0].workloadTemplate[1].podTemplatePath: pod.yaml: unknown field "spec.colour" '
        "(kubera ignores it)",
    )


def test_runs_select_workloads_by_name_base_name_or_test_case_path():
    e = load(str(EXAMPLES / "shared-state.yaml"))
    assert len(e.runs()) == 6
    assert [w.name for _, w in e.runs("50Nodes_500Pods")] == [
        "50Nodes_500Pods/schedulers=1",
        "50Nodes_500Pods/schedulers=2",
        "50Nodes_500Pods/schedulers=4",
    ]
    assert [w.name for _, w in e.runs("SharedState/50Nodes_500Pods/schedulers=2")] == [
        "50Nodes_500Pods/schedulers=2"
    ]
    assert e.runs("nope") == []


def test_scale_out_sweeps_apiservers_by_shared_state_schedulers():
    e = load(str(EXAMPLES / "scale-out.yaml"))
    small = [w for _, w in e.runs("100Nodes_1000Pods")]
    assert [(w.cluster.apiservers, w.cluster.schedulers) for w in small] == [
        (1, 1),
        (1, 2),
        (2, 1),
        (2, 2),
    ]
    assert {w.cluster.scheduler_mode for w in small} == {"shared-state"}
    assert small[3].name == "100Nodes_1000Pods/apiServers=2/schedulers=2"
    full = [w for _, w in e.runs("1000Nodes_10000Pods")]
    assert sorted({(w.cluster.apiservers, w.cluster.schedulers) for w in full}) == [
        (k, s) for k in (1, 2, 4) for s in (1, 2, 4)
    ]
