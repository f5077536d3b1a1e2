"""NodeResourcesFit and NodeResourcesBalancedAllocation, laid out as upstream plugins/noderesources.

- fit.py: NodeResourcesFit (NAME, Args, new), its args validation and queueing hints;
- fits_request.py: what a node lacks for a request (upstream fitsRequest / Fits);
- strategies.py: Fit's LeastAllocated / MostAllocated / RequestedToCapacityRatio scoring;
- balanced_allocation.py: NodeResourcesBalancedAllocation (NAME, Args, new);
- resource_allocation.py: the per-node (allocatable, requested) gathering both plugins score
  from, from NodeInfos or from the snapshot's numpy arrays.

The registry imports fit and balanced_allocation directly. This package re-exports the names
callers used when both plugins lived in one module, so `noderesources.NAME` / `Args` / `new`
are still NodeResourcesFit's and the `*_balanced_allocation` names the other plugin's.
"""

from services.scheduler.plugins.noderesources.balanced_allocation import (
    NAME as BALANCED_ALLOCATION_NAME,
)
from services.scheduler.plugins.noderesources.balanced_allocation import (
    PRE_SCORE_STATE_KEY as BALANCED_PRE_SCORE_STATE_KEY,
)
from services.scheduler.plugins.noderesources.balanced_allocation import (
    BalancedAllocation,
    BalancedAllocationArgs,
    balanced_resource_score,
    balanced_resource_score_v,
)
from services.scheduler.plugins.noderesources.balanced_allocation import (
    new as new_balanced_allocation,
)
from services.scheduler.plugins.noderesources.fit import (
    MAX_RESOURCE_WEIGHT,
    NAME,
    PRE_FILTER_STATE_KEY,
    PRE_SCORE_STATE_KEY,
    Args,
    Fit,
    ScoringStrategy,
    have_any_requested_resources_increased,
    is_fit,
    is_schedulable_after_node_change,
    is_schedulable_after_pod_event,
    new,
    validate_fit_args,
)
from services.scheduler.plugins.noderesources.fits_request import (
    InsufficientResource,
    fits,
    fits_request,
    is_extended_resource_name,
)
from services.scheduler.plugins.noderesources.resource_allocation import (
    COL_CPU,
    COL_EPHEMERAL,
    COL_MEMORY,
    COL_PODS,
    ResourceSpec,
    allocatable_and_requested,
    pod_score_requests,
)
from services.scheduler.plugins.noderesources.strategies import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    STRATEGIES,
    Scorer,
    UtilizationShapePoint,
    broken_linear,
    least_requested_score,
    most_requested_score,
)

__all__ = [
    "BALANCED_ALLOCATION_NAME",
    "BALANCED_PRE_SCORE_STATE_KEY",
    "COL_CPU",
    "COL_EPHEMERAL",
    "COL_MEMORY",
    "COL_PODS",
    "LEAST_ALLOCATED",
    "MAX_CUSTOM_PRIORITY_SCORE",
    "MAX_RESOURCE_WEIGHT",
    "MAX_UTILIZATION",
    "MOST_ALLOCATED",
    "NAME",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "REQUESTED_TO_CAPACITY_RATIO",
    "STRATEGIES",
    "Args",
    "BalancedAllocation",
    "BalancedAllocationArgs",
    "Fit",
    "InsufficientResource",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "Scorer",
    "allocatable_and_requested",
    "balanced_resource_score",
    "balanced_resource_score_v",
    "broken_linear",
    "fits",
    "fits_request",
    "have_any_requested_resources_increased",
    "is_extended_resource_name",
    "is_fit",
    "is_schedulable_after_node_change",
    "is_schedulable_after_pod_event",
    "least_requested_score",
    "most_requested_score",
    "new",
    "new_balanced_allocation",
    "pod_score_requests",
    "validate_fit_args",
]
