"""Job and CronJob validation (batch/v1), with upstream's rules and wording.

Why this module exists: the batch kinds carry their own rules on top of the pod template
(pkg/apis/batch/validation/validation.go): the template's restartPolicy is OnFailure or
Never; counts are non-negative; Indexed mode needs completions; backoffLimitPerIndex,
maxFailedIndexes and successPolicy need Indexed mode; a podFailurePolicy needs
restartPolicy Never and podReplacementPolicy Failed, and each of its rules names exactly
one requirement; a generated selector must select the Job's own uid and name; a CronJob
has a ParseStandard schedule, a known time zone and a job template without a selector.
On update, completions is immutable except in an Indexed Job, where it may change together
with parallelism (ElasticIndexedJob: new completions equal to new parallelism).

Deliberate differences: upstream's limits on index counts (completions ≤ 10^5 with
backoffLimitPerIndex, maxFailedIndexes ≤ 10^5) and on the rule counts (20 rules, 255
exit codes) are kept; the checks upstream runs only when a feature gate is off are not.
"""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import batch_pb2
from services.api.helpers import cron
from services.api.helpers.wellknown import LABEL_CONTROLLER_UID, LABEL_JOB_NAME
from services.api.machinery import labels
from services.api.machinery.errors import (
    duplicate,
    forbidden,
    invalid,
    required,
    too_long,
    unsupported,
)
from services.api.validation.common import (
    FIELD_IMMUTABLE,
    Errors,
    child,
    index,
    label_map,
    nonnegative,
    show,
    validate_annotations,
    validate_selector,
)
from services.api.validation.pod import validate_pod_spec

JOB_RESTART_POLICIES = ("OnFailure", "Never")
COMPLETION_MODES = ("NonIndexed", "Indexed")
POD_REPLACEMENT_POLICIES = ("TerminatingOrFailed", "Failed")
POD_FAILURE_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
EXIT_CODE_OPERATORS = ("In", "NotIn")
CONDITION_STATUSES = ("True", "False", "Unknown")
CONCURRENCY_POLICIES = ("Allow", "Forbid", "Replace")

#: upstream's bounds (pkg/apis/batch/validation).
MAX_POD_FAILURE_POLICY_RULES = 20
MAX_EXIT_CODES = 255
MAX_POD_CONDITIONS = 20
MAX_PER_INDEX_COMPLETIONS = 100_000
MAX_FAILED_INDEXES = 100_000
MAX_SUCCESS_POLICY_RULES = 20
#: A CronJob's name leaves room for the 11-character suffix of its Jobs' names.
MAX_CRONJOB_NAME = 52


def _job_spec(path: str, spec: batch_pb2.JobSpec) -> Errors:
    """validateJobSpec: what a Job and a CronJob's job template share."""
    errs: Errors = []
    for field, name in (
        ("parallelism", "parallelism"),
        ("completions", "completions"),
        ("active_deadline_seconds", "activeDeadlineSeconds"),
        ("backoff_limit", "backoffLimit"),
        ("ttl_seconds_after_finished", "ttlSecondsAfterFinished"),
        ("backoff_limit_per_index", "backoffLimitPerIndex"),
        ("max_failed_indexes", "maxFailedIndexes"),
    ):
        if spec.HasField(field):
            errs += nonnegative(child(path, name), getattr(spec, field))
    mode = spec.completion_mode if spec.HasField("completion_mode") else "NonIndexed"
    if mode not in COMPLETION_MODES:
        errs.append(unsupported(child(path, "completionMode"), mode, COMPLETION_MODES))
    indexed = mode == "Indexed"
    if indexed and not spec.HasField("completions"):
        errs.append(required(child(path, "completions"), "when completion mode is Indexed"))
    if spec.HasField("backoff_limit_per_index"):
        if not indexed:
            errs.append(
                required(child(path, "completionMode"), "when backoffLimitPerIndex is specified")
            )
        elif spec.completions > MAX_PER_INDEX_COMPLETIONS:
            errs.append(
                invalid(
                    child(path, "completions"),
                    spec.completions,
                    f"must be less than or equal to {MAX_PER_INDEX_COMPLETIONS} when "
                    "backoffLimitPerIndex is specified",
                )
            )
    if spec.HasField("max_failed_indexes"):
        if not spec.HasField("backoff_limit_per_index"):
            errs.append(
                required(child(path, "backoffLimitPerIndex"), "when maxFailedIndexes is specified")
            )
        elif spec.max_failed_indexes > MAX_FAILED_INDEXES:
            errs.append(
                invalid(
                    child(path, "maxFailedIndexes"),
                    spec.max_failed_indexes,
                    f"must be less than or equal to {MAX_FAILED_INDEXES}",
                )
            )
        elif spec.HasField("completions") and spec.max_failed_indexes > spec.completions:
            errs.append(
                invalid(
                    child(path, "maxFailedIndexes"),
                    spec.max_failed_indexes,
                    "must be less than or equal to completions",
                )
            )
    if spec.HasField("success_policy"):
        errs += _success_policy(child(path, "successPolicy"), spec, indexed)
    replacement = spec.pod_replacement_policy if spec.HasField("pod_replacement_policy") else ""
    if replacement and replacement not in POD_REPLACEMENT_POLICIES:
        errs.append(
            unsupported(child(path, "podReplacementPolicy"), replacement, POD_REPLACEMENT_POLICIES)
        )
    restart = spec.template.spec.restart_policy
    if spec.HasField("pod_failure_policy"):
        errs += _pod_failure_policy(child(path, "podFailurePolicy"), spec)
        if replacement and replacement != "Failed":
            errs.append(
                invalid(
                    child(path, "podReplacementPolicy"),
                    replacement,
                    "must be 'Failed' when podFailurePolicy is used",
                )
            )
        if restart != "Never":
            errs.append(
                invalid(
                    child(path, "template.spec.restartPolicy"),
                    restart,
                    'only "Never" is supported when podFailurePolicy is specified',
                )
            )
    template = child(path, "template")
    errs += label_map(child(template, "metadata.labels"), spec.template.metadata.labels)
    errs += validate_annotations(
        child(template, "metadata.annotations"), spec.template.metadata.annotations
    )
    errs += validate_pod_spec(child(template, "spec"), spec.template.spec, is_pod=False)
    if restart not in JOB_RESTART_POLICIES:
        errs.append(
            unsupported(child(template, "spec.restartPolicy"), restart, JOB_RESTART_POLICIES)
        )
    return errs


def _pod_failure_policy(path: str, spec: batch_pb2.JobSpec) -> Errors:
    errs: Errors = []
    rules_path = child(path, "rules")
    rules = spec.pod_failure_policy.rules
    if len(rules) > MAX_POD_FAILURE_POLICY_RULES:
        errs.append(too_long(rules_path, MAX_POD_FAILURE_POLICY_RULES))
    indexed = spec.completion_mode == "Indexed"
    for i, rule in enumerate(rules):
        rule_path = index(rules_path, i)
        actions: tuple[str, ...] = POD_FAILURE_ACTIONS
        if not (indexed and spec.HasField("backoff_limit_per_index")):
            actions = tuple(a for a in POD_FAILURE_ACTIONS if a != "FailIndex")
        if rule.action not in POD_FAILURE_ACTIONS:
            errs.append(unsupported(child(rule_path, "action"), rule.action, actions))
        elif rule.action == "FailIndex" and "FailIndex" not in actions:
            errs.append(
                forbidden(
                    child(rule_path, "action"),
                    "the 'FailIndex' action can only be used when backoffLimitPerIndex is set",
                )
            )
        has_codes = rule.HasField("on_exit_codes")
        has_conds = len(rule.on_pod_conditions) > 0
        if has_codes == has_conds:
            errs.append(
                invalid(
                    rule_path,
                    show(rule),
                    "specifying one of OnExitCodes and OnPodConditions is required",
                )
            )
        if has_codes:
            errs += _on_exit_codes(child(rule_path, "onExitCodes"), rule.on_exit_codes)
        conds_path = child(rule_path, "onPodConditions")
        if len(rule.on_pod_conditions) > MAX_POD_CONDITIONS:
            errs.append(too_long(conds_path, MAX_POD_CONDITIONS))
        for j, pattern in enumerate(rule.on_pod_conditions):
            p = index(conds_path, j)
            if pattern.status and pattern.status not in CONDITION_STATUSES:
                errs.append(unsupported(child(p, "status"), pattern.status, CONDITION_STATUSES))
            if not pattern.type:
                errs.append(required(child(p, "type"), ""))
    return errs


def _on_exit_codes(path: str, req: batch_pb2.PodFailurePolicyOnExitCodesRequirement) -> Errors:
    errs: Errors = []
    if req.HasField("container_name") and not req.container_name:
        errs.append(required(child(path, "containerName"), ""))
    if req.operator not in EXIT_CODE_OPERATORS:
        errs.append(unsupported(child(path, "operator"), req.operator, EXIT_CODE_OPERATORS))
    values_path = child(path, "values")
    if not req.values:
        errs.append(required(values_path, "at least one value is required"))
    elif len(req.values) > MAX_EXIT_CODES:
        errs.append(too_long(values_path, MAX_EXIT_CODES))
    seen: set[int] = set()
    prev: int | None = None
    for i, v in enumerate(req.values):
        p = index(values_path, i)
        if v in seen:
            errs.append(duplicate(p, v))
        if req.operator == "In" and v == 0:
            errs.append(invalid(p, v, "must not be 0 for the In operator"))
        if prev is not None and prev > v:
            errs.append(invalid(p, v, "must be ordered"))
        seen.add(v)
        prev = v
    return errs


def parse_index_intervals(text: str, completions: int) -> list[tuple[int, int]] | str:
    """ "1,3-5" → [(1, 1), (3, 5)], or the reason it is not a valid ordered interval list
    of indexes below `completions` (upstream's parseIndexesFromString rules)."""
    out: list[tuple[int, int]] = []
    for part in text.split(","):
        lo_s, sep, hi_s = part.partition("-")
        lo, hi = labels.parse_int64(lo_s), labels.parse_int64(hi_s) if sep else None
        if lo is None or lo < 0 or (sep and (hi is None or hi < lo)):
            return f"error parsing index interval {part!r}"
        hi = lo if hi is None else hi
        if hi >= completions:
            return f"too large: {hi} (must be less than completions: {completions})"
        if out and lo <= out[-1][1]:
            return "overlapping or out of order intervals"
        out.append((lo, hi))
    return out


def _success_policy(path: str, spec: batch_pb2.JobSpec, indexed: bool) -> Errors:
    errs: Errors = []
    rules_path = child(path, "rules")
    if not indexed:
        return [invalid(path, show(spec.success_policy), "requires indexed completion mode")]
    rules = spec.success_policy.rules
    if not rules:
        errs.append(
            required(
                rules_path,
                "at least one rules must be specified when the successPolicy is specified",
            )
        )
    if len(rules) > MAX_SUCCESS_POLICY_RULES:
        errs.append(too_long(rules_path, MAX_SUCCESS_POLICY_RULES))
    for i, rule in enumerate(rules):
        p = index(rules_path, i)
        if not rule.HasField("succeeded_indexes") and not rule.HasField("succeeded_count"):
            errs.append(
                required(p, "at least one of succeededCount or succeededIndexes must be specified")
            )
        total = spec.completions
        if rule.HasField("succeeded_indexes"):
            parsed = parse_index_intervals(rule.succeeded_indexes, spec.completions)
            if isinstance(parsed, str):
                errs.append(invalid(child(p, "succeededIndexes"), rule.succeeded_indexes, parsed))
                continue
            total = sum(hi - lo + 1 for lo, hi in parsed)
        if rule.HasField("succeeded_count"):
            if rule.succeeded_count < 0:
                errs += nonnegative(child(p, "succeededCount"), rule.succeeded_count)
            elif rule.succeeded_count > total:
                detail = (
                    f"must be less than or equal to {total} (the number of indexes in the "
                    "specified succeededIndexes field)"
                    if rule.HasField("succeeded_indexes")
                    else f"must be less than or equal to {total} (the number of specified completions)"
                )
                errs.append(invalid(child(p, "succeededCount"), rule.succeeded_count, detail))
    return errs


def _generated_selector(job: batch_pb2.Job) -> Errors:
    """ValidateGeneratedSelector: a generated selector selects this Job's uid and name."""
    spec = job.spec
    if spec.manual_selector or not spec.HasField("selector"):
        return []
    errs: Errors = []
    if not job.metadata.uid:
        errs.append(required("metadata.uid", ""))
    tpl_labels = spec.template.metadata.labels
    for key, want in (
        (LABEL_CONTROLLER_UID, job.metadata.uid),
        (LABEL_JOB_NAME, job.metadata.name),
    ):
        got = tpl_labels.get(key)
        if got is None:
            errs.append(required(f"spec.template.metadata.labels[{key}]", f"must be '{want}'"))
        elif got != want:
            errs.append(invalid(f"spec.template.metadata.labels[{key}]", got, f"must be '{want}'"))
    selector, _ = validate_selector("spec.selector", spec.selector)
    expected = {LABEL_CONTROLLER_UID: job.metadata.uid, LABEL_JOB_NAME: job.metadata.name}
    if selector is not None and not selector.matches(expected):
        errs.append(invalid("spec.selector", show(spec.selector), "`selector` not auto-generated"))
    return errs


def validate_job(job: Any) -> Errors:
    spec = job.spec
    errs = _generated_selector(job)
    errs += _job_spec("spec", spec)
    if not spec.HasField("selector"):
        errs.append(required("spec.selector", ""))
        return errs
    selector, selector_errs = validate_selector("spec.selector", spec.selector)
    errs += selector_errs
    tpl_labels = dict(spec.template.metadata.labels)
    if selector is not None and not selector.matches(tpl_labels):
        detail = "`selector` does not match template `labels`"
        errs.append(invalid("spec.template.metadata.labels", show(tpl_labels), detail))
    return errs


def validate_job_update(new: Any, old: Any) -> Errors:
    """ValidateJobSpecUpdate: the selector, completions (but see `_completions_update`),
    completionMode and the template of an unsuspended Job are immutable."""
    errs: Errors = _completions_update(new.spec, old.spec)
    n, o = new.spec, old.spec
    for field, name in (
        ("selector", "selector"),
        ("completion_mode", "completionMode"),
        ("backoff_limit_per_index", "backoffLimitPerIndex"),
        ("pod_failure_policy", "podFailurePolicy"),
        ("success_policy", "successPolicy"),
    ):
        if n.HasField(field) != o.HasField(field) or getattr(n, field) != getattr(o, field):
            errs.append(invalid(f"spec.{name}", _shown(n, field), FIELD_IMMUTABLE))
    # The template may change while a Job is suspended (upstream allows the scheduling
    # directives then); kubera allows the whole template of a Job that never started.
    if n.template != o.template and not (o.suspend and not old.status.start_time):
        errs.append(invalid("spec.template", show(n.template), FIELD_IMMUTABLE))
    return errs


def _completions_update(n: Any, o: Any) -> Errors:
    """validateCompletions (ElasticIndexedJob, GA upstream): completions is immutable,
    except in an Indexed Job, where it may change together with parallelism (the new
    completions equal to the new parallelism). An Indexed Job's completions removed is
    the spec's own Required error."""
    same = n.HasField("completions") == o.HasField("completions") and n.completions == o.completions
    if same:
        return []
    if n.completion_mode != "Indexed":
        return [invalid("spec.completions", _shown(n, "completions"), FIELD_IMMUTABLE)]
    if not n.HasField("completions"):
        return []
    if not n.HasField("parallelism") or n.completions != n.parallelism:
        detail = "can only be modified in tandem with spec.parallelism"
        return [invalid("spec.completions", n.completions, detail)]
    return []


def _shown(spec: Any, field: str) -> Any:
    value = getattr(spec, field)
    return show(value) if hasattr(value, "DESCRIPTOR") else value


def validate_cron_job(cj: Any) -> Errors:
    errs: Errors = []
    if len(cj.metadata.name) > MAX_CRONJOB_NAME:
        errs.append(
            invalid(
                "metadata.name",
                cj.metadata.name,
                f"must be no more than {MAX_CRONJOB_NAME} characters",
            )
        )
    spec = cj.spec
    if not spec.schedule:
        errs.append(required("spec.schedule", ""))
    else:
        try:
            cron.parse(spec.schedule)
        except cron.ScheduleError as e:
            errs.append(invalid("spec.schedule", spec.schedule, str(e)))
    if spec.HasField("time_zone") and not cron.valid_zone(spec.time_zone):
        errs.append(invalid("spec.timeZone", spec.time_zone, f"unknown time zone {spec.time_zone}"))
    if spec.HasField("starting_deadline_seconds"):
        errs += nonnegative("spec.startingDeadlineSeconds", spec.starting_deadline_seconds)
    for field, name in (
        ("successful_jobs_history_limit", "successfulJobsHistoryLimit"),
        ("failed_jobs_history_limit", "failedJobsHistoryLimit"),
    ):
        if spec.HasField(field):
            errs += nonnegative(f"spec.{name}", getattr(spec, field))
    if not spec.concurrency_policy:
        errs.append(required("spec.concurrencyPolicy", ""))
    elif spec.concurrency_policy not in CONCURRENCY_POLICIES:
        errs.append(
            unsupported("spec.concurrencyPolicy", spec.concurrency_policy, CONCURRENCY_POLICIES)
        )
    jt = spec.job_template
    errs += label_map("spec.jobTemplate.metadata.labels", jt.metadata.labels)
    errs += validate_annotations("spec.jobTemplate.metadata.annotations", jt.metadata.annotations)
    errs += _job_spec("spec.jobTemplate.spec", jt.spec)
    if jt.spec.HasField("selector"):
        errs.append(
            invalid(
                "spec.jobTemplate.spec.selector",
                show(jt.spec.selector),
                "`selector` will be auto-generated",
            )
        )
    if jt.spec.manual_selector:
        errs.append(unsupported("spec.jobTemplate.spec.manualSelector", "true", ("nil", "false")))
    return errs
