"""kube-scheduler, rebuilt: queue, cache, framework and default plugins (asyncio, no Ray).

Public API (other components and the layers above import these from this package):
`Scheduler(client, SchedulerOptions(...))`, the shared-state (Omega) settings
`SharedState` / `Partition` and its `percentile`, `serve` (the scheduler's gRPC and
metrics edge), and `SchedulerMetrics` (a process's metrics, handed to each term's Scheduler),
`tune_gc` / `settle_gc` (the collector settings of a process that runs a scheduler,
gctune.py). KubeSchedulerConfiguration loading is its own public package,
services/scheduler/config.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from services.exports import lazy_exports

if TYPE_CHECKING:
    from services.scheduler.gctune import settle_gc, tune_gc
    from services.scheduler.metrics import SchedulerMetrics
    from services.scheduler.omega import Partition, SharedState, percentile
    from services.scheduler.options import SchedulerOptions
    from services.scheduler.scheduler import Scheduler
    from services.scheduler.server import SchedulerHost, serve

__all__ = [
    "Partition",
    "Scheduler",
    "SchedulerHost",
    "SchedulerMetrics",
    "SchedulerOptions",
    "SharedState",
    "percentile",
    "serve",
    "settle_gc",
    "tune_gc",
]

__getattr__ = lazy_exports(
    __name__,
    {
        "Partition": "services.scheduler.omega",
        "SharedState": "services.scheduler.omega",
        "percentile": "services.scheduler.omega",
        "SchedulerOptions": "services.scheduler.options",
        "Scheduler": "services.scheduler.scheduler",
        "SchedulerHost": "services.scheduler.server",
        "SchedulerMetrics": "services.scheduler.metrics",
        "serve": "services.scheduler.server",
        "settle_gc": "services.scheduler.gctune",
        "tune_gc": "services.scheduler.gctune",
    },
)
