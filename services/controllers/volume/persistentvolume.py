"""The PersistentVolume controller (upstream pkg/controller/volume/persistentvolume,
pv_controller.go): binds claims to volumes, provisions volumes for claims of a hollow
provisioner's class, and reclaims the volumes of deleted claims.

Two queues, as upstream's: claims (`namespace/name`) and volumes (`name`), each synced by
one worker, plus a full resync every `sync_period` (--pvclaimbinder-sync-period), which is
what retries a Pending claim. Binding is upstream's three writes, each idempotent, so a
sync interrupted anywhere is finished by the next one:

    volume.spec.claimRef (+ bound-by-controller) ─► volume Bound ─►
    claim.spec.volumeName (+ bound-by-controller, bind-completed) ─► claim Bound

A claim (sync_claim):
- without `pv.kubernetes.io/bind-completed` is unbound: with a volumeName it binds that
  volume if the volume exists, is free (or pre-bound to it) and satisfies it (else a
  VolumeMismatch / FailedBinding event, Pending); without one it binds the best match
  (services/api/helpers/volumes.py: the smallest Available volume of its class, size,
  modes, volume mode and selector) among the volumes of its class and those naming it
  (api/helpers/volumes.py `VolumeIndex`). In a WaitForFirstConsumer class only a pre-bound
  volume is bound here; the rest waits for the scheduler's `volume.kubernetes.io/
  selected-node` annotation (event WaitForPodScheduled naming the unscheduled pods that
  use it, else WaitForFirstConsumer), after which the claim is provisioned. With no
  match: a claim naming no class is given the default class if there is one now
  (RetroactiveDefaultStorageClass); a class whose provisioner is one of `provisioners`
  gets a volume made for it (ProvisioningSucceeded); another provisioner is waited for
  (ExternalProvisioning); no class is FailedBinding.
- with bind-completed is bound: it stays Bound while its volume points back at it, and
  turns Lost (ClaimLost, ClaimMisbound) when the volume is gone or another's.

A volume (sync_volume): free → Available; pre-bound by name only → Available; bound to a
claim that is gone (checked against the apiserver before believing the cache) → Released
and reclaimed: Retain leaves it Released, Recycle scrubs it at once (hollow: nothing to
scrub) and makes it Available, Delete deletes it when a hollow provisioner made it, waits
for an external provisioner that made it, and otherwise fails it (VolumeFailedDelete: no
deleter for the source). A volume whose claim is bound elsewhere is unbound (Available),
or Released and deleted when it was provisioned for that claim.

The hollow provisioner (a class whose `provisioner` is in `provisioners`, by default
`hollow.kubera.io`) makes `pvc-<claim uid>`: the claim's size, modes and volume mode, the
class's reclaim policy and mount options, a `csi` source of that driver (volumeHandle the
volume's name), pre-bound to the claim, annotated `pv.kubernetes.io/provisioned-by`. Its
volumes are node-local, as those of kind's default class (rancher.io/local-path): one
provisioned for a selected node (WaitForFirstConsumer) gets a node affinity
`kubernetes.io/hostname` In that node's hostname, so the claim's later pods go there
too; an Immediate claim's volume gets the class's first allowedTopologies, or none (it
is reachable from every node, where local-path would refuse). The
hollow CSI drivers that node templates declare (their CSIDriver objects carry the label
`kubera.io/hollow-csi-driver`) are provisioned for too, as their external-provisioner
would: the volume gets a node affinity on the driver's topology keys (from the CSINode
of the node), valued as the selected node's labels (WaitForFirstConsumer), else as the
class's first allowedTopologies, else as one of the segments of the nodes that run the
driver, chosen by the claim's UID. Capacity (CSIStorageCapacity) is not consumed:
provisioning never runs out.

Deliberate differences: no volume plugins (attach, mount, recycler pods, in-tree deleters),
no `kubernetes.io/pv-controller` deletion finalizer, and provisioning happens in the sync
rather than in a separate operation goroutine.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, storage_pb2, storagev1_pb2
from services.api.helpers.csi import LABEL_HOLLOW_DRIVER
from services.api.helpers.podvolumes import pod_claim_names
from services.api.helpers.volumes import (
    ANN_BETA_STORAGE_CLASS,
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DYNAMICALLY_PROVISIONED,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    VolumeIndex,
    bind_volume_to_claim,
    claim_class,
    is_default_class,
    is_volume_bound_to_claim,
    volume_mode_mismatch,
)
from services.api.helpers.wellknown import LABEL_HOSTNAME
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError, ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import NamespaceIndex, wait_synced
from services.controllers.events import EventRecorder
from services.controllers.volume.rules import (
    CLAIM_LOST,
    CLAIM_MISBOUND,
    EXTERNAL_PROVISIONING,
    FAILED_BINDING,
    HOLLOW_PROVISIONER,
    NORMAL,
    PROVISIONING_FAILED,
    PROVISIONING_SUCCEEDED,
    VOLUME_FAILED_DELETE,
    VOLUME_MISMATCH,
    VOLUME_RECYCLED,
    WAIT_FOR_FIRST_CONSUMER,
    WAIT_FOR_POD_SCHEDULED,
    WARNING,
    add_topology,
    allowed_segment,
    claim_reference,
    pick_segment,
    provisioned_volume,
    satisfy_problem,
    topology_segment,
)
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PVS, PVCS, CLASSES = (
    BY_KIND["PersistentVolume"],
    BY_KIND["PersistentVolumeClaim"],
    BY_KIND["StorageClass"],
)
PV = storage_pb2.PersistentVolume
PODS, NODES = BY_KIND["Pod"], BY_KIND["Node"]
CSI_DRIVERS, CSI_NODES = BY_KIND["CSIDriver"], BY_KIND["CSINode"]
PVC = storage_pb2.PersistentVolumeClaim


@dataclass
class PersistentVolumeConfig(WorkerSettings):
    """Settings of the PersistentVolume controller."""

    sync_period: float = 15.0
    """Seconds between full resyncs of every claim and volume
    (--pvclaimbinder-sync-period); a Pending claim is retried this often."""

    provisioners: tuple[str, ...] = field(default=(HOLLOW_PROVISIONER,))
    """The provisioners this controller provisions for (hollow volumes); a class of
    another provisioner is left to it (ExternalProvisioning)."""

    record_events: bool = True
    """Write the binding, provisioning and reclaim Events."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.sync_period <= 0:
            raise ValueError(f"sync_period must be positive, got {self.sync_period}")


def _version(obj: Message | None) -> int:
    try:
        return int(obj.metadata.resource_version) if obj is not None else -1  # type: ignore[attr-defined]
    except ValueError:
        return -1


class PersistentVolumeController:
    """Binds, provisions and reclaims (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: PersistentVolumeConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or PersistentVolumeConfig()
        self.clock = clock or RealClock()
        self.pv_informer = informers.get(PVS)
        self.pvc_informer = informers.get(PVCS)
        self.class_informer = informers.get(CLASSES)
        self.pod_informer = informers.get(PODS)
        self.driver_informer = informers.get(CSI_DRIVERS)
        self.csinode_informer = informers.get(CSI_NODES)
        self.node_informer = informers.get(NODES)
        self._pods = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        base, cap = self.config.base_backoff, self.config.max_backoff
        self.volume_queue: WorkQueue[str] = controller_queue(
            "volumes", clock=self.clock, base_delay=base, max_delay=cap
        )
        self.claim_queue: WorkQueue[str] = controller_queue(
            "claims", clock=self.clock, base_delay=base, max_delay=cap
        )
        self.events = EventRecorder(
            client,
            "persistentvolume-controller",
            self.clock,
            enabled=self.config.record_events,
        )
        # What this controller wrote last, newer than the informers until they catch up
        # (upstream's storeObjectUpdate): the next sync starts from it, not a stale copy.
        self._written: dict[tuple[str, str], Message] = {}
        #: The volumes by class and by the claim they name (api/helpers/volumes.py): a
        #: claim's match looks at those only.
        self.index = VolumeIndex()
        self.pv_informer.add_handlers(
            Handlers(
                self._volume_changed, lambda _o, n: self._volume_changed(n), self._volume_deleted
            )
        )
        self.pvc_informer.add_handlers(
            Handlers(self._claim_changed, lambda _o, n: self._claim_changed(n), self._claim_deleted)
        )

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod matters here."""
        return False

    async def run(self, stop: asyncio.Event) -> None:
        resync: asyncio.Task[None] | None = None
        try:
            if await wait_synced(
                stop,
                self.pv_informer.synced,
                self.pvc_informer.synced,
                self.class_informer.synced,
                self.pod_informer.synced,
                self.driver_informer.synced,
                self.csinode_informer.synced,
                self.node_informer.synced,
            ):
                resync = asyncio.create_task(self._resync(stop), name="pv-resync")
                await asyncio.gather(
                    run_workers(
                        self.volume_queue, self.sync_volume, workers=1, stop=stop, what="volume"
                    ),
                    run_workers(
                        self.claim_queue, self.sync_claim, workers=1, stop=stop, what="claim"
                    ),
                )
        finally:
            if resync is not None:
                resync.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await resync
            self.volume_queue.shutdown()
            self.claim_queue.shutdown()
            await self.events.close()

    async def _resync(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            await self.clock.sleep(self.config.sync_period)
            for key in list(self.pv_informer.store):
                self.volume_queue.add(key)
            for key in list(self.pvc_informer.store):
                self.claim_queue.add(key)

    # ------------------------------------------------------------------ handlers

    def _volume_changed(self, obj: Message) -> None:
        self.index.add(obj)  # type: ignore[arg-type]
        self.volume_queue.add(object_key(obj))

    def _volume_deleted(self, obj: Message) -> None:
        pv: PV = obj  # type: ignore[assignment]
        self._written.pop(("pv", pv.metadata.name), None)
        self.index.remove(pv.metadata.name)
        if pv.spec.HasField("claim_ref"):
            # the claim turns Lost now rather than at the next resync
            self.claim_queue.add(f"{pv.spec.claim_ref.namespace}/{pv.spec.claim_ref.name}")

    def _claim_changed(self, obj: Message) -> None:
        self.claim_queue.add(object_key(obj))

    def _claim_deleted(self, obj: Message) -> None:
        pvc: PVC = obj  # type: ignore[assignment]
        self._written.pop(("pvc", object_key(pvc)), None)
        if pvc.spec.volume_name:
            # its volume is released now rather than at the next resync
            self.volume_queue.add(pvc.spec.volume_name)

    # ------------------------------------------------------------------ reads

    def _latest(self, what: str, key: str) -> Message | None:
        informer = self.pv_informer if what == "pv" else self.pvc_informer
        cached = informer.store.get(key)
        mine = self._written.get((what, key))
        if cached is None:
            return None  # deleted (or not seen yet): the informer decides existence
        if mine is not None and _version(mine) > _version(cached):
            return mine
        self._written.pop((what, key), None)
        return cached

    def _volume(self, name: str) -> PV | None:
        obj = self._latest("pv", name)
        return narrow(codec.clone(obj), PV) if obj is not None else None

    def _claim(self, key: str) -> PVC | None:
        obj = self._latest("pvc", key)
        return narrow(codec.clone(obj), PVC) if obj is not None else None

    def _class(self, name: str) -> storagev1_pb2.StorageClass | None:
        obj = self.class_informer.store.get(name)
        return obj if isinstance(obj, storagev1_pb2.StorageClass) else None

    def _is_delay_binding(self, claim: PVC) -> bool:
        """IsDelayBindingMode: the claim's class binds WaitForFirstConsumer."""
        name = claim_class(claim)
        sc = self._class(name) if name else None
        return sc is not None and sc.volume_binding_mode == "WaitForFirstConsumer"

    # ------------------------------------------------------------------ writes

    async def _update(self, obj: PV | PVC, *, status: bool = False) -> PV | PVC:
        written = await (self.client.update_status(obj) if status else self.client.update(obj))
        what = "pv" if isinstance(written, PV) else "pvc"
        self._written[(what, object_key(written))] = written
        if isinstance(written, PV):
            self.index.add(written)
        return narrow(codec.clone(written), type(obj))

    async def _volume_phase(self, pv: PV, phase: str, message: str = "") -> PV:
        """updateVolumePhase: status.phase (and when it last changed) and message."""
        if pv.status.phase == phase and pv.status.message == message:
            return pv
        if pv.status.phase != phase:
            pv.status.last_phase_transition_time = rfc3339(self.clock.now())
        pv.status.phase, pv.status.message = phase, message
        return await self._update(pv, status=True)  # type: ignore[return-value]

    async def _claim_status(self, claim: PVC, phase: str, volume: PV | None) -> PVC:
        """updateClaimStatus: the phase, and the bound volume's modes and capacity."""
        new = narrow(codec.clone(claim), PVC)
        new.status.phase = phase
        if volume is None:
            del new.status.access_modes[:]
            new.status.capacity.clear()
        else:
            if list(new.status.access_modes) != list(volume.spec.access_modes):
                del new.status.access_modes[:]
                new.status.access_modes.extend(volume.spec.access_modes)
            if dict(new.status.capacity) != dict(volume.spec.capacity):
                new.status.capacity.clear()
                new.status.capacity.update(volume.spec.capacity)
        if new == claim:
            return claim
        return await self._update(new, status=True)  # type: ignore[return-value]

    async def _claim_status_event(
        self, claim: PVC, phase: str, volume: PV | None, type_: str, reason: str, message: str
    ) -> PVC:
        """updateClaimStatusWithEvent: the event only when the phase changes."""
        if claim.status.phase == phase:
            return claim
        claim = await self._claim_status(claim, phase, volume)
        self.events.event(claim, type_, reason, message)
        return claim

    async def _bind(self, volume: PV, claim: PVC) -> None:
        """bind: the volume to the claim, the volume Bound, the claim to the volume, the
        claim Bound."""
        volume = await self._bind_volume_to_claim(volume, claim)
        volume = await self._volume_phase(volume, "Bound")
        claim = await self._bind_claim_to_volume(claim, volume)
        await self._claim_status(claim, "Bound", volume)

    async def _bind_volume_to_claim(self, volume: PV, claim: PVC) -> PV:
        """GetBindVolumeToClaim, written when it changed anything."""
        bound, dirty = bind_volume_to_claim(volume, claim)
        return await self._update(bound) if dirty else volume  # type: ignore[return-value]

    async def _bind_claim_to_volume(self, claim: PVC, volume: PV) -> PVC:
        dirty = False
        if claim.spec.volume_name != volume.metadata.name:
            claim.spec.volume_name = volume.metadata.name
            claim.metadata.annotations.setdefault(ANN_BOUND_BY_CONTROLLER, "yes")
            dirty = True
        if ANN_BIND_COMPLETED not in claim.metadata.annotations:
            claim.metadata.annotations[ANN_BIND_COMPLETED] = "yes"
            dirty = True
        return await self._update(claim) if dirty else claim  # type: ignore[return-value]

    async def _unbind_volume(self, volume: PV) -> PV:
        """unbindVolume: a controller's binding is undone; a user's pre-binding keeps its
        name and loses only the UID. Then Available."""
        if ANN_BOUND_BY_CONTROLLER in volume.metadata.annotations:
            volume.spec.ClearField("claim_ref")
            del volume.metadata.annotations[ANN_BOUND_BY_CONTROLLER]
        else:
            volume.spec.claim_ref.uid = ""
            volume.spec.claim_ref.resource_version = ""
        volume = await self._update(volume)  # type: ignore[assignment]
        return await self._volume_phase(volume, "Available")

    # ------------------------------------------------------------------ claims

    async def sync_claim(self, key: str) -> None:
        claim = self._claim(key)
        if claim is None:
            return
        try:
            if ANN_BIND_COMPLETED not in claim.metadata.annotations:
                await self._sync_unbound_claim(claim)
            else:
                await self._sync_bound_claim(claim)
        except (ConflictError, NotFoundError) as e:
            # an object changed or went under us: its own event syncs it again
            log.debug("claim %s: %s; will retry", key, e)

    async def _sync_unbound_claim(self, claim: PVC) -> None:
        if not claim.spec.volume_name:
            delay = self._is_delay_binding(claim)
            # matched on the cached objects (read only); the one chosen is copied to write
            found = self.index.find_best_match(claim, self._cached_volume, delay_binding=delay)
            if found is not None:
                await self._bind(narrow(codec.clone(found), PV), claim)
                return
            if await self._assign_default_class(claim):
                return  # its update event syncs it again, with the class
            if delay and ANN_SELECTED_NODE not in claim.metadata.annotations:
                self._event_unbound_delayed(claim)
            elif claim_class(claim):
                await self._provision(claim)
                return
            else:
                self.events.event(
                    claim,
                    NORMAL,
                    FAILED_BINDING,
                    "no persistent volumes available for this claim and no storage class is set",
                )
            await self._claim_status(claim, "Pending", None)
            return
        volume = self._volume(claim.spec.volume_name)
        if volume is None:
            # the user asked for a volume that does not exist (yet)
            await self._claim_status(claim, "Pending", None)
            return
        if not volume.spec.HasField("claim_ref"):
            problem = satisfy_problem(volume, claim)
            if problem:
                self.events.event(claim, WARNING, VOLUME_MISMATCH, problem)
                await self._claim_status(claim, "Pending", None)
                return
            await self._bind(volume, claim)
        elif is_volume_bound_to_claim(volume, claim):
            await self._bind(volume, claim)
        elif ANN_BOUND_BY_CONTROLLER in claim.metadata.annotations:
            raise RuntimeError(
                f"invalid binding of claim {object_key(claim)} to volume {volume.metadata.name}"
            )
        else:
            message = f"volume {volume.metadata.name!r} already bound to a different claim."
            self.events.event(claim, WARNING, FAILED_BINDING, message)
            await self._claim_status(claim, "Pending", None)

    async def _sync_bound_claim(self, claim: PVC) -> None:
        if not claim.spec.volume_name:
            await self._claim_status_event(
                claim,
                "Lost",
                None,
                WARNING,
                CLAIM_LOST,
                "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!",
            )
            return
        volume = self._volume(claim.spec.volume_name)
        if volume is None:
            await self._claim_status_event(
                claim,
                "Lost",
                None,
                WARNING,
                CLAIM_LOST,
                "Bound claim has lost its PersistentVolume. Data on the volume is lost!",
            )
        elif (
            not volume.spec.HasField("claim_ref") or volume.spec.claim_ref.uid == claim.metadata.uid
        ):
            await self._bind(volume, claim)
        else:
            await self._claim_status_event(
                claim,
                "Lost",
                None,
                WARNING,
                CLAIM_MISBOUND,
                "Two claims are bound to the same volume, this one is bound incorrectly",
            )

    async def _assign_default_class(self, claim: PVC) -> bool:
        """assignDefaultStorageClass (RetroactiveDefaultStorageClass): a claim that names
        no class gets the default class once one exists."""
        if (
            claim.spec.HasField("storage_class_name")
            or ANN_BETA_STORAGE_CLASS in claim.metadata.annotations
        ):
            return False
        classes = [c for c in self.class_informer.store.values() if is_default_class(c)]
        if not classes:
            return False
        classes.sort(key=lambda c: c.metadata.name)  # type: ignore[attr-defined]
        classes.sort(key=lambda c: c.metadata.creation_timestamp, reverse=True)  # type: ignore[attr-defined]
        claim.spec.storage_class_name = classes[0].metadata.name  # type: ignore[attr-defined]
        await self._update(claim)
        return True

    def _event_unbound_delayed(self, claim: PVC) -> None:
        """emitEventForUnboundDelayBindingClaim: WaitForPodScheduled while unscheduled pods
        use the claim, else WaitForFirstConsumer."""
        pods = sorted(
            p.metadata.name
            for p in self._pods.list(claim.metadata.namespace)
            if not p.spec.node_name and claim.metadata.name in (n for n, _ in pod_claim_names(p))
        )
        if not pods:
            message = "waiting for first consumer to be created before binding"
            self.events.event(claim, NORMAL, WAIT_FOR_FIRST_CONSUMER, message)
        elif len(pods) == 1:
            self.events.event(
                claim, NORMAL, WAIT_FOR_POD_SCHEDULED, f"waiting for pod {pods[0]} to be scheduled"
            )
        else:
            message = f"waiting for pods {','.join(pods)} to be scheduled"
            self.events.event(claim, NORMAL, WAIT_FOR_POD_SCHEDULED, message)

    def _cached_volume(self, name: str) -> PV | None:
        """The newest copy of a volume, read only (the match copies the one it picks)."""
        return self._latest("pv", name)  # type: ignore[return-value]

    async def _provision(self, claim: PVC) -> None:
        """provisionClaim: a hollow provisioner's class gets a volume made for the claim;
        another provisioner is waited for."""
        name = claim_class(claim)
        sc = self._class(name)
        if sc is None:
            message = f'storageclass.storage.k8s.io "{name}" not found'
            self.events.event(claim, WARNING, PROVISIONING_FAILED, message)
            return
        provisioner = sc.provisioner
        if claim.metadata.annotations.get(ANN_STORAGE_PROVISIONER) != provisioner:
            claim.metadata.annotations[ANN_STORAGE_PROVISIONER] = provisioner
            claim.metadata.annotations[ANN_BETA_STORAGE_PROVISIONER] = provisioner
            claim = await self._update(claim)  # type: ignore[assignment]
        if not self._provisions(provisioner):
            message = (
                f"Waiting for a volume to be created either by the external provisioner "
                f"'{provisioner}' or manually by the system administrator. If volume creation "
                f"is delayed, please verify that the provisioner is running and correctly "
                f"registered."
            )
            self.events.event(claim, NORMAL, EXTERNAL_PROVISIONING, message)
            return
        volume = provisioned_volume(claim, sc)
        add_topology(volume, self._segment(claim, sc))
        try:
            await self.client.create(volume)
        except AlreadyExistsError:
            pass  # made by an earlier sync; binding finds it
        else:
            message = f"Successfully provisioned volume {volume.metadata.name} using {provisioner}"
            self.events.event(claim, NORMAL, PROVISIONING_SUCCEEDED, message)

    def _provisions(self, provisioner: str) -> bool:
        """Whether this controller provisions for `provisioner`: one of `provisioners`, or
        a hollow CSI driver of a node template."""
        if provisioner in self.config.provisioners:
            return True
        driver = self.driver_informer.store.get(provisioner)
        return driver is not None and LABEL_HOLLOW_DRIVER in driver.metadata.labels  # type: ignore[attr-defined]

    def _topology_keys(self, csinode: Message | None, driver: str) -> list[str]:
        node = narrow(csinode, storagev1_pb2.CSINode) if csinode is not None else None
        for d in node.spec.drivers if node is not None else ():
            if d.name == driver:
                return list(d.topology_keys)
        return []

    def _node_labels(self, name: str) -> dict[str, str]:
        node = self.node_informer.store.get(name)
        return dict(node.metadata.labels) if node is not None else {}  # type: ignore[attr-defined]

    def _segment(self, claim: PVC, sc: storagev1_pb2.StorageClass) -> dict[str, str]:
        """Where a hollow driver's new volume is reachable (see the module docstring)."""
        driver = sc.provisioner
        own = driver in self.config.provisioners
        selected = claim.metadata.annotations.get(ANN_SELECTED_NODE)
        if selected:
            if own:  # node-local, as kind's local-path volumes
                return {LABEL_HOSTNAME: self._node_labels(selected).get(LABEL_HOSTNAME, selected)}
            keys = self._topology_keys(self.csinode_informer.store.get(selected), driver)
            return topology_segment(keys, self._node_labels(selected))
        if sc.allowed_topologies:
            return allowed_segment(sc)
        if own:
            return {}  # Immediate: reachable from every node
        segments = []
        for name, csinode in list(self.csinode_informer.store.items()):
            keys = self._topology_keys(csinode, driver)
            if keys:
                segments.append(topology_segment(keys, self._node_labels(name)))
        return pick_segment(segments, claim.metadata.uid)

    # ------------------------------------------------------------------ volumes

    async def sync_volume(self, name: str) -> None:
        volume = self._volume(name)
        if volume is None:
            return
        try:
            await self._sync_volume(volume)
        except (ConflictError, NotFoundError) as e:
            log.debug("volume %s: %s; will retry", name, e)

    async def _sync_volume(self, volume: PV) -> None:
        if not volume.spec.HasField("claim_ref"):
            await self._volume_phase(volume, "Available")
            return
        ref = volume.spec.claim_ref
        if not ref.uid:
            # pre-bound by name: the claim's sync binds it
            await self._volume_phase(volume, "Available")
            return
        claim = self._claim(f"{ref.namespace}/{ref.name}")
        if claim is None:
            claim = await self._live_claim(ref.namespace, ref.name)
        if claim is not None and claim.metadata.uid != ref.uid:
            claim = None  # a new claim of the old name
        if claim is None:
            if volume.status.phase not in ("Released", "Failed"):
                volume = await self._volume_phase(volume, "Released")
            await self._reclaim(volume)
            return
        if not claim.spec.volume_name:
            if volume_mode_mismatch(claim, volume):
                self.events.event(
                    volume,
                    WARNING,
                    VOLUME_MISMATCH,
                    f"Cannot bind PersistentVolume to requested PersistentVolumeClaim "
                    f"{claim.metadata.name!r} due to incompatible volumeMode.",
                )
                self.events.event(
                    claim,
                    WARNING,
                    VOLUME_MISMATCH,
                    f"Cannot bind PersistentVolume {volume.metadata.name!r} to requested "
                    f"PersistentVolumeClaim due to incompatible volumeMode.",
                )
                return
            self.claim_queue.add(object_key(claim))  # its sync finishes the binding
            return
        if claim.spec.volume_name == volume.metadata.name:
            await self._volume_phase(volume, "Bound")
            return
        # the claim is bound to another volume
        provisioned = ANN_DYNAMICALLY_PROVISIONED in volume.metadata.annotations
        if provisioned and volume.spec.persistent_volume_reclaim_policy == "Delete":
            if volume.status.phase not in ("Released", "Failed"):
                volume = await self._volume_phase(volume, "Released")
            await self._reclaim(volume)
        else:
            await self._unbind_volume(volume)

    async def _live_claim(self, namespace: str, name: str) -> PVC | None:
        """The claim as the apiserver has it, when the cache has none: a claim created a
        moment ago must not have its volume released."""
        try:
            return narrow(codec.clone(await self.client.get(PVCS, name, namespace)), PVC)
        except NotFoundError:
            return None

    async def _reclaim(self, volume: PV) -> None:
        """reclaimVolume by the volume's policy (see the module docstring)."""
        policy = volume.spec.persistent_volume_reclaim_policy
        if policy == "Retain":
            return
        if policy == "Recycle":
            volume = await self._unbind_volume(volume)
            self.events.event(volume, NORMAL, VOLUME_RECYCLED, "Volume recycled")
            return
        if policy != "Delete":
            message = f"Volume has unrecognized PersistentVolumeReclaimPolicy {policy!r}"
            volume = await self._volume_phase(volume, "Failed", message)
            self.events.event(volume, WARNING, "VolumeUnknownReclaimPolicy", message)
            return
        provisioner = volume.metadata.annotations.get(ANN_DYNAMICALLY_PROVISIONED, "")
        if self._provisions(provisioner):
            with contextlib.suppress(NotFoundError):
                await self.client.delete(PVS, volume.metadata.name)
            return
        if provisioner and not provisioner.startswith("kubernetes.io/"):
            return  # its external provisioner deletes it
        if volume.status.phase == "Failed":
            return
        message = (
            f"error getting deleter volume plugin for volume {volume.metadata.name!r}: "
            f"no deletable volume plugin matched"
        )
        volume = await self._volume_phase(volume, "Failed", message)
        self.events.event(volume, WARNING, VOLUME_FAILED_DELETE, message)


__all__ = [
    "HOLLOW_PROVISIONER",
    "PersistentVolumeConfig",
    "PersistentVolumeController",
    "claim_reference",
    "provisioned_volume",
    "satisfy_problem",
]
