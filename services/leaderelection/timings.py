"""Lease timings: the one shape of kube-scheduler's 15 s / 10 s / 2 s, validated like client-go.

The rules are client-go's (tools/leaderelection NewLeaderElector), checked when the timings are
built so a bad flag or file fails at start-up, not at the first missed renewal:

    lease_duration > renew_deadline > JITTER_FACTOR × retry_period, all positive.

lease_duration bounds how long standbys wait for a silent leader; renew_deadline is how long
a leader keeps trying to renew before it stops acting as leader; retry_period is the pause
between attempts. A standby's campaign pause is jittered up to JITTER_FACTOR × retry_period
extra (client-go's wait.JitterUntil), which is why renew_deadline must exceed it.

Every layer that carries timings carries a `LeaseTimings`: the elector's config, a
deployment's settings, the KubeSchedulerConfiguration's leaderElection block. The command
line's `--leader-elect-*` flags may leave any of them unset (`TimingOverrides`).
`violations` states the rules once for callers that report every broken rule in their own
words (the configuration loader's field errors) instead of raising at the first.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NamedTuple

#: client-go's JitterFactor: a campaign waits retry_period × (1 + U[0, JITTER_FACTOR)).
JITTER_FACTOR = 1.2

TimingField = Literal["lease_duration", "renew_deadline", "retry_period"]


class Violation(NamedTuple):
    """One broken rule: the timing at fault, its value, and which rule ("positive": > 0;
    "over_renew": lease_duration > renew_deadline; "over_jittered_retry":
    renew_deadline > JITTER_FACTOR × retry_period)."""

    field: TimingField
    value: float
    rule: Literal["positive", "over_renew", "over_jittered_retry"]


def violations(
    lease_duration: float, renew_deadline: float, retry_period: float
) -> list[Violation]:
    """Every rule these timings break, positivity first (empty: valid)."""
    given: tuple[tuple[TimingField, float], ...] = (
        ("lease_duration", lease_duration),
        ("renew_deadline", renew_deadline),
        ("retry_period", retry_period),
    )
    out = [Violation(name, value, "positive") for name, value in given if not value > 0]
    if not lease_duration > renew_deadline:
        out.append(Violation("lease_duration", lease_duration, "over_renew"))
    if not renew_deadline > JITTER_FACTOR * retry_period:
        out.append(Violation("renew_deadline", renew_deadline, "over_jittered_retry"))
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaseTimings:
    """Timings in seconds; defaults are kube-scheduler's (15 s / 10 s / 2 s)."""

    #: How long a standby waits, from the last change it saw to the election key, before it
    #: treats a silent leader as gone; also the TTL (rounded up) of the etcd lease under it.
    lease_duration: float = 15.0
    #: How long the leader keeps retrying a failing renewal before it steps down.
    renew_deadline: float = 10.0
    #: Pause between campaign attempts (standbys, jittered) and between renewals (leader).
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        broken = violations(self.lease_duration, self.renew_deadline, self.retry_period)
        if not broken:
            return
        v = broken[0]
        if v.rule == "positive":
            raise ValueError(f"{v.field} must be greater than zero, got {v.value}")
        if v.rule == "over_renew":
            raise ValueError(
                f"lease_duration must be greater than renew_deadline, got "
                f"lease_duration={self.lease_duration} renew_deadline={self.renew_deadline}"
            )
        raise ValueError(
            f"renew_deadline must be greater than retry_period × {JITTER_FACTOR} "
            f"(client-go's JitterFactor), got renew_deadline={self.renew_deadline} "
            f"retry_period={self.retry_period}"
        )

    def with_overrides(self, overrides: TimingOverrides) -> LeaseTimings:
        """These timings with the ones `overrides` sets (checked together again)."""
        return LeaseTimings(
            lease_duration=_given(overrides.lease_duration, self.lease_duration),
            renew_deadline=_given(overrides.renew_deadline, self.renew_deadline),
            retry_period=_given(overrides.retry_period, self.retry_period),
        )


def _given(value: float | None, default: float) -> float:
    return default if value is None else value


@dataclass(frozen=True, slots=True, kw_only=True)
class TimingOverrides:
    """The `--leader-elect-*` flags (seconds); None keeps the configuration's value."""

    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None

    def check(self) -> None:
        """Raise ValueError unless the set timings, with the defaults for the others, obey
        client-go's rules (the command line's check, before anything starts)."""
        LeaseTimings().with_overrides(self)
