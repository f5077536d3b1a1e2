"""VolumeBinding: a pod's PersistentVolumeClaims are bound before the pod is (upstream
plugins/volumebinding/volume_binding.go; the binder in binder.py).

    PreFilter  every claim the pod names exists, is not Lost or being deleted (an
               ephemeral volume's claim is the pod's); Skip without claims; unbound claims
               of an Immediate class: UnschedulableAndUnresolvable "pod has unbound
               immediate PersistentVolumeClaims" (the PV controller binds them, and their
               update requeues the pod)
    Filter     bound volumes' node affinity; each WaitForFirstConsumer claim a static
               volume on the node, else provisionable there (class allowedTopologies,
               CSIStorageCapacity when the CSIDriver opts in)
    Score      StorageCapacityScoring (on by default upstream since 1.37): the node's
               storage utilisation per class through the args' shape (default: 0% -> 10,
               100% -> 0, so the emptiest storage wins); static volumes when the node has
               them, else the provisioning capacity
    Reserve    the choice assumed in the assume caches (the next pods see it taken)
    Unreserve  the assumed objects restored
    PreBind    the writes (volume claimRef, claim `volume.kubernetes.io/selected-node`)
               through the scheduler's client, so a fenced leader's writes carry its
               token, then a wait of up to bindTimeoutSeconds for the PV controller

Every Filter rejection is UnschedulableAndUnresolvable, as upstream's: preemption never
frees a volume.

Differences from upstream: PreScore skips a pod without claims (upstream scores every node
0 for it when the gate is on: the same ranking); PreBind's first check of the binding comes
after one poll interval, as upstream's, and the node it checks against is the scheduler's
snapshot's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.helpers.csimigration import MIGRATED_PLUGINS_ANNOTATION
from services.api.helpers.podvolumes import ephemeral_claim_not_for_pod, pod_claim_names
from services.api.helpers.volumes import storage_quantity
from services.api.machinery.quantity import parse_quantity
from services.scheduler.framework.interface import MAX_NODE_SCORE, PreFilterResult
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
from services.scheduler.plugins.helpers import broken_linear, go_div, go_round_div
from services.scheduler.plugins.volumebinding.binder import (
    PodVolumeClaims,
    PodVolumes,
    VolumeBinder,
    volume_limit,
)
from services.scheduler.volumelisters import (
    VOLUME_BINDING_KINDS,
    VolumeListers,
    after_claim_event,
    volume_listers,
)

NAME = "VolumeBinding"
STATE_KEY = NAME
DEFAULT_BIND_TIMEOUT_SECONDS = 600
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100
ERR_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass
class UtilizationShapePoint:
    utilization: int
    score: int


def _default_shape() -> list[UtilizationShapePoint]:
    """SetDefaults_VolumeBindingArgs with StorageCapacityScoring on."""
    return [UtilizationShapePoint(0, MAX_CUSTOM_PRIORITY_SCORE), UtilizationShapePoint(100, 0)]


@dataclass
class Args:
    """VolumeBindingArgs (kubescheduler.config.k8s.io/v1)."""

    #: bindTimeoutSeconds: how long PreBind waits for the PV controller (0: not at all).
    bind_timeout_seconds: int = DEFAULT_BIND_TIMEOUT_SECONDS
    #: shape: utilization (0..100) -> score (0..10) points of the storage capacity score.
    shape: list[UtilizationShapePoint] = field(default_factory=_default_shape)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> Args:
        d = d or {}
        unknown = set(d) - {"bindTimeoutSeconds", "shape"}
        if unknown:
            raise ValueError(f"unknown field(s) {sorted(unknown)}")
        timeout = d.get("bindTimeoutSeconds")  # explicit 0 stays 0 (a *int64 upstream)
        shape = [UtilizationShapePoint(p["utilization"], p["score"]) for p in d.get("shape") or []]
        return cls(
            DEFAULT_BIND_TIMEOUT_SECONDS if timeout is None else int(timeout),
            shape or _default_shape(),
        )


def build_scorer(shape: Sequence[UtilizationShapePoint]) -> Any:
    """buildScorerFunction: the mean over classes of shape(requested / capacity), 100%
    when the class has no capacity or less than requested."""
    points = [
        (p.utilization, p.score * (MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE)) for p in shape
    ]

    def per_class(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return broken_linear(points, MAX_UTILIZATION)
        return broken_linear(points, go_div(requested * MAX_UTILIZATION, capacity))

    def score(classes: Mapping[str, tuple[int, int]]) -> int:
        if not classes:
            return 0
        total = sum(per_class(r, c) for r, c in classes.values())
        return go_round_div(total, len(classes))

    return score


@dataclass
class _State:
    """One attempt's claims (None: the pod has none) and Filter's result per node. Shared,
    not copied, by CycleState.clone (upstream stateData.Clone returns itself)."""

    claims: PodVolumeClaims | None = None
    by_node: dict[str, PodVolumes | None] = field(default_factory=dict)
    has_static_bindings: bool = False
    all_bound: bool = False

    def clone(self) -> _State:
        return self


class VolumeBinding:
    """PreFilter, Filter, PreScore, Score, Reserve, PreBind and EnqueueExtensions."""

    name = NAME

    def __init__(
        self,
        args: Args,
        binder: VolumeBinder,
        *,
        storage_capacity_scoring: bool = True,
    ) -> None:
        """`binder`: the volume binder over the listers (PreFilter's checks read the
        informer's claims, not the assume cache's)."""
        self.args = args
        self.binder = binder
        self._capacity_scoring = storage_capacity_scoring
        self._scorer = build_scorer(args.shape) if storage_capacity_scoring else None

    # ----------------------------------------------------------- PreFilter
    def _pod_claims_problem(self, pod: core_pb2.Pod) -> tuple[bool, str]:
        """podHasPVCs: (whether the pod names claims, why it cannot be scheduled now)."""
        has = False
        for name, ephemeral in pod_claim_names(pod):
            has = True
            pvc = self.binder.listers.pvcs.get(f"{pod.metadata.namespace}/{name}")
            if pvc is None:
                if ephemeral:
                    return has, (
                        "waiting for ephemeral volume controller to create the "
                        f'persistentvolumeclaim "{name}"'
                    )
                return has, f'persistentvolumeclaim "{name}" not found'
            if pvc.status.phase == "Lost":
                return has, (
                    f'persistentvolumeclaim "{name}" bound to non-existent persistentvolume '
                    f'"{pvc.spec.volume_name}"'
                )
            if pvc.metadata.deletion_timestamp:
                return has, f'persistentvolumeclaim "{name}" is being deleted'
            if ephemeral:
                problem = ephemeral_claim_not_for_pod(pod, pvc)
                if problem:
                    return has, problem
        return has, ""

    def pre_filter(
        self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        pod = pod_info.pod
        has, problem = self._pod_claims_problem(pod)
        if problem:
            return None, Status.unresolvable(problem, plugin=NAME)
        if not has:
            state.write(STATE_KEY, _State())
            return None, Status.skip(NAME)
        try:
            claims = self.binder.get_pod_volume_claims(pod)
        except Exception as e:  # noqa: BLE001 - the attempt's error
            return None, Status.as_error(e, NAME)
        if claims.unbound_claims_immediate:
            return None, Status.unresolvable(ERR_UNBOUND_IMMEDIATE, plugin=NAME)
        state.write(STATE_KEY, _State(claims=claims))
        return None, Status.success()

    # -------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        node = node_info.node
        if s.claims is None or node is None:
            return Status.success()
        try:
            volumes, reasons = self.binder.find_pod_volumes(pod_info.pod, s.claims, node)
        except Exception as e:  # noqa: BLE001
            return Status.as_error(e, NAME)
        if reasons:
            return Status.unresolvable(*reasons, plugin=NAME)
        s.by_node[node.metadata.name] = volumes
        s.has_static_bindings = s.has_static_bindings or bool(volumes.static_bindings)
        return Status.success()

    # --------------------------------------------------------------- Score
    def pre_score(self, state: CycleState, pod_info: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if self._scorer is None or s is None or s.claims is None:
            return Status.skip(NAME)
        if s.has_static_bindings or self._capacity_scoring:
            return Status.success()
        return Status.skip(NAME)

    def score(
        self, state: CycleState, pod_info: PodInfo, node_info: NodeInfo
    ) -> tuple[int, Status]:
        s: _State | None = state.get(STATE_KEY)
        if self._scorer is None or s is None:
            return 0, Status.success()
        volumes = s.by_node.get(node_info.name)
        if volumes is None:
            return 0, Status.success()
        classes: dict[str, tuple[int, int]] = {}
        if volumes.static_bindings or not self._capacity_scoring:
            for b in volumes.static_bindings or []:
                requested, capacity = b.storage_resource()
                r, c = classes.get(b.storage_class_name(), (0, 0))
                classes[b.storage_class_name()] = (r + requested, c + capacity)
        else:
            for p in volumes.dynamic_provisions or []:
                if p.node_capacity is None:
                    continue
                name = p.pvc.spec.storage_class_name
                cap = p.node_capacity
                # upstream: Capacity.Value(), assigned (one pool per class), not summed
                capacity = (
                    parse_quantity(cap.capacity).int_value() if cap.HasField("capacity") else 0
                )
                requested = storage_quantity(p.pvc.spec.resources.requests).int_value()
                r, _ = classes.get(name, (0, 0))
                classes[name] = (r + requested, capacity)
        return int(self._scorer(classes)), Status.success()

    # ------------------------------------------------------------- Reserve
    def reserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        volumes = s.by_node.get(node_name)
        if volumes is None:
            s.all_bound = True  # no claims
            return Status.success()
        try:
            s.all_bound = self.binder.assume_pod_volumes(pod_info.pod, node_name, volumes)
        except Exception as e:  # noqa: BLE001
            return Status.as_error(e, NAME)
        return Status.success()

    def unreserve(self, state: CycleState, pod_info: PodInfo, node_name: str) -> None:
        s: _State | None = state.get(STATE_KEY)
        volumes = s.by_node.get(node_name) if s is not None else None
        if volumes is not None:
            self.binder.revert_assumed_pod_volumes(volumes)

    # ------------------------------------------------------------- PreBind
    def pre_bind_pre_flight(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        """Skip when every claim is bound already; Success when PreBind has volumes to
        bind or provision (upstream's PreBindPreFlight)."""
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        if s.all_bound:
            return Status.skip()
        if node_name not in s.by_node:
            return Status.as_error(
                RuntimeError(f'no pod volumes found for node "{node_name}"'), NAME
            )
        return Status.success()

    async def pre_bind(self, state: CycleState, pod_info: PodInfo, node_name: str) -> Status:
        s: _State | None = state.get(STATE_KEY)
        if s is None:
            return Status.as_error(KeyError(f"{NAME}: PreFilter did not run"), NAME)
        if s.all_bound:
            return Status.success()
        volumes = s.by_node.get(node_name)
        if volumes is None:
            return Status.as_error(
                RuntimeError(f'no pod volumes found for node "{node_name}"'), NAME
            )
        try:
            await self.binder.bind_pod_volumes(pod_info.pod, node_name, volumes)
        except Exception as e:  # noqa: BLE001 - the attempt fails; Unreserve follows
            return Status.as_error(e, NAME)
        return Status.success()

    # -------------------------------------------------------------- events
    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent("StorageClass", ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_storage_class_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolumeClaim", ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_pvc_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("PersistentVolume", ActionType.ADD | ActionType.UPDATE)
            ),
            ClusterEventWithHint(
                ClusterEvent("Node", ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
            ),
            ClusterEventWithHint(
                ClusterEvent("CSINode", ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_csi_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent("CSIDriver", ActionType.UPDATE), is_schedulable_after_csi_driver_change
            ),
            ClusterEventWithHint(
                ClusterEvent("CSIStorageCapacity", ActionType.ADD | ActionType.UPDATE),
                is_schedulable_after_capacity_change,
            ),
        ]


# ------------------------------------------------------------------ queueing hints


def is_schedulable_after_csi_node_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSINode, or a change of its migrated plugins."""
    if old is None:
        return QueueingHint.QUEUE
    before = old.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
    after = new.metadata.annotations.get(MIGRATED_PLUGINS_ANNOTATION)
    return QueueingHint.QUEUE if before != after else QueueingHint.SKIP


def is_schedulable_after_pvc_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """A claim the pod names (a generic ephemeral volume's too), in its namespace, was made
    or changed: almost any such change may help."""
    if new is None:
        return QueueingHint.SKIP
    return after_claim_event(pod, new, ephemeral=True)


def is_schedulable_after_storage_class_change(
    pod: core_pb2.Pod, old: Any, new: Any
) -> QueueingHint:
    """A new class, or a change of its allowedTopologies (the binding mode is immutable)."""
    if old is None:
        return QueueingHint.QUEUE
    if list(old.allowed_topologies) != list(new.allowed_topologies):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def is_schedulable_after_capacity_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """A new CSIStorageCapacity, or a bigger volume limit."""
    if old is None:
        return QueueingHint.QUEUE
    before, after = volume_limit(old), volume_limit(new)
    if after is not None and (before is None or after.int_value() > before.int_value()):
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _inline_csi_drivers(pod: core_pb2.Pod) -> set[str]:
    out = set()
    for vol in pod.spec.volumes:
        csi = vol.fields.get("csi")
        if csi is not None and csi.HasField("struct_value"):
            driver = csi.struct_value.fields.get("driver")
            if driver is not None:
                out.add(driver.string_value)
    return out


def is_schedulable_after_csi_driver_change(pod: core_pb2.Pod, old: Any, new: Any) -> QueueingHint:
    """The pod's inline CSI driver stopped tracking storage capacity."""
    if old is None or new is None or new.metadata.name not in _inline_csi_drivers(pod):
        return QueueingHint.SKIP
    if old.spec.storage_capacity and not new.spec.storage_capacity:
        return QueueingHint.QUEUE
    return QueueingHint.SKIP


def _pods(handle: Any) -> Any:
    """The scheduler's pod informer (its store: every pod), if the handle has one."""
    pod_informer = getattr(handle, "pod_informer", None)
    return pod_informer() if pod_informer is not None else None


def new(args: Args | None, handle: Any) -> VolumeBinding:
    """The factory: listers over the scheduler's informers, its client for PreBind's
    writes, its pods and snapshot for PreBind's checks."""
    args = args or Args()
    listers: VolumeListers = volume_listers(handle, VOLUME_BINDING_KINDS)
    snapshot = getattr(handle, "snapshot", None)

    def node(name: str) -> core_pb2.Node | None:
        info = snapshot().get(name) if snapshot is not None else None
        return info.node if info is not None else None

    binder = VolumeBinder(
        listers,
        client=getattr(handle, "client", None),
        pods=(lambda: informer.store) if (informer := _pods(handle)) is not None else dict,
        nodes=node,
        bind_timeout=float(args.bind_timeout_seconds),
        clock=getattr(handle, "clock", None),
    )
    return VolumeBinding(args, binder)


__all__ = [
    "ERR_UNBOUND_IMMEDIATE",
    "NAME",
    "Args",
    "UtilizationShapePoint",
    "VolumeBinding",
    "build_scorer",
    "new",
]
