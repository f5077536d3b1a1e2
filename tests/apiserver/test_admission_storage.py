"""Admission of claims and volumes: DefaultStorageClass (upstream
plugin/pkg/admission/storage/storageclass/setdefault, admission_test.go's TestAdmission
cases, and GetDefaultClass: the newest default, then by name) and
StorageObjectInUseProtection (plugin/pkg/admission/storage/storageobjectinuseprotection:
every new claim and volume gets its protection finalizer); a claim's LimitRange bounds and
what a ResourceQuota counts of it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from google.protobuf.message import Message

from services.api.helpers import quota
from services.api.machinery.errors import ForbiddenError
from services.api.machinery.kinds import BY_KIND, Kind
from services.apiserver.admission import default_storage_class
from services.apiserver.registry import ApiServer
from services.storage.memory import MemoryStorage
from tests.apiserver.conftest import running_apiserver
from tests.builders import limit_range, persistent_volume, persistent_volume_claim, storage_class

DEFAULT = {"storageclass.kubernetes.io/is-default-class": "true"}
BETA_DEFAULT = {"storageclass.beta.kubernetes.io/is-default-class": "true"}


def cls(name: str, annotations: dict[str, str], created: str = "2026-01-01T00:00:00Z") -> Any:
    sc = storage_class(name, metadata={"annotations": annotations})
    sc.metadata.creation_timestamp = created
    return sc


class _Classes:
    def __init__(self, *classes: Any) -> None:
        self.classes = list(classes)

    async def namespace_objects(self, kind: Kind, namespace: str) -> list[Message]:
        return self.classes


@pytest.mark.parametrize(
    ("classes", "claim", "want"),
    [
        pytest.param([cls("default1", DEFAULT)], {}, "default1", id="one default, modify"),
        pytest.param(
            [cls("default1", BETA_DEFAULT)], {}, "default1", id="one beta default, modify"
        ),
        pytest.param([cls("nondefault", {})], {}, None, id="no default, no modification"),
        pytest.param(
            [cls("nondefault", {"storageclass.kubernetes.io/is-default-class": "false"})],
            {},
            None,
            id="default annotation false, no modification",
        ),
        pytest.param(
            [cls("default1", DEFAULT)],
            {"storageClassName": "foo"},
            "foo",
            id="class set, no modification",
        ),
        pytest.param(
            [cls("default1", DEFAULT)],
            {"storageClassName": ""},
            "",
            id="empty class, no modification",
        ),
        pytest.param(
            [
                cls("default1", DEFAULT, "2026-01-01T00:00:00Z"),
                cls("default2", DEFAULT, "2026-01-02T00:00:00Z"),
            ],
            {},
            "default2",
            id="two defaults, the newest",
        ),
        pytest.param(
            [cls("zzz", DEFAULT), cls("aaa", DEFAULT)],
            {},
            "aaa",
            id="two defaults of one time, the first by name",
        ),
    ],
)
async def test_a_claim_naming_no_class_gets_the_default(
    classes: list[Any], claim: dict[str, Any], want: str | None
) -> None:
    pvc = persistent_volume_claim("claim", "1Gi", **claim)
    await default_storage_class(pvc, _Classes(*classes))  # type: ignore[arg-type]
    got = pvc.spec.storage_class_name if pvc.spec.HasField("storage_class_name") else None
    assert got == want


async def test_the_beta_class_annotation_counts_as_a_class() -> None:
    pvc = persistent_volume_claim(
        "claim", "1Gi", metadata={"annotations": {"volume.beta.kubernetes.io/storage-class": "x"}}
    )
    await default_storage_class(pvc, _Classes(cls("default1", DEFAULT)))  # type: ignore[arg-type]
    assert not pvc.spec.HasField("storage_class_name")


@pytest.fixture
async def api() -> AsyncIterator[ApiServer]:
    async with running_apiserver(MemoryStorage()) as server:
        yield server


async def test_new_claims_and_volumes_carry_their_protection_finalizer(api: ApiServer) -> None:
    await api.create(storage_class("fast", metadata={"annotations": DEFAULT}))
    claim: Any = await api.create(persistent_volume_claim("c", "1Gi"))
    assert list(claim.metadata.finalizers) == ["kubernetes.io/pvc-protection"]
    assert claim.spec.storage_class_name == "fast"
    assert claim.status.phase == "Pending"
    pv: Any = await api.create(persistent_volume("v", "1Gi"))
    assert list(pv.metadata.finalizers) == ["kubernetes.io/pv-protection"]
    # what a client sent as status is not kept: a new volume is Pending since now
    assert pv.status.phase == "Pending" and pv.status.last_phase_transition_time


# ---------------------------------------------------------------------- limits and quota
# The docs' "Limit Storage Consumption" (content/en/docs/tasks/administer-cluster/
# limit-storage-consumption.md): a LimitRange bounding claims, a quota counting them.

STORAGE_LIMITS = {
    "type": "PersistentVolumeClaim",
    "max": {"storage": "2Gi"},
    "min": {"storage": "1Gi"},
}


@pytest.mark.parametrize(
    ("size", "why"),
    [
        ("1Gi", ""),
        ("2Gi", ""),
        ("500Mi", "minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi"),
        ("5Gi", "maximum storage usage per PersistentVolumeClaim is 2Gi, but request is 5Gi"),
    ],
)
async def test_a_claim_outside_the_limit_range_is_refused(
    api: ApiServer, size: str, why: str
) -> None:
    """PersistentVolumeClaimValidateLimitFunc (admission_test.go's PVC cases)."""
    await api.create(limit_range("storagelimits", "default", STORAGE_LIMITS))
    claim = persistent_volume_claim("myclaim", size)
    if not why:
        await api.create(claim)
        return
    with pytest.raises(ForbiddenError) as e:
        await api.create(claim)
    assert str(e.value) == f'persistentvolumeclaims "myclaim" is forbidden: {why}'


def test_a_claim_counts_its_storage_and_its_class() -> None:
    """persistent_volume_claims_test.go TestPersistentVolumeClaimEvaluatorUsage."""
    kind = BY_KIND["PersistentVolumeClaim"]
    claim = persistent_volume_claim("c", "10Gi", storageClassName="gold")
    usage = {k: str(v) for k, v in quota.usage(kind, claim, 0).items()}
    assert usage == {
        "persistentvolumeclaims": "1",
        "count/persistentvolumeclaims": "1",
        "requests.storage": "10Gi",
        "gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
        "gold.storageclass.storage.k8s.io/requests.storage": "10Gi",
    }
    claim.status.allocated_resources["storage"] = "20Gi"  # a resize in progress: the larger
    assert str(quota.usage(kind, claim, 0)["requests.storage"]) == "20Gi"
    names = [
        "requests.storage",
        "pods",
        "gold.storageclass.storage.k8s.io/requests.storage",
        "count/pods",
    ]
    assert quota.matching_resources(kind, names) == [
        "gold.storageclass.storage.k8s.io/requests.storage",
        "requests.storage",
    ]
