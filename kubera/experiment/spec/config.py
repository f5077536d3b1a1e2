"""Experiment files: upstream scheduler_perf's config format, unchanged, plus kubera's fields.

    experiment = load("examples/experiments/failover.yaml")      # ConfigError if anything is off
    for tc in experiment.test_cases:
        for w in tc.workloads:                                   # sweeps already expanded
            ops = plan(tc, w)                                    # params substituted, counts resolved

The file is a YAML list of test cases (upstream's testCase): `name`, `workloadTemplate` (ops),
`workloads` (name, params, labels, threshold, thresholdMetricSelector, featureGates),
`labels`, `featureGates`, `schedulerConfigPath`, `defaultPodTemplatePath`,
`metricsCollectorConfig`, `defaultThresholdMetricSelector`. kubera adds `cluster:` (test case
and workload; the workload's keys override the test case's) and `sweep:` (workload) and the
opcodes `chaos`, `check`, `traceReplay` (kubera.experiment.spec.ops).

Everything is checked at load time, before a cluster starts: unknown opcodes and fields (field
names match case-insensitively, as Go's encoding/json matches them), wrong types, missing
templates, `$param` references no workload defines, bad sweeps. Errors name the file and the
place: `x.yaml: [0].workloadTemplate[2].podTemplatePath: file not found: pod.yaml`.

Sweeps: `sweep: {schedulers: [1, 2, 4]}` on a workload makes one workload per point (the
cartesian product over several keys), named `<name>/schedulers=2`; each point's values are
workload params (`$schedulers`), and a key naming a cluster setting (hollowNodes,
schedulers, schedulerMode, controllerManagers, timeScale) also sets it directly. As
upstream, a param no op or setting uses is an error (a typo, most likely).

Every template is rendered once (index 0) and decoded with kubera's codec at load, so a
pod template that is not a Pod, or a field of the wrong type, fails before anything starts;
fields kubera does not model are warnings.

Deliberate differences from upstream: featureGates are kept but ignored (kubera runs its
gates at their defaults; a warning names those set otherwise), but for the scheduler's
(OpportunisticBatching, NominatedNodeNameForExpectation, SchedulerAsyncAPICalls:
`runner.feature_gate_args` passes
them to `kubera up --feature-gates`) and GenericWorkload (the runner then enables
GangScheduling, `runner.workload_api_args`); a test case that uses what
kubera lacks (steady-state pods with persistent volumes, the updateAny opcode,
createCompositePodGroups, PodGroups with what the scheduler does not implement, createAny of
a kind kubera does not serve) is left out with a warning naming the place
(`TestCase.unsupported`), so the rest of
an upstream file runs — the load fails only if nothing is left, and asking for such a
workload is an error; churn leaves templates of unserved kinds out with a warning;
`metricsCollectorConfig` is kept as data and read as upstream's collector reads it
when the DataItems are written (measure/dataitems.py); a per-topic threshold map uses topic
"kubera".
"""

from __future__ import annotations

import dataclasses
import itertools
import os
from collections.abc import Callable
from typing import Any

import yaml

from kubera.experiment.spec import ops as o
from kubera.experiment.spec.cases import (
    ClusterSettings,
    Experiment,
    SchedulerMode,
    TestCase,
    ThresholdMetricSelector,
    Workload,
)
from kubera.experiment.spec.fields import (
    ConfigError,
    Ctx,
    Spec,
    Unsupported,
    check_mapping,
    k_bool,
    k_bool_map,
    k_count,
    k_duration,
    k_file,
    k_float,
    k_labels,
    k_list,
    k_map,
    k_nonempty_str,
    k_param,
    k_positive_float,
    k_positive_int,
    k_str_map,
    k_template,
    one_of,
    read_fields,
    type_name,
)
from kubera.experiment.spec.ops import Op
from kubera.experiment.spec.parse_ops import Params, parse_op, resolve_op, unroll
from kubera.experiment.spec.templates import Template
from services.api import features
from services.api.machinery import yamlload
from services.apiserver import DISABLEABLE
from services.leaderelection import LeaseTimings, violations

__all__ = [
    "SchedulerMode",
    "ClusterSettings",
    "ConfigError",
    "Experiment",
    "TestCase",
    "ThresholdMetricSelector",
    "Workload",
    "load",
    "plan",
]


# ---------------------------------------------------------------------------------------------
# Loading.

_SELECTOR = {
    "name": Spec("name", k_nonempty_str),
    "labels": Spec("labels", k_str_map),
    "dataBucket": Spec("data_bucket", k_nonempty_str, required=True),
    "expectLower": Spec("expect_lower", k_bool),
}
_LEADER_ELECTION = {
    "leaseDuration": Spec("lease_duration", k_duration),
    "renewDeadline": Spec("renew_deadline", k_duration),
    "retryPeriod": Spec("retry_period", k_duration),
}


def k_admission_plugins(ctx: Ctx, where: str, value: Any) -> tuple[str, ...]:
    """A list of admission plugin names `kubera up --disable-admission-plugins` knows."""
    names = k_labels(ctx, where, value)
    unknown = sorted(set(names) - DISABLEABLE)
    if unknown:
        raise ctx.error(
            where,
            f"unknown admission plugin(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(DISABLEABLE))}",
        )
    return names


def k_node_template(ctx: Ctx, where: str, value: Any) -> Template:
    """A kubera NodeTemplate (what `kubera up --node-template` reads), checked as kubera up
    checks it."""
    template = k_template(ctx, where, value)
    if template.data.get("kind") != "NodeTemplate":
        raise ctx.error(
            where,
            f"{template.source}: expected a kubera NodeTemplate (kind: NodeTemplate), got "
            f"kind {template.data.get('kind')!r} (a Node object belongs in createNodes."
            "nodeTemplatePath)",
        )
    from services.api.helpers.stages import TemplateError
    from services.kubelet import EvictionConfig, load_template

    try:
        for kind in load_template(template.text).kinds:
            EvictionConfig.from_dict(kind.eviction)
    except (TemplateError, ValueError) as e:
        raise ctx.error(where, f"{template.source}: {e}") from None
    return template


#: The `cluster:` block. `$param` values are substituted before these readers run.
_CLUSTER = {
    "hollowNodes": Spec("hollow_nodes", k_bool),
    "nodeTemplatePath": Spec("node_template", k_node_template),
    "schedulers": Spec("schedulers", k_positive_int),
    "schedulerMode": Spec("scheduler_mode", one_of("leader", "shared-state")),
    "sharedStatePartition": Spec("shared_state_partition", one_of("hash", "none")),
    "controllerManagers": Spec("controller_managers", k_count),
    "apiServers": Spec("apiservers", k_positive_int),
    "leaderElection": Spec("leader_election", k_map),
    "timeScale": Spec("time_scale", k_positive_float),
    "nodesPerPool": Spec("nodes_per_pool", k_positive_int),
    "schedulerConfigPath": Spec("scheduler_config_path", k_file),
    "disableAdmissionPlugins": Spec("disable_admission_plugins", k_admission_plugins),
}
#: Cluster settings a sweep key may set directly (`sweep: {schedulers: [1, 2, 4]}`).
_SWEEPABLE = {
    name.lower(): name
    for name in (
        "hollowNodes",
        "schedulers",
        "schedulerMode",
        "controllerManagers",
        "apiServers",
        "timeScale",
    )
}
_TEST_CASE = {
    "name": Spec("name", k_nonempty_str, required=True),
    "featureGates": Spec("feature_gates", k_bool_map),
    "metricsCollectorConfig": Spec("metrics_collector_config", k_map),
    "workloadTemplate": Spec("ops", k_list, required=True),
    "workloads": Spec("workloads", k_list, required=True),
    "schedulerConfigPath": Spec("scheduler_config_path", k_file),
    "defaultPodTemplatePath": Spec("default_pod_template", k_template),
    "labels": Spec("labels", k_labels),
    "defaultThresholdMetricSelector": Spec("selector", k_map),
    "cluster": Spec("cluster", k_map),
}
_WORKLOAD = {
    "name": Spec("name", k_nonempty_str, required=True),
    "params": Spec("params", k_map),
    "labels": Spec("labels", k_labels),
    "threshold": Spec("threshold", lambda ctx, where, v: v),
    "thresholdMetricSelector": Spec("selector", k_map),
    "featureGates": Spec("feature_gates", k_bool_map),
    "cluster": Spec("cluster", k_map),
    "sweep": Spec("sweep", k_map),
}


def load(path: str, *, edit: Callable[[Any], Any] | None = None) -> Experiment:
    """Read, check and expand an experiment file; ConfigError naming the place if it is wrong.

    Every workload (every sweep point) is planned once here, so a missing or mistyped
    parameter fails the load, not the run. `edit` changes the parsed YAML before it is
    checked (`kubera bench`'s flags: run/bench.py); paths stay relative to the file."""
    ctx = Ctx(file=str(path), base_dir=os.path.dirname(os.path.abspath(path)))
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        raw = yamlload.safe_load(text)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else ""
        problem = getattr(e, "problem", None) or str(e)
        raise ctx.error(where, f"invalid YAML: {problem}") from None
    if edit is not None:
        raw = edit(raw)
    if not isinstance(raw, list) or not raw:
        raise ctx.error("", "expected a non-empty YAML list of test cases")
    test_cases: list[TestCase] = []
    names: dict[str, int] = {}
    skipped: list[Unsupported] = []
    for i, item in enumerate(raw):
        try:
            tc = _test_case(ctx, i, item)
        except Unsupported as e:
            tc = _left_out(ctx, i, item, e)
            skipped.append(e)
        if tc.name in names:
            raise ctx.error(
                f"[{i}].name", f'test case name "{tc.name}" is not unique (see [{names[tc.name]}])'
            )
        names[tc.name] = i
        test_cases.append(tc)
    if len(skipped) == len(test_cases):
        raise skipped[0]  # nothing would run: say why
    return Experiment(path=str(path), test_cases=test_cases, warnings=tuple(ctx.warnings))


def _left_out(ctx: Ctx, i: int, raw: dict[str, Any], e: Unsupported) -> TestCase:
    """A test case kubera cannot run (its name is known valid: it is read first)."""
    name = next(str(x) for k, x in raw.items() if str(k).lower() == "name")
    workloads: Any = next((x for k, x in raw.items() if str(k).lower() == "workloads"), [])
    names = tuple(
        str(w["name"])
        for w in (workloads if isinstance(workloads, list) else [])
        if isinstance(w, dict) and w.get("name")
    )
    ctx.warn(f"[{i}]", f'test case "{name}" is left out: {e.reason}')
    return TestCase(
        name=name,
        ops=[],
        workloads=[],
        index=i,
        path=ctx.file,
        unsupported=e.reason,
        skipped_workloads=names,
    )


def _test_case(ctx: Ctx, i: int, raw: Any) -> TestCase:
    where = f"[{i}]"
    raw = check_mapping(ctx, where, raw, "a test case")
    v, _ = read_fields(ctx, where, raw, _TEST_CASE)
    name = v["name"]
    if not v["ops"]:
        raise ctx.error(f"{where}.workloadTemplate", "no ops defined")
    if not v["workloads"]:
        raise ctx.error(f"{where}.workloads", "no workloads defined")
    ops = [parse_op(ctx, f"{where}.workloadTemplate[{j}]", op, j) for j, op in enumerate(v["ops"])]
    _check_collection(ctx, where, ops)
    _warn_feature_gates(ctx, where, v.get("feature_gates"))
    selector = _selector(ctx, f"{where}.defaultThresholdMetricSelector", v.get("selector"))
    scheduler_config = _read_text(
        ctx, f"{where}.schedulerConfigPath", v.get("scheduler_config_path")
    )
    tc_cluster_raw = v.get("cluster", {})
    tc = TestCase(
        name=name,
        ops=ops,
        workloads=[],
        labels=v.get("labels", ()),
        feature_gates=v.get("feature_gates", {}),
        scheduler_config=scheduler_config,
        scheduler_config_path=v.get("scheduler_config_path"),
        default_pod_template=v.get("default_pod_template"),
        metrics_collector_config=v.get("metrics_collector_config"),
        index=i,
        path=ctx.file,
    )
    # The test case's own cluster block, checked on its own (its $params stay as written).
    tc_cluster = _cluster(
        ctx, {str(k): (f"{where}.cluster.{k}", x) for k, x in tc_cluster_raw.items()}, None, tc
    )
    workloads: list[Workload] = []
    seen: dict[str, str] = {}
    for j, wraw in enumerate(v["workloads"]):
        for w in _workloads(ctx, tc, j, wraw, tc_cluster_raw, selector):
            if w.name in seen:
                raise ctx.error(
                    f"{where}.workloads[{j}].name",
                    f'workload name "{w.name}" is not unique in test case "{name}" (see {seen[w.name]})',
                )
            seen[w.name] = f"{where}.workloads[{j}]"
            workloads.append(w)
    return dataclasses.replace(tc, workloads=workloads, cluster=tc_cluster)


def _check_collection(ctx: Ctx, where: str, ops: list[o.TemplateOp]) -> None:
    """upstream: some op collects metrics; windows open and close in order, and do not nest."""
    collects = False
    open_at: str | None = None
    for op in ops:
        at = f"{where}.workloadTemplate[{op.index}]"
        inner = op.create_pods if isinstance(op, o.CreatePodSets) else op
        if isinstance(inner, o.CreatePods) and inner.collect_metrics:
            collects = True
            if open_at:
                raise ctx.error(
                    f"{at}.collectMetrics",
                    f"metrics are already being collected (startCollectingMetrics at {open_at})",
                )
        if isinstance(op, o.StartCollectingMetrics):
            if open_at:
                raise ctx.error(at, f"metrics are already being collected (since {open_at})")
            open_at = at
        if isinstance(op, o.StopCollectingMetrics):
            if not open_at:
                raise ctx.error(
                    at, "stopCollectingMetrics without a startCollectingMetrics before it"
                )
            open_at, collects = None, True
    if open_at:
        raise ctx.error(open_at, "startCollectingMetrics without a stopCollectingMetrics after it")
    if not collects:
        raise ctx.error(
            f"{where}.workloadTemplate",
            "no op collects metrics (set collectMetrics: true on a createPods op, or use "
            "startCollectingMetrics/stopCollectingMetrics)",
        )


def _warn_feature_gates(ctx: Any, where: str, gates: dict[str, bool] | None) -> None:
    """A warning naming the gates a place sets that kubera does not run that way: kubera
    runs its gates at their defaults (services/api/features.py) but for the scheduler's
    (features.CLUSTER_GATES, passed to `kubera up --feature-gates` by the runner), so a gate
    set to its kubera value (NodeDeclaredFeatures: false) or a scheduler's needs no warning,
    and one kubera does not know, or sets otherwise, is ignored."""
    differ = {
        name: on
        for name, on in (gates or {}).items()
        if features.DEFAULTS.get(name) is not on and name not in features.CLUSTER_GATES
    }
    if differ:
        names = ", ".join(f"{name}={str(on).lower()}" for name, on in sorted(differ.items()))
        ctx.warn(f"{where}.featureGates", f"feature gates are ignored by kubera: {names}")


def _selector(ctx: Ctx, where: str, raw: dict[str, Any] | None) -> ThresholdMetricSelector | None:
    if raw is None:
        return None
    v, _ = read_fields(ctx, where, raw, _SELECTOR)
    return ThresholdMetricSelector(**v)


def _threshold(ctx: Ctx, where: str, raw: Any) -> float | None:
    """upstream thresholds: a number, or topic → number (kubera reads topic "kubera")."""
    if raw is None:
        return None
    if isinstance(raw, dict):
        for k, x in raw.items():
            if k_float(ctx, f"{where}.{k}", x) < 0:
                raise ctx.error(f"{where}.{k}", "must be non-negative")
        ctx.warn(where, 'per-topic thresholds: kubera uses topic "kubera" (none when absent)')
        value = raw.get("kubera")
        return float(value) or None if value is not None else None
    value = k_float(ctx, where, raw)
    if value < 0:
        raise ctx.error(where, f"must be non-negative, got {raw!r}")
    return value or None  # upstream: 0 disables the check


def _workloads(
    ctx: Ctx,
    tc: TestCase,
    j: int,
    raw: Any,
    tc_cluster: dict[str, Any],
    tc_selector: ThresholdMetricSelector | None,
) -> list[Workload]:
    """One workload of the file → one Workload per sweep point (one if no sweep)."""
    where = f"[{tc.index}].workloads[{j}]"
    raw = check_mapping(ctx, where, raw, "a workload")
    v, _ = read_fields(ctx, where, raw, _WORKLOAD)
    params: dict[str, Any] = v.get("params", {})
    _warn_feature_gates(ctx, where, v.get("feature_gates"))
    selector = _selector(ctx, f"{where}.thresholdMetricSelector", v.get("selector"))
    selector = selector or tc_selector or ThresholdMetricSelector()
    threshold = _threshold(ctx, f"{where}.threshold", v.get("threshold"))
    points = _sweep_points(ctx, f"{where}.sweep", v.get("sweep"), params)
    origin = {str(k): (f"[{tc.index}].cluster.{k}", x) for k, x in tc_cluster.items()}
    for k, x in v.get("cluster", {}).items():
        origin = _overlay(origin, str(k), f"{where}.cluster.{k}", x)
    out = []
    for point in points:
        name = v["name"] + "".join(f"/{k}={_fmt(x)}" for k, x in point.items())
        merged = {**params, **point}
        tracker = Params(ctx, merged, name)
        cluster_raw = dict(origin)
        for k, x in point.items():
            setting = _SWEEPABLE.get(k.lower())
            if setting is not None:
                cluster_raw = _overlay(cluster_raw, setting, f"{where}.sweep.{k}", x)
                tracker.used.add(k)
        w = Workload(
            name=name,
            params=merged,
            labels=v.get("labels", ()),
            threshold=threshold,
            threshold_metric=selector.name,
            threshold_metric_selector=selector,
            feature_gates={**tc.feature_gates, **v.get("feature_gates", {})},
            cluster=_cluster(ctx, cluster_raw, tracker, tc),
            sweep=dict(point),
            base_name=v["name"],
        )
        _plan(ctx, tc, w, tracker)
        if w.cluster.hollow_nodes:
            _check_hollow(ctx, tc)
        unused = sorted(set(merged) - tracker.used)
        if unused:
            raise ctx.error(
                f"{where}.params",
                f'parameter(s) {", ".join(unused)} of workload "{name}" are defined but unused '
                "(check for typos)",
            )
        out.append(w)
    return out


#: What a createNodes op may say that hollow nodes do not follow, by upstream field name.
_HOLLOW_IGNORES = {
    "nodeTemplatePath": lambda op: op.node_template is not None,
    "uniqueNodeLabelStrategy": lambda op: isinstance(op.strategy, o.UniqueNodeLabelStrategy),
    "labelNodePrepareStrategy": lambda op: isinstance(op.strategy, o.LabelNodePrepareStrategy),
    "nodeAllocatableStrategy": lambda op: isinstance(op.strategy, o.NodeAllocatableStrategy),
    "templateParams": lambda op: bool(op.template_params),
}


def _check_hollow(ctx: Ctx, tc: TestCase) -> None:
    """cluster.hollowNodes: `kubera up` starts the nodes of every createNodes op, from the
    cluster's node template; what an op says otherwise is warned about, and a createNodes
    after pods were created (nodes that upstream adds mid-run) is an error."""
    pods_at = ""
    for op in tc.ops:
        where = f"[{tc.index}].workloadTemplate[{op.index}]"
        if isinstance(op, o.CreatePods | o.CreatePodSets) and not pods_at:
            pods_at = where
        if not isinstance(op, o.CreateNodes):
            continue
        if pods_at:
            raise ctx.error(
                where,
                f"createNodes after createPods ({pods_at}) with cluster.hollowNodes: hollow "
                "nodes all start with the cluster (move it before the pods, or use plain nodes)",
            )
        ignored = [name for name, given in _HOLLOW_IGNORES.items() if given(op)]
        if ignored:
            ctx.warn(
                where,
                f"{', '.join(ignored)} ignored with cluster.hollowNodes (hollow nodes come "
                "from cluster.nodeTemplatePath, or the default node, started with the cluster)",
            )


def _overlay(
    below: dict[str, tuple[str, Any]], key: str, where: str, value: Any
) -> dict[str, tuple[str, Any]]:
    """A cluster block (key → (where written, value)) with `key` set over `below`; keys
    compare case-insensitively, as field names do, and a leaderElection mapping is merged key
    by key into the one below it."""
    old = next((x for k, (_, x) in below.items() if k.lower() == key.lower()), None)
    if key.lower() == "leaderelection" and isinstance(value, dict) and isinstance(old, dict):
        value = {**old, **value}
    out = {k: x for k, x in below.items() if k.lower() != key.lower()}
    out[key] = (where, value)
    return out


def _fmt(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else f"{value}"


def _sweep_points(
    ctx: Ctx, where: str, raw: dict[str, Any] | None, params: dict[str, Any]
) -> list[dict[str, Any]]:
    """`sweep: {k: [v1, v2], …}` → the cartesian product, keys in file order."""
    if raw is None:
        return [{}]
    if not raw:
        raise ctx.error(where, "must list at least one parameter")
    axes: list[tuple[str, list[Any]]] = []
    for k, values in raw.items():
        at = f"{where}.{k}"
        if k in params:
            raise ctx.error(at, f'"{k}" is defined both in params and in sweep')
        if not isinstance(values, list) or not values:
            raise ctx.error(at, f"expected a non-empty list of values, got {type_name(values)}")
        for n, x in enumerate(values):
            if not isinstance(x, str | int | float | bool):
                raise ctx.error(
                    f"{at}[{n}]", f"expected a number, string or bool, got {type_name(x)}"
                )
        if len({_fmt(x) for x in values}) != len(values):
            raise ctx.error(at, "values must be distinct")
        axes.append((str(k), values))
    return [
        dict(zip([k for k, _ in axes], combo, strict=True))
        for combo in itertools.product(*(vs for _, vs in axes))
    ]


def _cluster(
    ctx: Ctx, raw: dict[str, tuple[str, Any]], params: Params | None, tc: TestCase
) -> ClusterSettings:
    """A `cluster:` block (key → (where it was written: `[0].cluster.schedulers`, value)) →
    ClusterSettings.

    With `params`, `$name` values are substituted first; without, they are only checked to
    be references and the setting keeps its default."""
    values: dict[str, Any] = {}
    by_lower = {n.lower(): n for n in _CLUSTER}
    config_where = f"[{tc.index}].schedulerConfigPath"
    for key, (at, value) in raw.items():
        canon = by_lower.get(str(key).lower())
        if canon is None:
            expected = ", ".join(sorted(_CLUSTER, key=str.lower))
            raise ctx.error(at, f"unknown field (expected one of: {expected})")
        value = _substitute(ctx, at, value, params)
        if value is None:
            continue
        spec = _CLUSTER[canon]
        values[spec.attr] = spec.kind(ctx, at, value)
        if canon == "schedulerConfigPath":
            config_where = at
        if canon == "leaderElection":
            le, _ = read_fields(ctx, at, value, _LEADER_ELECTION)
            values[spec.attr] = _leader_election(ctx, at, le)
    config_path = values.get("scheduler_config_path") or tc.scheduler_config_path
    values["scheduler_config_path"] = config_path
    values["scheduler_config"] = _read_text(ctx, config_where, config_path) if config_path else None
    return ClusterSettings(**values)


def _substitute(ctx: Ctx, where: str, value: Any, params: Params | None) -> Any:
    """`$name` → the parameter's value; while only checking (no params), None, and dict
    entries that are references are left out."""
    if isinstance(value, dict):
        out = {k: _substitute(ctx, f"{where}.{k}", x, params) for k, x in value.items()}
        return {k: x for k, x in out.items() if x is not None}
    if isinstance(value, str) and value.startswith("$"):
        k_param(ctx, where, value)
        return None if params is None else params.raw(where, value)
    return value


#: This file's words for the rules LeaseTimings checks (client-go's: lease > renew >
#: 1.2 × retry, all positive).
_TIMING_RULES = {
    "positive": "durations must be positive",
    "over_renew": "leaseDuration must be greater than renewDeadline",
    "over_jittered_retry": "renewDeadline must be greater than 1.2 × retryPeriod",
}


def _leader_election(ctx: Ctx, where: str, v: dict[str, Any]) -> LeaseTimings:
    d = LeaseTimings()
    lease = d.lease_duration if v.get("lease_duration") is None else v["lease_duration"]
    renew = d.renew_deadline if v.get("renew_deadline") is None else v["renew_deadline"]
    retry = d.retry_period if v.get("retry_period") is None else v["retry_period"]
    broken = violations(lease, renew, retry)
    if broken:
        raise ctx.error(where, _TIMING_RULES[broken[0].rule])
    return LeaseTimings(lease_duration=lease, renew_deadline=renew, retry_period=retry)


def _read_text(ctx: Ctx, where: str, path: str | None) -> str | None:
    """A scheduler configuration's text, checked as `kubera up --scheduler-config` checks it."""
    if path is None:
        return None
    from services.scheduler.config import ConfigError as SchedulerConfigError
    from services.scheduler.config import load_config

    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        load_config(text)
    except (OSError, UnicodeDecodeError) as e:
        raise ctx.error(where, f"cannot read {path}: {e}") from None
    except (SchedulerConfigError, yaml.YAMLError, ValueError) as e:
        raise ctx.error(where, f"{path}: {e}".replace("\n", " ")) from None
    return text


# ---------------------------------------------------------------------------------------------
# Planning.


def plan(test_case: TestCase, workload: Workload) -> list[Op]:
    """The test case's ops for `workload`: `$param`s substituted, counts and defaults resolved,
    createPodSets unrolled; each op's `index` is its position in the returned list (upstream's
    op index, which names the default namespaces `namespace-<index>`)."""
    path = test_case.path or "<experiment>"
    ctx = Ctx(file=path, base_dir=os.path.dirname(os.path.abspath(path)))
    return _plan(ctx, test_case, workload, Params(ctx, workload.params, workload.name))


def _plan(ctx: Ctx, tc: TestCase, w: Workload, params: Params) -> list[Op]:
    out: list[Op] = []
    for op in tc.ops:
        where = f"[{tc.index}].workloadTemplate[{op.index}]"
        items: list[tuple[str, o.Op]]
        if isinstance(op, o.CreatePodSets):
            items = list(unroll(ctx, where, op, params))
        else:
            items = [(where, op)]
        for at, item in items:
            if isinstance(item, o.CreatePods) and item.pod_template is None:
                item = dataclasses.replace(item, pod_template=tc.default_pod_template)
            out.append(resolve_op(ctx, at, item, params, index=len(out), template_index=item.index))
    return out
