"""The volume gate (services/kubelet/volumegate.py): a pod whose claims are not Bound, or
whose CSI volumes that need attaching are not attached to its node, waits
ContainerCreating with FailedMount (upstream volume manager's words), and starts once
they are; the node's status.volumesInUse names the attachable volumes its pods use."""

from __future__ import annotations

from typing import Any

import pytest
from google.protobuf import json_format

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.csi import attachment_name
from services.api.machinery.kinds import BY_KIND
from services.kubelet.volumegate import Lookups, unmounted, volumes_in_use
from tests.builders import persistent_volume, persistent_volume_claim
from tests.kubelet.test_pool import _template, running
from tests.waiting import eventually

EVENTS, PVCS = BY_KIND["Event"], BY_KIND["PersistentVolumeClaim"]
NODES, PODS = BY_KIND["Node"], BY_KIND["Pod"]
NODE = "node-1"
POD_UID = "pod-uid"
HANDLE, DRIVER = "vol-1", "disk.example.com"


def _pod(*volumes: dict[str, Any]) -> core_pb2.Pod:
    pod = core_pb2.Pod()
    json_format.ParseDict(
        {
            "metadata": {"name": "p", "namespace": "ns", "uid": POD_UID},
            "spec": {"containers": [{"name": "c", "image": "i"}], "volumes": list(volumes)},
        },
        pod,
    )
    return pod


def _claim(name: str, phase: str = "Bound", volume: str = "pv", **meta: Any) -> Any:
    c = persistent_volume_claim(name, "1Gi", namespace="ns", metadata=meta)
    c.spec.volume_name = volume if phase == "Bound" else ""
    c.status.phase = phase
    return c


def _csi_volume() -> storage_pb2.PersistentVolume:
    pv = persistent_volume("pv", "1Gi")
    pv.spec.ClearField("gce_persistent_disk")
    pv.spec.csi.driver, pv.spec.csi.volume_handle = DRIVER, HANDLE
    return pv


def _driver(attach: bool | None) -> storagev1_pb2.CSIDriver:
    d = storagev1_pb2.CSIDriver()
    d.metadata.name = DRIVER
    if attach is not None:
        d.spec.attach_required = attach
    return d


PVC_VOL = {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
EPH_VOL = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}
OWNED = {
    "ownerReferences": [
        {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": POD_UID, "controller": True}
    ]
}
UNBOUND = (
    "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: "
    'error processing PVC ns/data: PVC ns/data has non-bound phase ("Pending") or empty '
    'pvc.Spec.VolumeName ("")'
)
UNATTACHED = (
    "unmounted volumes=[data], unattached volumes=[data], failed to process volumes=[]: "
    "timed out waiting for the condition"
)

CASES = [
    ("no claim-backed volume", [{"name": "e", "emptyDir": {}}], [], None, None, False, None),
    ("a bound claim of an in-tree volume", [PVC_VOL], [_claim("data")], persistent_volume("pv", "1Gi"), None, False, None),
    ("an unbound claim", [PVC_VOL], [_claim("data", "Pending")], None, None, False, UNBOUND),
    ("a missing claim", [PVC_VOL], [], None, None, False,
     "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing "
     'PVC ns/data: failed to fetch PVC from API server: persistentvolumeclaims "data" not found'),
    ("a claim being deleted", [PVC_VOL], [_claim("data", deletionTimestamp="2026-01-01T00:00:00Z")], None, None, False,
     "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing "
     "PVC ns/data: can't start pod because PVC ns/data is being deleted"),
    ("a bound claim whose volume is gone", [PVC_VOL], [_claim("data")], None, None, False,
     "unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing "
     'PVC ns/data: failed to fetch PV "pv" from API server: persistentvolumes "pv" not found'),
    ("an ephemeral claim the pod owns", [EPH_VOL], [_claim("p-scratch", **OWNED)], persistent_volume("pv", "1Gi"), None, False, None),
    ("an ephemeral claim of someone else", [EPH_VOL], [_claim("p-scratch")], persistent_volume("pv", "1Gi"), None, False,
     "unmounted volumes=[scratch], unattached volumes=[], failed to process volumes=[scratch]: error processing "
     "PVC ns/p-scratch: PVC ns/p-scratch was not created for pod ns/p (pod is not owner)"),
    ("a CSI volume without a CSIDriver needs attaching", [PVC_VOL], [_claim("data")], _csi_volume(), None, False, UNATTACHED),
    ("a CSI volume whose driver requires attach", [PVC_VOL], [_claim("data")], _csi_volume(), _driver(True), False, UNATTACHED),
    ("a CSI volume attached", [PVC_VOL], [_claim("data")], _csi_volume(), _driver(None), True, None),
    ("a CSI volume whose driver does not attach", [PVC_VOL], [_claim("data")], _csi_volume(), _driver(False), False, None),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "volumes", "claims", "pv", "driver", "attached", "want"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_unmounted(
    name: str,
    volumes: list[dict[str, Any]],
    claims: list[Any],
    pv: Any,
    driver: Any,
    attached: bool,
    want: str | None,
) -> None:
    assert unmounted(_pod(*volumes), NODE, _lookups(claims, pv, driver, attached)) == want


def _lookups(claims: list[Any], pv: Any, driver: Any, attached: bool) -> Lookups:
    by_key = {f"ns/{c.metadata.name}": c for c in claims}
    va = attachment_name(HANDLE, DRIVER, NODE)
    return Lookups(
        claim=by_key.get,
        volume=lambda n: pv if pv is not None and n == pv.metadata.name else None,
        driver=lambda n: driver if driver is not None and n == DRIVER else None,
        attached=lambda n: attached and n == va,
    )


#: The rows of CASES whose volume is in use on the node: attachable (a CSI volume whose
#: driver attaches) and reached through a bound claim, attached yet or not.
IN_USE = {
    "a CSI volume without a CSIDriver needs attaching",
    "a CSI volume whose driver requires attach",
    "a CSI volume attached",
}


@pytest.mark.parametrize(
    ("name", "volumes", "claims", "pv", "driver", "attached", "_want"),
    CASES,
    ids=[c[0] for c in CASES],
)
def test_volumes_in_use(
    name: str,
    volumes: list[dict[str, Any]],
    claims: list[Any],
    pv: Any,
    driver: Any,
    attached: bool,
    _want: str | None,
) -> None:
    at = _lookups(claims, pv, driver, attached)
    want = [f"kubernetes.io/csi/{DRIVER}^{HANDLE}"] if name in IN_USE else []
    assert volumes_in_use([_pod(*volumes), _pod(*volumes)], at) == want


async def test_a_node_reports_the_volumes_its_pods_use_until_they_are_gone() -> None:
    """A pod whose CSI volume waits for its attachment (no attacher runs here): the
    volume is in use on the node from the start; once the pod is gone it is not."""
    async with running(_template(count=1)) as env:
        node = env.pool.nodes[0].name
        pv = _csi_volume()
        pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = "default", "data"
        await env.client.create(pv)
        claim: Any = await env.client.create(persistent_volume_claim("data", "1Gi"))
        claim.spec.volume_name = "pv"
        claim = await env.client.update(claim)
        claim.status.phase = "Bound"
        await env.client.update_status(claim)
        await env.pod("web", node, volumes=[PVC_VOL])

        async def in_use() -> list[str]:
            n: Any = await env.client.get(NODES, node)
            return list(n.status.volumes_in_use)

        await eventually(lambda: _eq(in_use(), [f"kubernetes.io/csi/{DRIVER}^{HANDLE}"]))
        assert await env.phase("web") == "Pending"  # still waiting for the attachment
        await env.client.delete(PODS, "web", "default", grace_period_seconds=0)
        await eventually(lambda: _eq(in_use(), []))


async def _eq(got: Any, want: Any) -> bool:
    return await got == want


async def test_a_pod_waits_for_its_claim_to_be_bound_then_runs() -> None:
    async with running(_template(count=1)) as env:
        node = env.pool.nodes[0].name
        await env.client.create(persistent_volume_claim("data", "1Gi"))
        await env.pod(
            "web", node, volumes=[{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
        )

        async def failed_mount() -> bool:
            events, _ = await env.client.list(EVENTS, namespace="default")
            return any(
                e.reason == "FailedMount"  # type: ignore[attr-defined]
                and e.message.startswith(  # type: ignore[attr-defined]
                    "Unable to attach or mount volumes: unmounted volumes=[data]"
                )
                for e in events
            )

        await eventually(failed_mount)
        pod = await env.get("web")
        assert pod.status.phase == "Pending"
        waiting = [json_format.MessageToDict(c.state) for c in pod.status.container_statuses]
        assert [w["waiting"]["reason"] for w in waiting] == ["ContainerCreating"]
        assert env.pool.stats()["waiting_for_volumes"] == 1

        # play the PV controller: a volume, bound both ways
        pv = persistent_volume("pv-data", "1Gi", status="")
        pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = "default", "data"
        await env.client.create(pv)
        claim: Any = await env.client.get(PVCS, "data", "default")
        claim.spec.volume_name = "pv-data"
        claim = await env.client.update(claim)
        claim.status.phase = "Bound"
        await env.client.update_status(claim)

        async def runs() -> bool:
            return await env.phase("web") == "Running"

        await eventually(runs)
        assert env.pool.stats()["waiting_for_volumes"] == 0
