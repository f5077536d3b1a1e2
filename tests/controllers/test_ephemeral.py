"""The ephemeral volume controller (services/controllers/volume/ephemeral.py).

Upstream's pkg/controller/volume/ephemeral/controller_test.go (TestSyncHandler: one
syncHandler over the given pods and claims, compared with the claims that exist after it,
whether it failed, and the create attempts / failures counted), on kubera's apiserver;
then the controller running: the claim comes back when deleted, and a claim the pod does
not own gives the pod a FailedBinding event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ConflictError
from services.api.machinery.kinds import BY_KIND
from services.controllers.volume.ephemeral import (
    EphemeralVolumeController,
    EphemeralVolumeError,
    ephemeral_volumes,
)
from tests.builders import MakePod, persistent_volume_claim, resource_quota
from tests.controllers.conftest import NS, ControllerCluster
from tests.waiting import eventually

PODS, PVCS, EVENTS = BY_KIND["Pod"], BY_KIND["PersistentVolumeClaim"], BY_KIND["Event"]
OTHER_NS = "not-my-namespace"
POD, VOLUME = "test-pod", "ephemeral-volume"
CLAIM = f"{POD}-{VOLUME}"
TEMPLATE = {
    "metadata": {"labels": {"app": "db"}, "annotations": {"note": "scratch"}},
    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}},
}


def ephemeral_pod(*, volumes: bool = True, deleted: bool = False) -> core_pb2.Pod:
    p = MakePod().typed().name(POD).namespace(NS).container("c", "app:v1")
    if volumes:
        p.spec({"volumes": [{"name": VOLUME, "ephemeral": {"volumeClaimTemplate": TEMPLATE}}]})
    if deleted:
        p.finalizers(["kubera.io/test"])
    return p.obj()


@dataclass
class Case:
    name: str
    pod: str = "ephemeral"  # "ephemeral", "plain", "deleted" or "" (no such pod)
    claims: list[tuple[str, str]] = field(default_factory=list)  # (namespace, "foreign")
    want: list[tuple[str, str]] = field(default_factory=list)  # (namespace, "owned"|"foreign")
    error: bool = False
    created: int = 0
    failures: int = 0


CASES = [
    Case("create", want=[(NS, "owned")], created=1),
    Case("no-such-pod", pod=""),
    Case("pod-deleted", pod="deleted"),
    Case("no-volumes", pod="plain"),
    Case(
        "create-with-other-PVC",
        claims=[(OTHER_NS, "foreign")],
        want=[(NS, "owned"), (OTHER_NS, "foreign")],
        created=1,
    ),
    Case("wrong-PVC-owner", claims=[(NS, "foreign")], want=[(NS, "foreign")], error=True),
    Case("create-conflict", error=True, created=1, failures=1),
]


class _ConflictOnClaims:
    """The client with every claim create refused (upstream's prepended reactor)."""

    def __init__(self, client: Any) -> None:
        self._client = client

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def create(self, obj: Any, **kw: Any) -> Any:
        if obj.kind == "PersistentVolumeClaim":
            raise ConflictError("fake conflict")
        return await self._client.create(obj, **kw)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
async def test_sync_handler_as_upstream(cluster: ControllerCluster, case: Case) -> None:
    controller = EphemeralVolumeController(cluster.client, cluster.informers)
    cluster.bump_on(PVCS)
    await cluster.start()  # informers only: the test calls the sync
    await cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OTHER_NS}})
    pod: core_pb2.Pod | None = None
    if case.pod:
        pod = ephemeral_pod(volumes=case.pod != "plain", deleted=case.pod == "deleted")
        pod = await cluster.client.create(pod)
        if case.pod == "deleted":
            await cluster.client.delete(PODS, POD, NS)
    for ns, _ in case.claims:
        await cluster.client.create(persistent_volume_claim(CLAIM, "1Gi", namespace=ns))
    await cluster.until(
        lambda: (
            len(controller.pvc_informer.store) == len(case.claims)
            and (
                not case.pod
                or (
                    (p := controller.pod_informer.store.get(f"{NS}/{POD}")) is not None
                    and bool(p.metadata.deletion_timestamp) == (case.pod == "deleted")
                )
            )
        )
    )
    if case.name == "create-conflict":
        controller.client = _ConflictOnClaims(cluster.client)  # type: ignore[assignment]

    if case.error:
        with pytest.raises(EphemeralVolumeError):
            await controller.sync(f"{NS}/{POD}")
    else:
        await controller.sync(f"{NS}/{POD}")

    got = []
    for ns in (NS, OTHER_NS):
        claims, _ = await cluster.client.list(PVCS, namespace=ns)
        for c in claims:
            refs = list(c.metadata.owner_references)  # type: ignore[attr-defined]
            owned = (
                pod is not None
                and len(refs) == 1
                and refs[0].uid == pod.metadata.uid
                and refs[0].controller
                and refs[0].block_owner_deletion
                and refs[0].kind == "Pod"
            )
            assert c.metadata.name == CLAIM  # type: ignore[attr-defined]
            got.append((ns, "owned" if owned else "foreign"))
            if owned:
                assert dict(c.metadata.labels) == {"app": "db"}  # type: ignore[attr-defined]
                assert c.metadata.annotations["note"] == "scratch"  # type: ignore[attr-defined]
                assert c.spec.resources.requests["storage"] == "1Gi"  # type: ignore[attr-defined]
    assert sorted(got) == sorted(case.want)
    assert (controller.create_attempts, controller.create_failures) == (
        case.created,
        case.failures,
    )


def test_only_ephemeral_volumes_are_listed() -> None:
    pod = ephemeral_pod()
    pod.spec.volumes.add().update({"name": "cfg", "configMap": {"name": "x"}})
    assert [name for name, _ in ephemeral_volumes(pod)] == [VOLUME]


async def test_a_deleted_claim_is_made_again_and_a_foreign_one_is_reported(
    cluster: ControllerCluster,
) -> None:
    controller = EphemeralVolumeController(cluster.client, cluster.informers)
    cluster.bump_on(PVCS)
    await cluster.start(controller)
    pvcs = controller.pvc_informer.store
    await cluster.client.create(ephemeral_pod())
    await cluster.until(lambda: f"{NS}/{CLAIM}" in pvcs)
    first = pvcs.get(f"{NS}/{CLAIM}").metadata.uid  # type: ignore[union-attr]
    await cluster.client.delete(PVCS, CLAIM, NS)
    gone = await cluster.client.get(PVCS, CLAIM, NS)  # pvc-protection's finalizer holds it
    del gone.metadata.finalizers[:]  # type: ignore[attr-defined]
    await cluster.client.update(gone)
    await cluster.until(
        lambda: (c := pvcs.get(f"{NS}/{CLAIM}")) is not None and c.metadata.uid != first  # type: ignore[attr-defined]
    )

    other = MakePod().typed().name("other").namespace(NS).container("c", "app:v1")
    other.spec({"volumes": [{"name": "v", "ephemeral": {"volumeClaimTemplate": TEMPLATE}}]})
    await cluster.client.create(persistent_volume_claim("other-v", "1Gi"))
    made = await cluster.client.create(other.obj())

    async def warned() -> bool:
        events, _ = await cluster.client.list(EVENTS, namespace=NS)
        return any(
            e.reason == "FailedBinding"  # type: ignore[attr-defined]
            and e.type == "Warning"  # type: ignore[attr-defined]
            and e.involved_object.uid == made.metadata.uid  # type: ignore[attr-defined]
            and e.message  # type: ignore[attr-defined]
            == f"ephemeral volume v: PVC {NS}/other-v was not created for pod {NS}/other "
            "(pod is not owner)"
            for e in events
        )

    await eventually(warned)


async def test_the_claim_counts_in_quota_and_is_refused_over_it(cluster: ControllerCluster) -> None:
    """The claim is created through the apiserver: ResourceQuota admission counts it as a
    persistentvolumeclaim (upstream's claim evaluator) and refuses one over quota."""
    controller = EphemeralVolumeController(cluster.client, cluster.informers)
    await cluster.start()
    quota = resource_quota(
        "claims", NS, hard={"persistentvolumeclaims": "0"}, used={"persistentvolumeclaims": "0"}
    )
    made: Any = await cluster.client.create(quota)
    made.status.CopyFrom(quota.status)  # as the quota controller writes it
    await cluster.client.update_status(made)
    await cluster.client.create(ephemeral_pod())
    await cluster.until(lambda: f"{NS}/{POD}" in controller.pod_informer.store)
    with pytest.raises(EphemeralVolumeError, match="exceeded quota"):
        await controller.sync(f"{NS}/{POD}")
    claims, _ = await cluster.client.list(PVCS, namespace=NS)
    assert not claims
