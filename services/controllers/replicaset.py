"""The ReplicaSet controller (upstream pkg/controller/replicaset). The helpers it shares
with the other controllers (adoption, expectations, deletion ranking, slow start, events)
live in controller_utils.py, as upstream's pkg/controller/controller_utils.go.

A ReplicaSet keeps `spec.replicas` active pods matching its selector. One sync of a key:

    cascade (pods of a deleted RS of that name) ─► RS gone? forget its expectations, done
      ─► active pods of the namespace ─► claim (adopt matching orphans, release our pods
         that stopped matching) ─► expectations satisfied and RS not being deleted?
         ─► manage: create (slow start 1, 2, 4, …; at most burst_replicas) or delete
            (ranked as upstream's ActivePodsWithRanks) ─► status (only when it changed)

Expectations (upstream ControllerExpectations + UID tracking): before creating n pods the
controller records "expect n adds"; each pod-add event of a pod it controls lowers the
count, and until it reaches 0 (or 5 min pass) syncs do not create or delete again. So a
burst of events while its own creations are in flight cannot make it create twice.
Deletions are tracked by pod key, so a pod seen first with a deletionTimestamp and later
deleted is counted once.

Active pods (what counts towards replicas): not Succeeded, not Failed, no
deletionTimestamp. An evicted pod (Failed, reason Evicted) is therefore replaced at once.

Cascading deletion is the garbage collector's (garbagecollector.py). Without it (a
controller-manager that does not run it), `cascade_delete` (default) has this controller
delete the pods a deleted ReplicaSet controlled, as background propagation would; it cannot
see the propagation policy, so `--cascade=orphan` deletions also take the pods then.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.labels import Selector
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    NamespaceIndex,
    cascade_dead_owners,
    controller_of,
    is_namespace_terminating,
    is_pod_active,
    is_pod_available,
    is_pod_ready,
    new_controller_ref,
    selector_for,
    slow_start_batch,
    wait_synced,
)
from services.controllers.events import EventRecorder
from services.controllers.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations
from services.controllers.ranking import rank_for_deletion
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
REPLICA_SETS = BY_KIND["ReplicaSet"]
EVENTS = BY_KIND["Event"]

#: Upstream's BurstReplicas: at most this many pods created or deleted in one sync.
BURST_REPLICAS = 500


# ============================================================================ controller


@dataclass
class ReplicaSetConfig:
    """Settings of the ReplicaSet controller (kube-controller-manager flags and constants)."""

    workers: int = 5
    """ReplicaSets synced at once (--concurrent-replicaset-syncs)."""

    burst_replicas: int = BURST_REPLICAS
    """Most pods one sync creates or deletes; the rest wait for the next sync."""

    expectations_timeout: float = EXPECTATIONS_TIMEOUT
    """How long a sync waits for its own creations and deletions to be observed before it
    acts again anyway (a lost watch event must not stall a ReplicaSet forever)."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the pods of a deleted ReplicaSet, for a controller-manager without the
    garbage collector (the manager turns it off when the collector runs)."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / FailedCreate / FailedDelete Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.burst_replicas < 1:
            raise ValueError(f"burst_replicas must be at least 1, got {self.burst_replicas}")
        if self.expectations_timeout <= 0:
            raise ValueError(
                f"expectations_timeout must be positive, got {self.expectations_timeout}"
            )
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


def pod_from_template(rs: apps_pb2.ReplicaSet) -> core_pb2.Pod:
    """A pod for `rs` (GetPodFromTemplate): the template's labels, annotations,
    finalizers and spec, named `<rs>-<5 random>` by the apiserver (generateName), and
    controlled by `rs`."""
    template = rs.spec.template
    pod = PODS.new()
    assert isinstance(pod, core_pb2.Pod)
    pod.metadata.namespace = rs.metadata.namespace
    pod.metadata.generate_name = f"{rs.metadata.name}-"
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.owner_references.append(new_controller_ref(rs, REPLICA_SETS))
    pod.spec.CopyFrom(template.spec)
    return pod


def _set_rs_condition(
    status: apps_pb2.ReplicaSetStatus, cond: apps_pb2.ReplicaSetCondition
) -> None:
    for c in status.conditions:
        if c.type == cond.type:
            if c.status == cond.status and c.reason == cond.reason:
                return
            break
    keep = [c for c in status.conditions if c.type != cond.type]
    del status.conditions[:]
    status.conditions.extend([*keep, cond])


def calculate_status(
    rs: apps_pb2.ReplicaSet, pods: Sequence[core_pb2.Pod], manage_error: ApiError | None, now: float
) -> apps_pb2.ReplicaSetStatus:
    """replicas = active pods; fullyLabeled = those carrying every template label; ready;
    available (ready for minReadySeconds); a ReplicaFailure condition while creating or
    deleting fails."""
    status = apps_pb2.ReplicaSetStatus()
    status.CopyFrom(rs.status)
    template_labels = Selector.from_set(rs.spec.template.metadata.labels)
    status.replicas = len(pods)
    status.fully_labeled_replicas = sum(
        1 for p in pods if template_labels.matches(p.metadata.labels)
    )
    status.ready_replicas = sum(1 for p in pods if is_pod_ready(p))
    status.available_replicas = sum(
        1 for p in pods if is_pod_available(p, rs.spec.min_ready_seconds, now)
    )
    has_failure = any(c.type == "ReplicaFailure" for c in rs.status.conditions)
    if manage_error is not None and not has_failure:
        diff = len(pods) - rs.spec.replicas
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        cond = apps_pb2.ReplicaSetCondition(
            type="ReplicaFailure",
            status="True",
            reason=reason,
            message=str(manage_error),
            last_transition_time=rfc3339(now),
        )
        _set_rs_condition(status, cond)
    elif manage_error is None and has_failure:
        keep = [c for c in status.conditions if c.type != "ReplicaFailure"]
        del status.conditions[:]
        status.conditions.extend(keep)
    return status


class ReplicaSetController:
    """Keeps each ReplicaSet's active pods at spec.replicas (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ReplicaSetConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ReplicaSetConfig()
        self.clock = clock or RealClock()
        self.rs_informer = informers.get(REPLICA_SETS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = controller_queue(
            "replicaset",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.expectations = ControllerExpectations(self.clock, self.config.expectations_timeout)
        self.events = EventRecorder(
            client, "replicaset-controller", self.clock, enabled=self.config.record_events
        )
        self._rs_index = NamespaceIndex(self.rs_informer, apps_pb2.ReplicaSet)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        # RS key -> UIDs of deleted ReplicaSets of that name whose pods are still to go.
        self._dead_owners: dict[str, set[str]] = {}
        self.rs_informer.add_handlers(Handlers(self._add_rs, self._update_rs, self._delete_rs))
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Sync ReplicaSets with `workers` workers until `stop` is set."""
        try:
            if await wait_synced(stop, self.rs_informer.synced, self.pod_informer.synced):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="replicaset"
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    # ------------------------------------------------------------------ lookups

    def replica_sets_in(self, namespace: str) -> list[apps_pb2.ReplicaSet]:
        return self._rs_index.list(namespace)

    def pods_in(self, namespace: str) -> list[core_pb2.Pod]:
        return self._pod_index.list(namespace)

    def _resolve(self, namespace: str, ref: meta_pb2.OwnerReference) -> apps_pb2.ReplicaSet | None:
        if ref.kind != REPLICA_SETS.kind:
            return None
        rs = narrow_optional(
            self.rs_informer.store.get(f"{namespace}/{ref.name}"), apps_pb2.ReplicaSet
        )
        if rs is None or rs.metadata.uid != ref.uid:
            return None
        return rs

    def _replica_sets_selecting(self, pod: core_pb2.Pod) -> list[apps_pb2.ReplicaSet]:
        out = []
        for rs in self.replica_sets_in(pod.metadata.namespace):
            sel = selector_for(rs.spec.selector)
            if sel is None or sel.is_empty() or not sel.matches(pod.metadata.labels):
                continue
            out.append(rs)
        return out

    def _related_pods(self, rs: apps_pb2.ReplicaSet) -> list[core_pb2.Pod]:
        """Pods selected by every ReplicaSet with the same controller (getIndirectlyRelatedPods)."""
        ref = controller_of(rs)
        if ref is None:
            return []
        seen: set[str] = set()
        out: list[core_pb2.Pod] = []
        pods = self.pods_in(rs.metadata.namespace)
        for other in self.replica_sets_in(rs.metadata.namespace):
            other_ref = controller_of(other)
            if other_ref is None or other_ref.uid != ref.uid:
                continue
            sel = selector_for(other.spec.selector)
            if sel is None:
                continue
            for p in pods:
                if p.metadata.uid not in seen and sel.matches(p.metadata.labels):
                    seen.add(p.metadata.uid)
                    out.append(p)
        return out

    # ------------------------------------------------------------------ event handlers

    def _add_rs(self, rs: Message) -> None:
        self.queue.add(object_key(rs))

    def _update_rs(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_rs(old)  # deleted and re-created between two looks
        self._add_rs(cur)

    def _delete_rs(self, rs: Message) -> None:
        key = object_key(rs)
        # A new ReplicaSet of the same name starts clean.
        self.expectations.delete(key)
        if self.config.cascade_delete:
            self._dead_owners.setdefault(key, set()).add(object_meta(rs).uid)
        self.queue.add(key)

    def _add_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        if pod.metadata.deletion_timestamp:
            # Seen for the first time already terminating (e.g. after a restart): that is
            # a deletion to observe, never a creation.
            self._pod_gone(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            rs = self._resolve(pod.metadata.namespace, ref)
            if rs is not None:
                rs_key = object_key(rs)
                self.expectations.creation_observed(rs_key)
                self.queue.add(rs_key)
            return
        # An orphan: whoever selects it may want to adopt it. No creation is observed.
        for rs in self._replica_sets_selecting(pod):
            self.queue.add(object_key(rs))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """The pod updates `_update_pod` acts on: every update of a pod with an owner
        (its ReplicaSet counts its replicas' states), a label change of an orphan
        (whoever selects it may adopt it)."""
        return bool(
            object_meta(old).owner_references
            or object_meta(new).owner_references
            or object_meta(old).labels != object_meta(new).labels
        )

    def _update_pod(self, old_obj: Message, cur_obj: Message) -> None:
        old = narrow(old_obj, core_pb2.Pod)
        cur = narrow(cur_obj, core_pb2.Pod)
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        labels_changed = dict(cur.metadata.labels) != dict(old.metadata.labels)
        if cur.metadata.deletion_timestamp:
            # Graceful deletion began: replace the pod now, not when the kubelet is done.
            self._pod_gone(cur)
            if labels_changed:
                self._pod_gone(old)
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            prev = self._resolve(old.metadata.namespace, old_ref)
            if prev is not None:
                self.queue.add(object_key(prev))
        if cur_ref is not None:
            rs = self._resolve(cur.metadata.namespace, cur_ref)
            if rs is None:
                return
            self.queue.add(object_key(rs))
            if not is_pod_ready(old) and is_pod_ready(cur) and rs.spec.min_ready_seconds > 0:
                # Available only minReadySeconds later; one extra second against skew.
                self.queue.add_after(object_key(rs), rs.spec.min_ready_seconds + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self._replica_sets_selecting(cur):
                self.queue.add(object_key(rs))

    def _delete_pod(self, obj: Message) -> None:
        self._pod_gone(obj)  # type: ignore[arg-type]

    def _pod_gone(self, pod: core_pb2.Pod) -> None:
        ref = controller_of(pod)
        if ref is None:
            return
        rs = self._resolve(pod.metadata.namespace, ref)
        if rs is None:
            return
        rs_key = object_key(rs)
        self.expectations.deletion_observed(rs_key, object_key(pod))
        self.queue.add(rs_key)

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Reconcile one ReplicaSet; raises to be retried with backoff."""
        cached = self.rs_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            self.expectations.delete(key)
            return
        rs = narrow(cached, apps_pb2.ReplicaSet)
        needs_sync = self.expectations.satisfied(key)
        selector = selector_for(rs.spec.selector)
        if selector is None:
            log.warning("replicaset %s has an invalid selector; ignoring it", key)
            return
        active = [p for p in self.pods_in(rs.metadata.namespace) if is_pod_active(p)]
        pods: list[core_pb2.Pod] = await claim(  # type: ignore[assignment]
            self.client,
            PODS,
            rs,
            REPLICA_SETS,
            selector,
            active,
            recheck_owner(self.client, REPLICA_SETS, rs),
        )
        manage_error: ApiError | None = None
        if needs_sync and not rs.metadata.deletion_timestamp:
            try:
                await self._manage_replicas(key, pods, rs)
            except ApiError as e:
                manage_error = e
        status = calculate_status(rs, pods, manage_error, self.clock.now())
        updated = await self._update_status(rs, status)
        if (
            manage_error is None
            and updated.spec.min_ready_seconds > 0
            and updated.status.ready_replicas == updated.spec.replicas
            and updated.status.available_replicas != updated.spec.replicas
        ):
            # Last line of defence against clock skew: look again when they should be available.
            self.queue.add_after(key, float(updated.spec.min_ready_seconds))
        if manage_error is not None:
            raise manage_error

    async def _manage_replicas(
        self, key: str, pods: Sequence[core_pb2.Pod], rs: apps_pb2.ReplicaSet
    ) -> None:
        diff = len(pods) - rs.spec.replicas
        if diff < 0:
            await self._create_pods(key, rs, min(-diff, self.config.burst_replicas))
        elif diff > 0:
            await self._delete_pods(key, rs, pods, min(diff, self.config.burst_replicas))

    async def _create_pods(self, key: str, rs: apps_pb2.ReplicaSet, count: int) -> None:
        self.expectations.expect_creations(key, count)
        template = pod_from_template(rs)

        async def create(n: int) -> tuple[int, ApiError | None]:
            try:
                results = await self.client.batch_create([template] * n)
            except ApiError as e:
                self.events.event(rs, "Warning", "FailedCreate", f"Error creating: {e}")
                return 0, e
            ok, first = 0, None
            for r in results:
                if r.error is None and r.object is not None:
                    ok += 1
                    self.events.event(
                        rs,
                        "Normal",
                        "SuccessfulCreate",
                        f"Created pod: {object_meta(r.object).name}",
                    )
                elif r.error is not None and is_namespace_terminating(r.error):
                    ok += 1  # nothing more can be created; the namespace is going away
                elif r.error is not None:
                    self.events.event(rs, "Warning", "FailedCreate", f"Error creating: {r.error}")
                    first = first or r.error
            return ok, first

        made, err = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
        # Pods never created will never be observed: stop expecting them.
        for _ in range(count - made):
            self.expectations.creation_observed(key)
        if err is not None:
            raise err

    async def _delete_pods(
        self, key: str, rs: apps_pb2.ReplicaSet, pods: Sequence[core_pb2.Pod], count: int
    ) -> None:
        victims = pods
        if count < len(pods):
            victims = rank_for_deletion(pods, self._related_pods(rs), self.clock.now())[:count]
        self.expectations.expect_deletions(key, [object_key(p) for p in victims])

        async def delete(pod: core_pb2.Pod) -> ApiError | None:
            try:
                await self.client.delete(PODS, pod.metadata.name, pod.metadata.namespace)
            except ApiError as e:
                # This deletion will never be observed.
                self.expectations.deletion_observed(key, object_key(pod))
                if isinstance(e, NotFoundError):
                    return None
                self.events.event(rs, "Warning", "FailedDelete", f"Error deleting: {e}")
                return e
            self.events.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")
            return None

        errors = [e for e in await asyncio.gather(*(delete(p) for p in victims)) if e is not None]
        if errors:
            raise errors[0]

    async def _update_status(
        self, rs: apps_pb2.ReplicaSet, status: apps_pb2.ReplicaSetStatus
    ) -> apps_pb2.ReplicaSet:
        """Write `status` unless nothing changed; one retry on a fresh read."""
        old = rs.status
        if (
            old.replicas == status.replicas
            and old.fully_labeled_replicas == status.fully_labeled_replicas
            and old.ready_replicas == status.ready_replicas
            and old.available_replicas == status.available_replicas
            and rs.metadata.generation == old.observed_generation
            and list(old.conditions) == list(status.conditions)
        ):
            return rs
        status.observed_generation = rs.metadata.generation
        target = narrow(codec.clone(rs), apps_pb2.ReplicaSet)
        for attempt in range(2):
            target.status.CopyFrom(status)
            try:
                return await self.client.update_status(target)
            except ApiError:
                if attempt == 1:
                    raise
                target = await self.client.get(  # type: ignore[assignment]
                    REPLICA_SETS, rs.metadata.name, rs.metadata.namespace
                )
        raise AssertionError("unreachable")

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the pods that deleted ReplicaSets of this name controlled."""
        await cascade_dead_owners(
            self.client, self._dead_owners, key, current, ((PODS, self.pods_in),)
        )


__all__ = [
    "BURST_REPLICAS",
    "ReplicaSetConfig",
    "ReplicaSetController",
    "calculate_status",
    "pod_from_template",
]
