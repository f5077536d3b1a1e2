"""Feature gates: upstream's names for features that change API fields or behaviour, with
upstream's defaults at the newest version kubera follows (pkg/features/kube_features.go).

kubera has one set of gates for the whole control plane (upstream sets them per
component; they must agree anyway). A gate is looked up with `enabled(gates, NAME)`;
`gates` is a mapping of overrides over DEFAULTS (an empty mapping: the defaults).

Nothing sets them on a running cluster yet: the control plane runs with DEFAULTS. The
allocator takes overrides (upstream's `structured.Features`; its tests turn gates off) and
then ignores what a disabled feature would need. Unlike upstream's strategies, the
apiserver does not drop a disabled feature's fields (docs/differences.md).
"""

from __future__ import annotations

from collections.abc import Mapping

#: dracounters: ResourceSlice sharedCounters, Device consumesCounters and per-device node
#: selection (alpha 1.33, beta and on by default since 1.36).
DRA_PARTITIONABLE_DEVICES = "DRAPartitionableDevices"
#: dracounters: Device allowMultipleAllocations, capacity requestPolicy, request
#: capacity, distinctAttribute constraints (alpha 1.34, beta and on by default since 1.36).
DRA_CONSUMABLE_CAPACITY = "DRAConsumableCapacity"

DEFAULTS: dict[str, bool] = {
    DRA_PARTITIONABLE_DEVICES: True,
    DRA_CONSUMABLE_CAPACITY: True,
}

FeatureGates = Mapping[str, bool]


def enabled(gates: FeatureGates | None, name: str) -> bool:
    """Whether the gate `name` is on: its override in `gates`, else its default."""
    if gates is not None and name in gates:
        return gates[name]
    return DEFAULTS[name]
