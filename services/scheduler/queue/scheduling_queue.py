"""The scheduling queue: which pending pod the scheduler tries next, and when it retries one.

kube-scheduler spends most of its effort on pods that cannot be placed yet, so the queue decides
when an attempt is worth making (upstream pkg/scheduler/backend/queue/scheduling_queue.go, the
PriorityQueue). A pod lives in exactly one of these places at a time:

     add / update                               pop                     bound: done(uid)
    ─────────────► PreEnqueue ──passes──► activeQ ─────► in-flight ─────────────────────► gone
                     │    ▲                 ▲  ▲              │
               fails │    │ update, or an   │  │              │ attempt failed:
                     ▼    │ event of the    │  │ backoff over │ add_unschedulable_if_not_present
                   gated ─┘ gating plugin   │  │ (every 1 s)  │
                                            │  │              ├─ move request since its cycle,
                                            │ backoffQ ◄──────┤  Error, or updated in flight
                                            │  ▲              │
                               backoff over │  │ still        │ otherwise
                                            │  │ backing off  ▼
                                            └──┴────────── unschedulable
                                   an event whose hint says QUEUE, a pod update that may
                                   help, or more than 5 min there (leftover flush, every 30 s)

Rules kept from upstream:
- activeQ is a heap ordered by the profile's QueueSort `less` (PrioritySort: higher priority
  first, then earlier timestamp); backoffQ is a heap ordered by backoff expiry.
- Backoff = initial * 2^(attempts-1), capped at max, counted from the pod's last failure.
- moveRequestCycle: a cluster event that interests some plugin records the current scheduling
  cycle; a pod whose attempt (cycle N) fails after such a request (moveRequestCycle >= N) may
  have missed the event, so it goes to backoffQ instead of waiting in unschedulable.
- An event requeues an unschedulable pod only if one of the plugins that rejected it
  registered a matching event and that registration's QueueingHint says QUEUE (no hint: QUEUE;
  a hint that raises: QUEUE, so no pod is stranded by a buggy hint).
- Gated pods (a PreEnqueue plugin said no) never reach activeQ; they move only when updated
  or when an event their gating plugin registered arrives, and PreEnqueue passes again.
- Pods in unschedulable longer than max_in_unschedulable (5 min) are requeued by the leftover
  flush (every 30 s) with the wildcard UnschedulableTimeout event.

A registration may narrow the pods an event concerns (ClusterEventWithHint.affected and
pod_keys): the queue files every waiting pod under the keys pod_keys gives it, and an event
whose matching registrations all narrow looks only at the pods filed under the keys
affected(old, new) names (DRA: a claim event asks only the pods naming that claim, not the
hundreds gated on claims not made yet). The plugin promises its hint is SKIP for the others,
so the outcome equals the full scan.

The structures live apart: activeQ and backoffQ are `heap.Heap`s, and the event vocabulary
(which registered event matches which incoming one, the event labels) is events.py.

Concurrency: every method runs on the event loop thread; only `pop` and `run` suspend, and no
method suspends while the queue's structures are half-updated, so no lock is needed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from protos.kubera.v1 import core_pb2
from services.api.machinery.meta import pod_key
from services.clock import Clock
from services.scheduler.framework.interface import PreEnqueuePlugin
from services.scheduler.framework.status import Status
from services.scheduler.framework.types import (
    ClusterEvent,
    ClusterEventWithHint,
    PodInfo,
    QueuedPodInfo,
    QueueingHint,
)
from services.scheduler.metrics import (
    PENDING_QUEUES,
    QUEUE_ACTIVE,
    QUEUE_BACKOFF,
    QUEUE_GATED,
    QUEUE_UNSCHEDULABLE,
    QueueMetrics,
)
from services.scheduler.queue.events import (
    BACKOFF_COMPLETE,
    EVENT_ASSIGNED_POD_ADD,
    EVENT_ASSIGNED_POD_UPDATE,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    EVENT_UNSCHEDULED_POD_ADD,
    EVENT_UNSCHEDULED_POD_UPDATE,
    FORCE_ACTIVATE,
    POD_SCALE_DOWN,
    POD_TOPOLOGY_SPREAD,
    SCHEDULE_ATTEMPT_FAILURE,
    QueueingStrategy,
    event_label,
    event_matches,
    is_pod_updated,
    is_wildcard,
)
from services.scheduler.queue.heap import Heap, LessFn

log = logging.getLogger(__name__)


DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
#: Upstream DefaultPodMaxInUnschedulablePodsDuration.
DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 300.0
#: Fixed, non-configurable periods of the two background flushes (as upstream).
BACKOFF_FLUSH_PERIOD = 1.0
LEFTOVER_FLUSH_PERIOD = 30.0
DEFAULT_SCHEDULER_NAME = "default-scheduler"


#: precheck(pod) -> whether move_all_to_active_or_backoff may consider this pod.
PreEnqueueCheck = Callable[[core_pb2.Pod], bool]
#: PreEnqueue plugins per profile (schedulerName), as a map or a lookup function.
PreEnqueueSource = (
    Mapping[str, Sequence[PreEnqueuePlugin]] | Callable[[str], Sequence[PreEnqueuePlugin]]
)


class SchedulingQueue:
    """kube-scheduler's PriorityQueue: activeQ, backoffQ, unschedulable and gated pods.

    The scheduling loop calls `pop` (then reads `scheduling_cycle` for the attempt), and after
    the attempt either `done(uid)` (bound) or `add_unschedulable_if_not_present(qpi, cycle)`
    (failed: qpi.unschedulable_plugins names the rejecting plugins, empty for an Error).
    Informer handlers call `add` / `update` / `delete` for unassigned pods of this scheduler,
    `move_all_to_active_or_backoff` for cluster events, and `assigned_pod_added` /
    `assigned_pod_updated` for bound pods.
    """

    def __init__(
        self,
        *,
        less: LessFn,
        clock: Clock,
        pre_enqueue: PreEnqueueSource | None = None,
        hints: Mapping[str, list[ClusterEventWithHint]] | None = None,
        initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        metrics: QueueMetrics | None = None,
        namespace_labels: Callable[[str], Mapping[str, str] | None] | None = None,
    ) -> None:
        if initial_backoff < 0 or max_backoff < 0 or max_in_unschedulable < 0:
            raise ValueError("backoff and max_in_unschedulable durations must be >= 0")
        self._clock = clock
        self._pre_enqueue: PreEnqueueSource = pre_enqueue if pre_enqueue is not None else {}
        #: plugin name -> the events it registered (EnqueueExtensions), with their hints.
        self._hints: Mapping[str, list[ClusterEventWithHint]] = hints or {}
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_in_unschedulable = max_in_unschedulable
        self._metrics = metrics
        self._namespace_labels = namespace_labels

        # Invariant: a pod key is in at most one of activeQ, backoffQ, unschedulable, gated;
        # an in-flight pod (popped, attempt not finished) is in none of them.
        self._active = Heap(less)
        self._backoff = Heap(lambda a, b: self.backoff_expiry(a) < self.backoff_expiry(b))
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._gated: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, QueuedPodInfo] = {}  # by uid
        #: Latest version of in-flight pods updated during their attempt (by uid).
        self._in_flight_updates: dict[str, core_pb2.Pod] = {}
        #: In-flight pods deleted during their attempt: never requeued (by uid).
        self._in_flight_deleted: set[str] = set()

        #: Incremented by every pop.
        self._scheduling_cycle = 0
        #: The scheduling cycle of the latest move request (-1: none yet).
        self._move_request_cycle = -1
        self._closed = False
        self._wakeup = asyncio.Event()
        self._stop = asyncio.Event()
        self._gauges = (
            {q: metrics.pending_pods.labels(queue=q) for q in PENDING_QUEUES}
            if metrics is not None
            else {}
        )
        #: The sizes last written to the gauges (None: not written by this queue yet).
        self._gauged: tuple[int, int, int, int] | None = None
        #: (queue, event label) -> the queue_incoming_pods_total child.
        self._incoming_children: dict[tuple[str, str], Any] = {}
        #: event -> _is_event_of_interest (the registrations are fixed at construction).
        self._interest: dict[ClusterEvent, bool] = {}
        #: (plugin, event) -> that plugin's registrations matching the event (memoized:
        #: every event asks this for each unschedulable and gated pod).
        self._matching: dict[tuple[str, ClusterEvent], tuple[ClusterEventWithHint, ...]] = {}
        #: The registrations' pod_keys functions (each once), and the index they feed:
        #: index key -> keys of the waiting (unschedulable or gated) pods filed under it.
        #: Invariant: a pod key is filed exactly under the keys its current object gives,
        #: and only while the pod is in _unschedulable or _gated (see _wait / _unwait).
        fns: dict[Any, None] = {}
        for regs in self._hints.values():
            for reg in regs:
                if reg.pod_keys is not None:
                    fns[reg.pod_keys] = None
        self._pod_key_fns = tuple(fns)
        self._index: dict[str, set[str]] = {}
        self._filed: dict[str, frozenset[str]] = {}
        #: event -> every plugin's registrations matching it, if all of them narrow the
        #: pods they concern (have `affected`), else None (memoized like _matching).
        self._narrowing: dict[ClusterEvent, tuple[ClusterEventWithHint, ...] | None] = {}

    # ---------------------------------------------------------------------- read side
    @property
    def scheduling_cycle(self) -> int:
        """The cycle of the latest pop: pass it back to add_unschedulable_if_not_present."""
        return self._scheduling_cycle

    @property
    def move_request_cycle(self) -> int:
        return self._move_request_cycle

    @property
    def closed(self) -> bool:
        return self._closed

    def pending_pods(self) -> dict[str, list[core_pb2.Pod]]:
        """Pods per queue (in-flight pods are not pending here)."""
        return {
            QUEUE_ACTIVE: [q.pod for q in self._active.list()],
            QUEUE_BACKOFF: [q.pod for q in self._backoff.list()],
            QUEUE_UNSCHEDULABLE: [q.pod for q in self._unschedulable.values()],
            QUEUE_GATED: [q.pod for q in self._gated.values()],
        }

    def in_flight_pods(self) -> list[core_pb2.Pod]:
        return [q.pod for q in self._in_flight.values()]

    def get(self, key: str) -> QueuedPodInfo | None:
        """The queued entry for namespace/name, wherever it waits (not in-flight ones)."""
        return (
            self._active.get(key)
            or self._backoff.get(key)
            or self._unschedulable.get(key)
            or self._gated.get(key)
        )

    def backoff_duration(self, attempts: int) -> float:
        """initial * 2^(attempts-1), capped at max; no penalty before the first attempt."""
        if attempts <= 0:
            return 0.0
        duration = self._initial_backoff
        for _ in range(1, attempts):
            if duration >= self._max_backoff:
                break
            duration *= 2
        return min(duration, self._max_backoff)

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi.attempts)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        return self.backoff_expiry(qpi) > self._clock.now()

    # ------------------------------------------------------------------ informer side
    def add(self, pod: core_pb2.Pod) -> None:
        """A new unassigned pod: PreEnqueue, then activeQ or gated."""
        key = pod_key(pod)
        existing = self.get(key) or self._in_flight.get(pod.metadata.uid)
        if existing is not None:  # a relist replayed a pod we already hold
            self.update(existing.pod, pod)
            return
        qpi = QueuedPodInfo(PodInfo(pod), timestamp=self._clock.now())
        self._move_to_active(qpi, event_label(EVENT_UNSCHEDULED_POD_ADD))
        self._sync_gauges()

    def update(self, old: core_pb2.Pod | None, new: core_pb2.Pod) -> None:
        """An unassigned pod changed (upstream PriorityQueue.Update)."""
        key, uid = pod_key(new), new.metadata.uid
        label = event_label(EVENT_UNSCHEDULED_POD_UPDATE)
        try:
            if uid in self._in_flight:
                # Applied when the attempt comes back (add_unschedulable_if_not_present).
                self._in_flight_updates[uid] = new
                return
            if key in self._active or key in self._backoff:
                heap = self._active if key in self._active else self._backoff
                qpi = heap.get(key)
                assert qpi is not None
                qpi.pod_info = PodInfo(new)
                heap.fix(key)
                return
            if key in self._gated:
                qpi = self._gated[key]
                qpi.pod_info = PodInfo(new)
                if self.is_backing_off(qpi):
                    if self._run_pre_enqueue(qpi):
                        self._move_to_backoff(qpi, label)
                    return
                self._move_to_active(qpi, label)
                return
            if key in self._unschedulable:
                qpi = self._unschedulable[key]
                qpi.pod_info = PodInfo(new)
                self._wait(self._unschedulable, qpi)  # refiled under the new object's keys
                if not is_pod_updated(old, new):
                    return  # nothing that could change the scheduling result changed
                if self.is_backing_off(qpi):
                    self._move_to_backoff(qpi, label)
                else:
                    self._move_to_active(qpi, label)
                return
            qpi = QueuedPodInfo(PodInfo(new), timestamp=self._clock.now())
            self._move_to_active(qpi, label)
        finally:
            self._sync_gauges()

    def delete(self, pod: core_pb2.Pod) -> None:
        key, uid = pod_key(pod), pod.metadata.uid
        # Invariant: the key is in at most one place, so removing from all is exact.
        self._active.remove(key)
        self._backoff.remove(key)
        self._unwait(key)
        if uid in self._in_flight:
            self._in_flight_deleted.add(uid)
        self._sync_gauges()

    # ------------------------------------------------------------------ scheduler side
    async def pop(self) -> QueuedPodInfo | None:
        """The head of activeQ, waiting for one; None once the queue is closed."""
        while True:
            if self._closed:
                return None
            if len(self._active):
                break
            self._wakeup.clear()
            await self._wakeup.wait()
        qpi = self._active.pop()
        qpi.attempts += 1
        self._scheduling_cycle += 1
        self._in_flight[qpi.pod_info.uid] = qpi
        # The next attempt records its own rejectors.
        qpi.unschedulable_plugins.clear()
        qpi.pending_plugins.clear()
        qpi.gating_plugin = ""
        self._sync_gauges()
        return qpi

    def done(self, uid: str) -> None:
        """The attempt of a popped pod is over (bound, or requeued by the caller)."""
        self._in_flight.pop(uid, None)
        self._in_flight_updates.pop(uid, None)
        self._in_flight_deleted.discard(uid)

    def add_unschedulable_if_not_present(
        self, qpi: QueuedPodInfo, scheduling_cycle: int, *, error: bool = False
    ) -> str:
        """Requeue a pod whose attempt in `scheduling_cycle` failed; returns the queue it went
        to ("" when it was dropped: deleted meanwhile, or already queued). An Error (`error`,
        or no rejecting plugin recorded) always backs off: no event would ever wake it."""
        uid, key = qpi.pod_info.uid, qpi.key
        try:
            if uid in self._in_flight_deleted:
                return ""
            if self.get(key) is not None:
                log.error("pod %s is already queued; not requeued after its attempt", key)
                return ""
            updated = False
            new_pod = self._in_flight_updates.get(uid)
            if new_pod is not None:
                updated = is_pod_updated(qpi.pod, new_pod)
                qpi.pod_info = PodInfo(new_pod)
            qpi.timestamp = self._clock.now()
            rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
            if error or not rejectors or updated or self._move_request_cycle >= scheduling_cycle:
                # An event may have helped it while it was being scheduled, it failed with
                # an Error (no rejector would ever be woken), or it changed meanwhile.
                self._move_to_backoff(qpi, SCHEDULE_ATTEMPT_FAILURE)
                return QUEUE_BACKOFF
            self._add_unschedulable(qpi, SCHEDULE_ATTEMPT_FAILURE)
            return QUEUE_UNSCHEDULABLE
        finally:
            self.done(uid)
            self._sync_gauges()

    # ------------------------------------------------------------------- move requests
    def move_all_to_active_or_backoff(
        self,
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
        precheck: PreEnqueueCheck | None = None,
    ) -> None:
        """A cluster event: requeue the unschedulable (and gated) pods it may help."""
        if not self._is_event_of_interest(event):
            return
        concerned = self._concerned(event, old, new)
        everyone = (
            (*self._unschedulable.values(), *self._gated.values())
            if concerned is None
            else concerned
        )
        pods = [q for q in everyone if precheck is None or precheck(q.pod)]
        self._move_pods(pods, event, old, new)

    def activate(self, pods: Iterable[core_pb2.Pod]) -> None:
        """Upstream PriorityQueue.Activate: these pods (when waiting here) go to activeQ
        now, gated ones through PreEnqueue again; pods not held here are ignored."""
        for pod in pods:
            key = pod_key(pod)
            qpi = self._unschedulable.get(key) or self._gated.get(key) or self._backoff.get(key)
            if qpi is not None:
                self._move_to_active(qpi, FORCE_ACTIVATE)
        self._sync_gauges()

    def assigned_pod_added(self, pod: core_pb2.Pod) -> None:
        """A bound pod appeared: only pods it could help through a cross-node term (required
        pod affinity matching it, or PodTopologySpread in its namespace) are considered."""
        self._move_pods(self._pods_with_cross_topology_term(pod), EVENT_ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(
        self,
        old: core_pb2.Pod,
        new: core_pb2.Pod,
        event: ClusterEvent = EVENT_ASSIGNED_POD_UPDATE,
    ) -> None:
        """A bound pod changed. A scale-down frees resources for any pod; other changes
        (labels) matter only to pods with a cross-node term matching the new version."""
        if event_matches(POD_SCALE_DOWN, event):
            self.move_all_to_active_or_backoff(event, old, new)
        else:
            self._move_pods(self._pods_with_cross_topology_term(new), event, old, new)

    def flush_backoff_completed(self) -> None:
        """Pods whose backoff is over go to activeQ (PreEnqueue runs again)."""
        while len(self._backoff):
            head = self._backoff.peek()
            assert head is not None
            if self.is_backing_off(head):
                break  # invariant: backoffQ is ordered by expiry, so the rest are too
            self._backoff.pop()
            self._move_to_active(head, BACKOFF_COMPLETE)
        self._sync_gauges()

    def flush_unschedulable_leftover(self) -> None:
        """Pods unschedulable for longer than max_in_unschedulable get another attempt."""
        now = self._clock.now()
        stale = [
            q
            for q in self._unschedulable.values()
            if now - q.timestamp > self._max_in_unschedulable
        ]
        if stale:
            self._move_pods(stale, EVENT_UNSCHEDULABLE_TIMEOUT, None, None)

    # --------------------------------------------------------------------- lifecycle
    async def run(self) -> None:
        """The two periodic flushes, on the injected clock, until close()."""
        await asyncio.gather(
            self._every(BACKOFF_FLUSH_PERIOD, self.flush_backoff_completed),
            self._every(LEFTOVER_FLUSH_PERIOD, self.flush_unschedulable_leftover),
        )

    def close(self) -> None:
        """Wake every pop() (they return None) and stop run()."""
        self._closed = True
        self._wakeup.set()
        self._stop.set()

    async def _every(self, period: float, fn: Callable[[], None]) -> None:
        # Like wait.Until: run, then sleep a period; a close() interrupts the sleep.
        while not self._closed:
            fn()
            sleeper = asyncio.ensure_future(self._clock.sleep(period))
            stopper = asyncio.ensure_future(self._stop.wait())
            try:
                await asyncio.wait({sleeper, stopper}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for task in (sleeper, stopper):
                    if not task.done():
                        task.cancel()

    # --------------------------------------------------------------------- internals
    def _profile(self, pod: core_pb2.Pod) -> str:
        return pod.spec.scheduler_name or DEFAULT_SCHEDULER_NAME

    def _pre_enqueue_plugins(self, pod: core_pb2.Pod) -> Sequence[PreEnqueuePlugin]:
        source = self._pre_enqueue
        if isinstance(source, Mapping):
            return source.get(self._profile(pod), ())
        return source(self._profile(pod))

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> bool:
        """Run the profile's PreEnqueue plugins (the gating one first); False = gated.
        The gating plugin joins unschedulable_plugins so that its events can wake the pod."""
        plugins = self._pre_enqueue_plugins(qpi.pod)
        if not plugins:
            qpi.gating_plugin = ""
            return True
        start = self._clock.monotonic()
        result = Status.success()
        gating = qpi.gating_plugin
        ordered = sorted(plugins, key=lambda p: p.name != gating) if gating else plugins
        for plugin in ordered:
            try:
                status = plugin.pre_enqueue(qpi.pod)
            except Exception as err:  # a plugin bug gates the pod instead of killing the queue
                log.exception("PreEnqueue plugin %s failed on %s", plugin.name, qpi.key)
                status = Status.as_error(err, plugin.name)
            if not status.is_success():
                qpi.unschedulable_plugins.add(plugin.name)
                qpi.gating_plugin = plugin.name
                result = status
                break
        else:
            qpi.gating_plugin = ""
        if self._metrics is not None:
            self._metrics.observe_extension_point(
                "PreEnqueue", result.code, self._profile(qpi.pod), self._clock.monotonic() - start
            )
        return not qpi.gating_plugin

    def _incoming(self, queue: str, event: str) -> None:
        if self._metrics is not None:
            child = self._incoming_children.get((queue, event))
            if child is None:
                child = self._metrics.queue_incoming_pods_total.labels(queue=queue, event=event)
                self._incoming_children[(queue, event)] = child
            child.inc()

    def _sync_gauges(self) -> None:
        # Only sizes that changed since the last sync are written (every queue operation
        # syncs; most change one size or none). The first sync writes all four.
        if not self._gauges:
            return
        sizes = (len(self._active), len(self._backoff), len(self._unschedulable), len(self._gated))
        last = self._gauged
        if sizes == last:
            return
        self._gauged = sizes
        for i, q in enumerate((QUEUE_ACTIVE, QUEUE_BACKOFF, QUEUE_UNSCHEDULABLE, QUEUE_GATED)):
            if last is None or last[i] != sizes[i]:
                self._gauges[q].set(sizes[i])

    def _move_to_active(self, qpi: QueuedPodInfo, event: str) -> str:
        """activeQ if PreEnqueue passes, else gated. Returns where it went."""
        key = qpi.key
        if not self._run_pre_enqueue(qpi):
            self._unschedulable.pop(key, None)
            self._active.remove(key)
            self._backoff.remove(key)
            if key not in self._gated:
                # Upstream counts gated pods as entering the unschedulable pool.
                self._incoming(QUEUE_UNSCHEDULABLE, event)
            self._wait(self._gated, qpi)
            return QUEUE_GATED
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = self._clock.now()
        self._unwait(key)
        self._backoff.remove(key)
        self._active.push(qpi)
        self._incoming(QUEUE_ACTIVE, event)
        self._wakeup.set()
        return QUEUE_ACTIVE

    def _move_to_backoff(self, qpi: QueuedPodInfo, event: str) -> None:
        key = qpi.key
        self._unwait(key)
        self._active.remove(key)
        self._backoff.push(qpi)
        self._incoming(QUEUE_BACKOFF, event)

    def _add_unschedulable(self, qpi: QueuedPodInfo, event: str) -> None:
        if qpi.key not in self._unschedulable:
            self._incoming(QUEUE_UNSCHEDULABLE, event)
        self._wait(self._unschedulable, qpi)

    def _wait(self, where: dict[str, QueuedPodInfo], qpi: QueuedPodInfo) -> None:
        """Put qpi in _unschedulable or _gated (out of the other) and file it in the index."""
        key = qpi.key
        (self._gated if where is self._unschedulable else self._unschedulable).pop(key, None)
        where[key] = qpi
        if not self._pod_key_fns:
            return
        keys = frozenset(k for fn in self._pod_key_fns for k in fn(qpi.pod))
        old = self._filed.get(key, frozenset())
        if keys == old:
            return
        for k in old - keys:
            self._unfile(k, key)
        for k in keys - old:
            self._index.setdefault(k, set()).add(key)
        self._filed[key] = keys

    def _unwait(self, key: str) -> None:
        """Take a pod key out of _unschedulable and _gated, and out of the index."""
        self._unschedulable.pop(key, None)
        self._gated.pop(key, None)
        for k in self._filed.pop(key, ()):
            self._unfile(k, key)

    def _unfile(self, index_key: str, key: str) -> None:
        pods = self._index.get(index_key)
        if pods is not None:
            pods.discard(key)
            if not pods:
                del self._index[index_key]

    def _concerned(self, event: ClusterEvent, old: Any, new: Any) -> list[QueuedPodInfo] | None:
        """The waiting pods an event may concern by the index, or None: look at all of them
        (some registration matching the event does not narrow, or its answer is "any")."""
        if is_wildcard(event):
            return None
        if event in self._narrowing:
            regs = self._narrowing[event]
        else:
            found = tuple(
                r for rs in self._hints.values() for r in rs if event_matches(r.event, event)
            )
            regs = found if all(r.affected is not None for r in found) else None
            self._narrowing[event] = regs
        if not regs:  # some registration does not narrow, or none matches
            return None
        keys: set[str] = set()
        for reg in regs:
            assert reg.affected is not None
            got = reg.affected(old, new)
            if got is None:
                return None
            for k in got:
                keys.update(self._index.get(k, ()))
        out = [q for k in keys if (q := self._unschedulable.get(k)) is not None]
        out.extend(q for k in keys if (q := self._gated.get(k)) is not None)
        return out

    def _requeue(self, qpi: QueuedPodInfo, strategy: QueueingStrategy, event: str) -> str:
        if strategy == QueueingStrategy.SKIP:
            self._add_unschedulable(qpi, event)
            return QUEUE_UNSCHEDULABLE
        if strategy == QueueingStrategy.AFTER_BACKOFF and self.is_backing_off(qpi):
            self._move_to_backoff(qpi, event)
            return QUEUE_BACKOFF
        return self._move_to_active(qpi, event)

    def _is_event_of_interest(self, event: ClusterEvent) -> bool:
        known = self._interest.get(event)
        if known is None:
            known = is_wildcard(event) or any(
                event_matches(reg.event, event) for regs in self._hints.values() for reg in regs
            )
            self._interest[event] = known
        return known

    def _regs_for(self, plugin: str, event: ClusterEvent) -> tuple[ClusterEventWithHint, ...]:
        key = (plugin, event)
        regs = self._matching.get(key)
        if regs is None:
            regs = tuple(r for r in self._hints.get(plugin, ()) if event_matches(r.event, event))
            self._matching[key] = regs
        return regs

    def _worth_requeuing(
        self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any
    ) -> QueueingStrategy:
        """Upstream isPodWorthRequeuing: consult only the hints of the plugins that rejected
        the pod. QUEUE from a Pending plugin skips backoff; from others, after backoff."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return QueueingStrategy.AFTER_BACKOFF
        if is_wildcard(event):
            # A wildcard event aimed at one pod (newObj is that pod) leaves the others alone.
            if isinstance(new, core_pb2.Pod) and new.metadata.uid != qpi.pod_info.uid:
                return QueueingStrategy.SKIP
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for plugin in rejectors:
            for reg in self._regs_for(plugin, event):
                hint = QueueingHint.QUEUE
                if reg.hint is not None:
                    try:
                        hint = reg.hint(qpi.pod, old, new)
                    except Exception:  # never strand a pod on a buggy hint
                        log.exception("QueueingHint of %s failed for %s", plugin, qpi.key)
                        hint = QueueingHint.QUEUE
                if hint == QueueingHint.SKIP:
                    continue
                if plugin in qpi.pending_plugins:
                    return QueueingStrategy.IMMEDIATELY
                strategy = QueueingStrategy.AFTER_BACKOFF
                if not qpi.pending_plugins:
                    return strategy
        return strategy

    def _move_pods(
        self, pods: Iterable[QueuedPodInfo], event: ClusterEvent, old: Any, new: Any
    ) -> None:
        if not self._is_event_of_interest(event):
            return
        label = event_label(event)
        for qpi in list(pods):
            if qpi.gating_plugin and not self._regs_for(qpi.gating_plugin, event):
                continue  # only its gating plugin's events can ungate it
            strategy = self._worth_requeuing(qpi, event, old, new)
            if strategy == QueueingStrategy.SKIP:
                continue
            self._requeue(qpi, strategy, label)
        # Pods in flight now may have missed this event: they will go to backoffQ on failure.
        self._move_request_cycle = self._scheduling_cycle
        self._sync_gauges()

    def _pods_with_cross_topology_term(self, pod: core_pb2.Pod) -> list[QueuedPodInfo]:
        ns = pod.metadata.namespace
        ns_labels = self._namespace_labels(ns) if self._namespace_labels is not None else None
        out: list[QueuedPodInfo] = []
        for qpi in self._unschedulable.values():
            if (
                POD_TOPOLOGY_SPREAD in qpi.unschedulable_plugins
                and qpi.pod.metadata.namespace == ns
                or any(t.matches(pod, ns_labels) for t in qpi.pod_info.required_affinity)
            ):
                out.append(qpi)
        return out
