"""The pods/binding subresource: setting spec.nodeName, fenced by the scheduler's lease or
checked against the node's allocation record.

Why this module exists: binding is the one write whose guard reaches outside the object.
Its txn compares the pod's mod_revision (still unbound at the version read) and either
* with a :class:`Fencing` token, that the caller's leader-election key still exists with
  the create_revision it was won at, so a scheduler that lost its lease cannot bind a pod
  (a stale leader is refused, not raced); or
* with `check_allocation` (shared-state scheduling, several active schedulers), that the
  node's allocation record is still the one the fit was decided on, and it writes the
  record grown by the pod in the same txn (see allocation), so no two schedulers can
  overcommit a node. A record that moved meanwhile is read again and the fit re-decided.
The precondition wording follows upstream's.
"""

from __future__ import annotations

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api.conditions import update_pod_condition
from services.api.errors import AllocationConflictError, FieldError, InvalidError, PreconditionError
from services.api.fencing import BOUND_BY, Fencing, bound_by_allocation, bound_by_fenced
from services.api.kinds import BY_KIND, Kind
from services.apiserver import allocation
from services.apiserver.fencing import CURRENT
from services.apiserver.objects import MAX_RETRIES, conflict, not_found
from services.apiserver.store import Store
from services.storage import Compare, Get, KeyValue, Op, Put
from services.storage.keys import allocation_key


async def bind(
    store: Store,
    namespace: str,
    name: str,
    node_name: str,
    *,
    resource_version: str = "",
    uid: str = "",
    fencing: Fencing | None = None,
    check_allocation: bool = False,
) -> Message:
    """Set spec.nodeName in one txn that also proves the pod is still unbound at the
    version read and, with `fencing`, that the caller's election key still exists with
    the create_revision it won it at; with `check_allocation`, that the pod fits the
    node's allocation record (AllocationConflictError when it does not)."""
    kind = BY_KIND["Pod"]
    namespace = namespace or "default"
    if not node_name:
        raise InvalidError("Binding", name, [FieldError("target.name", "Required value")])
    fencing = fencing or CURRENT.get()
    if fencing is not None:
        fencing.validate("Binding", name)
    if not check_allocation:
        return await _bind(store, kind, namespace, name, node_name, resource_version, uid, fencing)
    async with allocation.node_lock(store, node_name):
        return await _bind(
            store,
            kind,
            namespace,
            name,
            node_name,
            resource_version,
            uid,
            fencing,
            check_allocation=True,
        )


def _check_bindable(pod: core_pb2.Pod, namespace: str, name: str, uid: str) -> None:
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


async def _bind(
    store: Store,
    kind: Kind,
    namespace: str,
    name: str,
    node_name: str,
    resource_version: str,
    uid: str,
    fencing: Fencing | None,
    *,
    check_allocation: bool = False,
) -> Message:
    key = kind.key(namespace, name)
    record_moved = False
    for _ in range(MAX_RETRIES):
        record_kv: KeyValue | None = None
        node_kv: KeyValue | None = None
        if check_allocation:
            kv, record_kv, node_kv = await allocation.read(store, key, node_name)
        else:
            kv = await store.storage.get(key)
        if kv is None:
            raise not_found(kind, name)
        pod: core_pb2.Pod = store.decode(kind, kv)  # type: ignore[assignment]
        _check_bindable(pod, namespace, name, uid)
        if resource_version and resource_version != pod.metadata.resource_version:
            raise conflict(kind, name)
        compares = [Compare(key, "mod", "==", kv.mod_revision)]
        ops: list[Op] = []
        if check_allocation:
            guard = await allocation.admit(
                store, pod, kv.mod_revision, node_name, record_kv, node_kv
            )
            compares.append(guard.compare)
            ops.append(guard.put)
        pod.spec.node_name = node_name
        update_pod_condition(pod.status, "PodScheduled", "True", store.clock.now())
        if check_allocation:
            pod.metadata.annotations[BOUND_BY] = bound_by_allocation(allocation_key(node_name))
        elif fencing is not None:
            pod.metadata.annotations[BOUND_BY] = bound_by_fenced(fencing)
        else:
            pod.metadata.annotations.pop(BOUND_BY, None)
        res = await store.txn(
            compares,
            [Put(key, store.encode(pod)), *ops],
            [Get(key)],
            fencing=fencing,
            what=f"Binding of pod {namespace}/{name}",
        )
        if res.succeeded:
            pod.metadata.resource_version = str(res.revision)
            return pod
        current = res.gets[0]
        # With check_allocation, a pod that did not move means the record did.
        record_moved = (
            check_allocation and current is not None and current.mod_revision == kv.mod_revision
        )
        if resource_version and not record_moved:
            if current is not None and store.decode(kind, current).spec.node_name:  # type: ignore[attr-defined]
                continue  # report "already assigned" on the next pass
            raise conflict(kind, name)
    if record_moved:
        raise AllocationConflictError(
            f'pod {namespace}/{name}: the allocation record of node "{node_name}" changed '
            f"{MAX_RETRIES} times while binding; try again"
        )
    raise conflict(kind, name)
