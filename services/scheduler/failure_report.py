"""What the scheduler tells about a pod it could not place (upstream handleSchedulingFailure's
event recorder and podConditionUpdater): a FailedScheduling event and PodScheduled=False.

Best effort: a report that fails is logged and scheduling goes on.
"""

from __future__ import annotations

import json
import logging

from protos.kubera.v1 import core_pb2
from services.api.errors import ApiError
from services.api.events import new_event
from services.api.kinds import BY_KIND
from services.client import Client
from services.clock import Clock, rfc3339

#: The scheduler's logger (one name for the loop and the Scheduler, as operators filter it).
log = logging.getLogger("services.scheduler.scheduler")


class FailureReporter:
    """Writes a pod's FailedScheduling event and PodScheduled condition, as `identity`."""

    def __init__(self, client: Client, clock: Clock, identity: str) -> None:
        self.client = client
        self.clock = clock
        self.identity = identity
        self._last_message: dict[str, str] = {}

    def forget(self, key: str) -> None:
        """The pod `key` (namespace/name) was deleted: its next report is written anew."""
        self._last_message.pop(key, None)

    async def report(self, profile: str, pod: core_pb2.Pod, message: str, result: str) -> None:
        """A FailedScheduling event and PodScheduled=False, as kube-scheduler writes them
        (only when the message changed, so a pod retried in backoff does not churn)."""
        key = f"{pod.metadata.namespace}/{pod.metadata.name}"
        if self._last_message.get(key) == message:
            return
        self._last_message[key] = message
        at = self.clock.now()
        now = rfc3339(at)
        reason = "SchedulerError" if result == "error" else "Unschedulable"
        conditions = [
            {
                "type": c.type,
                "status": c.status,
                "reason": c.reason,
                "message": c.message,
                "lastTransitionTime": c.last_transition_time,
            }
            for c in pod.status.conditions
            if c.type != "PodScheduled"
        ]
        conditions.append(
            {
                "type": "PodScheduled",
                "status": "False",
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
            }
        )
        try:
            ev = new_event(
                at,
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
            await self.client.create(ev)
            # The condition last: whoever sees it can already find the event.
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
