"""The Job controller's pure rules, as upstream's tables: success_policy_test.go
(TestMatchSuccessPolicy), backoff_utils_test.go (TestNewBackoffRecord,
TestGetRemainingBackoffTime, TestGetFinishedTime), pod_failure_policy_test.go
(TestMatchPodFailurePolicy) and indexed_job_utils_test.go (intervals)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import batch_pb2, core_pb2
from services.api.machinery import codec
from services.clock import rfc3339
from services.controllers.job import rules
from services.controllers.job.rules import BackoffRecord, Intervals

T = 1_257_894_000.0  # 2009-11-10T23:00:00Z, upstream's defaultTestTime

# ============================================================================ success policy


def _policy(*rs: dict[str, Any]) -> batch_pb2.SuccessPolicy:
    p = batch_pb2.SuccessPolicy()
    for r in rs:
        p.rules.add(**r)
    return p


SUCCESS_CASES = [
    ("no rules", [], [(0, 0)], ""),
    ("invalid succeededIndexes", [{"succeeded_indexes": "invalid-form"}], [(0, 0)], ""),
    (
        "indexes matched",
        [{"succeeded_indexes": "0-2"}],
        [(0, 2), (4, 7)],
        "Matched rules at index 0",
    ),
    ("indexes not matched", [{"succeeded_indexes": "3"}], [(0, 2)], ""),
    ("count matched", [{"succeeded_count": 2}], [(0, 2)], "Matched rules at index 0"),
    ("count not matched", [{"succeeded_count": 4}], [(0, 2)], ""),
    (
        "second of two rules matched",
        [{"succeeded_indexes": "9"}, {"succeeded_indexes": "4,6"}],
        [(0, 2), (4, 7)],
        "Matched rules at index 1",
    ),
    (
        "first of two matching rules wins",
        [{"succeeded_indexes": "0,1"}, {"succeeded_indexes": "5"}],
        [(0, 2), (4, 7)],
        "Matched rules at index 0",
    ),
    (
        "indexes and count matched",
        [{"succeeded_indexes": "3-6", "succeeded_count": 2}],
        [(0, 2), (4, 7)],
        "Matched rules at index 0",
    ),
    (
        "indexes and count not matched",
        [{"succeeded_indexes": "3-6", "succeeded_count": 2}],
        [(0, 2), (6, 7)],
        "",
    ),
    (
        "rule a proper subset",
        [{"succeeded_indexes": "2-4,6-8"}],
        [(1, 5), (6, 9)],
        "Matched rules at index 0",
    ),
    (
        "rule equal",
        [{"succeeded_indexes": "2-4,6-9"}],
        [(2, 4), (6, 9)],
        "Matched rules at index 0",
    ),
    ("rule empty set", [{"succeeded_indexes": ""}], [(1, 3)], ""),
    ("rule and succeeded empty", [{"succeeded_indexes": ""}], [], ""),
    ("rule disjoint", [{"succeeded_indexes": "10-12,14-16"}], [(1, 3), (5, 7)], ""),
    ("rule overlaps at first", [{"succeeded_indexes": "1-3,5-7"}], [(2, 4), (6, 8)], ""),
    (
        "rule overlaps at first, count met",
        [{"succeeded_indexes": "1-3,5-7", "succeeded_count": 4}],
        [(2, 4), (6, 8)],
        "Matched rules at index 0",
    ),
    ("rule overlaps at last", [{"succeeded_indexes": "2-4,6-9"}], [(1, 3), (5, 7)], ""),
    (
        "rule covers succeeded, count met",
        [{"succeeded_indexes": "0-4,6-9", "succeeded_count": 5}],
        [(1, 3), (7, 8)],
        "Matched rules at index 0",
    ),
    (
        "rule overlaps several at last, count met",
        [{"succeeded_indexes": "0-6,8-9", "succeeded_count": 7}],
        [(1, 3), (5, 9)],
        "Matched rules at index 0",
    ),
    ("first rule overlaps at first", [{"succeeded_indexes": "0-3,6-9"}], [(1, 9)], ""),
]


@pytest.mark.parametrize(
    ("rule_list", "succeeded", "want"),
    [pytest.param(r, s, w, id=n) for n, r, s, w in SUCCESS_CASES],
)
def test_match_success_policy(
    rule_list: list[dict[str, Any]], succeeded: Intervals, want: str
) -> None:
    assert rules.match_success_policy(_policy(*rule_list), 10, succeeded) == want


# ============================================================================ backoff


@pytest.mark.parametrize(
    ("start", "succeeded", "failed", "want"),
    [
        pytest.param(BackoffRecord(), [], [T], BackoffRecord(1, T), id="one new failure"),
        pytest.param(
            BackoffRecord(), [], [T, T - 0.001], BackoffRecord(2, T), id="two new failures"
        ),
        pytest.param(
            BackoffRecord(),
            [T],
            [T - 0.002, T - 0.001],
            BackoffRecord(0, 0.0),
            id="two failures then success",
        ),
        pytest.param(
            BackoffRecord(),
            [T - 0.002],
            [T, T - 0.004, T - 0.003, T - 0.001],
            BackoffRecord(2, T),
            id="failures, success, two more failures",
        ),
        pytest.param(
            BackoffRecord(2, 0.0), [], [T], BackoffRecord(3, T), id="stored count 2 and a failure"
        ),
        pytest.param(
            BackoffRecord(), [T], [T], BackoffRecord(0, 0.0), id="success and failure at once"
        ),
        pytest.param(BackoffRecord(), [], [], BackoffRecord(0, 0.0), id="nothing new"),
        pytest.param(BackoffRecord(), [T], [], BackoffRecord(0, 0.0), id="one success"),
    ],
)
def test_new_backoff_record(
    start: BackoffRecord, succeeded: list[float], failed: list[float], want: BackoffRecord
) -> None:
    finished = [(t, True) for t in succeeded] + [(t, False) for t in failed]
    assert start.after(finished) == want


@pytest.mark.parametrize(
    ("record", "now", "want"),
    [
        pytest.param(BackoffRecord(0, 0.0), T, 0, id="no failures"),
        pytest.param(BackoffRecord(1, T), T, 5, id="one failure, now"),
        pytest.param(BackoffRecord(1, T), T + 1, 4, id="one failure, 1s later"),
        pytest.param(BackoffRecord(1, T), T + 5, 0, id="one failure, at the backoff"),
        pytest.param(BackoffRecord(1, T), T + 6, 0, id="one failure, past the backoff"),
        pytest.param(BackoffRecord(3, T), T, 20, id="three failures"),
        pytest.param(BackoffRecord(8, T), T, 640, id="eight failures, under the cap"),
        pytest.param(BackoffRecord(9, T), T, 700, id="nine failures, capped"),
    ],
)
def test_remaining_backoff(record: BackoffRecord, now: float, want: float) -> None:
    assert record.remaining(now, base=5, cap=700) == want


def _pod(doc: dict[str, Any]) -> core_pb2.Pod:
    obj = codec.decode({"apiVersion": "v1", "kind": "Pod", **doc}).obj
    assert isinstance(obj, core_pb2.Pod)
    return obj


def _term(t: float | None = None) -> dict[str, Any]:
    return {
        "state": {"terminated": {"finishedAt": rfc3339(t)} if t is not None else {"exitCode": 1}}
    }


@pytest.mark.parametrize(
    ("pod", "want"),
    [
        pytest.param(
            {
                "status": {
                    "containerStatuses": [
                        {"name": "a", **_term(T - 1)},
                        {"name": "b", **_term(T)},
                        {"name": "c", **_term(T - 2)},
                    ]
                }
            },
            T,
            id="all containers terminated: the latest",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": rfc3339(T)},
                "status": {
                    "containerStatuses": [
                        {"name": "a", **_term(T - 1)},
                        {"name": "b", "state": {"running": {}}},
                    ]
                },
            },
            T,
            id="one still running: the deletion timestamp",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": rfc3339(T), "deletionGracePeriodSeconds": 30},
                "status": {"containerStatuses": [{"name": "a", "state": {"running": {}}}]},
            },
            T - 30,
            id="deletion timestamp less the grace period",
        ),
        pytest.param(
            {
                "status": {
                    "containerStatuses": [{"name": "a", **_term()}],
                    "conditions": [
                        {"type": "Ready", "status": "False", "lastTransitionTime": rfc3339(T)}
                    ],
                }
            },
            T,
            id="Ready False transition",
        ),
        pytest.param(
            {
                "metadata": {"deletionTimestamp": rfc3339(T)},
                "status": {
                    "containerStatuses": [{"name": "a", **_term()}],
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": rfc3339(T - 30)}
                    ],
                },
            },
            T,
            id="Ready True is no finish time",
        ),
        pytest.param(
            {
                "metadata": {"creationTimestamp": rfc3339(T)},
                "status": {"containerStatuses": [{"name": "a", **_term()}]},
            },
            T,
            id="the creation timestamp last",
        ),
        pytest.param(
            {
                "spec": {
                    "initContainers": [{"name": "sidecar", "image": "s", "restartPolicy": "Always"}]
                },
                "status": {
                    "containerStatuses": [{"name": "a", **_term(T - 1)}],
                    "initContainerStatuses": [{"name": "sidecar", **_term(T)}],
                },
            },
            T,
            id="a sidecar stops last",
        ),
    ],
)
def test_finish_time(pod: dict[str, Any], want: float) -> None:
    assert rules.finish_time(_pod(pod)) == want


# ============================================================================ pod failure policy


def _failed(
    *,
    codes: dict[str, int] | None = None,
    init: dict[str, int] | None = None,
    conds: dict[str, str] | None = None,
) -> core_pb2.Pod:
    def statuses(m: dict[str, int] | None) -> list[dict[str, Any]]:
        return [{"name": n, "state": {"terminated": {"exitCode": c}}} for n, c in (m or {}).items()]

    return _pod(
        {
            "metadata": {"name": "p", "namespace": "ns"},
            "status": {
                "phase": "Failed",
                "containerStatuses": statuses(codes),
                "initContainerStatuses": statuses(init),
                "conditions": [{"type": t, "status": s} for t, s in (conds or {}).items()],
            },
        }
    )


def _pfp(*rs: dict[str, Any]) -> batch_pb2.PodFailurePolicy:
    obj = codec.decode(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "spec": {"podFailurePolicy": {"rules": list(rs)}},
        }
    ).obj
    assert isinstance(obj, batch_pb2.Job)
    return obj.spec.pod_failure_policy


FAIL_JOB_42 = {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [1, 2, 42]}}


@pytest.mark.parametrize(
    ("policy", "pod", "want"),
    [
        pytest.param(None, _failed(codes={"main": 1}), (True, None, ""), id="no policy: counted"),
        pytest.param(
            _pfp(FAIL_JOB_42),
            _failed(codes={"main": 42}),
            (
                True,
                "FailJob",
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
            ),
            id="FailJob on an exit code In the values",
        ),
        pytest.param(
            _pfp(FAIL_JOB_42),
            _failed(codes={"main": 3}),
            (True, None, ""),
            id="exit code not In: no rule",
        ),
        pytest.param(
            _pfp({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6]}}),
            _failed(codes={"main": 42}),
            (
                True,
                "FailJob",
                "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
            ),
            id="FailJob on an exit code NotIn the values",
        ),
        pytest.param(
            _pfp(
                {
                    "action": "FailJob",
                    "onExitCodes": {"containerName": "other", "operator": "In", "values": [42]},
                }
            ),
            _failed(codes={"main": 42}),
            (True, None, ""),
            id="another container's rule does not match",
        ),
        pytest.param(
            _pfp({"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [1]}}),
            _failed(codes={"main": 0}),
            (True, None, ""),
            id="exit code 0 never matches",
        ),
        pytest.param(
            _pfp(FAIL_JOB_42),
            _failed(init={"init": 42}),
            (
                True,
                "FailJob",
                "Container init for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
            ),
            id="an init container's exit code matches",
        ),
        pytest.param(
            _pfp(
                {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [42]}}, FAIL_JOB_42
            ),
            _failed(codes={"main": 42}),
            (False, "Ignore", ""),
            id="the first matching rule wins: Ignore is not counted",
        ),
        pytest.param(
            _pfp(
                {"action": "Count", "onExitCodes": {"operator": "In", "values": [42]}}, FAIL_JOB_42
            ),
            _failed(codes={"main": 42}),
            (True, "Count", ""),
            id="Count is counted",
        ),
        pytest.param(
            _pfp({"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}),
            _failed(codes={"main": 137}, conds={"DisruptionTarget": "True"}),
            (False, "Ignore", ""),
            id="Ignore a disruption",
        ),
        pytest.param(
            _pfp(
                {
                    "action": "FailJob",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}],
                }
            ),
            _failed(conds={"DisruptionTarget": "True"}),
            (True, None, ""),
            id="a condition pattern needs its status",
        ),
        pytest.param(
            _pfp({"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}),
            _failed(conds={"ConfigIssue": "True"}),
            (
                True,
                "FailJob",
                "Pod ns/p has condition ConfigIssue matching FailJob rule at index 0",
            ),
            id="FailJob on a pod condition",
        ),
        pytest.param(
            _pfp({"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [42]}}),
            _failed(codes={"main": 42}),
            (True, "FailIndex", ""),
            id="FailIndex",
        ),
    ],
)
def test_match_pod_failure_policy(
    policy: batch_pb2.PodFailurePolicy | None, pod: core_pb2.Pod, want: tuple[bool, str | None, str]
) -> None:
    got = rules.match_pod_failure_policy(policy, pod)
    assert (got.count_failed, got.action, got.message) == want


# ============================================================================ intervals


@pytest.mark.parametrize(
    ("text", "completions", "want"),
    [
        pytest.param("", 10, [], id="empty"),
        pytest.param("1,3-5,7", 10, [(1, 1), (3, 5), (7, 7)], id="mixed"),
        pytest.param("3-5,6", 10, [(3, 6)], id="neighbours merge"),
        pytest.param("5-12", 10, [(5, 9)], id="capped at completions"),
        pytest.param("12,x,1", 10, [(1, 1)], id="bad parts dropped"),
    ],
)
def test_parse_intervals(text: str, completions: int, want: Intervals) -> None:
    assert rules.parse_intervals(text, completions) == want


@pytest.mark.parametrize(
    ("intervals", "want"),
    [
        pytest.param([(0, 0)], "0", id="one"),
        pytest.param([(0, 1)], "0,1", id="a pair is written with a comma"),
        pytest.param([(0, 2), (5, 5), (7, 9)], "0-2,5,7-9", id="ranges"),
    ],
)
def test_format_intervals(intervals: Intervals, want: str) -> None:
    assert rules.format_intervals(intervals) == want
