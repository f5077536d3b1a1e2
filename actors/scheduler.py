"""A kube-scheduler replica as a Ray actor (services/hosts/scheduler.py). Ray re-creates a
killed one (`max_restarts=-1`); the supervisor's `ensure_started()` starts it again."""

from typing import Any

import ray

from actors.node import on_this_node
from services.hosts.scheduler import SchedulerReplica, SchedulerReplicaConfig

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=-1, max_concurrency=1000)


@ray.remote(**OPTIONS)
class SchedulerActor(SchedulerReplica):
    gc_tuned = True  # the actor's process is the scheduler's own

    def __init__(self, config: SchedulerReplicaConfig) -> None:
        super().__init__(on_this_node(config))
