"""The DaemonSet controller (upstream pkg/controller/daemon): one daemon pod on every node
that should run it, placed by the default scheduler, and rolled out node by node. Its pure
rules (which nodes, the pod for a node, the plans, the status) are in daemonrules.py.

Which nodes (nodeShouldRunDaemonPod): the template's pod, with the tolerations the
controller adds (util.AddOrUpdateDaemonPodTolerations: not-ready and unreachable
NoExecute; disk-, memory-, pid-pressure and unschedulable NoSchedule; network-unavailable
NoSchedule for hostNetwork pods), must fit the node's name (spec.nodeName), its
nodeSelector and required node affinity, and tolerate every NoSchedule and NoExecute
taint. A pod whose node gains a NoSchedule taint it does not tolerate keeps running
(shouldContinueRunning); a NoExecute one it does not tolerate takes it away.

A pod is created without spec.nodeName: its required node affinity is replaced by the one
term `matchFields metadata.name In [<node>]` (ReplaceDaemonSetPodNodeNameNodeAffinity) and
the default scheduler binds it, so its resources, ports and priority go through the
scheduler's filters and preemption. Until it is bound, the affinity names its node
(GetTargetNodeName), so a pending pod counts as that node's.

One sync of a DaemonSet:

    history: the revision of the current template (created, or an equal older one bumped
      to the newest number) gives the hash every new pod is labelled with
      (controller-revision-hash)
      ─► claim the pods (adopt orphans that match; release ours that stopped matching),
         grouped by target node
      ─► expectations satisfied? manage: create a pod on each node that should run one
         and has none (slow start); delete pods on nodes that should not run them,
         Failed (outside its node's back-off) or Succeeded pods, and all but the oldest
         of several pods on one node
         (with maxSurge: an old and a new pod may run together until the new one is
         available)
      ─► RollingUpdate (updateStrategy): maxUnavailable and maxSurge out of the nodes that
         should run the pod (percentages round up; both 0 means maxUnavailable 1);
         without surge, old pods are deleted (an unavailable one always, the others while
         fewer than maxUnavailable nodes are unavailable); with surge, new pods are
         created beside old ones (at most maxSurge at once) and the old pod is deleted
         once the new one is available. OnDelete: nothing.
      ─► history beyond revisionHistoryLimit deleted (never a revision a pod uses)
      ─► status: desired, current, misscheduled, ready, available, updated, unavailable

A Failed daemon pod is deleted (event FailedDaemonPod) with a back-off per DaemonSet and
node (upstream's failedPodsBackoff: 1 s doubling to 15 min, on the controller's clock, so
the time scale applies): the kubelet may be rejecting it, and deleting and recreating it
at once would loop hot. Within the back-off the pod stays and the DaemonSet is synced
again when it ends. A Succeeded one is deleted at once (event SucceededDaemonPod).

Where kubera differs: a pod counts as updated by its hash alone (upstream also
accepts a matching pod-template-generation label, from before revisions existed);
the pods and revisions of a deleted DaemonSet are deleted by this controller when
`cascade_delete` (kubera's garbage collector may not run).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.meta import object_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock
from services.controllers.controller_utils import (
    SLOW_START_INITIAL_BATCH_SIZE,
    NamespaceIndex,
    cascade_dead_owners,
    controller_of,
    is_namespace_terminating,
    is_pod_ready,
    selector_for,
    slow_start_batch,
    wait_synced,
    write_status,
)
from services.controllers.daemonrules import (
    BACKOFF_GC_INTERVAL,
    BURST_REPLICAS,
    DAEMON_SETS,
    NODES,
    PODS,
    ROLLING_UPDATE,
    FailedPodsBackoff,
    Plan,
    add_daemon_tolerations,
    daemon_pod_tolerations,
    daemon_status,
    manage_plan,
    node_name_affinity,
    pod_template_for,
    rolling_update_plan,
    should_run,
    surge_and_unavailable,
    target_node,
    updated_pods_on_node,
)
from services.controllers.events import EventRecorder
from services.controllers.expectations import EXPECTATIONS_TIMEOUT, ControllerExpectations
from services.controllers.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    CONTROLLER_REVISIONS,
    bump_revision,
    create_revision,
    find_equal,
    new_revision,
    next_revision,
    sort_revisions,
)
from services.controllers.ref_manager import claim, recheck_owner
from services.controllers.workqueue import WorkQueue, controller_queue, run_workers

log = logging.getLogger(__name__)

# ============================================================================ controller


@dataclass
class DaemonSetConfig:
    """Settings of the DaemonSet controller."""

    workers: int = 2
    """DaemonSets synced at once (--concurrent-daemonset-syncs)."""

    burst_replicas: int = BURST_REPLICAS
    """Most pods one sync creates or deletes."""

    expectations_timeout: float = EXPECTATIONS_TIMEOUT
    """How long a sync waits for its own creations and deletions to be observed."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the pods and revisions of a deleted DaemonSet (kubera's GC may not run)."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / FailedCreate Events."""

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


class DaemonSetController:
    """Keeps one daemon pod on every eligible node (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DaemonSetConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DaemonSetConfig()
        self.clock = clock or RealClock()
        self.ds_informer = informers.get(DAEMON_SETS)
        self.pod_informer = informers.get(PODS)
        self.node_informer = informers.get(NODES)
        self.revision_informer = informers.get(CONTROLLER_REVISIONS)
        self.queue: WorkQueue[str] = controller_queue(
            "daemonset",
            clock=self.clock,
            base_delay=self.config.base_backoff,
            max_delay=self.config.max_backoff,
        )
        self.expectations = ControllerExpectations(self.clock, self.config.expectations_timeout)
        self.events = EventRecorder(
            client, "daemonset-controller", self.clock, enabled=self.config.record_events
        )
        self._ds_index = NamespaceIndex(self.ds_informer, apps_pb2.DaemonSet)
        self._pod_index = NamespaceIndex(self.pod_informer, core_pb2.Pod)
        self._revision_index = NamespaceIndex(self.revision_informer, apps_pb2.ControllerRevision)
        self._dead: dict[str, set[str]] = {}
        #: Per DaemonSet and node: how long a Failed pod waits before it is deleted.
        self.failed_pods_backoff = FailedPodsBackoff()
        self._backoff_gc_at = self.clock.now()
        self.ds_informer.add_handlers(
            Handlers(lambda o: self.queue.add(object_key(o)), self._update_ds, self._delete_ds)
        )
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))
        self.node_informer.add_handlers(
            Handlers(lambda _n: self._all(), self._update_node, lambda _n: self._all())
        )
        self.revision_informer.add_handlers(
            Handlers(self._owned, lambda _o, n: self._owned(n), self._owned)
        )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        try:
            if await wait_synced(
                stop,
                self.ds_informer.synced,
                self.pod_informer.synced,
                self.node_informer.synced,
                self.revision_informer.synced,
            ):
                await run_workers(
                    self.queue, self.sync, workers=self.config.workers, stop=stop, what="daemonset"
                )
        finally:
            self.queue.shutdown()
            await self.events.close()

    def _gc_backoff(self, now: float) -> None:
        """Forget expired failed-pod back-off entries, at most every BackoffGCInterval
        (upstream runs failedPodsBackoff.GC on that period; here syncs do it)."""
        if now - self._backoff_gc_at >= BACKOFF_GC_INTERVAL:
            self._backoff_gc_at = now
            self.failed_pods_backoff.gc(now)

    # ------------------------------------------------------------------ events

    def _all(self) -> None:
        for obj in list(self.ds_informer.store.values()):
            self.queue.add(object_key(obj))

    def _update_node(self, old: Message, cur: Message) -> None:
        """shouldIgnoreNodeUpdate: only labels, taints and readiness matter."""
        o, n = narrow(old, core_pb2.Node), narrow(cur, core_pb2.Node)
        if (
            o.metadata.labels != n.metadata.labels
            or list(o.spec.taints) != list(n.spec.taints)
            or o.spec.unschedulable != n.spec.unschedulable
        ):
            self._all()

    def _update_ds(self, old: Message, cur: Message) -> None:
        if object_meta(old).uid != object_meta(cur).uid:
            self._delete_ds(old)
        self.queue.add(object_key(cur))

    def _delete_ds(self, obj: Message) -> None:
        key = object_key(obj)
        self.expectations.delete(key)
        if self.config.cascade_delete:
            self._dead.setdefault(key, set()).add(object_meta(obj).uid)
        self.queue.add(key)

    def _owner_key(self, obj: Message) -> str | None:
        ref = controller_of(obj)
        if ref is None or ref.kind != DAEMON_SETS.kind:
            return None
        key = f"{object_meta(obj).namespace}/{ref.name}"
        cached = self.ds_informer.store.get(key)
        if cached is None or object_meta(cached).uid != ref.uid:
            return None
        return key

    def _owned(self, obj: Message) -> None:
        key = self._owner_key(obj)
        if key is not None:
            self.queue.add(key)

    def _orphan(self, pod: core_pb2.Pod) -> None:
        for ds in self._ds_index.list(pod.metadata.namespace):
            sel = selector_for(ds.spec.selector)
            if sel is not None and not sel.is_empty() and sel.matches(pod.metadata.labels):
                self.queue.add(object_key(ds))

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        return bool(
            object_meta(old).owner_references
            or object_meta(new).owner_references
            or object_meta(old).labels != object_meta(new).labels
        )

    def _add_pod(self, obj: Message) -> None:
        pod = narrow(obj, core_pb2.Pod)
        if pod.metadata.deletion_timestamp:
            self._pod_gone(pod)
            return
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.creation_observed(key)
            self.queue.add(key)
        elif controller_of(pod) is None:
            self._orphan(pod)

    def _update_pod(self, old_obj: Message, cur_obj: Message) -> None:
        old, cur = narrow(old_obj, core_pb2.Pod), narrow(cur_obj, core_pb2.Pod)
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        if cur.metadata.deletion_timestamp and not old.metadata.deletion_timestamp:
            self._pod_gone(cur)
            return
        if controller_of(old) != controller_of(cur):
            self._owned(old)
        key = self._owner_key(cur)
        if key is not None:
            self.queue.add(key)
            if not is_pod_ready(old) and is_pod_ready(cur):
                ds = self.ds_informer.store.get(key)
                min_ready = narrow(ds, apps_pb2.DaemonSet).spec.min_ready_seconds if ds else 0
                if min_ready > 0:
                    self.queue.add_after(key, min_ready + 1.0)
        elif controller_of(cur) is None:
            self._orphan(cur)

    def _delete_pod(self, obj: Message) -> None:
        self._pod_gone(narrow(obj, core_pb2.Pod))

    def _pod_gone(self, pod: core_pb2.Pod) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.expectations.deletion_observed(key, object_key(pod))
            self.queue.add(key)

    # ------------------------------------------------------------------ sync

    def _nodes(self) -> list[core_pb2.Node]:
        return [narrow(n, core_pb2.Node) for n in self.node_informer.store.values()]

    async def sync(self, key: str) -> None:
        cached = self.ds_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            self.expectations.delete(key)
            return
        ds = narrow(cached, apps_pb2.DaemonSet)
        selector = selector_for(ds.spec.selector)
        if selector is None or selector.is_empty():
            log.warning("daemonset %s has an invalid or empty selector; ignoring it", key)
            return
        if ds.metadata.deletion_timestamp:
            return
        ns = ds.metadata.namespace
        revisions: list[apps_pb2.ControllerRevision] = await claim(  # type: ignore[assignment]
            self.client,
            CONTROLLER_REVISIONS,
            ds,
            DAEMON_SETS,
            selector,
            self._revision_index.list(ns),
            recheck_owner(self.client, DAEMON_SETS, ds),
        )
        revisions = sort_revisions(revisions)
        cur = await self._history(ds, revisions)
        hash_ = cur.metadata.labels[CONTROLLER_REVISION_HASH_LABEL]
        pods: list[core_pb2.Pod] = await claim(  # type: ignore[assignment]
            self.client,
            PODS,
            ds,
            DAEMON_SETS,
            selector,
            self._pod_index.list(ns),
            recheck_owner(self.client, DAEMON_SETS, ds),
        )
        nodes = self._nodes()
        now = self.clock.now()
        self._gc_backoff(now)
        if self.expectations.satisfied(key):
            plan = manage_plan(ds, nodes, self._by_node(pods), hash_, now, self.failed_pods_backoff)
            for etype, reason, message in plan.events:
                self.events.event(ds, etype, reason, message)
            if plan.requeue_after:
                self.queue.add_after(key, plan.requeue_after)
            await self._sync_nodes(key, ds, plan, pods, hash_)
            if self.expectations.satisfied(key) and ds.spec.update_strategy.type == ROLLING_UPDATE:
                plan = rolling_update_plan(ds, nodes, self._by_node(pods), hash_, now)
                await self._sync_nodes(key, ds, plan, pods, hash_)
        await self._cleanup_history(ds, pods, revisions, cur)
        status = daemon_status(ds, nodes, self._by_node(pods), hash_, now)
        if status.collision_count != ds.status.collision_count:
            status.collision_count = ds.status.collision_count
        await self._write_status(ds, status)
        if ds.spec.min_ready_seconds > 0 and status.number_available < status.number_ready:
            self.queue.add_after(key, float(ds.spec.min_ready_seconds))

    @staticmethod
    def _by_node(pods: Sequence[core_pb2.Pod]) -> dict[str, list[core_pb2.Pod]]:
        """getNodesToDaemonPods: the pods by target node (pods with no target are skipped)."""
        out: dict[str, list[core_pb2.Pod]] = {}
        for p in pods:
            node = target_node(p)
            if node:
                out.setdefault(node, []).append(p)
        return out

    async def _history(
        self, ds: apps_pb2.DaemonSet, revisions: list[apps_pb2.ControllerRevision]
    ) -> apps_pb2.ControllerRevision:
        """constructHistory: the current template's revision, at the newest number."""
        collision = ds.status.collision_count if ds.status.HasField("collision_count") else 0
        number = next_revision(revisions)
        candidate = new_revision(ds, DAEMON_SETS, ds.spec.template, number, collision)
        equal = find_equal(revisions, candidate)
        if equal:
            newest = equal[-1]
            if revisions and newest is not revisions[-1]:
                newest = await bump_revision(self.client, newest, number)
            return newest
        created, used = await create_revision(
            self.client, ds, DAEMON_SETS, ds.spec.template, number, collision
        )
        if used != collision:
            ds.status.collision_count = used
        return created

    async def _sync_nodes(
        self,
        key: str,
        ds: apps_pb2.DaemonSet,
        plan: Plan,
        pods: Sequence[core_pb2.Pod],
        hash_: str,
    ) -> None:
        """syncNodes: delete the plan's pods, create a pod on each of its nodes (slow start);
        at most burst_replicas of each."""
        burst = self.config.burst_replicas
        create_on = list(plan.create_on[:burst])
        by_name = {p.metadata.name: p for p in pods}
        victims = [by_name[n] for n in dict.fromkeys(plan.delete) if n in by_name][:burst]
        self.expectations.expect_creations(key, len(create_on))
        self.expectations.expect_deletions(key, [object_key(p) for p in victims])
        errors: list[ApiError] = []

        async def delete(pod: core_pb2.Pod) -> None:
            try:
                await self.client.delete(
                    PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
                )
            except ApiError as e:
                self.expectations.deletion_observed(key, object_key(pod))
                if not isinstance(e, NotFoundError):
                    self.events.event(ds, "Warning", "FailedDelete", f"Error deleting: {e}")
                    errors.append(e)
                return
            self.events.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")

        await asyncio.gather(*(delete(p) for p in victims))
        template = pod_template_for(ds, hash_)
        queue = list(create_on)

        async def create(n: int) -> tuple[int, ApiError | None]:
            batch, queue[:n] = queue[:n], []
            made: list[core_pb2.Pod] = []
            for node in batch:
                pod = core_pb2.Pod()
                pod.CopyFrom(template)
                node_name_affinity(pod.spec, node)
                made.append(pod)
            results = await self.client.batch_create(made)
            ok, first = 0, None
            for r in results:
                if r.error is None and r.object is not None:
                    ok += 1
                    self.events.event(
                        ds,
                        "Normal",
                        "SuccessfulCreate",
                        f"Created pod: {object_meta(r.object).name}",
                    )
                elif r.error is not None and is_namespace_terminating(r.error):
                    ok += 1
                elif r.error is not None:
                    self.events.event(ds, "Warning", "FailedCreate", f"Error creating: {r.error}")
                    first = first or r.error
            return ok, first

        made, err = await slow_start_batch(len(create_on), SLOW_START_INITIAL_BATCH_SIZE, create)
        for _ in range(len(create_on) - made):
            self.expectations.creation_observed(key)
        if err is not None:
            errors.append(err)
        if errors:
            raise errors[0]

    async def _cleanup_history(
        self,
        ds: apps_pb2.DaemonSet,
        pods: Sequence[core_pb2.Pod],
        revisions: Sequence[apps_pb2.ControllerRevision],
        cur: apps_pb2.ControllerRevision,
    ) -> None:
        """cleanupHistory: delete the oldest revisions no pod uses, beyond the limit."""
        live = {p.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) for p in pods}
        old = [
            r
            for r in revisions
            if r.metadata.name != cur.metadata.name
            and r.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) not in live
        ]
        limit = ds.spec.revision_history_limit if ds.spec.HasField("revision_history_limit") else 10
        for r in old[: max(0, len(old) - limit)]:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(
                    CONTROLLER_REVISIONS, r.metadata.name, r.metadata.namespace
                )

    async def _write_status(self, ds: apps_pb2.DaemonSet, status: apps_pb2.DaemonSetStatus) -> None:
        await write_status(self.client, DAEMON_SETS, ds, status)

    async def _cascade(self, key: str, current: Message | None) -> None:
        await cascade_dead_owners(
            self.client,
            self._dead,
            key,
            current,
            ((PODS, self._pod_index.list), (CONTROLLER_REVISIONS, self._revision_index.list)),
        )


__all__ = [
    "DaemonSetConfig",
    "DaemonSetController",
    "Plan",
    "add_daemon_tolerations",
    "daemon_pod_tolerations",
    "daemon_status",
    "manage_plan",
    "node_name_affinity",
    "pod_template_for",
    "rolling_update_plan",
    "should_run",
    "surge_and_unavailable",
    "target_node",
    "updated_pods_on_node",
]
