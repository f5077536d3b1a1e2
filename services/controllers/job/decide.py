"""What one sync of the Job controller decides from the Job and what its pods showed (a
`Tally`), with no I/O: the indexes completed and failed, and whether the Job is decided
(FailureTarget: a FailJob rule, backoffLimit, maxFailedIndexes, activeDeadlineSeconds;
SuccessCriteriaMet: completions or a successPolicy rule), as upstream's syncJob decides
them (pkg/controller/job/job_controller.go)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers.wellknown import (
    JOB_INDEX_FAILURE_COUNT,
)
from services.controllers.controller_utils import (
    timestamp,
)
from services.controllers.job import rules
from services.controllers.job.pods import is_indexed
from services.controllers.job.rules import (
    COMPLETE,
    FAILED,
    FAILURE_TARGET,
    SUCCESS_CRITERIA_MET,
    SUSPENDED,
)

#: An Event to record: (type, reason, message).
Event = tuple[str, str, str]


@dataclass
class Tally:
    """What one sync learns from the Job's pods."""

    active: list[core_pb2.Pod] = field(default_factory=list)
    terminating: int = 0
    ready: int = 0
    new_succeeded: list[core_pb2.Pod] = field(default_factory=list)
    new_failed: list[core_pb2.Pod] = field(default_factory=list)
    #: Finished pods whose finalizer goes without counting them (Ignore rule, deleted by us).
    uncounted_free: list[core_pb2.Pod] = field(default_factory=list)
    fail_job_message: str = ""
    fail_index: set[int] = field(default_factory=set)
    restarts: int = 0


def indexes_in_range(job: batch_pb2.Job, status: batch_pb2.JobStatus) -> None:
    """An Indexed Job's records kept to its current completions, which may have shrunk
    (ElasticIndexedJob): completedIndexes and failedIndexes lose the indexes at or past
    it, and succeeded is the number of completed indexes (upstream sets it from
    succeededIndexes.total() every sync). failed stays a count of failed pods."""
    done = rules.parse_intervals(status.completed_indexes, job.spec.completions)
    status.completed_indexes = rules.format_intervals(done)
    status.succeeded = rules.interval_count(done)
    if job.spec.HasField("backoff_limit_per_index"):
        failed = rules.parse_intervals(status.failed_indexes, job.spec.completions)
        status.failed_indexes = rules.format_intervals(failed)


def index_status(job: batch_pb2.Job, status: batch_pb2.JobStatus, t: Tally) -> None:
    completions = job.spec.completions
    done = rules.parse_intervals(status.completed_indexes, completions)
    done = rules.with_indexes(done, (rules.completion_index(p) or 0 for p in t.new_succeeded))
    status.completed_indexes = rules.format_intervals(done)
    if not job.spec.HasField("backoff_limit_per_index"):
        return
    failed = rules.parse_intervals(status.failed_indexes, completions)
    newly: set[int] = set(t.fail_index)
    for p in t.new_failed:
        ix = rules.completion_index(p)
        if ix is None or rules.contains(done, ix):
            continue
        count = int(p.metadata.annotations.get(JOB_INDEX_FAILURE_COUNT, "0") or 0) + 1
        if count > job.spec.backoff_limit_per_index:
            newly.add(ix)
    status.failed_indexes = rules.format_intervals(rules.with_indexes(failed, newly))


def finish(
    job: batch_pb2.Job,
    status: batch_pb2.JobStatus,
    t: Tally,
    now: float,
    stamp: str,
) -> bool:
    """Set FailureTarget or SuccessCriteriaMet when the Job is decided; True while it
    is finishing (its remaining pods go, then the terminal condition follows)."""
    for type_ in (FAILURE_TARGET, SUCCESS_CRITERIA_MET):
        if any(c.type == type_ and c.status == "True" for c in status.conditions):
            return True
    failed = failure(job, status, t, now)
    if failed is not None:
        rules.set_condition(status, FAILURE_TARGET, "True", *failed, stamp)
        return True
    succeeded = success(job, status, t)
    if succeeded is not None:
        rules.set_condition(status, SUCCESS_CRITERIA_MET, "True", *succeeded, stamp)
        return True
    return False


def failure(
    job: batch_pb2.Job, status: batch_pb2.JobStatus, t: Tally, now: float
) -> tuple[str, str] | None:
    spec = job.spec
    if t.fail_job_message:
        return rules.REASON_POD_FAILURE_POLICY, t.fail_job_message
    if not spec.HasField("backoff_limit_per_index"):
        over = status.failed > spec.backoff_limit
        if spec.template.spec.restart_policy == "OnFailure" and spec.backoff_limit >= 0:
            # pastBackoffLimitOnFailure: restarts of the running pods count too.
            over = over or (t.restarts > 0 and status.failed + t.restarts >= spec.backoff_limit)
        if over:
            return rules.REASON_BACKOFF_LIMIT, rules.MSG_BACKOFF_LIMIT
    else:
        failed = rules.interval_count(
            rules.parse_intervals(status.failed_indexes, spec.completions)
        )
        if spec.HasField("max_failed_indexes") and failed > spec.max_failed_indexes:
            return rules.REASON_MAX_FAILED_INDEXES, rules.MSG_MAX_FAILED_INDEXES
        done = rules.interval_count(
            rules.parse_intervals(status.completed_indexes, spec.completions)
        )
        if failed and failed + done >= spec.completions and not t.active:
            return rules.REASON_FAILED_INDEXES, rules.MSG_FAILED_INDEXES
    if spec.HasField("active_deadline_seconds") and not spec.suspend:
        started = timestamp(status.start_time)
        if started is not None and now - started >= spec.active_deadline_seconds:
            return rules.REASON_DEADLINE, rules.MSG_DEADLINE
    return None


def success(job: batch_pb2.Job, status: batch_pb2.JobStatus, t: Tally) -> tuple[str, str] | None:
    spec = job.spec
    if is_indexed(job):
        done = rules.parse_intervals(status.completed_indexes, spec.completions)
        if spec.HasField("success_policy"):
            msg = rules.match_success_policy(spec.success_policy, spec.completions, done)
            if msg:
                return rules.REASON_SUCCESS_POLICY, msg
        complete = rules.interval_count(done) >= spec.completions
    elif not spec.HasField("completions"):
        complete = status.succeeded > 0 and not t.active
    else:
        complete = status.succeeded >= spec.completions
    if complete:
        return rules.REASON_COMPLETIONS_REACHED, rules.MSG_COMPLETIONS_REACHED
    return None


def terminal_condition(status: batch_pb2.JobStatus, stamp: str) -> list[Event]:
    """A FailureTarget or SuccessCriteriaMet condition turned into Failed or Complete (the
    pods are gone): the condition and the Event to record."""
    for interim, final in ((FAILURE_TARGET, FAILED), (SUCCESS_CRITERIA_MET, COMPLETE)):
        c = next((c for c in status.conditions if c.type == interim and c.status == "True"), None)
        if c is None:
            continue
        rules.set_condition(status, final, "True", c.reason, c.message, stamp)
        if final == COMPLETE:
            status.completion_time = stamp
            return [("Normal", "Completed", "Job completed")]
        return [("Warning", c.reason, c.message)]
    return []


def suspend_condition(
    job: batch_pb2.Job, status: batch_pb2.JobStatus, suspended: bool, stamp: str
) -> list[Event]:
    """The Suspended condition as spec.suspend says (a resumption restarts the active
    deadline's clock), and the Event to record."""
    cond = rules.condition(job, SUSPENDED)
    if suspended:
        if rules.set_condition(status, SUSPENDED, "True", "JobSuspended", "Job suspended", stamp):
            return [("Normal", "Suspended", "Job suspended")]
    elif cond is not None and cond.status == "True":
        rules.set_condition(status, SUSPENDED, "False", "JobResumed", "Job resumed", stamp)
        status.start_time = stamp
        return [("Normal", "Resumed", "Job resumed")]
    return []
