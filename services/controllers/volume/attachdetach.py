"""The attach/detach controller (upstream pkg/controller/volume/attachdetach), for CSI
volumes through VolumeAttachment objects, and the attacher side of kubera's hollow CSI
drivers.

One queue of node names. A node's sync compares what should be attached to it with the
VolumeAttachments that name it:

- should be attached: every volume of a pod on the node (spec.nodeName; not Succeeded or
  Failed) reached through a claim (`persistentVolumeClaim`, or an `ephemeral` volume's
  `<pod>-<volume>`) that is Bound to a PersistentVolume with a `csi` source whose driver
  requires attach (services/api/helpers/csi.py: CSIDriver spec.attachRequired, true
  when unset or without a CSIDriver);
- a missing one is created as upstream's csi attacher creates it: name `csi-<sha256 of
  volumeHandle + driver + nodeName>`, spec.attacher the driver, spec.nodeName,
  spec.source.persistentVolumeName;
- one that names a PersistentVolume no pod on the node uses any more is deleted (detach),
  if it has the name the csi attacher computes (upstream detaches by deleting that name:
  an attachment made under another name is left alone).

The hollow attacher: an attachment whose attacher is a hollow driver (its CSIDriver
labelled `kubera.io/hollow-csi-driver`, or the PV controller's own `hollow.kubera.io`)
is marked status.attached = true at once, as the driver's external-attacher would once
ControllerPublishVolume succeeded, and the pods on the node that use it get upstream's
SuccessfulAttachVolume event. Attachments of other drivers wait for their attacher
(none runs in kubera), so their pods stay ContainerCreating, as upstream without the
driver installed.

The node's status.volumesAttached (upstream's node status updater, from the actual
state of the world) lists the volumes attached for its pods: one entry per attachment
the node needs that is attached, named `kubernetes.io/csi/<driver>^<volumeHandle>`
with devicePath "" (a CSI attach has no device path), sorted by name. It is written
with a merge patch of the node's status when it differs from the node's, after each
sync of the node; a node whose list changes under the controller is synced again.

Deliberate differences: no attacher finalizer (`external-attacher/<driver>`) and no
wait for the node to report the volume unmounted (status.volumesInUse) before detaching
(upstream waits up to maxWaitForUnmountDuration); no Multi-Attach check for ReadWriteOnce
volumes; no inline CSI volumes or migrated in-tree volumes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.csi import (
    LABEL_HOLLOW_DRIVER,
    attach_required,
    attachment_name,
    csi_volume_name,
)
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import PodsByNode, wait_synced
from services.controllers.events import EventRecorder
from services.controllers.volume.protection import pod_claim_names
from services.controllers.volume.rules import HOLLOW_PROVISIONER, NORMAL
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS, PVCS, PVS = BY_KIND["Pod"], BY_KIND["PersistentVolumeClaim"], BY_KIND["PersistentVolume"]
CSI_DRIVERS, ATTACHMENTS = BY_KIND["CSIDriver"], BY_KIND["VolumeAttachment"]
NODES = BY_KIND["Node"]
VA = storagev1_pb2.VolumeAttachment
SUCCESSFUL_ATTACH = "SuccessfulAttachVolume"


@dataclass
class AttachDetachConfig(WorkerSettings):
    """Settings of the attach/detach controller."""

    record_events: bool = True
    """Write the SuccessfulAttachVolume Events."""


def attachment(pv: storage_pb2.PersistentVolume, node: str) -> VA:
    """The VolumeAttachment of a CSI volume on `node`, as upstream's csi attacher makes it."""
    csi = pv.spec.csi
    va = VA(api_version="storage.k8s.io/v1", kind="VolumeAttachment")
    va.metadata.name = attachment_name(csi.volume_handle, csi.driver, node)
    va.spec.attacher = csi.driver
    va.spec.node_name = node
    va.spec.source.persistent_volume_name = pv.metadata.name
    return va


class AttachDetachController:
    """Keeps VolumeAttachments as pods need them (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: AttachDetachConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or AttachDetachConfig()
        self.clock = clock or RealClock()
        self.pod_informer = informers.get(PODS)
        self.pvc_informer = informers.get(PVCS)
        self.pv_informer = informers.get(PVS)
        self.driver_informer = informers.get(CSI_DRIVERS)
        self.va_informer = informers.get(ATTACHMENTS)
        self.node_informer = informers.get(NODES)
        self.queue: WorkQueue[str] = controller_queue(
            "attachdetach",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.events = EventRecorder(
            client, "attachdetach-controller", self.clock, enabled=self.config.record_events
        )
        self.pods = PodsByNode(self.pod_informer)
        self.pod_informer.add_handlers(self.pods.handlers())
        #: node -> the names of the attachments that name it.
        self._by_node: dict[str, set[str]] = {}
        #: "namespace/claim" -> {pod key: its node}, for the pods bound with that claim.
        self._claim_users: dict[str, dict[str, str]] = {}
        self.pod_informer.add_handlers(
            Handlers(
                on_add=self._pod_changed,
                on_update=lambda _o, n: self._pod_changed(n),
                on_delete=self._pod_deleted,
            )
        )
        self.pvc_informer.add_handlers(
            Handlers(on_add=self._claim_changed, on_update=lambda _o, n: self._claim_changed(n))
        )
        self.pv_informer.add_handlers(
            Handlers(on_add=self._volume_changed, on_update=lambda _o, n: self._volume_changed(n))
        )
        self.driver_informer.add_handlers(
            Handlers(
                on_add=self._driver_changed,
                on_update=lambda _o, n: self._driver_changed(n),
                on_delete=self._driver_changed,
            )
        )
        self.va_informer.add_handlers(
            Handlers(
                on_add=self._va_added,
                on_update=lambda _o, n: self._va_added(n),
                on_delete=self._va_deleted,
            )
        )
        self.node_informer.add_handlers(Handlers(on_update=self._node_changed))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """A pod with volumes that is bound, or turns terminal, changes what is attached."""
        o, n = narrow(old, core_pb2.Pod), narrow(new, core_pb2.Pod)
        if not n.spec.volumes:
            return False
        return o.spec.node_name != n.spec.node_name or o.status.phase != n.status.phase

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.pod_informer.synced,
                self.pvc_informer.synced,
                self.pv_informer.synced,
                self.driver_informer.synced,
                self.va_informer.synced,
                self.node_informer.synced,
            ):
                for node in {*self._by_node, *self._nodes_with_pods()}:
                    self.queue.add(node)
                await run_workers(
                    self.queue,
                    self.sync_node,
                    workers=self.config.workers,
                    stop=stop,
                    what="attachdetach",
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    # ------------------------------------------------------------------ handlers

    def _nodes_with_pods(self) -> set[str]:
        return {
            p.spec.node_name  # type: ignore[attr-defined]
            for p in self.pod_informer.store.values()
            if p.spec.node_name and p.spec.volumes  # type: ignore[attr-defined]
        }

    def _pod_changed(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        if pod.spec.node_name and pod.spec.volumes:
            key = f"{pod.metadata.namespace}/{pod.metadata.name}"
            for name, _ in pod_claim_names(pod):
                users = self._claim_users.setdefault(f"{pod.metadata.namespace}/{name}", {})
                users[key] = pod.spec.node_name
            self.queue.add(pod.spec.node_name)

    def _pod_deleted(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        for name, _ in pod_claim_names(pod):
            users = self._claim_users.get(f"{pod.metadata.namespace}/{name}")
            if users is not None:
                users.pop(key, None)
                if not users:
                    del self._claim_users[f"{pod.metadata.namespace}/{name}"]
        if pod.spec.node_name and pod.spec.volumes:
            self.queue.add(pod.spec.node_name)

    def _claim_changed(self, obj: Message) -> None:
        claim = narrow(obj, storage_pb2.PersistentVolumeClaim)
        if claim.status.phase == "Bound":
            self._nodes_using(claim.metadata.namespace, claim.metadata.name)

    def _volume_changed(self, obj: Message) -> None:
        pv = narrow(obj, storage_pb2.PersistentVolume)
        if pv.spec.HasField("csi") and pv.spec.HasField("claim_ref"):
            self._nodes_using(pv.spec.claim_ref.namespace, pv.spec.claim_ref.name)

    def _nodes_using(self, namespace: str, claim: str) -> None:
        for node in set(self._claim_users.get(f"{namespace}/{claim}", {}).values()):
            self.queue.add(node)

    def _driver_changed(self, _obj: Message) -> None:
        for node in {*self._by_node, *self._nodes_with_pods()}:
            self.queue.add(node)

    def _va_added(self, obj: Message) -> None:
        va = narrow(obj, VA)
        self._by_node.setdefault(va.spec.node_name, set()).add(va.metadata.name)
        self.queue.add(va.spec.node_name)

    def _node_changed(self, old: Message, new: Message) -> None:
        o, n = narrow(old, core_pb2.Node), narrow(new, core_pb2.Node)
        if list(o.status.volumes_attached) != list(n.status.volumes_attached):
            self.queue.add(n.metadata.name)

    def _va_deleted(self, obj: Message) -> None:
        va = narrow(obj, VA)
        names = self._by_node.get(va.spec.node_name)
        if names is not None:
            names.discard(va.metadata.name)
            if not names:
                del self._by_node[va.spec.node_name]
        self.queue.add(va.spec.node_name)

    # ------------------------------------------------------------------ sync

    def _volumes_of(self, pod: core_pb2.Pod) -> Iterator[storage_pb2.PersistentVolume]:
        """The attachable CSI volumes a pod uses through its bound claims."""
        for name, _ in pod_claim_names(pod):
            claim = self.pvc_informer.store.get(f"{pod.metadata.namespace}/{name}")
            if claim is None or claim.status.phase != "Bound":  # type: ignore[attr-defined]
                continue
            pv = self.pv_informer.store.get(claim.spec.volume_name)  # type: ignore[attr-defined]
            if pv is None:
                continue
            volume = narrow(pv, storage_pb2.PersistentVolume)
            if volume.spec.HasField("csi") and attach_required(
                volume.spec.csi.driver, self.driver_informer.store.get
            ):
                yield volume

    def desired(self, node: str) -> dict[str, tuple[VA, list[core_pb2.Pod]]]:
        """The attachments `node` needs, by name, each with the pods that need it."""
        out: dict[str, tuple[VA, list[core_pb2.Pod]]] = {}
        for pod in self.pods.pods_on(node):
            if pod.status.phase in ("Succeeded", "Failed") or not pod.spec.volumes:
                continue
            for pv in self._volumes_of(pod):
                va = attachment(pv, node)
                out.setdefault(va.metadata.name, (va, []))[1].append(pod)
        return out

    def _hollow(self, driver: str) -> bool:
        if driver == HOLLOW_PROVISIONER:
            return True
        obj = self.driver_informer.store.get(driver)
        return obj is not None and LABEL_HOLLOW_DRIVER in obj.metadata.labels  # type: ignore[attr-defined]

    def _detachable(self, va: VA) -> bool:
        """Whether detaching the attachment's volume deletes it: upstream's csi attacher
        deletes the attachment of the computed name for (volume, driver, node), so one
        made under another name (by a user, by another tool) is left alone."""
        pv = self.pv_informer.store.get(va.spec.source.persistent_volume_name)
        if pv is None or not pv.spec.HasField("csi"):  # type: ignore[attr-defined]
            return False
        return (
            attachment(narrow(pv, storage_pb2.PersistentVolume), va.spec.node_name).metadata.name
            == va.metadata.name
        )

    async def sync_node(self, node: str) -> None:
        """Create the attachments `node` needs, delete those it no longer needs, and
        attach those of hollow drivers."""
        want = self.desired(node)
        have: dict[str, VA] = {}
        for name in list(self._by_node.get(node, ())):
            obj = self.va_informer.store.get(name)
            if obj is not None:
                have[name] = narrow(obj, VA)
        for name, (va, _) in want.items():
            if name not in have:
                # one made by an earlier sync exists: the informer shows it soon
                with contextlib.suppress(AlreadyExistsError):
                    await self.client.create(va)
        for name, va in have.items():
            if name not in want and self._detachable(va):
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(ATTACHMENTS, name)
            elif (
                name in want
                and not va.status.attached
                and self._hollow(va.spec.attacher)
                and await self._attach(va, want[name][1])
            ):
                have[name] = narrow(codec.clone(va), VA)
                have[name].status.attached = True
        await self._report_attached(node, want, have)

    def attached_volumes(
        self, want: dict[str, tuple[VA, list[core_pb2.Pod]]], have: dict[str, VA]
    ) -> list[core_pb2.AttachedVolume]:
        """The node's status.volumesAttached: the attachments it needs that are attached."""
        names = set()
        for name in want:
            va = have.get(name)
            if va is None or not va.status.attached or va.metadata.deletion_timestamp:
                continue
            pv = self.pv_informer.store.get(va.spec.source.persistent_volume_name)
            if pv is not None and pv.spec.HasField("csi"):  # type: ignore[attr-defined]
                csi = pv.spec.csi  # type: ignore[attr-defined]
                names.add(csi_volume_name(csi.driver, csi.volume_handle))
        return [core_pb2.AttachedVolume(name=n, device_path="") for n in sorted(names)]

    async def _report_attached(
        self, node: str, want: dict[str, tuple[VA, list[core_pb2.Pod]]], have: dict[str, VA]
    ) -> None:
        """Patch the node's status.volumesAttached when it differs (no Node: nothing)."""
        obj = self.node_informer.store.get(node)
        if obj is None:
            return
        attached = self.attached_volumes(want, have)
        if list(narrow(obj, core_pb2.Node).status.volumes_attached) == attached:
            return
        body = [{"name": v.name, "devicePath": v.device_path} for v in attached]
        with contextlib.suppress(NotFoundError):
            await self.client.patch(
                NODES, node, json.dumps({"status": {"volumesAttached": body}}), status=True
            )

    async def _attach(self, va: VA, pods: list[core_pb2.Pod]) -> bool:
        """The hollow driver's ControllerPublishVolume: the attachment is attached."""
        new = VA()
        new.CopyFrom(va)
        new.status.attached = True
        try:
            await self.client.update_status(new)
        except (ConflictError, NotFoundError):
            return False  # a newer attachment comes through its own event
        message = (
            f'AttachVolume.Attach succeeded for volume "{va.spec.source.persistent_volume_name}"'
        )
        for pod in pods:
            self.events.event(pod, NORMAL, SUCCESSFUL_ATTACH, message)
        return True


__all__ = ["AttachDetachConfig", "AttachDetachController", "attachment"]
