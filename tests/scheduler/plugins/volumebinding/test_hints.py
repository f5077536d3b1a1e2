"""VolumeBinding's queueing hints and registered events (upstream volume_binding.go's
isSchedulableAfter* functions and EventsToRegister): which storage events may make a pod
it rejected schedulable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from google.protobuf import json_format

from services.scheduler.framework.types import ActionType, QueueingHint
from services.scheduler.plugins.volumebinding import Args, VolumeBinding
from services.scheduler.plugins.volumebinding.plugin import (
    is_schedulable_after_capacity_change,
    is_schedulable_after_csi_driver_change,
    is_schedulable_after_csi_node_change,
    is_schedulable_after_pvc_change,
    is_schedulable_after_storage_class_change,
)
from tests.scheduler.plugins.volumebinding._fakes import (
    FakeVolumeAPI,
    capacity,
    csi_driver,
    csi_node,
    make_binder,
    pod,
    pvc,
    storage_class,
)

QUEUE, SKIP = QueueingHint.QUEUE, QueueingHint.SKIP
P = pod("pod-a", ["pvc-a"])


def _inline_csi_pod(driver: str) -> Any:
    p = pod("pod-csi")
    json_format.ParseDict({"name": "v", "csi": {"driver": driver}}, p.spec.volumes.add())
    return p


CASES: list[tuple[str, Callable[..., QueueingHint], Any, Any, Any, QueueingHint]] = [
    ("csinode added", is_schedulable_after_csi_node_change, P, None, csi_node("n", ""), QUEUE),
    (
        "csinode migrated plugins changed",
        is_schedulable_after_csi_node_change,
        P,
        csi_node("n", ""),
        csi_node("n", "kubernetes.io/gce-pd"),
        QUEUE,
    ),
    (
        "csinode migrated plugins unchanged",
        is_schedulable_after_csi_node_change,
        P,
        csi_node("n", "kubernetes.io/gce-pd"),
        csi_node("n", "kubernetes.io/gce-pd"),
        SKIP,
    ),
    ("pvc the pod names", is_schedulable_after_pvc_change, P, None, pvc("pvc-a", "sc"), QUEUE),
    ("pvc of another name", is_schedulable_after_pvc_change, P, None, pvc("pvc-b", "sc"), SKIP),
    (
        "pvc in another namespace",
        is_schedulable_after_pvc_change,
        P,
        None,
        pvc("pvc-a", "sc", namespace="other"),
        SKIP,
    ),
    (
        "ephemeral volume's pvc",
        is_schedulable_after_pvc_change,
        pod("pod-e", ephemeral=["scratch"]),
        None,
        pvc("pod-e-scratch", "sc"),
        QUEUE,
    ),
    (
        "storageclass added",
        is_schedulable_after_storage_class_change,
        P,
        None,
        storage_class("a", "Immediate"),
        QUEUE,
    ),
    (
        "storageclass allowedTopologies changed",
        is_schedulable_after_storage_class_change,
        P,
        storage_class("a", "WaitForFirstConsumer"),
        storage_class("a", "WaitForFirstConsumer", allowed={"zone": ["z1"]}),
        QUEUE,
    ),
    (
        "storageclass other change",
        is_schedulable_after_storage_class_change,
        P,
        storage_class("a", "WaitForFirstConsumer", "p1"),
        storage_class("a", "WaitForFirstConsumer", "p2"),
        SKIP,
    ),
    (
        "capacity added",
        is_schedulable_after_capacity_change,
        P,
        None,
        capacity("c", "sc", None, "1Gi"),
        QUEUE,
    ),
    (
        "capacity grew",
        is_schedulable_after_capacity_change,
        P,
        capacity("c", "sc", None, "1Gi"),
        capacity("c", "sc", None, "2Gi"),
        QUEUE,
    ),
    (
        "capacity shrank",
        is_schedulable_after_capacity_change,
        P,
        capacity("c", "sc", None, "2Gi"),
        capacity("c", "sc", None, "1Gi"),
        SKIP,
    ),
    (
        "maximumVolumeSize takes precedence over capacity",
        is_schedulable_after_capacity_change,
        P,
        capacity("c", "sc", None, "1Gi", "1Gi"),
        capacity("c", "sc", None, "5Gi", "1Gi"),
        SKIP,
    ),
    (
        "capacity unset then set",
        is_schedulable_after_capacity_change,
        P,
        capacity("c", "sc", None, ""),
        capacity("c", "sc", None, "1Gi"),
        QUEUE,
    ),
    (
        "pod's inline csi driver stopped tracking capacity",
        is_schedulable_after_csi_driver_change,
        _inline_csi_pod("d"),
        csi_driver("d", True),
        csi_driver("d", False),
        QUEUE,
    ),
    (
        "pod's inline csi driver started tracking capacity",
        is_schedulable_after_csi_driver_change,
        _inline_csi_pod("d"),
        csi_driver("d", False),
        csi_driver("d", True),
        SKIP,
    ),
    (
        "another csi driver",
        is_schedulable_after_csi_driver_change,
        _inline_csi_pod("d"),
        csi_driver("e", True),
        csi_driver("e", False),
        SKIP,
    ),
]


@pytest.mark.parametrize(
    ("name", "fn", "p", "old", "new", "want"), CASES, ids=[c[0] for c in CASES]
)
def test_queueing_hint(
    name: str, fn: Callable[..., QueueingHint], p: Any, old: Any, new: Any, want: QueueingHint
) -> None:
    assert fn(p, old, new) == want


def test_events_to_register_cover_the_storage_kinds_and_node_labels() -> None:
    plugin = VolumeBinding(Args(), make_binder(FakeVolumeAPI()))
    events = {e.event.resource: e.event.action for e in plugin.events_to_register()}
    add_update = ActionType.ADD | ActionType.UPDATE
    assert events == {
        "StorageClass": add_update,
        "PersistentVolumeClaim": add_update,
        "PersistentVolume": add_update,
        "Node": ActionType.ADD | ActionType.UPDATE_NODE_LABEL,
        "CSINode": add_update,
        "CSIDriver": ActionType.UPDATE,
        "CSIStorageCapacity": add_update,
    }
