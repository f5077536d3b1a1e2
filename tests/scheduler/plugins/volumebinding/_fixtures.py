"""binder_test.go's fixtures, under upstream's names (makeTestPVC, makeTestPV, the
storage classes of newTestBinder, the nodes, CSINodes and CSIStorageCapacities), and the
test environment: `env` is newTestBinder + initVolumes + initClaims."""

from __future__ import annotations

from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.helpers.volumes import ANN_SELECTED_NODE
from services.scheduler.plugins.volumebinding import BindingInfo, PodVolumes, VolumeBinder
from services.scheduler.plugins.volumebinding.binder import BindingError
from tests.scheduler.plugins.volumebinding._fakes import (
    PV,
    PVC,
    FakeVolumeAPI,
    capacity,
    csi_node,
    make_binder,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)

PROVISIONER = "test-provisioner"
NS = "testns"
NODE_KEY, NODE_VALUE = "nodeKey", "node1"
WAIT, IMMEDIATE, WAIT_PROV, TOPO_MISMATCH = (
    "waitClass",
    "immediateClass",
    "waitClassWithProvisioner",
    "topoMismatchClass",
)
CLASSES = [
    storage_class(
        WAIT_PROV, "WaitForFirstConsumer", PROVISIONER, {NODE_KEY: [NODE_VALUE, "reference-value"]}
    ),
    storage_class(IMMEDIATE, "Immediate"),
    storage_class(WAIT, "WaitForFirstConsumer", "kubernetes.io/no-provisioner"),
    storage_class(
        TOPO_MISMATCH, "WaitForFirstConsumer", PROVISIONER, {NODE_KEY: ["reference-value"]}
    ),
]


def test_pvc(
    name: str,
    size: str,
    cls: str,
    *,
    bound: str = "",
    prebound: str = "",
    selected: str | None = None,
    rv: str = "1",
) -> PVC:
    """makeTestPVC."""
    c = pvc(
        name,
        cls,
        size=size,
        bound_pv=bound,
        volume_name=prebound,
        namespace=NS,
        rv=rv,
        selected_node=selected,
    )
    c.spec.volume_mode = "Filesystem"
    return c


test_pvc.__test__ = False  # type: ignore[attr-defined]


def test_pv(name: str, node_name: str, cap: str, rv: str, claim: PVC | None, cls: str) -> PV:
    """makeTestPV: node affinity nodeKey In [node]."""
    return pv(
        name,
        cls,
        capacity=cap,
        rv=rv,
        claim=claim,
        affinity={NODE_KEY: [node_name]} if node_name else None,
    )


test_pv.__test__ = False  # type: ignore[attr-defined]

unboundPVC = test_pvc("unbound-pvc", "1G", WAIT)
unboundPVC2 = test_pvc("unbound-pvc2", "5G", WAIT)
preboundPVC = test_pvc("prebound-pvc", "1G", WAIT, prebound="pv-node1a")
preboundPVCNode1a = test_pvc("unbound-pvc", "1G", WAIT, prebound="pv-node1a")
boundPVC = test_pvc("bound-pvc", "1G", WAIT, bound="pv-bound")
boundPVCNode1a = test_pvc("unbound-pvc", "1G", WAIT, bound="pv-node1a")
immediateUnboundPVC = test_pvc("immediate-unbound-pvc", "1G", IMMEDIATE)
immediateBoundPVC = test_pvc("immediate-bound-pvc", "1G", IMMEDIATE, bound="pv-bound-immediate")
provisionedPVC = test_pvc("provisioned-pvc", "1Gi", WAIT_PROV)
provisionedPVC2 = test_pvc("provisioned-pvc2", "1Gi", WAIT_PROV)
provisionedPVCHigherVersion = test_pvc("provisioned-pvc2", "1Gi", WAIT_PROV, rv="2")
provisionedPVCBound = test_pvc("provisioned-pvc", "1Gi", WAIT_PROV, bound="pv-bound")
noProvisionerPVC = test_pvc("no-provisioner-pvc", "1Gi", WAIT)
topoMismatchPVC = test_pvc("topo-mismatch-pvc", "1Gi", TOPO_MISMATCH)
selectedNodePVC = test_pvc("provisioned-pvc", "1Gi", WAIT_PROV, selected=NODE_VALUE)
boundMigrationPVC = test_pvc("pvc-migration-bound", "1G", WAIT, bound="pv-migration-bound")
provMigrationPVCBound = test_pvc(
    "pvc-migration-provisioned", "1Gi", WAIT_PROV, bound="pv-migration-bound"
)

TEST_POD_UID = "uid-test-pod"
correctGenericPVC = test_pvc("test-pod-test-volume", "1G", IMMEDIATE, bound="pv-bound")
correctGenericPVC.metadata.owner_references.add(name="test-pod", uid=TEST_POD_UID, controller=True)
conflictingGenericPVC = test_pvc("test-pod-test-volume", "1G", IMMEDIATE, bound="pv-bound")

pvNode1a = test_pv("pv-node1a", "node1", "5G", "1", None, WAIT)
pvNode1b = test_pv("pv-node1b", "node1", "10G", "1", None, WAIT)
pvNode1c = test_pv("pv-node1b", "node1", "5G", "1", None, WAIT)
pvNode2 = test_pv("pv-node2", "node2", "1G", "1", None, WAIT)
pvBound = test_pv("pv-bound", "node1", "1G", "1", boundPVC, WAIT)
pvNode1aBound = test_pv("pv-node1a", "node1", "5G", "1", unboundPVC, WAIT)
pvNode1bBound = test_pv("pv-node1b", "node1", "10G", "1", unboundPVC2, WAIT)
pvNode1bBoundHigherVersion = test_pv("pv-node1b", "node1", "10G", "2", unboundPVC2, WAIT)
pvBoundImmediate = test_pv("pv-bound-immediate", "node1", "1G", "1", immediateBoundPVC, IMMEDIATE)
pvBoundImmediateNode2 = test_pv(
    "pv-bound-immediate", "node2", "1G", "1", immediateBoundPVC, IMMEDIATE
)
pvBoundGeneric = test_pv("pv-bound", "node1", "1G", "1", correctGenericPVC, WAIT)

ZONE1_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "us-east-1",
    "failure-domain.beta.kubernetes.io/region": "us-east-1a",
}


def migration_pv(claim: PVC, migrated: bool) -> PV:
    """makeTestPVForCSIMigration: no node affinity, zone labels, a GCE PD (migratable) or
    an RBD (not) source."""
    v = test_pv("pv-migration-bound", "", "1G", "1", claim, WAIT)
    v.metadata.labels.update(ZONE1_LABELS)
    if migrated:
        v.spec.gce_persistent_disk.pd_name = "test-disk"
        v.spec.gce_persistent_disk.fs_type = "ext4"
    else:
        v.spec.rbd.update({"image": "test-disk"})
    return v


migrationPVBound = migration_pv(boundMigrationPVC, True)
migrationPVBoundToUnbound = migration_pv(unboundPVC, True)
nonmigrationPVBoundToUnbound = migration_pv(unboundPVC, False)

node1 = node("node1", {NODE_KEY: "node1"}, hostname=False)
node2 = node("node2", {NODE_KEY: "node2"}, hostname=False)
node1NoLabels = node("node1", hostname=False)
node1Zone1 = node("node1", {"topology.gke.io/zone": "us-east-1"}, hostname=False)
node1Zone2 = node("node1", {"topology.gke.io/zone": "us-east-2"}, hostname=False)
csiNode1Migrated = csi_node("node1", "kubernetes.io/gce-pd")
csiNode1NotMigrated = csi_node("node1", "")

networkAttachedCapacity = capacity("net", WAIT_PROV, None, "1Gi")
node1Capacity = capacity("net", WAIT_PROV, {NODE_KEY: "node1"}, "1Gi")
node2Capacity = capacity("net", WAIT_PROV, {NODE_KEY: "node2"}, "1Gi")


def binding(claim: PVC, volume: PV) -> BindingInfo:
    c, v = PVC(), PV()
    c.CopyFrom(claim)
    v.CopyFrom(volume)
    return BindingInfo(c, v)


def with_selected_node(claim: PVC, node_name: str = NODE_VALUE) -> PVC:
    """addProvisionAnn / pvcSetSelectedNode."""
    c = PVC()
    c.CopyFrom(claim)
    c.metadata.annotations[ANN_SELECTED_NODE] = node_name
    return c


def without_annotations(claim: PVC) -> PVC:
    c = PVC()
    c.CopyFrom(claim)
    c.metadata.ClearField("annotations")
    return c


def without_claim_uid(volume: PV) -> PV:
    v = PV()
    v.CopyFrom(volume)
    v.spec.claim_ref.uid = ""
    return v


def test_pod_with(claims: list[PVC] = (), **kw: Any) -> core_pb2.Pod:  # type: ignore[assignment]
    return pod(
        "test-pod",
        [c.metadata.name for c in claims],
        namespace=NS,
        node_name="node1",
        uid=TEST_POD_UID,
        **kw,
    )


test_pod_with.__test__ = False  # type: ignore[attr-defined]


def env(
    *,
    pvs: list[PV] = (),  # type: ignore[assignment]
    api_pvs: list[PV] | None = None,
    pvcs: list[PVC] = (),  # type: ignore[assignment]
    api_pvcs: list[PVC] | None = None,
    **kw: Any,
) -> tuple[FakeVolumeAPI, VolumeBinder]:
    """newTestBinder + initVolumes(pvs, api_pvs) + initClaims(pvcs, api_pvcs)."""
    api = FakeVolumeAPI()
    for v in pvs:
        api.add(v, api=api_pvs is None)
    for v in api_pvs or []:
        api.add(v, cache=False)
    for c in pvcs:
        api.add(c, api=api_pvcs is None)
    for c in api_pvcs or []:
        api.add(c, cache=False)
    return api, make_binder(api, classes=kw.pop("classes", CLASSES), **kw)


def find(binder: VolumeBinder, p: core_pb2.Pod, n: core_pb2.Node) -> tuple[PodVolumes, list[str]]:
    """binder_test.go findPodVolumes (raises where upstream returns an error)."""
    claims = binder.get_pod_volume_claims(p)
    if claims.unbound_claims_immediate:
        raise BindingError("pod has unbound immediate PersistentVolumeClaims")
    return binder.find_pod_volumes(p, claims, n)


def pairs(bindings: list[BindingInfo] | None) -> list[tuple[str, str]] | None:
    return (
        None if bindings is None else [(b.pvc.metadata.name, b.pv.metadata.name) for b in bindings]
    )
