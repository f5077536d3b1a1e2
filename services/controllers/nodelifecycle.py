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
      (`_handle_disruption`) set how fast each zone's queue may taint.
  do_no_execute_tainting_pass, whenever a zone's queue has a node due and a token
      Each zone has its own RateLimitedTimedQueue (a token bucket of burst 1): the rate
      limit is on adding NoExecute taints; the taint eviction controller evicts at once.
  do_no_schedule_tainting_pass, on every node event ("taint nodes by condition")
      Ready False / Unknown, MemoryPressure, DiskPressure, PIDPressure and
      NetworkUnavailable True, and spec.unschedulable, each have a NoSchedule taint, added
      and removed as they change; not rate limited.

Zones are topology.kubernetes.io/region + zone; nodes labelled
node.kubernetes.io/exclude-disruption do not count towards a zone's health.

    FullDisruption     no node Ready
    PartialDisruption  more than 2 nodes not Ready and not-Ready / all >= unhealthy_zone_threshold
    Normal             otherwise

Normal and FullDisruption zones taint at node_eviction_rate; a PartialDisruption zone at
secondary_node_eviction_rate if it has more than large_cluster_size_threshold nodes, else
not at all. When *every* zone is FullDisruption the control plane is more likely cut off
than every node dead: all NoExecute taints are removed and tainting stops everywhere, until
some node is Ready again; then every node gets a fresh grace period.

The monitor pass and the tainting pass never interleave (one lock), so tainting always
runs against the zone rates its last monitor pass decided.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import json
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api import codec
from services.api.errors import ApiError, ConflictError, NotFoundError
from services.api.kinds import BY_KIND
from services.client import Client
from services.client.informer import Handlers, SharedInformers
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.controllers.controller_utils import (
    PodsByNode,
    new_event,
    pod_key,
    wait_any,
    write_event,
)
from services.controllers.workqueue import WorkQueue
from services.scheduler.plugins.helpers import NO_EXECUTE, NO_SCHEDULE

log = logging.getLogger(__name__)

NODES, LEASES, PODS = BY_KIND["Node"], BY_KIND["Lease"], BY_KIND["Pod"]
NODE_LEASE_NAMESPACE = "kube-node-lease"
COMPONENT = "node-controller"

READY = "Ready"
MEMORY_PRESSURE = "MemoryPressure"
DISK_PRESSURE = "DiskPressure"
PID_PRESSURE = "PIDPressure"
NETWORK_UNAVAILABLE = "NetworkUnavailable"
TRUE, FALSE, UNKNOWN = "True", "False", "Unknown"

TAINT_NOT_READY = "node.kubernetes.io/not-ready"
TAINT_UNREACHABLE = "node.kubernetes.io/unreachable"
TAINT_MEMORY_PRESSURE = "node.kubernetes.io/memory-pressure"
TAINT_DISK_PRESSURE = "node.kubernetes.io/disk-pressure"
TAINT_PID_PRESSURE = "node.kubernetes.io/pid-pressure"
TAINT_NETWORK_UNAVAILABLE = "node.kubernetes.io/network-unavailable"
TAINT_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

UNREACHABLE_NO_EXECUTE = core_pb2.Taint(key=TAINT_UNREACHABLE, effect=NO_EXECUTE)
NOT_READY_NO_EXECUTE = core_pb2.Taint(key=TAINT_NOT_READY, effect=NO_EXECUTE)

#: Which condition status gets which NoSchedule taint ("taint nodes by condition").
CONDITION_TAINTS: dict[str, dict[str, str]] = {
    READY: {FALSE: TAINT_NOT_READY, UNKNOWN: TAINT_UNREACHABLE},
    MEMORY_PRESSURE: {TRUE: TAINT_MEMORY_PRESSURE},
    DISK_PRESSURE: {TRUE: TAINT_DISK_PRESSURE},
    NETWORK_UNAVAILABLE: {TRUE: TAINT_NETWORK_UNAVAILABLE},
    PID_PRESSURE: {TRUE: TAINT_PID_PRESSURE},
}
_CONDITION_TAINT_KEYS = frozenset(k for m in CONDITION_TAINTS.values() for k in m.values())

#: The conditions set to Unknown when the kubelet goes quiet. NetworkUnavailable is left
#: alone: the network plugin, not the kubelet, owns it.
_UNKNOWN_ON_SILENCE = (READY, MEMORY_PRESSURE, DISK_PRESSURE, PID_PRESSURE)

LABEL_ZONE = "topology.kubernetes.io/zone"
LABEL_REGION = "topology.kubernetes.io/region"
LABEL_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_BETA_REGION = "failure-domain.beta.kubernetes.io/region"
LABEL_EXCLUDE_DISRUPTION = "node.kubernetes.io/exclude-disruption"

#: Pod workers that mark pods bound to a not-Ready node (upstream podUpdateWorkerSize).
_POD_UPDATE_WORKERS = 4
#: Retry of a node that cannot be tainted for want of a Ready condition (upstream 50 ms).
_NO_READY_CONDITION_RETRY = 0.05
#: Refills add up in floats (ten refills of 0.1 are 0.999...): a token this close is whole.
_TOKEN_EPSILON = 1e-9


@dataclass(frozen=True)
class NodeLifecycleConfig:
    """kube-controller-manager's node lifecycle flags; durations in simulated seconds."""

    node_monitor_period: float = 5.0
    """How often node health is checked (--node-monitor-period)."""

    node_monitor_grace_period: float = 50.0
    """How long a node may go without renewing its Lease or its Ready heartbeat before it
    is marked Unknown (--node-monitor-grace-period; 50 s since Kubernetes 1.32, 40 s
    before)."""

    node_startup_grace_period: float = 60.0
    """The same for a node that never posted a Ready condition, counted from its
    creation (--node-startup-grace-period)."""

    node_eviction_rate: float = 0.1
    """Nodes a second that get a NoExecute taint in a healthy zone (--node-eviction-rate)."""

    secondary_node_eviction_rate: float = 0.01
    """The same in a partially disrupted zone larger than large_cluster_size_threshold
    (--secondary-node-eviction-rate)."""

    unhealthy_zone_threshold: float = 0.55
    """The fraction of not-Ready nodes (more than 2 of them) that makes a zone partially
    disrupted (--unhealthy-zone-threshold)."""

    large_cluster_size_threshold: int = 50
    """Above this many nodes a partially disrupted zone keeps tainting at the secondary
    rate; at or below it tainting stops (--large-cluster-size-threshold)."""

    node_update_workers: int = 8
    """Nodes checked at once in a monitor pass, and NoSchedule tainting workers."""

    status_update_retries: int = 5
    """Attempts to write one node's status or taints before waiting for the next pass."""

    retry_delay: float = 0.02
    """Pause between two attempts (upstream: 20 ms)."""

    emit_events: bool = True
    """Write NodeNotReady events when a node's Ready condition leaves True."""

    def __post_init__(self) -> None:
        for name in (
            "node_monitor_period",
            "node_monitor_grace_period",
            "node_startup_grace_period",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.node_monitor_grace_period <= self.node_monitor_period:
            raise ValueError(
                f"node_monitor_grace_period ({self.node_monitor_grace_period}) must be longer "
                f"than node_monitor_period ({self.node_monitor_period})"
            )
        for name in ("node_eviction_rate", "secondary_node_eviction_rate"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        if not 0 < self.unhealthy_zone_threshold <= 1:
            raise ValueError(
                f"unhealthy_zone_threshold must be in (0, 1], got {self.unhealthy_zone_threshold}"
            )
        if self.large_cluster_size_threshold < 0:
            raise ValueError(
                "large_cluster_size_threshold must not be negative, got "
                f"{self.large_cluster_size_threshold}"
            )
        if self.node_update_workers < 1:
            raise ValueError(
                f"node_update_workers must be at least 1, got {self.node_update_workers}"
            )
        if self.status_update_retries < 1:
            raise ValueError(
                f"status_update_retries must be at least 1, got {self.status_update_retries}"
            )
        if self.retry_delay < 0:
            raise ValueError(f"retry_delay must not be negative, got {self.retry_delay}")


class ZoneState(StrEnum):
    INITIAL = "Initial"
    NORMAL = "Normal"
    FULL_DISRUPTION = "FullDisruption"
    PARTIAL_DISRUPTION = "PartialDisruption"


# ------------------------------------------------------------------ rate limiting


class TokenBucket:
    """client-go flowcontrol's token bucket: at most `burst` tokens, refilled at `qps` a
    second of the clock's monotonic time, full at the start. qps <= 0 never accepts
    (upstream's "never" limiter)."""

    def __init__(self, qps: float, burst: int, clock: Clock) -> None:
        self.qps = qps if qps > 0 else 0.0
        self.burst = burst
        self.clock = clock
        self._tokens = float(burst) if self.qps else 0.0
        self._at = clock.monotonic()

    def _refill(self) -> None:
        now = self.clock.monotonic()
        if self.qps:
            self._tokens = min(float(self.burst), self._tokens + (now - self._at) * self.qps)
        self._at = now

    def try_accept(self) -> bool:
        self._refill()
        if self._tokens >= 1.0 - _TOKEN_EPSILON:
            self._tokens -= 1.0
            return True
        return False

    def wait_time(self) -> float | None:
        """Seconds until a token is there (0: now), or None when none ever will be."""
        if not self.qps:
            return None
        self._refill()
        return max(0.0, (1.0 - _TOKEN_EPSILON - self._tokens) / self.qps)


@dataclass
class TimedValue:
    value: str
    uid: str
    added_at: float
    process_at: float
    seq: int


class RateLimitedTimedQueue:
    """upstream scheduler.RateLimitedTimedQueue: a heap of values by process time, each
    value at most once, drained through a token bucket of burst 1.

    A value is queued (`add`) → processed by `process` → kept in the member set even
    after it succeeded, so it is not added again until `remove` (the node became Ready,
    or its taint went away). Times are the clock's monotonic seconds."""

    BURST = 1

    def __init__(self, qps: float, *, clock: Clock) -> None:
        self.clock = clock
        self.limiter = TokenBucket(qps, self.BURST, clock)
        self._members: set[str] = set()
        self._queued: dict[str, TimedValue] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._queued)

    def __contains__(self, value: object) -> bool:
        return value in self._queued

    def _push(self, tv: TimedValue) -> None:
        self._queued[tv.value] = tv
        heapq.heappush(self._heap, (tv.process_at, tv.seq, tv.value))

    def add(self, value: str, uid: str = "") -> bool:
        """Queue `value` to be processed now, unless it is a member already."""
        if value in self._members:
            return False
        now = self.clock.monotonic()
        self._members.add(value)
        self._push(TimedValue(value, uid, now, now, next(self._seq)))
        return True

    def remove(self, value: str) -> bool:
        """Drop `value` and let it be added again; whether it was a member."""
        if value not in self._members:
            return False
        self._members.discard(value)
        self._queued.pop(value, None)
        return True

    def head(self) -> TimedValue | None:
        while self._heap:
            _, seq, value = self._heap[0]
            tv = self._queued.get(value)
            if tv is not None and tv.seq == seq:
                return tv
            heapq.heappop(self._heap)
        return None

    async def process(self, fn: Callable[[TimedValue], Awaitable[tuple[bool, float]]]) -> None:
        """Hand due values to `fn`, one token each, until none is due or no token is
        left. `fn` says (done, retry_after): not done → processed again retry_after later.
        (Upstream takes the token before looking at the time; here a value that is not
        due yet does not spend one.)"""
        while (tv := self.head()) is not None:
            now = self.clock.monotonic()
            if now < tv.process_at or not self.limiter.try_accept():
                return
            ok, retry_after = await fn(tv)
            current = self._queued.get(tv.value)
            if current is not tv:
                continue  # removed (or re-added) while fn ran
            del self._queued[tv.value]
            if not ok:
                tv.process_at = self.clock.monotonic() + retry_after
                tv.seq = next(self._seq)
                self._push(tv)

    def swap_limiter(self, qps: float) -> None:
        """Change the rate. A bucket that was empty leaves the new one empty too, so a
        change of state does not grant a burst (upstream SwapLimiter)."""
        qps = qps if qps > 0 else 0.0
        if self.limiter.qps == qps:
            return
        fresh = TokenBucket(qps, self.BURST, self.clock)
        if qps and not self.limiter.try_accept():
            fresh.try_accept()
        self.limiter = fresh

    def next_ready_in(self) -> float | None:
        """Seconds until `process` could do something, or None (empty, or never)."""
        tv = self.head()
        if tv is None:
            return None
        wait = self.limiter.wait_time()
        if wait is None:
            return None
        return max(wait, tv.process_at - self.clock.monotonic())


# ------------------------------------------------------------------ node helpers


def zone_key(node: core_pb2.Node) -> str:
    """upstream nodetopology.GetZoneKey: region and zone (GA labels, else beta ones)
    joined by ":\\0:", or "" when the node has neither."""
    labels = node.metadata.labels
    zone = labels[LABEL_ZONE] if LABEL_ZONE in labels else labels.get(LABEL_BETA_ZONE, "")
    region = labels[LABEL_REGION] if LABEL_REGION in labels else labels.get(LABEL_BETA_REGION, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def get_condition(node: core_pb2.Node, type_: str) -> core_pb2.NodeCondition | None:
    return next((c for c in node.status.conditions if c.type == type_), None)


def _copy_condition(c: core_pb2.NodeCondition) -> core_pb2.NodeCondition:
    out = core_pb2.NodeCondition()
    out.CopyFrom(c)
    return out


def _same_taint(a: core_pb2.Taint, b: core_pb2.Taint) -> bool:
    """Taints are unique by key and effect (upstream Taint.MatchTaint)."""
    return a.key == b.key and a.effect == b.effect


def has_taint(node: core_pb2.Node, taint: core_pb2.Taint) -> bool:
    return any(_same_taint(t, taint) for t in node.spec.taints)


def condition_taints(node: core_pb2.Node) -> list[core_pb2.Taint]:
    """The NoSchedule taints a node's conditions and spec.unschedulable call for."""
    out = []
    for c in node.status.conditions:
        key = CONDITION_TAINTS.get(c.type, {}).get(c.status)
        if key:
            out.append(core_pb2.Taint(key=key, effect=NO_SCHEDULE))
    if node.spec.unschedulable:
        out.append(core_pb2.Taint(key=TAINT_UNSCHEDULABLE, effect=NO_SCHEDULE))
    return out


def _lease_renew_time(lease: Message | None) -> float | None:
    if lease is None:
        return None
    text = lease.spec.renew_time  # type: ignore[attr-defined]
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        log.warning("lease %s: unreadable renewTime %r", lease.metadata.name, text)  # type: ignore[attr-defined]
        return None


@dataclass
class NodeHealth:
    """What the controller last saw of a node, with its own clock's times."""

    #: When the Lease renewTime or the Ready heartbeat last changed (or the node appeared).
    probe: float
    #: When the Ready condition last changed its transition time.
    ready_transition: float
    #: The Ready condition last seen (a copy), or None when the node has none.
    ready: core_pb2.NodeCondition | None
    #: The Lease renewTime last seen.
    lease_renew: float | None


def compute_zone_state(
    ready_conditions: Sequence[core_pb2.NodeCondition | None], unhealthy_zone_threshold: float
) -> tuple[int, ZoneState]:
    """(not-Ready nodes, state) of one zone from its nodes' Ready conditions (None: the
    node has none) (upstream ComputeZoneState)."""
    ready = sum(1 for c in ready_conditions if c is not None and c.status == TRUE)
    not_ready = len(ready_conditions) - ready
    if ready == 0 and not_ready > 0:
        return not_ready, ZoneState.FULL_DISRUPTION
    if not_ready > 2 and not_ready / (not_ready + ready) >= unhealthy_zone_threshold:
        return not_ready, ZoneState.PARTIAL_DISRUPTION
    return not_ready, ZoneState.NORMAL


def tainting_rate(config: NodeLifecycleConfig, zone_size: int, state: ZoneState) -> float:
    """NoExecute taints a second in a zone of `zone_size` nodes in `state` while some
    zone is not fully disrupted (upstream HealthyQPSFunc / ReducedQPSFunc)."""
    if state == ZoneState.PARTIAL_DISRUPTION:
        if zone_size > config.large_cluster_size_threshold:
            return config.secondary_node_eviction_rate
        return 0.0
    return config.node_eviction_rate


# ------------------------------------------------------------------ the controller


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
        self.pods_by_node = PodsByNode()
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
                on_add=lambda n: self.node_queue.add(n.metadata.name),  # type: ignore[attr-defined]
                on_update=lambda _old, n: self.node_queue.add(n.metadata.name),  # type: ignore[attr-defined]
                on_delete=lambda n: self._nodes_to_retry.discard(n.metadata.name),  # type: ignore[attr-defined]
            )
        )
        self.known_nodes: dict[str, core_pb2.Node] = {}
        self.health: dict[str, NodeHealth] = {}
        self.zone_states: dict[str, ZoneState] = {}
        self.zone_tainters: dict[str, RateLimitedTimedQueue] = {}
        self._nodes_to_retry: set[str] = set()
        #: Held by the monitor pass and the tainting pass: they never interleave.
        self._lock = asyncio.Lock()
        self._tainting_wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()

    # ----------------------------------------------------------- running

    async def run(self, stop: asyncio.Event) -> None:
        """Run the monitor loop, the NoExecute tainting loop and the NoSchedule and pod
        workers until `stop` is set. A loop that fails (a bug) stops the others and its
        exception comes out here."""
        loops = [
            self._monitor_loop(stop),
            self._tainting_loop(stop),
            *(self._node_worker() for _ in range(self.config.node_update_workers)),
            *(self._pod_worker() for _ in range(_POD_UPDATE_WORKERS)),
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
        while not stop.is_set():
            try:
                await self.monitor_node_health()
            except ApiError as e:
                log.warning("node lifecycle: monitoring node health failed: %s", e)
            await wait_any(self.clock, self.config.node_monitor_period, stop)

    async def _tainting_loop(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            self._tainting_wake.clear()
            await self.do_no_execute_tainting_pass()
            waits = [w for q in self.zone_tainters.values() if (w := q.next_ready_in()) is not None]
            await wait_any(self.clock, min(waits) if waits else None, stop, self._tainting_wake)

    # Workers are cancelled, not shut down, at stop (their `finally` hands the key back),
    # so the queues still work if the controller runs again.

    async def _node_worker(self) -> None:
        while (name := await self.node_queue.get()) is not None:
            try:
                await self.do_no_schedule_tainting_pass(name)
            except ApiError as e:
                log.warning("node lifecycle: NoSchedule tainting of %s failed: %s", name, e)
            finally:
                self.node_queue.done(name)

    async def _pod_worker(self) -> None:
        while (key := await self.pod_queue.get()) is not None:
            try:
                await self._process_pod(key)
            finally:
                self.pod_queue.done(key)

    def _spawn(self, coro: Awaitable[None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # ----------------------------------------------------------- taint nodes by condition

    async def do_no_schedule_tainting_pass(self, name: str) -> None:
        """Make the node's condition NoSchedule taints match its conditions."""
        node: core_pb2.Node | None = self.nodes.store.get(name)  # type: ignore[assignment]
        if node is None:
            return
        wanted = condition_taints(node)
        have = [
            t
            for t in node.spec.taints
            if t.effect == NO_SCHEDULE
            and (t.key == TAINT_UNSCHEDULABLE or t.key in _CONDITION_TAINT_KEYS)
        ]
        to_add = [t for t in wanted if not any(_same_taint(t, h) for h in have)]
        to_remove = [h for h in have if not any(_same_taint(h, t) for t in wanted)]
        if (to_add or to_remove) and not await self._swap_taints(node, to_add, to_remove):
            log.warning("node lifecycle: could not update NoSchedule taints of %s", name)

    # ----------------------------------------------------------- NoExecute tainting

    async def do_no_execute_tainting_pass(self) -> None:
        """Add the NoExecute taints the zones' queues and rates allow now."""
        async with self._lock:
            for queue in list(self.zone_tainters.values()):
                await queue.process(self._taint_one)

    async def _taint_one(self, tv: TimedValue) -> tuple[bool, float]:
        node: core_pb2.Node | None = self.nodes.store.get(tv.value)  # type: ignore[assignment]
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
                if zone_key(node) not in self.zone_states:
                    self._add_zone(node)
                continue
            log.info("node lifecycle: observed a new node %s", node.metadata.name)
            self.known_nodes[node.metadata.name] = node
            self._add_zone(node)
            await self._mark_node_as_reachable(node)
        for name in [n for n in self.known_nodes if n not in names]:
            log.info("node lifecycle: observed the deletion of node %s", name)
            del self.known_nodes[name]
            self.health.pop(name, None)
            self._nodes_to_retry.discard(name)
            for queue in self.zone_tainters.values():
                queue.remove(name)

        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]] = {}
        workers = asyncio.Semaphore(self.config.node_update_workers)

        async def one(node: core_pb2.Node) -> None:
            async with workers:
                await self._update_node(node, zone_conditions)

        await asyncio.gather(*(one(n) for n in nodes))
        await self._handle_disruption(zone_conditions, nodes)

    async def _update_node(
        self,
        cached: core_pb2.Node,
        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]],
    ) -> None:
        name = cached.metadata.name
        node: core_pb2.Node = codec.clone(cached)  # type: ignore[assignment]
        attempt = 0
        while True:
            try:
                observed, current = await self._try_update_node_health(node)
                break
            except ApiError as e:
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

    async def _try_update_node_health(
        self, node: core_pb2.Node
    ) -> tuple[core_pb2.NodeCondition, core_pb2.NodeCondition | None]:
        """Refresh the node's health record and, past its grace period, write its
        conditions as Unknown (`node` is the caller's copy and is updated in place).
        Returns the Ready condition as observed and as it is now."""
        name = node.metadata.name
        now = self.clock.now()
        health = self.health.get(name)
        current = get_condition(node, READY)
        if current is None:
            # Never reported: a synthetic Unknown from the creation time, and the longer
            # startup grace period.
            created = node.metadata.creation_timestamp
            observed = core_pb2.NodeCondition(
                type=READY,
                status=UNKNOWN,
                last_heartbeat_time=created,
                last_transition_time=created,
            )
            grace = self.config.node_startup_grace_period
            if health is not None:
                health.ready = None
            else:
                at = parse_rfc3339(created) if created else now
                health = NodeHealth(probe=at, ready_transition=at, ready=None, lease_renew=None)
        else:
            observed = _copy_condition(current)
            grace = self.config.node_monitor_grace_period

        saved = health.ready if health is not None else None
        saved_lease = health.lease_renew if health is not None else None
        if health is None or (saved is None and current is not None):
            health = NodeHealth(
                now, now, _copy_condition(current) if current else None, saved_lease
            )
        elif (
            saved is not None
            and current is not None
            and saved.last_heartbeat_time != current.last_heartbeat_time
        ):
            transition = (
                now
                if saved.last_transition_time != current.last_transition_time
                else health.ready_transition
            )
            health = NodeHealth(now, transition, _copy_condition(current), saved_lease)
        # A renewed lease always counts as a heartbeat (even with no Ready condition).
        renew = _lease_renew_time(self.leases.store.get(f"{NODE_LEASE_NAMESPACE}/{name}"))
        if renew is not None and (saved_lease is None or saved_lease < renew):
            health.lease_renew = renew
            health.probe = now
        self.health[name] = health

        if now <= health.probe + grace:
            return observed, current
        stamp = rfc3339(now)
        for type_ in _UNKNOWN_ON_SILENCE:
            cond = get_condition(node, type_)
            if cond is None:
                node.status.conditions.append(
                    core_pb2.NodeCondition(
                        type=type_,
                        status=UNKNOWN,
                        reason="NodeStatusNeverUpdated",
                        message="Kubelet never posted node status.",
                        last_heartbeat_time=node.metadata.creation_timestamp,
                        last_transition_time=stamp,
                    )
                )
            elif cond.status != UNKNOWN:
                cond.status = UNKNOWN
                cond.reason = "NodeStatusUnknown"
                cond.message = "Kubelet stopped posting node status."
                cond.last_transition_time = stamp
        current = get_condition(node, READY)
        if current == observed:
            return observed, current
        log.info("node lifecycle: node %s stopped posting status; marking it Unknown", name)
        updated = await self.client.update_status(node)
        node.CopyFrom(updated)
        current = get_condition(node, READY)
        self.health[name] = NodeHealth(
            health.probe, now, _copy_condition(current) if current else None, renew
        )
        return observed, current

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
        elif observed.status == TRUE and await self._mark_node_as_reachable(node):
            log.info("node lifecycle: node %s is healthy again; NoExecute taints removed", name)

    def _mark_node_for_tainting(self, node: core_pb2.Node, status: str) -> bool:
        queue = self._add_zone(node)
        name = node.metadata.name
        # Processed before but its taint is gone since (removed by hand?): queue it again.
        if status == FALSE and not has_taint(node, NOT_READY_NO_EXECUTE):
            queue.remove(name)
        if status == UNKNOWN and not has_taint(node, UNREACHABLE_NO_EXECUTE):
            queue.remove(name)
        return queue.add(name, node.metadata.uid)

    async def _mark_node_as_reachable(self, node: core_pb2.Node) -> bool:
        """Remove both NoExecute taints and forget the node in its queue; whether it was
        queued."""
        remove = [t for t in (UNREACHABLE_NO_EXECUTE, NOT_READY_NO_EXECUTE) if has_taint(node, t)]
        if remove and not await self._swap_taints(node, [], remove):
            log.warning(
                "node lifecycle: could not remove NoExecute taints of %s", node.metadata.name
            )
            return False
        return self._add_zone(node).remove(node.metadata.name)

    # ----------------------------------------------------------- zones

    def _add_zone(self, node: core_pb2.Node) -> RateLimitedTimedQueue:
        zone = zone_key(node)
        if zone not in self.zone_states:
            self.zone_states[zone] = ZoneState.INITIAL
        queue = self.zone_tainters.get(zone)
        if queue is None:
            queue = RateLimitedTimedQueue(self.config.node_eviction_rate, clock=self.clock)
            self.zone_tainters[zone] = queue
        return queue

    async def _handle_disruption(
        self,
        zone_conditions: dict[str, list[core_pb2.NodeCondition | None]],
        nodes: Sequence[core_pb2.Node],
    ) -> None:
        new_states: dict[str, ZoneState] = {}
        all_are_full = True
        for zone, conditions in zone_conditions.items():
            _, state = compute_zone_state(conditions, self.config.unhealthy_zone_threshold)
            if state != ZoneState.FULL_DISRUPTION:
                all_are_full = False
            new_states[zone] = state
            if zone not in self.zone_states:
                self.zone_states[zone] = ZoneState.INITIAL
                self.zone_tainters.setdefault(
                    zone, RateLimitedTimedQueue(self.config.node_eviction_rate, clock=self.clock)
                )
        for zone in [z for z in self.zone_states if z not in zone_conditions]:
            del self.zone_states[zone]  # its queue stays: zones only come and go in states
        all_were_full = all(s == ZoneState.FULL_DISRUPTION for s in self.zone_states.values())
        if all_are_full and all_were_full:
            return
        if all_are_full:
            log.warning(
                "node lifecycle: every node is not Ready; entering master disruption mode "
                "(NoExecute taints removed, tainting stopped)"
            )
            for node in nodes:
                await self._mark_node_as_reachable(node)
            for zone in self.zone_states:
                self.zone_tainters[zone].swap_limiter(0.0)
                self.zone_states[zone] = ZoneState.FULL_DISRUPTION
            return
        if all_were_full:
            log.warning(
                "node lifecycle: some nodes are Ready again; leaving master disruption mode"
            )
            now = self.clock.now()
            for node in nodes:
                health = self.health.get(node.metadata.name)
                if health is not None:
                    health.probe = health.ready_transition = now
            for zone in self.zone_states:
                state = new_states[zone]
                self.zone_tainters[zone].swap_limiter(
                    tainting_rate(self.config, len(zone_conditions[zone]), state)
                )
                self.zone_states[zone] = state
            return
        for zone, old in self.zone_states.items():
            state = new_states[zone]
            if state == old:
                continue
            log.info("node lifecycle: zone %r is now %s", zone.replace("\x00", ""), state)
            self.zone_tainters[zone].swap_limiter(
                tainting_rate(self.config, len(zone_conditions[zone]), state)
            )
            self.zone_states[zone] = state

    # ----------------------------------------------------------- pods

    def _pod_updated(self, old: Message | None, new: Message) -> None:
        node = new.spec.node_name  # type: ignore[attr-defined]
        if node and (old is None or old.spec.node_name != node):  # type: ignore[attr-defined]
            self.pod_queue.add(pod_key(new))

    async def _process_pod(self, key: str) -> None:
        """A pod newly bound to a node that is not Ready is marked not Ready too."""
        pod: core_pb2.Pod | None = self.pods.store.get(key)  # type: ignore[assignment]
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
            marked: core_pb2.Pod = codec.clone(pod)  # type: ignore[assignment]
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
        """Add `add` (stamped with timeAdded; a taint with the same key and effect stays
        as it is) and remove `remove` in one write. A merge patch replaces the whole
        list, so it is pinned to the resourceVersion it was computed from and redone
        from a fresh read on conflict (upstream SwapNodeControllerTaint)."""
        name = node.metadata.name
        current = node
        for _ in range(self.config.status_update_retries):
            taints = list(current.spec.taints)
            kept = [t for t in taints if not any(_same_taint(t, r) for r in remove)]
            stamp = rfc3339(self.clock.now())
            for t in add:
                if not any(_same_taint(t, k) for k in kept):
                    fresh = core_pb2.Taint()
                    fresh.CopyFrom(t)
                    fresh.time_added = stamp
                    kept.append(fresh)
            if kept == taints:
                return True
            patch = {
                "metadata": {"resourceVersion": current.metadata.resource_version},
                "spec": {"taints": [codec.encode(t) for t in kept] or None},
            }
            try:
                await self.client.patch(NODES, name, json.dumps(patch))
                return True
            except NotFoundError:
                return False
            except ConflictError:
                pass
            except ApiError as e:
                log.warning("node lifecycle: cannot update taints of %s: %s", name, e)
                return False
            try:
                current = await self.client.get(NODES, name)  # type: ignore[assignment]
            except ApiError as e:
                log.info("node lifecycle: cannot get node %s: %s", name, e)
                return False
        return False
