"""The apiserver as a Ray actor (services/hosts/apiserver.py). Ray re-creates a killed one
(`max_restarts=-1`); the supervisor's `ensure_started(port)` starts it again."""

from typing import Any

import ray

from services.hosts.apiserver import ApiServerHost

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=-1, max_concurrency=10_000)


@ray.remote(**OPTIONS)
class ApiServerActor(ApiServerHost):
    pass
