"""The ephemeral volume controller (upstream pkg/controller/volume/ephemeral): the claims of
pods' generic ephemeral volumes.

For every volume of a pod that is an `ephemeral.volumeClaimTemplate`, the claim
`<pod>-<volume>` (component-helpers' VolumeClaimName) is created in the pod's namespace
from the template: its labels, annotations and spec, owned by the pod (controller and
blockOwnerDeletion true), so the garbage collector deletes it with the pod. A claim of
that name that the pod does not control (VolumeIsForPod) is left alone: the pod gets a
Warning FailedBinding event `ephemeral volume <vol>: PVC <ns>/<claim> was not created for
pod <ns>/<pod> (pod is not owner)` and is retried with backoff, as a failed create is.

Pods are synced when added (their spec is immutable, so updates carry nothing new) and
when a claim one of them names is deleted (it is made again). Pods being deleted get
nothing. Quota: the claims are created through the apiserver like any other, so a
namespace's ResourceQuota counts them (persistentvolumeclaims, requests.storage) and
refuses one over quota (the create fails, the pod is retried), as upstream.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, storage_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    NamespaceIndex,
    controller_of,
    new_controller_ref,
    wait_synced,
)
from services.controllers.events import EventRecorder
from services.controllers.volume.rules import FAILED_BINDING, WARNING
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS, PVCS = BY_KIND["Pod"], BY_KIND["PersistentVolumeClaim"]
PVC = storage_pb2.PersistentVolumeClaim


@dataclass
class EphemeralVolumeConfig(WorkerSettings):
    """Settings of the ephemeral volume controller."""

    record_events: bool = True
    """Write the FailedBinding Events."""


class EphemeralVolumeError(Exception):
    """A volume's claim could not be made (the pod is retried)."""


def volume_claim_name(pod: core_pb2.Pod, volume_name: str) -> str:
    """ephemeral.VolumeClaimName: `<pod>-<volume>`."""
    return f"{pod.metadata.name}-{volume_name}"


def ephemeral_volumes(pod: core_pb2.Pod) -> Iterator[tuple[str, dict[str, Any]]]:
    """(volume name, its volumeClaimTemplate as JSON) of each generic ephemeral volume."""
    for vol in pod.spec.volumes:
        src = vol.fields.get("ephemeral")
        if src is None or not src.HasField("struct_value"):
            continue
        template = MessageToDict(src.struct_value).get("volumeClaimTemplate") or {}
        yield vol.fields["name"].string_value if "name" in vol.fields else "", template


def volume_is_for_pod(pod: core_pb2.Pod, claim: PVC) -> str | None:
    """ephemeral.VolumeIsForPod: None when the pod controls the claim, else why not."""
    ref = controller_of(claim)
    if claim.metadata.namespace != pod.metadata.namespace or (
        ref is None or ref.uid != pod.metadata.uid
    ):
        return (
            f"PVC {claim.metadata.namespace}/{claim.metadata.name} was not created for pod "
            f"{pod.metadata.namespace}/{pod.metadata.name} (pod is not owner)"
        )
    return None


def claim_for(pod: core_pb2.Pod, volume_name: str, template: dict[str, Any]) -> PVC:
    """The claim of a pod's ephemeral volume, from its template, owned by the pod."""
    meta = template.get("metadata") or {}
    doc: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": volume_claim_name(pod, volume_name),
            "namespace": pod.metadata.namespace,
            **({"labels": meta["labels"]} if meta.get("labels") else {}),
            **({"annotations": meta["annotations"]} if meta.get("annotations") else {}),
        },
        "spec": template.get("spec") or {},
    }
    claim = narrow(codec.decode(doc).obj, PVC)
    claim.metadata.owner_references.append(new_controller_ref(pod, PODS))
    return claim


class EphemeralVolumeController:
    """Creates the claims of pods' ephemeral volumes (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: EphemeralVolumeConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or EphemeralVolumeConfig()
        self.clock = clock or RealClock()
        self.pod_informer = informers.get(PODS)
        self.pvc_informer = informers.get(PVCS)
        self._pods = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self.queue: WorkQueue[str] = controller_queue(
            "ephemeral_volume",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.events = EventRecorder(
            client, "ephemeral_volume", self.clock, enabled=self.config.record_events
        )
        #: How many claims it tried to create, and how many of those failed (upstream's
        #: ephemeral_volume_controller_create_total / create_failures_total).
        self.create_attempts = 0
        self.create_failures = 0
        self.pod_informer.add_handlers(Handlers(on_add=self._enqueue_pod))
        self.pvc_informer.add_handlers(Handlers(on_delete=self._claim_deleted))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """A pod's spec does not change: updates carry nothing for this controller."""
        return False

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(stop, self.pod_informer.synced, self.pvc_informer.synced):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="ephemeral",
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    def _enqueue_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        if pod.metadata.deletion_timestamp:
            return
        if any(True for _ in ephemeral_volumes(pod)):
            self.queue.add(object_key(pod))

    def _claim_deleted(self, obj: Message) -> None:
        """A deleted claim that a pod's ephemeral volume names is made again."""
        claim = narrow(obj, PVC)
        for pod in self._pods.list(claim.metadata.namespace):
            if any(
                volume_claim_name(pod, name) == claim.metadata.name
                for name, _ in ephemeral_volumes(pod)
            ):
                self._enqueue_pod(pod)

    async def sync(self, key: str) -> None:
        """syncHandler: every ephemeral volume of the pod has its claim (raises, for a
        retry, when one cannot be made)."""
        obj = self.pod_informer.store.get(key)
        if obj is None:
            return
        pod = narrow(obj, core_pb2.Pod)
        if pod.metadata.deletion_timestamp:
            return
        for name, template in ephemeral_volumes(pod):
            try:
                await self._handle_volume(pod, name, template)
            except EphemeralVolumeError as e:
                self.events.event(pod, WARNING, FAILED_BINDING, f"ephemeral volume {name}: {e}")
                raise EphemeralVolumeError(f"pod {key}, ephemeral volume {name}: {e}") from None

    async def _handle_volume(self, pod: core_pb2.Pod, name: str, template: dict[str, Any]) -> None:
        claim_name = volume_claim_name(pod, name)
        existing = self.pvc_informer.store.get(f"{pod.metadata.namespace}/{claim_name}")
        if existing is not None:
            why = volume_is_for_pod(pod, narrow(existing, PVC))
            if why is not None:
                raise EphemeralVolumeError(why)
            return
        self.create_attempts += 1
        try:
            await self.client.create(claim_for(pod, name, template))
        except ApiError as e:
            self.create_failures += 1
            raise EphemeralVolumeError(f"create PVC {claim_name}: {e}") from None


__all__ = [
    "EphemeralVolumeConfig",
    "EphemeralVolumeController",
    "EphemeralVolumeError",
    "claim_for",
    "ephemeral_volumes",
    "volume_claim_name",
    "volume_is_for_pod",
]
