"""A PodGroup's PodGroupInitiallyScheduled condition, as upstream's scheduler writes it
(scheduling.k8s.io/v1beta1; upstream's submitPodGroupAlgorithmResult):

    the group is scheduled            True,  reason Scheduled
    it is not (unschedulable)         False, reason Unschedulable, the scheduler's message
    an error stopped its cycle        False, reason SchedulerError, the message

Once True it stays True ("initially"): a later failed cycle does not regress it. A write
that would change nothing is skipped. Upstream writes it at the end of a pod-group cycle;
kubera, scheduling pod by pod, writes True when the gang's quorum is allowed at Permit (a
basic group's first placed pod), and False when GangScheduling refuses the group (no
topology domain fits it, PlacementFeasible fails at Permit).

The writes are merge patches of status.conditions through the scheduler's client, best
effort (a failed write is logged, scheduling goes on), made from tasks so the scheduling
cycle does not wait for them.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

from google.protobuf import json_format

from protos.kubera.v1 import schedulingv1beta1_pb2
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND, SCHEDULING_POD_GROUP
from services.clock import Clock, rfc3339

log = logging.getLogger(__name__)

INITIALLY_SCHEDULED = "PodGroupInitiallyScheduled"
REASON_SCHEDULED = "Scheduled"
REASON_UNSCHEDULABLE = "Unschedulable"
REASON_SCHEDULER_ERROR = "SchedulerError"


def next_conditions(
    pg: schedulingv1beta1_pb2.SchedulingPodGroup, status: str, reason: str, message: str, now: str
) -> list[dict[str, Any]] | None:
    """The group's conditions with PodGroupInitiallyScheduled set to (status, reason,
    message), in their JSON shape; None when nothing is to be written: the same condition,
    or any change of a True one (it is kept as it is)."""
    out: list[dict[str, Any]] = []
    found = False
    for c in pg.status.conditions:
        d = json_format.MessageToDict(c)
        if c.type == INITIALLY_SCHEDULED:
            found = True
            if c.status == "True" or (c.status, c.reason, c.message) == (status, reason, message):
                return None
            if c.status != status:
                d["lastTransitionTime"] = now
            d.update(status=status, reason=reason, message=message)
            d["observedGeneration"] = pg.metadata.generation
        out.append(d)
    if not found:
        out.append(
            {
                "type": INITIALLY_SCHEDULED,
                "status": status,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
                "observedGeneration": pg.metadata.generation,
            }
        )
    return out


class StatusWriter:
    """Writes PodGroupInitiallyScheduled through `client` (None: writes nothing, as a
    framework unit test's handle has no client). `pod_groups` is the PodGroup lister."""

    def __init__(
        self,
        client: Any,
        clock: Clock,
        pod_groups: Mapping[str, schedulingv1beta1_pb2.SchedulingPodGroup],
    ) -> None:
        self.client = client
        self.clock = clock
        self.pod_groups = pod_groups
        #: (namespace/name) -> the condition last sent, so a retried pod does not resend it.
        self._sent: dict[str, tuple[str, str, str]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def scheduled(self, namespace: str, name: str) -> None:
        self._set(namespace, name, "True", REASON_SCHEDULED, "")

    def unschedulable(self, namespace: str, name: str, message: str) -> None:
        self._set(namespace, name, "False", REASON_UNSCHEDULABLE, message)

    def _set(self, namespace: str, name: str, status: str, reason: str, message: str) -> None:
        key = f"{namespace}/{name}"
        pg = self.pod_groups.get(key)
        if self.client is None or pg is None or self._sent.get(key) == (status, reason, message):
            return
        conditions = next_conditions(pg, status, reason, message, rfc3339(self.clock.now()))
        if conditions is None:
            return
        self._sent[key] = (status, reason, message)
        try:
            task = asyncio.get_running_loop().create_task(self._write(pg, conditions))
        except RuntimeError:  # no loop (a synchronous unit test): nothing to write with
            return
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(
        self, pg: schedulingv1beta1_pb2.SchedulingPodGroup, conditions: list[dict[str, Any]]
    ) -> None:
        try:
            await self.client.patch(
                BY_KIND[SCHEDULING_POD_GROUP],
                pg.metadata.name,
                json.dumps({"status": {"conditions": conditions}}),
                namespace=pg.metadata.namespace,
                status=True,
            )
        except ApiError as e:
            self._sent.pop(f"{pg.metadata.namespace}/{pg.metadata.name}", None)
            log.info("could not write %s's PodGroup status: %s", pg.metadata.name, e)
        except Exception:  # noqa: BLE001 - a status write is best effort
            self._sent.pop(f"{pg.metadata.namespace}/{pg.metadata.name}", None)
            log.exception("could not write %s's PodGroup status", pg.metadata.name)

    async def flush(self) -> None:
        """Wait for the writes under way (tests)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
