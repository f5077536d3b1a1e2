"""The resource quota controller (upstream pkg/controller/resourcequota): keeps each
ResourceQuota's status, `hard` as its spec says and `used` as its namespace uses.

Admission (services/apiserver/quota.py) adds a create's usage to status.used as it admits
it; nothing subtracts when objects go or pods finish. This controller recalculates: for a
quota it sums the usage (services/api/helpers/quota.py) of every object of its namespace
that it covers, for the resources its spec.hard names, each of them present (0 when nothing
uses it), and writes the status when hard or used changed (syncResourceQuota).

When a quota is synced:
- it was added or its spec changed (the quota informer);
- an object of its namespace was deleted, a pod stopped counting (became
  Succeeded/Failed), or a service changed between counted types (NodePort, LoadBalancer,
  other: GetQuotaServiceType): upstream's replenishment, from the informers of every
  namespaced kind (shared with the garbage collector's; events and leases excepted);
- every `resync_period` seconds of the injected clock (upstream's
  --resource-quota-sync-period, 5 min), which also catches what the informers do not watch.

Difference from upstream: events and leases are not watched (upstream's quota ignores
events; the nodes' leases renew all the time): they are listed from the apiserver when a
quota counts them, so their deletes free quota at the next sync.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, policyv1core_pb2
from services.api.helpers import quota as q
from services.api.machinery.errors import ConflictError, NotFoundError
from services.api.machinery.kinds import BY_KIND, KINDS, Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, Informer, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import NamespaceIndex, wait_synced
from services.controllers.workqueue import WorkerSettings, WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
QUOTAS = BY_KIND["ResourceQuota"]
#: Kinds whose objects are not watched here, only listed when a quota counts them.
_NOT_WATCHED = frozenset({"Event", "Lease"})


@dataclass
class ResourceQuotaConfig(WorkerSettings):
    """Settings of the resource quota controller."""

    workers: int = 5
    """Quotas synced at once (upstream --concurrent-resource-quota-syncs)."""

    resync_period: float = 300.0
    """Seconds between full recalculations of each quota (--resource-quota-sync-period)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.resync_period <= 0:
            raise ValueError(f"resync_period must be positive, got {self.resync_period}")


def calculate_usage(
    rq: policyv1core_pb2.ResourceQuota,
    objects: dict[str, list[Message]],
    now: float,
) -> dict[str, str]:
    """status.used for `rq`: the usage of the covered objects (`objects` by resource, of the
    quota's namespace), masked to spec.hard, each hard resource present."""
    hard = dict(rq.spec.hard)
    probe = policyv1core_pb2.ResourceQuota()
    probe.CopyFrom(rq)
    probe.status.hard.clear()
    probe.status.hard.update(hard)
    used: q.ResourceList = {}
    for kind in _kinds_counted(hard):
        names = q.matching_resources(kind, hard)
        total: q.ResourceList = {n: q.ZERO for n in names}
        for obj in objects.get(kind.resource, ()):
            if q.matches(probe, kind, obj):
                total = q.add(total, q.mask(q.usage(kind, obj, now), names))
        used.update(total)
    return q.to_strings(q.mask(used, hard))


def _quota_service_type(svc: Any) -> str:
    """GetQuotaServiceType: the service types quota counts apart."""
    t = svc.spec.type
    return str(t) if t in ("NodePort", "LoadBalancer") else ""


def _kinds_counted(hard: dict[str, str]) -> list[Kind]:
    return [k for k in KINDS if k.namespaced and q.matching_resources(k, hard)]


class ResourceQuotaController:
    """Keeps every ResourceQuota's status (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ResourceQuotaConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ResourceQuotaConfig()
        self.clock = clock or RealClock()
        self.quota_informer = informers.get(QUOTAS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "resourcequota",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self._quota_index = NamespaceIndex(self.quota_informer, policyv1core_pb2.ResourceQuota)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self.quota_informer.add_handlers(Handlers(self._enqueue, self._quota_updated, None))
        self.pod_informer.add_handlers(Handlers(None, self._pod_updated, self._pod_deleted))
        #: The informers of the other kinds a quota may count (count/<resource>), shared
        #: with the garbage collector's: a delete of any of them frees quota at once.
        self.kind_informers: dict[str, Informer] = {}
        for kind in KINDS:
            if not kind.namespaced or kind.kind in _NOT_WATCHED or kind is PODS:
                continue
            inf = informers.get(kind)
            updated = self._service_updated if kind.kind == "Service" else None
            inf.add_handlers(Handlers(None, updated, self._object_deleted))
            self.kind_informers[kind.resource] = inf

    async def run(self, stop: asyncio.Event) -> None:
        try:
            others = (i.synced for i in self.kind_informers.values())
            if await wait_synced(
                stop, self.quota_informer.synced, self.pod_informer.synced, *others
            ):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="resourcequota",
                )
        finally:
            self.queue.shutdown()

    # ------------------------------------------------------------------ handlers
    def _enqueue(self, obj: Message) -> None:
        self.queue.add(object_key(obj))

    def _quota_updated(self, old: Message, new: Message) -> None:
        o = narrow(old, policyv1core_pb2.ResourceQuota)
        n = narrow(new, policyv1core_pb2.ResourceQuota)
        # Our own status writes come back here; only a spec change (or a status that
        # no longer matches the spec) needs a sync.
        if o.spec != n.spec or dict(n.spec.hard) != dict(n.status.hard):
            self._enqueue(new)

    def _enqueue_namespace(self, namespace: str) -> None:
        if not self._quota_index.has(namespace):
            return
        for rq in self._quota_index.list(namespace):
            self.queue.add(object_key(rq))

    def _pod_deleted(self, obj: Message) -> None:
        self._enqueue_namespace(narrow(obj, core_pb2.Pod).metadata.namespace)

    def _object_deleted(self, obj: Message) -> None:
        self._enqueue_namespace(object_meta(obj).namespace)

    def _service_updated(self, old: Message, new: Message) -> None:
        if _quota_service_type(old) != _quota_service_type(new):
            self._enqueue_namespace(object_meta(new).namespace)

    def wants_pod_update(self, old: Message, new: Message) -> bool:
        """A pod that stopped counting (terminal, or past its deletion grace) frees quota."""
        now = self.clock.now()
        o, n = narrow(old, core_pb2.Pod), narrow(new, core_pb2.Pod)
        return q.pod_counts_compute(o, now) and not q.pod_counts_compute(n, now)

    def _pod_updated(self, old: Message, new: Message) -> None:
        if self.wants_pod_update(old, new):
            self._enqueue_namespace(narrow(new, core_pb2.Pod).metadata.namespace)

    # ---------------------------------------------------------------------- sync
    async def _objects(self, rq: policyv1core_pb2.ResourceQuota) -> dict[str, list[Message]]:
        namespace = rq.metadata.namespace
        out: dict[str, list[Message]] = {}
        for kind in _kinds_counted(dict(rq.spec.hard)):
            inf = self.kind_informers.get(kind.resource)
            if kind is PODS:
                out[kind.resource] = list(self._pod_index.list(namespace))
            elif inf is not None:
                out[kind.resource] = [
                    o for o in inf.store.values() if object_meta(o).namespace == namespace
                ]
            else:
                out[kind.resource], _ = await self.client.list(kind, namespace=namespace)
        return out

    async def sync(self, key: str) -> None:
        """One quota: recalculate its status and write it if it changed."""
        stored = self.quota_informer.store.get(key)
        if stored is None:
            return
        rq = narrow(stored, policyv1core_pb2.ResourceQuota)
        used = calculate_usage(rq, await self._objects(rq), self.clock.now())
        hard = dict(rq.spec.hard)
        if hard != dict(rq.status.hard) or not q.equal(used, dict(rq.status.used)):
            new = policyv1core_pb2.ResourceQuota()
            new.CopyFrom(rq)
            new.status.hard.clear()
            new.status.hard.update(hard)
            new.status.used.clear()
            new.status.used.update(used)
            try:
                await self.client.update_status(new)
            except NotFoundError:
                return
            except ConflictError:
                raise  # retried with backoff, from the informer's newer copy
        self.queue.add_after(key, self.config.resync_period)


__all__ = ["ResourceQuotaConfig", "ResourceQuotaController", "calculate_usage"]
