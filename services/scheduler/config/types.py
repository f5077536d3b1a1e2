"""The configuration as plain data: what the scheduler and the framework consume.

Why it exists: everything else in the package produces or reads these classes
(SchedulerConfiguration, Profile, LeaderElectionConfiguration, ConfigError); keeping them together and
free of parsing logic shows the result of loading at a glance. `EnabledPlugin` is defined in
`plugins` (the merge produces it) and only used here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from services.api.machinery.errors import FieldError
from services.leaderelection import LeaseTimings
from services.scheduler import registry as reg
from services.scheduler.config.defaults import (
    DEFAULT_SCHEDULER_NAME,
    SCHEDULER_PLUGINS_SCHEDULER_NAME,
)
from services.scheduler.config.plugins import (
    DEFAULT_RESOLVED,
    SCHEDULER_PLUGINS_RESOLVED,
    EnabledPlugin,
)
from services.scheduler.framework.interface import PluginSpec

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"


class ConfigError(ValueError):
    """An invalid configuration; `errors` are the field errors, all of them."""

    def __init__(self, errors: Sequence[FieldError | str]) -> None:
        self.errors = [str(e) for e in errors]
        super().__init__("invalid KubeSchedulerConfiguration: " + "; ".join(self.errors))


@dataclass
class LeaderElectionConfiguration:
    """componentbaseconfig.LeaderElectionConfiguration (durations in seconds)."""

    #: Whether to run leader election at all (one replica may run without it).
    leader_elect: bool = True
    #: leaseDuration / renewDeadline / retryPeriod (validated only when leader_elect, as
    #: upstream; a replica that does not elect keeps the defaults for timings it cannot hold).
    timings: LeaseTimings = LeaseTimings()
    #: The lock object's type; only "leases" is supported (as upstream today).
    resource_lock: str = "leases"
    #: The Lease's name.
    resource_name: str = "kube-scheduler"
    #: The Lease's namespace.
    resource_namespace: str = "kube-system"


def _default_plugins(
    resolved: dict[str, list[EnabledPlugin]] = DEFAULT_RESOLVED,
) -> dict[str, list[EnabledPlugin]]:
    return {point: list(plugins) for point, plugins in resolved.items()}


@dataclass
class Profile:
    """One KubeSchedulerProfile: a framework of its own, chosen by pods' spec.schedulerName."""

    #: The spec.schedulerName of the pods this profile schedules.
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    #: Extension point (registry.EXTENSION_POINTS, camelCase as in the YAML) -> the plugins
    #: run there, in order, with their score weights.
    plugins: dict[str, list[EnabledPlugin]] = field(default_factory=_default_plugins)
    #: Plugin name -> its args (typed Args, or a dict when the plugin module is missing).
    #: Only plugins configured in pluginConfig appear; the framework defaults the others.
    plugin_config: dict[str, Any] = field(default_factory=dict)
    #: This profile's percentageOfNodesToScore; None: the global value.
    percentage_of_nodes_to_score: int | None = None

    def names(self, point: str) -> list[str]:
        """The plugin names enabled at `point`, in order."""
        return [p.name for p in self.plugins.get(point, ())]

    def score_weights(self) -> dict[str, int]:
        return {p.name: p.weight for p in self.plugins.get(reg.SCORE, ())}


@dataclass
class SchedulerConfiguration:
    """KubeSchedulerConfiguration: what kube-scheduler reads from --config."""

    #: One per schedulerName; pods naming another schedulerName are left alone.
    profiles: list[Profile] = field(default_factory=lambda: [Profile()])
    #: Global percentageOfNodesToScore; None (or 0): adaptive (50% - nodes/125, at least 5%).
    percentage_of_nodes_to_score: int | None = None
    #: The first backoff of an unschedulable pod, doubled per attempt.
    pod_initial_backoff_seconds: float = 1
    #: The backoff's ceiling.
    pod_max_backoff_seconds: float = 10
    #: How many nodes are filtered/scored concurrently (upstream's parallelizer width).
    parallelism: int = 16
    #: The leader election's settings.
    leader_election: LeaderElectionConfiguration = field(
        default_factory=LeaderElectionConfiguration
    )
    #: Out-of-tree plugins loaded from `outOfTreePlugins`, by NAME; merge them with
    #: registry.in_tree_registry() to build frameworks (see `registry()`).
    out_of_tree_plugins: dict[str, PluginSpec] = field(default_factory=dict)

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

    def percentage_for(self, profile: Profile) -> int | None:
        """The profile's percentageOfNodesToScore when set, else the global one."""
        if profile.percentage_of_nodes_to_score is not None:
            return profile.percentage_of_nodes_to_score
        return self.percentage_of_nodes_to_score

    def registry(self) -> dict[str, PluginSpec]:
        """Every plugin these profiles may use: in-tree (imported now) and out-of-tree."""
        return reg.merged(reg.in_tree_registry(), self.out_of_tree_plugins)


def default_config() -> SchedulerConfiguration:
    """The configuration kubera's scheduler runs with when given none: upstream's default
    profile, and scheduler-plugins' scheduler as a second profile (Coscheduling, for gangs
    whose pods name it). A configuration file replaces both; one without `profiles` gets
    upstream's default profile alone, as kube-scheduler's would."""
    return SchedulerConfiguration(
        profiles=[
            Profile(),
            Profile(
                scheduler_name=SCHEDULER_PLUGINS_SCHEDULER_NAME,
                plugins=_default_plugins(SCHEDULER_PLUGINS_RESOLVED),
            ),
        ]
    )
