"""A kube-controller-manager replica as a Ray actor (services/hosts/controllermanager.py).
Ray re-creates a killed one (`max_restarts=-1`); the supervisor's `ensure_started()` starts
it again."""

from typing import Any

import ray

from services.hosts.controllermanager import ControllerManagerReplica

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=-1, max_concurrency=1000)


@ray.remote(**OPTIONS)
class ControllerManagerActor(ControllerManagerReplica):
    pass
