"""NodeVolumeLimits: upstream's nodevolumelimits/csi_test.go tables as data (TestCSILimits,
the pod-deleted, PVC-added and VolumeAttachment-deleted queueing hints).

The fixtures are upstream's: for each driver D of a case, claims and volumes `csi-D-0..3`
(CSI volumes with that handle; for the in-tree aws-ebs plugin name an awsElasticBlockStore
volume, for hostpath a hostPath one), `csi-4` unbound with class `csi-sc`, `csi-5` unbound
without a class, `csi-6` naming a missing volume; the class's provisioner is the case's
first driver; the node's CSINode lists the drivers, with the case's limit ("csinode") or
without one ("csinode-with-no-limit"), or is missing (""), and has the aws-ebs plugin
migrated. One wording differs: a missing claim reads as client-go's real lister words it
(`persistentvolumeclaim "x" not found`), not as upstream's fake lister (`persistentvolumeclaims`).
"""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.csimigration import (
    AWS_EBS_DRIVER,
    AWS_EBS_PLUGIN,
    GCE_PD_DRIVER,
    MIGRATED_PLUGINS_ANNOTATION,
    csi_attach_limit_key,
)
from services.api.machinery.meta import object_key
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import nodevolumelimits as nvl
from services.scheduler.volumelisters import listers_of
from tests.builders import MakeNode
from tests.scheduler.plugins._volumes import claim_vol, ephemeral_vol, pv, pvc, storage_class, vpod

EBS, GCE = AWS_EBS_DRIVER, GCE_PD_DRIVER
HOSTPATH_PLUGIN = "kubernetes.io/hostpath"
SC_NAME = "csi-sc"
NODE_NAME = "node-for-max-pd-test-1"
EXCEEDED = Status.unschedulable(nvl.ERR_REASON_MAX_VOLUME_COUNT_EXCEEDED, plugin=nvl.NAME)
OK = Status.success()


def claims_pod(*claims: str, name: str = "", namespace: str = "") -> core_pb2.Pod:
    return vpod(*(claim_vol(c) for c in claims), name=name, namespace=namespace)


RUNNING = claims_pod("csi-ebs.csi.aws.com-3")
PENDING_VOLUME = claims_pod("csi-4")
UNBOUND_PVC_POD_2 = claims_pod("csi-4")
MISSING_PV = claims_pod("csi-6")
NO_SC_PVC = claims_pod("csi-5")
GCE_TWO_VOL = claims_pod("csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2")
IN_TREE_ONE_VOL = claims_pod("csi-kubernetes.io/aws-ebs-0")
IN_TREE_TWO_VOL = claims_pod("csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2")
CSI_EBS_ONE_VOL = claims_pod("csi-ebs.csi.aws.com-0")
CSI_EBS_TWO_VOL = claims_pod("csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2")
IN_TREE_NON_MIGRATABLE = claims_pod("csi-kubernetes.io/hostpath-0")
EPHEMERAL = vpod(ephemeral_vol("xyz"), name="abc", namespace="test", uid="12345")
EPHEMERAL_TWO = vpod(
    ephemeral_vol("x"), ephemeral_vol("y"), name="abc", namespace="test", uid="12345II"
)


def owned_claim(pod: core_pb2.Pod, volume: str, *, owned: bool = True) -> Any:
    meta: dict[str, Any] = {}
    if owned:
        meta["ownerReferences"] = [
            {"kind": "Pod", "name": pod.metadata.name, "uid": pod.metadata.uid, "controller": True}
        ]
    return pvc(
        f"{pod.metadata.name}-{volume}",
        namespace=pod.metadata.namespace,
        meta=meta,
        storageClassName=SC_NAME,
    )


EPHEMERAL_CLAIM = owned_claim(EPHEMERAL, "xyz")
CONFLICTING_CLAIM = owned_claim(EPHEMERAL, "xyz", owned=False)
EPHEMERAL_CLAIM_X = owned_claim(EPHEMERAL_TWO, "x")
EPHEMERAL_CLAIM_Y = owned_claim(EPHEMERAL_TWO, "y")
_AWS_INLINE = {"name": "aws", "awsElasticBlockStore": {"volumeID": "aws-inline1"}}
IN_TREE_INLINE = vpod(_AWS_INLINE)
IN_TREE_INLINE_SAME_CSI_ID = vpod(
    {"name": "aws", "awsElasticBlockStore": {"volumeID": "csi-ebs.csi.aws.com-1"}}
)
_CM, _SECRET = {"name": "cm", "configMap": {}}, {"name": "secret", "secret": {}}
ONLY_CM_AND_SECRET = vpod(_CM, _SECRET)
PVC_WITH_CM_AND_SECRET = vpod(_CM, _SECRET, claim_vol("csi-ebs.csi.aws.com-0"))
EPHEMERAL_WITH_CM_AND_SECRET = vpod(
    _CM, _SECRET, ephemeral_vol("xyz"), name="abc", namespace="test"
)
INLINE_MIGRATABLE_WITH_CM_AND_SECRET = vpod(_CM, _SECRET, _AWS_INLINE)

_EPHEMERAL_MISSING = Status.unresolvable(
    'looking up PVC test/abc-xyz: persistentvolumeclaim "abc-xyz" not found', plugin=nvl.NAME
)
_NOT_OWNED = Status(
    Code.ERROR, ("PVC test/abc-xyz was not created for pod test/abc (pod is not owner)",), nvl.NAME
)
MIGRATION = (AWS_EBS_PLUGIN, EBS)


def case(
    test: str,
    new_pod: core_pb2.Pod,
    existing: tuple[core_pb2.Pod, ...] = (),
    *,
    max_vols: int = 0,
    drivers: tuple[str, ...] = (EBS,),
    limit_source: str = "csinode",
    va_count: int = 0,
    extra_claims: tuple[Any, ...] = (),
    want: Status = OK,
    want_pre: Status = OK,
) -> tuple[Any, ...]:
    return (
        test,
        new_pod,
        existing,
        max_vols,
        drivers,
        limit_source,
        va_count,
        extra_claims,
        want,
        want_pre,
    )


CSI_LIMITS = [
    case("should count VolumeAttachments towards volume limit when no pods exist", CSI_EBS_ONE_VOL, max_vols=2, va_count=2, want=EXCEEDED),
    case("should schedule pod when VolumeAttachments count does not exceed limit", CSI_EBS_ONE_VOL, max_vols=2, va_count=1),
    case("fits when node volume limit >= new pods CSI volume", CSI_EBS_ONE_VOL, (RUNNING, CSI_EBS_TWO_VOL), max_vols=4),
    case("doesn't when node volume limit <= pods CSI volume", CSI_EBS_ONE_VOL, (RUNNING, CSI_EBS_TWO_VOL), max_vols=2, want=EXCEEDED),
    case("should when driver does not support volume limits", CSI_EBS_ONE_VOL, (RUNNING, CSI_EBS_TWO_VOL), max_vols=2, limit_source="csinode-with-no-limit"),
    case("count pending PVCs towards volume limit <= pods CSI volume", CSI_EBS_ONE_VOL, (PENDING_VOLUME, CSI_EBS_TWO_VOL), max_vols=2, want=EXCEEDED),
    case("count multiple pending pvcs towards volume limit >= pods CSI volume", CSI_EBS_ONE_VOL, (PENDING_VOLUME, UNBOUND_PVC_POD_2, CSI_EBS_TWO_VOL), max_vols=4),
    case("should count PVCs with invalid PV name but valid SC", CSI_EBS_ONE_VOL, (MISSING_PV, CSI_EBS_TWO_VOL), max_vols=2, want=EXCEEDED),
    case("don't count pvcs with missing SC towards volume limit", CSI_EBS_ONE_VOL, (RUNNING, NO_SC_PVC), max_vols=2),
    case("count pvcs with the same type towards volume limit", CSI_EBS_ONE_VOL, (GCE_TWO_VOL, CSI_EBS_TWO_VOL), max_vols=2, drivers=(EBS, GCE), want=EXCEEDED),
    case("don't count pvcs with different type towards volume limit", GCE_TWO_VOL, (CSI_EBS_TWO_VOL, RUNNING), max_vols=2, drivers=(EBS, GCE)),
    case("should count in-tree volumes if migration is enabled", IN_TREE_ONE_VOL, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
    case("nil csi node", IN_TREE_INLINE, (IN_TREE_TWO_VOL,), drivers=MIGRATION, limit_source=""),
    case("should count unbound in-tree volumes if migration is enabled", PENDING_VOLUME, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
    case("should not limit pod if volume used does not report limits", IN_TREE_ONE_VOL, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, limit_source="csinode-with-no-limit"),
    case("should not count non-migratable in-tree volumes", IN_TREE_NON_MIGRATABLE, (CSI_EBS_TWO_VOL,), max_vols=2, drivers=(HOSTPATH_PLUGIN, EBS)),
    case("should count in-tree inline volumes if migration is enabled", IN_TREE_INLINE, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
    case("should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)", IN_TREE_ONE_VOL, (CSI_EBS_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
    case("should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", IN_TREE_INLINE, (CSI_EBS_TWO_VOL, IN_TREE_ONE_VOL), max_vols=3, drivers=MIGRATION, want=EXCEEDED),
    case("should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)", IN_TREE_INLINE_SAME_CSI_ID, (CSI_EBS_TWO_VOL, IN_TREE_ONE_VOL), max_vols=3, drivers=MIGRATION),
    case("should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)", CSI_EBS_ONE_VOL, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
    case("ephemeral volume missing", EPHEMERAL, limit_source="csinode-with-no-limit", want=_EPHEMERAL_MISSING),
    case("ephemeral volume not owned", EPHEMERAL, limit_source="csinode-with-no-limit", extra_claims=(CONFLICTING_CLAIM,), want=_NOT_OWNED),
    case("ephemeral volume unbound", EPHEMERAL, limit_source="csinode-with-no-limit", extra_claims=(EPHEMERAL_CLAIM,)),
    case("ephemeral doesn't when node volume limit <= pods CSI volume", EPHEMERAL, (RUNNING, CSI_EBS_TWO_VOL), max_vols=2, extra_claims=(EPHEMERAL_CLAIM,), want=EXCEEDED),
    case("ephemeral doesn't when node volume limit <= pods ephemeral CSI volume", CSI_EBS_ONE_VOL, (RUNNING, EPHEMERAL_TWO), max_vols=2, extra_claims=(EPHEMERAL_CLAIM_X, EPHEMERAL_CLAIM_Y), want=EXCEEDED),
    case("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume, ephemeral disabled", CSI_EBS_ONE_VOL, (RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL), max_vols=3, extra_claims=(EPHEMERAL_CLAIM,), want=EXCEEDED),
    case("persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume", CSI_EBS_ONE_VOL, (RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL), max_vols=3, extra_claims=(EPHEMERAL_CLAIM,), want=EXCEEDED),
    case("persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume", CSI_EBS_ONE_VOL, (RUNNING, EPHEMERAL, CSI_EBS_TWO_VOL), max_vols=5, extra_claims=(EPHEMERAL_CLAIM,)),
    case("skip Filter when the pod only uses secrets and configmaps", ONLY_CM_AND_SECRET, max_vols=2, want_pre=Status.skip(nvl.NAME)),
    case("don't skip Filter when the pod has pvcs", PVC_WITH_CM_AND_SECRET, max_vols=2),
    case("don't skip Filter when the pod has ephemeral volumes", EPHEMERAL_WITH_CM_AND_SECRET, limit_source="csinode-with-no-limit", want=_EPHEMERAL_MISSING),
    case("don't skip Filter when the pod has inline migratable volumes", INLINE_MIGRATABLE_WITH_CM_AND_SECRET, (IN_TREE_TWO_VOL,), max_vols=2, drivers=MIGRATION, want=EXCEEDED),
]  # fmt: skip


def fake_pvs(drivers: tuple[str, ...]) -> list[storage_pb2.PersistentVolume]:
    """getFakeCSIPVLister("csi", drivers...)."""
    out = []
    for driver in drivers:
        for j in range(4):
            handle = f"csi-{driver}-{j}"
            if driver == AWS_EBS_PLUGIN:
                out.append(pv(handle, awsElasticBlockStore={"volumeID": handle}))
            elif driver == HOSTPATH_PLUGIN:
                out.append(pv(handle, hostPath={"path": "/tmp"}))
            else:
                out.append(pv(handle, csi={"driver": driver, "volumeHandle": handle}))
    return out


def fake_pvcs(drivers: tuple[str, ...]) -> list[storage_pb2.PersistentVolumeClaim]:
    """getFakeCSIPVCLister("csi", "csi-sc", drivers...)."""
    out = [
        pvc(f"csi-{d}-{j}", namespace="", volumeName=f"csi-{d}-{j}")
        for d in drivers
        for j in range(4)
    ]
    out.append(pvc("csi-4", namespace="", storageClassName=SC_NAME))
    out.append(pvc("csi-5", namespace=""))
    out.append(pvc("csi-6", namespace="", storageClassName=SC_NAME, volumeName="missing-in-action"))
    return out


def fake_attachments(count: int, drivers: tuple[str, ...]) -> list[storagev1_pb2.VolumeAttachment]:
    out = []
    for driver in drivers:
        for j in range(count):
            va = storagev1_pb2.VolumeAttachment()
            va.metadata.name = f"va-{driver}-{j}"
            va.spec.node_name, va.spec.attacher = NODE_NAME, driver
            va.spec.source.persistent_volume_name = f"csi-{driver}-{j}"
            out.append(va)
    return out


def csi_node(limit_source: str, limit: int, drivers: tuple[str, ...]) -> Any:
    """getNodeWithPodAndVolumeLimits' CSINode, with the aws-ebs plugin migrated on it."""
    if limit_source not in ("csinode", "csinode-with-no-limit"):
        return None
    obj = storagev1_pb2.CSINode()
    obj.metadata.name = NODE_NAME
    obj.metadata.annotations[MIGRATED_PLUGINS_ANNOTATION] = AWS_EBS_PLUGIN
    for driver in drivers:
        d = obj.spec.drivers.add(name=driver, node_id=NODE_NAME)
        if limit_source == "csinode":
            d.allocatable.count = limit
    return obj


@pytest.mark.parametrize(
    (
        "test",
        "new_pod",
        "existing",
        "max_vols",
        "drivers",
        "limit_source",
        "va_count",
        "extra_claims",
        "want",
        "want_pre",
    ),
    CSI_LIMITS,
    ids=[c[0] for c in CSI_LIMITS],
)
def test_csi_limits(
    test: str,
    new_pod: core_pb2.Pod,
    existing: tuple[core_pb2.Pod, ...],
    max_vols: int,
    drivers: tuple[str, ...],
    limit_source: str,
    va_count: int,
    extra_claims: tuple[Any, ...],
    want: Status,
    want_pre: Status,
) -> None:
    node = csi_node(limit_source, max_vols, drivers)
    listers = listers_of(
        *fake_pvs(drivers),
        *fake_pvcs(drivers),
        *extra_claims,
        storage_class(SC_NAME, provisioner=drivers[0]),
        *fake_attachments(va_count, drivers),
        *([node] if node is not None else []),
    )
    pl = nvl.NodeVolumeLimits(listers)
    ni = NodeInfo(MakeNode().name(NODE_NAME).obj())
    for p in existing:
        ni.add_pod(PodInfo(p))
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(new_pod), [])
    assert pre == want_pre
    if not pre.is_skip():
        assert pl.filter(state, PodInfo(new_pod), ni) == want


def test_the_nodes_attachable_volumes_are_the_limit_without_a_csinode_count() -> None:
    listers = listers_of(*fake_pvs((EBS,)), *fake_pvcs((EBS,)))
    pl = nvl.NodeVolumeLimits(listers)
    node = MakeNode().name(NODE_NAME).allocatable({csi_attach_limit_key(EBS): "2"}).obj()
    ni = NodeInfo(node)
    for p in (RUNNING, CSI_EBS_TWO_VOL):
        ni.add_pod(PodInfo(p))
    assert pl.filter(CycleState(), PodInfo(CSI_EBS_ONE_VOL), ni) == EXCEEDED


def test_a_long_driver_name_gets_a_hashed_limit_key() -> None:
    key = csi_attach_limit_key("a" * 60)
    assert len(key) < 63 and key.startswith("attachable-volumes-csi-" + "a" * 23)


# ----------------------------------------------------------------- queueing hints

_POD_EBS = claims_pod("csi-ebs.csi.aws.com-2")


def _deleted(pod: core_pb2.Pod, scheduled: bool = True) -> core_pb2.Pod:
    out = core_pb2.Pod()
    out.CopyFrom(pod)
    out.spec.node_name = NODE_NAME if scheduled else ""
    return out


HINT_POD_DELETED = [
    (
        "return a Queue when a deleted pod has a PVC",
        _deleted(claims_pod("placeholder")),
        QueueingHint.QUEUE,
    ),
    (
        "return a Queue when a deleted pod has a inline migratable volume",
        _deleted(vpod({"name": "v", "awsElasticBlockStore": {}})),
        QueueingHint.QUEUE,
    ),
    (
        "return a QueueSkip when a deleted pod doesn't have any volume",
        _deleted(vpod()),
        QueueingHint.SKIP,
    ),
    (
        "return a QueueSkip when a deleted pod is not scheduled.",
        _deleted(claims_pod("csi-ebs.csi.aws.com-0"), scheduled=False),
        QueueingHint.SKIP,
    ),
]


@pytest.mark.parametrize(
    ("test", "deleted", "want"), HINT_POD_DELETED, ids=[c[0] for c in HINT_POD_DELETED]
)
def test_is_schedulable_after_pod_deleted(
    test: str, deleted: core_pb2.Pod, want: QueueingHint
) -> None:
    assert nvl.is_schedulable_after_pod_deleted(_POD_EBS, deleted, None) == want


HINT_PVC_ADDED = [
    ("a pod isn't in the same namespace as an added PVC", vpod(namespace="ns1"), pvc("", namespace="ns2"), QueueingHint.SKIP),
    ("a pod is in the same namespace as an added PVC", claims_pod("pvc1", namespace="ns1"), pvc("pvc1", namespace="ns1"), QueueingHint.QUEUE),
    (
        "a pod has an ephemeral volume related to an added PVC",
        vpod(ephemeral_vol("ephemeral"), name="pod1", namespace="ns1"),
        pvc("pod1-ephemeral", namespace="ns1"),
        QueueingHint.QUEUE,
    ),
    ("a pod doesn't have the same PVC as an added PVC", claims_pod("pvc1", namespace="ns1"), pvc("pvc2", namespace="ns1"), QueueingHint.SKIP),
    ("a pod doesn't have any PVC attached", vpod(namespace="ns1"), pvc("pvc2", namespace="ns1"), QueueingHint.SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("test", "pod", "added", "want"), HINT_PVC_ADDED, ids=[c[0] for c in HINT_PVC_ADDED]
)
def test_is_schedulable_after_pvc_added(
    test: str, pod: core_pb2.Pod, added: Any, want: QueueingHint
) -> None:
    assert nvl.is_schedulable_after_pvc_added(pod, None, added) == want


def _va(attacher: str, *, pv_name: str = "", inline_driver: str = "") -> Any:
    va = storagev1_pb2.VolumeAttachment()
    va.metadata.name = "volumeattachment1"
    va.spec.node_name, va.spec.attacher = "fake-node", attacher
    if pv_name:
        va.spec.source.persistent_volume_name = pv_name
    if inline_driver:
        va.spec.source.inline_volume_spec.csi.driver = inline_driver
    return va


_EXISTING = pvc("pvc1", namespace="ns1", volumeName="pv1")
_GKE = "test.storage.gke.io"
_AWS = {"name": "aws", "awsElasticBlockStore": {"volumeID": "test"}}
_GCE = {"name": "gce", "gcePersistentDisk": {"pdName": "test"}}
HINT_VA_DELETED = [
    ("a pod has PVC when VolumeAttachment is deleting", vpod(claim_vol("pvc1"), namespace="ns1"), _EXISTING, _va(_GKE, pv_name="pv1"), QueueingHint.QUEUE),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) when VolumeAttachment (AWSEBSDriver) is deleting (match)", vpod(_AWS, namespace="ns1"), None, _va(EBS, inline_driver=EBS), QueueingHint.QUEUE),
    ("a pod has an Inline Migratable volume (GCEPDDriver) when VolumeAttachment (AWSEBSDriver) is deleting (no match)", vpod(_GCE, namespace="ns1"), None, _va(EBS, inline_driver=EBS), QueueingHint.SKIP),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver) is deleting", vpod(_AWS, claim_vol("pvc1"), namespace="ns1"), _EXISTING, _va(EBS, inline_driver=EBS), QueueingHint.QUEUE),
    ("a pod has an Inline Migratable volume (AWSEBSDriver) and PVC when VolumeAttachment (AWSEBSDriver)  is deleting", vpod(_AWS, claim_vol("pvc1"), namespace="ns1"), _EXISTING, _va(_GKE, pv_name="pv1"), QueueingHint.QUEUE),
    ("a pod has no PVC when VolumeAttachment is deleting", vpod(namespace="ns1"), None, _va(_GKE, pv_name="pv1"), QueueingHint.SKIP),
]  # fmt: skip


@pytest.mark.parametrize(
    ("test", "pod", "existing", "deleted", "want"),
    HINT_VA_DELETED,
    ids=[c[0] for c in HINT_VA_DELETED],
)
def test_is_schedulable_after_volume_attachment_deleted(
    test: str, pod: core_pb2.Pod, existing: Any, deleted: Any, want: QueueingHint
) -> None:
    pl = nvl.NodeVolumeLimits(listers_of(*([existing] if existing is not None else [])))
    assert pl.is_schedulable_after_volume_attachment_deleted(pod, deleted, None) == want


class _Source:
    """An informer's store and handlers, as VolumeListers uses them."""

    def __init__(self, *objects: Any) -> None:
        self.store = {object_key(o): o for o in objects}
        self.handlers: list[Any] = []

    def add_handlers(self, handlers: Any) -> None:
        self.handlers.append(handlers)

    def add(self, obj: Any) -> None:
        self.store[object_key(obj)] = obj
        for h in self.handlers:
            h.on_add(obj)


def _kept_counts_case() -> tuple[nvl.NodeVolumeLimits, NodeInfo, _Source, _Source]:
    """A node of limit 1 with RUNNING on it, on informer-like sources; its plugin, node,
    claims and attachments."""
    pvcs, attachments = _Source(*fake_pvcs((EBS,))), _Source()
    listers = nvl.VolumeListers(
        pvs=_Source(*fake_pvs((EBS,))),
        pvcs=pvcs,
        classes=_Source(),
        csi_nodes=_Source(csi_node("csinode", 1, (EBS,))),
        volume_attachments=attachments,
    )
    ni = NodeInfo(MakeNode().name(NODE_NAME).obj())
    ni.add_pod(PodInfo(RUNNING))  # uses csi-ebs.csi.aws.com-3, the node's one volume
    return nvl.NodeVolumeLimits(listers), ni, pvcs, attachments


def _attempt(pl: nvl.NodeVolumeLimits, ni: NodeInfo) -> Status:
    state = CycleState()
    pl.pre_filter(state, PodInfo(CSI_EBS_ONE_VOL), [])
    return pl.filter(state, PodInfo(CSI_EBS_ONE_VOL), ni)


def test_a_nodes_counts_are_kept_until_a_claim_it_read_is_replaced() -> None:
    """On informer-backed listers a node's counts are kept between attempts while every
    object they read is the same object (an informer replaces an object on each change)."""
    pl, ni, pvcs, _ = _kept_counts_case()
    assert _attempt(pl, ni) == EXCEEDED
    # The running pod's claim now names the new pod's volume: it no longer adds one.
    key = "csi-ebs.csi.aws.com-3"
    pvcs.store[key].spec.volume_name = "csi-ebs.csi.aws.com-0"  # in place: not seen
    assert _attempt(pl, ni) == EXCEEDED  # from the kept counts
    moved = pvc(key, namespace="", volumeName="csi-ebs.csi.aws.com-0")
    pvcs.store[key] = moved  # replaced, as an informer does
    assert _attempt(pl, ni) == OK


def test_a_nodes_counts_are_kept_until_its_pods_or_attachments_change() -> None:
    pl, ni, _, attachments = _kept_counts_case()
    assert _attempt(pl, ni) == EXCEEDED
    ni.remove_pod(RUNNING)  # a new generation: counted again
    assert _attempt(pl, ni) == OK
    # A VolumeAttachment of another volume to the node: the node is full again.
    (va,) = fake_attachments(1, (EBS,))
    va.spec.source.persistent_volume_name = "csi-ebs.csi.aws.com-2"
    attachments.add(va)
    assert _attempt(pl, ni) == EXCEEDED


def test_the_listers_index_attachments_by_node_as_the_informer_reports_them() -> None:
    first, second = fake_attachments(2, (EBS,))
    source = _Source(first)
    listers = nvl.VolumeListers(volume_attachments=source)
    assert listers.attachments_to(NODE_NAME) == [first]
    (handlers,) = source.handlers
    handlers.on_add(second)
    assert listers.attachments_to(NODE_NAME) == [first, second]
    moved = storagev1_pb2.VolumeAttachment()
    moved.CopyFrom(second)
    moved.spec.node_name = "other"
    handlers.on_update(second, moved)
    assert (listers.attachments_to(NODE_NAME), listers.attachments_to("other")) == (
        [first],
        [moved],
    )
    before = listers.attachments_version(NODE_NAME)
    handlers.on_delete(first)
    assert listers.attachments_to(NODE_NAME) == []
    assert listers.attachments_version(NODE_NAME) != before
    assert nvl.VolumeListers(volume_attachments={}).attachments_to(NODE_NAME) is None
