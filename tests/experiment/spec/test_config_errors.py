"""kubera/experiment/spec/config.py: every error in an experiment file names the file and the
place, before anything starts."""

from __future__ import annotations

import pytest

from kubera.errors import CliError
from kubera.experiment.spec.config import ConfigError, load
from tests.experiment.configfiles import BASE, POD, replace, write

# ---------------------------------------------------------------------------------------------
# Errors: each names the file and the place, before anything starts.

ERRORS = [
    (
        "unknown-opcode",
        replace("opcode: createNodes", "opcode: crateNodes"),
        {},
        '[0].workloadTemplate[0].opcode: unknown opcode "crateNodes" (expected one of: allocResourceClaims, barrier,',
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
        {"pod.yaml": "kind: Pod\n{{ with .Index }}x: 1{{ end }}\n"},
        "pod.yaml: {{with}} is not supported",
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
        {"svc.yaml": "apiVersion: networking.k8s.io/v1\nkind: Ingress\nmetadata: {name: s}\n"},
        '[0].workloadTemplate[1].templatePath: svc.yaml: not supported by kubera: no matches for kind "Ingress"',
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
        "pv-claim-without-volume-template",
        replace(
            "collectMetrics: true}",
            "collectMetrics: true, persistentVolumeClaimTemplatePath: pvc.yaml}",
        ),
        {"pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\n"},
        "[0].workloadTemplate[1].persistentVolumeTemplatePath: required with "
        "persistentVolumeClaimTemplatePath",
    ),
    (
        "pv-template-of-another-kind",
        replace(
            "collectMetrics: true}",
            "collectMetrics: true, persistentVolumeClaimTemplatePath: pvc.yaml, "
            "persistentVolumeTemplatePath: pvc.yaml}",
        ),
        {"pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\n"},
        "[0].workloadTemplate[1].persistentVolumeTemplatePath: pvc.yaml: expected a "
        "PersistentVolume, got a PersistentVolumeClaim",
    ),
    (
        "unsupported-opcode",
        replace("{opcode: createNodes, countParam: $nodes}", "{opcode: updateAny}"),
        {},
        '[0].workloadTemplate[0].opcode: "updateAny" is not supported by kubera',
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
        "[0].cluster.schedulrs: unknown field (expected one of: apiServers, controllerManagers,",
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
    # A test case kubera cannot run beside a plain one: upstream's claims pvc-0… made again
    # each steady-state round.
    path = write(
        tmp_path,
        BASE
        + """\
- name: SteadyPVs
  workloadTemplate:
  - {opcode: createNodes, count: 1}
  - {opcode: createPods, count: 1, steadyState: true, duration: 1s, collectMetrics: true,
     persistentVolumeTemplatePath: pv.yaml, persistentVolumeClaimTemplatePath: pvc.yaml}
  workloads:
  - {name: 5Nodes}
  - {name: 500Nodes}
""",
        {
            "pv.yaml": "apiVersion: v1\nkind: PersistentVolume\n",
            "pvc.yaml": "apiVersion: v1\nkind: PersistentVolumeClaim\n",
        },
    )
    e = load(str(path))
    assert [f"{tc.name}/{w.name}" for tc, w in e.runs()] == ["E/w"]
    pv = e.test_cases[1]
    assert pv.ops == [] and pv.workloads == [] and pv.skipped_workloads == ("5Nodes", "500Nodes")
    reason = (
        "[1].workloadTemplate[1].persistentVolumeClaimTemplatePath: not supported by kubera "
        "with steadyState (every round would make the same claims)"
    )
    assert pv.unsupported == reason
    assert f'{path}: [1]: test case "SteadyPVs" is left out: {reason}' in e.warnings
    with pytest.raises(ConfigError, match=r"persistentVolumeClaimTemplatePath: not supported"):
        e.runs("SteadyPVs/500Nodes")
    assert e.runs("nope") == []


def test_a_missing_file_is_a_config_error_and_a_cli_error(tmp_path):
    with pytest.raises(CliError, match=r"nope\.yaml: cannot read"):
        load(str(tmp_path / "nope.yaml"))
    assert issubclass(ConfigError, CliError)
