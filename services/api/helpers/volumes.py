"""Claims and volumes: which PersistentVolume satisfies a claim (upstream
k8s.io/component-helpers/storage/volume: pv_helpers.go and helpers.go, with the access-mode
index of pkg/controller/volume/persistentvolume/index.go).

The PV controller binds with these, and so does the scheduler's VolumeBinding plugin (it
passes the node, so a volume's node affinity is checked and access modes compared; it also
pre-binds with `bind_volume_to_claim`, as the controller binds), so the matching rules live
here once:

- a volume bound (claimRef) to another claim is skipped; one bound or pre-bound to this
  claim (name, namespace and, when the claimRef has one, UID) is returned at once if it is
  big enough, whatever its class or labels (its node affinity still counts for a node);
- otherwise the volume must be Available, as big as the request, of the claim's volume mode
  (a missing mode is Filesystem), not being deleted, of the claim's class ("" matches only
  ""), matched by the claim's selector and, given a node, by its node affinity and hold all
  of the claim's access modes; the smallest such volume wins;
- the controller's delayed binding (WaitForFirstConsumer) returns only the pre-bound volume:
  the scheduler picks the rest on a node;
- `find_best_match_for_claim` (the controller's) searches the volumes by access-mode set,
  the sets holding every requested mode in order of fewest modes, so a claim for RWO gets an
  RWO disk before an RWO+ROX+RWX share of the same size.

`VolumeIndex` keeps volume names by storage class and by the claim their claimRef names,
so neither the PV controller nor the scheduler walks every volume for a claim. Upstream's
controller indexes by access-mode set (index.go) and looks at every class in a set; the
scheduler's assume cache indexes by class (ListPVs). A volume matches a claim only when
it is of the claim's class or its claimRef already names the claim (returned whatever
its class), so the candidates of a claim, the volumes of its class plus those naming it,
give the match over all volumes. The index holds names only: readers take each
candidate's newest copy and the match checks every rule again, so an entry a step
behind costs a look at one volume, never a wrong binding.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.nodeaffinity import NodeSelector
from services.api.machinery.labels import SelectorError, from_label_selector
from services.api.machinery.quantity import Quantity, QuantityError, parse_quantity

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim
K = TypeVar("K", bound=Hashable)

#: Annotations of the binding protocol (pv_helpers.go), read by the scheduler too.
ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_DYNAMICALLY_PROVISIONED = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
NOT_SUPPORTED_PROVISIONER = "kubernetes.io/no-provisioner"
#: StorageObjectInUseProtection's finalizers (admission adds them, the protection
#: controllers remove them).
PVC_PROTECTION_FINALIZER = "kubernetes.io/pvc-protection"
PV_PROTECTION_FINALIZER = "kubernetes.io/pv-protection"

#: The annotations that mark the default StorageClass (IsDefaultAnnotation).
DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)

#: The provisioner of kubera's hollow volumes (a StorageClass's `provisioner`): the PV
#: controller provisions for it, and `kubera up`'s default class names it.
HOLLOW_PROVISIONER = "hollow.kubera.io"


def default_storage_class(name: str) -> storagev1_pb2.StorageClass:
    """The default StorageClass `kubera up` makes on a new cluster, as kind ships its
    `standard`: hollow volumes, bound where the first pod lands, deleted with their claim."""
    sc = storagev1_pb2.StorageClass(
        provisioner=HOLLOW_PROVISIONER,
        reclaim_policy="Delete",
        volume_binding_mode="WaitForFirstConsumer",
    )
    sc.metadata.name = name
    sc.metadata.annotations[DEFAULT_CLASS_ANNOTATIONS[0]] = "true"
    return sc


#: GetAccessModesAsString's order.
ACCESS_MODE_ORDER = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod")

_ZERO = parse_quantity("0")


def claim_class(claim: PVC) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation, else spec.storageClassName."""
    beta = claim.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    if beta is not None:
        return beta
    return claim.spec.storage_class_name if claim.spec.HasField("storage_class_name") else ""


def is_default_class(sc: Any) -> bool:
    """IsDefaultAnnotation: the class is annotated as the default ("true")."""
    return any(sc.metadata.annotations.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


def volume_class(pv: PV) -> str:
    """GetPersistentVolumeClass: the beta annotation, else spec.storageClassName."""
    beta = pv.metadata.annotations.get(ANN_BETA_STORAGE_CLASS)
    return beta if beta is not None else pv.spec.storage_class_name


def storage_quantity(resources: Mapping[str, str]) -> Quantity:
    """The `storage` of a capacity or request (0 when absent or unreadable)."""
    raw = resources.get("storage")
    if raw is None:
        return _ZERO
    try:
        return parse_quantity(raw)
    except QuantityError:
        return _ZERO


def is_volume_bound_to_claim(pv: PV, claim: PVC) -> bool:
    """IsVolumeBoundToClaim: the claimRef names the claim (and its UID, when it has one)."""
    if not pv.spec.HasField("claim_ref"):
        return False
    ref = pv.spec.claim_ref
    if ref.name != claim.metadata.name or ref.namespace != claim.metadata.namespace:
        return False
    return not ref.uid or ref.uid == claim.metadata.uid


def volume_mode_mismatch(claim: PVC, pv: PV) -> bool:
    """CheckVolumeModeMismatches: a missing mode on either side is Filesystem."""
    want = claim.spec.volume_mode if claim.spec.HasField("volume_mode") else "Filesystem"
    have = pv.spec.volume_mode if pv.spec.HasField("volume_mode") else "Filesystem"
    return want != have


def check_access_modes(claim: PVC, pv: PV) -> bool:
    """CheckAccessModes: the volume has every mode the claim asks for."""
    return set(claim.spec.access_modes) <= set(pv.spec.access_modes)


def node_affinity_matches(pv: PV, node: core_pb2.Node) -> bool:
    """CheckNodeAffinity: a volume without required node affinity fits every node."""
    if not pv.spec.HasField("node_affinity") or not pv.spec.node_affinity.HasField("required"):
        return True
    return NodeSelector(pv.spec.node_affinity.required).match(node)


def _selector(claim: PVC) -> Callable[[Mapping[str, str]], bool] | None:
    if not claim.spec.HasField("selector"):
        return None
    sel = claim.spec.selector
    exprs = [(e.key, e.operator, tuple(e.values)) for e in sel.match_expressions]
    try:
        return from_label_selector(dict(sel.match_labels), exprs).matches
    except SelectorError:
        return lambda _labels: False  # unreachable after validation


def find_matching_volume(
    claim: PVC,
    volumes: Iterable[PV],
    *,
    node: core_pb2.Node | None = None,
    excluded: Collection[str] = (),
    delay_binding: bool = False,
) -> PV | None:
    """FindMatchingVolume (see the module docstring): the pre-bound volume, else the
    smallest matching Available one; `node` only on the scheduler's path, `excluded`
    names the volumes already chosen for the pod's other claims."""
    requested = storage_quantity(claim.spec.resources.requests)
    requested_class = claim_class(claim)
    selector = _selector(claim)
    smallest: PV | None = None
    smallest_qty: Quantity | None = None
    for pv in volumes:
        if pv.metadata.name in excluded:
            continue
        bound_here = is_volume_bound_to_claim(pv, claim)
        if pv.spec.HasField("claim_ref") and not bound_here:
            continue
        qty = storage_quantity(pv.spec.capacity)
        if qty < requested:
            continue
        if volume_mode_mismatch(claim, pv) or pv.metadata.deletion_timestamp:
            continue
        affinity_ok = node is None or node_affinity_matches(pv, node)
        if bound_here:
            return pv if affinity_ok else None
        if node is None and delay_binding:
            continue
        if pv.status.phase != "Available":
            continue
        if selector is not None and not selector(pv.metadata.labels):
            continue
        if volume_class(pv) != requested_class or not affinity_ok:
            continue
        if node is not None and not check_access_modes(claim, pv):
            continue
        if smallest_qty is None or qty < smallest_qty:
            smallest, smallest_qty = pv, qty
    return smallest


def claim_reference(claim: PVC) -> core_pb2.ObjectReference:
    """reference.GetReference of a claim (what a volume's claimRef holds)."""
    return core_pb2.ObjectReference(
        kind="PersistentVolumeClaim",
        namespace=claim.metadata.namespace,
        name=claim.metadata.name,
        uid=claim.metadata.uid,
        api_version="v1",
        resource_version=claim.metadata.resource_version,
    )


def bind_volume_to_claim(volume: PV, claim: PVC) -> tuple[PV, bool]:
    """GetBindVolumeToClaim: a copy of `volume` bound to `claim` (claimRef, and
    bound-by-controller unless the volume was already bound to it) and whether anything
    changed. The PV controller's bind and the scheduler's assumed pre-binding."""
    by_controller = not is_volume_bound_to_claim(volume, claim)
    out = PV()
    out.CopyFrom(volume)
    dirty = False
    ref = volume.spec.claim_ref
    if (
        not volume.spec.HasField("claim_ref")
        or ref.name != claim.metadata.name
        or ref.namespace != claim.metadata.namespace
        or ref.uid != claim.metadata.uid
    ):
        out.spec.claim_ref.CopyFrom(claim_reference(claim))
        dirty = True
    if by_controller and ANN_BOUND_BY_CONTROLLER not in out.metadata.annotations:
        out.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        dirty = True
    return out, dirty


def is_claim_fully_bound(claim: PVC) -> bool:
    """The claim names its volume and the PV controller finished binding it."""
    return bool(claim.spec.volume_name) and ANN_BIND_COMPLETED in claim.metadata.annotations


def match_topology_selector_terms(terms: Sequence[Any], labels: Mapping[str, str]) -> bool:
    """MatchTopologySelectorTerms (a StorageClass's allowedTopologies): no terms match
    every node; otherwise some term's every requirement has the label with one of its
    values."""
    if not terms:
        return True
    return any(
        all(labels.get(r.key) in set(r.values) for r in term.match_label_expressions)
        for term in terms
    )


def access_modes_key(modes: Iterable[str]) -> tuple[str, ...]:
    """A volume's access modes as its index key (GetAccessModesAsString: each mode once,
    in RWO, ROX, RWX, RWOP order)."""
    present = set(modes)
    return tuple(m for m in ACCESS_MODE_ORDER if m in present)


def find_best_match_for_claim(
    claim: PVC, volumes: Iterable[PV], *, delay_binding: bool = False
) -> PV | None:
    """findBestMatchForClaim: `find_matching_volume` over each access-mode set that holds
    every requested mode, fewest modes first (ties in the order the sets were first seen)."""
    by_modes: dict[tuple[str, ...], list[PV]] = {}
    for pv in volumes:
        by_modes.setdefault(access_modes_key(pv.spec.access_modes), []).append(pv)
    wanted = set(claim.spec.access_modes)
    for key in sorted((k for k in by_modes if wanted <= set(k)), key=len):
        found = find_matching_volume(claim, by_modes[key], delay_binding=delay_binding)
        if found is not None:
            return found
    return None


class VolumeIndex:
    """Volume names by storage class and by the claim (namespace, name) they name."""

    def __init__(self, volumes: Iterable[PV] = ()) -> None:
        # dicts as ordered sets: a class's volumes in the order they were first indexed
        self._by_class: dict[str, dict[str, None]] = {}
        self._by_claim: dict[tuple[str, str], dict[str, None]] = {}
        self._keys: dict[str, tuple[str, tuple[str, str] | None]] = {}
        for pv in volumes:
            self.add(pv)

    def __len__(self) -> int:
        return len(self._keys)

    def add(self, pv: PV) -> None:
        """Index a new or changed volume (its class or claimRef may have changed)."""
        name = pv.metadata.name
        ref = pv.spec.claim_ref if pv.spec.HasField("claim_ref") else None
        claim = (ref.namespace, ref.name) if ref is not None and ref.name else None
        keys = (volume_class(pv), claim)
        if self._keys.get(name) == keys:
            return
        self.remove(name)
        self._keys[name] = keys
        self._by_class.setdefault(keys[0], {})[name] = None
        if claim is not None:
            self._by_claim.setdefault(claim, {})[name] = None

    def remove(self, name: str) -> None:
        keys = self._keys.pop(name, None)
        if keys is None:
            return
        cls, claim = keys
        _discard(self._by_class, cls, name)
        if claim is not None:
            _discard(self._by_claim, claim, name)

    def of_class(self, name: str) -> list[str]:
        """The volumes of a storage class ("" for the volumes of none)."""
        return list(self._by_class.get(name, ()))

    def candidates(self, claim: PVC) -> list[str]:
        """The volumes that may match `claim`: its class's, then those naming it."""
        out = dict.fromkeys(self._by_class.get(claim_class(claim), ()))
        out.update(self._by_claim.get((claim.metadata.namespace, claim.metadata.name), {}))
        return list(out)

    def find_best_match(
        self, claim: PVC, volume: Callable[[str], PV | None], *, delay_binding: bool = False
    ) -> PV | None:
        """findBestMatchForClaim over the candidates, each read with `volume(name)`
        (None: gone)."""
        found = (volume(name) for name in self.candidates(claim))
        return find_best_match_for_claim(
            claim, [pv for pv in found if pv is not None], delay_binding=delay_binding
        )


def _discard(index: dict[K, dict[str, None]], key: K, name: str) -> None:
    names = index.get(key)
    if names is not None:
        names.pop(name, None)
        if not names:
            del index[key]
