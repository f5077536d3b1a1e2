"""GangScheduling plugin package: the plugin (plugin.py) and its pod group bookkeeping
(workloadmanager.py). The registry imports NAME, Args and new from here."""

from services.scheduler.plugins.gangscheduling.plugin import NAME, Args, GangScheduling, new
from services.scheduler.plugins.gangscheduling.workloadmanager import (
    DEFAULT_SCHEDULING_TIMEOUT,
    PodGroupInfo,
    PodGroupKey,
    WorkloadManager,
)

__all__ = [
    "DEFAULT_SCHEDULING_TIMEOUT",
    "NAME",
    "Args",
    "GangScheduling",
    "PodGroupInfo",
    "PodGroupKey",
    "WorkloadManager",
    "new",
]
