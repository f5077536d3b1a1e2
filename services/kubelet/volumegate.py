"""Whether a hollow kubelet may start a pod as far as its persistent volumes go (upstream
kubelet: the volume manager's WaitForAttachAndMount, before the containers are made).

Every `persistentVolumeClaim` volume and every generic `ephemeral` volume (the claim
`<pod>-<volume>`, which the pod must control) of a pod needs its claim Bound to a volume
that exists; a volume with a `csi` source whose driver requires attach (its CSIDriver's
spec.attachRequired, true by default and when there is no CSIDriver object, as upstream's
csi attacher decides) also needs a VolumeAttachment of that volume to the pod's node with
status.attached. Until then the pod stays Pending / ContainerCreating and gets a Warning
FailedMount event with upstream's message:

    Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[],
    failed to process volumes=[data]: error processing PVC ns/data: PVC ns/data has
    non-bound phase ("Pending") or empty pvc.Spec.VolumeName ("")

(the desired-state populator's error for a claim that cannot be used yet), or, for a
volume waiting for its attachment, `unmounted volumes=[data], unattached volumes=[data],
failed to process volumes=[]: timed out waiting for the condition`. The pool retries
the waiting pods when a claim, a volume, a CSIDriver or one of its nodes' attachments
changes.

A node's status.volumesInUse (`volumes_in_use`) names the attachable volumes its pods'
bound claims reach (`kubernetes.io/csi/<driver>^<volumeHandle>`, sorted), from the
moment the pod is seen until it is finished or gone, as upstream's volume manager
reports the volumes of its desired and actual state; the pool posts it with the node's
status when it changes.

Volumes with in-tree sources (gcePersistentDisk, hostPath, local, nfs...) are mounted
without attach: kubera has no in-tree attachable plugins (and no CSI migration). Other
volume types (emptyDir, configMap, secret...) gate nothing here (configgate.py checks
configMaps and secrets).

"""

from __future__ import annotations

import logging
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.csi import attach_required, attachment_name, csi_volume_name
from services.api.machinery.kinds import BY_KIND
from services.client import Client, EventRecorder, Handlers, Informer
from services.clock import Clock

log = logging.getLogger(__name__)

PVCS, PVS = BY_KIND["PersistentVolumeClaim"], BY_KIND["PersistentVolume"]
CSI_DRIVERS, ATTACHMENTS = BY_KIND["CSIDriver"], BY_KIND["VolumeAttachment"]
REASON_FAILED_MOUNT, WARNING = "FailedMount", "Warning"
#: What the wait ends with when nothing failed but an attachment is missing (upstream's
#: wait.ErrWaitTimeout text).
TIMED_OUT = "timed out waiting for the condition"


def pod_claims(pod: core_pb2.Pod) -> Iterator[tuple[str, str, bool]]:
    """(volume name, claim name, whether ephemeral) of each claim-backed volume."""
    for vol in pod.spec.volumes:
        fields = vol.fields
        name = fields["name"].string_value if "name" in fields else ""
        src = fields.get("persistentVolumeClaim")
        if src is not None and src.HasField("struct_value"):
            claim = src.struct_value.fields.get("claimName")
            yield name, claim.string_value if claim is not None else "", False
        elif "ephemeral" in fields:
            yield name, f"{pod.metadata.name}-{name}", True


@dataclass(frozen=True)
class Lookups:
    """The objects the gate reads: each by its key ("ns/name" for claims, else name)."""

    claim: Callable[[str], Message | None]
    volume: Callable[[str], Message | None]
    driver: Callable[[str], Message | None]
    #: VolumeAttachment name -> whether it exists, attached and not being deleted.
    attached: Callable[[str], bool]


def _claim_problem(pod: core_pb2.Pod, claim_name: str, ephemeral: bool, at: Lookups) -> str:
    """Why the claim cannot be used, "" when it can (the populator's createVolumeSpec)."""
    ns = pod.metadata.namespace
    obj = at.claim(f"{ns}/{claim_name}")
    if not isinstance(obj, storage_pb2.PersistentVolumeClaim):
        return (
            f'failed to fetch PVC from API server: persistentvolumeclaims "{claim_name}" not found'
        )
    if ephemeral and not any(
        r.controller and r.uid == pod.metadata.uid for r in obj.metadata.owner_references
    ):
        return (
            f"PVC {ns}/{claim_name} was not created for pod {ns}/{pod.metadata.name} "
            f"(pod is not owner)"
        )
    if obj.metadata.deletion_timestamp:
        return f"can't start pod because PVC {ns}/{claim_name} is being deleted"
    if obj.status.phase != "Bound" or not obj.spec.volume_name:
        return (
            f'PVC {ns}/{claim_name} has non-bound phase ("{obj.status.phase}") or empty '
            f'pvc.Spec.VolumeName ("{obj.spec.volume_name}")'
        )
    volume = at.volume(obj.spec.volume_name)
    if not isinstance(volume, storage_pb2.PersistentVolume):
        return (
            f'failed to fetch PV "{obj.spec.volume_name}" from API server: '
            f'persistentvolumes "{obj.spec.volume_name}" not found'
        )
    return ""


def _go_list(names: Iterable[str]) -> str:
    return "[" + " ".join(sorted(names)) + "]"


def attachable_volume(
    pod: core_pb2.Pod, claim_name: str, at: Lookups
) -> storage_pb2.PersistentVolume | None:
    """The volume of a bound claim, when it needs attaching."""
    claim = at.claim(f"{pod.metadata.namespace}/{claim_name}")
    if not isinstance(claim, storage_pb2.PersistentVolumeClaim) or not claim.spec.volume_name:
        return None
    volume = at.volume(claim.spec.volume_name)
    if not isinstance(volume, storage_pb2.PersistentVolume) or not volume.spec.HasField("csi"):
        return None
    csi = volume.spec.csi
    if not attach_required(csi.driver, at.driver):
        return None
    return volume


def volumes_in_use(pods: Iterable[core_pb2.Pod], at: Lookups) -> list[str]:
    """A node's status.volumesInUse (the volume manager's GetVolumesInUse): the unique
    names of the attachable volumes the pods' claims are bound to, sorted."""
    names = set()
    for pod in pods:
        for _volume, claim, _ephemeral in pod_claims(pod):
            pv = attachable_volume(pod, claim, at)
            if pv is not None:
                names.add(csi_volume_name(pv.spec.csi.driver, pv.spec.csi.volume_handle))
    return sorted(names)


def unmounted(pod: core_pb2.Pod, node: str, at: Lookups) -> str | None:
    """None when every claim-backed volume of the pod may be mounted on `node`; else the
    error WaitForAttachAndMount gives (see the module docstring)."""
    failed: list[str] = []
    errors: list[str] = []
    unattached: list[str] = []
    for volume, claim, ephemeral in pod_claims(pod):
        problem = _claim_problem(pod, claim, ephemeral, at)
        if problem:
            failed.append(volume)
            errors.append(f"error processing PVC {pod.metadata.namespace}/{claim}: {problem}")
            continue
        pv = attachable_volume(pod, claim, at)
        if pv is not None and not at.attached(
            attachment_name(pv.spec.csi.volume_handle, pv.spec.csi.driver, node)
        ):
            unattached.append(volume)
    if not failed and not unattached:
        return None
    return (
        f"unmounted volumes={_go_list([*failed, *unattached])}, "
        f"unattached volumes={_go_list(unattached)}, "
        f"failed to process volumes={_go_list(failed)}: "
        + ("; ".join(errors) if errors else TIMED_OUT)
    )


class VolumeObjects:
    """The claims, volumes and CSIDrivers pods may use and the attachments to a pool's
    nodes (one informer each), and `unmounted` over them; `on_change()` runs when one of
    them is added or changed."""

    def __init__(
        self, client: Client, nodes: Container[str], on_change: Callable[[], None]
    ) -> None:
        self.nodes = nodes

        def changed(*_: Message) -> None:
            on_change()

        handlers = Handlers(on_add=changed, on_update=changed)
        self.claims = Informer(client, PVCS)
        self.volumes = Informer(client, PVS)
        self.drivers = Informer(client, CSI_DRIVERS)
        self.attachments = Informer(client, ATTACHMENTS, keep=self._ours)
        for inf in (self.claims, self.volumes, self.drivers, self.attachments):
            inf.add_handlers(handlers)
        self.lookups = Lookups(
            # through the informers: a relist replaces their stores
            claim=lambda key: self.claims.store.get(key),
            volume=lambda name: self.volumes.store.get(name),
            driver=lambda name: self.drivers.store.get(name),
            attached=self._attached,
        )

    def _ours(self, obj: Message) -> bool:
        return isinstance(obj, storagev1_pb2.VolumeAttachment) and obj.spec.node_name in self.nodes

    def _attached(self, name: str) -> bool:
        va = self.attachments.store.get(name)
        return (
            isinstance(va, storagev1_pb2.VolumeAttachment)
            and va.status.attached
            and not va.metadata.deletion_timestamp
        )

    @property
    def informers(self) -> Iterable[Informer]:
        return (self.claims, self.volumes, self.drivers, self.attachments)

    def unmounted(self, pod: core_pb2.Pod, node: str) -> str | None:
        if not pod.spec.volumes:
            return None
        return unmounted(pod, node, self.lookups)

    def in_use(self, pods: Iterable[core_pb2.Pod]) -> list[str]:
        return volumes_in_use(pods, self.lookups)


class VolumeGate:
    """The pods of a pool that wait for their volumes: `hold(pod, node)` says whether one
    must wait (recording FailedMount when its reason changes); when the objects change,
    each waiting pod is checked again and `resume(uid)` is called for those that may go
    on."""

    def __init__(
        self,
        client: Client,
        nodes: Container[str],
        clock: Clock,
        *,
        resume: Callable[[str], None],
        recheck: Callable[[str], None] = lambda _node: None,
    ) -> None:
        self.objects = VolumeObjects(client, nodes, self._changed)
        self.events = EventRecorder(client, "kubelet", clock)
        self.resume = resume
        #: Called with the node of each waiting pod when the objects change (the pool
        #: reports the node's volumes in use again).
        self.recheck = recheck
        #: pod uid -> (the pod, its node, why it waits).
        self.waiting: dict[str, tuple[core_pb2.Pod, str, str]] = {}

    @property
    def informers(self) -> Iterable[Informer]:
        return self.objects.informers

    def hold(self, pod: core_pb2.Pod, node: str) -> bool:
        why = self.objects.unmounted(pod, node)
        uid = pod.metadata.uid
        if why is None:
            self.waiting.pop(uid, None)
            return False
        before = self.waiting.get(uid)
        if before is None or before[2] != why:
            log.info("pod %s/%s: %s", pod.metadata.namespace, pod.metadata.name, why)
            message = f"Unable to attach or mount volumes: {why}"
            self.events.event(pod, WARNING, REASON_FAILED_MOUNT, message)
        self.waiting[uid] = (pod, node, why)
        return True

    def forget(self, uid: str) -> None:
        self.waiting.pop(uid, None)

    def _changed(self) -> None:
        nodes = set()
        for uid, (pod, node, _) in list(self.waiting.items()):
            nodes.add(node)
            if not self.hold(pod, node):
                self.resume(uid)
        for node in sorted(nodes):
            self.recheck(node)

    async def close(self) -> None:
        await self.events.close()


__all__ = [
    "REASON_FAILED_MOUNT",
    "Lookups",
    "VolumeGate",
    "VolumeObjects",
    "attachable_volume",
    "pod_claims",
    "unmounted",
    "volumes_in_use",
]
