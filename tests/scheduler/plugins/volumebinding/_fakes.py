"""Builders and an in-memory API for the VolumeBinding tests, after upstream's
volumebinding/test_utils.go (makePVC / makePV / makeNode / makePod) and binder_test.go's
fixtures (makeTestPVC, makeTestPV, makeCapacity, the fake clientset with its PV reactor).

`FakeVolumeAPI` is the API server for PreBind's writes (update, resourceVersion-checked)
and, at once, the informers' stores the listers read: `store` holds what the informer
shows; a write lands there too unless `informer_lags`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.volumes import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.meta import object_key
from services.clock import FakeClock
from services.scheduler.plugins.volumebinding import VolumeBinder
from services.scheduler.volumelisters import VolumeListers

PV = storage_pb2.PersistentVolume
PVC = storage_pb2.PersistentVolumeClaim
HOSTNAME = "kubernetes.io/hostname"


def storage_class(
    name: str, mode: str, provisioner: str = "", allowed: Mapping[str, Sequence[str]] | None = None
) -> storagev1_pb2.StorageClass:
    sc = storagev1_pb2.StorageClass(provisioner=provisioner)
    sc.metadata.name = name
    sc.volume_binding_mode = mode
    if allowed:
        term = sc.allowed_topologies.add()
        for k, vs in allowed.items():
            term.match_label_expressions.add(key=k, values=list(vs))
    return sc


def node(
    name: str, labels: Mapping[str, str] | None = None, *, hostname: bool = True
) -> core_pb2.Node:
    """makeNode: labelled with its hostname (`hostname=False`: only `labels`, as the
    binder tests' nodes)."""
    n = core_pb2.Node()
    n.metadata.name = name
    if hostname:
        n.metadata.labels[HOSTNAME] = name
    n.metadata.labels.update(labels or {})
    return n


def pod(
    name: str,
    claims: Iterable[str] = (),
    *,
    namespace: str = "default",
    ephemeral: Iterable[str] = (),
    node_name: str = "",
    uid: str = "",
    empty_dir: bool = False,
) -> core_pb2.Pod:
    """A pod naming `claims` (persistentVolumeClaim volumes) and `ephemeral` volumes."""
    vols: list[dict[str, Any]] = [
        {"name": f"vol-{c}", "persistentVolumeClaim": {"claimName": c}} for c in claims
    ]
    vols += [{"name": v, "ephemeral": {}} for v in ephemeral]
    if empty_dir:
        vols.append({"name": "scratch", "emptyDir": {}})
    p = core_pb2.Pod()
    json_format.ParseDict(
        {"metadata": {"name": name, "namespace": namespace, "uid": uid or f"uid-{name}"}}, p
    )
    p.spec.node_name = node_name
    for v in vols:
        json_format.ParseDict(v, p.spec.volumes.add())
    return p


def pvc(
    name: str,
    sc: str | None,
    *,
    size: str = "",
    bound_pv: str = "",
    volume_name: str = "",
    phase: str = "",
    namespace: str = "default",
    rv: str = "",
    selected_node: str | None = None,
    uid: str = "pvc-uid",
    owner: str | None = None,
) -> PVC:
    """makePVC/makeTestPVC: `bound_pv` binds it (volumeName + bind-completed), `volume_name`
    only pre-binds it."""
    c = PVC()
    c.metadata.name, c.metadata.namespace, c.metadata.uid = name, namespace, uid
    c.metadata.resource_version = rv
    if sc is not None:
        c.spec.storage_class_name = sc
    if size:
        c.spec.resources.requests["storage"] = size
    if bound_pv:
        c.spec.volume_name = bound_pv
        c.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
    if volume_name:
        c.spec.volume_name = volume_name
    if phase:
        c.status.phase = phase
    if selected_node is not None:
        c.metadata.annotations[ANN_SELECTED_NODE] = selected_node
    if owner is not None:
        c.metadata.owner_references.add(
            api_version="v1", kind="Pod", name="p", uid=owner, controller=True
        )
    return c


def pv(
    name: str,
    sc: str,
    *,
    capacity: str = "",
    phase: str = "Available",
    affinity: Mapping[str, Sequence[str]] | None = None,
    claim: PVC | None = None,
    rv: str = "",
    labels: Mapping[str, str] | None = None,
) -> PV:
    """makePV/makeTestPV: `affinity` one node selector term (key In values per key);
    `claim` pre-binds it to the claim (claimRef + bound-by-controller)."""
    v = PV()
    v.metadata.name, v.metadata.resource_version = name, rv
    v.metadata.labels.update(labels or {})
    v.spec.storage_class_name = sc
    if capacity:
        v.spec.capacity["storage"] = capacity
    if phase:
        v.status.phase = phase
    if affinity:
        term = v.spec.node_affinity.required.node_selector_terms.add()
        for k in sorted(affinity):
            term.match_expressions.add(key=k, operator="In", values=list(affinity[k]))
    if claim is not None:
        ref = v.spec.claim_ref
        ref.kind, ref.api_version = "PersistentVolumeClaim", "v1"
        ref.name, ref.namespace = claim.metadata.name, claim.metadata.namespace
        ref.uid, ref.resource_version = claim.metadata.uid, claim.metadata.resource_version
        v.metadata.annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    return v


def csi_driver(name: str, storage_capacity: bool) -> storagev1_pb2.CSIDriver:
    d = storagev1_pb2.CSIDriver()
    d.metadata.name = name
    d.spec.storage_capacity = storage_capacity
    return d


def csi_node(name: str, migrated: str) -> storagev1_pb2.CSINode:
    n = storagev1_pb2.CSINode()
    n.metadata.name = name
    n.metadata.annotations["storage.alpha.kubernetes.io/migrated-plugins"] = migrated
    return n


def capacity(
    name: str, sc: str, node_labels: Mapping[str, str] | None, cap: str, max_size: str = ""
) -> storagev1_pb2.CSIStorageCapacity:
    """makeCapacity: `node_labels` None is network-attached (an empty selector: every node)."""
    c = storagev1_pb2.CSIStorageCapacity(storage_class_name=sc)
    c.metadata.name = name
    c.node_topology.SetInParent()
    c.node_topology.match_labels.update(node_labels or {})
    if cap:
        c.capacity = cap
    if max_size:
        c.maximum_volume_size = max_size
    return c


class FakeVolumeAPI:
    """PV and PVC updates as the apiserver answers them (resourceVersion checked, bumped)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Any] = {}
        self.pv_store: dict[str, PV] = {}
        self.pvc_store: dict[str, PVC] = {}
        self.informer_lags = False
        self.calls: list[str] = []

    def _kind(self, obj: Any) -> str:
        return "pv" if isinstance(obj, PV) else "pvc"

    def _store(self, kind: str) -> dict[str, Any]:
        return self.pv_store if kind == "pv" else self.pvc_store  # type: ignore[return-value]

    def add(self, obj: Any, *, api: bool = True, cache: bool = True) -> None:
        kind = self._kind(obj)
        if api:
            self.objects[(kind, object_key(obj))] = obj
        if cache:
            self._store(kind)[object_key(obj)] = obj

    def delete(self, obj: Any, *, api: bool = True, cache: bool = True) -> None:
        kind = self._kind(obj)
        if api:
            self.objects.pop((kind, object_key(obj)), None)
        if cache:
            self._store(kind).pop(object_key(obj), None)

    async def update(self, obj: Any) -> Any:
        kind, key = self._kind(obj), object_key(obj)
        self.calls.append(f"update {kind} {key}")
        cur = self.objects.get((kind, key))
        if cur is None:
            raise NotFoundError(f"{key} not found")
        if obj.metadata.resource_version != cur.metadata.resource_version:
            raise ConflictError(f"{key}: the object has been modified")
        new = type(obj)()
        new.CopyFrom(obj)
        new.metadata.resource_version = str(int(cur.metadata.resource_version or 0) + 1)
        self.objects[(kind, key)] = new
        if not self.informer_lags:
            self._store(kind)[key] = new
        out = type(obj)()
        out.CopyFrom(new)
        return out


def make_binder(
    api: FakeVolumeAPI,
    *,
    classes: Iterable[storagev1_pb2.StorageClass] = (),
    nodes: Iterable[core_pb2.Node] = (),
    csi_nodes: Iterable[storagev1_pb2.CSINode] = (),
    drivers: Iterable[storagev1_pb2.CSIDriver] = (),
    capacities: Iterable[storagev1_pb2.CSIStorageCapacity] = (),
    pods: Iterable[core_pb2.Pod] = (),
    bind_timeout: float = 10.0,
) -> VolumeBinder:
    listers = VolumeListers(
        pvs=api.pv_store,
        pvcs=api.pvc_store,
        classes={c.metadata.name: c for c in classes},
        csi_nodes={n.metadata.name: n for n in csi_nodes},
        csi_drivers={d.metadata.name: d for d in drivers},
        capacities={object_key(c): c for c in capacities},
    )
    by_name = {n.metadata.name: n for n in nodes}
    pod_store = {object_key(p): p for p in pods}
    return VolumeBinder(
        listers,
        client=api,
        pods=lambda: pod_store,
        nodes=by_name.get,
        bind_timeout=bind_timeout,
        clock=FakeClock(),
    )
