"""A node pool as a Ray actor (services/hosts/nodepool.py); not restarted when killed."""

from typing import Any

import ray

from services.hosts.nodepool import NodePoolHost

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=0, max_concurrency=1000)


@ray.remote(**OPTIONS)
class NodePoolActor(NodePoolHost):
    pass
