"""What a Scheduler is built from (upstream cmd/kube-scheduler/app/options.Options): the loaded
KubeSchedulerConfiguration plus the settings of this one scheduler process.

`Scheduler(client, options)`; the defaults are those of a single kube-scheduler leader.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from services.scheduler.config import SchedulerConfiguration
from services.scheduler.omega import SharedState


@dataclass
class SchedulerOptions:
    """Settings of one Scheduler. The clock and the fencing-token source are dependencies,
    not settings: they are keyword arguments of `Scheduler` itself."""

    #: The loaded KubeSchedulerConfiguration (profiles and their plugins, backoff,
    #: percentageOfNodesToScore); None: the default configuration (config.default_config()).
    component_config: SchedulerConfiguration | None = None
    #: Seed of the tie-break between equally scored nodes; None: a random seed.
    seed: int | None = None
    #: Who this scheduler is in the events it writes (reportingInstance); "": a random
    #: "kubera-scheduler-xxxxxx".
    identity: str = ""
    #: Binding cycles in flight at most; the scheduling loop waits for a slot beyond that.
    max_binding_tasks: int = 256
    #: Reuse Filter verdicts across equivalent pods (cache/equivalence.py) while a node is unchanged.
    reuse_filter_results: bool = True
    #: Run as one of several active replicas (Omega, omega.py): take only this replica's share
    #: of the pods and bind with check_allocation instead of a fencing token. None: the one
    #: (leader) scheduler.
    shared_state: SharedState | None = None
    #: Feature gate overrides (services/api/features.py; upstream's --feature-gates): the
    #: scheduler reads OpportunisticBatching and NominatedNodeNameForExpectation.
    feature_gates: dict[str, bool] = field(default_factory=dict)
