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
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2
from services.api import codec
from services.api.errors import AlreadyExistsError, ApiError, NotFoundError
from services.api.labels import Selector
from services.client import Client
from services.client.informer import Handlers, SharedInformers, object_key
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    PODS,
    REPLICA_SETS,
    EventRecorder,
    NamespaceIndex,
    claim,
    controller_of,
    is_namespace_terminating,
    new_controller_ref,
    recheck_owner,
    selector_for,
    split_key,
    timestamp,
    wait_synced,
)
from services.controllers.deployment_util import (
    DEFAULT_UNIQUE_LABEL_KEY,
    DEPLOYMENTS,
    DESIRED_REPLICAS_ANNOTATION,
    FAILED_RS_CREATE,
    FOUND_NEW_RS,
    NEW_REPLICA_SET,
    NEW_RS_AVAILABLE,
    PAUSED,
    RECREATE,
    REPLICA_SET_UPDATED,
    RESUMED,
    REVISION_ANNOTATION,
    ROLLING_UPDATE,
    TIMED_OUT,
    Deployment,
    ReplicaSet,
    active,
    by_creation,
    by_revision,
    by_size,
    calculate_status,
    compute_hash,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replica_set,
    find_old_replica_sets,
    get_condition,
    get_proportion,
    has_progress_deadline,
    has_revision_history_limit,
    int_annotation,
    is_rolling_update,
    is_saturated,
    max_revision,
    max_surge,
    max_unavailable,
    new_condition,
    new_rs_new_replicas,
    old_pods_running,
    remove_condition,
    replicas_annotations_need_update,
    rs_failure_conditions,
    set_condition,
    set_new_rs_annotations,
    set_replicas_annotations,
    set_revision,
    settled_available,
    spec_replicas,
)
from services.controllers.workqueue import WorkQueue, default_controller_rate_limiter

log = logging.getLogger(__name__)

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
    """Delete the ReplicaSets of a deleted Deployment (kubera has no garbage collector)."""

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
        self.queue: WorkQueue[str] = WorkQueue(
            clock=self.clock,
            rate_limiter=default_controller_rate_limiter(
                self.clock, base_delay=self.config.base_backoff, max_delay=self.config.max_backoff
            ),
            name="deployment",
        )
        self.events = EventRecorder(
            client, "deployment-controller", self.clock, enabled=self.config.record_events
        )
        self._d_index = NamespaceIndex(self.d_informer)
        self._rs_index = NamespaceIndex(self.rs_informer)
        self._pod_index = NamespaceIndex(self.pod_informer)
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
        workers: list[asyncio.Task[None]] = []
        try:
            synced = (self.d_informer.synced, self.rs_informer.synced, self.pod_informer.synced)
            if await wait_synced(stop, *synced):
                workers = [
                    asyncio.create_task(self._worker(), name=f"deployment-worker-{i}")
                    for i in range(self.config.workers)
                ]
                await stop.wait()
        finally:
            self.queue.shutdown()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await self.events.close()

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
                self.queue.forget(key)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - logged and retried with backoff
                if isinstance(e, ApiError) and is_namespace_terminating(e):
                    self.queue.forget(key)
                elif self.queue.num_requeues(key) < self.config.max_retries:
                    if isinstance(e, ApiError):
                        log.info("sync of deployment %s failed: %s", key, e)
                    else:
                        log.exception("sync of deployment %s failed", key)
                    self.queue.add_rate_limited(key)
                else:
                    log.warning("dropping deployment %s out of the queue: %s", key, e)
                    self.queue.forget(key)
            finally:
                self.queue.done(key)

    # ------------------------------------------------------------------ lookups

    def _deployments_in(self, namespace: str) -> list[Deployment]:
        return self._d_index.list(namespace)  # type: ignore[return-value]

    def _resolve(self, namespace: str, ref: meta_pb2.OwnerReference | None) -> Deployment | None:
        if ref is None or ref.kind != DEPLOYMENTS.kind:
            return None
        d = self.d_informer.store.get(f"{namespace}/{ref.name}")
        if d is None or d.metadata.uid != ref.uid:  # type: ignore[attr-defined]
            return None
        return d  # type: ignore[return-value]

    def _deployments_selecting(self, rs: ReplicaSet) -> list[Deployment]:
        out = []
        for d in self._deployments_in(rs.metadata.namespace):
            sel = selector_for(d.spec.selector)
            if sel is None or sel.is_empty() or not sel.matches(rs.metadata.labels):
                continue
            out.append(d)
        return out

    def _owned_replica_sets(self, d: Deployment) -> list[ReplicaSet]:
        rss: list[ReplicaSet] = self._rs_index.list(d.metadata.namespace)  # type: ignore[assignment]
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
        pods: list[core_pb2.Pod] = self._pod_index.list(d.metadata.namespace)  # type: ignore[assignment]
        for p in pods:
            ref = controller_of(p)
            if ref is not None and ref.uid in pod_map and sel.matches(p.metadata.labels):
                pod_map[ref.uid].append(p)
        return pod_map

    # ------------------------------------------------------------------ event handlers

    def _add_deployment(self, d: Message) -> None:
        self.queue.add(object_key(d))

    def _update_deployment(self, old: Message, cur: Message) -> None:
        if old.metadata.uid != cur.metadata.uid:  # type: ignore[attr-defined]
            self._delete_deployment(old)
        self.queue.add(object_key(cur))

    def _delete_deployment(self, d: Message) -> None:
        key = object_key(d)
        if self.config.cascade_delete:
            self._dead_owners.setdefault(key, set()).add(d.metadata.uid)  # type: ignore[attr-defined]
        self.queue.add(key)

    def _add_rs(self, obj: Message) -> None:
        rs: ReplicaSet = obj  # type: ignore[assignment]
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
        old: ReplicaSet = old_obj  # type: ignore[assignment]
        cur: ReplicaSet = cur_obj  # type: ignore[assignment]
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
        d = self._resolve(obj.metadata.namespace, ref)  # type: ignore[attr-defined]
        if d is not None:
            self.queue.add(object_key(d))

    def _delete_pod(self, obj: Message) -> None:
        """A Recreate rollout waits for the old pods to go: look again when the last one has."""
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
        ref = controller_of(pod)
        if ref is None or ref.kind != REPLICA_SETS.kind:
            return
        rs = self.rs_informer.store.get(f"{pod.metadata.namespace}/{ref.name}")
        if rs is None or rs.metadata.uid != ref.uid:  # type: ignore[attr-defined]
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
        d: Deployment = codec.clone(cached)  # type: ignore[assignment]
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
            await self._sync_status_only(d, rss)
            return
        await self._check_paused_conditions(d)
        if d.spec.paused or await self._is_scaling_event(d, rss):
            await self._sync(d, rss)
            return
        if d.spec.strategy.type == RECREATE:
            await self._rollout_recreate(d, rss, self._pod_map(d, rss))
        elif d.spec.strategy.type == ROLLING_UPDATE:
            await self._rollout_rolling(d, rss)
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

    async def _write(self, d: Deployment) -> None:
        """Persist our working copy: its revision annotation (pinned to the version we
        read) and its status; `d` then carries the new resourceVersion."""
        cached = self.d_informer.store.get(object_key(d))
        before = dict(cached.metadata.annotations) if cached is not None else {}  # type: ignore[attr-defined]
        changed = {k: v for k, v in d.metadata.annotations.items() if before.get(k) != v}
        if changed:
            patch = {
                "metadata": {
                    "annotations": changed,
                    "uid": d.metadata.uid,
                    "resourceVersion": d.metadata.resource_version,
                }
            }
            patched = await self.client.patch(
                DEPLOYMENTS, d.metadata.name, json.dumps(patch), namespace=d.metadata.namespace
            )
            d.metadata.resource_version = patched.metadata.resource_version  # type: ignore[attr-defined]
        updated = await self.client.update_status(d)
        d.metadata.resource_version = updated.metadata.resource_version

    # -- revisions and the new ReplicaSet

    async def _all_replica_sets(
        self, d: Deployment, rss: Sequence[ReplicaSet], create: bool
    ) -> tuple[ReplicaSet | None, list[ReplicaSet]]:
        """(new RS, every old RS), with the revisions of the new RS and `d` brought up to
        date (getAllReplicaSetsAndSyncRevision)."""
        _, all_old = find_old_replica_sets(d, rss)
        new_rs = await self._new_replica_set(d, rss, all_old, create)
        return new_rs, all_old

    async def _new_replica_set(
        self, d: Deployment, rss: Sequence[ReplicaSet], old_rss: Sequence[ReplicaSet], create: bool
    ) -> ReplicaSet | None:
        existing = find_new_replica_set(d, rss)
        new_revision = str(max_revision(old_rss) + 1)
        now = self.clock.now()
        if existing is not None:
            rs_copy: ReplicaSet = codec.clone(existing)  # type: ignore[assignment]
            annotations_changed = set_new_rs_annotations(d, rs_copy, new_revision, exists=True)
            if annotations_changed or rs_copy.spec.min_ready_seconds != d.spec.min_ready_seconds:
                rs_copy.spec.min_ready_seconds = d.spec.min_ready_seconds
                return await self.client.update(rs_copy)
            needs_update = set_revision(
                d, rs_copy.metadata.annotations.get(REVISION_ANNOTATION, "")
            )
            if has_progress_deadline(d) and get_condition(d.status, "Progressing") is None:
                msg = f'Found new replica set "{rs_copy.metadata.name}"'
                set_condition(
                    d.status, new_condition("Progressing", "True", FOUND_NEW_RS, msg, now)
                )
                needs_update = True
            if needs_update:
                await self._write(d)
            return rs_copy
        if not create:
            return None

        collision = d.status.collision_count if d.status.HasField("collision_count") else None
        template = core_pb2.PodTemplateSpec()
        template.CopyFrom(d.spec.template)
        pod_hash = compute_hash(template, collision)
        template.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] = pod_hash
        new_rs: ReplicaSet = REPLICA_SETS.new()  # type: ignore[assignment]
        new_rs.metadata.name = f"{d.metadata.name}-{pod_hash}"
        new_rs.metadata.namespace = d.metadata.namespace
        new_rs.metadata.owner_references.append(new_controller_ref(d, DEPLOYMENTS))
        new_rs.metadata.labels.update(template.metadata.labels)
        new_rs.spec.replicas = 0
        new_rs.spec.min_ready_seconds = d.spec.min_ready_seconds
        new_rs.spec.selector.CopyFrom(d.spec.selector)
        new_rs.spec.selector.match_labels[DEFAULT_UNIQUE_LABEL_KEY] = pod_hash
        new_rs.spec.template.CopyFrom(template)
        replicas = new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        new_rs.spec.replicas = replicas
        set_new_rs_annotations(d, new_rs, new_revision, exists=False)

        already_exists = False
        try:
            created: ReplicaSet = await self.client.create(new_rs)
        except AlreadyExistsError:
            # A slow cache, or a hash collision with someone else's ReplicaSet.
            already_exists = True
            found = self.rs_informer.store.get(object_key(new_rs))
            if found is None:
                raise
            ref = controller_of(found)
            if not (
                ref is not None
                and ref.uid == d.metadata.uid
                and equal_ignore_hash(d.spec.template, found.spec.template)  # type: ignore[attr-defined]
            ):
                before = d.status.collision_count if d.status.HasField("collision_count") else 0
                d.status.collision_count = before + 1
                await self.client.update_status(d)
                log.info(
                    "hash collision for deployment %s: collisionCount %d -> %d",
                    object_key(d),
                    before,
                    before + 1,
                )
                raise
            created = found  # type: ignore[assignment]
        except ApiError as e:
            if is_namespace_terminating(e):
                raise
            msg = f'Failed to create new replica set "{new_rs.metadata.name}": {e}'
            if has_progress_deadline(d):
                set_condition(
                    d.status, new_condition("Progressing", "False", FAILED_RS_CREATE, msg, now)
                )
                with contextlib.suppress(ApiError):
                    await self.client.update_status(d)
            self.events.event(d, "Warning", FAILED_RS_CREATE, msg)
            raise
        if not already_exists and replicas > 0:
            self.events.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {created.metadata.name} from 0 to {replicas}",
            )
        needs_update = set_revision(d, new_revision)
        if not already_exists and has_progress_deadline(d):
            msg = f'Created new replica set "{created.metadata.name}"'
            set_condition(d.status, new_condition("Progressing", "True", NEW_REPLICA_SET, msg, now))
            needs_update = True
        if needs_update:
            await self._write(d)
        return created

    # -- scaling

    async def _scale_replica_set(
        self, rs: ReplicaSet, new_scale: int, d: Deployment, operation: str = ""
    ) -> tuple[bool, ReplicaSet]:
        """Set the RS's replicas (and the replicas its annotations say it is sized for)."""
        size_changed = rs.spec.replicas != new_scale
        max_replicas = d.spec.replicas + max_surge(d)
        if not size_changed and not replicas_annotations_need_update(
            rs, d.spec.replicas, max_replicas
        ):
            return False, rs
        operation = operation or ("up" if rs.spec.replicas < new_scale else "down")
        old_scale = rs.spec.replicas
        rs_copy: ReplicaSet = codec.clone(rs)  # type: ignore[assignment]
        rs_copy.spec.replicas = new_scale
        set_replicas_annotations(rs_copy, d.spec.replicas, max_replicas)
        updated = await self.client.update(rs_copy)
        if size_changed:
            self.events.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {rs.metadata.name} from {old_scale} to {new_scale}",
            )
        return size_changed, updated

    async def _is_scaling_event(self, d: Deployment, rss: Sequence[ReplicaSet]) -> bool:
        """An active RS was sized for another spec.replicas: the user scaled."""
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        for rs in active([*old_rss, new_rs]):
            desired = int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != d.spec.replicas:
                return True
        return False

    async def _scale(
        self, d: Deployment, new_rs: ReplicaSet | None, old_rss: list[ReplicaSet]
    ) -> None:
        """Proportional scaling: spread a change of spec.replicas over the active RSes
        by their size, so a scale in mid-rollout neither hastens nor stalls it."""
        only = find_active_or_latest(new_rs, old_rss)
        if only is not None:
            if only.spec.replicas != d.spec.replicas:
                await self._scale_replica_set(only, d.spec.replicas, d)
            return
        if is_saturated(d, new_rs):
            for old in active(old_rss):
                await self._scale_replica_set(old, 0, d)
            return
        if not is_rolling_update(d):
            return
        all_rss = active([*old_rss, new_rs])
        allowed = d.spec.replicas + max_surge(d) if d.spec.replicas > 0 else 0
        to_add = allowed - spec_replicas(all_rss)
        operation = ""
        if to_add > 0:
            all_rss = by_size(all_rss, newer_first=True)
            operation = "up"
        elif to_add < 0:
            all_rss = by_size(all_rss, newer_first=False)
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                share = get_proportion(rs, d, to_add, added)
                sizes[rs.metadata.name] = rs.spec.replicas + share
                added += share
            else:
                sizes[rs.metadata.name] = rs.spec.replicas
        for i, rs in enumerate(all_rss):
            if i == 0 and to_add != 0:  # leftovers go to the largest
                sizes[rs.metadata.name] = max(0, sizes[rs.metadata.name] + to_add - added)
            await self._scale_replica_set(rs, sizes[rs.metadata.name], d, operation)

    async def _sync(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        """Paused or scaled: resize proportionally, no rollout."""
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        await self._scale(d, new_rs, old_rss)
        if d.spec.paused:
            await self._cleanup(d, old_rss)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _sync_status_only(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _check_paused_conditions(self, d: Deployment) -> None:
        if not has_progress_deadline(d):
            return
        cond = get_condition(d.status, "Progressing")
        if cond is not None and cond.reason == TIMED_OUT:
            return  # a reported lack of progress stays
        paused_cond = cond is not None and cond.reason == PAUSED
        now = self.clock.now()
        if d.spec.paused and not paused_cond:
            set_condition(
                d.status,
                new_condition("Progressing", "Unknown", PAUSED, "Deployment is paused", now),
            )
        elif not d.spec.paused and paused_cond:
            set_condition(
                d.status,
                new_condition("Progressing", "Unknown", RESUMED, "Deployment is resumed", now),
            )
        else:
            return
        await self._write(d)

    async def _cleanup(self, d: Deployment, old_rss: Sequence[ReplicaSet]) -> None:
        """Keep only the newest revisionHistoryLimit old ReplicaSets that are scaled to 0."""
        if not has_revision_history_limit(d):
            return
        alive = [rs for rs in old_rss if not rs.metadata.deletion_timestamp]
        diff = len(alive) - d.spec.revision_history_limit
        if diff <= 0:
            return
        for rs in by_revision(alive)[:diff]:
            if (
                rs.status.replicas != 0
                or rs.spec.replicas != 0
                or rs.metadata.generation > rs.status.observed_generation
                or rs.metadata.deletion_timestamp
            ):
                continue
            with contextlib.suppress(NotFoundError):
                await self.client.delete(REPLICA_SETS, rs.metadata.name, rs.metadata.namespace)

    async def _sync_status(
        self, d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None
    ) -> None:
        status = calculate_status(all_rss, new_rs, d, self.clock.now())
        if d.status == status:
            return
        d.status.CopyFrom(status)
        await self.client.update_status(d)

    # -- rollouts

    async def _rollout_rolling(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        if await self._reconcile_new(all_rss, new_rs, d):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if await self._reconcile_old(all_rss, active(old_rss), new_rs, d):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if deployment_complete(d, d.status):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _reconcile_new(
        self, all_rss: list[ReplicaSet], new_rs: ReplicaSet, d: Deployment
    ) -> bool:
        if new_rs.spec.replicas == d.spec.replicas:
            return False
        if new_rs.spec.replicas > d.spec.replicas:
            scaled, _ = await self._scale_replica_set(new_rs, d.spec.replicas, d)
            return scaled
        scaled, _ = await self._scale_replica_set(
            new_rs, new_rs_new_replicas(d, all_rss, new_rs), d
        )
        return scaled

    async def _reconcile_old(
        self,
        all_rss: list[ReplicaSet],
        old_rss: list[ReplicaSet],
        new_rs: ReplicaSet,
        d: Deployment,
    ) -> bool:
        """Scale old RSes down as far as maxUnavailable allows (unhealthy replicas first)."""
        if spec_replicas(old_rss) == 0:
            return False
        all_pods = spec_replicas(all_rss)
        min_available = d.spec.replicas - max_unavailable(d)
        new_unavailable = new_rs.spec.replicas - settled_available(new_rs)
        # Never below minAvailable, counting the new RS's not-yet-available pods as lost.
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = await self._cleanup_unhealthy(old_rss, d, max_scaled_down)
        scaled_down = await self._scale_down_old_for_rolling_update([*old_rss, new_rs], old_rss, d)
        return cleaned + scaled_down > 0

    async def _cleanup_unhealthy(
        self, old_rss: list[ReplicaSet], d: Deployment, max_cleanup: int
    ) -> tuple[list[ReplicaSet], int]:
        """Scale away old replicas that are not available: that costs no availability."""
        old_rss = by_creation(old_rss)
        total = 0
        for i, rs in enumerate(old_rss):
            if total >= max_cleanup:
                break
            unhealthy = rs.spec.replicas - settled_available(rs)
            if rs.spec.replicas == 0 or unhealthy == 0:
                continue
            count = min(max_cleanup - total, unhealthy)
            _, old_rss[i] = await self._scale_replica_set(rs, rs.spec.replicas - count, d)
            total += count
        return old_rss, total

    async def _scale_down_old_for_rolling_update(
        self, all_rss: list[ReplicaSet], old_rss: list[ReplicaSet], d: Deployment
    ) -> int:
        min_available = d.spec.replicas - max_unavailable(d)
        available = sum(settled_available(rs) for rs in all_rss)
        if available <= min_available:
            return 0
        to_scale_down = available - min_available
        total = 0
        for rs in by_creation(old_rss):
            if total >= to_scale_down:
                break
            if rs.spec.replicas == 0:
                continue
            count = min(rs.spec.replicas, to_scale_down - total)
            await self._scale_replica_set(rs, rs.spec.replicas - count, d)
            total += count
        return total

    async def _rollout_recreate(
        self, d: Deployment, rss: Sequence[ReplicaSet], pod_map: dict[str, list[core_pb2.Pod]]
    ) -> None:
        # No new RS yet: it is created only once the old pods are gone.
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
        scaled = False
        for i, rs in enumerate(old_rss):
            if rs.spec.replicas == 0:
                continue
            did, old_rss[i] = await self._scale_replica_set(rs, 0, d)
            scaled = scaled or did
        if scaled or old_pods_running(new_rs, old_rss, pod_map):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old_rss = await self._all_replica_sets(d, rss, create=True)
            all_rss = [*old_rss, new_rs]
        assert new_rs is not None
        await self._scale_replica_set(new_rs, d.spec.replicas, d)
        if deployment_complete(d, d.status):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _sync_rollout_status(
        self, d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None
    ) -> None:
        now = self.clock.now()
        status = calculate_status(all_rss, new_rs, d, now)
        if not has_progress_deadline(d):
            remove_condition(status, "Progressing")
        current = get_condition(d.status, "Progressing")
        complete_before = (
            status.replicas == status.updated_replicas
            and current is not None
            and current.reason == NEW_RS_AVAILABLE
        )
        if has_progress_deadline(d) and not complete_before:
            name = (
                f'ReplicaSet "{new_rs.metadata.name}"'
                if new_rs is not None
                else f'Deployment "{d.metadata.name}"'
            )
            if deployment_complete(d, status):
                msg = f"{name} has successfully progressed."
                set_condition(
                    status, new_condition("Progressing", "True", NEW_RS_AVAILABLE, msg, now)
                )
            elif deployment_progressing(d, status):
                # Progress moves lastUpdateTime on even with the same reason.
                cond = new_condition(
                    "Progressing", "True", REPLICA_SET_UPDATED, f"{name} is progressing.", now
                )
                if current is not None:
                    if current.status == "True":
                        cond.last_transition_time = current.last_transition_time
                    remove_condition(status, "Progressing")
                set_condition(status, cond)
            elif deployment_timed_out(d, status, now):
                msg = f"{name} has timed out progressing."
                set_condition(status, new_condition("Progressing", "False", TIMED_OUT, msg, now))
        failures = rs_failure_conditions(all_rss, new_rs)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, "ReplicaFailure")
        if d.status == status:
            self._requeue_stuck(d, status)
            return
        d.status.CopyFrom(status)
        await self.client.update_status(d)

    def _requeue_stuck(self, d: Deployment, status: apps_pb2.DeploymentStatus) -> None:
        """Without progress, look again when the progress deadline passes."""
        current = get_condition(d.status, "Progressing")
        if not has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.reason == TIMED_OUT:
            return
        since = timestamp(current.last_update_time)
        if since is None:
            return
        after = since + d.spec.progress_deadline_seconds - self.clock.now()
        if after < 1:
            self.queue.add_rate_limited(object_key(d))
        else:
            self.queue.add_after(object_key(d), after + 1)

    # -- deletion

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the ReplicaSets that deleted Deployments of this name controlled."""
        dead = self._dead_owners.get(key)
        if not dead:
            return
        if current is not None:
            dead.discard(current.metadata.uid)  # type: ignore[attr-defined]
        rss: list[ReplicaSet] = self._rs_index.list(split_key(key)[0])  # type: ignore[assignment]
        for rs in rss:
            ref = controller_of(rs)
            if ref is not None and ref.uid in dead and not rs.metadata.deletion_timestamp:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        REPLICA_SETS, rs.metadata.name, rs.metadata.namespace, uid=rs.metadata.uid
                    )
        self._dead_owners.pop(key, None)


__all__ = ["MAX_RETRIES", "DeploymentConfig", "DeploymentController"]
