"""The pvc-protection and pv-protection controllers (upstream
pkg/controller/volume/pvcprotection and pvprotection): a claim in use by a pod, and a
volume bound to a claim, are not removed until they are no longer used.

The apiserver's StorageObjectInUseProtection admission gives every new claim the
`kubernetes.io/pvc-protection` finalizer and every new volume `kubernetes.io/pv-protection`
(services/apiserver/admission.py); these controllers add it to objects that lack it and,
once an object is being deleted, remove it when nothing uses the object:

- a claim is used by a pod of its namespace that is scheduled (spec.nodeName) and names it
  in a `persistentVolumeClaim` volume, or in an `ephemeral` volume (the claim
  `<pod>-<volume>`) while the pod is not shut down (deleted with a zero grace period). The
  informer's answer "unused" is checked against a live list of the namespace's pods before
  the finalizer goes, as upstream's askAPIServer does;
- a volume is used while its phase is Bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, storage_pb2
from services.api.helpers.podvolumes import pod_claim_names
from services.api.helpers.volumes import PV_PROTECTION_FINALIZER, PVC_PROTECTION_FINALIZER
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import NamespaceIndex, split_key, wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS, PVS, PVCS = BY_KIND["Pod"], BY_KIND["PersistentVolume"], BY_KIND["PersistentVolumeClaim"]


@dataclass
class ProtectionConfig(WorkerSettings):
    """Settings of the pvc-protection and pv-protection controllers."""


def pod_is_shut_down(pod: core_pb2.Pod) -> bool:
    """podIsShutDown: deleted with a zero grace period (done by the kubelet, or forced)."""
    return bool(pod.metadata.deletion_timestamp) and (
        pod.metadata.HasField("deletion_grace_period_seconds")
        and pod.metadata.deletion_grace_period_seconds == 0
    )


def pod_uses_claim(pod: core_pb2.Pod, claim: str) -> bool:
    """podUsesPVC (see the module docstring)."""
    if not pod.spec.node_name:
        return False
    for name, ephemeral in pod_claim_names(pod):
        if name == claim and (not ephemeral or not pod_is_shut_down(pod)):
            return True
    return False


def _needs_finalizer(meta: object, finalizer: str) -> bool:
    return not meta.deletion_timestamp and finalizer not in meta.finalizers  # type: ignore[attr-defined]


def _may_release(meta: object, finalizer: str) -> bool:
    return bool(meta.deletion_timestamp) and finalizer in meta.finalizers  # type: ignore[attr-defined]


class _Protection:
    """One finalizer kept on one kind: added while the object lives, removed once it is
    being deleted and unused."""

    finalizer = ""
    what = ""

    def __init__(
        self, client: Client, informer: object, config: ProtectionConfig, clock: Clock
    ) -> None:
        self.client = client
        self.config = config
        self.informer = informer
        self.queue: WorkQueue[str] = controller_queue(
            self.what, clock=clock, base_delay=config.base_backoff, max_delay=config.max_backoff
        )

    def _changed(self, obj: Message) -> None:
        meta = obj.metadata  # type: ignore[attr-defined]
        if _needs_finalizer(meta, self.finalizer) or _may_release(meta, self.finalizer):
            self.queue.add(object_key(obj))

    async def _run(self, stop: asyncio.Event, *synced: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, *synced):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what=self.what
                )
        finally:
            self.queue.shutdown()

    async def sync(self, key: str) -> None:
        obj = self.informer.store.get(key)  # type: ignore[attr-defined]
        if obj is None:
            return
        meta = obj.metadata
        if _needs_finalizer(meta, self.finalizer):
            new = type(obj)()
            new.CopyFrom(obj)
            new.metadata.finalizers.append(self.finalizer)
        elif _may_release(meta, self.finalizer) and not await self.in_use(obj):
            new = type(obj)()
            new.CopyFrom(obj)
            new.metadata.finalizers.remove(self.finalizer)
        else:
            return
        # a conflict or a vanished object comes back through its own event
        with contextlib.suppress(ConflictError, NotFoundError):
            await self.client.update(new)

    async def in_use(self, obj: Message) -> bool:
        raise NotImplementedError


class PVCProtectionController(_Protection):
    """Keeps `kubernetes.io/pvc-protection` on claims (see the module docstring)."""

    finalizer = PVC_PROTECTION_FINALIZER
    what = "pvcprotection"

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ProtectionConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.pvc_informer = informers.get(PVCS)
        self.pod_informer = informers.get(PODS)
        super().__init__(
            client, self.pvc_informer, config or ProtectionConfig(), clock or RealClock()
        )
        self._pods = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self.pvc_informer.add_handlers(
            Handlers(self._changed, lambda _o, n: self._changed(n), None)
        )
        self.pod_informer.add_handlers(
            Handlers(None, lambda _o, n: self._pod_changed(n), self._pod_changed)
        )

    async def run(self, stop: asyncio.Event) -> None:
        await self._run(stop, self.pvc_informer.synced, self.pod_informer.synced)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """A pod with claims that is scheduled, shut down or deleted may free a claim."""
        o: core_pb2.Pod = old  # type: ignore[assignment]
        n: core_pb2.Pod = new  # type: ignore[assignment]
        if not n.spec.volumes or not any(True for _ in pod_claim_names(n)):
            return False
        return (
            o.spec.node_name != n.spec.node_name
            or o.metadata.deletion_timestamp != n.metadata.deletion_timestamp
            or o.metadata.deletion_grace_period_seconds != n.metadata.deletion_grace_period_seconds
        )

    def _pod_changed(self, obj: Message) -> None:
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
        for name, _ in pod_claim_names(pod):
            key = f"{pod.metadata.namespace}/{name}"
            claim = self.pvc_informer.store.get(key)
            if claim is not None and _may_release(claim.metadata, self.finalizer):  # type: ignore[attr-defined]
                self.queue.add(key)

    async def in_use(self, obj: Message) -> bool:
        claim: storage_pb2.PersistentVolumeClaim = obj  # type: ignore[assignment]
        namespace, name = split_key(object_key(claim))
        if any(pod_uses_claim(p, name) for p in self._pods.list(namespace)):
            return True
        live, _ = await self.client.list(PODS, namespace=namespace)
        return any(pod_uses_claim(p, name) for p in live)  # type: ignore[arg-type]


class PVProtectionController(_Protection):
    """Keeps `kubernetes.io/pv-protection` on volumes (see the module docstring)."""

    finalizer = PV_PROTECTION_FINALIZER
    what = "pvprotection"

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ProtectionConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.pv_informer = informers.get(PVS)
        super().__init__(
            client, self.pv_informer, config or ProtectionConfig(), clock or RealClock()
        )
        self.pv_informer.add_handlers(Handlers(self._changed, lambda _o, n: self._changed(n), None))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod matters here."""
        return False

    async def run(self, stop: asyncio.Event) -> None:
        await self._run(stop, self.pv_informer.synced)

    async def in_use(self, obj: Message) -> bool:
        pv: storage_pb2.PersistentVolume = obj  # type: ignore[assignment]
        return pv.status.phase == "Bound"


__all__ = [
    "PVCProtectionController",
    "PVProtectionController",
    "ProtectionConfig",
    "pod_uses_claim",
]
