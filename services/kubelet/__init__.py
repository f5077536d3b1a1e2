"""The hollow kubelet: pod stages, per-pod usage model and the node-pressure eviction manager.

Public API (other components and the layers above import these from this package): the
node pool `NodePool(client, PoolConfig(...))` and its gRPC edge `serve`; node templates
(`NodeTemplate`, `load_template`, `default_template`, `plan_nodes`); and the eviction
settings `EvictionConfig` (the KubeletConfiguration eviction keys).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.kubelet.eviction import EvictionConfig
    from services.kubelet.pool import NodePool, PoolConfig
    from services.kubelet.server import serve
    from services.kubelet.template import (
        NodeTemplate,
        default_template,
        load_template,
        plan_nodes,
    )

__all__ = [
    "EvictionConfig",
    "NodePool",
    "NodeTemplate",
    "PoolConfig",
    "default_template",
    "load_template",
    "plan_nodes",
    "serve",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "EvictionConfig": "services.kubelet.eviction",
        "NodePool": "services.kubelet.pool",
        "PoolConfig": "services.kubelet.pool",
        "serve": "services.kubelet.server",
        "NodeTemplate": "services.kubelet.template",
        "default_template": "services.kubelet.template",
        "load_template": "services.kubelet.template",
        "plan_nodes": "services.kubelet.template",
    },
)
