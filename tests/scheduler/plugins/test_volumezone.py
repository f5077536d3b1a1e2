"""VolumeZone: upstream's volume_zone_test.go tables as data (single zone, multi zone, with
binding, and the PVC / StorageClass / PV queueing hints)."""

from __future__ import annotations

from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.helpers.wellknown import (
    LABEL_FAILURE_DOMAIN_BETA_REGION as BETA_REGION,
)
from services.api.helpers.wellknown import (
    LABEL_FAILURE_DOMAIN_BETA_ZONE as BETA_ZONE,
)
from services.api.helpers.wellknown import (
    LABEL_TOPOLOGY_REGION as REGION,
)
from services.api.helpers.wellknown import (
    LABEL_TOPOLOGY_ZONE as ZONE,
)
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import CycleState, NodeInfo, PodInfo, QueueingHint
from services.scheduler.plugins import volumezone as vz
from services.scheduler.volumelisters import VolumeListers, listers_of
from tests.builders import MakeNode
from tests.scheduler.plugins._volumes import claim_vol, pv, pvc, storage_class, vpod

SKIP = Status.skip(vz.NAME)
OK = Status.success()
CONFLICT = Status.unresolvable(vz.ERR_REASON_CONFLICT, plugin=vz.NAME)
USELESS = {"uselessLabel": "none"}


def pod_with(claim: str) -> core_pb2.Pod:
    """createPodWithVolume."""
    return vpod(claim_vol(claim), name="pod_1", namespace="default")


def node(labels: dict[str, str]) -> core_pb2.Node:
    return MakeNode().name("host1").labels(labels).obj()


def unresolvable(reason: str) -> Status:
    return Status.unresolvable(reason, plugin=vz.NAME)


def run(
    listers: VolumeListers, pod: core_pb2.Pod, n: core_pb2.Node, want_pre: Status, want: Status
) -> None:
    """PreFilter, then Filter on the same state whatever PreFilter said (as upstream's loop
    does: Filter recomputes when PreFilter wrote nothing)."""
    pl = vz.VolumeZone(listers)
    state = CycleState()
    _, pre = pl.pre_filter(state, PodInfo(pod), [])
    assert pre == want_pre
    assert pl.filter(state, PodInfo(pod), NodeInfo(n)) == want


SINGLE_ZONE = listers_of(
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_REGION: "us-west1", **USELESS}),
    pv("Vol_3", {BETA_REGION: "us-west1"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {REGION: "us-west1", **USELESS}),
    pv("Vol_Stable_3", {ZONE: "us-west1-a", REGION: "us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_2", volumeName="Vol_2"),
    pvc("PVC_3", volumeName="Vol_3"),
    pvc("PVC_4", volumeName="Vol_not_exist"),
    pvc("PVC_Stable_1", volumeName="Vol_Stable_1"),
    pvc("PVC_Stable_2", volumeName="Vol_Stable_2"),
    pvc("PVC_Stable_3", volumeName="Vol_Stable_3"),
)

SINGLE_ZONE_CASES = [
    (
        "pod without volume",
        vpod(name="pod_1", namespace="default"),
        {BETA_ZONE: "us-west1-a"},
        SKIP,
        OK,
    ),
    ("node without labels", pod_with("PVC_1"), {}, OK, OK),
    ("beta zone label matched", pod_with("PVC_1"), {BETA_ZONE: "us-west1-a", **USELESS}, OK, OK),
    ("beta region label matched", pod_with("PVC_2"), {BETA_REGION: "us-west1", **USELESS}, OK, OK),
    (
        "beta region label doesn't match",
        pod_with("PVC_2"),
        {BETA_REGION: "no_us-west1", **USELESS},
        OK,
        CONFLICT,
    ),
    (
        "beta zone label doesn't match",
        pod_with("PVC_1"),
        {BETA_ZONE: "no_us-west1-a", **USELESS},
        OK,
        CONFLICT,
    ),
    ("zone label matched", pod_with("PVC_Stable_1"), {ZONE: "us-west1-a", **USELESS}, OK, OK),
    ("region label matched", pod_with("PVC_Stable_2"), {REGION: "us-west1", **USELESS}, OK, OK),
    (
        "region label doesn't match",
        pod_with("PVC_Stable_2"),
        {REGION: "no_us-west1", **USELESS},
        OK,
        CONFLICT,
    ),
    (
        "zone label doesn't match",
        pod_with("PVC_Stable_1"),
        {ZONE: "no_us-west1-a", **USELESS},
        OK,
        CONFLICT,
    ),
    (
        "pv with zone and region, node with only zone",
        pod_with("PVC_Stable_3"),
        {ZONE: "us-west1-a"},
        OK,
        CONFLICT,
    ),
    (
        "pv with zone,node with beta zone",
        pod_with("PVC_Stable_1"),
        {BETA_ZONE: "us-west1-a"},
        OK,
        CONFLICT,
    ),
    (
        "pv with beta label,node with ga label, matched",
        pod_with("PVC_1"),
        {ZONE: "us-west1-a"},
        OK,
        OK,
    ),
    (
        "pv with beta label,node with ga label, don't match",
        pod_with("PVC_1"),
        {ZONE: "us-west1-b"},
        OK,
        CONFLICT,
    ),
]


@pytest.mark.parametrize(
    ("rule", "pod", "labels", "want_pre", "want"),
    SINGLE_ZONE_CASES,
    ids=[c[0] for c in SINGLE_ZONE_CASES],
)
def test_single_zone(
    rule: str, pod: core_pb2.Pod, labels: dict[str, str], want_pre: Status, want: Status
) -> None:
    run(SINGLE_ZONE, pod, node(labels), want_pre, want)


MULTI_ZONE = listers_of(
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pv("Vol_2", {BETA_ZONE: "us-west1-b", **USELESS}),
    pv("Vol_3", {BETA_ZONE: "us-west1-c__us-west1-a"}),
    pv("Vol_Stable_1", {ZONE: "us-west1-a"}),
    pv("Vol_Stable_2", {ZONE: "us-west1-c__us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_2", volumeName="Vol_2"),
    pvc("PVC_3", volumeName="Vol_3"),
    pvc("PVC_4", volumeName="Vol_not_exist"),
    pvc("PVC_Stable_1", volumeName="Vol_Stable_1"),
    pvc("PVC_Stable_2", volumeName="Vol_Stable_2"),
)

MULTI_ZONE_CASES = [
    ("node without labels", pod_with("PVC_3"), {}, OK),
    ("beta zone label matched", pod_with("PVC_3"), {BETA_ZONE: "us-west1-a", **USELESS}, OK),
    (
        "beta zone label doesn't match",
        pod_with("PVC_1"),
        {BETA_ZONE: "us-west1-b", **USELESS},
        CONFLICT,
    ),
    ("zone label matched", pod_with("PVC_Stable_2"), {ZONE: "us-west1-a", **USELESS}, OK),
    (
        "zone label doesn't match",
        pod_with("PVC_Stable_1"),
        {ZONE: "us-west1-b", **USELESS},
        CONFLICT,
    ),
]


@pytest.mark.parametrize(
    ("rule", "pod", "labels", "want"), MULTI_ZONE_CASES, ids=[c[0] for c in MULTI_ZONE_CASES]
)
def test_multi_zone(rule: str, pod: core_pb2.Pod, labels: dict[str, str], want: Status) -> None:
    run(MULTI_ZONE, pod, node(labels), OK, want)


WITH_BINDING = listers_of(
    storage_class("Class_Immediate"),
    storage_class("Class_Wait", mode="WaitForFirstConsumer"),
    pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
    pvc("PVC_1", volumeName="Vol_1"),
    pvc("PVC_NoSC", storageClassName="Class_0"),
    pvc("PVC_EmptySC"),
    pvc("PVC_WaitSC", storageClassName="Class_Wait"),
    pvc("PVC_ImmediateSC", storageClassName="Class_Immediate"),
)
_NO_SC = "PersistentVolumeClaim had no pv name and storageClass name"
_NOT_FOUND = 'storageclass.storage.k8s.io "Class_0" not found'
_NOT_SET = 'VolumeBindingMode not set for StorageClass "Class_Immediate"'
WITH_BINDING_CASES = [
    ("label zone failure domain matched", "PVC_1", OK, OK),
    (
        "unbound volume empty storage class",
        "PVC_EmptySC",
        unresolvable(_NO_SC),
        unresolvable(_NO_SC),
    ),
    (
        "unbound volume no storage class",
        "PVC_NoSC",
        unresolvable(_NOT_FOUND),
        unresolvable(_NOT_FOUND),
    ),
    (
        "unbound volume immediate binding mode",
        "PVC_ImmediateSC",
        unresolvable(_NOT_SET),
        unresolvable(_NOT_SET),
    ),
    ("unbound volume wait binding mode", "PVC_WaitSC", SKIP, OK),
]


@pytest.mark.parametrize(
    ("rule", "claim", "want_pre", "want"),
    WITH_BINDING_CASES,
    ids=[c[0] for c in WITH_BINDING_CASES],
)
def test_with_binding(rule: str, claim: str, want_pre: Status, want: Status) -> None:
    run(WITH_BINDING, pod_with(claim), node({BETA_ZONE: "us-west1-a", **USELESS}), want_pre, want)


def test_missing_claim_and_volume_are_unresolvable_with_the_listers_words() -> None:
    listers = listers_of(pvc("PVC_4", volumeName="Vol_not_exist"))
    n = node({ZONE: "a"})
    run(listers, pod_with("nope"), n, *[unresolvable('persistentvolumeclaim "nope" not found')] * 2)
    gone = unresolvable('persistentvolume "Vol_not_exist" not found')
    run(listers, pod_with("PVC_4"), n, gone, gone)


# ----------------------------------------------------------------- queueing hints

_PVC_1 = pvc("PVC_1", volumeName="Vol_1")
HINT_PVC = [
    ("error-wrong-new-object", pod_with("PVC_1"), None, "not-a-pvc", QueueingHint.QUEUE),
    (
        "pvc-was-added-but-pod-refers-no-pvc",
        vpod(name="pod_1", namespace="default"),
        None,
        _PVC_1,
        QueueingHint.SKIP,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-different-pvc",
        pod_with("PVC_2"),
        None,
        _PVC_1,
        QueueingHint.SKIP,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-pvc-but-different-ns",
        pod_with("PVC_1"),
        None,
        pvc("PVC_1", namespace="ns1", volumeName="Vol_1"),
        QueueingHint.SKIP,
    ),
    (
        "pvc-was-added-and-pod-was-bound-to-the-pvc",
        pod_with("PVC_1"),
        None,
        _PVC_1,
        QueueingHint.QUEUE,
    ),
    (
        "pvc-was-updated-and-pod-was-bound-to-the-pvc",
        pod_with("PVC_1"),
        pvc("PVC_1"),
        _PVC_1,
        QueueingHint.QUEUE,
    ),
    (
        "pvc-was-updated-but-pod-refers-no-pvc",
        vpod(name="pod_1", namespace="default"),
        pvc("PVC_1"),
        _PVC_1,
        QueueingHint.SKIP,
    ),
]


@pytest.mark.parametrize(
    ("rule", "pod", "old", "new", "want"), HINT_PVC, ids=[c[0] for c in HINT_PVC]
)
def test_is_schedulable_after_pvc_change(
    rule: str, pod: core_pb2.Pod, old: Any, new: Any, want: QueueingHint
) -> None:
    assert vz.is_schedulable_after_pvc_change(pod, old, new) == want


HINT_SC = [
    ("error-wrong-new-object", "not-a-storageclass", QueueingHint.QUEUE),
    ("sc-doesn't-have-volume-binding-mode", storage_class("SC_1"), QueueingHint.SKIP),
    (
        "new-sc-is-wait-for-first-consumer-mode",
        storage_class("SC_1", mode="WaitForFirstConsumer"),
        QueueingHint.QUEUE,
    ),
    ("new-sc-is-immediate-mode", storage_class("SC_1", mode="Immediate"), QueueingHint.SKIP),
]


@pytest.mark.parametrize(("rule", "new", "want"), HINT_SC, ids=[c[0] for c in HINT_SC])
def test_is_schedulable_after_storage_class_added(rule: str, new: Any, want: QueueingHint) -> None:
    assert vz.is_schedulable_after_storage_class_added(pod_with("PVC_1"), None, new) == want


_BOTH = {BETA_ZONE: "us-west1-a", ZONE: "zone"}
HINT_PV = [
    ("error-wrong-new-object", None, "not-a-pv", QueueingHint.QUEUE),
    ("error-wrong-old-object", "not-a-pv", pv("Vol_1"), QueueingHint.QUEUE),
    ("new-pv-was-added", None, pv("Vol_1", {BETA_ZONE: "us-west1-b"}), QueueingHint.QUEUE),
    (
        "pv-was-updated-and-changed-topology",
        pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
        pv("Vol_1", {BETA_ZONE: "us-west1-b"}),
        QueueingHint.QUEUE,
    ),
    (
        "pv-was-updated-and-added-topology-label",
        pv("Vol_1", {BETA_ZONE: "us-west1-a"}),
        pv("Vol_1", _BOTH),
        QueueingHint.QUEUE,
    ),
    (
        "pv-was-updated-but-no-topology-is-changed",
        pv("Vol_1", _BOTH),
        pv("Vol_1", _BOTH),
        QueueingHint.SKIP,
    ),
]


@pytest.mark.parametrize(("rule", "old", "new", "want"), HINT_PV, ids=[c[0] for c in HINT_PV])
def test_is_schedulable_after_pv_change(rule: str, old: Any, new: Any, want: QueueingHint) -> None:
    assert vz.is_schedulable_after_pv_change(pod_with("PVC_1"), old, new) == want


def test_a_label_with_an_empty_zone_is_ignored() -> None:
    assert vz.pv_topologies(pv("v", {ZONE: "a__"})) == []
    assert vz.pv_topologies(pv("v", {ZONE: "a__b"}))[0].values == frozenset({"a", "b"})
