"""The apiserver as a Ray actor (services/hosts/apiserver.py). Ray re-creates a killed one
(`max_restarts=-1`); the supervisor's `ensure_started(port)` starts it again, on the same
node's address and port when it comes back on the same node."""

from typing import Any

import ray

from actors.node import on_this_node
from services.hosts.apiserver import ApiServerHost, ApiServerHostConfig

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=-1, max_concurrency=10_000)


@ray.remote(**OPTIONS)
class ApiServerActor(ApiServerHost):
    def __init__(self, config: ApiServerHostConfig) -> None:
        super().__init__(on_this_node(config))
