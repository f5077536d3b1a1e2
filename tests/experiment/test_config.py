"""kubera.experiment.config: upstream scheduler_perf files load and plan as upstream runs
them; kubera's fields and sweeps; every error names the file and the place."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kubera.errors import CliError
from kubera.experiment import ops as o
from kubera.experiment.config import ConfigError, Experiment, LeaderElection, load, plan

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scheduler_perf"
EXAMPLES = ROOT / "examples" / "experiments"

POD = """\
apiVersion: v1
kind: Pod
metadata: {generateName: pod-}
spec:
  containers:
  - {name: pause, image: pause, resources: {requests: {cpu: 100m}}}
"""
NODE_TEMPLATE = """\
apiVersion: kubera.io/v1alpha1
kind: NodeTemplate
nodes:
- {name: small, count: 1, capacity: {cpu: "2", memory: 4Gi, pods: "20"}}
"""


def write(tmp_path: Path, text: str, files: dict[str, str] | None = None) -> Path:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "exp.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def runs(e: Experiment) -> dict[str, list[o.Op]]:
    return {f"{tc.name}/{w.name}": plan(tc, w) for tc, w in e.runs()}


def summary(ops: list[o.Op]) -> list[tuple]:
    return [(op.phase, getattr(op, "count", None), getattr(op, "namespace", None)) for op in ops]


# ---------------------------------------------------------------------------------------------
# Upstream files, unchanged.


def test_upstream_misc_config_loads_every_test_case_and_workload():
    e = load(str(DATA / "misc" / "performance-config.yaml"))
    names = [tc.name for tc in e.test_cases]
    assert names == [
        "SchedulingBasic",
        "SchedulingDaemonset",
        "PreemptionBasic",
        "PreemptionAsync",
        "Unschedulable",
        "SchedulingWithMixedChurn",
        "SchedulingWhileGated",
        "SchedulingDeletedPodsWithFinalizers",
        "SchedulingWithExtendedResource",
    ]
    assert sum(len(tc.workloads) for tc in e.test_cases) == 43
    # featureGates are kept, and each place that sets them is warned about.
    basic = e.test_cases[0]
    assert basic.workload("5Nodes").feature_gates == {"SchedulerAsyncAPICalls": False}
    assert any("[0].workloads[0].featureGates" in w for w in e.warnings)


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
            "SchedulingWithExtendedResource/500pods_500nodes",
            [
                ("createNodes[0]", 0, None),
                ("createNodes[1]", 500, None),
                ("createPods[2]", 500, "test"),
            ],
        ),
        (
            "Unschedulable/5kNodes/20kInit/10kPods",
            [
                ("createNodes[0]", 5000, None),
                ("createPods[1]", 20000, "namespace-1"),
                ("churn[2]", None, "namespace-2"),
                ("createPods[3]", 10000, "namespace-3"),
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
    ext = planned["SchedulingWithExtendedResource/fast"]
    node = ext[1].node_template.render(index=3, count=10)
    assert node["status"]["capacity"]["foo.com/bar-3"] == 1
    pod3 = ext[2].pod_template.render(index=3, count=10)
    assert pod3["metadata"]["name"] == "test-extended-resource-3"
    assert pod3["spec"]["containers"][0]["resources"]["limits"] == {"foo.com/bar-3": 1}
    churn = planned["SchedulingWithMixedChurn/10Nodes"][1]
    assert isinstance(churn, o.Churn) and churn.mode == "recreate" and churn.number == 1
    # kubera serves no Services: the churn leaves that template out, and says so.
    assert [t.data["kind"] for t in churn.templates] == ["Node", "Pod"]
    assert any(
        "[5].workloadTemplate[1].templatePaths[2]: ../templates/churn/service-default.yaml: "
        'left out, kubera does not serve it: no matches for kind "Service"' in w
        for w in e.warnings
    )
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
    assert w.cluster.leader_election == LeaderElection(
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
              timeScale: 10
              leaderElection: {leaseDuration: 4s}
        """,
        {"nodes.yaml": NODE_TEMPLATE},
    )
    a, b = load(str(path)).test_cases[0].workloads
    assert a.cluster.schedulers == 3 and a.cluster.hollow_nodes
    assert a.cluster.node_template.data["kind"] == "NodeTemplate"
    assert b.cluster.schedulers == 1 and b.cluster.controller_managers == 0
    assert b.cluster.time_scale == 10.0 and b.cluster.hollow_nodes
    assert b.cluster.leader_election == LeaderElection(
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


# ---------------------------------------------------------------------------------------------
# Errors: each names the file and the place, before anything starts.

BASE = """\
- name: E
  workloadTemplate:
  - {opcode: createNodes, countParam: $nodes}
  - {opcode: createPods, count: 2, collectMetrics: true}
  workloads:
  - {name: w, params: {nodes: 1}}
"""


def replace(old: str, new: str) -> str:
    assert old in BASE
    return BASE.replace(old, new)


ERRORS = [
    (
        "unknown-opcode",
        replace("opcode: createNodes", "opcode: crateNodes"),
        {},
        '[0].workloadTemplate[0].opcode: unknown opcode "crateNodes" (expected one of: barrier,',
    ),
    (
        "unknown-field",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePth: p.yaml}"),
        {},
        "[0].workloadTemplate[1].podTemplatePth: unknown field (expected one of: collectMetrics,",
    ),
    (
        "bad-type-count",
        replace("count: 2", "count: two"),
        {},
        "[0].workloadTemplate[1].count: expected an integer, got string 'two'",
    ),
    (
        "bad-type-bool",
        replace("collectMetrics: true", "collectMetrics: 'yes'"),
        {},
        "[0].workloadTemplate[1].collectMetrics: expected true or false",
    ),
    (
        "negative-count",
        replace("count: 2", "count: -1"),
        {},
        "[0].workloadTemplate[1].count: must not be negative",
    ),
    (
        "missing-template",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {},
        "[0].workloadTemplate[1].podTemplatePath: file not found: pod.yaml",
    ),
    (
        "template-not-yaml",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": "a: [unclosed\n"},
        "[0].workloadTemplate[1].podTemplatePath: pod.yaml: invalid YAML",
    ),
    (
        "template-unsupported-action",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": "kind: Pod\n{{ if .Index }}x: 1{{ end }}\n"},
        'pod.yaml: unsupported template action or function "if"',
    ),
    (
        "pod-template-of-another-kind",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"},
        "[0].workloadTemplate[1].podTemplatePath: pod.yaml: expected a Pod, got a Node",
    ),
    (
        "pod-template-type-error",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": "apiVersion: v1\nkind: Pod\nspec: {containers: 3}\n"},
        "[0].workloadTemplate[1].podTemplatePath: pod.yaml: ",
    ),
    (
        "create-any-unserved-kind",
        replace(
            "- {opcode: createPods",
            "- {opcode: createAny, templatePath: svc.yaml}\n  - {opcode: createPods",
        ),
        {"svc.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"},
        '[0].workloadTemplate[1].templatePath: svc.yaml: not supported by kubera: no matches for kind "Service"',
    ),
    (
        "template-value-not-given",
        replace("collectMetrics: true}", "collectMetrics: true, podTemplatePath: pod.yaml}"),
        {"pod.yaml": "kind: Pod\nmetadata: {name: 'p-{{ .suffix }}'}\n"},
        "[0].workloadTemplate[1].podTemplatePath: pod.yaml: no value for .suffix",
    ),
    (
        "template-param-not-defined",
        replace("collectMetrics: true}", "collectMetrics: true, templateParams: {a: $zz}}"),
        {},
        '[0].workloadTemplate[1].templateParams.a: parameter "zz" is not defined by workload "w"',
    ),
    (
        "missing-param",
        replace("params: {nodes: 1}", "params: {nodez: 1}"),
        {},
        '[0].workloadTemplate[0].countParam: parameter "nodes" is not defined by workload "w"',
    ),
    (
        "param-wrong-type",
        replace("params: {nodes: 1}", "params: {nodes: '1'}"),
        {},
        'parameter "nodes" of workload "w" has the wrong type string (expected a number)',
    ),
    (
        "unused-param",
        replace("params: {nodes: 1}", "params: {nodes: 1, extra: 2}"),
        {},
        '[0].workloads[0].params: parameter(s) extra of workload "w" are defined but unused',
    ),
    (
        "param-without-dollar",
        replace("countParam: $nodes", "countParam: nodes"),
        {},
        '[0].workloadTemplate[0].countParam: expected a parameter reference like "$name"',
    ),
    (
        "sweep-not-a-list",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {schedulers: 2}}"),
        {},
        "[0].workloads[0].sweep.schedulers: expected a non-empty list of values, got int",
    ),
    (
        "sweep-empty",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {schedulers: []}}"),
        {},
        "[0].workloads[0].sweep.schedulers: expected a non-empty list",
    ),
    (
        "sweep-duplicates",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {schedulers: [1, 1]}}"),
        {},
        "[0].workloads[0].sweep.schedulers: values must be distinct",
    ),
    (
        "sweep-also-param",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {nodes: [1, 2]}}"),
        {},
        '[0].workloads[0].sweep.nodes: "nodes" is defined both in params and in sweep',
    ),
    (
        "sweep-unused",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {nodez: [1, 2]}}"),
        {},
        'parameter(s) nodez of workload "w/nodez=1" are defined but unused',
    ),
    (
        "sweep-bad-value",
        replace("params: {nodes: 1}}", "params: {nodes: 1}, sweep: {schedulers: [0, 1]}}"),
        {},
        "[0].workloads[0].sweep.schedulers: must be at least 1, got 0",
    ),
    (
        "unsupported-pv",
        replace(
            "collectMetrics: true}",
            "collectMetrics: true, persistentVolumeClaimTemplatePath: pvc.yaml}",
        ),
        {},
        "[0].workloadTemplate[1].persistentVolumeClaimTemplatePath: not supported by kubera "
        "(persistent volumes are not implemented)",
    ),
    (
        "unsupported-opcode",
        replace("{opcode: createNodes, countParam: $nodes}", "{opcode: createResourceClaims}"),
        {},
        '[0].workloadTemplate[0].opcode: "createResourceClaims" is not supported by kubera',
    ),
    (
        "no-metrics",
        replace("collectMetrics: true", "collectMetrics: false"),
        {},
        "[0].workloadTemplate: no op collects metrics",
    ),
    (
        "stop-without-start",
        replace(
            "- {opcode: createPods", "- {opcode: stopCollectingMetrics}\n  - {opcode: createPods"
        ),
        {},
        "[0].workloadTemplate[1]: stopCollectingMetrics without a startCollectingMetrics",
    ),
    (
        "collect-and-skip-wait",
        replace("collectMetrics: true}", "collectMetrics: true, skipWaitToCompletion: true}"),
        {},
        "[0].workloadTemplate[1]: collectMetrics and skipWaitToCompletion cannot be true",
    ),
    (
        "steady-state-without-duration",
        replace("collectMetrics: true}", "collectMetrics: true, steadyState: true}"),
        {},
        "[0].workloadTemplate[1].duration: when creating pods in a steady state, duration must be > 0",
    ),
    (
        "bad-duration",
        replace(
            "collectMetrics: true}", "collectMetrics: true, steadyState: true, duration: 10 s}"
        ),
        {},
        '[0].workloadTemplate[1].duration: invalid duration "10 s"',
    ),
    (
        "churn-recreate-zero",
        replace(
            "- {opcode: createPods",
            "- {opcode: churn, mode: recreate, templatePaths: [p.yaml]}\n  - {opcode: createPods",
        ),
        {"p.yaml": POD},
        "[0].workloadTemplate[1].number: must be > 0 when mode is recreate",
    ),
    (
        "churn-bad-mode",
        replace(
            "- {opcode: createPods",
            "- {opcode: churn, mode: delete, templatePaths: [p.yaml]}\n  - {opcode: createPods",
        ),
        {"p.yaml": POD},
        '[0].workloadTemplate[1].mode: invalid value "delete" (expected one of: create, recreate)',
    ),
    (
        "duplicate-workload",
        replace(
            "- {name: w, params: {nodes: 1}}",
            "- {name: w, params: {nodes: 1}}\n  - {name: w, params: {nodes: 2}}",
        ),
        {},
        '[0].workloads[1].name: workload name "w" is not unique in test case "E"',
    ),
    (
        "missing-name",
        replace("- name: E\n", "- labels: [x]\n"),
        {},
        "[0].name: required field missing",
    ),
    (
        "threshold-negative",
        replace("{name: w,", "{name: w, threshold: -5,"),
        {},
        "[0].workloads[0].threshold: must be non-negative",
    ),
    (
        "cluster-unknown-field",
        replace("  workloadTemplate:", "  cluster: {schedulrs: 2}\n  workloadTemplate:"),
        {},
        "[0].cluster.schedulrs: unknown field (expected one of: controllerManagers,",
    ),
    (
        "cluster-missing-param",
        replace("{name: w,", "{name: w, cluster: {schedulers: $k},"),
        {},
        '[0].workloads[0].cluster.schedulers: parameter "k" is not defined by workload "w"',
    ),
    (
        "cluster-bad-mode",
        replace("  workloadTemplate:", "  cluster: {schedulerMode: omega}\n  workloadTemplate:"),
        {},
        '[0].cluster.schedulerMode: invalid value "omega" (expected one of: leader, shared-state)',
    ),
    (
        "leader-election-order",
        replace(
            "  workloadTemplate:",
            "  cluster: {leaderElection: {leaseDuration: 1s, renewDeadline: 2s, retryPeriod: 500ms}}\n"
            "  workloadTemplate:",
        ),
        {},
        "[0].cluster.leaderElection: leaseDuration must be greater than renewDeadline",
    ),
    (
        "cluster-node-template-is-a-node",
        replace(
            "  workloadTemplate:", "  cluster: {nodeTemplatePath: node.yaml}\n  workloadTemplate:"
        ),
        {"node.yaml": "apiVersion: v1\nkind: Node\nmetadata: {name: n}\n"},
        "[0].cluster.nodeTemplatePath: node.yaml: expected a kubera NodeTemplate",
    ),
    (
        "chaos-pause-without-duration",
        replace(
            "- {opcode: createPods",
            "- {opcode: chaos, action: pauseLeader, at: 1s}\n  - {opcode: createPods",
        ),
        {},
        "[0].workloadTemplate[1].duration: required (> 0) for action pauseLeader",
    ),
    (
        "chaos-unknown-action",
        replace(
            "- {opcode: createPods",
            "- {opcode: chaos, action: nukeLeader}\n  - {opcode: createPods",
        ),
        {},
        '[0].workloadTemplate[1].action: invalid value "nukeLeader" (expected one of: killLeader,',
    ),
    (
        "chaos-at-and-every",
        replace(
            "- {opcode: createPods",
            "- {opcode: chaos, action: killLeader, at: 1s, every: 2s}\n  - {opcode: createPods",
        ),
        {},
        "[0].workloadTemplate[1]: give either at or every, not both",
    ),
    (
        "trace-missing",
        replace(
            "- {opcode: createPods",
            "- {opcode: traceReplay, podTracePath: pods.csv}\n  - {opcode: createPods",
        ),
        {},
        "[0].workloadTemplate[1].podTracePath: file not found: pods.csv",
    ),
    (
        "trace-bad-columns",
        replace(
            "- {opcode: createPods",
            "- {opcode: traceReplay, podTracePath: pods.csv}\n  - {opcode: createPods",
        ),
        {"pods.csv": "name,cpu\nx,1\n"},
        "[0].workloadTemplate[1].podTracePath: ",
    ),
    (
        "trace-bad-columns-named",
        replace(
            "- {opcode: createPods",
            "- {opcode: traceReplay, podTracePath: pods.csv}\n  - {opcode: createPods",
        ),
        {"pods.csv": "name,cpu\nx,1\n"},
        "pods.csv:1: missing column(s) cpu_milli, memory_mib, num_gpu, gpu_milli, qos",
    ),
]


@pytest.mark.parametrize(
    ("text", "files", "message"), [e[1:] for e in ERRORS], ids=[e[0] for e in ERRORS]
)
def test_errors_name_the_file_and_the_place(tmp_path, text, files, message):
    path = write(tmp_path, text, files)
    with pytest.raises(ConfigError) as info:
        load(str(path))
    text = str(info.value)
    assert text.startswith(f"{path}: "), text
    assert message in text, text


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("- name: [unclosed\n", ": line 2: invalid YAML"),
        ("name: not-a-list\n", "expected a non-empty YAML list of test cases"),
        ("- name: a\n  name: b\n", ': line 2: invalid YAML: mapping key "name" already defined'),
        ("[]\n", "expected a non-empty YAML list of test cases"),
        (BASE + BASE, '[1].name: test case name "E" is not unique (see [0])'),
    ],
)
def test_file_level_errors_name_the_file(tmp_path, content, message):
    path = tmp_path / "exp.yaml"
    path.write_text(content)
    with pytest.raises(ConfigError) as info:
        load(str(path))
    assert str(info.value).startswith(str(path)) and message in str(info.value)


def test_a_test_case_using_what_kubera_lacks_is_left_out_and_the_rest_runs(tmp_path):
    # Like upstream's older config/performance-config.yaml: PV test cases beside plain ones.
    path = write(
        tmp_path,
        BASE
        + """\
- name: SchedulingInTreePVs
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 1, persistentVolumeTemplatePath: pv.yaml, collectMetrics: true}
  workloads:
  - {name: 5Nodes}
  - {name: 500Nodes}
""",
    )
    e = load(str(path))
    assert [f"{tc.name}/{w.name}" for tc, w in e.runs()] == ["E/w"]
    pv = e.test_cases[1]
    assert pv.ops == [] and pv.workloads == [] and pv.skipped_workloads == ("5Nodes", "500Nodes")
    reason = (
        "[1].workloadTemplate[1].persistentVolumeTemplatePath: not supported by kubera "
        "(persistent volumes are not implemented)"
    )
    assert pv.unsupported == reason
    assert f'{path}: [1]: test case "SchedulingInTreePVs" is left out: {reason}' in e.warnings
    with pytest.raises(ConfigError, match=r"persistentVolumeTemplatePath: not supported"):
        e.runs("SchedulingInTreePVs/500Nodes")
    assert e.runs("nope") == []


def test_a_missing_file_is_a_config_error_and_a_cli_error(tmp_path):
    with pytest.raises(CliError, match=r"nope\.yaml: cannot read"):
        load(str(tmp_path / "nope.yaml"))
    assert issubclass(ConfigError, CliError)
