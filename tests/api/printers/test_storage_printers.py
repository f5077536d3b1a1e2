"""kubectl's columns for the storage kinds (services/api/printers/storage.py), with the
cases of upstream's pkg/printers/internalversion/printers_test.go
(TestPrintPersistentVolume, TestPrintStorageClass, TestPrintCSINode, TestPrintCSIDriver,
TestPrintCSIStorageCapacity, TestPrintVolumeAttachment)."""

from __future__ import annotations

from typing import Any

import pytest

from services.api.machinery import codec
from services.api.machinery.kinds import BY_KIND
from services.api.printers.printers import rows

NOW = 1_800_000_000.0


def _obj(kind: str, doc: dict[str, Any]) -> Any:
    k = BY_KIND[kind]
    return codec.decode({"apiVersion": k.api_version, "kind": kind, **doc}, validate="strict").obj


def _pv(name: str, status: dict[str, Any], **spec: Any) -> Any:
    base = {
        "capacity": {"storage": "4Gi"},
        "accessModes": ["ReadOnlyMany"],
        "hostPath": {"path": "/x"},
    }
    return _obj(
        "PersistentVolume", {"metadata": {"name": name}, "spec": {**base, **spec}, "status": status}
    )


CLAIM = {"namespace": "default", "name": "test"}


@pytest.mark.parametrize(
    ("pv", "want"),
    [
        pytest.param(
            _pv("test1", {"phase": "Bound"}, claimRef=CLAIM),
            ["test1", "4Gi", "ROX", "", "Bound", "default/test", "", "<unset>", "", "<unknown>"],
            id="bound",
        ),
        pytest.param(
            _pv("test2", {"phase": "Failed", "reason": "failed"}, claimRef=CLAIM),
            [
                "test2",
                "4Gi",
                "ROX",
                "",
                "Failed",
                "default/test",
                "",
                "<unset>",
                "failed",
                "<unknown>",
            ],
            id="failed with reason",
        ),
        pytest.param(
            _pv("test3", {"phase": "Pending"}, accessModes=["ReadWriteMany", "ReadWriteOnce"]),
            ["test3", "4Gi", "RWO,RWX", "", "Pending", "", "", "<unset>", "", "<unknown>"],
            id="access modes in upstream's order",
        ),
        pytest.param(
            _pv(
                "test4",
                {"phase": "Released"},
                claimRef=CLAIM,
                persistentVolumeReclaimPolicy="Retain",
                storageClassName="manual",
            ),
            [
                "test4",
                "4Gi",
                "ROX",
                "Retain",
                "Released",
                "default/test",
                "manual",
                "<unset>",
                "",
                "<unknown>",
            ],
            id="released with class",
        ),
    ],
)
def test_a_persistent_volume_prints_upstreams_columns(pv: Any, want: list[str]) -> None:
    assert rows(BY_KIND["PersistentVolume"], [pv], now=NOW) == [want]


def test_a_volume_being_deleted_is_terminating_and_wide_adds_its_mode() -> None:
    pv = _pv("t", {"phase": "Bound"}, volumeMode="Block")
    pv.metadata.deletion_timestamp = "2026-01-01T00:00:00Z"
    [row] = rows(BY_KIND["PersistentVolume"], [pv], now=NOW, wide=True)
    assert (row[4], row[-1]) == ("Terminating", "Block")


def test_a_storage_class_prints_upstreams_columns_and_marks_the_default() -> None:
    sc = _obj(
        "StorageClass",
        {
            "metadata": {
                "name": "sc1",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "kubernetes.io/glusterfs",
            "reclaimPolicy": "Retain",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        },
    )
    plain = _obj("StorageClass", {"metadata": {"name": "sc2"}, "provisioner": "kubernetes.io/nfs"})
    assert rows(BY_KIND["StorageClass"], [sc, plain], now=NOW) == [
        [
            "sc1 (default)",
            "kubernetes.io/glusterfs",
            "Retain",
            "WaitForFirstConsumer",
            "true",
            "<unknown>",
        ],
        ["sc2", "kubernetes.io/nfs", "Delete", "Immediate", "false", "<unknown>"],
    ]


def test_the_csi_kinds_print_upstreams_columns() -> None:
    node = _obj(
        "CSINode",
        {
            "metadata": {"name": "n1"},
            "spec": {"drivers": [{"name": "a", "nodeID": "x"}, {"name": "b", "nodeID": "x"}]},
        },
    )
    assert rows(BY_KIND["CSINode"], [node], now=NOW) == [["n1", "2", "<unknown>"]]
    driver = _obj(
        "CSIDriver",
        {
            "metadata": {"name": "d"},
            "spec": {
                "attachRequired": True,
                "podInfoOnMount": False,
                "storageCapacity": True,
                "requiresRepublish": False,
                "tokenRequests": [{"audience": "a"}, {"audience": "b"}],
                "volumeLifecycleModes": ["Persistent", "Ephemeral"],
            },
        },
    )
    assert rows(BY_KIND["CSIDriver"], [driver], now=NOW) == [
        ["d", "true", "false", "true", "a,b", "false", "Persistent,Ephemeral", "<unknown>"]
    ]
    cap = _obj(
        "CSIStorageCapacity",
        {
            "metadata": {"name": "c", "namespace": "default"},
            "storageClassName": "fast",
            "capacity": "10Gi",
        },
    )
    assert rows(BY_KIND["CSIStorageCapacity"], [cap], now=NOW) == [
        ["c", "fast", "10Gi", "<unknown>"]
    ]
    va = _obj(
        "VolumeAttachment",
        {
            "metadata": {"name": "va"},
            "spec": {
                "attacher": "hollow.kubera.io",
                "nodeName": "n1",
                "source": {"persistentVolumeName": "pv1"},
            },
            "status": {"attached": True},
        },
    )
    assert rows(BY_KIND["VolumeAttachment"], [va], now=NOW) == [
        ["va", "hollow.kubera.io", "pv1", "n1", "true", "<unknown>"]
    ]
