"""The Deployment controller (upstream pkg/controller/deployment): rolls a pod template out
through ReplicaSets.

A Deployment owns ReplicaSets named `<deployment>-<pod-template-hash>`; the hash (of the
pod template and status.collisionCount) is also a label on the ReplicaSet, on its selector
and on its template, so the pods of two revisions never overlap. The ReplicaSet whose
template equals the Deployment's (ignoring that label) is the new one; every other one is
old. Each ReplicaSet carries its revision (`deployment.kubernetes.io/revision`, the
highest old revision + 1 for the new one) and the desired/max replicas it was sized for.

One sync, in upstream's order of precedence:

    claim ReplicaSets (adopt / release) ─► being deleted: status only
      ─► paused: scale proportionally + clean up history, status
      ─► a scaling event (an active RS sized for another spec.replicas): the same
      ─► Recreate: old RSes to 0; once no old pod runs, create/scale the new RS
      ─► RollingUpdate: scale the new RS up within maxSurge, else old RSes down within
         maxUnavailable (unhealthy replicas first); complete: trim revision history
      ─► status (replicas, updated, ready, available, unavailable, Available and
         Progressing conditions, progress deadline)

maxSurge rounds up and maxUnavailable down (percent of spec.replicas); both resolving to 0
makes maxUnavailable 1. The apiserver already refuses both set to 0.

Where kubera deliberately differs (both only while another controller's view lags):
- the pods of a ReplicaSet are counted as max(spec.replicas, status.replicas) when deciding
  how far the new ReplicaSet may surge, so it never grows before the ReplicaSet controller
  has seen the old pods it deleted go (upstream counts spec only and can briefly run more
  than replicas + maxSurge pods);
- a ReplicaSet's available replicas are counted as at most its spec.replicas when scaling
  down, which is what its status will say once its controller has caught up (upstream may
  read a stale, larger number and scale down past maxUnavailable).
Upstream's deprecated rollback annotation is not supported.

This module holds the config, the informer wiring and event handlers, and `sync`, which
picks the step. The steps are functions of a `Deps` (deps.py: client, clock, events,
listers, queue) that the controller builds once, split as upstream splits them: sync.py
(new ReplicaSet and revisions, scaling, history cleanup, status) and rollout.py
(RollingUpdate, Recreate, the Progressing condition). The pure helpers they share are in
util.py (hash, fenceposts, ReplicaSet lists, annotations) and conditions.py (conditions
and status).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, meta_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.labels import Selector
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    PODS,
    REPLICA_SETS,
    NamespaceIndex,
    cascade_dead_owners,
    controller_of,
    is_namespace_terminating,
    selector_for,
    wait_synced,
)
from services.controllers.deployment.deps import Deps
from services.controllers.deployment.rollout import rollout_recreate, rollout_rolling
from services.controllers.deployment.sync import (
    check_paused_conditions,
    is_scaling_event,
    sync_paused_or_scaled,
    sync_status_only,
)
from services.controllers.deployment.util import (
    DEPLOYMENTS,
    RECREATE,
    ROLLING_UPDATE,
    Deployment,
    ReplicaSet,
)
from services.controllers.events import EventRecorder
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

#: The logger of the controller as it was before it became a package.
log = logging.getLogger("services.controllers.deployment")

#: Upstream's maxRetries: a key failing this often is dropped until its next event.
MAX_RETRIES = 15


# ============================================================================ controller


@dataclass
class DeploymentConfig:
    """Settings of the Deployment controller."""

    workers: int = 5
    """Deployments synced at once (--concurrent-deployment-syncs)."""

    max_retries: int = MAX_RETRIES
    """Failed syncs of one key retried with backoff before it is dropped until its next event."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the ReplicaSets of a deleted Deployment, for a controller-manager without the
    garbage collector (the manager turns it off when the collector runs)."""

    record_events: bool = True
    """Write ScalingReplicaSet and ReplicaSetCreateError Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


class DeploymentController:
    """Rolls Deployments out through ReplicaSets (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DeploymentConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DeploymentConfig()
        self.clock = clock or RealClock()
        self.d_informer = informers.get(DEPLOYMENTS)
        self.rs_informer = informers.get(REPLICA_SETS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "deployment",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.events = EventRecorder(
            client, "deployment-controller", self.clock, enabled=self.config.record_events
        )
        self.deps = Deps(
            client=client,
            clock=self.clock,
            events=self.events,
            deployments=self.d_informer,
            replica_sets=self.rs_informer,
            queue=self.queue,
        )
        self._d_index = NamespaceIndex(self.d_informer, Deployment)
        self._rs_index = NamespaceIndex(self.rs_informer, ReplicaSet)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        # Deployment key -> UIDs of deleted Deployments of that name whose RSes are to go.
        self._dead_owners: dict[str, set[str]] = {}
        self.d_informer.add_handlers(
            Handlers(self._add_deployment, self._update_deployment, self._delete_deployment)
        )
        self.rs_informer.add_handlers(Handlers(self._add_rs, self._update_rs, self._delete_rs))
        self.pod_informer.add_handlers(Handlers(on_delete=self._delete_pod))

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Deployments with `workers` workers until `stop` is set."""
        try:
            synced = (self.d_informer.synced, self.rs_informer.synced, self.pod_informer.synced)
            if await wait_synced(stop, *synced):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="deployment",
                    retry=self._retry,
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    def _retry(self, key: str, e: Exception) -> bool | None:
        """Whether a failed sync is retried with backoff (True). Not when the namespace
        is being deleted (every create would fail: forgotten silently, as upstream's
        handleErr), nor after max_retries (dropped until the key's next event, with one
        warning)."""
        if isinstance(e, ApiError) and is_namespace_terminating(e):
            return None
        if self.queue.num_requeues(key) < self.config.max_retries:
            return True
        log.warning("dropping deployment %s out of the queue: %s", key, e)
        return None

    # ------------------------------------------------------------------ lookups

    def _deployments_in(self, namespace: str) -> list[Deployment]:
        return self._d_index.list(namespace)

    def _resolve(self, namespace: str, ref: meta_pb2.OwnerReference | None) -> Deployment | None:
        if ref is None or ref.kind != DEPLOYMENTS.kind:
            return None
        d = narrow_optional(self.d_informer.store.get(f"{namespace}/{ref.name}"), Deployment)
        if d is None or d.metadata.uid != ref.uid:
            return None
        return d

    def _deployments_selecting(self, rs: ReplicaSet) -> list[Deployment]:
        out = []
        for d in self._deployments_in(rs.metadata.namespace):
            sel = selector_for(d.spec.selector)
            if sel is None or sel.is_empty() or not sel.matches(rs.metadata.labels):
                continue
            out.append(d)
        return out

    def _owned_replica_sets(self, d: Deployment) -> list[ReplicaSet]:
        rss = self._rs_index.list(d.metadata.namespace)
        out = []
        for rs in rss:
            ref = controller_of(rs)
            if ref is not None and ref.uid == d.metadata.uid:
                out.append(rs)
        return out

    def _pod_map(self, d: Deployment, rss: Sequence[ReplicaSet]) -> dict[str, list[core_pb2.Pod]]:
        """Pods selected by `d`, grouped by the RS (of `rss`) that controls them."""
        sel = selector_for(d.spec.selector)
        pod_map: dict[str, list[core_pb2.Pod]] = {rs.metadata.uid: [] for rs in rss}
        if sel is None:
            return pod_map
        pods = self._pod_index.list(d.metadata.namespace)
        for p in pods:
            ref = controller_of(p)
            if ref is not None and ref.uid in pod_map and sel.matches(p.metadata.labels):
                pod_map[ref.uid].append(p)
        return pod_map

    # ------------------------------------------------------------------ event handlers

    def _add_deployment(self, d: Message) -> None:
        self.queue.add(object_key(d))

    def _update_deployment(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_deployment(old)
        self.queue.add(object_key(cur))

    def _delete_deployment(self, d: Message) -> None:
        key = object_key(d)
        if self.config.cascade_delete:
            self._dead_owners.setdefault(key, set()).add(object_meta(d).uid)
        self.queue.add(key)

    def _add_rs(self, obj: Message) -> None:
        rs = narrow(obj, ReplicaSet)
        if rs.metadata.deletion_timestamp:
            self._delete_rs(rs)
            return
        ref = controller_of(rs)
        if ref is not None:
            d = self._resolve(rs.metadata.namespace, ref)
            if d is not None:
                self.queue.add(object_key(d))
            return
        for d in self._deployments_selecting(rs):  # an orphan: anyone may adopt it
            self.queue.add(object_key(d))

    def _update_rs(self, old_obj: Message, cur_obj: Message) -> None:
        old = narrow(old_obj, ReplicaSet)
        cur = narrow(cur_obj, ReplicaSet)
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            prev = self._resolve(old.metadata.namespace, old_ref)
            if prev is not None:
                self.queue.add(object_key(prev))
        if cur_ref is not None:
            d = self._resolve(cur.metadata.namespace, cur_ref)
            if d is not None:
                self.queue.add(object_key(d))
            return
        labels_changed = dict(cur.metadata.labels) != dict(old.metadata.labels)
        if labels_changed or ref_changed:
            for d in self._deployments_selecting(cur):
                self.queue.add(object_key(d))

    def _delete_rs(self, obj: Message) -> None:
        ref = controller_of(obj)
        if ref is None:
            return
        d = self._resolve(object_meta(obj).namespace, ref)
        if d is not None:
            self.queue.add(object_key(d))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """No pod update: this controller watches pods for their deletion only."""
        return False

    def _delete_pod(self, obj: Message) -> None:
        """A Recreate rollout waits for the old pods to go: look again when the last one has."""
        pod = narrow(obj, core_pb2.Pod)
        ref = controller_of(pod)
        if ref is None or ref.kind != REPLICA_SETS.kind:
            return
        rs = self.rs_informer.store.get(f"{pod.metadata.namespace}/{ref.name}")
        if rs is None or object_meta(rs).uid != ref.uid:
            return
        d = self._resolve(pod.metadata.namespace, controller_of(rs))
        if d is None or d.spec.strategy.type != RECREATE:
            return
        pod_map = self._pod_map(d, self._owned_replica_sets(d))
        if not any(pod_map.values()):
            self.queue.add(object_key(d))

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Reconcile one Deployment; raises to be retried with backoff."""
        cached = self.d_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            return
        d = narrow(codec.clone(cached), Deployment)
        selector = selector_for(d.spec.selector)
        if selector is None or selector.is_empty():
            self.events.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if d.status.observed_generation < d.metadata.generation:
                d.status.observed_generation = d.metadata.generation
                await self.client.update_status(d)
            return
        rss = await self._claim_replica_sets(d, selector)
        if d.metadata.deletion_timestamp:
            await sync_status_only(self.deps, d, rss)
            return
        await check_paused_conditions(self.deps, d)
        if d.spec.paused or await is_scaling_event(self.deps, d, rss):
            await sync_paused_or_scaled(self.deps, d, rss)
            return
        if d.spec.strategy.type == RECREATE:
            await rollout_recreate(self.deps, d, rss, self._pod_map(d, rss))
        elif d.spec.strategy.type == ROLLING_UPDATE:
            await rollout_rolling(self.deps, d, rss)
        else:
            raise ApiError(f"unexpected deployment strategy type: {d.spec.strategy.type}")

    async def _claim_replica_sets(self, d: Deployment, selector: Selector) -> list[ReplicaSet]:
        candidates = self._rs_index.list(d.metadata.namespace)
        return await claim(  # type: ignore[return-value]
            self.client,
            REPLICA_SETS,
            d,
            DEPLOYMENTS,
            selector,
            candidates,
            recheck_owner(self.client, DEPLOYMENTS, d),
        )

    # -- deletion

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the ReplicaSets that deleted Deployments of this name controlled."""
        await cascade_dead_owners(
            self.client, self._dead_owners, key, current, ((REPLICA_SETS, self._rs_index.list),)
        )


__all__ = ["MAX_RETRIES", "DeploymentConfig", "DeploymentController"]
