"""core/v1 Events written by the controllers: the controllers hold an `EventRecorder`
(services/client/events.py, client-go's recorder: bounded queue, one writer, correlator
and spam filter); `write_event` writes one ready-made Event now (node lifecycle and taint
eviction, which write few and await them).

Kept apart from the other controller helpers because it is the one that needs a client
and a clock of its own.
"""

from __future__ import annotations

import logging

from protos.kubera.v1 import core_pb2
from services.api.machinery.errors import ApiError
from services.client import Client, EventRecorder

log = logging.getLogger(__name__)


async def write_event(client: Client, ev: core_pb2.Event) -> None:
    """Create `ev`. Failures are logged, never raised: an event is never worth failing the
    work it describes."""
    try:
        await client.create(ev)
    except ApiError as e:
        obj = ev.involved_object
        log.info("could not record event %s for %s %s: %s", ev.reason, obj.kind, obj.name, e)


__all__ = [
    "EventRecorder",
    "write_event",
]
