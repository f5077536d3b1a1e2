"""core/v1 Events as client-go's recorder writes them: one shape for every component that
reports (the controllers, the scheduler's FailedScheduling and Preempted events)."""

from __future__ import annotations

import secrets

from protos.kubera.v1 import core_pb2
from services.clock import rfc3339


def new_event(
    now: float,
    *,
    kind: str,
    name: str,
    namespace: str = "",
    uid: str = "",
    api_version: str = "v1",
    resource_version: str = "",
    reason: str,
    message: str,
    type_: str = "Normal",
    component: str,
    action: str = "",
    reporting_instance: str = "",
) -> core_pb2.Event:
    """One core/v1 Event about an object, as client-go's recorder writes it (events about
    cluster-scoped objects go to "default")."""
    stamp = rfc3339(now)
    ev = core_pb2.Event(
        involved_object=core_pb2.ObjectReference(
            kind=kind,
            namespace=namespace,
            name=name,
            uid=uid,
            api_version=api_version,
            resource_version=resource_version,
        ),
        reason=reason,
        message=message,
        type=type_,
        source=core_pb2.EventSource(component=component),
        reporting_component=component,
        reporting_instance=reporting_instance,
        action=action,
        first_timestamp=stamp,
        last_timestamp=stamp,
        count=1,
    )
    ev.metadata.namespace = namespace or "default"
    ev.metadata.name = f"{name}.{secrets.token_hex(8)}"
    return ev
