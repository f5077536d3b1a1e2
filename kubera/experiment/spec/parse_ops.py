"""The `workloadTemplate` ops: YAML → kubera.experiment.spec.ops dataclasses, and their planning.

`parse_op` reads one op as written (fields per opcode in `SPECS`, upstream's validity rules of
operations.go: counts ≥ 0 or a `$param`, collectMetrics excludes skipWaitToCompletion, …).
`resolve_op` fills one op in for a workload: `*Param` fields and `$name` values substituted
(upstream's patchParams: counts are numbers, durations Go-duration strings, steadyState a bool),
defaults applied. Both raise ConfigError naming the file and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from kubera.experiment.spec import ops as o
from kubera.experiment.spec.fields import (
    ConfigError,
    Ctx,
    Spec,
    check_mapping,
    k_bool,
    k_count,
    k_duration,
    k_file,
    k_int,
    k_map,
    k_nonempty_str,
    k_param,
    k_positive_float,
    k_positive_int,
    k_str,
    k_str_list,
    k_str_map,
    k_template,
    k_templates,
    one_of,
    read_fields,
    type_name,
)
from kubera.experiment.spec.objects import decode_object
from kubera.experiment.spec.templates import Template, TemplateError
from kubera.experiment.spec.trace import TraceError, read_nodes, read_pods
from services.api.machinery import codec, kinds
from services.api.machinery.kinds import SCHEDULING_POD_GROUP
from services.api.machinery.quantity import QuantityError, parse_quantity


def _strategy(ctx: Ctx, where: str, value: Any, specs: dict[str, Spec]) -> dict[str, Any]:
    raw = check_mapping(ctx, where, value, "a node strategy")
    values, _ = read_fields(ctx, where, raw, specs)
    return values


def k_unique_label(ctx: Ctx, where: str, value: Any) -> o.UniqueNodeLabelStrategy:
    spec = {"labelKey": Spec("label_key", k_nonempty_str, required=True)}
    return o.UniqueNodeLabelStrategy(**_strategy(ctx, where, value, spec))


def k_label_prepare(ctx: Ctx, where: str, value: Any) -> o.LabelNodePrepareStrategy:
    spec = {
        "labelKey": Spec("label_key", k_nonempty_str, required=True),
        "labelValues": Spec("label_values", k_str_list, required=True),
    }
    values = _strategy(ctx, where, value, spec)
    if not values["label_values"]:
        raise ctx.error(f"{where}.labelValues", "must not be empty")
    return o.LabelNodePrepareStrategy(**values)


def k_allocatable(ctx: Ctx, where: str, value: Any) -> o.NodeAllocatableStrategy:
    spec = {
        "nodeAllocatable": Spec("node_allocatable", k_str_map),
        "csiNodeAllocatable": Spec("csi_node_allocatable", k_map),
        "migratedPlugins": Spec("migrated_plugins", k_str_list),
    }
    return o.NodeAllocatableStrategy(**_strategy(ctx, where, value, spec))


_COUNT = {"count": Spec("count", k_count), "countParam": Spec("count_param", k_param)}

#: opcode → YAML field → Spec. The `opcode` field itself is read separately.
SPECS: dict[str, dict[str, Spec]] = {
    "createNodes": {
        **_COUNT,
        "nodeTemplatePath": Spec("node_template", k_template),
        "uniqueNodeLabelStrategy": Spec("unique", k_unique_label),
        "labelNodePrepareStrategy": Spec("label", k_label_prepare),
        "nodeAllocatableStrategy": Spec("allocatable", k_allocatable),
        "templateParams": Spec("template_params", k_map),
    },
    "createNamespaces": {
        **_COUNT,
        "prefix": Spec("prefix", k_str),
        "namespaceTemplatePath": Spec("namespace_template", k_template),
    },
    "createPods": {
        **_COUNT,
        "countMultiplierParam": Spec("count_multiplier_param", k_param),
        "steadyState": Spec("steady_state", k_bool),
        "steadyStateParam": Spec("steady_state_param", k_param),
        "duration": Spec("duration", k_duration),
        "durationParam": Spec("duration_param", k_param),
        "collectMetrics": Spec("collect_metrics", k_bool),
        "namespace": Spec("namespace", k_nonempty_str),
        "podTemplatePath": Spec("pod_template", k_template),
        "skipWaitToCompletion": Spec("skip_wait_to_completion", k_bool),
        "persistentVolumeTemplatePath": Spec("pv_template", k_template),
        "persistentVolumeClaimTemplatePath": Spec("pvc_template", k_template),
        "templateParams": Spec("template_params", k_map),
        "signatureBatchSize": Spec("signature_batch_size", k_count),
        "signatureBatchSizeParam": Spec("signature_batch_size_param", k_param),
    },
    "createPodSets": {
        **_COUNT,
        "namespacePrefix": Spec("namespace_prefix", k_str),
        "createPodsOp": Spec("create_pods", k_map, required=True),
    },
    "createAny": {
        **_COUNT,
        "namespace": Spec("namespace", k_nonempty_str),
        "templatePath": Spec("template", k_template, required=True),
        "templateParams": Spec("template_params", k_map),
    },
    "createPodGroups": {
        **_COUNT,
        "namespace": Spec("namespace", k_nonempty_str, required=True),
        "templatePath": Spec("template", k_template, required=True),
        "templateParams": Spec("template_params", k_map),
    },
    "churn": {
        "mode": Spec("mode", one_of("create", "recreate"), required=True),
        "number": Spec("number", k_count),
        "intervalMilliseconds": Spec("interval_milliseconds", k_count),
        "namespace": Spec("namespace", k_nonempty_str),
        "templatePaths": Spec("templates", k_templates, required=True),
    },
    "barrier": {
        "namespaces": Spec("namespaces", k_str_list),
        "labelSelector": Spec("label_selector", k_str_map),
        "stageRequirement": Spec("stage_requirement", one_of("Scheduled", "Attempted")),
    },
    "sleep": {
        "duration": Spec("duration", k_duration),
        "durationParam": Spec("duration_param", k_param),
    },
    "startCollectingMetrics": {
        "name": Spec("name", k_str),
        "namespaces": Spec("namespaces", k_str_list, required=True),
        "labelSelector": Spec("label_selector", k_str_map),
    },
    "stopCollectingMetrics": {},
    "deletePods": {
        "namespace": Spec("namespace", k_str),
        "labelSelector": Spec("label_selector", k_str_map),
        "skipWaitToCompletion": Spec("skip_wait_to_completion", k_bool),
        "deletePodsPerSecond": Spec("delete_pods_per_second", k_count),
    },
    "chaos": {
        "action": Spec("action", one_of(*o.ChaosAction.__args__), required=True),  # type: ignore[attr-defined]
        "component": Spec("component", one_of("scheduler", "controller-manager")),
        "duration": Spec("duration", k_duration, param_ok=True),
        "at": Spec("at", k_duration, param_ok=True),
        "every": Spec("every", k_duration, param_ok=True),
        "times": Spec("times", k_count, param_ok=True),
        "pool": Spec("pool", k_nonempty_str),
        "kinds": Spec("kinds", k_str_list, param_ok=True),
        "seed": Spec("seed", k_int, param_ok=True),
    },
    "createResourceDriver": {
        "driverName": Spec("driver_name", k_nonempty_str, required=True),
        "nodes": Spec("nodes", k_nonempty_str, required=True),
        "maxClaimsPerNode": Spec("max_claims_per_node", k_count),
        "maxClaimsPerNodeParam": Spec("max_claims_per_node_param", k_param),
    },
    "createResourceClaims": {
        **_COUNT,
        "namespace": Spec("namespace", k_nonempty_str, required=True),
        "templatePath": Spec("template", k_template, required=True),
    },
    "allocResourceClaims": {"namespace": Spec("namespace", k_str)},
    "waitForPodGroups": {"namespace": Spec("namespace", k_str)},
    "check": {"settle": Spec("settle", k_duration, param_ok=True)},
    "memoryPressure": {
        "nodes": Spec("nodes", k_count, param_ok=True),
        "leave": Spec("leave", k_nonempty_str),
        "timeout": Spec("timeout", k_duration, param_ok=True),
    },
    "traceReplay": {
        "podTracePath": Spec("pod_trace_path", k_file, required=True),
        "nodeTracePath": Spec("node_trace_path", k_file),
        "timeScale": Spec("time_scale", k_positive_float, param_ok=True),
        "limit": Spec("limit", k_positive_int, param_ok=True),
        "namespace": Spec("namespace", k_nonempty_str),
        "gpuResourceName": Spec("gpu_resource_name", k_nonempty_str),
    },
}


def default_namespace(index: int) -> str:
    return o.DEFAULT_NAMESPACE_FORMAT.format(index=index)


def parse_op(ctx: Ctx, where: str, raw: Any, index: int) -> o.TemplateOp:
    """One op of a workloadTemplate, as written (upstream's isValid(allowParameterization))."""
    raw = check_mapping(ctx, where, raw, "an op with an opcode")
    opcode_keys = [k for k in raw if str(k).lower() == "opcode"]
    if not opcode_keys:
        raise ctx.error(f"{where}.opcode", "required field missing")
    opcode = raw[opcode_keys[0]]
    at = f"{where}.opcode"
    if not isinstance(opcode, str):
        raise ctx.error(at, f"expected a string, got {type_name(opcode)}")
    if opcode in o.UNSUPPORTED_OPCODES:
        raise ctx.unsupported(
            at, f'"{opcode}" is not supported by kubera ({o.UNSUPPORTED_OPCODES[opcode]})'
        )
    if opcode not in SPECS:
        known = ", ".join(sorted(SPECS, key=str.lower))
        raise ctx.error(at, f'unknown opcode "{opcode}" (expected one of: {known})')
    values, refs = read_fields(ctx, where, raw, SPECS[opcode], skip=("opcode",))
    return _build(ctx, where, opcode, values, refs, index)


def _build(
    ctx: Ctx, where: str, opcode: str, v: dict[str, Any], refs: dict[str, str], index: int
) -> o.TemplateOp:
    def count_ok() -> None:
        # upstream isValidCount: with a countParam the count is taken from it.
        v.setdefault("count", 0)
        if v.get("count_param"):
            v["count"] = 0

    if opcode == "createNodes":
        count_ok()
        strategies = [v.pop(k) for k in ("unique", "label", "allocatable") if k in v]
        if len(strategies) > 1:
            raise ctx.error(where, "at most one node strategy may be given")
        return o.CreateNodes(index=index, strategy=strategies[0] if strategies else None, **v)
    if opcode == "createNamespaces":
        count_ok()
        return o.CreateNamespaces(index=index, prefix=v.pop("prefix", ""), **v)
    if opcode == "createPods":
        count_ok()
        v.setdefault("namespace", default_namespace(index))
        if v.get("collect_metrics") and v.get("skip_wait_to_completion"):
            raise ctx.error(
                where, "collectMetrics and skipWaitToCompletion cannot be true at the same time"
            )
        if v.get("skip_wait_to_completion") and v.get("steady_state"):
            raise ctx.error(
                where, "skipWaitToCompletion and steadyState cannot be true at the same time"
            )
        if v.get("steady_state") and not v.get("duration_param") and v.get("duration", 0) <= 0:
            raise ctx.error(
                f"{where}.duration", "when creating pods in a steady state, duration must be > 0"
            )
        v.setdefault("signature_batch_size", 1)
        if v["signature_batch_size"] == 0:
            v["signature_batch_size"] = 1
        check_volume_templates(ctx, where, v)
        return o.CreatePods(index=index, **v)
    if opcode == "createPodSets":
        count_ok()
        inner_raw = dict(v.pop("create_pods"))
        inner_raw.setdefault("opcode", "createPods")
        inner = parse_op(ctx, f"{where}.createPodsOp", inner_raw, index)
        if not isinstance(inner, o.CreatePods):
            raise ctx.error(f"{where}.createPodsOp.opcode", 'must be "createPods"')
        return o.CreatePodSets(index=index, create_pods=inner, **v)
    if opcode == "createAny":
        v.setdefault("count", 1)
        return o.CreateAny(index=index, **v)
    if opcode == "createPodGroups":
        count_ok()
        return o.CreatePodGroups(index=index, **v)
    if opcode == "churn":
        if v["mode"] == "recreate" and v.get("number", 0) == 0:
            raise ctx.error(f"{where}.number", "must be > 0 when mode is recreate")
        if not v["templates"]:
            raise ctx.error(f"{where}.templatePaths", "at least one template path is needed")
        if v.get("interval_milliseconds", 0) == 0:
            v["interval_milliseconds"] = 500
        v.setdefault("namespace", default_namespace(index))
        return o.Churn(index=index, **v)
    if opcode == "barrier":
        return o.Barrier(index=index, **v)
    if opcode == "sleep":
        return o.Sleep(index=index, **v)
    if opcode == "startCollectingMetrics":
        if not v["namespaces"]:
            raise ctx.error(f"{where}.namespaces", "must not be empty")
        return o.StartCollectingMetrics(index=index, **v)
    if opcode == "stopCollectingMetrics":
        return o.StopCollectingMetrics(index=index)
    if opcode == "deletePods":
        v.setdefault("namespace", "")
        return o.DeletePods(index=index, **v)
    if opcode == "createResourceDriver":
        if v.get("max_claims_per_node_param"):
            v["max_claims_per_node"] = 0
        return o.CreateResourceDriver(index=index, **v)
    if opcode == "createResourceClaims":
        count_ok()
        return o.CreateResourceClaims(index=index, **v)
    if opcode == "allocResourceClaims":
        return o.AllocResourceClaims(index=index, **v)
    if opcode == "waitForPodGroups":
        return o.WaitForPodGroups(index=index, **v)
    # kubera's ops: a field given as `$name` keeps its default until `plan` fills it in.
    if opcode == "chaos":
        op: o.TemplateOp = o.Chaos(index=index, param_refs=refs, **v)
        if not refs:
            check_chaos(ctx, where, op)  # type: ignore[arg-type]
        return op
    if opcode == "check":
        return o.Check(index=index, param_refs=refs, **v)
    if opcode == "memoryPressure":
        try:
            parse_quantity(v.get("leave", "50Mi"))
        except QuantityError as e:
            raise ctx.error(f"{where}.leave", f"{v.get('leave')!r}: {e}") from None
        return o.MemoryPressure(index=index, param_refs=refs, **v)
    assert opcode == "traceReplay", opcode
    v.setdefault("namespace", default_namespace(index))
    check_traces(ctx, where, v["pod_trace_path"], v.get("node_trace_path"))
    return o.TraceReplay(index=index, param_refs=refs, **v)


def check_volume_templates(ctx: Ctx, where: str, v: dict[str, Any]) -> None:
    """upstream getPodStrategy: the claim template decides: with it, the volume template is
    read too (a missing one fails the run there, here the load); without it, a volume
    template is never read (a warning here)."""
    if v.get("pvc_template") is None:
        if v.pop("pv_template", None) is not None:
            ctx.warn(
                f"{where}.persistentVolumeTemplatePath",
                "ignored without persistentVolumeClaimTemplatePath (as upstream)",
            )
        return
    if v.get("pv_template") is None:
        raise ctx.error(
            f"{where}.persistentVolumeTemplatePath",
            "required with persistentVolumeClaimTemplatePath",
        )
    if v.get("steady_state"):
        raise volumes_in_steady_state(ctx, where)


def volumes_in_steady_state(ctx: Ctx, where: str) -> ConfigError:
    # upstream's strategy makes claims pvc-0… again each round, which then already exist
    return ctx.unsupported(
        f"{where}.persistentVolumeClaimTemplatePath",
        "not supported by kubera with steadyState (every round would make the same claims)",
    )


def check_chaos(ctx: Ctx, where: str, op: o.Chaos) -> None:
    if op.action in ("pauseLeader", "partitionLeader") and not op.duration:
        raise ctx.error(f"{where}.duration", f"required (> 0) for action {op.action}")
    if op.action == "random":
        if not op.kinds:
            raise ctx.error(f"{where}.kinds", "required (at least one kind) for action random")
        unknown = [k for k in op.kinds if k not in o.RANDOM_KINDS]
        if unknown:
            raise ctx.error(
                f"{where}.kinds",
                f"unknown kind {unknown[0]!r} (expected: {', '.join(o.RANDOM_KINDS)})",
            )
        if {"pause", "partition"} & set(op.kinds) and not op.duration:
            raise ctx.error(f"{where}.duration", "required (> 0) when kinds has pause or partition")
    elif op.kinds:
        raise ctx.error(f"{where}.kinds", "only for action random")
    if op.at is not None and op.every is not None:
        raise ctx.error(where, "give either at or every, not both")
    if op.every is not None and op.every <= 0:
        raise ctx.error(f"{where}.every", "must be > 0")
    if op.every is None and op.times != 1:
        raise ctx.error(f"{where}.times", "needs every")
    if op.pool is not None and op.action != "killPool":
        raise ctx.error(f"{where}.pool", "only for action killPool")


def check_traces(ctx: Ctx, where: str, pod_path: str, node_path: str | None) -> None:
    try:
        read_pods(pod_path)
    except TraceError as e:
        raise ctx.error(f"{where}.podTracePath", str(e)) from None
    try:
        if node_path:
            read_nodes(node_path)
    except TraceError as e:
        raise ctx.error(f"{where}.nodeTracePath", str(e)) from None


# ---------------------------------------------------------------------------------------------
# Planning: one op for one workload.


class Params:
    """A workload's params with upstream's typed getters, recording which were used."""

    def __init__(self, ctx: Ctx, values: Mapping[str, Any], workload: str) -> None:
        self.ctx, self.values, self.workload = ctx, values, workload
        self.used: set[str] = set()

    def raw(self, where: str, ref: str) -> Any:
        name = ref[1:]
        if name not in self.values:
            raise self.ctx.error(
                where, f'parameter "{name}" is not defined by workload "{self.workload}"'
            )
        self.used.add(name)
        return self.values[name]

    def int(self, where: str, ref: str) -> int:
        value = self.raw(where, ref)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.ctx.error(
                where,
                f'parameter "{ref[1:]}" of workload "{self.workload}" has the wrong type '
                f"{type_name(value)} (expected a number)",
            )
        return int(value)  # Go: int(float64), truncating

    def typed(self, where: str, ref: str, kind: type) -> Any:
        value = self.raw(where, ref)
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            raise self.ctx.error(
                where,
                f'parameter "{ref[1:]}" of workload "{self.workload}" has the wrong type '
                f"{type_name(value)} (expected {kind.__name__})",
            )
        return value

    def duration(self, where: str, ref: str) -> float:
        return k_duration(self.ctx, where, self.typed(where, ref, str))

    def template_params(self, where: str, tp: Mapping[str, Any]) -> dict[str, Any]:
        """upstream resolveTemplateParams: string values "$name" → the parameter's value."""
        out = dict(tp)
        for k, val in tp.items():
            if isinstance(val, str) and val.startswith("$"):
                out[k] = self.raw(f"{where}.templateParams.{k}", val)
        return out


_TEMPLATE_FIELD = {
    "node_template": "nodeTemplatePath",
    "pod_template": "podTemplatePath",
    "template": "templatePath",
}


def resolve_op(
    ctx: Ctx, where: str, op: o.Op, params: Params, *, index: int, template_index: int
) -> o.Op:
    """`op` for this workload (upstream patchParams), at position `index` of the plan."""
    rep: dict[str, Any] = {"index": index}
    if (
        isinstance(
            op,
            o.CreateNodes
            | o.CreateNamespaces
            | o.CreatePods
            | o.CreateAny
            | o.CreateResourceClaims,
        )
        and op.count_param
    ):
        rep["count"] = params.int(f"{where}.countParam", op.count_param)
        if rep["count"] < 0:
            raise ctx.error(
                f"{where}.countParam", f"count must not be negative, got {rep['count']}"
            )
    if isinstance(op, o.CreatePods):
        count = rep.get("count", op.count)
        if op.count_multiplier_param:
            count *= params.int(f"{where}.countMultiplierParam", op.count_multiplier_param)
        rep["count"] = count
        if op.signature_batch_size_param:
            n = params.int(f"{where}.signatureBatchSizeParam", op.signature_batch_size_param)
            rep["signature_batch_size"] = n or 1
        if op.duration_param:
            rep["duration"] = params.duration(f"{where}.durationParam", op.duration_param)
        if op.steady_state_param:
            rep["steady_state"] = params.typed(
                f"{where}.steadyStateParam", op.steady_state_param, bool
            )
        if rep.get("steady_state", op.steady_state) and rep.get("duration", op.duration) <= 0:
            raise ctx.error(where, "when creating pods in a steady state, duration must be > 0")
        if rep.get("steady_state", op.steady_state) and op.pvc_template is not None:
            raise volumes_in_steady_state(ctx, where)
        if op.namespace == default_namespace(template_index):
            rep["namespace"] = default_namespace(index)
    if isinstance(op, o.CreateResourceDriver) and op.max_claims_per_node_param:
        at = f"{where}.maxClaimsPerNodeParam"
        rep["max_claims_per_node"] = params.int(at, op.max_claims_per_node_param)
        if rep["max_claims_per_node"] < 0:
            raise ctx.error(at, f"must not be negative, got {rep['max_claims_per_node']}")
    if isinstance(op, o.Sleep) and op.duration_param:
        rep["duration"] = params.duration(f"{where}.durationParam", op.duration_param)
    if isinstance(op, o.Churn | o.TraceReplay) and op.namespace == default_namespace(
        template_index
    ):
        rep["namespace"] = default_namespace(index)
    if isinstance(op, o.CreateNodes | o.CreatePods | o.CreateAny):
        tp = params.template_params(where, op.template_params)
        rep["template_params"] = tp
        attr = {"CreateNodes": "node_template", "CreatePods": "pod_template"}.get(
            type(op).__name__, "template"
        )
        template = getattr(op, attr)
        if template is not None and template.has_actions:
            # Render once now: a value the template needs and nobody gives fails the load.
            try:
                rep[attr] = dataclasses.replace(template, data=template.render(0, 1, tp))
            except TemplateError as e:
                raise ctx.error(
                    f"{where}.{_TEMPLATE_FIELD[attr]}", f"{template.source}: {e}"
                ) from None
    if op.param_refs:
        specs = SPECS[op.OPCODE]
        for name, ref in op.param_refs.items():
            at = f"{where}.{name}"
            rep[specs[name].attr] = specs[name].kind(ctx, at, params.raw(at, ref))
        rep["param_refs"] = {}
    out = dataclasses.replace(op, **rep)
    if isinstance(out, o.Chaos):
        check_chaos(ctx, where, out)
    return check_objects(ctx, where, out)


def check_objects(ctx: Ctx, where: str, op: o.Op) -> o.Op:
    """Every template of `op` decodes as the kind it must be, with kubera's codec (type
    errors fail the load; unknown fields are warnings). Churn leaves out, with a warning,
    templates of kinds kubera does not serve."""
    if isinstance(op, o.CreateNodes) and op.node_template is not None:
        decode_template(ctx, f"{where}.nodeTemplatePath", op.node_template, "Node")
    if isinstance(op, o.CreatePods) and op.pod_template is not None:
        decode_template(ctx, f"{where}.podTemplatePath", op.pod_template, "Pod")
    if isinstance(op, o.CreatePods) and op.pvc_template is not None:
        decode_template(
            ctx,
            f"{where}.persistentVolumeClaimTemplatePath",
            op.pvc_template,
            "PersistentVolumeClaim",
        )
    if isinstance(op, o.CreatePods) and op.pv_template is not None:
        decode_template(
            ctx, f"{where}.persistentVolumeTemplatePath", op.pv_template, "PersistentVolume"
        )
    if isinstance(op, o.CreateNamespaces) and op.namespace_template is not None:
        decode_template(ctx, f"{where}.namespaceTemplatePath", op.namespace_template, "Namespace")
    if isinstance(op, o.CreatePodGroups):
        decode_template(ctx, f"{where}.templatePath", op.template, SCHEDULING_POD_GROUP)
    elif isinstance(op, o.CreateAny):
        decode_template(ctx, f"{where}.templatePath", op.template, None)
    if isinstance(op, o.CreateResourceClaims):
        decode_template(ctx, f"{where}.templatePath", op.template, "ResourceClaim")
    if isinstance(op, o.Churn):
        kept = tuple(
            t
            for i, t in enumerate(op.templates)
            if decode_template(ctx, f"{where}.templatePaths[{i}]", t, None, optional=True)
        )
        if not kept:
            raise ctx.error(f"{where}.templatePaths", "no template of a kind kubera serves")
        if len(kept) != len(op.templates):
            op = dataclasses.replace(op, templates=kept)
    return op


def decode_template(
    ctx: Ctx, where: str, template: Template, kind: str | None, *, optional: bool = False
) -> bool:
    """Decode the template's preview as kubera will decode each object; False when
    `optional` and kubera does not serve its kind."""
    doc = dict(template.data)
    if kind:  # the runner defaults them the same way
        doc.setdefault("apiVersion", "v1")
        doc.setdefault("kind", kinds.BY_KIND[kind].kind)
    api_version, kind_name = doc.get("apiVersion"), doc.get("kind")
    if isinstance(api_version, str) and isinstance(kind_name, str):
        try:
            kinds.for_manifest(api_version, kind_name)
        except kinds.UnknownKindError as e:
            if not optional:
                raise ctx.unsupported(
                    where, f"{template.source}: not supported by kubera: {e}"
                ) from None
            ctx.warn(where, f"{template.source}: left out, kubera does not serve it: {e}")
            return False
    try:
        decoded = decode_object(doc, validate="warn")
    except codec.DecodeError as e:
        raise ctx.error(where, f"{template.source}: {e}".replace("\n", " ")) from None
    if kind and decoded.kind.name != kind:
        want, got = kinds.BY_KIND[kind], decoded.kind
        if want.kind == got.kind:  # one Kind name, two groups (PodGroup)
            want_s, got_s = f"{want.kind} ({want.api_version})", f"{got.kind} ({got.api_version})"
        else:
            want_s, got_s = want.kind, got.kind
        raise ctx.error(where, f"{template.source}: expected a {want_s}, got a {got_s}")
    for path in decoded.unknown_fields:
        ctx.warn(where, f'{template.source}: unknown field "{path}" (kubera ignores it)')
    return True


def unroll(
    ctx: Ctx, where: str, op: o.CreatePodSets, params: Params
) -> list[tuple[str, o.CreatePods]]:
    """createPodSets → its createPods copies (upstream unrollWorkloadTemplate)."""
    count = op.count
    if op.count_param:
        count = params.int(f"{where}.countParam", op.count_param)
    inner = op.create_pods
    return [
        (
            f"{where}.createPodsOp",
            dataclasses.replace(inner, namespace=f"{op.namespace_prefix}-{i}"),
        )
        for i in range(count)
    ]


__all__ = ["ConfigError", "Params", "parse_op", "resolve_op", "unroll"]
