"""VolumeRestrictions: upstream's volume_restrictions_test.go tables as data (disk conflicts
per in-tree source, ReadWriteOncePod claims, both queueing hints)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.scheduler.framework.status import Code, Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import volumerestrictions as vr
from services.scheduler.volumelisters import listers_of
from tests.builders import MakeNode
from tests.scheduler.plugins._fakes import fake_handle
from tests.scheduler.plugins._volumes import claim_vol, pvc, vpod

SKIP = Status.skip(vr.NAME)
DISK_CONFLICT = Status.unschedulable(vr.ERR_REASON_DISK_CONFLICT, plugin=vr.NAME)
RWOP_CONFLICT = Status.unschedulable(vr.ERR_REASON_READ_WRITE_ONCE_POD_CONFLICT, plugin=vr.NAME)
OK = Status.success()

GCE, GCE2 = {"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}
AWS, AWS2 = (
    {"awsElasticBlockStore": {"volumeID": "foo"}},
    {"awsElasticBlockStore": {"volumeID": "bar"}},
)
RBD = {"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
RBD2 = {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}
_ISCSI = {"targetPortal": "127.0.0.1:3260", "fsType": "ext4", "lun": 0}
ISCSI = {"iscsi": {**_ISCSI, "iqn": "iqn.2016-12.server:storage.target01"}}
ISCSI2 = {"iscsi": {**_ISCSI, "iqn": "iqn.2017-12.server:storage.target01"}}
NO_RESTRICTION = {"name": "volume with no restriction"}


def _named(vol: dict[str, Any]) -> dict[str, Any]:
    return {"name": "v", **vol}


def _disk_cases(source: str, vol: dict[str, Any], other: dict[str, Any]) -> list[tuple[Any, ...]]:
    """TestGCEDiskConflicts / AWS / RBD / ISCSI: (pod volume, node's pod volume, PreFilter,
    Filter, name)."""
    return [
        (None, None, SKIP, OK, f"{source}: nothing"),
        (None, vol, SKIP, OK, f"{source}: one state"),
        (vol, vol, OK, DISK_CONFLICT, f"{source}: same state"),
        (other, vol, OK, OK, f"{source}: different state"),
    ]


DISK_CASES = [
    *_disk_cases("gce", GCE, GCE2),
    (NO_RESTRICTION, None, SKIP, OK, "gce: pod with a volume that doesn't have restrictions"),
    *_disk_cases("aws", AWS, AWS2),
    *_disk_cases("rbd", RBD, RBD2),
    *_disk_cases("iscsi", ISCSI, ISCSI2),
]


@pytest.mark.parametrize(
    ("vol", "existing", "want_pre", "want", "rule"), DISK_CASES, ids=[c[4] for c in DISK_CASES]
)
def test_disk_conflicts(
    vol: dict[str, Any] | None,
    existing: dict[str, Any] | None,
    want_pre: Status,
    want: Status,
    rule: str,
) -> None:
    pl = vr.new(None, fake_handle([]))
    pod = vpod(_named(vol)) if vol is not None else vpod()
    ni = NodeInfo()
    if existing is not None:
        ni.add_pod(PodInfo(vpod(_named(existing), uid="e")))
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(pod), [])
    assert pre == want_pre
    if pre.is_success():
        assert pl.filter(state, PodInfo(pod), ni) == want


def test_read_only_gce_disks_mounted_by_both_pods_do_not_conflict() -> None:
    ro = {"name": "v", "gcePersistentDisk": {"pdName": "foo", "readOnly": True}}
    assert vr.satisfy_volume_conflicts(vpod(ro), [vpod(ro)])
    assert not vr.satisfy_volume_conflicts(vpod(ro), [vpod(_named(GCE))])


# ----------------------------------------------------------------- ReadWriteOncePod

NS = "default"
POD_WITH_ONE_PVC = vpod(
    claim_vol("claim-with-rwop-1"), name="pod-with-one-pvc", namespace=NS, node="node-1"
)
POD_WITH_TWO_PVCS = vpod(
    claim_vol("claim-with-rwop-1"),
    claim_vol("claim-with-rwop-2"),
    name="pod-with-two-pvcs",
    namespace=NS,
    node="node-1",
)
POD_WITH_ONE_CONFLICT = vpod(
    claim_vol("claim-with-rwop-1"), name="pod-with-one-conflict", namespace=NS, node="node-1"
)
POD_WITH_TWO_CONFLICTS = vpod(
    claim_vol("claim-with-rwop-1"),
    claim_vol("claim-with-rwop-2"),
    name="pod-with-two-conflicts",
    namespace=NS,
    node="node-1",
)
POD_WITH_RWX = vpod(claim_vol("claim-with-rwx"), name="pod-with-rwx", namespace=NS, node="node-1")
RWOP_1 = pvc("claim-with-rwop-1", accessModes=["ReadWriteOncePod"])
RWOP_2 = pvc("claim-with-rwop-2", accessModes=["ReadWriteOncePod"])
RWX = pvc("claim-with-rwx", accessModes=["ReadWriteMany"])
NODE = MakeNode().name("node-1").obj()

ACCESS_MODE_CASES = [
    ("nothing", vpod(), [], [], [], SKIP, OK),
    (
        "failed to get PVC",
        POD_WITH_ONE_PVC,
        [],
        [],
        [],
        Status.unresolvable('persistentvolumeclaim "claim-with-rwop-1" not found', plugin=vr.NAME),
        OK,
    ),
    ("no access mode conflict", POD_WITH_ONE_PVC, [POD_WITH_RWX], [NODE], [RWOP_1, RWX], SKIP, OK),
    (
        "access mode conflict, unschedulable",
        POD_WITH_ONE_CONFLICT,
        [POD_WITH_ONE_PVC, POD_WITH_RWX],
        [NODE],
        [RWOP_1, RWX],
        OK,
        RWOP_CONFLICT,
    ),
    (
        "two conflicts, unschedulable",
        POD_WITH_TWO_CONFLICTS,
        [POD_WITH_TWO_PVCS, POD_WITH_RWX],
        [NODE],
        [RWOP_1, RWOP_2, RWX],
        OK,
        RWOP_CONFLICT,
    ),
]


@pytest.mark.parametrize(
    ("rule", "pod", "existing", "nodes", "claims", "want_pre", "want"),
    ACCESS_MODE_CASES,
    ids=[c[0] for c in ACCESS_MODE_CASES],
)
def test_access_mode_conflicts(
    rule: str,
    pod: core_pb2.Pod,
    existing: list[core_pb2.Pod],
    nodes: list[core_pb2.Node],
    claims: list[Any],
    want_pre: Status,
    want: Status,
) -> None:
    pl = vr.VolumeRestrictions(listers_of(*claims), fake_handle(nodes, existing))
    ni = NodeInfo()
    for p in existing:
        ni.add_pod(PodInfo(p))
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(pod), [])
    assert pre == want_pre
    if pre.is_success():
        assert pl.filter(state, PodInfo(pod), ni) == want


def test_preemption_removing_the_claims_user_clears_the_conflict() -> None:
    """AddPod/RemovePod: preemption's what-if of evicting the pod that holds the claim."""
    pl = vr.VolumeRestrictions(listers_of(RWOP_1), fake_handle([NODE], [POD_WITH_ONE_PVC]))
    state = CycleState()
    pi = PodInfo(POD_WITH_ONE_CONFLICT)
    pl.pre_filter(state, pi, [])
    ni = NodeInfo(NODE)
    holder = PodInfo(POD_WITH_ONE_PVC)
    assert pl.remove_pod(state, pi, holder, ni).is_success()
    assert pl.filter(state, pi, ni).is_success()
    assert pl.add_pod(state, pi, holder, ni).is_success()
    assert pl.filter(state, pi, ni) == RWOP_CONFLICT


def test_filter_without_pre_filter_is_an_error() -> None:
    st = vr.new(None, None).filter(CycleState(), PodInfo(vpod(_named(GCE))), NodeInfo())
    assert st.code == Code.ERROR


# ----------------------------------------------------------------- queueing hints

HINT_POD_DELETED = [
    (vpod(_named(GCE)), vpod(_named(GCE)), QueueingHint.QUEUE, "queue-new-object-gcedisk-conflict"),
    (
        vpod(_named(GCE)),
        vpod(_named(GCE2)),
        QueueingHint.SKIP,
        "skip-new-object-gcedisk-no-conflict",
    ),
    (vpod(_named(AWS)), vpod(_named(AWS)), QueueingHint.QUEUE, "queue-new-object-awsdisk-conflict"),
    (
        vpod(_named(AWS)),
        vpod(_named(AWS2)),
        QueueingHint.SKIP,
        "skip-new-object-awsdisk-no-conflict",
    ),
    (vpod(_named(RBD)), vpod(_named(RBD)), QueueingHint.QUEUE, "queue-new-object-rbddisk-conflict"),
    (
        vpod(_named(RBD)),
        vpod(_named(RBD2)),
        QueueingHint.SKIP,
        "skip-new-object-rbddisk-no-conflict",
    ),
    (
        vpod(_named(ISCSI)),
        vpod(_named(ISCSI)),
        QueueingHint.QUEUE,
        "queue-new-object-iscsidisk-conflict",
    ),
    (
        vpod(_named(ISCSI)),
        vpod(_named(ISCSI2)),
        QueueingHint.SKIP,
        "skip-new-object-iscsidisk-no-conflict",
    ),
    (
        vpod(claim_vol("claim-rwop"), name="pod1"),
        vpod(claim_vol("claim-rwop"), name="pod2"),
        QueueingHint.QUEUE,
        "queue-has-same-claim",
    ),
    (
        vpod(claim_vol("claim-1-rwop"), name="pod1"),
        vpod(claim_vol("claim-2-rwop"), name="pod2"),
        QueueingHint.SKIP,
        "skip-no-same-claim",
    ),
]


@pytest.mark.parametrize(
    ("pod", "deleted", "want", "rule"), HINT_POD_DELETED, ids=[c[3] for c in HINT_POD_DELETED]
)
def test_is_schedulable_after_pod_deleted(
    pod: core_pb2.Pod, deleted: core_pb2.Pod, want: QueueingHint, rule: str
) -> None:
    assert vr.is_schedulable_after_pod_deleted(pod, deleted, None) == want


def test_pod_deleted_in_another_namespace_is_skipped() -> None:
    pod = vpod(_named(GCE), namespace="a")
    assert vr.is_schedulable_after_pod_deleted(pod, vpod(_named(GCE), namespace="b"), None) == (
        QueueingHint.SKIP
    )


_RWX_1 = pvc("claim-with-rwx-1", accessModes=["ReadWriteMany"])
_RWX_2 = pvc("claim-with-rwx-2", accessModes=["ReadWriteMany"])
_ONE = vpod(claim_vol("claim-with-rwx-1"), name="pod-with-one-pvc", namespace=NS, node="node-1")
_TWO = vpod(
    claim_vol("claim-with-rwx-1"),
    claim_vol("claim-with-rwx-2"),
    name="pod-with-two-pvcs",
    namespace=NS,
    node="node-1",
)
_OTHER_NS = vpod(claim_vol("claim-with-rwx-1"), name="pod-with-one-pvc", namespace="kube-system")
HINT_PVC_ADDED = [
    (_TWO, _RWX_1, QueueingHint.QUEUE, "queue-new-object-pvc-belong-pod"),
    (_ONE, _RWX_2, QueueingHint.SKIP, "skip-new-object-unused"),
    (_ONE, _RWX_2, QueueingHint.SKIP, "skip-nil-old-object"),
    (_ONE, _RWX_2, QueueingHint.SKIP, "skip-new-object-not-belong-pod"),
    (_OTHER_NS, _RWX_1, QueueingHint.SKIP, "skip-new-object-namespace-not-equal-pod"),
]


@pytest.mark.parametrize(
    ("pod", "added", "want", "rule"), HINT_PVC_ADDED, ids=[c[3] for c in HINT_PVC_ADDED]
)
def test_is_schedulable_after_pvc_added(
    pod: core_pb2.Pod, added: Any, want: QueueingHint, rule: str
) -> None:
    assert vr.is_schedulable_after_pvc_added(pod, None, added) == want


def test_events_registered() -> None:
    events = {(e.event.resource, e.event.action) for e in vr.new(None, None).events_to_register()}
    assert {r for r, _ in events} == {"Pod", "Node", "PersistentVolumeClaim"}
