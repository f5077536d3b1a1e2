"""VolumeBinding, laid out as upstream plugins/volumebinding:

- plugin.py: the plugin (NAME, Args, new) at every extension point it extends, its scorer
  and its queueing hints (volume_binding.go, scorer.go);
- binder.py: which claims a node can satisfy, and the writes that bind them (binder.go);
- assume_cache.py: the informer's volumes and claims with this scheduler's choices not
  yet written (assume_cache.go);
- csimigration.py: an in-tree volume's zone in its CSI driver's terms, on nodes that
  migrated its plugin.
"""

from services.scheduler.plugins.volumebinding.binder import (
    ERR_REASON_BIND_CONFLICT,
    ERR_REASON_NODE_CONFLICT,
    ERR_REASON_NOT_ENOUGH_SPACE,
    ERR_REASON_PV_NOT_EXIST,
    BindingInfo,
    DynamicProvision,
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
)
from services.scheduler.plugins.volumebinding.plugin import (
    ERR_UNBOUND_IMMEDIATE,
    NAME,
    Args,
    UtilizationShapePoint,
    VolumeBinding,
    build_scorer,
    new,
)

__all__ = [
    "ERR_REASON_BIND_CONFLICT",
    "ERR_REASON_NODE_CONFLICT",
    "ERR_REASON_NOT_ENOUGH_SPACE",
    "ERR_REASON_PV_NOT_EXIST",
    "ERR_UNBOUND_IMMEDIATE",
    "NAME",
    "Args",
    "BindingInfo",
    "DynamicProvision",
    "PodVolumeClaims",
    "PodVolumes",
    "UtilizationShapePoint",
    "VolumeBinder",
    "VolumeBinding",
    "build_scorer",
    "new",
]
