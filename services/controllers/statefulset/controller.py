"""The StatefulSet controller (upstream pkg/controller/statefulset): pods with stable
names `<set>-<ordinal>`, stable storage (one PersistentVolumeClaim per claim template and
ordinal) and ordered rollouts, with the template history kept in ControllerRevisions.

One sync of a set (upstream's UpdateStatefulSet → updateStatefulSet):

    claim pods (adopt orphans that match and are members: `<set>-<n>`) and revisions
      ─► revisions: the update revision is the current template (an equal older revision
         is re-used with the newest number: a rollback); the current revision is the one
         status.currentRevision names, else the update revision
      ─► split the pods: replicas (ordinals start .. start+replicas-1) and condemned (others)
      ─► for each replica in ordinal order: a Failed / Succeeded pod is deleted (and made
         again); a missing pod gets its claims and is created from the current revision
         when its ordinal is below the partition (or below currentReplicas with no
         partition), else from the update revision; OrderedReady waits after each creation
         and on any pod not yet Running and Ready (Parallel goes on)
      ─► condemned pods deleted highest ordinal first (OrderedReady: one at a time, each
         after the pods before it are healthy)
      ─► RollingUpdate: from the highest ordinal down to the partition, pods not of the
         update revision are deleted (they come back updated), at most maxUnavailable
         (default 1) minus the replicas already unavailable. OnDelete: nothing.
      ─► status (replicas, ready, available, current, updated, revisions); a rollout
         complete (every pod updated and ready) makes the update revision current
      ─► history truncated to revisionHistoryLimit (never a revision in use)

Pods get the template's labels plus statefulset.kubernetes.io/pod-name,
apps.kubernetes.io/pod-index and controller-revision-hash (the revision's name), hostname
= pod name and subdomain = serviceName, and one volume per claim template pointing at
`<template>-<set>-<ordinal>`. Claims carry the template's labels and the selector's
matchLabels; persistentVolumeClaimRetentionPolicy sets their ownerReferences as upstream
does (whenDeleted Delete: owned by the set; whenScaled Delete: a condemned pod's claims
owned by that pod), so the garbage collector removes them; Retain leaves them alone.

A live pod whose identity (name, namespace, the pod-name label) or storage (a volume per
claim template, on the ordinal's claim) no longer matches is updated to match, its missing
claims created first (UpdateStatefulPod); hostname and subdomain are immutable, set at
creation only, as upstream's initIdentity. A pod's volumes are immutable too, so a storage
repair is refused by validation as upstream's is, after the claims were made.

Rolling updates follow upstream's MaxUnavailableStatefulSet path (beta and on by default
since 1.35). Where kubera differs: claims' ownerReferences follow the retention policy
when made and when a pod is scaled down, but are not reconciled later
(ClaimsMatchRetentionPolicy); the pods of a deleted set are deleted by this controller
when `cascade_delete` (kubera's garbage collector may not run).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2, storage_pb2
from services.api.machinery import codec
from services.api.machinery.errors import (
    AlreadyExistsError,
    ApiError,
    ConflictError,
    NotFoundError,
)
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    NamespaceIndex,
    cascade_dead_owners,
    controller_of,
    is_pod_available,
    is_pod_ready,
    selector_for,
    wait_synced,
    write_status,
)
from services.controllers.events import EventRecorder
from services.controllers.history import (
    CONTROLLER_REVISIONS,
    bump_revision,
    create_revision,
    find_equal,
    new_revision,
    next_revision,
    revision_template,
    sort_revisions,
)
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.statefulset.rules import (
    CLAIMS,
    DELETE,
    POD_INDEX_LABEL,
    POD_NAME_LABEL,
    PODS,
    ROLLING_UPDATE,
    STATEFUL_SETS,
    allows_burst,
    claim_name,
    complete_rolling_update,
    identity_matches,
    is_failed,
    is_healthy,
    is_member_of,
    is_running_and_ready,
    is_succeeded,
    is_terminating,
    is_unavailable,
    max_unavailable_of,
    new_claims,
    new_stateful_pod,
    parent_and_ordinal,
    partition_of,
    pod_name,
    pod_revision,
    replicas_of,
    revision_for_ordinal,
    start_ordinal,
    stateful_status,
    storage_matches,
    update_identity,
    update_storage,
)
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

#: The waits between tries of a pod update that conflicted (client-go's
#: retry.DefaultBackoff: 10 ms, x5, 4 tries).
UPDATE_RETRY_DELAYS = (0.01, 0.05, 0.25)

# ============================================================================ controller


@dataclass
class StatefulSetConfig:
    """Settings of the StatefulSet controller."""

    workers: int = 5
    """StatefulSets synced at once (--concurrent-statefulset-syncs)."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the pods and revisions of a deleted set (kubera's GC may not run)."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / FailedCreate Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


class _Wait(Exception):
    """OrderedReady: stop this sync here; an event brings the next one."""


class StatefulSetController:
    """Keeps each StatefulSet's ordinals (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: StatefulSetConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or StatefulSetConfig()
        self.clock = clock or RealClock()
        self.set_informer = informers.get(STATEFUL_SETS)
        self.pod_informer = informers.get(PODS)
        self.revision_informer = informers.get(CONTROLLER_REVISIONS)
        self.claim_informer = informers.get(CLAIMS)
        self.queue: WorkQueue[str] = controller_queue(
            "statefulset",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.events = EventRecorder(
            client, "statefulset-controller", self.clock, enabled=self.config.record_events
        )
        self._set_index = NamespaceIndex(self.set_informer, apps_pb2.StatefulSet)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self._revision_index = NamespaceIndex(self.revision_informer, apps_pb2.ControllerRevision)
        self._dead: dict[str, set[str]] = {}
        self.set_informer.add_handlers(
            Handlers(
                lambda o: self.queue.add(object_key(o)),
                self._update_set,
                self._delete_set,
            )
        )
        self.pod_informer.add_handlers(
            Handlers(self._pod_event, lambda _o, n: self._pod_changed(_o, n), self._pod_event)
        )
        self.revision_informer.add_handlers(
            Handlers(self._owned_event, lambda _o, n: self._owned_event(n), self._owned_event)
        )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.set_informer.synced,
                self.pod_informer.synced,
                self.revision_informer.synced,
                self.claim_informer.synced,
            ):
                await run_workers(
                    self.queue,
                    self.sync,
                    workers=self.config.workers,
                    stop=stop,
                    what="statefulset",
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    # ------------------------------------------------------------------ events

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        return bool(object_meta(old).owner_references or object_meta(new).owner_references) or (
            object_meta(old).labels != object_meta(new).labels
        )

    def _update_set(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_set(old)
        self.queue.add(object_key(cur))

    def _delete_set(self, obj: Message) -> None:
        key = object_key(obj)
        if self.config.cascade_delete:
            self._dead.setdefault(key, set()).add(object_meta(obj).uid)
        self.queue.add(key)

    def _owner_key(self, obj: Message) -> str | None:
        ref = controller_of(obj)
        if ref is None or ref.kind != STATEFUL_SETS.kind:
            return None
        return f"{object_meta(obj).namespace}/{ref.name}"

    def _owned_event(self, obj: Message) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def _pod_event(self, obj: Message) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.queue.add(key)
            return
        pod = narrow(obj, core_pb2.Pod)
        for sts in self._set_index.list(pod.metadata.namespace):
            sel = selector_for(sts.spec.selector)
            if sel is not None and not sel.is_empty() and sel.matches(pod.metadata.labels):
                self.queue.add(object_key(sts))

    def _pod_changed(self, old: Message, cur: Message) -> None:
        self._pod_event(cur)
        if controller_of(old) != controller_of(cur):
            self._pod_event(old)
        pod = narrow(cur, core_pb2.Pod)
        key = self._owner_key(cur)
        if key is not None and not is_pod_ready(narrow(old, core_pb2.Pod)) and is_pod_ready(pod):
            sts = narrow_optional(self.set_informer.store.get(key), apps_pb2.StatefulSet)
            if sts is not None and sts.spec.min_ready_seconds > 0:
                self.queue.add_after(key, sts.spec.min_ready_seconds + 1.0)

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        cached = self.set_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            return
        sts = narrow(cached, apps_pb2.StatefulSet)
        selector = selector_for(sts.spec.selector)
        if selector is None:
            log.warning("statefulset %s has an invalid selector; ignoring it", key)
            return
        ns = sts.metadata.namespace
        candidates = [p for p in self._pod_index.list(ns) if is_member_of(sts, p)]
        pods: list[core_pb2.Pod] = await claim(  # type: ignore[assignment]
            self.client,
            PODS,
            sts,
            STATEFUL_SETS,
            selector,
            candidates,
            recheck_owner(self.client, STATEFUL_SETS, sts),
        )
        revisions: list[apps_pb2.ControllerRevision] = await claim(  # type: ignore[assignment]
            self.client,
            CONTROLLER_REVISIONS,
            sts,
            STATEFUL_SETS,
            selector,
            self._revision_index.list(ns),
            recheck_owner(self.client, STATEFUL_SETS, sts),
        )
        revisions = sort_revisions(revisions)
        current, update, collision = await self._revisions(sts, revisions)
        status = await self._update_stateful_set(sts, current, update, pods)
        status.collision_count = collision
        complete_rolling_update(sts, status)
        await self._write_status(sts, status)
        await self._truncate_history(sts, pods, revisions, current, update)

    async def _revisions(
        self, sts: apps_pb2.StatefulSet, revisions: list[apps_pb2.ControllerRevision]
    ) -> tuple[apps_pb2.ControllerRevision, apps_pb2.ControllerRevision, int]:
        """getStatefulSetRevisions: (current, update, collision count)."""
        collision = sts.status.collision_count if sts.status.HasField("collision_count") else 0
        number = next_revision(revisions)
        candidate = new_revision(sts, STATEFUL_SETS, sts.spec.template, number, collision)
        equal = find_equal(revisions, candidate)
        if equal and equal[-1] is revisions[-1]:
            update = equal[-1]  # the template has not changed
        elif equal:
            update = await bump_revision(self.client, equal[-1], number)  # a rollback
        else:
            update, collision = await create_revision(
                self.client, sts, STATEFUL_SETS, sts.spec.template, number, collision
            )
        current = next(
            (r for r in revisions if r.metadata.name == sts.status.current_revision), update
        )
        return current, update, collision

    async def _update_stateful_set(
        self,
        sts: apps_pb2.StatefulSet,
        current: apps_pb2.ControllerRevision,
        update: apps_pb2.ControllerRevision,
        pods: list[core_pb2.Pod],
    ) -> apps_pb2.StatefulSetStatus:
        now = self.clock.now()
        status = stateful_status(sts, pods, current.metadata.name, update.metadata.name, now)
        if sts.metadata.deletion_timestamp:
            return status
        start, count = start_ordinal(sts), replicas_of(sts)
        replicas: list[core_pb2.Pod | None] = [None] * count
        condemned: list[core_pb2.Pod] = []
        for p in pods:
            ordinal = parent_and_ordinal(p.metadata.name)[1]
            if start <= ordinal < start + count:
                replicas[ordinal - start] = p
            else:
                condemned.append(p)
        condemned.sort(key=lambda p: parent_and_ordinal(p.metadata.name)[1], reverse=True)
        templates = {
            "current": (revision_template(current), current.metadata.name),
            "update": (revision_template(update), update.metadata.name),
        }
        monotonic = not allows_burst(sts)
        try:
            for i in range(count):
                await self._process_replica(sts, replicas, i, start + i, templates, monotonic)
            await self._process_condemned(sts, replicas, condemned, monotonic)
            if sts.spec.update_strategy.type == ROLLING_UPDATE:
                await self._rolling_update(sts, replicas, update.metadata.name, status)
        except _Wait:
            pass
        return status

    async def _process_replica(
        self,
        sts: apps_pb2.StatefulSet,
        replicas: list[core_pb2.Pod | None],
        i: int,
        ordinal: int,
        templates: dict[str, tuple[core_pb2.PodTemplateSpec, str]],
        monotonic: bool,
    ) -> None:
        """processReplica: replace an ended pod, create a missing one (with its claims),
        and (OrderedReady) stop at any pod not yet Running, Ready and available."""
        pod = replicas[i]
        if pod is not None and (is_failed(pod) or is_succeeded(pod)):
            # A pod that ended is replaced under the same identity, once it is gone.
            if not is_terminating(pod):
                await self._delete_pod(sts, pod)
            raise _Wait
        if pod is None:
            which = revision_for_ordinal(sts, ordinal)
            template, revision = templates[which]
            new = new_stateful_pod(sts, template, revision, ordinal)
            await self._create_claims(sts, ordinal)
            try:
                created = narrow(await self.client.create(new), core_pb2.Pod)
            except AlreadyExistsError:
                created = None  # our own earlier creation, not yet in the cache
            except ApiError as e:
                self.events.event(
                    sts,
                    "Warning",
                    "FailedCreate",
                    f"create Pod {new.metadata.name} in StatefulSet {sts.metadata.name} failed error: {e}",
                )
                raise
            if created is not None:
                self.events.event(
                    sts,
                    "Normal",
                    "SuccessfulCreate",
                    f"create Pod {new.metadata.name} in StatefulSet {sts.metadata.name} successful",
                )
                replicas[i] = created
            if monotonic:
                raise _Wait
            return
        if is_terminating(pod) and monotonic:
            raise _Wait
        if not is_running_and_ready(pod) and monotonic:
            raise _Wait
        if (
            monotonic
            and sts.spec.min_ready_seconds > 0
            and not is_pod_available(pod, sts.spec.min_ready_seconds, self.clock.now())
        ):
            raise _Wait
        if not (identity_matches(sts, pod) and storage_matches(sts, pod)):
            await self._update_stateful_pod(sts, pod)
        await self._create_claims(sts, ordinal)

    async def _process_condemned(
        self,
        sts: apps_pb2.StatefulSet,
        replicas: list[core_pb2.Pod | None],
        condemned: list[core_pb2.Pod],
        monotonic: bool,
    ) -> None:
        """Scale down: highest ordinal first (processCondemned). OrderedReady deletes one at
        a time and waits on a terminating pod, and on an unhealthy one unless it is the
        first unhealthy pod of the set."""
        first_unhealthy = next(
            (p for p in replicas if p is not None and not is_healthy(p)), None
        ) or next((p for p in condemned if not is_healthy(p)), None)
        for pod in condemned:
            if is_terminating(pod):
                if monotonic:
                    raise _Wait
                continue
            if monotonic and not is_running_and_ready(pod) and pod is not first_unhealthy:
                raise _Wait
            await self._scaled_down_claims(sts, pod)
            await self._delete_pod(sts, pod)
            if monotonic:
                raise _Wait

    async def _rolling_update(
        self,
        sts: apps_pb2.StatefulSet,
        replicas: list[core_pb2.Pod | None],
        update_revision: str,
        status: apps_pb2.StatefulSetStatus,
    ) -> None:
        """updateStatefulSetAfterInvariantEstablished (MaxUnavailableStatefulSet, on by
        default upstream since 1.35): count the unavailable replicas; while fewer than
        maxUnavailable, delete old-revision pods from the highest ordinal down to the
        partition, up to maxUnavailable minus the unavailable ones."""
        now = self.clock.now()
        max_unavailable = max_unavailable_of(sts, len(replicas))
        unavailable = sum(1 for p in replicas if is_unavailable(p, sts.spec.min_ready_seconds, now))
        if unavailable > max_unavailable:
            raise _Wait
        budget = max_unavailable - unavailable
        partition = min(partition_of(sts), len(replicas))
        deleted = 0
        for target in range(len(replicas) - 1, partition - 1, -1):
            if deleted >= budget:
                break
            pod = replicas[target]
            if pod is None or is_terminating(pod) or pod_revision(pod) == update_revision:
                continue
            await self._delete_pod(sts, pod)
            deleted += 1
            status.current_replicas = max(0, status.current_replicas - 1)

    # ------------------------------------------------------------------ writes

    async def _delete_pod(self, sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> None:
        try:
            await self.client.delete(
                PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
            )
        except NotFoundError:
            return
        except ApiError as e:
            self.events.event(
                sts,
                "Warning",
                "FailedDelete",
                f"delete Pod {pod.metadata.name} in StatefulSet {sts.metadata.name} failed error: {e}",
            )
            raise
        self.events.event(
            sts,
            "Normal",
            "SuccessfulDelete",
            f"delete Pod {pod.metadata.name} in StatefulSet {sts.metadata.name} successful",
        )

    async def _update_stateful_pod(self, sts: apps_pb2.StatefulSet, cached: core_pb2.Pod) -> None:
        """UpdateStatefulPod: a pod whose identity (name label, index label) or storage (a
        volume per claim template) no longer matches is updated to match, its missing
        claims created first; a conflict is retried on the pod read again from the cache
        (retry.RetryOnConflict's DefaultBackoff). SuccessfulUpdate / FailedUpdate events
        once an update was tried."""
        pod = codec.clone(cached)
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        attempted = False
        error: ApiError | None = None
        for delay in (*UPDATE_RETRY_DELAYS, None):
            consistent = True
            if not identity_matches(sts, pod):
                update_identity(sts, pod)
                consistent = False
            if not storage_matches(sts, pod):
                update_storage(sts, pod)
                consistent = False
                await self._create_claims(sts, parent_and_ordinal(pod.metadata.name)[1])
            if consistent:
                break
            attempted = True
            try:
                await self.client.update(pod)
                error = None
                break
            except ConflictError as e:
                error = e
                if delay is None:
                    break
                await self.clock.sleep(delay)
                fresh = narrow_optional(self.pod_informer.store.get(key), core_pb2.Pod)
                if fresh is not None:
                    pod = codec.clone(fresh)
            except ApiError as e:
                error = e
                break
        if attempted:
            name, set_name = pod.metadata.name, sts.metadata.name
            if error is None:
                msg = f"update Pod {name} in StatefulSet {set_name} successful"
                self.events.event(sts, "Normal", "SuccessfulUpdate", msg)
            else:
                msg = f"update Pod {name} in StatefulSet {set_name} failed error: {error}"
                self.events.event(sts, "Warning", "FailedUpdate", msg)
        if error is not None:
            raise error

    async def _create_claims(self, sts: apps_pb2.StatefulSet, ordinal: int) -> None:
        """createPersistentVolumeClaims: each missing claim of `ordinal` created; a claim
        being deleted is an error (the pod must not start on storage about to go)."""
        for c in new_claims(sts, ordinal):
            cached = narrow_optional(
                self.claim_informer.store.get(f"{c.metadata.namespace}/{c.metadata.name}"),
                storage_pb2.PersistentVolumeClaim,
            )
            if cached is not None:
                if cached.metadata.deletion_timestamp:
                    raise ApiError(f"pvc {c.metadata.name} is being deleted")
                continue
            try:
                await self.client.create(c)
            except AlreadyExistsError:
                continue
            except ApiError as e:
                self.events.event(
                    sts,
                    "Warning",
                    "FailedCreate",
                    f"create Claim {c.metadata.name} for Pod {pod_name(sts, ordinal)} in StatefulSet {sts.metadata.name} failed error: {e}",
                )
                raise
            self.events.event(
                sts,
                "Normal",
                "SuccessfulCreate",
                f"create Claim {c.metadata.name} for Pod {pod_name(sts, ordinal)} in StatefulSet {sts.metadata.name} success",
            )

    async def _scaled_down_claims(self, sts: apps_pb2.StatefulSet, pod: core_pb2.Pod) -> None:
        """whenScaled Delete: a condemned pod's claims become owned by that pod, so they go
        with it (upstream updateClaimOwnerRefForSetAndPod)."""
        if sts.spec.persistent_volume_claim_retention_policy.when_scaled != DELETE:
            return
        ordinal = parent_and_ordinal(pod.metadata.name)[1]
        ref = meta_pb2.OwnerReference(
            api_version="v1", kind="Pod", name=pod.metadata.name, uid=pod.metadata.uid
        )
        for c in new_claims(sts, ordinal):
            cached = narrow_optional(
                self.claim_informer.store.get(f"{c.metadata.namespace}/{c.metadata.name}"),
                storage_pb2.PersistentVolumeClaim,
            )
            if cached is None or any(
                r.uid == pod.metadata.uid for r in cached.metadata.owner_references
            ):
                continue
            refs = [json_format.MessageToDict(r) for r in cached.metadata.owner_references]
            refs.append(json_format.MessageToDict(ref))
            patch = {
                "metadata": {
                    "ownerReferences": refs,
                    "resourceVersion": cached.metadata.resource_version,
                }
            }
            with contextlib.suppress(NotFoundError):
                await self.client.patch(
                    CLAIMS, c.metadata.name, json.dumps(patch), namespace=c.metadata.namespace
                )

    async def _write_status(
        self, sts: apps_pb2.StatefulSet, status: apps_pb2.StatefulSetStatus
    ) -> None:
        await write_status(self.client, STATEFUL_SETS, sts, status)

    async def _truncate_history(
        self,
        sts: apps_pb2.StatefulSet,
        pods: Sequence[core_pb2.Pod],
        revisions: Sequence[apps_pb2.ControllerRevision],
        current: apps_pb2.ControllerRevision,
        update: apps_pb2.ControllerRevision,
    ) -> None:
        """truncateHistory: keep the revisions pods, current and update use; delete the
        oldest others beyond revisionHistoryLimit."""
        live = {pod_revision(p) for p in pods} | {current.metadata.name, update.metadata.name}
        history = [r for r in revisions if r.metadata.name not in live]
        limit = (
            sts.spec.revision_history_limit if sts.spec.HasField("revision_history_limit") else 10
        )
        for r in history[: max(0, len(history) - limit)]:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(
                    CONTROLLER_REVISIONS, r.metadata.name, r.metadata.namespace
                )

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the pods and revisions of deleted sets of this name."""
        await cascade_dead_owners(
            self.client,
            self._dead,
            key,
            current,
            ((PODS, self._pod_index.list), (CONTROLLER_REVISIONS, self._revision_index.list)),
        )


__all__ = [
    "POD_INDEX_LABEL",
    "POD_NAME_LABEL",
    "StatefulSetConfig",
    "StatefulSetController",
    "claim_name",
    "complete_rolling_update",
    "is_member_of",
    "is_unavailable",
    "max_unavailable_of",
    "new_claims",
    "new_stateful_pod",
    "parent_and_ordinal",
    "revision_for_ordinal",
    "stateful_status",
]
