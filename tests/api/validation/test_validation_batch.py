"""Job and CronJob validation (services/api/validation/batch.py) after the apiserver's
defaulting, as upstream validates them (pkg/apis/batch/validation/validation_test.go:
TestValidateJob, TestValidateJobUpdate, TestValidateCronJob). Each failing row asserts
upstream's wording (a substring of one error)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from protos.kubera.v1 import batch_pb2
from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.validation import validate_create, validate_update
from services.apiserver.admission import apply_defaults, prepare_for_create

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "pi", "namespace": "default", "uid": "job-uid"},
    "spec": {
        "template": {
            "spec": {
                "containers": [{"name": "pi", "image": "perl:5.34.0"}],
                "restartPolicy": "Never",
            }
        },
        "backoffLimit": 4,
    },
}
CRONJOB = {
    "apiVersion": "batch/v1",
    "kind": "CronJob",
    "metadata": {"name": "hello", "namespace": "default", "uid": "cj-uid"},
    "spec": {
        "schedule": "* * * * *",
        "jobTemplate": {"spec": {"template": copy.deepcopy(JOB["spec"]["template"])}},
    },
}


def with_(base: dict[str, Any], **changes: Any) -> dict[str, Any]:
    """`base` with dotted paths (`spec__template__spec__restartPolicy`) set."""
    out = copy.deepcopy(base)
    for dotted, value in changes.items():
        keys = dotted.split("__")
        node = out
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return out


def admitted(doc: dict[str, Any]) -> Any:
    """`doc` as a create admits it (services/apiserver/create.py): defaulted, and for a Job
    the strategy's generated selector (`prepare_for_create`)."""
    kind = BY_KIND[doc["kind"]]
    obj = codec.decode(doc).obj
    apply_defaults(kind, obj)
    prepare_for_create(kind, obj)
    return obj


def errors(doc: dict[str, Any]) -> list[str]:
    return [str(e) for e in validate_create(doc["kind"], admitted(doc))]


def test_the_docs_pi_job_is_valid_and_defaulted() -> None:
    job = admitted(JOB)
    assert validate_create("Job", job) == []
    assert (job.spec.completions, job.spec.parallelism, job.spec.backoff_limit) == (1, 1, 4)
    assert job.spec.completion_mode == "NonIndexed" and job.spec.suspend is False
    assert job.spec.pod_replacement_policy == "TerminatingOrFailed"
    assert dict(job.spec.selector.match_labels) == {"batch.kubernetes.io/controller-uid": "job-uid"}
    assert dict(job.spec.template.metadata.labels) == {
        "batch.kubernetes.io/controller-uid": "job-uid",
        "batch.kubernetes.io/job-name": "pi",
        "controller-uid": "job-uid",
        "job-name": "pi",
    }
    assert dict(job.metadata.labels) == dict(job.spec.template.metadata.labels)


def test_cronjob_defaults() -> None:
    cj = admitted(CRONJOB)
    assert validate_create("CronJob", cj) == []
    spec = cj.spec
    assert (spec.concurrency_policy, spec.suspend) == ("Allow", False)
    assert (spec.successful_jobs_history_limit, spec.failed_jobs_history_limit) == (3, 1)
    # SetObjectDefaults_CronJob runs SetDefaults_CronJob and the pod template's defaulters,
    # not SetDefaults_Job (registered for a Job): the Job gets them when it is created.
    assert not spec.job_template.spec.HasField("backoff_limit")
    assert not spec.job_template.spec.HasField("selector")


PFP_ONE = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        pytest.param(
            with_(JOB, spec__template__spec__restartPolicy="Always"),
            'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"',
            id="restartPolicy Always",
        ),
        pytest.param(
            with_(JOB, spec__parallelism=-1),
            "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
            id="negative parallelism",
        ),
        pytest.param(
            with_(JOB, spec__completions=-1),
            "spec.completions: Invalid value: -1: must be greater than or equal to 0",
            id="negative completions",
        ),
        pytest.param(
            with_(JOB, spec__backoffLimit=-1),
            "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
            id="negative backoffLimit",
        ),
        pytest.param(
            with_(JOB, spec__activeDeadlineSeconds=-1),
            "spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            id="negative activeDeadlineSeconds",
        ),
        pytest.param(
            with_(JOB, spec__ttlSecondsAfterFinished=-1),
            "spec.ttlSecondsAfterFinished: Invalid value: -1: must be greater than or equal to 0",
            id="negative ttlSecondsAfterFinished",
        ),
        pytest.param(
            with_(JOB, spec__completionMode="Sometimes"),
            'spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed"',
            id="unknown completionMode",
        ),
        pytest.param(
            with_(JOB, spec__completionMode="Indexed", spec__parallelism=2),
            "spec.completions: Required value: when completion mode is Indexed",
            id="Indexed needs completions",
        ),
        pytest.param(
            with_(JOB, spec__backoffLimitPerIndex=1),
            "spec.completionMode: Required value: when backoffLimitPerIndex is specified",
            id="backoffLimitPerIndex needs Indexed",
        ),
        pytest.param(
            with_(
                JOB, spec__completionMode="Indexed", spec__completions=2, spec__maxFailedIndexes=1
            ),
            "spec.backoffLimitPerIndex: Required value: when maxFailedIndexes is specified",
            id="maxFailedIndexes needs backoffLimitPerIndex",
        ),
        pytest.param(
            with_(
                JOB, spec__podFailurePolicy=PFP_ONE, spec__template__spec__restartPolicy="OnFailure"
            ),
            'spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when podFailurePolicy is specified',
            id="podFailurePolicy needs Never",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy=PFP_ONE,
                spec__podReplacementPolicy="TerminatingOrFailed",
            ),
            "spec.podReplacementPolicy: Invalid value: \"TerminatingOrFailed\": must be 'Failed' when podFailurePolicy is used",
            id="podFailurePolicy needs podReplacementPolicy Failed",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy={
                    "rules": [
                        {
                            "action": "FailJob",
                            "onExitCodes": {"operator": "In", "values": [1]},
                            "onPodConditions": [{"type": "DisruptionTarget"}],
                        }
                    ]
                },
            ),
            "specifying one of OnExitCodes and OnPodConditions is required",
            id="a rule names exactly one requirement",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy={
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 1]}}
                    ]
                },
            ),
            "spec.podFailurePolicy.rules[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator",
            id="exit code 0 with In",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy={
                    "rules": [
                        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [2, 1]}}
                    ]
                },
            ),
            "spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value: 1: must be ordered",
            id="exit codes ordered",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy={
                    "rules": [{"action": "Retry", "onExitCodes": {"operator": "In", "values": [1]}}]
                },
            ),
            'spec.podFailurePolicy.rules[0].action: Unsupported value: "Retry"',
            id="unknown action",
        ),
        pytest.param(
            with_(
                JOB,
                spec__podFailurePolicy={
                    "rules": [
                        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}
                    ]
                },
            ),
            "the 'FailIndex' action can only be used when backoffLimitPerIndex is set",
            id="FailIndex needs backoffLimitPerIndex",
        ),
        pytest.param(
            with_(JOB, spec__successPolicy={"rules": [{"succeededCount": 1}]}),
            "spec.successPolicy: Invalid value",
            id="successPolicy needs Indexed",
        ),
        pytest.param(
            with_(
                JOB,
                spec__completionMode="Indexed",
                spec__completions=3,
                spec__successPolicy={"rules": [{"succeededIndexes": "1-5"}]},
            ),
            "too large: 5 (must be less than completions: 3)",
            id="succeededIndexes past completions",
        ),
        pytest.param(
            with_(
                JOB,
                spec__completionMode="Indexed",
                spec__completions=3,
                spec__successPolicy={"rules": [{"succeededCount": 4}]},
            ),
            "spec.successPolicy.rules[0].succeededCount: Invalid value: 4: must be less than or equal to 3",
            id="succeededCount past completions",
        ),
        pytest.param(
            with_(
                JOB,
                spec__manualSelector=True,
                spec__selector={"matchLabels": {"app": "a"}},
                spec__template__metadata={"labels": {"app": "b"}},
            ),
            "spec.template.metadata.labels: Invalid value",
            id="a manual selector must match the template",
        ),
        pytest.param(
            with_(
                JOB, spec__selector={"matchLabels": {"batch.kubernetes.io/controller-uid": "other"}}
            ),
            "`selector` not auto-generated",
            id="a generated selector must select the Job",
        ),
        pytest.param(
            with_(JOB, spec__podReplacementPolicy="Never"),
            'spec.podReplacementPolicy: Unsupported value: "Never": supported values: "TerminatingOrFailed", "Failed"',
            id="unknown podReplacementPolicy",
        ),
        pytest.param(
            with_(CRONJOB, spec__schedule=""), "spec.schedule: Required value", id="no schedule"
        ),
        pytest.param(
            with_(CRONJOB, spec__schedule="61 * * * *"),
            'spec.schedule: Invalid value: "61 * * * *"',
            id="minute out of range",
        ),
        pytest.param(
            with_(CRONJOB, spec__schedule="0 0 * * * *"),
            "expected exactly 5 fields, found 6: [0 0 * * * *]",
            id="six fields",
        ),
        pytest.param(
            with_(CRONJOB, spec__schedule="TZ=UTC 0 * * * *"),
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            id="TZ in the schedule",
        ),
        pytest.param(
            with_(CRONJOB, spec__schedule="@fortnightly"),
            "unrecognized descriptor: @fortnightly",
            id="unknown descriptor",
        ),
        pytest.param(
            with_(CRONJOB, spec__timeZone="Mars/Olympus_Mons"),
            'spec.timeZone: Invalid value: "Mars/Olympus_Mons": unknown time zone Mars/Olympus_Mons',
            id="unknown time zone",
        ),
        pytest.param(
            with_(CRONJOB, spec__concurrencyPolicy="Sometimes"),
            'spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"',
            id="unknown concurrencyPolicy",
        ),
        pytest.param(
            with_(CRONJOB, spec__startingDeadlineSeconds=-1),
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            id="negative startingDeadlineSeconds",
        ),
        pytest.param(
            with_(CRONJOB, spec__jobTemplate__spec__selector={"matchLabels": {"a": "b"}}),
            "spec.jobTemplate.spec.selector: Invalid value",
            id="a job template has no selector",
        ),
        pytest.param(
            with_(CRONJOB, spec__jobTemplate__spec__template__spec__restartPolicy="Always"),
            'spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: "Always"',
            id="a job template's restartPolicy",
        ),
        pytest.param(
            with_(CRONJOB, metadata__name="c" * 53),
            "metadata.name: Invalid value",
            id="a name longer than 52",
        ),
    ],
)
def test_create_rule(doc: dict[str, Any], expected: str) -> None:
    errs = errors(doc)
    assert any(expected in e for e in errs), errs


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        pytest.param(
            {"spec__completions": 3},
            "spec.completions: Invalid value: 3: field is immutable",
            id="completions",
        ),
        pytest.param(
            {"spec__template__spec__containers": [{"name": "pi", "image": "perl:6"}]},
            "spec.template: Invalid value",
            id="template",
        ),
        pytest.param(
            {"spec__completionMode": "Indexed", "spec__completions": 1},
            "spec.completionMode",
            id="completionMode",
        ),
    ],
)
def test_job_update_rule(change: dict[str, Any], expected: str) -> None:
    old = admitted(JOB)
    new = admitted(with_(JOB, **change))
    errs = [str(e) for e in validate_update("Job", new, old)]
    assert any(expected in e for e in errs), errs


def test_parallelism_may_change() -> None:
    old = admitted(JOB)
    assert isinstance(old, batch_pb2.Job)
    new = batch_pb2.Job()
    new.CopyFrom(old)
    new.spec.parallelism = 5
    assert validate_update("Job", new, old) == []


INDEXED_JOB = with_(JOB, spec__completionMode="Indexed", spec__completions=2, spec__parallelism=2)


@pytest.mark.parametrize(
    ("old_spec", "new_spec", "expected"),
    [
        pytest.param({}, {"completions": 4, "parallelism": 4}, None, id="mutable-with-parallelism"),
        pytest.param(
            {"parallelism": 1},
            {"completions": 3, "parallelism": 3},
            None,
            id="previous-parallelism-differs-new-ones-equal",
        ),
        pytest.param(
            {},
            {"completions": 3, "parallelism": 4},
            "spec.completions: Invalid value: 3: can only be modified in tandem with spec.parallelism",
            id="completions-and-parallelism-to-different-values",
        ),
        pytest.param(
            {},
            {"completions": None},
            "spec.completions: Required value: when completion mode is Indexed",
            id="completions-set-to-nil-does-not-panic",
        ),
        pytest.param({}, {"parallelism": 1}, None, id="completions-unchanged-parallelism-lower"),
        pytest.param({}, {"parallelism": 3}, None, id="completions-unchanged-parallelism-higher"),
    ],
)
def test_indexed_job_completions_update(
    old_spec: dict[str, Any], new_spec: dict[str, Any], expected: str | None
) -> None:
    """TestValidateJobUpdate's ElasticIndexedJob cases (validateCompletions)."""
    old_doc = with_(INDEXED_JOB, **{f"spec__{k}": v for k, v in old_spec.items()})
    new_doc = with_(old_doc, **{f"spec__{k}": v for k, v in new_spec.items() if v is not None})
    for k, v in new_spec.items():
        if v is None:
            del new_doc["spec"][k]
    errs = [str(e) for e in validate_update("Job", admitted(new_doc), admitted(old_doc))]
    if expected is None:
        assert errs == []
    else:
        assert any(expected in e for e in errs), errs
