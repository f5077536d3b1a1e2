"""What the scheduler tells about a pod it could not place (upstream handleSchedulingFailure's
event recorder and podConditionUpdater): a FailedScheduling event and PodScheduled=False.

Best effort: a report that fails is logged and scheduling goes on. Bounded: an
unschedulable storm (thousands of pods failing at once) must not become thousands of
concurrent writes that starve the apiserver, so

- the events go through the component's `EventRecorder` (services/client/events.py: a
  bounded queue, one writer, client-go's correlator and spam filter);
- the condition writes wait in a queue keyed by pod (a newer report of a pod replaces
  its older one) drained by `CONDITION_WRITERS` writers, each writing a pod's condition
  after its event was handled, so whoever sees the condition can already find the event;
- all of these writes share one `Pacer` (kube-scheduler's client QPS);
- as upstream's updatePod, a condition equal to the pod's current one (status, reason,
  message) is not written at all.

With SchedulerAsyncAPICalls (a `dispatcher`), the event and the condition are calls of the
scheduler's API dispatcher instead (services/scheduler/dispatcher): the condition a
PodStatusPatch of the pod (merged with a pending nominatedNodeName write of the same pod,
superseded by its binding), the event an EventCall; at most DISPATCH_LIMITS of each in
flight, paced by the same `Pacer`; the condition call waits for its event's outcome as
the writers above do (a binding of the pod meanwhile follows it: one call per pod at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass

from protos.kubera.v1 import core_pb2
from services.api.helpers.events import new_event
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND
from services.client import Client, EventRecorder, Pacer
from services.clock import Clock, rfc3339
from services.scheduler.dispatcher import (
    EVENT,
    POD_STATUS_PATCH,
    APIDispatcher,
    DispatcherClosed,
    EventCall,
    PodStatusPatchCall,
    is_unexpected,
)

#: The scheduler's logger (one name for the loop and the Scheduler, as operators filter it).
log = logging.getLogger("services.scheduler.scheduler")

#: Condition writes in flight at most (upstream writes them from the scheduling goroutine,
#: one at a time per failing pod; two keep the queue moving without a storm).
CONDITION_WRITERS = 2

#: What the reports may write per second, events and conditions together, after a burst:
#: kube-scheduler's client limit (clientConnection qps 50, burst 100), which upstream's
#: reports go through. Only the reports are paced here (binds are not), so a storm of
#: unschedulable pods drains at this rate instead of crowding the apiserver's writes.
REPORT_QPS = 50.0
REPORT_BURST = 100

#: With the API dispatcher: the reports' calls in flight at most (the condition writers
#: and the recorder's one writer, as without it), so a storm of them leaves the
#: dispatcher's other slots to the binds.
DISPATCH_LIMITS = {POD_STATUS_PATCH: CONDITION_WRITERS, EVENT: 1}


@dataclass(slots=True)
class _Pending:
    pod: core_pb2.Pod
    reason: str
    message: str
    event_done: asyncio.Future[bool] | None


def condition_unchanged(pod: core_pb2.Pod, reason: str, message: str) -> bool:
    """podutil.UpdatePodCondition's no-op case: the pod already has PodScheduled=False
    with this reason and message (the scheduler sets no nominatedNodeName here)."""
    for c in pod.status.conditions:
        if c.type == "PodScheduled":
            return c.status == "False" and c.reason == reason and c.message == message
    return False


def scheduled_false_conditions(
    pod: core_pb2.Pod, reason: str, message: str, now: str
) -> list[dict[str, str]]:
    """The pod's conditions with PodScheduled=False (reason, message) in place; its
    lastTransitionTime kept when the status does not change (UpdatePodCondition)."""
    out: list[dict[str, str]] = []
    transition = now
    for c in pod.status.conditions:
        if c.type == "PodScheduled":
            if c.status == "False" and c.last_transition_time:
                transition = c.last_transition_time
            continue
        out.append(
            {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": c.last_transition_time,
            }
        )
    out.append(
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": message,
            "lastTransitionTime": transition,
        }
    )
    return out


class FailureReporter:
    """Writes a pod's FailedScheduling event and PodScheduled condition, as `identity`."""

    def __init__(
        self,
        client: Client,
        clock: Clock,
        identity: str,
        *,
        recorder: EventRecorder | None = None,
        writers: int = CONDITION_WRITERS,
        pacer: Pacer | None = None,
        cluster_clock: Clock | None = None,
        dispatcher: APIDispatcher | None = None,
    ) -> None:
        """`clock` paces the writes (REPORT_QPS); `cluster_clock` (default `clock`) is the
        time the event and the condition are stamped with (services/clock.py).
        `dispatcher`: write through it (SchedulerAsyncAPICalls; see the module)."""
        self.client = client
        self.clock = cluster_clock or clock
        self.identity = identity
        self.pacer = pacer or Pacer(clock, REPORT_QPS, REPORT_BURST)
        self.recorder = recorder or EventRecorder(
            client, "default-scheduler", self.clock, reporting_instance=identity, pacer=self.pacer
        )
        self._writers = writers
        self.dispatcher = dispatcher
        self._last_message: dict[str, str] = {}
        #: Condition writes not yet made, oldest first; one per pod key.
        self._pending: dict[str, _Pending] = {}
        self._tasks: list[asyncio.Task[None]] = []
        #: Condition writes skipped because the pod already had that condition.
        self.conditions_unchanged = 0

    def forget(self, key: str) -> None:
        """The pod `key` (namespace/name) was deleted: its next report is written anew."""
        self._last_message.pop(key, None)
        self._pending.pop(key, None)

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def report(self, profile: str, pod: core_pb2.Pod, message: str, result: str) -> None:
        """A FailedScheduling event and PodScheduled=False, as kube-scheduler writes them
        (only when the message changed, so a pod retried in backoff does not churn).
        Returns at once: the writes are queued."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if self._last_message.get(key) == message:
            return
        self._last_message[key] = message
        reason = "SchedulerError" if result == "error" else "Unschedulable"
        try:
            ev = new_event(
                self.clock.now(),
                kind="Pod",
                name=pod.metadata.name,
                namespace=pod.metadata.namespace,
                uid=pod.metadata.uid,
                reason="FailedScheduling",
                message=message,
                type_="Warning",
                component=profile,
                action="Scheduling",
                reporting_instance=self.identity,
            )
            if self.dispatcher is not None:
                self._dispatch(key, pod, ev, reason, message)
                return
            done = self.recorder.record_waitable(ev)
        except Exception:  # noqa: BLE001 - a report is best effort; scheduling goes on
            log.exception("could not report %s unschedulable", key)
            return
        if condition_unchanged(pod, reason, message):
            self.conditions_unchanged += 1
            self._pending.pop(key, None)
            return
        self._pending.pop(key, None)  # re-queued at the end: the newest report wins
        self._pending[key] = _Pending(pod, reason, message, done)
        # Invariant: while anything is pending, a writer is alive (a writer exits only
        # after seeing the queue empty, in the same step, so none is lost in between).
        self._tasks = [t for t in self._tasks if not t.done()]
        while len(self._tasks) < self._writers:
            self._tasks.append(asyncio.get_running_loop().create_task(self._drain()))

    def _dispatch(
        self, key: str, pod: core_pb2.Pod, ev: core_pb2.Event, reason: str, message: str
    ) -> None:
        """report() through the API dispatcher: the event, then the condition."""
        assert self.dispatcher is not None
        event_done = self.dispatcher.call(EventCall(self.recorder, ev))
        cond = core_pb2.PodCondition(
            type="PodScheduled",
            status="False",
            reason=reason,
            message=message,
            last_transition_time=rfc3339(self.clock.now()),
        )
        call = PodStatusPatchCall(pod, [cond], pacer=self.pacer, after=event_done)
        if call.is_noop():
            self.conditions_unchanged += 1
        self.dispatcher.add(call, lambda err: _log_failed(key, err))

    async def flush(self) -> None:
        """Wait until every queued event and condition is written (tests)."""
        if self.dispatcher is not None:
            await self.dispatcher.drained()
        for _ in range(1000):  # bounded: each round only ends writers that ran dry
            tasks = [t for t in self._tasks if not t.done()]
            if not tasks:
                break
            await asyncio.gather(*tasks, return_exceptions=True)
        await self.recorder.flush()

    async def close(self) -> None:
        """End of the term: stop writing; what is still queued is dropped."""
        self._pending.clear()
        tasks, self._tasks = self._tasks, []
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        await self.recorder.close()

    async def _drain(self) -> None:
        """One condition writer: takes the oldest pending pod until none is left."""
        while self._pending:
            key = next(iter(self._pending))
            item = self._pending.pop(key)
            if item.event_done is not None:
                await item.event_done  # resolved by the recorder, never cancelled
            await self.pacer.wait()
            await self._write_condition(key, item)

    async def _write_condition(self, key: str, item: _Pending) -> None:
        pod = item.pod
        conditions = scheduled_false_conditions(
            pod, item.reason, item.message, rfc3339(self.clock.now())
        )
        try:
            await self.client.patch(
                BY_KIND["Pod"],
                pod.metadata.name,
                json.dumps({"status": {"conditions": conditions}}),
                namespace=pod.metadata.namespace,
                status=True,
            )
        except ApiError as e:
            log.info("could not report %s unschedulable: %s", key, e)
        except Exception:  # noqa: BLE001 - a report is best effort; scheduling goes on
            log.exception("could not report %s unschedulable", key)


def _log_failed(key: str, err: BaseException | None) -> None:
    """A dispatched condition's outcome: a failure is logged (best effort, as above)."""
    if is_unexpected(err) and not isinstance(err, DispatcherClosed):
        log.info("could not report %s unschedulable: %s", key, err)
