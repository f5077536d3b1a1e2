"""Controllers of kube-controller-manager, as plain asyncio classes.

Other components use the controller-manager through this package:
`ControllerManager(client, ControllerManagerConfig(...))`, then `start()` / `stop()`
(manager.py). Inside it:

    manager.py           ControllerManager and its config: the controllers over one set
                         of shared informers
    replicaset.py        ReplicaSet controller
    deployment/          Deployment controller: controller.py (config, handlers, sync) and
                         the steps it composes over a Deps (sync.py, rollout.py), with the
                         pure rules in util.py and conditions.py
    nodelifecycle/       node lifecycle controller: controller.py (the loops) composing
                         HealthTracker (health.py), Zones (zones.py), the tainting rate
                         limit (ratelimit.py) and the taint writes (taints.py)
    tainteviction.py     taint eviction controller
    disruption.py        disruption controller: PodDisruptionBudget status
    podgc.py             pod garbage collector
    resourceclaim.py     resourceclaim controller: claims from ResourceClaimTemplates for
                         pods, reservations and claims of finished pods cleaned up
    garbagecollector.py  garbage collector: ownerReferences, background / foreground /
                         orphan propagation over every kind
    resourcequota.py     resource quota controller: ResourceQuota status.hard and status.used
    workqueue.py         the rate-limited work queue, run_worker and run_workers
    controller_utils.py  shared pod and owner helpers, indexes, slow start, waits; and, split
                         along what they need, expectations.py, ref_manager.py (adoption),
                         ranking.py (deletion order) and events.py (the event recorder)
"""

from services.controllers.manager import (
    ALL_CONTROLLERS,
    ControllerManager,
    ControllerManagerConfig,
    select_controllers,
)

__all__ = ["ALL_CONTROLLERS", "ControllerManager", "ControllerManagerConfig", "select_controllers"]
