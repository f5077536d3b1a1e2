"""DynamicResources, laid out as upstream plugins/dynamicresources:

- plugin.py: the plugin (NAME, Args, new) at every extension point it extends, with its
  queueing hints;
- scoring.py: Score's points for the prioritized-list alternatives a node got;
- bindclaim.py and bindingconditions.py: PreBind's claim write, and its wait for the
  devices' binding conditions;
- tracker.py: which devices are taken, including the allocations this scheduler made that
  the informer does not show yet (upstream dra_manager's assume cache and in-flight map).
"""

from services.scheduler.plugins.dynamicresources.plugin import (
    ERR_CANNOT_ALLOCATE,
    FINALIZER,
    NAME,
    Args,
    DynamicResources,
    new,
)
from services.scheduler.plugins.dynamicresources.tracker import ClaimTracker

__all__ = [
    "ERR_CANNOT_ALLOCATE",
    "FINALIZER",
    "NAME",
    "Args",
    "ClaimTracker",
    "DynamicResources",
    "new",
]
