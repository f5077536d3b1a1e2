"""kubectl's columns for DaemonSet, StatefulSet, ControllerRevision and
PersistentVolumeClaim (upstream pkg/printers/internalversion/printers.go and its
printers_test.go cases: TestPrintDaemonSet, TestPrintStatefulSet,
TestPrintControllerRevision, TestPrintPersistentVolumeClaim)."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.printers.printers import columns_of, rows

NOW = 1_800_000_000.0
CREATED = "2027-01-15T08:00:00Z"  # NOW - 0 s would print 0s; any fixed time will do


def obj(doc: dict[str, Any]) -> Any:
    return codec.decode(doc).obj


def header(kind: str, wide: bool = False) -> list[str]:
    return [c.name.upper() for c in columns_of(BY_KIND[kind]).columns if wide or not c.priority]


TEMPLATE = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {
        "nodeSelector": {"disk": "ssd"},
        "containers": [{"name": "c", "image": "img:1"}, {"name": "d", "image": "img:2"}],
    },
}


@pytest.mark.parametrize(
    ("doc", "wide", "want_header", "want_row"),
    [
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "DaemonSet",
                "metadata": {"name": "agent", "creationTimestamp": CREATED},
                "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
                "status": {
                    "desiredNumberScheduled": 3,
                    "currentNumberScheduled": 2,
                    "numberReady": 1,
                    "updatedNumberScheduled": 2,
                    "numberAvailable": 0,
                },
            },
            True,
            [
                "NAME",
                "DESIRED",
                "CURRENT",
                "READY",
                "UP-TO-DATE",
                "AVAILABLE",
                "NODE SELECTOR",
                "AGE",
                "CONTAINERS",
                "IMAGES",
                "SELECTOR",
            ],
            ["agent", "3", "2", "1", "2", "0", "disk=ssd", None, "c,d", "img:1,img:2", "app=web"],
            id="daemonset-wide",
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "web", "creationTimestamp": CREATED},
                "spec": {"replicas": 5, "template": TEMPLATE},
                "status": {"readyReplicas": 2},
            },
            True,
            ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"],
            ["web", "2/5", None, "c,d", "img:1,img:2"],
            id="statefulset-wide",
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": "web-6b8b",
                    "creationTimestamp": CREATED,
                    "ownerReferences": [
                        {
                            "apiVersion": "apps/v1",
                            "kind": "StatefulSet",
                            "name": "web",
                            "uid": "u",
                            "controller": True,
                        }
                    ],
                },
                "data": {},
                "revision": 3,
            },
            False,
            ["NAME", "CONTROLLER", "REVISION", "AGE"],
            ["web-6b8b", "statefulset.apps/web", "3", None],
            id="controllerrevision",
        ),
        pytest.param(
            {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {"name": "orphan", "creationTimestamp": CREATED},
                "data": {},
                "revision": 1,
            },
            False,
            ["NAME", "CONTROLLER", "REVISION", "AGE"],
            ["orphan", "<none>", "1", None],
            id="controllerrevision-orphan",
        ),
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "www-web-0", "creationTimestamp": CREATED},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "fast",
                    "volumeMode": "Filesystem",
                },
                "status": {"phase": "Pending"},
            },
            True,
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
                "VOLUMEMODE",
            ],
            ["www-web-0", "Pending", "", "", "", "fast", "<unset>", None, "Filesystem"],
            id="pvc-pending",
        ),
        pytest.param(
            {
                "apiVersion": "v1",
                "kind": "PersistentVolumeClaim",
                "metadata": {"name": "data", "creationTimestamp": CREATED},
                "spec": {"accessModes": ["ReadWriteMany", "ReadWriteOnce"], "volumeName": "pv-1"},
                "status": {
                    "phase": "Bound",
                    "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                    "capacity": {"storage": "10Gi"},
                },
            },
            False,
            [
                "NAME",
                "STATUS",
                "VOLUME",
                "CAPACITY",
                "ACCESS MODES",
                "STORAGECLASS",
                "VOLUMEATTRIBUTESCLASS",
                "AGE",
            ],
            ["data", "Bound", "pv-1", "10Gi", "RWO,RWX", "", "<unset>", None],
            id="pvc-bound",
        ),
    ],
)
def test_rows_are_kubectls(
    doc: dict[str, Any], wide: bool, want_header: list[str], want_row: list[str | None]
) -> None:
    kind = BY_KIND[doc["kind"]]
    assert header(kind.kind, wide) == want_header
    (row,) = rows(kind, [obj(doc)], now=NOW, wide=wide)
    assert [None if w is None else cell for cell, w in zip(row, want_row, strict=True)] == want_row
