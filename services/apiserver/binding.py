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
The precondition wording follows upstream's. As upstream's BindingREST, the bind clears
status.nominatedNodeName (ClearingNominatedNodeNameAfterBinding) and, with the
PodTopologyLabels admission plugin, copies the node's zone and region labels to the pod.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2
from services.api import features
from services.api.helpers.conditions import update_pod_condition
from services.api.helpers.fencing import BOUND_BY, Fencing, bound_by_allocation, bound_by_fenced
from services.api.machinery.errors import (
    AllocationConflictError,
    CorruptObjectError,
    FieldError,
    InvalidError,
    PreconditionError,
)
from services.api.machinery.kinds import BY_KIND
from services.api.machinery.kubeobject import narrow
from services.apiserver import allocation
from services.apiserver.admission import check_hollow_kubelet_annotations, copy_topology_labels
from services.apiserver.fencing import CURRENT
from services.apiserver.objects import MAX_RETRIES, conflict, not_found
from services.apiserver.store import Store
from services.storage import Compare, Get, KeyValue, Op, Put
from services.storage.keys import allocation_key

_PODS = BY_KIND["Pod"]
_NODES = BY_KIND["Node"]


@dataclass(frozen=True, slots=True)
class BindItem:
    """One bind as a request states it (a Bind, or one of a BindBatch's)."""

    namespace: str
    name: str
    node_name: str
    resource_version: str = ""
    uid: str = ""
    fencing: Fencing | None = None
    check_allocation: bool = False
    #: The Binding object's metadata.annotations, merged into the pod's (BindingREST).
    annotations: Mapping[str, str] = field(default_factory=dict)
    #: Its metadata.labels, copied over the pod's with PodTopologyLabelsAdmission on.
    labels: Mapping[str, str] = field(default_factory=dict)


def resolve(item: BindItem) -> BindItem:
    """The item as it is bound: the default namespace, the request's fencing token when
    it carries none itself; InvalidError for a missing node or a malformed token."""
    if not item.node_name:
        raise InvalidError("Binding", item.name, [FieldError("target.name", "Required value")])
    fencing = item.fencing or CURRENT.get()
    if fencing is not None:
        fencing.validate("Binding", item.name)
    return replace(item, namespace=item.namespace or "default", fencing=fencing)


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
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
) -> Message:
    """Set spec.nodeName in one txn that also proves the pod is still unbound at the
    version read and, with `fencing`, that the caller's election key still exists with
    the create_revision it won it at; with `check_allocation`, that the pod fits the
    node's allocation record (AllocationConflictError when it does not). `annotations`
    and `labels`: the Binding object's, written to the pod as upstream's BindingREST."""
    item = resolve(
        BindItem(
            namespace,
            name,
            node_name,
            resource_version,
            uid,
            fencing,
            check_allocation,
            dict(annotations or {}),
            dict(labels or {}),
        )
    )
    if not check_allocation:
        return await bind_one(store, item)
    async with allocation.node_lock(store, node_name):
        return await bind_one(store, item)


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


@dataclass(slots=True)
class Prepared:
    """A bind ready for its txn: the pod as it will be written, and the txn's part."""

    pod: core_pb2.Pod
    compares: list[Compare]
    ops: list[Op]


async def prepare(
    store: Store,
    item: BindItem,
    kv: KeyValue | None,
    record_kv: KeyValue | None = None,
    node_kv: KeyValue | None = None,
) -> Prepared:
    """The pod (read as `kv`; with check_allocation, the node's record and Node read at
    the same revision) bound to the node, and the compares and puts that write it;
    the ApiError a bind of it ends with when it cannot be bound."""
    if kv is None:
        raise not_found(_PODS, item.name)
    pod = narrow(store.decode(_PODS, kv), core_pb2.Pod)
    return await prepare_pod(store, item, kv.key, pod, kv.mod_revision, record_kv, node_kv)


def cached(store: Store, item: BindItem) -> tuple[core_pb2.Pod, int] | None:
    """A copy of the pod and its mod_revision from the pods watch cache, when the cache
    has it bindable as `item` asks (unbound, its UID, its resourceVersion); else None
    and the bind reads etcd. Only a hint: the bind txn compares the pod's mod_revision,
    so a stale copy fails the txn and the bind goes on from etcd's version, and a copy
    that would refuse the bind is never trusted (etcd decides every refusal)."""
    if item.check_allocation:
        return None  # read with the record and the Node, at one revision
    cache = store.caches.get(_PODS.resource)
    if cache is None or not cache.started:
        return None
    entry = cache.store.get(_PODS.key(item.namespace, item.name))
    if entry is None:
        return None
    obj = narrow(entry.obj, core_pb2.Pod)
    m = obj.metadata
    if (
        (item.uid and m.uid != item.uid)
        or obj.spec.node_name
        or m.deletion_timestamp
        or obj.spec.scheduling_gates
        or (item.resource_version and item.resource_version != m.resource_version)
    ):
        return None
    pod = core_pb2.Pod()
    pod.CopyFrom(obj)
    return pod, int(m.resource_version)


async def prepare_pod(
    store: Store,
    item: BindItem,
    key: str,
    pod: core_pb2.Pod,
    mod_revision: int,
    record_kv: KeyValue | None = None,
    node_kv: KeyValue | None = None,
) -> Prepared:
    """`prepare` of a pod already decoded (`pod` is changed: it becomes the bound pod)."""
    kind = _PODS
    namespace, name, node_name = item.namespace, item.name, item.node_name
    _check_bindable(pod, namespace, name, item.uid)
    if item.resource_version and item.resource_version != pod.metadata.resource_version:
        raise conflict(kind, name)
    compares = [Compare(key, "mod", "==", mod_revision)]
    ops: list[Op] = []
    if item.check_allocation:
        guard = await allocation.admit(store, pod, mod_revision, node_name, record_kv, node_kv)
        compares.append(guard.compare)
        ops.append(guard.put)
    pod.spec.node_name = node_name
    if features.enabled(None, features.CLEARING_NOMINATED_NODE_NAME_AFTER_BINDING):
        pod.status.nominated_node_name = ""
    if item.annotations:
        pod.metadata.annotations.update(item.annotations)
        check_hollow_kubelet_annotations(kind, pod)
    if item.labels and features.enabled(None, features.POD_TOPOLOGY_LABELS_ADMISSION):
        pod.metadata.labels.update(item.labels)
    # The plugin overwrites the Binding's labels with the node's (it admits the Binding).
    if "PodTopologyLabels" not in store.disable_admission_plugins:
        copy_topology_labels(await _node(store, node_name, node_kv), pod.metadata.labels)
    update_pod_condition(pod.status, "PodScheduled", "True", store.clock.now())
    if item.check_allocation:
        pod.metadata.annotations[BOUND_BY] = bound_by_allocation(allocation_key(node_name))
    elif item.fencing is not None:
        pod.metadata.annotations[BOUND_BY] = bound_by_fenced(item.fencing)
    else:
        pod.metadata.annotations.pop(BOUND_BY, None)
    return Prepared(pod, compares, [Put(key, store.encode(pod)), *ops])


async def _node(store: Store, name: str, node_kv: KeyValue | None) -> Message | None:
    """The Node a pod is bound to, as PodTopologyLabels reads it: the one read with the
    allocation record, else the nodes watch cache's copy (upstream's plugin reads its
    node informer; a bind never waits for the cache), else etcd's (a node created a
    moment ago); None when there is none, or when the stored node does not decode (an
    informer never lists such a node: the bind goes on, copying no labels)."""
    if node_kv is not None:
        return store.decode(_NODES, node_kv)
    cache = store.caches.get(_NODES.resource)
    if cache is not None and cache.started:
        entry = cache.store.get(_NODES.key("", name))
        if entry is not None:
            return entry.obj
    try:
        return await store.get_or_none(_NODES, "", name)
    except CorruptObjectError:
        return None


def what(item: BindItem) -> str:
    """The write a bind's txn names in `Store.txn`'s fencing refusals ("stale leader:
    ... Binding of pod ns/name refused"), so a BindBatch item ends with a single Bind's
    words: a batch's chunk refused so falls back to `bind_one`, which names each pod."""
    return f"Binding of pod {item.namespace}/{item.name}"


async def bind_one(store: Store, item: BindItem) -> Message:
    """One resolved bind in its own txn, re-read and retried while the pod or (with
    check_allocation, whose node lock the caller holds) the record moved on."""
    kind = _PODS
    name = item.name
    key = kind.key(item.namespace, name)
    record_moved = False
    # A pod the watch cache has bindable costs no read: one more pass when it was stale.
    hit = cached(store, item)
    for _ in range(MAX_RETRIES + (hit is not None)):
        record_kv: KeyValue | None = None
        node_kv: KeyValue | None = None
        from_cache = hit is not None
        if hit is not None:
            pod, rev = hit
            hit = None
            p = await prepare_pod(store, item, key, pod, rev)
        else:
            if item.check_allocation:
                kv, record_kv, node_kv = await allocation.read(store, key, item.node_name)
            else:
                kv = await store.storage.get(key)
            p = await prepare(store, item, kv, record_kv, node_kv)
            assert kv is not None
            rev = kv.mod_revision
        res = await store.txn(p.compares, p.ops, [Get(key)], fencing=item.fencing, what=what(item))
        if res.succeeded:
            p.pod.metadata.resource_version = str(res.revision)
            return p.pod
        if from_cache:
            continue  # the copy was stale: decide from etcd's version, as a fresh bind
        current = res.gets[0]
        # With check_allocation, a pod that did not move means the record did.
        record_moved = item.check_allocation and current is not None and current.mod_revision == rev
        if item.resource_version and not record_moved:
            if current is not None and store.decode(kind, current).spec.node_name:  # type: ignore[attr-defined]
                continue  # report "already assigned" on the next pass
            raise conflict(kind, name)
    if record_moved:
        raise AllocationConflictError(
            f'pod {item.namespace}/{name}: the allocation record of node "{item.node_name}" '
            f"changed {MAX_RETRIES} times while binding; try again"
        )
    raise conflict(kind, name)
