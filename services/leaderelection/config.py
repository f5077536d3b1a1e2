"""What a leader elector is told: its timings, its name in the election, and its callbacks.

The timing rules are client-go's (tools/leaderelection NewLeaderElector), checked when the
config is built so a bad flag fails at start-up, not at the first missed renewal:

    lease_duration > renew_deadline > JITTER_FACTOR × retry_period, all positive.

lease_duration bounds how long standbys wait for a silent leader; renew_deadline is how long
a leader keeps trying to renew before it stops acting as leader; retry_period is the pause
between attempts. A standby's campaign pause is jittered up to JITTER_FACTOR × retry_period
extra (client-go's wait.JitterUntil), which is why renew_deadline must exceed it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

#: client-go's JitterFactor: a campaign waits retry_period × (1 + U[0, JITTER_FACTOR)).
JITTER_FACTOR = 1.2


def check_timings(lease_duration: float, renew_deadline: float, retry_period: float) -> None:
    """Raise ValueError unless the timings obey client-go's rules (module docstring)."""
    timings = {
        "lease_duration": lease_duration,
        "renew_deadline": renew_deadline,
        "retry_period": retry_period,
    }
    for name, value in timings.items():
        if not value > 0:
            raise ValueError(f"{name} must be greater than zero, got {value}")
    if not lease_duration > renew_deadline:
        raise ValueError(
            f"lease_duration must be greater than renew_deadline, got "
            f"lease_duration={lease_duration} renew_deadline={renew_deadline}"
        )
    if not renew_deadline > JITTER_FACTOR * retry_period:
        raise ValueError(
            f"renew_deadline must be greater than retry_period × {JITTER_FACTOR} "
            f"(client-go's JitterFactor), got renew_deadline={renew_deadline} "
            f"retry_period={retry_period}"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """Timings in seconds; defaults are kube-scheduler's (15 s / 10 s / 2 s)."""

    #: How long a standby waits, from the last change it saw to the election key, before it
    #: treats a silent leader as gone; also the TTL (rounded up) of the etcd lease under it.
    lease_duration: float = 15.0
    #: How long the leader keeps retrying a failing renewal before it steps down.
    renew_deadline: float = 10.0
    #: Pause between campaign attempts (standbys, jittered) and between renewals (leader).
    retry_period: float = 2.0
    #: This candidate's name in the election; unique per process incarnation.
    identity: str
    #: The etcd key the election runs on; its create_revision is the fencing token.
    key: str
    #: The coordination.k8s.io/v1 Lease the holder is published as (by the caller).
    lease_name: str = "kube-scheduler"
    lease_namespace: str = "kube-system"

    def __post_init__(self) -> None:
        check_timings(self.lease_duration, self.renew_deadline, self.retry_period)
        for name in ("identity", "key", "lease_name", "lease_namespace"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")


@dataclass(frozen=True, slots=True)
class LeaderElectionRecord:
    """The holder as client-go's LeaderElectionRecord has it (the fields of a
    coordination.k8s.io/v1 LeaseSpec); times are seconds since the epoch from the
    elector's clock. A release is reported with an empty holder and a 1 s duration."""

    holder: str
    acquire_time: float
    renew_time: float
    lease_duration_seconds: int
    transitions: int


@dataclass(frozen=True, slots=True)
class Callbacks:
    #: Runs as a task once this elector leads; `stop` is set when the term ends (lost, or
    #: run() stopping). Return soon after: the elector cancels it after one retry_period.
    on_started_leading: Callable[[asyncio.Event], Coroutine[Any, Any, None]]
    #: Runs exactly once at the end of every term, after the work above has finished.
    on_stopped_leading: Callable[[], None]
    #: Called with the holder's identity whenever the observed holder changes (this
    #: elector's own identity included, the first holder seen included).
    on_new_leader: Callable[[str], None] | None = None
    #: Hook for publishing the holder as a coordination.k8s.io/v1 Lease: called by the
    #: leader when it acquires, on every renewal (renew_time moves) and on release.
    on_transition: Callable[[LeaderElectionRecord], None] | None = None

    def __post_init__(self) -> None:
        if not callable(self.on_started_leading):
            raise ValueError("on_started_leading callback must not be None")
        if not callable(self.on_stopped_leading):
            raise ValueError("on_stopped_leading callback must not be None")
