"""Topology constraints of a PodGroup (scheduling.k8s.io/v1beta1
`spec.schedulingConstraints.topology`, upstream 1.37's TopologyAwareWorkloadScheduling):
every pod of the group in one domain of a node label.

Upstream places the whole group in its pod-group scheduling cycle, trying the domains of
the key (its placement plugins score whole placements). kubera schedules pod by pod
(GangScheduling's Permit holds the quorum), so the domain is fixed by the group's first
placed pod: PreFilter narrows every later pod to the nodes whose label equals that pod's
node's, and the first pod to the nodes that carry the label at all. A domain too small for
the whole gang shows as the gang's Permit timeout, after which the group is tried afresh.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import NodeInfo

ERR_NO_KEY = "node(s) didn't have the pod group's topology key {key}"
ERR_OUTSIDE = "node(s) were outside the pod group's topology domain {key}={value}"


def group_domain(
    key: str, placed_on: Iterable[str], labels_of: Mapping[str, Mapping[str, str]]
) -> str | None:
    """The domain (label value) of the first of `placed_on` whose node has `key`."""
    for node in sorted(placed_on):
        value = labels_of.get(node, {}).get(key)
        if value is not None:
            return value
    return None


def domain_nodes(
    key: str, value: str | None, nodes: Sequence[NodeInfo], *, plugin: str
) -> tuple[PreFilterResult | None, Status]:
    """The nodes a pod of the group may go to: those with `key` (= `value` once the group
    has a domain); an unresolvable status when there is none."""
    names = frozenset(
        n.name
        for n in nodes
        if n.node is not None
        and key in n.node.metadata.labels
        and (value is None or n.node.metadata.labels[key] == value)
    )
    if names:
        return PreFilterResult(names), Status.success()
    why = ERR_NO_KEY.format(key=key) if value is None else ERR_OUTSIDE.format(key=key, value=value)
    return None, Status.unresolvable(why, plugin=plugin)
