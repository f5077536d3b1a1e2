"""The pods/binding subresource: setting spec.nodeName, fenced by the scheduler's lease.

Why this module exists: binding is the one write whose guard reaches outside the object.
Its txn compares the pod's mod_revision (still unbound at the version read) and, with a
:class:`Fencing` token, that the caller's leader-election key still exists with the
create_revision it was won at, so a scheduler that lost its lease cannot bind a pod
(a stale leader is refused, not raced). The precondition wording follows upstream's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.conditions import update_pod_condition
from services.api.errors import FieldError, InvalidError, PreconditionError
from services.api.kinds import BY_KIND
from services.apiserver.fencing import BOUND_BY, CURRENT, Fencing, bound_by_fenced
from services.apiserver.objects import MAX_RETRIES, conflict, not_found
from services.apiserver.watchcache import decode
from services.storage import Compare, Get, Put

if TYPE_CHECKING:
    from services.apiserver.registry import ApiServer


async def bind(
    api: ApiServer,
    namespace: str,
    name: str,
    node_name: str,
    *,
    resource_version: str = "",
    uid: str = "",
    fencing: Fencing | None = None,
) -> Message:
    """Set spec.nodeName in one txn that also proves the pod is still unbound at the
    version read and, with `fencing`, that the caller's election key still exists with
    the create_revision it won it at."""
    kind = BY_KIND["Pod"]
    namespace = namespace or "default"
    if not node_name:
        raise InvalidError("Binding", name, [FieldError("target.name", "Required value")])
    fencing = fencing or CURRENT.get()
    if fencing is not None:
        fencing.validate("Binding", name)
    key = kind.key(namespace, name)
    for _ in range(MAX_RETRIES):
        kv = await api.storage.get(key)
        if kv is None:
            raise not_found(kind, name)
        pod: core_pb2.Pod = decode(kind, kv)  # type: ignore[assignment]
        if uid and pod.metadata.uid != uid:
            raise PreconditionError(
                f"pod {namespace}/{name} has UID {pod.metadata.uid}, not {uid}: it was deleted and recreated"
            )
        if pod.spec.node_name:
            raise PreconditionError(
                f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "{pod.spec.node_name}"'
            )
        if pod.metadata.deletion_timestamp:
            raise PreconditionError(
                f"pod {namespace}/{name} is being deleted, cannot be assigned to a host"
            )
        if pod.spec.scheduling_gates:
            gates = ", ".join(g.name for g in pod.spec.scheduling_gates)
            raise PreconditionError(
                f"pod {namespace}/{name} has non-empty .spec.schedulingGates ({gates}): "
                "it cannot be bound until they are removed"
            )
        if resource_version and resource_version != pod.metadata.resource_version:
            raise conflict(kind, name)
        pod.spec.node_name = node_name
        update_pod_condition(pod.status, "PodScheduled", "True", api.clock.now())
        if fencing is not None:
            pod.metadata.annotations[BOUND_BY] = bound_by_fenced(fencing)
        else:
            pod.metadata.annotations.pop(BOUND_BY, None)
        res = await api._txn(
            [Compare(key, "mod", "==", kv.mod_revision)],
            [Put(key, api._encode(pod))],
            [Get(key)],
            fencing=fencing,
            what=f"Binding of pod {namespace}/{name}",
        )
        if res.succeeded:
            pod.metadata.resource_version = str(res.revision)
            return pod
        if resource_version:
            current = res.gets[0]
            if current is not None and decode(kind, current).spec.node_name:  # type: ignore[attr-defined]
                continue  # report "already assigned" on the next pass
            raise conflict(kind, name)
    raise conflict(kind, name)
