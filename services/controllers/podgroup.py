"""The PodGroup controller (after scheduler-plugins pkg/controllers/podgroup_controller.go):
keeps each PodGroup's status from its pods, so users and tools see how far a gang got.

A group's pods are the pods of its namespace labelled scheduling.x-k8s.io/pod-group=<name>.
Counts: scheduled (bound to a node), running, succeeded, failed (by pod phase). Phase, in
this order of precedence (`compute_status`):

    Finished     succeeded >= minMember                        (terminal)
    Failed       any member failed                             (terminal)
    Running      running + succeeded >= minMember
    Scheduled    scheduled >= minMember
    Scheduling   some scheduled, fewer than minMember
    Pending      none scheduled (or fewer pods than minMember, once a run is not finished)

A terminal group is left alone, as upstream. scheduleStartTime is set the first time the
group leaves Pending (upstream's scheduler sets it at its first Permit; here the controller
owns the status). occupiedBy names the owners of the group's first pod (namespace/owner,
sorted, comma-separated) once the group has minMember pods, as upstream's fillOccupiedObj.

Differences from upstream's current controller: the Scheduled phase and the scheduled count
(kept from older scheduler-plugins releases, which the brief's state machine follows), and
Failed on any failed member (upstream also needs failed + running + succeeded >= minMember).
The status is written (UpdateStatus) only when it changed; a conflict is retried with
backoff from the informer's newer copy. Time is the injected clock.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, podgroup_pb2
from services.api.helpers.podgroups import (
    PHASE_FAILED,
    PHASE_FINISHED,
    PHASE_PENDING,
    PHASE_RUNNING,
    PHASE_SCHEDULED,
    PHASE_SCHEDULING,
    pod_group_full_name,
    pod_group_name,
)
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import NamespaceIndex, wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
POD_GROUPS = BY_KIND["PodGroup"]
TERMINAL = (PHASE_FINISHED, PHASE_FAILED)


@dataclass
class PodGroupConfig(WorkerSettings):
    """Settings of the PodGroup controller."""

    workers: int = 1
    """Groups synced at once."""


def compute_status(
    pg: podgroup_pb2.PodGroup, pods: Sequence[core_pb2.Pod], now: float
) -> podgroup_pb2.PodGroupStatus:
    """The status the group should have (see the module docstring); a terminal group's is
    returned unchanged."""
    status = podgroup_pb2.PodGroupStatus()
    status.CopyFrom(pg.status)
    if status.phase in TERMINAL:
        return status
    min_member = pg.spec.min_member
    status.scheduled = sum(1 for p in pods if p.spec.node_name)
    status.running = sum(1 for p in pods if p.status.phase == "Running")
    status.succeeded = sum(1 for p in pods if p.status.phase == "Succeeded")
    status.failed = sum(1 for p in pods if p.status.phase == "Failed")
    if status.succeeded >= min_member:
        phase = PHASE_FINISHED
    elif status.failed:
        phase = PHASE_FAILED
    elif status.running + status.succeeded >= min_member:
        phase = PHASE_RUNNING
    elif status.scheduled >= min_member:
        phase = PHASE_SCHEDULED
    elif status.scheduled:
        phase = PHASE_SCHEDULING
    else:
        phase = PHASE_PENDING
    status.phase = phase
    if phase != PHASE_PENDING and not status.schedule_start_time:
        status.schedule_start_time = rfc3339(now)
    if len(pods) >= min_member and pods and not status.occupied_by:
        first = min(pods, key=lambda p: p.metadata.name)
        refs = sorted(
            f"{first.metadata.namespace}/{r.name}" for r in first.metadata.owner_references
        )
        status.occupied_by = ",".join(refs)
    return status


class PodGroupController:
    """Keeps every PodGroup's status (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: PodGroupConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or PodGroupConfig()
        self.clock = clock or RealClock()
        self.pg_informer = informers.get(POD_GROUPS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "podgroup",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        enqueue = self._enqueue_group
        self.pg_informer.add_handlers(Handlers(enqueue, lambda _o, n: enqueue(n), None))
        self.pod_informer.add_handlers(
            Handlers(self._pod_changed, self._pod_updated, self._pod_changed)
        )

    async def run(self, stop: asyncio.Event) -> None:
        """Sync groups until `stop` is set."""
        try:
            if await wait_synced(stop, self.pg_informer.synced, self.pod_informer.synced):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="podgroup"
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ handlers
    def _enqueue_group(self, pg: Message) -> None:
        self.queue.add(object_key(pg))

    def _pod_changed(self, obj: Message) -> None:
        full = pod_group_full_name(obj)
        if full:
            self.queue.add(full)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """Only gang pods' updates matter here."""
        return bool(pod_group_name(new) or pod_group_name(old))

    def _pod_updated(self, old: Message, new: Message) -> None:
        self._pod_changed(new)
        if pod_group_full_name(old) != pod_group_full_name(new):
            self._pod_changed(old)

    # ---------------------------------------------------------------------- sync
    def pods_of(self, pg: podgroup_pb2.PodGroup) -> list[core_pb2.Pod]:
        name = pg.metadata.name
        return [p for p in self._pod_index.list(pg.metadata.namespace) if pod_group_name(p) == name]

    async def sync(self, key: str) -> None:
        """One group: compute its status and write it if it changed."""
        stored = self.pg_informer.store.get(key)
        if stored is None:
            return
        pg = narrow(stored, podgroup_pb2.PodGroup)
        status = compute_status(pg, self.pods_of(pg), self.clock.now())
        if status == pg.status:
            return
        new = podgroup_pb2.PodGroup()
        new.CopyFrom(pg)
        new.status.CopyFrom(status)
        try:
            await self.client.update_status(new)
        except NotFoundError:
            return
        except ConflictError:
            raise  # retried with backoff, from the informer's newer copy


__all__ = ["PodGroupConfig", "PodGroupController", "compute_status"]
