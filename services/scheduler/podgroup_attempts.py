"""Pod-group scheduling attempts, for upstream's pod-group series (metrics.PodGroupMetrics).

Upstream 1.37 pops a pod group from its queue and runs one pod-group scheduling cycle over
all its queued pods (schedule_one_podgroup.go): the algorithm's time is one observation of
`podgroup_scheduling_algorithm_duration_seconds`, and the submitted result one of
`podgroup_schedule_attempts_total` and `podgroup_scheduling_attempt_duration_seconds`.
kubera schedules a group pod by pod and GangScheduling decides at Permit (its docstring), so
an attempt here is a gang's run at its quorum:

    opens     a member of a pod group (spec.schedulingGroup or spec.workloadRef) waits at
              Permit and the group has no attempt open; it starts at that member's
              scheduling cycle
    grows     each member that waits at Permit joins it, adding its cycle (pop → Permit)
              to the attempt's algorithm seconds
    closes    scheduled      a member's Permit succeeds (the quorum is there: every waiting
                             member is allowed)
              unschedulable  GangScheduling refuses a member at Permit (the quorum cannot be
                             reached), or a waiting member is rejected (the attempt's
                             deadline passed, preemption, a PreBindPreFlight error): the
                             group's waiting members all go back
              error          GangScheduling's Permit fails (the group vanished)

The attempt's duration is its first member's cycle start → the close. A GangScheduling
refusal with no attempt open is an attempt of its own, the refused member's cycle long.
Not counted: a pod whose Permit succeeds with no attempt open (a basic group's pod, a gang
of minCount 1, a member arriving after its gang's quorum), as kubera makes no group
decision for it; `waiting_on_preemption` (kubera preempts for one pod, never for a group
as a whole); CompositePodGroups (not served). The type is always `podgroup`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from protos.kubera.v1 import core_pb2
from services.clock import Clock
from services.scheduler.framework.status import Code, Status
from services.scheduler.metrics import (
    RESULT_ERROR,
    RESULT_SCHEDULED,
    RESULT_UNSCHEDULABLE,
    PodGroupMetrics,
)
from services.scheduler.plugins.gangscheduling.plugin import NAME as GANG_SCHEDULING
from services.scheduler.plugins.gangscheduling.workloadmanager import PodGroupKey, pod_group_key


@dataclass
class _Attempt:
    key: PodGroupKey
    profile: str
    start: float
    algorithm_s: float = 0.0
    members: set[str] = field(default_factory=set)


class PodGroupAttempts:
    """The open attempts of one scheduler's term, by pod group (see the module docstring).
    Every call comes from the scheduling loop's task, so no lock is needed."""

    def __init__(self, metrics: PodGroupMetrics, clock: Clock) -> None:
        self.metrics = metrics
        self.clock = clock
        self._open: dict[PodGroupKey, _Attempt] = {}
        #: A waiting member's uid → its attempt (a rejection closes only its own attempt).
        self._waiting: dict[str, _Attempt] = {}

    def open_attempts(self) -> int:
        return len(self._open)

    def permit(self, pod: core_pb2.Pod, profile: str, cycle_start: float, status: Status) -> None:
        """A member's Permit answered `status`; its scheduling cycle began at `cycle_start`
        (clock.monotonic())."""
        key = pod_group_key(pod)
        if key is None:
            return
        now = self.clock.monotonic()
        attempt = self._open.get(key)
        if status.is_wait():
            if attempt is None:
                attempt = self._open[key] = _Attempt(key, profile, cycle_start)
            attempt.algorithm_s += max(0.0, now - cycle_start)
            attempt.members.add(pod.metadata.uid)
            self._waiting[pod.metadata.uid] = attempt
            return
        if status.is_success():
            if attempt is not None:
                attempt.algorithm_s += max(0.0, now - cycle_start)
                self._close(attempt, RESULT_SCHEDULED, now)
            return
        if status.plugin != GANG_SCHEDULING:
            return  # another Permit plugin refused this pod: the gang's attempt goes on
        if attempt is None:
            attempt = _Attempt(key, profile, cycle_start)
        attempt.algorithm_s += max(0.0, now - cycle_start)
        result = RESULT_ERROR if status.code == Code.ERROR else RESULT_UNSCHEDULABLE
        self._close(attempt, result, now)

    def rejected(self, uid: str) -> None:
        """The waiting member `uid` was rejected: its attempt, if still open, failed."""
        attempt = self._waiting.get(uid)
        if attempt is not None and self._open.get(attempt.key) is attempt:
            self._close(attempt, RESULT_UNSCHEDULABLE, self.clock.monotonic())

    def _close(self, attempt: _Attempt, result: str, now: float) -> None:
        if self._open.get(attempt.key) is attempt:
            del self._open[attempt.key]
        for uid in attempt.members:
            if self._waiting.get(uid) is attempt:
                del self._waiting[uid]
        self.metrics.observe_algorithm(attempt.profile, attempt.algorithm_s)
        self.metrics.observe_attempt(result, attempt.profile, max(0.0, now - attempt.start))
