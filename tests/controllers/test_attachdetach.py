"""The attach/detach controller (services/controllers/volume/attachdetach.py): a pod on a
node whose bound claim's CSI volume needs attaching gets a VolumeAttachment named as
upstream's csi attacher names it, attached at once for a hollow driver and left for its
attacher otherwise; none when the driver does not attach; deleted when no pod on the node
uses the volume any more; the node's status.volumesAttached lists what is attached."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from protos.kubera.v1 import storagev1_pb2
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER, attachment_name
from services.api.machinery.kinds import BY_KIND
from services.controllers.volume.attachdetach import AttachDetachController
from tests.builders import MakePod, persistent_volume, persistent_volume_claim
from tests.controllers.conftest import NS, ControllerCluster
from tests.waiting import eventually

PODS, PVCS, EVENTS = BY_KIND["Pod"], BY_KIND["PersistentVolumeClaim"], BY_KIND["Event"]
NODES = BY_KIND["Node"]
UNIQUE_NAME = "kubernetes.io/csi/disk.example.com^vol-0001"
ATTACHMENTS = BY_KIND["VolumeAttachment"]
DRIVER, HANDLE, NODE = "disk.example.com", "vol-0001", "n1"


def test_attachment_name_is_upstreams() -> None:
    """csi_attacher.go's getAttachmentName: `csi-` + hex sha256(handle + driver + node)."""
    want = "csi-" + hashlib.sha256(b"vol-0001disk.example.comn1").hexdigest()
    assert attachment_name(HANDLE, DRIVER, NODE) == want
    assert attachment_name(HANDLE, DRIVER, "n2") != want


async def _bound_claim(cluster: ControllerCluster, *, driver: str = DRIVER) -> None:
    pv = persistent_volume("pv-1", "1Gi", status="")
    pv.spec.ClearField("gce_persistent_disk")
    pv.spec.csi.driver, pv.spec.csi.volume_handle = driver, HANDLE
    pv.spec.claim_ref.namespace, pv.spec.claim_ref.name = NS, "data"
    await cluster.client.create(pv)
    claim: Any = await cluster.client.create(persistent_volume_claim("data", "1Gi"))
    claim.spec.volume_name = "pv-1"
    claim = await cluster.client.update(claim)
    claim.status.phase = "Bound"
    await cluster.client.update_status(claim)


async def _csi_driver(cluster: ControllerCluster, *, hollow: bool, attach: bool | None) -> None:
    d = storagev1_pb2.CSIDriver(api_version="storage.k8s.io/v1", kind="CSIDriver")
    d.metadata.name = DRIVER
    if hollow:
        d.metadata.labels[LABEL_HOLLOW_DRIVER] = "true"
    if attach is not None:
        d.spec.attach_required = attach
    await cluster.client.create(d)


async def _pod(cluster: ControllerCluster, name: str = "web") -> Any:
    p = MakePod().typed().name(name).namespace(NS).node(NODE).container("c", "app:v1")
    p.spec({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]})
    return await cluster.client.create(p.obj())


async def _run(cluster: ControllerCluster) -> AttachDetachController:
    controller = AttachDetachController(cluster.client, cluster.informers)
    cluster.bump_on(ATTACHMENTS, PVCS)
    await cluster.start(controller)
    return controller


def _va(controller: AttachDetachController) -> Any:
    return controller.va_informer.store.get(attachment_name(HANDLE, DRIVER, NODE))


async def test_a_hollow_drivers_volume_is_attached_and_detached_with_its_pod(
    cluster: ControllerCluster,
) -> None:
    await cluster.node(NODE)
    await _csi_driver(cluster, hollow=True, attach=None)
    await _bound_claim(cluster)
    controller = await _run(cluster)
    pod = await _pod(cluster)
    await cluster.until(lambda: _va(controller) is not None and _va(controller).status.attached)
    va = _va(controller)
    assert (va.spec.attacher, va.spec.node_name, va.spec.source.persistent_volume_name) == (
        DRIVER,
        NODE,
        "pv-1",
    )

    async def attach_event() -> bool:
        events, _ = await cluster.client.list(EVENTS, namespace=NS)
        return any(
            e.reason == "SuccessfulAttachVolume"  # type: ignore[attr-defined]
            and e.involved_object.uid == pod.metadata.uid  # type: ignore[attr-defined]
            and e.message == 'AttachVolume.Attach succeeded for volume "pv-1"'  # type: ignore[attr-defined]
            for e in events
        )

    await eventually(attach_event)
    # a second pod on the node keeps it; deleting both detaches
    await cluster.until(lambda: _attached(controller) == [(UNIQUE_NAME, "")])
    await _pod(cluster, "web-2")
    await cluster.client.delete(PODS, "web", NS, grace_period_seconds=0)
    await cluster.until(lambda: "default/web" not in controller.pod_informer.store)
    assert _va(controller) is not None
    await cluster.client.delete(PODS, "web-2", NS, grace_period_seconds=0)
    await cluster.until(lambda: _va(controller) is None)
    await cluster.until(lambda: _attached(controller) == [])


def _attached(controller: AttachDetachController) -> list[tuple[str, str]] | None:
    node = controller.node_informer.store.get(NODE)
    if node is None:
        return None
    return [(v.name, v.device_path) for v in node.status.volumes_attached]  # type: ignore[attr-defined]


async def test_a_nodes_attached_volumes_written_over_are_written_again(
    cluster: ControllerCluster,
) -> None:
    """upstream's node status updater re-reports its actual state; here a node whose list
    changes under the controller is synced again."""
    await cluster.node(NODE)
    await _csi_driver(cluster, hollow=True, attach=None)
    await _bound_claim(cluster)
    controller = await _run(cluster)
    await _pod(cluster)
    await cluster.until(lambda: _attached(controller) == [(UNIQUE_NAME, "")])
    await cluster.client.patch(NODES, NODE, '{"status": {"volumesAttached": []}}', status=True)
    await cluster.until(lambda: _attached(controller) == [])
    await cluster.until(lambda: _attached(controller) == [(UNIQUE_NAME, "")])


async def test_an_attachment_waiting_for_its_attacher_is_not_reported(
    cluster: ControllerCluster,
) -> None:
    await cluster.node(NODE)
    await _csi_driver(cluster, hollow=False, attach=None)
    await _bound_claim(cluster)
    controller = await _run(cluster)
    await _pod(cluster)
    await cluster.until(lambda: _va(controller) is not None)
    await controller.sync_node(NODE)
    assert _attached(controller) == []


@pytest.mark.parametrize(
    ("hollow", "attach", "want"),
    [
        (False, None, "waiting"),  # no attacher runs for it: created, never attached
        (True, False, "none"),  # attachRequired: false
    ],
    ids=["another-driver-waits-for-its-attacher", "attach-not-required"],
)
async def test_attachments_by_driver(
    cluster: ControllerCluster, hollow: bool, attach: bool | None, want: str
) -> None:
    await _csi_driver(cluster, hollow=hollow, attach=attach)
    await _bound_claim(cluster)
    controller = await _run(cluster)
    await _pod(cluster)
    await cluster.until(lambda: "default/web" in controller.pod_informer.store)
    await controller.sync_node(NODE)
    await cluster.until(lambda: (_va(controller) is not None) == (want == "waiting"))
    if want == "waiting":
        assert not _va(controller).status.attached


async def test_an_attachment_under_another_name_is_left_alone(cluster: ControllerCluster) -> None:
    """Detaching deletes the attachment of the csi attacher's computed name only: one a
    user made for the same volume and node under another name stays (upstream's attacher
    deletes by that name)."""
    await _csi_driver(cluster, hollow=True, attach=None)
    await _bound_claim(cluster)
    mine = storagev1_pb2.VolumeAttachment(api_version="storage.k8s.io/v1", kind="VolumeAttachment")
    mine.metadata.name = "users-attachment"
    mine.spec.attacher, mine.spec.node_name = DRIVER, NODE
    mine.spec.source.persistent_volume_name = "pv-1"
    await cluster.client.create(mine)
    controller = await _run(cluster)
    await _pod(cluster)
    await cluster.until(lambda: _va(controller) is not None and _va(controller).status.attached)
    await cluster.client.delete(PODS, "web", NS, grace_period_seconds=0)
    await cluster.until(lambda: _va(controller) is None)  # the computed one is detached
    assert "users-attachment" in controller.va_informer.store
