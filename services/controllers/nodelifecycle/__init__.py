"""The node lifecycle controller (upstream pkg/controller/nodelifecycle): see controller.py
for the loops, and the parts it composes (config, health, zones, ratelimit, taints)."""

from services.controllers.nodelifecycle.config import NodeLifecycleConfig
from services.controllers.nodelifecycle.controller import NodeLifecycleController

__all__ = ["NodeLifecycleConfig", "NodeLifecycleController"]
