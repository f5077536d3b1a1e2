"""The Job controller's decision rules, pure (no client, no clock of their own): index
intervals, the pod failure policy, the success policy, pod backoff and the finish checks.

Upstream spreads them over pkg/controller/job: indexed_job_utils.go (intervals, the
completion index of a pod), pod_failure_policy.go (matchPodFailurePolicy),
success_policy.go (matchSuccessPolicy), backoff_utils.go (the pod re-creation delay) and
job_controller.go (exceedsBackoffLimit, pastActiveDeadline). Their tests are ported as
tables in tests/controllers/job/test_rules.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.helpers.wellknown import JOB_COMPLETION_INDEX
from services.controllers.controller_utils import timestamp as parse_time

#: backoff_utils.go: the first re-creation delay after a failed pod, doubling per
#: consecutive failure up to the cap (simulated seconds).
DEFAULT_POD_FAILURE_BACKOFF = 10.0
MAX_POD_FAILURE_BACKOFF = 600.0

# Condition types, reasons and messages (k8s.io/api/batch/v1 and job_controller.go).
COMPLETE, FAILED, SUSPENDED = "Complete", "Failed", "Suspended"
FAILURE_TARGET, SUCCESS_CRITERIA_MET = "FailureTarget", "SuccessCriteriaMet"
REASON_BACKOFF_LIMIT = "BackoffLimitExceeded"
REASON_DEADLINE = "DeadlineExceeded"
REASON_POD_FAILURE_POLICY = "PodFailurePolicy"
REASON_FAILED_INDEXES = "FailedIndexes"
REASON_MAX_FAILED_INDEXES = "MaxFailedIndexesExceeded"
REASON_COMPLETIONS_REACHED = "CompletionsReached"
REASON_SUCCESS_POLICY = "SuccessPolicy"
MSG_BACKOFF_LIMIT = "Job has reached the specified backoff limit"
MSG_DEADLINE = "Job was active longer than specified deadline"
MSG_FAILED_INDEXES = "Job has failed indexes"
MSG_MAX_FAILED_INDEXES = "Job has exceeded the specified maximal number of failed indexes"
MSG_COMPLETIONS_REACHED = "Reached expected number of succeeded pods"


# ============================================================================ intervals


Intervals = list[tuple[int, int]]


def parse_intervals(text: str, completions: int) -> Intervals:
    """ "1,3-5" → [(1, 1), (3, 5)] (parseIndexesFromString): indexes at or past
    `completions` and unreadable parts are dropped, as upstream drops them."""
    out: Intervals = []
    if not text:
        return out
    for part in text.split(","):
        lo_s, sep, hi_s = part.partition("-")
        try:
            lo = int(lo_s)
            hi = int(hi_s) if sep else lo
        except ValueError:
            continue
        hi = min(hi, completions - 1)
        if lo < 0 or lo > hi:
            continue
        out.append((lo, hi))
    return merge(out)


def merge(intervals: Iterable[tuple[int, int]]) -> Intervals:
    out: Intervals = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return out


def with_indexes(intervals: Intervals, indexes: Iterable[int]) -> Intervals:
    return merge([*intervals, *((i, i) for i in indexes)])


def format_intervals(intervals: Intervals) -> str:
    """[(1, 1), (3, 5)] → "1,3-5" (upstream writes a pair of neighbours as "3,4")."""
    parts = []
    for lo, hi in intervals:
        if lo == hi:
            parts.append(str(lo))
        elif hi == lo + 1:
            parts.append(f"{lo},{hi}")
        else:
            parts.append(f"{lo}-{hi}")
    return ",".join(parts)


def interval_count(intervals: Intervals) -> int:
    return sum(hi - lo + 1 for lo, hi in intervals)


def contains(intervals: Intervals, index: int) -> bool:
    return any(lo <= index <= hi for lo, hi in intervals)


def completion_index(pod: core_pb2.Pod) -> int | None:
    """getCompletionIndex: the pod's index annotation (else label), None when missing or
    not a non-negative integer."""
    text = pod.metadata.annotations.get(JOB_COMPLETION_INDEX)
    if text is None:
        text = pod.metadata.labels.get(JOB_COMPLETION_INDEX)
    if text is None or not text.isdigit():
        return None
    return int(text)


# ============================================================================ pod failure policy


def _terminated(state: Any) -> Any:
    if state is None or "terminated" not in state:
        return None
    return state["terminated"]


def exit_code(cs: core_pb2.ContainerStatus) -> int | None:
    """The exit code of a terminated container (state.terminated.exitCode)."""
    if not cs.HasField("state"):
        return None
    term = _terminated(cs.state)
    if term is None:
        return None
    return int(term["exitCode"]) if "exitCode" in term else 0


def _matching_container(
    statuses: Sequence[core_pb2.ContainerStatus],
    req: batch_pb2.PodFailurePolicyOnExitCodesRequirement,
) -> tuple[str, int] | None:
    for cs in statuses:
        code = exit_code(cs)
        if code is None or code == 0:
            continue  # still running, or succeeded: nothing to match
        if req.HasField("container_name") and req.container_name != cs.name:
            continue
        in_values = code in req.values
        if (req.operator == "In" and in_values) or (req.operator == "NotIn" and not in_values):
            return cs.name, code
    return None


@dataclass(frozen=True)
class PolicyMatch:
    """matchPodFailurePolicy's answer: whether the failure counts towards backoffLimit,
    the matching rule's action (None: no rule matched), and FailJob's message."""

    count_failed: bool = True
    action: str | None = None
    message: str = ""


def match_pod_failure_policy(
    policy: batch_pb2.PodFailurePolicy | None, pod: core_pb2.Pod
) -> PolicyMatch:
    """The first rule that matches the failed `pod` decides (matchPodFailurePolicy)."""
    if policy is None:
        return PolicyMatch()
    ns, name = pod.metadata.namespace, pod.metadata.name
    for i, rule in enumerate(policy.rules):
        if rule.HasField("on_exit_codes"):
            req = rule.on_exit_codes
            found = _matching_container(pod.status.container_statuses, req) or _matching_container(
                pod.status.init_container_statuses, req
            )
            if found is None:
                continue
            msg = (
                f"Container {found[0]} for pod {ns}/{name} failed with exit code {found[1]} "
                f"matching {rule.action} rule at index {i}"
            )
        elif rule.on_pod_conditions:
            cond = next(
                (
                    c
                    for p in rule.on_pod_conditions
                    for c in pod.status.conditions
                    if c.type == p.type and c.status == (p.status or "True")
                ),
                None,
            )
            if cond is None:
                continue
            msg = f"Pod {ns}/{name} has condition {cond.type} matching {rule.action} rule at index {i}"
        else:
            continue
        if rule.action == "Ignore":
            return PolicyMatch(count_failed=False, action="Ignore")
        if rule.action == "FailJob":
            return PolicyMatch(action="FailJob", message=msg)
        return PolicyMatch(action=rule.action)
    return PolicyMatch()


# ============================================================================ success policy


def match_success_policy(
    policy: batch_pb2.SuccessPolicy, completions: int, succeeded: Intervals
) -> str:
    """matchSuccessPolicy: the message of the first rule the succeeded indexes satisfy
    ("Matched rules at index N"), or "" when none does."""
    for i, rule in enumerate(policy.rules):
        if rule.HasField("succeeded_indexes"):
            wanted = parse_intervals(rule.succeeded_indexes, completions)
            if not wanted:
                continue  # an empty or unreadable set matches nothing
            got = sum(
                max(0, min(hi, whi) - max(lo, wlo) + 1)
                for lo, hi in succeeded
                for wlo, whi in wanted
            )
            need = (
                rule.succeeded_count if rule.HasField("succeeded_count") else interval_count(wanted)
            )
            if got >= need:
                return f"Matched rules at index {i}"
        elif rule.HasField("succeeded_count") and interval_count(succeeded) >= rule.succeeded_count:
            return f"Matched rules at index {i}"
    return ""


# ============================================================================ backoff


@dataclass(frozen=True)
class BackoffRecord:
    """backoffRecord: consecutive failures since the last success, and when the last
    failure finished (epoch seconds)."""

    failures_after_last_success: int = 0
    last_failure_time: float = 0.0

    def after(self, finished: Sequence[tuple[float, bool]]) -> BackoffRecord:
        """The record once pods that finished at (time, succeeded) are counted, in
        finish order (newBackoffRecord)."""
        failures, last = self.failures_after_last_success, self.last_failure_time
        for t, ok in sorted(finished):
            if ok:
                failures, last = 0, 0.0
            else:
                failures, last = failures + 1, max(last, t)
        return BackoffRecord(failures, last)

    def remaining(
        self,
        now: float,
        *,
        base: float = DEFAULT_POD_FAILURE_BACKOFF,
        cap: float = MAX_POD_FAILURE_BACKOFF,
    ) -> float:
        """getRemainingTime: how long until a new pod may be created (0: now)."""
        if self.failures_after_last_success == 0:
            return 0.0
        delay = min(base * 2 ** (self.failures_after_last_success - 1), cap)
        return max(0.0, self.last_failure_time + delay - now)


def _containers_finish(pod: core_pb2.Pod) -> float | None:
    """The latest finishedAt when every container (and every sidecar) has terminated
    with one; None otherwise (getFinishTimeFromContainers)."""
    sidecars = {c.name for c in pod.spec.init_containers if c.restart_policy == "Always"}
    statuses = [
        *pod.status.container_statuses,
        *(cs for cs in pod.status.init_container_statuses if cs.name in sidecars),
    ]
    latest: float | None = None
    for cs in statuses:
        term = _terminated(cs.state) if cs.HasField("state") else None
        if term is None or "finishedAt" not in term or not term["finishedAt"]:
            return None
        t = parse_time(str(term["finishedAt"]))
        if t is None:
            return None
        latest = t if latest is None else max(latest, t)
    return latest


def finish_time(pod: core_pb2.Pod) -> float:
    """getFinishedTime: from the containers, else the Ready=False transition, else the
    deletion timestamp less its grace period, else the creation timestamp."""
    t = _containers_finish(pod)
    if t is not None:
        return t
    for c in pod.status.conditions:
        if c.type == "Ready" and c.status == "False":
            ready_false = parse_time(c.last_transition_time)
            if ready_false is not None:
                return ready_false
    deleted = parse_time(pod.metadata.deletion_timestamp)
    if deleted is not None:
        return deleted - (pod.metadata.deletion_grace_period_seconds or 0)
    return parse_time(pod.metadata.creation_timestamp) or 0.0


# ============================================================================ conditions


def condition(job: batch_pb2.Job, type_: str) -> batch_pb2.JobCondition | None:
    for c in job.status.conditions:
        if c.type == type_:
            return c
    return None


def has_true(job: batch_pb2.Job, type_: str) -> bool:
    c = condition(job, type_)
    return c is not None and c.status == "True"


def is_finished(job: batch_pb2.Job) -> bool:
    """IsJobFinished: Complete or Failed is True."""
    return has_true(job, COMPLETE) or has_true(job, FAILED)


def set_condition(
    status: batch_pb2.JobStatus, type_: str, value: str, reason: str, message: str, now: str
) -> bool:
    """Add or update one condition (ensureJobConditionStatus); True when it changed. The
    transition time moves only when the status does."""
    for c in status.conditions:
        if c.type == type_:
            if c.status == value and c.reason == reason and c.message == message:
                return False
            if c.status != value:
                c.last_transition_time = now
            c.status, c.reason, c.message, c.last_probe_time = value, reason, message, now
            return True
    status.conditions.append(
        batch_pb2.JobCondition(
            type=type_,
            status=value,
            reason=reason,
            message=message,
            last_probe_time=now,
            last_transition_time=now,
        )
    )
    return True


__all__ = [
    "BackoffRecord",
    "PolicyMatch",
    "completion_index",
    "exit_code",
    "finish_time",
    "format_intervals",
    "is_finished",
    "match_pod_failure_policy",
    "match_success_policy",
    "parse_intervals",
    "set_condition",
    "with_indexes",
]
