"""What a leader elector is told: its timings, its name in the election, and its callbacks.

The timings are a `LeaseTimings` (timings.py), validated like client-go's when built.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from services.leaderelection.timings import LeaseTimings


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionConfig:
    """One candidate in one election: its timings, its identity and the key it campaigns on."""

    #: lease_duration / renew_deadline / retry_period; defaults are kube-scheduler's.
    timings: LeaseTimings = LeaseTimings()
    #: This candidate's name in the election; unique per process incarnation.
    identity: str
    #: The etcd key the election runs on; its create_revision is the fencing token.
    key: str

    def __post_init__(self) -> None:
        for name in ("identity", "key"):
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
