"""A deployment's leader-election settings: the one shape every layer passes around.

The `kubera up --leader-elect-*` flags, a KubeSchedulerConfiguration's `leaderElection`
block (its timings and resourceName/resourceNamespace) and the controller-manager's
election all end up as a `LeaderElectionSettings`; a replica turns it, once, into the
elector's `LeaderElectionConfig` with its own identity and election key
(`elector_config`). The flags may leave any timing unset (`TimingOverrides`): an unset one
keeps the configuration's value. The timings are a `LeaseTimings` (timings.py), checked by
client-go's rules when built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from services.leaderelection.config import LeaderElectionConfig
from services.leaderelection.timings import LeaseTimings, TimingOverrides


@dataclass(frozen=True, slots=True, kw_only=True)
class LeaderElectionSettings:
    """The timings (kube-scheduler's defaults: 15 s / 10 s / 2 s) and the Lease the holder is
    published as (whose namespace/name also names the election key)."""

    #: lease_duration / renew_deadline / retry_period.
    timings: LeaseTimings = LeaseTimings()
    #: The coordination.k8s.io/v1 Lease's name (one per deployment).
    lease_name: str = "kube-scheduler"
    #: The Lease's namespace.
    lease_namespace: str = "kube-system"

    def __post_init__(self) -> None:
        for name in ("lease_name", "lease_namespace"):
            if not getattr(self, name):
                raise ValueError(f"{name} must not be empty")

    def with_timings(self, overrides: TimingOverrides) -> LeaderElectionSettings:
        """These settings with the timings `overrides` sets (checked together again)."""
        return dataclasses.replace(self, timings=self.timings.with_overrides(overrides))

    def elector_config(self, *, identity: str, key: str) -> LeaderElectionConfig:
        """The elector's config for the candidate `identity` campaigning on `key`."""
        return LeaderElectionConfig(timings=self.timings, identity=identity, key=key)
