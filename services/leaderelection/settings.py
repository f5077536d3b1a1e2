"""A deployment's leader-election settings: the one shape every layer passes around.

The `kubera up --leader-elect-*` flags, a KubeSchedulerConfiguration's `leaderElection`
block (its timings and resourceName/resourceNamespace) and the controller-manager's
election all end up as a `LeaderElectionSettings`; a replica turns it, once, into the
elector's `LeaderElectionConfig` with its own identity and election key
(`elector_config`). The flags may leave any timing unset (`TimingOverrides`): an unset one
keeps the configuration's value.

The timing rules are client-go's and checked when the settings are built (see config.py):
lease_duration > renew_deadline > JITTER_FACTOR × retry_period, all positive.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from services.leaderelection.config import LeaderElectionConfig, check_timings


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionSettings:
    """Timings in seconds (kube-scheduler's defaults: 15 s / 10 s / 2 s) and the Lease the
    holder is published as (whose namespace/name also names the election key)."""

    #: How long a standby waits for a silent leader before it takes over.
    lease_duration: float = 15.0
    #: How long the leader keeps retrying a failing renewal before it steps down.
    renew_deadline: float = 10.0
    #: Pause between campaign attempts and between renewals.
    retry_period: float = 2.0
    #: The coordination.k8s.io/v1 Lease's name (one per deployment).
    lease_name: str = "kube-scheduler"
    #: The Lease's namespace.
    lease_namespace: str = "kube-system"

    def __post_init__(self) -> None:
        check_timings(self.lease_duration, self.renew_deadline, self.retry_period)

    def with_timings(self, overrides: TimingOverrides) -> LeaderElectionSettings:
        """These settings with the timings `overrides` sets (checked together again)."""
        given = overrides.given()
        return dataclasses.replace(self, **given) if given else self  # type: ignore[arg-type]

    def elector_config(self, *, identity: str, key: str) -> LeaderElectionConfig:
        """The elector's config for the candidate `identity` campaigning on `key`."""
        return LeaderElectionConfig(
            lease_duration=self.lease_duration,
            renew_deadline=self.renew_deadline,
            retry_period=self.retry_period,
            identity=identity,
            key=key,
            lease_name=self.lease_name,
            lease_namespace=self.lease_namespace,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TimingOverrides:
    """The `--leader-elect-*` flags (seconds); None keeps the configuration's value."""

    lease_duration: float | None = None
    renew_deadline: float | None = None
    retry_period: float | None = None

    def given(self) -> dict[str, float]:
        """The timings that are set, by field name."""
        return {
            f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None
        }

    def check(self) -> None:
        """Raise ValueError unless the set timings, with the defaults for the others, obey
        client-go's rules (the command line's check, before anything starts)."""
        LeaderElectionSettings().with_timings(self)
