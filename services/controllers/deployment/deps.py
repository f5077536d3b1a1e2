"""What the steps of a Deployment sync use (sync.py, rollout.py): the client, the clock,
the event recorder, the Deployment and ReplicaSet listers and the work queue.

The controller (controller.py) builds one and passes it to each step, so the steps
depend on these and not on the controller that calls them.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.client import Client, Informer
from services.clock import Clock
from services.controllers.events import EventRecorder
from services.controllers.workqueue import WorkQueue


@dataclass(frozen=True)
class Deps:
    """The dependencies of the sync steps; none of them keeps state of its own."""

    client: Client
    """Writes ReplicaSets (create, scale, delete) and Deployment annotations and status."""

    clock: Clock
    """Condition times and progress deadlines."""

    events: EventRecorder
    """ScalingReplicaSet and ReplicaSetCreateError Events."""

    deployments: Informer
    """The Deployment lister: what the cache holds (its store is read at each use, since
    a relist replaces it)."""

    replica_sets: Informer
    """The ReplicaSet lister (found again after an AlreadyExists on create)."""

    queue: WorkQueue[str]
    """The controller's queue of Deployment keys (a stuck rollout is looked at again
    when its progress deadline passes)."""


__all__ = ["Deps"]
