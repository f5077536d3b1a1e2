"""PodTopologySpread's Filter (upstream podtopologyspread/filtering.go): DoNotSchedule
constraints only.

    skew = count(node's domain) + (1 if the pod matches the selector) - global minimum

where the global minimum is the smallest count over eligible domains, or 0 when there are
fewer eligible domains than minDomains (default 1). skew > maxSkew: Unschedulable "node(s)
didn't match pod topology spread constraints"; a node without the topology key:
UnschedulableAndUnresolvable "... (missing required label)".

PreFilter counts the matching pods per eligible domain once per cycle (`PreFilterState`);
AddPod / RemovePod (preemption's what-if) update the counts.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import NodeInfo, PodInfo
from services.scheduler.plugins.podtopologyspread.common import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    Constraint,
    NodeEligibility,
    keys_present,
)


class PreFilterState:
    """Per hard constraint: domain value -> matching pods (every eligible domain present, 0
    included); the global minimum cached until the counts change."""

    __slots__ = ("constraints", "counts", "_min", "eligibility")

    def __init__(self, constraints: list[Constraint], eligibility: NodeEligibility | None) -> None:
        self.constraints = constraints
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self._min: list[int | None] = [None] * len(constraints)
        self.eligibility = eligibility

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.constraints, self.eligibility)
        c.counts = [dict(m) for m in self.counts]
        c._min = list(self._min)
        return c

    def min_match(self, i: int) -> int:
        """The global minimum, 0 when fewer eligible domains than minDomains."""
        counts = self.counts[i]
        if len(counts) < self.constraints[i].min_domains:
            return 0
        m = self._min[i]
        if m is None:
            m = self._min[i] = min(counts.values())
        return m

    def update_with_pod(
        self, other: core_pb2.Pod, incoming: core_pb2.Pod, node: core_pb2.Node, delta: int
    ) -> None:
        if other.metadata.namespace != incoming.metadata.namespace:
            return
        labels = node.metadata.labels
        if not keys_present(labels, self.constraints):
            return
        for i, c in enumerate(self.constraints):
            if not c.counts(other, incoming.metadata.namespace):
                continue
            if self.eligibility is not None and not self.eligibility.ok(c, node):
                continue
            value = labels[c.topology_key]
            self.counts[i][value] = self.counts[i].get(value, 0) + delta
            self._min[i] = None


def pre_filter_state(
    constraints: list[Constraint], pod: core_pb2.Pod, nodes: Sequence[NodeInfo]
) -> PreFilterState:
    """The hard constraints' counts over `nodes` (every node of the cycle)."""
    eligibility = NodeEligibility(pod)
    s = PreFilterState(constraints, eligibility)
    namespace = pod.metadata.namespace
    for ni in nodes:
        node = ni.node
        if node is None:
            continue
        labels = node.metadata.labels
        if not keys_present(labels, constraints):
            continue
        for i, c in enumerate(constraints):
            if not eligibility.ok(c, node):
                continue
            value = labels[c.topology_key]
            n = sum(1 for p in ni.pods if c.counts(p.pod, namespace))
            s.counts[i][value] = s.counts[i].get(value, 0) + n
    return s


def filter_node(s: PreFilterState, pod_info: PodInfo, node: core_pb2.Node) -> Status:
    """Whether placing the pod on `node` keeps every hard constraint's skew <= maxSkew."""
    labels = node.metadata.labels
    pod_labels = pod_info.pod.metadata.labels
    for i, c in enumerate(s.constraints):
        value = labels.get(c.topology_key)
        if value is None:
            return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
        self_match = 1 if c.selector.matches(pod_labels) else 0
        skew = s.counts[i].get(value, 0) + self_match - s.min_match(i)
        if skew > c.max_skew:
            return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
    return Status.success()
