"""Node lifecycle: notice the nodes that stopped reporting, say so in their status, and
taint them, so that the scheduler keeps new pods away and the taint eviction controller
moves the old ones.

kube-controller-manager's node-lifecycle-controller (pkg/controller/nodelifecycle), as
three loops over informer state:

  monitor_node_health, every node_monitor_period
      A node's health signals are its Lease (kube-node-lease/<node>, spec.renewTime) and
      its Ready condition's lastHeartbeatTime. Per node the controller keeps the time *it*
      last saw either one change (`NodeHealth.probe`, on the injected clock: no trust in
      the kubelet's clock). Once probe + grace has passed, Ready, MemoryPressure,
      DiskPressure and PIDPressure become Unknown, "NodeStatusUnknown", "Kubelet stopped
      posting node status." Then, by the Ready status seen *before* this pass:
          False   → queue the node for not-ready:NoExecute (swapped at once for unreachable)
          Unknown → queue the node for unreachable:NoExecute (swapped at once for not-ready)
          True    → remove both NoExecute taints and drop the node from the queue
      Ready leaving True also marks the node's pods Ready=False. Last, zone states
      (`handle_disruption`) set how fast each zone's queue may taint.
  do_no_execute_tainting_pass, whenever a zone's queue has a node due and a token
      Each zone has its own RateLimitedTimedQueue (a token bucket of burst 1): the rate
      limit is on adding NoExecute taints; the taint eviction controller evicts at once.
  do_no_schedule_tainting_pass, on every node event ("taint nodes by condition")
      Ready False / Unknown, MemoryPressure, DiskPressure, PIDPressure and
      NetworkUnavailable True, and spec.unschedulable, each have a NoSchedule taint, added
      and removed as they change; not rate limited.

The parts, each owning its state and taking only what it needs (none imports this
module): config.py, the flags; zones.py, `Zones` (zone states and each zone's tainting
queue, and the rates those allow); ratelimit.py, the token-bucket queue each zone's
tainting goes through; health.py, `HealthTracker` (when a node counts as silent, and the
record of its signs of life); taints.py, conditions, taints and the one way taints are
written. This module wires them to the informers and runs the loops.

The monitor pass and the tainting pass never interleave (one lock), so tainting always
runs against the zone rates its last monitor pass decided.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.helpers.events import new_event
from services.api.helpers.taints import NO_SCHEDULE
from services.api.helpers.wellknown import LABEL_EXCLUDE_DISRUPTION, TAINT_UNSCHEDULABLE
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional, object_meta
from services.api.machinery.meta import pod_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, rfc3339
from services.controllers.controller_utils import PodsByNode, run_periodically, wait_any
from services.controllers.events import write_event
from services.controllers.nodelifecycle.config import NodeLifecycleConfig
from services.controllers.nodelifecycle.health import (
    NODE_LEASE_NAMESPACE,
    Checked,
    HealthTracker,
)
from services.controllers.nodelifecycle.ratelimit import TimedValue
from services.controllers.nodelifecycle.taints import (
    CONDITION_TAINT_KEYS,
    FALSE,
    NOT_READY_NO_EXECUTE,
    READY,
    TRUE,
    UNKNOWN,
    UNREACHABLE_NO_EXECUTE,
    condition_taints,
    get_condition,
    has_taint,
    same_taint,
    swap_taints,
)
from services.controllers.nodelifecycle.zones import Zones, ZoneState, zone_key
from services.controllers.workqueue import WorkQueue, run_workers

log = logging.getLogger(__name__)

NODES, LEASES, PODS = BY_KIND["Node"], BY_KIND["Lease"], BY_KIND["Pod"]
COMPONENT = "node-controller"

#: Pod workers that mark pods bound to a not-Ready node (upstream podUpdateWorkerSize).
_POD_UPDATE_WORKERS = 4
#: Retry of a node that cannot be tainted for want of a Ready condition (upstream 50 ms).
_NO_READY_CONDITION_RETRY = 0.05


class NodeLifecycleController:
    """Marks silent nodes Unknown, taints nodes by condition, and rate-limits NoExecute
    tainting per zone."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: NodeLifecycleConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or NodeLifecycleConfig()
        self.clock = clock or RealClock()
        self.nodes = informers.get(NODES)
        self.leases = informers.get(LEASES, namespace=NODE_LEASE_NAMESPACE)
        self.pods = informers.get(PODS)
        self.pods_by_node = PodsByNode(self.pods)
        self.pods.add_handlers(self.pods_by_node.handlers())
        self.pods.add_handlers(
            Handlers(on_add=lambda p: self._pod_updated(None, p), on_update=self._pod_updated)
        )
        self.node_queue: WorkQueue[str] = WorkQueue(
            clock=self.clock, name="node_lifecycle_controller"
        )
        self.pod_queue: WorkQueue[str] = WorkQueue(
            clock=self.clock, name="node_lifecycle_controller_pods"
        )
        self.nodes.add_handlers(
            Handlers(
                on_add=lambda n: self.node_queue.add(object_meta(n).name),
                on_update=lambda _old, n: self.node_queue.add(object_meta(n).name),
                on_delete=lambda n: self._nodes_to_retry.discard(object_meta(n).name),
            )
        )
        self.known_nodes: dict[str, core_pb2.Node] = {}
        self.health = HealthTracker(client, self.clock, self.leases, self.config)
        self.zones = Zones(self.config, self.clock)
        self._nodes_to_retry: set[str] = set()
        #: Held by the monitor pass and the tainting pass: they never interleave.
        self._lock = asyncio.Lock()
        self._tainting_wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """The pod updates this controller acts on (the pods-by-node index and the pod
        queue): a new nodeName."""
        return PodsByNode.wants_update(old, new)

    @property
    def zone_states(self) -> dict[str, ZoneState]:
        """Each zone's state (owned by `zones`)."""
        return self.zones.states

    # ----------------------------------------------------------- running

    async def run(self, stop: asyncio.Event) -> None:
        """Run the monitor loop, the NoExecute tainting loop and the NoSchedule and pod
        workers until `stop` is set. A loop that fails (a bug) stops the others and its
        exception comes out here."""
        loops = [
            self._monitor_loop(stop),
            self._tainting_loop(stop),
            self._node_workers(stop),
            self._pod_workers(stop),
        ]
        tasks = [asyncio.create_task(c) for c in loops]
        stopper = asyncio.create_task(stop.wait())
        try:
            done, _ = await asyncio.wait([*tasks, stopper], return_when=asyncio.FIRST_COMPLETED)
            for t in done:
                if t is not stopper and not t.cancelled() and t.exception() is not None:
                    raise t.exception()  # type: ignore[misc]
        finally:
            everything = [*tasks, stopper, *self._tasks]
            for t in everything:
                t.cancel()
            await asyncio.gather(*everything, return_exceptions=True)

    async def _monitor_loop(self, stop: asyncio.Event) -> None:
        await run_periodically(
            self.monitor_node_health,
            clock=self.clock,
            period=self.config.node_monitor_period,
            stop=stop,
            what="node lifecycle: a node health pass",
        )

    async def _tainting_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._tainting_wake.clear()
            try:
                await self.do_no_execute_tainting_pass()
            except Exception:  # noqa: BLE001 - a bug in one pass must not end tainting
                log.exception("node lifecycle: a NoExecute tainting pass failed")
            await wait_any(self.clock, self.zones.next_ready_in(), stop, self._tainting_wake)

    # Workers are cancelled, not shut down, at stop (their `finally` hands the key back),
    # so the queues still work if the controller runs again.

    async def _node_workers(self, stop: asyncio.Event) -> None:
        # An API error is not retried here (as upstream: the next node update brings the
        # node back); anything else is a bug with this node, retried with backoff.
        await run_workers(
            self.node_queue,
            self.do_no_schedule_tainting_pass,
            workers=self.config.node_update_workers,
            stop=stop,
            what="node lifecycle: NoSchedule tainting of node",
            retry=lambda _name, e: not isinstance(e, ApiError),
            shutdown=False,
        )

    async def _pod_workers(self, stop: asyncio.Event) -> None:
        await run_workers(
            self.pod_queue,
            self._process_pod,
            workers=_POD_UPDATE_WORKERS,
            stop=stop,
            what="node lifecycle: pod",
            shutdown=False,
        )

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------- taint nodes by condition

    async def do_no_schedule_tainting_pass(self, name: str) -> None:
        """Make the node's condition NoSchedule taints match its conditions."""
        node = narrow_optional(self.nodes.store.get(name), core_pb2.Node)
        if node is None:
            return
        wanted = condition_taints(node)
        have = [
            t
            for t in node.spec.taints
            if t.effect == NO_SCHEDULE
            and (t.key == TAINT_UNSCHEDULABLE or t.key in CONDITION_TAINT_KEYS)
        ]
        to_add = [t for t in wanted if not any(same_taint(t, h) for h in have)]
        to_remove = [h for h in have if not any(same_taint(h, t) for t in wanted)]
        if (to_add or to_remove) and not await self._swap_taints(node, to_add, to_remove):
            log.warning("node lifecycle: could not update NoSchedule taints of %s", name)

    # ----------------------------------------------------------- NoExecute tainting

    async def do_no_execute_tainting_pass(self) -> None:
        """Add the NoExecute taints the zones' queues and rates allow now."""
        async with self._lock:
            for queue in self.zones.queues():
                await queue.process(self._taint_one)

    async def _taint_one(self, tv: TimedValue) -> tuple[bool, float]:
        node = narrow_optional(self.nodes.store.get(tv.value), core_pb2.Node)
        if node is None:
            return True, 0.0
        ready = get_condition(node, READY)
        if ready is None:
            return False, _NO_READY_CONDITION_RETRY
        # not-ready and unreachable mirror Ready False / Unknown: never both.
        if ready.status == FALSE:
            add, opposite = NOT_READY_NO_EXECUTE, UNREACHABLE_NO_EXECUTE
        elif ready.status == UNKNOWN:
            add, opposite = UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE
        else:
            return True, 0.0  # Ready again while it waited
        return await self._swap_taints(node, [add], [opposite]), 0.0

    # ----------------------------------------------------------- node health

    async def monitor_node_health(self) -> None:
        """One pass over every node: status, taint queueing, zone states."""
        async with self._lock:
            await self._monitor_node_health()
        self._tainting_wake.set()

    async def _monitor_node_health(self) -> None:
        nodes: list[core_pb2.Node] = list(self.nodes.store.values())  # type: ignore[arg-type]
        names = {n.metadata.name for n in nodes}
        for node in nodes:
            if node.metadata.name in self.known_nodes:
                if not self.zones.knows(node):
                    self.zones.add(node)
                continue
            log.info("node lifecycle: observed a new node %s", node.metadata.name)
            self.known_nodes[node.metadata.name] = node
            self.zones.add(node)
            await self.mark_node_as_reachable(node)
        for name in [n for n in self.known_nodes if n not in names]:
            log.info("node lifecycle: observed the deletion of node %s", name)
            del self.known_nodes[name]
            self.health.forget(name)
            self._nodes_to_retry.discard(name)
            self.zones.remove_node(name)

        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]] = {}
        workers = asyncio.Semaphore(self.config.node_update_workers)

        async def one(node: core_pb2.Node, checked: Checked) -> None:
            async with workers:
                try:
                    await self._update_node(node, zone_conditions, checked)
                except Exception:  # noqa: BLE001 - one node's failure costs only that node
                    log.exception(
                        "node lifecycle: updating the health of node %s failed",
                        node.metadata.name,
                    )

        # Most nodes are healthy and stay so: settled here, synchronously; a task each
        # only for the others (a write, taints, pods to mark).
        slow = [(n, c) for n in nodes if (c := self._update_healthy_node(n, zone_conditions))]
        await asyncio.gather(*(one(n, c) for n, c in slow))
        await self.zones.handle_disruption(
            zone_conditions, nodes, health=self.health, mark_reachable=self.mark_node_as_reachable
        )

    def _update_healthy_node(
        self,
        cached: core_pb2.Node,
        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]],
    ) -> Checked | None:
        """`_update_node` for a node that was Ready and still is, with no NoExecute taint
        and no pods left to mark: everything it would do, done without a copy or a task.
        None when so; otherwise the health check, for `_update_node` to go on from."""
        checked = self.health.check(cached, copy_observed=False)
        observed, current = checked.observed, checked.current
        name = cached.metadata.name
        if (
            checked.silent
            or current is None
            or observed.status != TRUE
            or current.status != TRUE
            or name in self._nodes_to_retry
            or has_taint(cached, UNREACHABLE_NO_EXECUTE)
            or has_taint(cached, NOT_READY_NO_EXECUTE)
        ):
            return checked
        if LABEL_EXCLUDE_DISRUPTION not in cached.metadata.labels:
            zone_conditions.setdefault(zone_key(cached), []).append(current)
        # mark_node_as_reachable with no taint to remove
        if self.zones.add(cached).remove(name):
            log.info("node lifecycle: node %s is healthy again; NoExecute taints removed", name)
        return None

    async def _update_node(
        self,
        cached: core_pb2.Node,
        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]],
        checked: Checked | None = None,
    ) -> None:
        name = cached.metadata.name
        node = narrow(codec.clone(cached), core_pb2.Node)
        attempt = 0
        while True:
            try:
                if checked is not None:  # the first attempt, checked already
                    observed, current = await self.health.finish(node, checked)
                else:
                    observed, current = await self.health.try_update(node)
                break
            except ApiError as e:
                checked = None
                attempt += 1
                if attempt == self.config.status_update_retries:
                    log.warning("node lifecycle: cannot update health of %s: %s", name, e)
                    return
            await self.clock.sleep(self.config.retry_delay)
            try:
                node = await self.client.get(NODES, name)  # type: ignore[assignment]
            except ApiError as e:
                log.info("node lifecycle: cannot get node %s (deleted?): %s", name, e)
                return

        if LABEL_EXCLUDE_DISRUPTION not in node.metadata.labels:
            zone_conditions.setdefault(zone_key(node), []).append(current)
        if current is None:
            self._nodes_to_retry.discard(name)
            return
        pods = self.pods_by_node.pods_on(name)
        await self._process_taint_based_eviction(node, observed)
        needs_retry = name in self._nodes_to_retry
        if current.status != TRUE and observed.status == TRUE:
            if self.config.emit_events:
                ev = new_event(
                    self.clock.now(),
                    kind="Node",
                    name=name,
                    uid=node.metadata.uid,
                    reason="NodeNotReady",
                    message=f"Node {name} status is now: NodeNotReady",
                    component=COMPONENT,
                )
                self._spawn(write_event(self.client, ev))
            if not await self._mark_pods_not_ready(pods, name):
                self._nodes_to_retry.add(name)
                return
        elif (
            needs_retry
            and observed.status != TRUE
            and not await self._mark_pods_not_ready(pods, name)
        ):
            return
        self._nodes_to_retry.discard(name)

    async def _process_taint_based_eviction(
        self, node: core_pb2.Node, observed: core_pb2.NodeCondition
    ) -> None:
        name = node.metadata.name
        if observed.status == FALSE:
            if has_taint(node, UNREACHABLE_NO_EXECUTE):
                if not await self._swap_taints(
                    node, [NOT_READY_NO_EXECUTE], [UNREACHABLE_NO_EXECUTE]
                ):
                    log.warning(
                        "node lifecycle: could not swap unreachable for not-ready on %s", name
                    )
            elif self._mark_node_for_tainting(node, FALSE):
                log.info("node lifecycle: node %s is NotReady; queued for tainting", name)
        elif observed.status == UNKNOWN:
            if has_taint(node, NOT_READY_NO_EXECUTE):
                if not await self._swap_taints(
                    node, [UNREACHABLE_NO_EXECUTE], [NOT_READY_NO_EXECUTE]
                ):
                    log.warning(
                        "node lifecycle: could not swap not-ready for unreachable on %s", name
                    )
            elif self._mark_node_for_tainting(node, UNKNOWN):
                log.info("node lifecycle: node %s is unresponsive; queued for tainting", name)
        elif observed.status == TRUE and await self.mark_node_as_reachable(node):
            log.info("node lifecycle: node %s is healthy again; NoExecute taints removed", name)

    def _mark_node_for_tainting(self, node: core_pb2.Node, status: str) -> bool:
        queue = self.zones.add(node)
        name = node.metadata.name
        # Processed before but its taint is gone since (removed by hand?): queue it again.
        if status == FALSE and not has_taint(node, NOT_READY_NO_EXECUTE):
            queue.remove(name)
        if status == UNKNOWN and not has_taint(node, UNREACHABLE_NO_EXECUTE):
            queue.remove(name)
        return queue.add(name, node.metadata.uid)

    async def mark_node_as_reachable(self, node: core_pb2.Node) -> bool:
        """Remove both NoExecute taints and forget the node in its queue; whether it was
        queued."""
        remove = [t for t in (UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE) if has_taint(node, t)]
        if remove and not await self._swap_taints(node, [], remove):
            log.warning(
                "node lifecycle: could not remove NoExecute taints of %s", node.metadata.name
            )
            return False
        return self.zones.add(node).remove(node.metadata.name)

    # ----------------------------------------------------------- pods

    def _pod_updated(self, old: Message | None, new: Message) -> None:
        node = narrow(new, core_pb2.Pod).spec.node_name
        if node and (old is None or narrow(old, core_pb2.Pod).spec.node_name != node):
            self.pod_queue.add(pod_key(new))

    async def _process_pod(self, key: str) -> None:
        """A pod newly bound to a node that is not Ready is marked not Ready too."""
        pod = narrow_optional(self.pods.store.get(key), core_pb2.Pod)
        if pod is None:
            return
        node_name = pod.spec.node_name
        health = self.health.get(node_name)
        if health is None or node_name not in self.nodes.store or health.ready is None:
            return
        if health.ready.status != TRUE and not await self._mark_pods_not_ready([pod], node_name):
            log.info("node lifecycle: could not mark pod %s not Ready", key)

    async def _mark_pods_not_ready(self, pods: Sequence[core_pb2.Pod], node_name: str) -> bool:
        """Ready=False on each pod of the node (upstream MarkPodsNotReady); whether every
        write went through."""
        ok = True
        stamp = rfc3339(self.clock.now())
        for pod in pods:
            if pod.spec.node_name != node_name:
                continue
            ready = next((c for c in pod.status.conditions if c.type == READY), None)
            if ready is None or ready.status == FALSE:
                continue
            marked = narrow(codec.clone(pod), core_pb2.Pod)
            for c in marked.status.conditions:
                if c.type == READY:
                    c.status = FALSE
                    c.last_transition_time = stamp
            try:
                await self.client.update_status(marked)
            except NotFoundError:
                continue
            except ApiError as e:
                log.info("node lifecycle: cannot mark pod %s not Ready: %s", pod_key(pod), e)
                ok = False
        return ok

    # ----------------------------------------------------------- writing taints

    async def _swap_taints(
        self,
        node: core_pb2.Node,
        add: Sequence[core_pb2.Taint],
        remove: Sequence[core_pb2.Taint],
    ) -> bool:
        """swap_taints with this controller's clock and retries."""
        return await swap_taints(
            self.client,
            node,
            add=add,
            remove=remove,
            clock=self.clock,
            retries=self.config.status_update_retries,
        )


__all__ = ["NodeLifecycleConfig", "NodeLifecycleController"]
