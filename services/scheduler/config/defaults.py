"""The v1 defaults that need nothing else: the default scheduler name, the default profile's
multiPoint plugin list, kubera's second default profile (scheduler-plugins' scheduler), and
how many feasible nodes to find (percentageOfNodesToScore).

Why it exists: these are upstream's apis/config/v1 defaults as plain values. They sit at the
bottom of the package so that `plugins` (which merges a profile's sets over the default list)
and `types` (whose Profile starts from the resolved defaults) can both import them.
`default_config()` lives in `types`, next to the class it builds, because SchedulerConfiguration
itself needs the resolved defaults from `plugins`.
"""

from __future__ import annotations

DEFAULT_SCHEDULER_NAME = "default-scheduler"
#: schedule_one.go: below this many nodes every node is checked, and never fewer are found.
MIN_FEASIBLE_NODES_TO_FIND = 100
#: ... and the adaptive percentage never drops below this.
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5

#: The v1 default profile's multiPoint list, in upstream's order (1.34 default_plugins.go;
#: ImageLocality is not part of kubera yet; the volume plugins sit where upstream has
#: them: VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone after
#: NodeResourcesFit, before PodTopologySpread): SchedulingGates first,
#: and DynamicResources right before DefaultPreemption, where applyFeatureGates puts it
#: (DRA is GA and on by default): deallocating an idle claim comes before evicting a pod.
DEFAULT_MULTI_POINT: tuple[str, ...] = (
    "SchedulingGates",
    "PrioritySort",
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "DefaultPreemption",
    "NodeResourcesBalancedAllocation",
    "DefaultBinder",
)

#: The second profile of kubera's default configuration (types.default_config): the
#: scheduler scheduler-plugins installs beside the default one (its Helm chart's
#: scheduler.name), for the pods of a Coscheduling gang (spec.schedulerName).
SCHEDULER_PLUGINS_SCHEDULER_NAME = "scheduler-plugins-scheduler"

#: That profile's `plugins:` block, as a KubeSchedulerConfiguration writes it: the default
#: plugins plus Coscheduling at every point it extends (the chart's `multiPoint`), except
#: QueueSort. scheduler-plugins' sample config sorts with Coscheduling's QueueSort, but it
#: runs as a scheduler of its own; in one scheduler every profile must share the queue sort
#: plugin (upstream validateCommonQueueSort), so this profile keeps PrioritySort.
SCHEDULER_PLUGINS_PROFILE_PLUGINS: dict[str, dict[str, list[dict[str, str]]]] = {
    "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
    "queueSort": {"disabled": [{"name": "Coscheduling"}]},
}


def num_feasible_nodes_to_find(percentage: int | None, num_all_nodes: int) -> int:
    """How many feasible nodes to find before scoring (schedule_one.go numFeasibleNodesToFind).

    Fewer than 100 nodes: all. percentage None/0: adaptive, 50 - nodes/125 (integer
    division) but at least 5. Never fewer than 100 nodes; 100% or more: all."""
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return num_all_nodes
    if not percentage:
        percentage = max(50 - num_all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    if percentage >= 100:
        return num_all_nodes
    num = num_all_nodes * percentage // 100
    return max(num, MIN_FEASIBLE_NODES_TO_FIND)
