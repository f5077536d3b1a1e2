"""The volume binder: which of a pod's claims are bound, which a node can satisfy with a
static volume or by provisioning, and the API writes that hand the rest to the PV
controller (upstream volumebinding/binder.go, SchedulerVolumeBinder).

How it fits the scheduling cycle (upstream's own summary):

    PreFilter  get_pod_volume_claims   bound / delayed-unbound / immediate-unbound claims,
                                       and the volumes of the delayed claims' classes
    Filter     find_pod_volumes        per node: bound volumes' node affinity; a static
                                       volume for each delayed claim (smallest claim first),
                                       else provisioning (class, allowedTopologies,
                                       CSIStorageCapacity)
    Reserve    assume_pod_volumes      the chosen volumes pre-bound and the claims to
                                       provision annotated with the node, in the assume
                                       caches only
    Unreserve  revert_assumed_pod_volumes
    PreBind    bind_pod_volumes        write them (volume claimRef, claim selected-node),
                                       then wait until the PV controller bound every claim

Errors are exceptions (the plugin turns them into Error statuses); a node that does not
fit gets reasons (ConflictReasons), not an exception.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.podvolumes import ephemeral_claim_not_for_pod, pod_claim_names
from services.api.helpers.volumes import (
    ANN_SELECTED_NODE,
    NOT_SUPPORTED_PROVISIONER,
    bind_volume_to_claim,
    claim_class,
    find_matching_volume,
    is_claim_fully_bound,
    match_topology_selector_terms,
    node_affinity_matches,
    storage_quantity,
)
from services.api.machinery.labels import SelectorError, from_label_selector
from services.api.machinery.quantity import Quantity, parse_quantity
from services.clock import Clock, RealClock
from services.scheduler.plugins.volumebinding.assume_cache import (
    NotFoundError,
    PVAssumeCache,
    PVCAssumeCache,
    pvc_key,
)
from services.scheduler.plugins.volumebinding.csimigration import translate
from services.scheduler.volumelisters import VolumeListers

log = logging.getLogger("services.scheduler.scheduler")

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim

ERR_REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
ERR_REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
ERR_REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
ERR_REASON_PV_NOT_EXIST = (
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
)

#: How often PreBind looks whether the PV controller finished (upstream: every second).
POLL_INTERVAL = 1.0


class BindingError(Exception):
    """An error the pod's attempt fails with (retried with backoff)."""


@dataclass
class BindingInfo:
    """A static volume chosen for a claim."""

    pvc: PVC
    pv: PV

    def storage_class_name(self) -> str:
        return str(self.pv.spec.storage_class_name)

    def storage_resource(self) -> tuple[int, int]:
        """(requested, capacity) in bytes."""
        return (
            storage_quantity(self.pvc.spec.resources.requests).int_value(),
            storage_quantity(self.pv.spec.capacity).int_value(),
        )


@dataclass
class DynamicProvision:
    """A claim to provision, and the CSIStorageCapacity that says the node has room."""

    pvc: PVC
    node_capacity: storagev1_pb2.CSIStorageCapacity | None = None


@dataclass
class PodVolumes:
    """What Filter decided for one node (None and empty differ, as upstream's nil slices)."""

    static_bindings: list[BindingInfo] | None = None
    dynamic_provisions: list[DynamicProvision] | None = None


@dataclass
class PodVolumeClaims:
    bound_claims: list[PVC] = field(default_factory=list)
    unbound_claims_delay_binding: list[PVC] = field(default_factory=list)
    unbound_claims_immediate: list[PVC] = field(default_factory=list)
    #: class name -> the volumes of that class (for the delayed claims' classes).
    unbound_volumes_delay_binding: dict[str, list[PV]] = field(default_factory=dict)


def _rv(obj: Any) -> int:
    try:
        return int(obj.metadata.resource_version or 0)
    except ValueError:
        return 0


def volume_limit(capacity: storagev1_pb2.CSIStorageCapacity) -> Quantity | None:
    """The biggest volume a CSIStorageCapacity allows: maximumVolumeSize, else capacity."""
    if capacity.HasField("maximum_volume_size"):
        return parse_quantity(capacity.maximum_volume_size)
    if capacity.HasField("capacity"):
        return parse_quantity(capacity.capacity)
    return None


def _node_has_access(node: core_pb2.Node, capacity: storagev1_pb2.CSIStorageCapacity) -> bool:
    if not capacity.HasField("node_topology"):
        return False
    sel = capacity.node_topology
    exprs = [(e.key, e.operator, tuple(e.values)) for e in sel.match_expressions]
    try:
        return from_label_selector(dict(sel.match_labels), exprs).matches(node.metadata.labels)
    except SelectorError:
        return False


class VolumeBinder:
    """SchedulerVolumeBinder over the listers (see the module docstring). `client`: the
    scheduler's client (its writes carry the leader's fencing token); `pods` and `nodes`:
    the scheduler's pods (its pod informer's store, "namespace/name") and node lookup
    (PreBind's checks); `bind_timeout`: seconds."""

    def __init__(
        self,
        listers: VolumeListers,
        *,
        client: Any = None,
        pods: Callable[[], Mapping[str, core_pb2.Pod]] = dict,
        nodes: Callable[[str], core_pb2.Node | None] = lambda _name: None,
        bind_timeout: float = 600.0,
        clock: Clock | None = None,
    ) -> None:
        self.listers = listers
        self.pv_cache = PVAssumeCache(lambda: listers.pvs, listers.pv_names_of_class)
        self.pvc_cache = PVCAssumeCache(lambda: listers.pvcs)
        self._client = client
        self._pods = pods
        self._nodes = nodes
        self.bind_timeout = bind_timeout
        self._clock = clock or RealClock()

    # ---------------------------------------------------------------- claims
    def _is_delay_binding(self, claim: PVC) -> bool:
        """IsDelayBindingMode (an unknown class binds immediately)."""
        name = claim_class(claim)
        if not name:
            return False
        sc = self.listers.classes.get(name)
        if sc is None:
            return False
        if not sc.HasField("volume_binding_mode"):
            raise BindingError(f"VolumeBindingMode not set for StorageClass {name!r}")
        return bool(sc.volume_binding_mode == "WaitForFirstConsumer")

    def _pvc(self, pod: core_pb2.Pod, name: str, ephemeral: bool) -> PVC:
        key = f"{pod.metadata.namespace}/{name}"
        try:
            pvc = self.pvc_cache.get(key)
        except NotFoundError as e:
            raise BindingError(f'error getting PVC "{key}": {e}') from None
        if ephemeral:
            problem = ephemeral_claim_not_for_pod(pod, pvc)
            if problem:
                raise BindingError(problem)
        return pvc  # type: ignore[no-any-return]

    def are_pod_volumes_bound(self, pod: core_pb2.Pod) -> bool:
        for name, ephemeral in pod_claim_names(pod):
            try:
                if not is_claim_fully_bound(self._pvc(pod, name, ephemeral)):
                    return False
            except BindingError:
                return False
        return True

    def get_pod_volume_claims(self, pod: core_pb2.Pod) -> PodVolumeClaims:
        out = PodVolumeClaims()
        for name, ephemeral in pod_claim_names(pod):
            pvc = self._pvc(pod, name, ephemeral)
            if is_claim_fully_bound(pvc):
                out.bound_claims.append(pvc)
            elif self._is_delay_binding(pvc) and not pvc.spec.volume_name:
                out.unbound_claims_delay_binding.append(pvc)
            else:  # prebound claims are immediate too: the PV controller binds them
                out.unbound_claims_immediate.append(pvc)
        for pvc in out.unbound_claims_delay_binding:
            name = claim_class(pvc)
            out.unbound_volumes_delay_binding[name] = self.pv_cache.list_pvs(name)
        return out

    # ---------------------------------------------------------------- Filter
    def find_pod_volumes(
        self, pod: core_pb2.Pod, claims: PodVolumeClaims, node: core_pb2.Node
    ) -> tuple[PodVolumes, list[str]]:
        """FindPodVolumes: what this node would do for each claim, and why it cannot."""
        bound_ok = unbound_ok = storage_ok = pvs_found = True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if claims.bound_claims:
            bound_ok, pvs_found = self._check_bound_claims(claims.bound_claims, node)
        if claims.unbound_claims_delay_binding:
            unbound_ok, storage_ok, static, dynamic = self._find_for_unbound(pod, claims, node)
        reasons = []
        if not bound_ok:
            reasons.append(ERR_REASON_NODE_CONFLICT)
        if not unbound_ok:
            reasons.append(ERR_REASON_BIND_CONFLICT)
        if not storage_ok:
            reasons.append(ERR_REASON_NOT_ENOUGH_SPACE)
        if not pvs_found:
            reasons.append(ERR_REASON_PV_NOT_EXIST)
        return PodVolumes(static or None, dynamic or None), reasons

    def _find_for_unbound(
        self, pod: core_pb2.Pod, claims: PodVolumeClaims, node: core_pb2.Node
    ) -> tuple[bool, bool, list[BindingInfo], list[DynamicProvision]]:
        to_match: list[PVC] = []
        to_provision: list[PVC] = []
        for claim in claims.unbound_claims_delay_binding:
            selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
            if selected is None:
                to_match.append(claim)
            elif selected != node.metadata.name:
                return False, True, [], []  # fast path: provisioning elsewhere
            else:
                to_provision.append(claim)
        unbound_ok, storage_ok = True, True
        static: list[BindingInfo] = []
        dynamic: list[DynamicProvision] = []
        if to_match:
            unbound_ok, static, unmatched = self._find_matching_volumes(
                to_match, claims.unbound_volumes_delay_binding, node
            )
            to_provision.extend(unmatched)
        if to_provision:
            unbound_ok, storage_ok, dynamic = self._check_volume_provisions(to_provision, node)
        return unbound_ok, storage_ok, static, dynamic

    def _csi_node(self, node_name: str) -> Any:
        return self.listers.csi_nodes.get(node_name)

    def _check_bound_claims(self, claims: Sequence[PVC], node: core_pb2.Node) -> tuple[bool, bool]:
        """(node affinity satisfied, every volume exists)."""
        csi_node = self._csi_node(node.metadata.name)
        for pvc in claims:
            try:
                pv = self.pv_cache.get(pvc.spec.volume_name)
            except NotFoundError:
                return True, False
            if not node_affinity_matches(translate(pv, csi_node), node):
                return False, True
        return True, True

    def _find_matching_volumes(
        self, claims: list[PVC], volumes: dict[str, list[PV]], node: core_pb2.Node
    ) -> tuple[bool, list[BindingInfo], list[PVC]]:
        """findMatchingVolumes: the smallest claims first, each its smallest fitting
        volume on the node that no earlier claim took."""
        chosen: set[str] = set()
        found = True
        bindings: list[BindingInfo] = []
        unmatched: list[PVC] = []
        for pvc in sorted(claims, key=lambda c: storage_quantity(c.spec.resources.requests)):
            pv = find_matching_volume(
                pvc, volumes.get(claim_class(pvc), []), node=node, excluded=chosen
            )
            if pv is None:
                unmatched.append(pvc)
                found = False
                continue
            chosen.add(pv.metadata.name)
            bindings.append(BindingInfo(pvc, pv))
        return found, bindings, unmatched

    def _check_volume_provisions(
        self, claims: list[PVC], node: core_pb2.Node
    ) -> tuple[bool, bool, list[DynamicProvision]]:
        """checkVolumeProvisions: (provisionable here, enough storage, the provisions)."""
        out: list[DynamicProvision] = []
        for claim in claims:
            name = claim_class(claim)
            if not name:
                raise BindingError(f'no class for claim "{pvc_key(claim)}"')
            sc = self.listers.classes.get(name)
            if sc is None:
                raise BindingError(f'failed to find storage class "{name}"')
            if not sc.provisioner or sc.provisioner == NOT_SUPPORTED_PROVISIONER:
                return False, True, []
            if not match_topology_selector_terms(sc.allowed_topologies, node.metadata.labels):
                return False, True, []
            enough, capacity = self._has_enough_capacity(sc, claim, node)
            if not enough:
                return True, False, []
            out.append(DynamicProvision(claim, capacity))
        return True, True, out

    def _has_enough_capacity(
        self, sc: storagev1_pb2.StorageClass, claim: PVC, node: core_pb2.Node
    ) -> tuple[bool, storagev1_pb2.CSIStorageCapacity | None]:
        """hasEnoughCapacity: only for a CSI driver that opts in (storageCapacity: true),
        some CSIStorageCapacity of the class the node can reach must fit the claim."""
        if "storage" not in claim.spec.resources.requests:
            return True, None
        driver = self.listers.csi_drivers.get(sc.provisioner)
        if driver is None or not driver.spec.storage_capacity:
            return True, None
        size = storage_quantity(claim.spec.resources.requests)
        for capacity in list(self.listers.capacities.values()):
            if capacity.storage_class_name != sc.metadata.name:
                continue
            limit = volume_limit(capacity)
            if limit is not None and limit >= size and _node_has_access(node, capacity):
                return True, capacity
        return False, None

    # --------------------------------------------------------------- Reserve
    def assume_pod_volumes(self, pod: core_pb2.Pod, node_name: str, volumes: PodVolumes) -> bool:
        """AssumePodVolumes: True when every claim is bound already (nothing to do);
        otherwise the chosen volumes and the claims to provision are assumed and
        `volumes` holds the assumed objects. Raises, having assumed nothing, on failure."""
        if self.are_pod_volumes_bound(pod):
            return True
        bindings: list[BindingInfo] = []
        for b in volumes.static_bindings or []:
            new_pv, dirty = bind_volume_to_claim(b.pv, b.pvc)
            if dirty:
                try:
                    self.pv_cache.assume(new_pv)
                except Exception:
                    self._revert_pvs(bindings)
                    raise
            bindings.append(BindingInfo(b.pvc, new_pv))
        provisions: list[DynamicProvision] = []
        for p in volumes.dynamic_provisions or []:
            clone = PVC()
            clone.CopyFrom(p.pvc)
            clone.metadata.annotations[ANN_SELECTED_NODE] = node_name
            try:
                self.pvc_cache.assume(clone)
            except Exception:
                self._revert_pvs(bindings)
                self._revert_pvcs(provisions)
                raise
            provisions.append(DynamicProvision(clone, p.node_capacity))
        volumes.static_bindings = bindings
        volumes.dynamic_provisions = provisions
        return False

    def revert_assumed_pod_volumes(self, volumes: PodVolumes) -> None:
        self._revert_pvs(volumes.static_bindings or [])
        self._revert_pvcs(volumes.dynamic_provisions or [])

    def _revert_pvs(self, bindings: Sequence[BindingInfo]) -> None:
        for b in bindings:
            self.pv_cache.restore(b.pv.metadata.name)

    def _revert_pvcs(self, provisions: Sequence[DynamicProvision]) -> None:
        for p in provisions:
            self.pvc_cache.restore(pvc_key(p.pvc))

    # --------------------------------------------------------------- PreBind
    async def bind_pod_volumes(
        self, pod: core_pb2.Pod, node_name: str, volumes: PodVolumes
    ) -> None:
        """BindPodVolumes: write the assumed objects, then wait (bind_timeout) until the
        PV controller has bound every claim; raises BindingError when the binding failed,
        was undone or timed out."""
        bindings = volumes.static_bindings
        claims = [p.pvc for p in volumes.dynamic_provisions or []]
        await self.bind_api_update(pod, bindings, claims)
        for p, written in zip(volumes.dynamic_provisions or [], claims, strict=True):
            p.pvc = written
        deadline = self._clock.monotonic() + self.bind_timeout
        while True:
            await self._clock.sleep(POLL_INTERVAL)
            if self.check_bindings(pod, node_name, bindings, claims):
                return
            if self._clock.monotonic() >= deadline:
                raise BindingError("binding volumes: context deadline exceeded")

    async def bind_api_update(
        self, pod: core_pb2.Pod, bindings: list[BindingInfo] | None, claims: list[PVC] | None
    ) -> None:
        """bindAPIUpdate: each volume's claimRef, then each claim's selected-node, written
        with the cached resourceVersion (a conflict fails the attempt); what was not
        written is reverted in the caches."""
        pod_name = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if bindings is None:
            raise BindingError(f'failed to get cached bindings for pod "{pod_name}"')
        if claims is None:
            raise BindingError(f'failed to get cached claims to provision for pod "{pod_name}"')
        done_bindings = done_claims = 0
        try:
            for b in bindings:
                b.pv = await self._client.update(b.pv)
                done_bindings += 1
            for i, claim in enumerate(claims):
                claims[i] = await self._client.update(claim)
                done_claims += 1
        finally:
            self._revert_pvs(bindings[done_bindings:])
            for claim in claims[done_claims:]:
                self.pvc_cache.restore(pvc_key(claim))

    def check_bindings(
        self,
        pod: core_pb2.Pod,
        node_name: str,
        bindings: list[BindingInfo] | None,
        claims: list[PVC] | None,
    ) -> bool:
        """checkBindings: True when every claim PreBind wrote is fully bound, False while
        the PV controller is not done; raises when binding must be retried."""
        pod_name = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if bindings is None:
            raise BindingError(f'failed to get cached bindings for pod "{pod_name}"')
        if claims is None:
            raise BindingError(f'failed to get cached claims to provision for pod "{pod_name}"')
        node = self._nodes(node_name)
        if node is None:
            raise BindingError(f'failed to get node "{node_name}": node "{node_name}" not found')
        csi_node = self._csi_node(node_name)
        if self._pods().get(f"{pod.metadata.namespace}/{pod.metadata.name}") is None:
            raise BindingError(f'pod does not exist any more: pods "{pod.metadata.name}" not found')
        for b in bindings:
            try:
                pv = self.pv_cache.get_api(b.pv.metadata.name)
                pvc = self.pvc_cache.get_api(pvc_key(b.pvc))
            except NotFoundError as e:
                raise BindingError(f"failed to check binding: {e}") from None
            if _rv(b.pv) > _rv(pv):
                return False  # our write has not reached the informer yet
            self._check_affinity(translate(pv, csi_node), node)
            if not pv.spec.HasField("claim_ref") or not pv.spec.claim_ref.uid:
                raise BindingError(f'ClaimRef got reset for pv "{pv.metadata.name}"')
            if not is_claim_fully_bound(pvc):
                return False
        for claim in claims:
            try:
                pvc = self.pvc_cache.get_api(pvc_key(claim))
            except NotFoundError as e:
                raise BindingError(f"failed to check provisioning pvc: {e}") from None
            if _rv(claim) > _rv(pvc):
                return False
            if not pvc.metadata.annotations:
                raise BindingError(f'selectedNode annotation reset for PVC "{pvc.metadata.name}"')
            if pvc.metadata.annotations.get(ANN_SELECTED_NODE) != node_name:
                # the provisioner removes the annotation to ask for another node
                raise BindingError(f'provisioning failed for PVC "{pvc.metadata.name}"')
            if pvc.spec.volume_name:
                try:
                    pv = self.pv_cache.get_api(pvc.spec.volume_name)
                except NotFoundError:
                    return False  # not seen yet; a deleted volume unbinds the claim
                self._check_affinity(translate(pv, csi_node), node)
            if not is_claim_fully_bound(pvc):
                return False
        return True

    @staticmethod
    def _check_affinity(pv: PV, node: core_pb2.Node) -> None:
        if not node_affinity_matches(pv, node):
            raise BindingError(
                f'pv "{pv.metadata.name}" node affinity doesn\'t match node '
                f'"{node.metadata.name}": no matching NodeSelectorTerms'
            )
