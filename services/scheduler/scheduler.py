"""The scheduler: informers feed the cache and the queue; one scheduling cycle at a time
picks a node; binding cycles run concurrently (the cycles: schedule_one.py, as upstream's
schedule_one.go beside scheduler.go).

    Scheduler(client, SchedulerOptions(...), clock=..., fencing=...)
      warm()   start the informers, wait until synced (the cache and the queue fill)
      lead()   schedule until `stop` is set (a scheduler leads once per term)
      close()  stop the informers
      run()    all three: one whole term

The loop starts from `on_started_leading(ctx)`-style `run(stop)` and returns when `stop`
is set; binds and every other write (DynamicResources' claim allocations among them) carry
the fencing token the leader-election layer provides (or none).

One pod never stops the loop (see schedule_one.py). The informer's handlers (informer.py)
and the cache (pod requests saturate, see framework/types.py) cost only their object, so a
bad pod never blinds the scheduler to the others.

In shared-state (Omega) mode (`SchedulerOptions.shared_state`, see omega.py) several
replicas schedule at once: a replica takes only its share of the pods, binds with
`check_allocation` instead of a fencing token, and a bind refused with AllocationConflict
(another replica filled the node first) is forgotten and requeued with backoff like any
bind error, and counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import secrets
from collections.abc import Callable, Iterable
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.machinery.kinds import BY_KIND
from services.client import Client, FencingSource, Handlers, Informer
from services.clock import Clock, RealClock
from services.lifecycle import Background
from services.scheduler import config as config_mod
from services.scheduler.cache import equivalence
from services.scheduler.cache.cache import Cache
from services.scheduler.cache.snapshot import Snapshot
from services.scheduler.failure_report import FailureReporter
from services.scheduler.framework.nominator import Nominator
from services.scheduler.framework.runtime import Framework
from services.scheduler.framework.types import ActionType, ClusterEvent
from services.scheduler.metrics import SchedulerMetrics
from services.scheduler.omega import OmegaStats
from services.scheduler.options import SchedulerOptions
from services.scheduler.queue.scheduling_queue import SchedulingQueue
from services.scheduler.schedule_one import ScheduleOne
from services.scheduler.trace import Attempt, TraceStore

log = logging.getLogger(__name__)

NODE_ADD = ClusterEvent("Node", ActionType.ADD, "NodeAdd")
ASSIGNED_POD_DELETE = ClusterEvent("Pod", ActionType.DELETE, "AssignedPodDelete")


def node_update_event(old: core_pb2.Node, new: core_pb2.Node) -> ClusterEvent:
    """Which node update this is, as upstream's nodeSchedulingPropertiesChange."""
    action = ActionType(0)
    if old.metadata.labels != new.metadata.labels:
        action |= ActionType.UPDATE_NODE_LABEL
    if (
        list(old.spec.taints) != list(new.spec.taints)
        or old.spec.unschedulable != new.spec.unschedulable
    ):
        action |= ActionType.UPDATE_NODE_TAINT
    if old.status.allocatable != new.status.allocatable:
        action |= ActionType.UPDATE_NODE_ALLOCATABLE
    if [(c.type, c.status) for c in old.status.conditions] != [
        (c.type, c.status) for c in new.status.conditions
    ]:
        action |= ActionType.UPDATE_NODE_CONDITION
    if old.metadata.annotations != new.metadata.annotations:
        action |= ActionType.UPDATE_NODE_ANNOTATION
    if old.status.declared_features != new.status.declared_features:
        action |= ActionType.UPDATE_NODE_DECLARED_FEATURE
    return ClusterEvent("Node", action, "NodeUpdate")


def skip_unscheduled_update(old: core_pb2.Pod, new: core_pb2.Pod) -> bool:
    """Whether an update of an unassigned pod is left out of the queue: the same
    resourceVersion (a replayed, identical object: requeueing it could schedule the pod
    twice, upstream's updatePodInSchedulingQueue, kubernetes#96071). Objects without a
    resourceVersion (built by hand, not stored) are never taken as identical.

    Upstream also skips updates of assumed pods, because its failure handler re-reads the
    pod from the informer before requeueing it. Here the queue keeps the update of a pod in
    flight instead (queue.update), and a failed bind requeues that newer object, so an
    assumed pod's update still reaches the queue."""
    rv = new.metadata.resource_version
    return bool(rv) and rv == old.metadata.resource_version


def merged_hints(
    profiles: Iterable[config_mod.Profile], frameworks: dict[str, Framework]
) -> dict[str, list[Any]]:
    """Plugin -> its queueing hints, for the one queue of all profiles. A plugin's
    registrations are taken from the first profile that runs it, and added again only from
    a profile whose args for it differ: profiles that configure a plugin alike (kubera's
    two default profiles share every default plugin) answer alike, and duplicates would
    only run each hint twice (upstream keeps one hint map per profile)."""
    hints: dict[str, list[Any]] = {}
    seen: dict[str, list[Any]] = {}
    for profile in profiles:
        for plugin, events in frameworks[profile.scheduler_name].events_to_register().items():
            args = profile.plugin_config.get(plugin)
            if any(args == other for other in seen.get(plugin, ())):
                continue
            seen.setdefault(plugin, []).append(args)
            hints.setdefault(plugin, []).extend(events)
    return hints


class _Handle:
    """What plugins get: the snapshot, the fenced Bind, waiting pods, the clock; and for
    DefaultPreemption the client, the nominator, the PDBs, the profile's framework and the
    scheduler's seeded RNG. One handle serves every profile."""

    def __init__(self, sched: Scheduler) -> None:
        self._sched = sched
        self._shared: dict[str, Any] = {}
        self.clock = sched.clock
        self.cluster_clock = sched.cluster_clock
        self.client = sched.client
        self.nominator = sched.nominator
        #: Shared-state (Omega) mode: claim allocations are checked against the devices'
        #: allocation records (DynamicResources' PreBind).
        self.shared_state = sched.shared_state is not None

    def shared(self, name: str, make: Callable[[], Any]) -> Any:
        """The one object under `name` for all profiles, made by the first plugin that asks:
        state every profile's instance must see alike (upstream's SharedDRAManager, which
        holds the claims in flight)."""
        if name not in self._shared:
            self._shared[name] = make()
        return self._shared[name]

    def framework_for(self, scheduler_name: str) -> Framework | None:
        return self._sched.frameworks.get(scheduler_name)

    def pdbs(self) -> list[Any]:
        return list(self._sched.pdbs.store.values()) if self._sched.pdbs is not None else []

    def rand_int(self, n: int) -> int:
        return self._sched.rng.randrange(n)

    def reject_preempted_waiting_pod(self, uid: str) -> bool:
        return any(
            fwk.reject_waiting_pod(uid, "DefaultPreemption", "preempted")
            for fwk in self._sched.frameworks.values()
        )

    def snapshot(self) -> Snapshot:
        return self._sched.snapshot

    def informer(self, kind: str) -> Informer:
        """The scheduler's informer of `kind` (a Kind name: "ResourceClaim", "PodGroup"),
        made on first call, which must come before warm() (from a plugin's factory). Its
        store is the plugin's lister; the scheduler turns every add, update and delete into
        the cluster event (kind, ADD | UPDATE | DELETE) for the queue's hints. A plugin may
        add its own handlers."""
        return self._sched.kind_informer(kind)

    def pod_informer(self) -> Informer:
        """The scheduler's own Pod informer (its store is every pod): a plugin that keeps
        an index of pods adds its handlers here, from its factory; they run before the
        scheduler's own, so the index is current when the queue sees the pod."""
        return self._sched.pods

    def activate(self, pods: Iterable[core_pb2.Pod]) -> None:
        """Upstream Handle.Activate: the queue tries these pods now (gated ones through
        PreEnqueue again); pods it does not hold are ignored."""
        self._sched.queue.activate(pods)

    async def bind(self, pod: core_pb2.Pod, node_name: str) -> None:
        sched = self._sched
        # This scheduler's first bind goes to the apiserver alone; the binds behind it
        # wait for its answer (whatever it is) and then flow freely. A new leader takes
        # over a backlog: sent together, its binds interleave in the apiserver and the
        # first is answered only with the last. Per-pod semantics are unchanged.
        gate = sched.first_bind_done
        first = not gate.is_set() and not sched.first_bind_sent
        if first:
            sched.first_bind_sent = True
        else:
            await gate.wait()
        shared = sched.shared_state is not None
        try:
            await sched.client.bind(
                pod.metadata.name,
                node_name,
                pod.metadata.namespace,
                uid=pod.metadata.uid,
                fencing=None if shared else sched.fencing(),
                check_allocation=shared,
            )
        finally:
            if first:
                gate.set()
        if not sched.first_bind.is_set():
            sched.first_bind_at = self.clock.now()
            sched.first_bind.set()

    def allow_waiting_pod(self, uid: str, plugin: str) -> None:
        for fwk in self._sched.frameworks.values():
            fwk.allow_waiting_pod(uid, plugin)

    def reject_waiting_pod(self, uid: str, plugin: str, reason: str) -> None:
        for fwk in self._sched.frameworks.values():
            fwk.reject_waiting_pod(uid, plugin, reason)


class Scheduler(Background):
    """kube-scheduler for one term: informers -> cache and queue -> ScheduleOne's cycles.
    `config` is the KubeSchedulerConfiguration in use, `options` what it was built from.
    Run it with `start()` / `stop()`, or `await run(stop)` (one leader term)."""

    _background_name = "scheduler"

    def __init__(
        self,
        client: Client,
        options: SchedulerOptions,
        *,
        clock: Clock | None = None,
        cluster_clock: Clock | None = None,
        fencing: FencingSource | None = None,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        """`options`: the configuration and settings (options.py). `clock`: real time by
        default; it paces the scheduler (queue backoff and flushes, the assume TTL, Permit
        waits) and times its metrics. `cluster_clock` (default `clock`): the time written
        to and compared with objects (PodScheduled and DisruptionTarget conditions, Events,
        PDBs' disruptedPods), the cluster's simulated time under the time scale
        (services/clock.py says why the two differ). `fencing`: the leader's fencing-token
        source every write carries (none: unfenced): its binds, and the claim allocations
        of DynamicResources' PreBind, which a client that does not fence yet is made to
        (`Client.fenced`); a shared-state scheduler's binds are checked against the nodes' allocation records
        instead, so it takes no `fencing`. `metrics`: where to record (default: a registry of
        this scheduler's own); a replica passes one for all its terms."""
        shared_state = options.shared_state
        if shared_state is not None and fencing is not None:
            raise ValueError(
                "a shared-state scheduler binds with check_allocation, not a fencing token: "
                "pass shared_state or fencing, not both"
            )
        if fencing is not None and getattr(client, "fencing", ()) is None:
            client = client.fenced(fencing)
        self.client = client
        self.options = options
        self.config = options.component_config or config_mod.default_config()
        self.clock = clock or RealClock()
        self.cluster_clock = cluster_clock or self.clock
        self.fencing: FencingSource = fencing or (lambda: None)
        self.rng = random.Random(options.seed)
        self.identity = options.identity or f"kubera-scheduler-{secrets.token_hex(3)}"
        self.metrics = metrics if metrics is not None else SchedulerMetrics()
        self.shared_state = shared_state
        #: Omega's measures; only in shared-state mode.
        self.omega: OmegaStats | None = (
            OmegaStats(self.metrics.shared_state()) if shared_state is not None else None
        )
        self.traces = TraceStore()
        self.equivalence = equivalence.EquivalenceCache() if options.reuse_filter_results else None
        self.cache = Cache(clock=self.clock)
        self.snapshot = Snapshot()
        self.nominator = Nominator()
        self.pdbs: Informer | None = None
        #: Informers plugins asked for through the handle (Handle.informer), by kind.
        self.kind_informers: dict[str, Informer] = {}
        #: Set by warm(); empty while plugins are built (they may ask for informers then).
        self._informer_tasks: list[asyncio.Task[None]] = []
        #: Made before the plugins: a plugin may add handlers to it (Handle.pod_informer).
        self.pods = Informer(client, BY_KIND["Pod"], clock=self.clock)
        handle = _Handle(self)
        registry = self.config.registry()
        self.frameworks: dict[str, Framework] = {
            p.scheduler_name: Framework(p, registry=registry, handle=handle, metrics=self.metrics)
            for p in self.config.profiles
        }
        first = next(iter(self.frameworks.values()))
        hints = merged_hints(self.config.profiles, self.frameworks)
        self.queue = SchedulingQueue(
            less=first.queue_sort_less,
            pre_enqueue={name: fwk.pre_enqueue_plugins for name, fwk in self.frameworks.items()},
            hints=hints,
            clock=self.clock,
            initial_backoff=self.config.pod_initial_backoff_seconds,
            max_backoff=self.config.pod_max_backoff_seconds,
            metrics=self.metrics,
            namespace_labels=self.snapshot.namespace_labels,
        )
        self.nodes = Informer(client, BY_KIND["Node"], clock=self.clock)
        self.namespaces = Informer(client, BY_KIND["Namespace"], clock=self.clock)
        # PostFilter plugins preempt and read PDBs; Coscheduling's (gangs) does not.
        if any(
            set(fwk.list_plugins()["postFilter"]) - {"Coscheduling"}
            for fwk in self.frameworks.values()
        ):
            self.pdbs = Informer(client, BY_KIND["PodDisruptionBudget"], clock=self.clock)
        self.pods.add_handlers(Handlers(self._pod_added, self._pod_updated, self._pod_deleted))
        self.nodes.add_handlers(Handlers(self._node_added, self._node_updated, self._node_deleted))
        self.namespaces.add_handlers(
            Handlers(self._ns_changed, lambda old, new: self._ns_changed(new), self._ns_deleted)
        )
        self.cycles = ScheduleOne(
            clock=self.clock,
            frameworks=self.frameworks,
            cache=self.cache,
            snapshot=self.snapshot,
            queue=self.queue,
            percentage_of_nodes_to_score=self.config.percentage_of_nodes_to_score,
            rng=self.rng,
            reporter=FailureReporter(
                client, self.clock, self.identity, cluster_clock=self.cluster_clock
            ),
            metrics=self.metrics,
            traces=self.traces,
            equivalence_cache=self.equivalence,
            omega=self.omega,
            max_binding_tasks=options.max_binding_tasks,
            nominator=self.nominator,
            gates=options.feature_gates,
        )
        #: Set when this scheduler's first bind was accepted, at `first_bind_at`
        #: (clock.now()): a leader's term measured from the kill of its predecessor to
        #: its first bind (kubera bench failover).
        self.first_bind = asyncio.Event()
        self.first_bind_at = 0.0
        #: The first bind call was made / has been answered (see _Handle.bind).
        self.first_bind_sent = False
        self.first_bind_done = asyncio.Event()

    @property
    def scheduled(self) -> int:
        """Pods this scheduler has bound."""
        return self.cycles.scheduled

    @property
    def binding_cycles(self) -> int:
        """Binding cycles in flight (their binds may still be on the wire)."""
        return self.cycles.binding_cycles

    # ------------------------------------------------------------ informers

    def _responsible(self, pod: core_pb2.Pod) -> bool:
        if pod.spec.scheduler_name not in self.frameworks:
            return False
        return self.shared_state is None or self.shared_state.owns(pod.metadata.uid)

    def _pod_added(self, pod: core_pb2.Pod) -> None:
        self.nominator.pod_seen(None, pod)
        if pod.spec.node_name:
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
        elif self._responsible(pod) and not pod.metadata.deletion_timestamp:
            # A gang member completing its gated siblings' quorum wakes them through
            # Handle.activate (Coscheduling's member counters), not a move per pod.
            self.queue.add(pod)

    def _pod_updated(self, old: core_pb2.Pod, new: core_pb2.Pod) -> None:
        # An assumed pod already holds its node in the cache; the nominatedNodeName its
        # binding cycle wrote (NominatedNodeNameForExpectation) must not count it again
        # (upstream leaves assumed pods' updates out of the queue and its nominator).
        if new.spec.node_name or not self.cache.is_assumed(new):
            self.nominator.pod_seen(old, new)
        if new.spec.node_name:
            if old.spec.node_name:
                self.cache.update_pod(old, new)
                self.queue.assigned_pod_updated(old, new)
            else:  # bound since we last saw it (by us or by someone else)
                self.queue.delete(old)
                self.cache.add_pod(new)
                self.queue.assigned_pod_added(new)
        elif self._responsible(new):
            if new.metadata.deletion_timestamp:
                self.queue.delete(new)
            elif not skip_unscheduled_update(old, new):
                self.queue.update(old, new)

    def _pod_deleted(self, pod: core_pb2.Pod) -> None:
        self.cycles.forget(f"{pod.metadata.namespace}/{pod.metadata.name}")
        self.nominator.delete(pod.metadata.uid)
        if pod.spec.node_name:
            self.cache.remove_pod(pod)
            self.queue.move_all_to_active_or_backoff(ASSIGNED_POD_DELETE, pod, None)
        else:
            self.queue.delete(pod)
            for fwk in self.frameworks.values():
                fwk.reject_waiting_pod(pod.metadata.uid, "", "pod deleted")

    def _node_added(self, node: core_pb2.Node) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff(NODE_ADD, None, node)

    def _node_updated(self, old: core_pb2.Node, new: core_pb2.Node) -> None:
        self.cache.update_node(old, new)
        event = node_update_event(old, new)
        if event.action:
            self.queue.move_all_to_active_or_backoff(event, old, new)

    def _node_deleted(self, node: core_pb2.Node) -> None:
        self.cache.remove_node(node)

    def kind_informer(self, kind: str) -> Informer:
        """See _Handle.informer."""
        informer = self.kind_informers.get(kind)
        if informer is not None:
            return informer
        if self._informer_tasks:
            raise RuntimeError(f"informer for {kind} asked for after warm()")
        informer = Informer(self.client, BY_KIND[kind], clock=self.clock)

        def moved(action: ActionType) -> Callable[[Any, Any], None]:
            event = ClusterEvent(kind, action)
            return lambda old, new: self.queue.move_all_to_active_or_backoff(event, old, new)

        add, update, delete = (
            moved(ActionType.ADD),
            moved(ActionType.UPDATE),
            moved(ActionType.DELETE),
        )
        informer.add_handlers(
            Handlers(lambda obj: add(None, obj), update, lambda obj: delete(obj, None))
        )
        self.kind_informers[kind] = informer
        return informer

    def gated_attempt(self, key: str) -> Attempt | None:
        """For `kubera explain pod`: a pod held out of activeQ by a PreEnqueue plugin has no
        attempt to show, so say which plugin holds it and why (its PreEnqueue asked again:
        a pure check), as a "gated" attempt. None when the pod is not gated here."""
        qpi = self.queue.get(key)
        if qpi is None or not qpi.gating_plugin:
            return None
        fwk = self.frameworks.get(qpi.pod.spec.scheduler_name)
        plugin = next(
            (p for p in (fwk.pre_enqueue_plugins if fwk else ()) if p.name == qpi.gating_plugin),
            None,
        )
        why = plugin.pre_enqueue(qpi.pod).message if plugin is not None else ""
        return Attempt(
            pod=key,
            uid=qpi.pod_info.uid,
            profile=qpi.pod.spec.scheduler_name,
            cycle=0,
            time=qpi.timestamp,
            result="gated",
            message=f"{qpi.gating_plugin}: {why}" if why else qpi.gating_plugin,
        )

    def _ns_changed(self, ns: Any) -> None:
        self.snapshot.set_namespace_labels(ns.metadata.name, dict(ns.metadata.labels))

    def _ns_deleted(self, ns: Any) -> None:
        self.snapshot.remove_namespace(ns.metadata.name)

    # ---------------------------------------------------------------- run

    async def run(self, stop: asyncio.Event) -> None:
        """Warm up, schedule until `stop` is set, then close: one whole term."""
        try:
            await self.warm()
            await self.lead(stop)
        finally:
            await self.close()

    async def warm(self) -> None:
        """Start the informers and wait until they have synced: the cache and the queue
        fill, nothing is scheduled. A standby stays here until it leads. Idempotent."""
        if self._informer_tasks:
            return
        self._informer_tasks = [
            asyncio.create_task(self.namespaces.run(), name="informer-namespaces"),
            asyncio.create_task(self.nodes.run(), name="informer-nodes"),
        ]
        synced = [self.namespaces.synced.wait(), self.nodes.synced.wait()]
        if self.pdbs is not None:
            self._informer_tasks.append(asyncio.create_task(self.pdbs.run(), name="informer-pdbs"))
            synced.append(self.pdbs.synced.wait())
        for kind, informer in self.kind_informers.items():
            self._informer_tasks.append(
                asyncio.create_task(informer.run(), name=f"informer-{kind.lower()}")
            )
            synced.append(informer.synced.wait())
        await asyncio.gather(*synced)
        self._informer_tasks.append(asyncio.create_task(self.pods.run(), name="informer-pods"))
        await self.pods.synced.wait()

    async def lead(self, stop: asyncio.Event) -> None:
        """Schedule (after warm()) until `stop` is set; then stop the scheduling and the
        binding cycles. A scheduler leads once: after a term, close it and build a new one
        (kube-scheduler exits when it loses its lease, for the same reason: its queue and
        assumed pods belong to the old term)."""
        assert self._informer_tasks, "warm() first"
        flush = asyncio.create_task(self.queue.run(), name="queue-flush")
        loop = asyncio.create_task(self.cycles.loop(), name="schedule-loop")
        try:
            await stop.wait()
        finally:
            self.queue.close()
            loop.cancel()
            flush.cancel()
            for t in (loop, flush, *self.cycles.tasks()):
                t.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            # Its queued FailedScheduling events and conditions belong to this term.
            await self.cycles.reporter.close()

    async def close(self) -> None:
        """Stop the informers (after lead() returned, or instead of leading)."""
        self.queue.close()
        tasks, self._informer_tasks = self._informer_tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
