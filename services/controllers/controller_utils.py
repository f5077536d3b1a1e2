"""Helpers the controllers share (upstream pkg/controller/controller_utils.go): owner
references, pod predicates, the per-namespace and per-node indexes, slow start, and the
waits every controller loop makes.

The rest of upstream's controller_utils.go is split along what it needs: expectations.py
(state of its own, on the clock), ref_manager.py (adoption and release: writes through the
client), ranking.py (the order surplus pods are deleted in: a pure rule) and events.py
(the event recorder: a client and a clock). Each imports this module, never the reverse.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Generic

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, meta_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import M, all_instances, narrow, object_meta
from services.api.machinery.labels import Selector, SelectorError, from_label_selector
from services.api.machinery.meta import object_key, pod_key
from services.client import Client, Handlers, Informer
from services.clock import Clock, parse_rfc3339

PODS = BY_KIND["Pod"]
REPLICA_SETS = BY_KIND["ReplicaSet"]
EVENTS = BY_KIND["Event"]
#: Upstream's SlowStartInitialBatchSize.
SLOW_START_INITIAL_BATCH_SIZE = 1

log = logging.getLogger(__name__)


# ============================================================================ pod helpers


def controller_of(obj: Message) -> meta_pb2.OwnerReference | None:
    """The owner reference with controller=true (metav1.GetControllerOf)."""
    for ref in object_meta(obj).owner_references:
        if ref.HasField("controller") and ref.controller:
            return ref  # type: ignore[no-any-return]
    return None


def new_controller_ref(owner: Message, kind: Kind) -> meta_pb2.OwnerReference:
    """metav1.NewControllerRef: controller and blockOwnerDeletion both true."""
    meta = object_meta(owner)
    return meta_pb2.OwnerReference(
        api_version=kind.api_version,
        kind=kind.kind,
        name=meta.name,
        uid=meta.uid,
        controller=True,
        block_owner_deletion=True,
    )


def is_pod_active(pod: core_pb2.Pod) -> bool:
    """Counts towards replicas: not terminated and not being deleted."""
    return pod.status.phase not in ("Succeeded", "Failed") and not pod.metadata.deletion_timestamp


def pod_ready_condition(pod: core_pb2.Pod) -> core_pb2.PodCondition | None:
    for c in pod.status.conditions:
        if c.type == "Ready":
            return c
    return None


def is_pod_ready(pod: core_pb2.Pod) -> bool:
    c = pod_ready_condition(pod)
    return c is not None and c.status == "True"


def timestamp(text: str) -> float | None:
    """Seconds since the epoch of a metav1.Time text; None for the zero (empty) time."""
    if not text:
        return None
    try:
        return parse_rfc3339(text)
    except ValueError:
        return None


def is_pod_available(pod: core_pb2.Pod, min_ready_seconds: int, now: float) -> bool:
    """Ready, and Ready for more than minReadySeconds (podutil.IsPodAvailable)."""
    if not is_pod_ready(pod):
        return False
    if min_ready_seconds == 0:
        return True
    c = pod_ready_condition(pod)
    since = timestamp(c.last_transition_time) if c else None
    return since is not None and since + min_ready_seconds < now


def selector_for(selector: meta_pb2.LabelSelector) -> Selector | None:
    """metav1.LabelSelectorAsSelector; None when invalid (it then matches nothing)."""
    exprs = [(e.key, e.operator, tuple(e.values)) for e in selector.match_expressions]
    try:
        return from_label_selector(dict(selector.match_labels), exprs)
    except SelectorError:
        return None


def split_key(key: str) -> tuple[str, str]:
    ns, _, name = key.rpartition("/")
    return ns, name


def is_namespace_terminating(err: ApiError) -> bool:
    """The create was refused because its namespace is being deleted (upstream's
    NamespaceTerminatingCause): every further create would fail too, so not an error."""
    return "because it is being terminated" in str(err)


# ============================================================================ indexes


class NamespaceIndex(Generic[M]):
    """The keys of one shared informer's store by namespace (client-go's namespace
    index), whose objects are `cls`'s. Construct it before registering the handlers that
    read it: handlers run in registration order, so the index is current when they look."""

    def __init__(self, informer: Informer, cls: type[M]) -> None:
        self._informer = informer
        self._cls = cls
        self._keys: dict[str, set[str]] = defaultdict(set)
        for key in informer.store:
            self._keys[split_key(key)[0]].add(key)
        informer.add_handlers(Handlers(self._add, self._update, self._delete))

    def _add(self, obj: Message) -> None:
        key = object_key(obj)
        self._keys[split_key(key)[0]].add(key)

    def _update(self, old: Message, new: Message) -> None:
        self._add(new)

    def _delete(self, obj: Message) -> None:
        key = object_key(obj)
        if key not in self._informer.store:
            self._keys[split_key(key)[0]].discard(key)

    def has(self, namespace: str) -> bool:
        """Whether any object may be in `namespace` (cheap; never a false no)."""
        return bool(self._keys.get(namespace))

    @staticmethod
    def wants_update(old: Message, new: Message) -> bool:
        """The index needs no update event: an object's namespace never changes."""
        return False

    def list(self, namespace: str) -> list[M]:
        store = self._informer.store
        out = [store[k] for k in self._keys.get(namespace, ()) if k in store]
        if not all_instances(out, self._cls):
            raise TypeError(f"{self._informer.kind.resource}: not all {self._cls.__name__}")
        return out


# ============================================================================ slow start


async def cascade_dead_owners(
    client: Client,
    dead_owners: dict[str, set[str]],
    key: str,
    current: Message | None,
    dependents: tuple[tuple[Kind, Callable[[str], Iterable[Message]]], ...],
) -> None:
    """The cascade of a controller-manager that runs without the garbage collector: delete
    the dependents (each kind's objects of a namespace, as its function lists them) that
    the deleted owners of `key`'s name controlled (their uids in dead_owners[key], less the
    live `current`'s), then forget those owners. Dependents already being deleted, or gone,
    are left alone."""
    dead = dead_owners.get(key)
    if not dead:
        return
    if current is not None:
        dead.discard(object_meta(current).uid)
    ns = split_key(key)[0]
    doomed = [
        (kind, object_meta(obj))
        for kind, list_in in dependents
        for obj in list_in(ns)
        if (ref := controller_of(obj)) is not None
        and ref.uid in dead
        and not object_meta(obj).deletion_timestamp
    ]

    async def delete(kind: Kind, meta: meta_pb2.ObjectMeta) -> None:
        with contextlib.suppress(NotFoundError):
            await client.delete(kind, meta.name, meta.namespace, uid=meta.uid)

    await asyncio.gather(*(delete(kind, meta) for kind, meta in doomed))
    dead_owners.pop(key, None)


async def write_status(client: Client, kind: Kind, obj: Any, status: Message) -> None:
    """Write `status` as `obj`'s status unless it already is: update_status, once more on
    a fresh read after an API error (a conflict), nothing when the object is gone."""
    if status == obj.status:
        return
    target = codec.clone(obj)
    for attempt in range(2):
        target.status.CopyFrom(status)
        try:
            await client.update_status(target)
            return
        except NotFoundError:
            return
        except ApiError:
            if attempt == 1:
                raise
            target = await client.get(kind, obj.metadata.name, obj.metadata.namespace)


async def slow_start_batch(
    count: int,
    initial_batch_size: int,
    create: Callable[[int], Awaitable[tuple[int, ApiError | None]]],
) -> tuple[int, ApiError | None]:
    """Call `create(n)` for batches of 1, 2, 4, … (doubling, capped by what remains) until
    `count` are made or a batch has a failure; returns (successes, first error). A quota
    or admission problem thus costs one request, not hundreds."""
    remaining, successes = count, 0
    size = min(remaining, initial_batch_size)
    while size > 0:
        ok, err = await create(size)
        successes += ok
        if err is not None:
            return successes, err
        remaining -= size
        size = min(2 * size, remaining)
    return successes, None


# ============================================================================ pods by node


class PodsByNode:
    """The pods bound to each node, kept from pod informer events (client-go's
    spec.nodeName index): their keys, each pod read from the informer's store when asked,
    so only a change of nodeName needs its update event. Register `handlers()` before any
    handler that reads it."""

    def __init__(self, informer: Informer) -> None:
        self._informer = informer
        self._by_node: dict[str, set[str]] = {}
        self._node_of: dict[str, str] = {}

    def handlers(self) -> Handlers:
        return Handlers(
            on_add=self._set, on_update=lambda _old, new: self._set(new), on_delete=self._remove
        )

    @staticmethod
    def wants_update(old: Message, new: Message) -> bool:
        """Whether the index needs this update: nodeName changed."""
        return narrow(old, core_pb2.Pod).spec.node_name != narrow(new, core_pb2.Pod).spec.node_name

    def pods_on(self, node_name: str) -> list[core_pb2.Pod]:
        store = self._informer.store  # a relist replaces the store
        out = [store[k] for k in self._by_node.get(node_name, ()) if k in store]
        if not all_instances(out, core_pb2.Pod):
            raise TypeError("pods: not all Pod")
        return out

    def _set(self, pod: Message) -> None:
        key = pod_key(pod)
        node = narrow(pod, core_pb2.Pod).spec.node_name
        prev = self._node_of.get(key)
        if prev is not None and prev != node:
            self._drop(prev, key)
        if node:
            self._by_node.setdefault(node, set()).add(key)
            self._node_of[key] = node

    def _remove(self, pod: Message) -> None:
        key = pod_key(pod)
        prev = self._node_of.pop(key, None)
        if prev is not None:
            self._drop(prev, key)

    def _drop(self, node: str, key: str) -> None:
        pods = self._by_node.get(node)
        if pods is not None:
            pods.discard(key)
            if not pods:
                del self._by_node[node]


# ============================================================================ waits


async def wait_any(clock: Clock, timeout: float | None, *events: asyncio.Event) -> None:
    """Return when one of `events` is set or `timeout` simulated seconds have passed
    (None: no timeout). The events are not cleared."""
    if any(e.is_set() for e in events):
        return
    waiters: list[asyncio.Future[object]] = [asyncio.ensure_future(e.wait()) for e in events]
    if timeout is not None:
        waiters.append(asyncio.ensure_future(clock.sleep(max(0.0, timeout))))
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for w in waiters:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)


async def run_periodically(
    run_pass: Callable[[], Awaitable[None]],
    *,
    clock: Clock,
    period: float,
    stop: asyncio.Event,
    what: str,
) -> None:
    """`run_pass()` every `period` simulated seconds until `stop` is set (upstream
    wait.Until): a pass that fails is logged (an API error without a traceback) and the
    next one runs on time, so one bad pass never ends the loop."""
    while not stop.is_set():
        try:
            await run_pass()
        except ApiError as e:
            log.warning("%s failed: %s", what, e)
        except Exception:  # noqa: BLE001 - a bug in one pass must not end the loop
            log.exception("%s failed", what)
        await wait_any(clock, period, stop)


async def wait_synced(stop: asyncio.Event, *synced: asyncio.Event) -> bool:
    """Wait for every informer to have listed once; False if `stop` came first."""
    if all(s.is_set() for s in synced):
        return True
    stopper: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    ready: asyncio.Future[Any] = asyncio.ensure_future(asyncio.gather(*(s.wait() for s in synced)))
    try:
        await asyncio.wait({stopper, ready}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (stopper, ready):
            if not t.done():
                t.cancel()
        await asyncio.gather(stopper, ready, return_exceptions=True)
    return not stop.is_set()


__all__ = [
    "SLOW_START_INITIAL_BATCH_SIZE",
    "cascade_dead_owners",
    "write_status",
    "NamespaceIndex",
    "PodsByNode",
    "controller_of",
    "is_namespace_terminating",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "new_controller_ref",
    "pod_key",
    "pod_ready_condition",
    "run_periodically",
    "selector_for",
    "slow_start_batch",
    "split_key",
    "timestamp",
    "wait_any",
    "wait_synced",
]
