"""Taint eviction: delete the pods that a node's NoExecute taints no longer allow there.

kube-controller-manager's taint-eviction-controller (pkg/controller/tainteviction). It
never decides that a node is unhealthy — the node lifecycle controller says so with the
node.kubernetes.io/{unreachable,not-ready}:NoExecute taints, and users or other tools add
their own — it only reconciles pods against whatever NoExecute taints a node carries:

    node / pod informer event ──► process_pod_on_node (no I/O, runs in the handler)
        a taint no toleration matches ───────────────► fire now
        all tolerated, some for tolerationSeconds ────► fire at start + min(seconds)
        all tolerated forever / taints gone / pod gone ► cancel ("Cancelling deletion")
    EvictionQueue (one heap on the injected clock) ──► evict: event "Marking for
        deletion", DisruptionTarget=True (DeletionByTaintManager), delete with the
        pod's own grace period

As upstream, `start` is the moment this controller first scheduled the pod's deletion,
and a scheduled deletion keeps its time while taints come and go, until it is cancelled
(`TaintEvictionConfig.count_from_time_added` counts from the taints' timeAdded instead).
Toleration matching is the scheduler's (services/scheduler/plugins/helpers): the
scheduler and this controller must agree on what "tolerated" means.

The helpers the node lifecycle controller shares with this one (`PodsByNode`,
`new_event` / `write_event`, `wait_any`) live in controller_utils.py; what the device taint
eviction controller (devicetainteviction.py) shares with it is here: EvictionQueue,
EvictionLoop, EvictionWorkersConfig and delete_with_retries.
"""

from __future__ import annotations

import asyncio
import heapq
import itertools
import logging
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.events import new_event
from services.api.helpers.taints import NO_EXECUTE, toleration_tolerates_taint
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow, narrow_optional
from services.api.machinery.meta import pod_key
from services.client import Client, Handlers, SharedInformers
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.controllers.controller_utils import PodsByNode, wait_any
from services.controllers.events import write_event

log = logging.getLogger(__name__)

PODS, NODES, EVENTS = BY_KIND["Pod"], BY_KIND["Node"], BY_KIND["Event"]

COMPONENT = "taint-eviction-controller"
EVICTION_REASON = "TaintManagerEviction"
DISRUPTION_TARGET = "DisruptionTarget"
DISRUPTION_REASON = "DeletionByTaintManager"
DISRUPTION_MESSAGE = "Taint manager: deleting due to NoExecute taint"


@dataclass(frozen=True)
class EvictionWorkersConfig:
    """How an eviction controller deletes the pods that are due (this one's and the device
    taint eviction controller's); durations in simulated seconds."""

    deletion_workers: int = 8
    """How many pod deletions run at once (upstream starts one goroutine per due pod)."""

    deletion_retries: int = 5
    """Attempts to mark and delete one pod before giving up (upstream `retries`)."""

    retry_delay: float = 0.01
    """Pause between two attempts (upstream: 10 ms)."""

    emit_events: bool = True
    """Write the eviction events (one per scheduled and cancelled deletion)."""

    def __post_init__(self) -> None:
        if self.deletion_workers < 1:
            raise ValueError(f"deletion_workers must be at least 1, got {self.deletion_workers}")
        if self.deletion_retries < 1:
            raise ValueError(f"deletion_retries must be at least 1, got {self.deletion_retries}")
        if self.retry_delay < 0:
            raise ValueError(f"retry_delay must not be negative, got {self.retry_delay}")


async def delete_with_retries(
    attempt: Callable[[], Awaitable[bool]],
    config: EvictionWorkersConfig,
    clock: Clock,
    key: str,
) -> bool:
    """Run `attempt` (mark and delete one pod; False: nothing to delete) until it is done,
    the pod is gone, or `config.deletion_retries` attempts failed; whether it deleted."""
    for n in range(config.deletion_retries):
        try:
            return await attempt()
        except NotFoundError:
            return False
        except ApiError as e:
            if n == config.deletion_retries - 1:
                log.warning("eviction: could not delete pod %s: %s", key, e)
                return False
            await clock.sleep(config.retry_delay)
    return False


@dataclass(frozen=True)
class TaintEvictionConfig(EvictionWorkersConfig):
    """Settings of the taint eviction controller; durations in simulated seconds."""

    count_from_time_added: bool = False
    """Upstream counts tolerationSeconds from when this controller sees the taint, so a
    restarted (or newly elected) controller grants the full time again. True counts from
    each taint's timeAdded instead: deadline = min over taints of timeAdded + the
    tolerationSeconds of the toleration that matches it."""


def no_execute_taints(node: core_pb2.Node | None) -> list[core_pb2.Taint]:
    if node is None:
        return []
    return [t for t in node.spec.taints if t.effect == NO_EXECUTE]


def matching_tolerations(
    taints: Sequence[core_pb2.Taint], tolerations: Sequence[core_pb2.Toleration]
) -> list[core_pb2.Toleration] | None:
    """For each taint the first toleration that tolerates it, or None when some taint is
    not tolerated (upstream v1helper.GetMatchingTolerations)."""
    used: list[core_pb2.Toleration] = []
    for taint in taints:
        match = next((t for t in tolerations if toleration_tolerates_taint(t, taint)), None)
        if match is None:
            return None
        used.append(match)
    return used


def min_toleration_seconds(used: Iterable[core_pb2.Toleration]) -> float:
    """The shortest tolerationSeconds (0 when any is <= 0, or when there are none at all),
    or -1 when every toleration is forever (upstream getMinTolerationTime)."""
    used = list(used)
    if not used:
        return 0.0
    best: int | None = None
    for t in used:
        if t.HasField("toleration_seconds"):
            if t.toleration_seconds <= 0:
                return 0.0
            if best is None or t.toleration_seconds < best:
                best = t.toleration_seconds
    return -1.0 if best is None else float(best)


# ------------------------------------------------------------------ the timed queue


@dataclass
class ScheduledEviction:
    key: str
    created_at: float
    fire_at: float
    seq: int


class EvictionQueue:
    """Pending pod deletions by fire time (upstream TimedWorkerQueue, minus the timer per
    pod): one heap, one entry per pod key. Cancelled or replaced entries stay in the heap
    and are dropped when they surface (their `seq` no longer matches).

    A key is pending (scheduled) → running (popped as due, deletion in flight) → gone
    (`done`). `add` refuses a key that is pending or running; `cancel` stops only
    pending work."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, str]] = []
        self._pending: dict[str, ScheduledEviction] = {}
        self._running: set[str] = set()
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._pending)

    def get(self, key: str) -> ScheduledEviction | None:
        return self._pending.get(key)

    def is_running(self, key: str) -> bool:
        return key in self._running

    def add(self, key: str, created_at: float, fire_at: float) -> bool:
        if key in self._pending or key in self._running:
            return False
        item = ScheduledEviction(key, created_at, fire_at, next(self._seq))
        self._pending[key] = item
        heapq.heappush(self._heap, (fire_at, item.seq, key))
        return True

    def cancel(self, key: str) -> bool:
        return self._pending.pop(key, None) is not None

    def _drop_stale(self) -> None:
        while self._heap:
            _, seq, key = self._heap[0]
            item = self._pending.get(key)
            if item is not None and item.seq == seq:
                return
            heapq.heappop(self._heap)

    def next_fire_at(self) -> float | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_due(self, now: float) -> list[str]:
        """The keys whose time has come, earliest first; they become running."""
        due: list[str] = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now:
                return due
            _, _, key = heapq.heappop(self._heap)
            del self._pending[key]
            self._running.add(key)
            due.append(key)

    def done(self, key: str) -> None:
        self._running.discard(key)


# ------------------------------------------------------------------ the loop both share


class EvictionLoop:
    """What the taint and device taint eviction controllers share: fire the keys their
    EvictionQueue says are due, each on a task, until stop (the tasks in flight are then
    cancelled). A subclass sets `queue`, `clock`, `_wake` and `_tasks`, and gives `_fire`
    (the deletion of one key) and, if it needs one, `_refresh` (run on every wake-up
    before the due keys are taken)."""

    queue: EvictionQueue
    clock: Clock
    _wake: asyncio.Event
    _tasks: set[asyncio.Task[None]]

    def _refresh(self) -> None:
        return None

    def _fire(self, key: str) -> Coroutine[object, object, None]:
        raise NotImplementedError

    async def run(self, stop: asyncio.Event) -> None:
        """Fire due deletions until `stop` is set; deletions in flight are cancelled."""
        try:
            while not stop.is_set():
                self._wake.clear()
                self._refresh()
                for key in self.queue.pop_due(self.clock.now()):
                    self._spawn(self._fire(key))
                nxt = self.queue.next_fire_at()
                timeout = None if nxt is None else nxt - self.clock.now()
                await wait_any(self.clock, timeout, stop, self._wake)
        finally:
            tasks = list(self._tasks)
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _spawn(self, coro: Coroutine[object, object, None]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)


# ------------------------------------------------------------------ the controller


class TaintEvictionController(EvictionLoop):
    """Deletes pods from nodes whose NoExecute taints they do not (or no longer) tolerate."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: TaintEvictionConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or TaintEvictionConfig()
        self.clock = clock or RealClock()
        self.pods = informers.get(PODS)
        self.nodes = informers.get(NODES)
        self.pods_by_node = PodsByNode(self.pods)
        self.pods.add_handlers(self.pods_by_node.handlers())
        self.pods.add_handlers(
            Handlers(
                on_add=lambda p: self._pod_changed(None, p),
                on_update=self._pod_changed,
                on_delete=lambda p: self._pod_changed(p, None),
            )
        )
        self.nodes.add_handlers(
            Handlers(
                on_add=lambda n: self._node_changed(None, n),
                on_update=self._node_changed,
                on_delete=lambda n: self._node_changed(n, None),
            )
        )
        self.queue = EvictionQueue()
        #: The NoExecute taints of each node that has some.
        self.tainted: dict[str, list[core_pb2.Taint]] = {}
        self.deleted_total = 0
        self._wake = asyncio.Event()
        self._tasks: set[asyncio.Task[None]] = set()
        self._workers = asyncio.Semaphore(self.config.deletion_workers)

    # ----------------------------------------------------------- informer handlers

    @staticmethod
    def wants_pod_update(old: Message, new: Message) -> bool:
        """The pod updates this controller acts on: a new nodeName or new tolerations
        (`_pod_changed` ignores the others)."""
        old, new = narrow(old, core_pb2.Pod), narrow(new, core_pb2.Pod)
        return old.spec.node_name != new.spec.node_name or list(old.spec.tolerations) != list(
            new.spec.tolerations
        )

    def _node_changed(self, old_obj: Message | None, new_obj: Message | None) -> None:
        old = narrow_optional(old_obj, core_pb2.Node)
        new = narrow_optional(new_obj, core_pb2.Node)
        old_taints = no_execute_taints(old)
        new_taints = no_execute_taints(new)
        if old is not None and new is not None and old_taints == new_taints:
            return
        either = new if new is not None else old
        if either is None:
            return  # neither side: nothing to do
        name = either.metadata.name
        if new is None or not new_taints:
            self.tainted.pop(name, None)
        else:
            self.tainted[name] = new_taints
        if new is None:
            return  # the pods of a deleted node go with it; their pending work stays
        pods = self.pods_by_node.pods_on(name)
        if not new_taints:
            for pod in pods:
                self._cancel_with_event(pod_key(pod))
            return
        now = self.clock.now()
        for pod in pods:
            self.process_pod_on_node(pod, name, new_taints, now)

    def _pod_changed(self, old_obj: Message | None, new_obj: Message | None) -> None:
        old = narrow_optional(old_obj, core_pb2.Pod)
        new = narrow_optional(new_obj, core_pb2.Pod)
        if (
            old is not None
            and new is not None
            and list(old.spec.tolerations) == list(new.spec.tolerations)
            and old.spec.node_name == new.spec.node_name
        ):
            return
        if new is None:
            if old is not None:
                self._cancel_with_event(pod_key(old))
            return
        node = new.spec.node_name
        taints = self.tainted.get(node) if node else None
        if taints:
            self.process_pod_on_node(new, node, taints, self.clock.now())

    # ----------------------------------------------------------- the decision

    def process_pod_on_node(
        self,
        pod: core_pb2.Pod,
        node_name: str,
        taints: Sequence[core_pb2.Taint],
        now: float,
    ) -> None:
        """Schedule, keep or cancel the deletion of one pod against its node's NoExecute
        taints (upstream processPodOnNode)."""
        key = pod_key(pod)
        if not taints:
            self._cancel_with_event(key)
            return
        used = matching_tolerations(taints, pod.spec.tolerations)
        if used is None:
            log.debug("pod %s does not tolerate a NoExecute taint of %s", key, node_name)
            self._cancel_with_event(key)
            self._schedule(key, now, now)
            return
        if self.config.count_from_time_added:
            self._schedule_from_time_added(key, taints, used, now)
            return
        seconds = min_toleration_seconds(used)
        if seconds < 0:
            self._cancel_with_event(key)
            return
        start, trigger = now, now + seconds
        scheduled = self.queue.get(key)
        if scheduled is not None:
            start = scheduled.created_at
            if start + seconds < trigger:
                return  # an older schedule stands
            self._cancel_with_event(key)
        self._schedule(key, start, trigger)

    def _schedule_from_time_added(
        self,
        key: str,
        taints: Sequence[core_pb2.Taint],
        used: Sequence[core_pb2.Toleration],
        now: float,
    ) -> None:
        scheduled = self.queue.get(key)
        fallback = scheduled.created_at if scheduled is not None else now
        deadline: float | None = None
        for taint, toleration in zip(taints, used, strict=True):
            if not toleration.HasField("toleration_seconds"):
                continue
            added = parse_rfc3339(taint.time_added) if taint.time_added else fallback
            at = added + max(0, toleration.toleration_seconds)
            deadline = at if deadline is None else min(deadline, at)
        if deadline is None:
            self._cancel_with_event(key)
            return
        if scheduled is not None:
            if scheduled.fire_at == deadline:
                return
            self.queue.cancel(key)
        self._schedule(key, fallback, deadline)

    def _schedule(self, key: str, created_at: float, fire_at: float) -> None:
        if self.queue.add(key, created_at, fire_at):
            self._wake.set()

    def _cancel_with_event(self, key: str) -> None:
        if self.queue.cancel(key) and self.config.emit_events:
            namespace, name = key.split("/", 1)
            self._spawn(self._event(namespace, name, f"Cancelling deletion of Pod {key}"))

    # ----------------------------------------------------------- running

    def _fire(self, key: str) -> Coroutine[object, object, None]:
        return self._evict(key)

    async def _evict(self, key: str) -> None:
        namespace, name = key.split("/", 1)
        try:
            async with self._workers:
                log.info("taint eviction: deleting pod %s", key)
                if self.config.emit_events:
                    await self._event(namespace, name, f"Marking for deletion Pod {key}")

                async def attempt() -> bool:
                    await self._mark_and_delete(namespace, name)
                    return True

                if await delete_with_retries(attempt, self.config, self.clock, key):
                    self.deleted_total += 1
        except Exception:  # noqa: BLE001 - one pod's failure costs only that pod
            log.exception("taint eviction: deleting pod %s failed", key)
        finally:
            self.queue.done(key)

    async def _mark_and_delete(self, namespace: str, name: str) -> None:
        """DisruptionTarget=True first (so whoever sees the pod go knows why), then a
        delete with the pod's own grace period, pinned to the pod we marked."""
        pod = narrow(await self.client.get(PODS, name, namespace), core_pb2.Pod)
        marked = narrow(codec.clone(pod), core_pb2.Pod)
        if set_disruption_target(marked, self.clock.now()):
            await self.client.update_status(marked)
        await self.client.delete(PODS, name, namespace, uid=pod.metadata.uid)

    async def _event(self, namespace: str, name: str, message: str) -> None:
        ev = new_event(
            self.clock.now(),
            kind="Pod",
            name=name,
            namespace=namespace,
            reason=EVICTION_REASON,
            message=message,
            component=COMPONENT,
        )
        await write_event(self.client, ev)


def set_disruption_target(pod: core_pb2.Pod, now: float) -> bool:
    """Add or refresh DisruptionTarget=True (DeletionByTaintManager); whether it changed."""
    return update_pod_condition(
        pod.status,
        DISRUPTION_TARGET,
        "True",
        now,
        reason=DISRUPTION_REASON,
        message=DISRUPTION_MESSAGE,
    )
    pod.status.conditions.append(
        core_pb2.PodCondition(
            type=DISRUPTION_TARGET,
            status="True",
            reason=DISRUPTION_REASON,
            message=DISRUPTION_MESSAGE,
            last_transition_time=rfc3339(now),
        )
    )
    return True
