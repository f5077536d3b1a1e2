"""core/v1 Events written by the controllers (client-go's event recorder, reduced): one
Event per occurrence, written in the background, a failed write logged and never an
error of the work it describes.

Kept apart from the other controller helpers because it is the one that needs a client
and a clock of its own; the controllers hold an `EventRecorder`.
"""

from __future__ import annotations

import asyncio
import logging

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.errors import ApiError
from services.api.events import new_event
from services.client import Client
from services.clock import Clock

log = logging.getLogger(__name__)


async def write_event(client: Client, ev: core_pb2.Event) -> None:
    """Create `ev`. Failures are logged, never raised: an event is never worth failing the
    work it describes."""
    try:
        await client.create(ev)
    except ApiError as e:
        obj = ev.involved_object
        log.info("could not record event %s for %s %s: %s", ev.reason, obj.kind, obj.name, e)


class EventRecorder:
    """Writes core/v1 Events (`kubectl describe` shows them) in the background: a failed
    event write is logged, never an error of the sync that caused it."""

    def __init__(
        self, client: Client, component: str, clock: Clock, *, enabled: bool = True
    ) -> None:
        self.client = client
        self.component = component
        self.clock = clock
        self.enabled = enabled
        self._tasks: set[asyncio.Task[None]] = set()

    def event(self, obj: Message, type_: str, reason: str, message: str) -> None:
        if not self.enabled:
            return
        meta = obj.metadata  # type: ignore[attr-defined]
        ev = new_event(
            self.clock.now(),
            kind=obj.kind or type(obj).__name__,  # type: ignore[attr-defined]
            name=meta.name,
            namespace=meta.namespace,
            uid=meta.uid,
            api_version=obj.api_version,  # type: ignore[attr-defined]
            resource_version=meta.resource_version,
            reason=reason,
            message=message,
            type_=type_,
            component=self.component,
        )
        task = asyncio.get_running_loop().create_task(write_event(self.client, ev))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = [
    "EventRecorder",
    "write_event",
]
