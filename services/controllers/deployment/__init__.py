"""The Deployment controller (upstream pkg/controller/deployment): see controller.py for
the design, and the steps it composes (sync, rollout) over a `Deps` (deps.py)."""

from services.controllers.deployment.controller import (
    MAX_RETRIES,
    DeploymentConfig,
    DeploymentController,
)

__all__ = ["MAX_RETRIES", "DeploymentConfig", "DeploymentController"]
