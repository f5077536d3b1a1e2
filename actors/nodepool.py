"""A node pool as a Ray actor (services/hosts/nodepool.py). Ray re-creates a killed one
(`max_restarts=-1`), on another node when its node died; the supervisor's
`ensure_started()` starts it again, and it takes its nodes and their pods over."""

from typing import Any

import ray

from actors.node import on_this_node
from services.hosts.nodepool import NodePoolHost, NodePoolHostConfig

#: Ray's typed overloads of ray.remote omit max_concurrency, an actor option.
OPTIONS: dict[str, Any] = dict(max_restarts=-1, max_concurrency=1000)


@ray.remote(**OPTIONS)
class NodePoolActor(NodePoolHost):
    def __init__(self, config: NodePoolHostConfig) -> None:
        super().__init__(on_this_node(config))
