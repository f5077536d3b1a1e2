"""NodeDeclaredFeatures: a pod goes only to nodes that declare (Node
`status.declaredFeatures`) every feature it needs.

Upstream plugins/nodedeclaredfeatures, behind the NodeDeclaredFeatures gate (alpha in 1.35,
off by default; services/api/features.py): with the gate off the plugin does nothing and
registers no events. PreFilter infers the pod's requirements from its spec
(services/api/nodedeclaredfeatures.py) and Skips when there are none, which with 1.35's
registry is every pod; Filter rejects a node lacking one as UnschedulableAndUnresolvable.
A node's declared features changing, or the pod's own requirements changing, requeue it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api import nodedeclaredfeatures as ndf
from services.api.nodedeclaredfeatures import (
    ALL_FEATURES,
    KUBERNETES_VERSION,
    Feature,
    Version,
    infer_for_pod_scheduling,
)
from services.scheduler.framework.interface import PreFilterResult
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    CycleState,
    NodeInfo,
    PodInfo,
    QueueingHint,
)
from services.scheduler.plugins.helpers import NODE, POD

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED_REQUIREMENTS = "node(s) didn't match Pod's required features"


@dataclass
class Args:
    """NodeDeclaredFeatures takes no arguments."""


class NodeDeclaredFeatures:
    """PreFilterPlugin, FilterPlugin, EnqueueExtensions."""

    name = NAME

    def __init__(
        self,
        *,
        enabled: bool,
        registry: Sequence[Feature] = ALL_FEATURES,
        version: Version | None = KUBERNETES_VERSION,
    ) -> None:
        self.enabled = enabled
        self._registry = tuple(registry)
        self._version = version

    def requirements(self, pod: core_pb2.Pod) -> frozenset[str]:
        return infer_for_pod_scheduling(pod.spec, self._version, self._registry)

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, Status.skip()
        try:
            reqs = self.requirements(pod_info.pod)
        except ValueError as e:
            return None, Status.as_error(e, NAME)
        if not reqs:
            return None, Status.skip()
        state.write(PRE_FILTER_STATE_KEY, reqs)
        return None, Status.success()

    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        if not self.enabled:
            return Status.success()
        reqs: frozenset[str] | None = state.get(PRE_FILTER_STATE_KEY)
        if reqs is None:
            return Status.as_error(
                KeyError(f"error reading {PRE_FILTER_STATE_KEY!r} from cycle-state: not found"),
                NAME,
            )
        node = node_info.node
        declared = set(node.status.declared_features) if node is not None else set()
        if reqs <= declared:
            return Status.success()
        return Status.unresolvable(ERR_REASON_UNSATISFIED_REQUIREMENTS, plugin=NAME)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        if not self.enabled:
            return []
        return [
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_DECLARED_FEATURE),
                is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE), self.after_pod_update),
        ]

    def after_pod_update(
        self, pod: core_pb2.Pod, old: core_pb2.Pod | None, new: core_pb2.Pod | None
    ) -> QueueingHint:
        """The pod itself changed what it needs (upstream's TargetPod update hint); an
        error inferring requeues it."""
        if old is None or new is None or new.metadata.uid != pod.metadata.uid:
            return QueueingHint.SKIP
        try:
            same = self.requirements(old) == self.requirements(new)
        except ValueError:
            return QueueingHint.QUEUE
        return QueueingHint.SKIP if same else QueueingHint.QUEUE


def is_schedulable_after_node_change(
    pod: core_pb2.Pod, old: core_pb2.Node | None, new: core_pb2.Node | None
) -> QueueingHint:
    """A new node, or one whose declared features changed."""
    if new is None:
        return QueueingHint.SKIP
    if old is not None and list(old.status.declared_features) == list(new.status.declared_features):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: Args | None, handle: Any) -> NodeDeclaredFeatures:
    gates = getattr(handle, "feature_gates", None)
    return NodeDeclaredFeatures(
        enabled=features.enabled(gates, features.NODE_DECLARED_FEATURES),
        registry=ndf.ALL_FEATURES,
    )
