"""Helpers the controllers share (upstream pkg/controller/controller_utils.go and
controller_ref_manager.go): owner references and adoption, pod predicates, the
per-namespace index, expectations, deletion ranking, slow start, events and the waits
every controller loop makes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import math
import secrets
from collections import defaultdict
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from google.protobuf.message import Message

from protos.kubera.v1 import core_pb2, meta_pb2
from services.api import codec
from services.api.errors import ApiError, NotFoundError
from services.api.kinds import BY_KIND, Kind
from services.api.labels import Selector, SelectorError, from_label_selector
from services.api.meta import object_key, pod_key
from services.client import Client, Handlers, Informer
from services.clock import Clock, parse_rfc3339, rfc3339

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
REPLICA_SETS = BY_KIND["ReplicaSet"]
EVENTS = BY_KIND["Event"]
#: Upstream's SlowStartInitialBatchSize.
SLOW_START_INITIAL_BATCH_SIZE = 1
#: Upstream's ExpectationsTimeout.
EXPECTATIONS_TIMEOUT = 300.0
#: Lower cost is deleted first (PodDeletionCost, on by default upstream).
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_INT32 = (-(2**31), 2**31 - 1)


# ============================================================================ pod helpers


def controller_of(obj: Message) -> meta_pb2.OwnerReference | None:
    """The owner reference with controller=true (metav1.GetControllerOf)."""
    for ref in obj.metadata.owner_references:  # type: ignore[attr-defined]
        if ref.HasField("controller") and ref.controller:
            return ref  # type: ignore[no-any-return]
    return None


def new_controller_ref(owner: Message, kind: Kind) -> meta_pb2.OwnerReference:
    """metav1.NewControllerRef: controller and blockOwnerDeletion both true."""
    meta = owner.metadata  # type: ignore[attr-defined]
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


class NamespaceIndex:
    """The keys of one shared informer's store by namespace (client-go's namespace
    index). Construct it before registering the handlers that read it: handlers run in
    registration order, so the index is current when they look."""

    def __init__(self, informer: Informer) -> None:
        self._informer = informer
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

    def list(self, namespace: str) -> list[Message]:
        store = self._informer.store
        return [store[k] for k in self._keys.get(namespace, ()) if k in store]


# ============================================================================ expectations


@dataclass
class _Expectation:
    add: int
    delete: int
    timestamp: float

    def fulfilled(self) -> bool:
        return self.add <= 0 and self.delete <= 0


class ControllerExpectations:
    """What each controller key still expects to observe (upstream ControllerExpectations
    with UIDTrackingControllerExpectations for deletions).

    Once set, expectations only go down; a key whose expectations are fulfilled or older
    than `timeout` may sync again; a key with none recorded may always sync.
    """

    def __init__(self, clock: Clock, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock = clock
        self._timeout = timeout
        self._store: dict[str, _Expectation] = {}
        self._deleting: dict[str, set[str]] = {}

    def satisfied(self, key: str) -> bool:
        exp = self._store.get(key)
        if exp is None:
            return True
        return exp.fulfilled() or self._clock.monotonic() - exp.timestamp > self._timeout

    def get(self, key: str) -> tuple[int, int] | None:
        exp = self._store.get(key)
        return None if exp is None else (exp.add, exp.delete)

    def expect_creations(self, key: str, adds: int) -> None:
        self._store[key] = _Expectation(adds, 0, self._clock.monotonic())

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        keys = set(pod_keys)
        self._deleting[key] = keys
        self._store[key] = _Expectation(0, len(keys), self._clock.monotonic())

    def creation_observed(self, key: str) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """Counts once per expected pod, whether seen terminating or gone."""
        keys = self._deleting.get(key)
        if keys is not None and pod_key in keys:
            keys.discard(pod_key)
            exp = self._store.get(key)
            if exp is not None:
                exp.delete -= 1

    def delete(self, key: str) -> None:
        self._store.pop(key, None)
        self._deleting.pop(key, None)


# ============================================================================ adoption


class CannotAdoptError(ApiError):
    """The owner is gone or being deleted (upstream RecheckDeletionTimestamp)."""


def _owner_refs_json(refs: Iterable[meta_pb2.OwnerReference]) -> list[dict[str, object]]:
    return [codec.encode(r) for r in refs]


async def adopt(
    client: Client, kind: Kind, obj: Message, owner: Message, owner_kind: Kind
) -> Message:
    """Add `owner` as controller of `obj`, if `obj` is still the version we saw."""
    meta = obj.metadata  # type: ignore[attr-defined]
    refs = [
        *_owner_refs_json(meta.owner_references),
        codec.encode(new_controller_ref(owner, owner_kind)),
    ]
    return await _patch_owner_refs(client, kind, obj, refs)


async def release(client: Client, kind: Kind, obj: Message, owner_uid: str) -> Message:
    """Drop `owner_uid`'s reference from `obj`, if `obj` is still the version we saw."""
    meta = obj.metadata  # type: ignore[attr-defined]
    refs = _owner_refs_json(r for r in meta.owner_references if r.uid != owner_uid)
    return await _patch_owner_refs(client, kind, obj, refs)


async def _patch_owner_refs(
    client: Client, kind: Kind, obj: Message, refs: list[dict[str, object]]
) -> Message:
    """Set `obj`'s ownerReferences to `refs`, pinned to the uid and resourceVersion we saw."""
    meta = obj.metadata  # type: ignore[attr-defined]
    patch = {
        "metadata": {
            "ownerReferences": refs,
            "uid": meta.uid,
            "resourceVersion": meta.resource_version,
        }
    }
    return await client.patch(kind, meta.name, json.dumps(patch), namespace=meta.namespace)


async def claim(
    client: Client,
    kind: Kind,
    owner: Message,
    owner_kind: Kind,
    selector: Selector | None,
    candidates: Iterable[Message],
    can_adopt: Callable[[], Awaitable[None]],
) -> list[Message]:
    """Upstream's ControllerRefManager.Claim*: the candidates `owner` controls once it has
    adopted matching orphans and released its objects that no longer match. Objects
    controlled by someone else are left alone. `can_adopt` (run once, before the first
    adoption) raises when the owner must not adopt. Raises the first error after trying
    every candidate."""
    owner_meta = owner.metadata  # type: ignore[attr-defined]
    claimed: list[Message] = []
    errors: list[ApiError] = []
    adopt_error: ApiError | None = None
    adopt_checked = False
    for obj in candidates:
        meta = obj.metadata  # type: ignore[attr-defined]
        matches = selector is not None and selector.matches(meta.labels)
        ref = controller_of(obj)
        if ref is not None:
            if ref.uid != owner_meta.uid:
                continue  # someone else's
            if matches:
                claimed.append(obj)
            elif not owner_meta.deletion_timestamp:
                try:
                    await release(client, kind, obj, owner_meta.uid)
                except NotFoundError:
                    pass
                except ApiError as e:
                    errors.append(e)
            continue
        # An orphan.
        if owner_meta.deletion_timestamp or not matches or meta.deletion_timestamp:
            continue
        if owner_meta.namespace and owner_meta.namespace != meta.namespace:
            continue
        if not adopt_checked:
            adopt_checked = True
            try:
                await can_adopt()
            except ApiError as e:
                adopt_error = e
        if adopt_error is not None:
            errors.append(adopt_error)
            continue
        try:
            claimed.append(await adopt(client, kind, obj, owner, owner_kind))
        except NotFoundError:
            pass
        except ApiError as e:
            errors.append(e)
    if errors:
        raise errors[0]
    return claimed


def recheck_owner(client: Client, kind: Kind, owner: Message) -> Callable[[], Awaitable[None]]:
    """A can_adopt that re-reads the owner from the apiserver (not the cache): adopting is
    only safe while the owner exists with the same UID and is not being deleted."""

    async def check() -> None:
        meta = owner.metadata  # type: ignore[attr-defined]
        fresh = await client.get(kind, meta.name, meta.namespace)
        fmeta = fresh.metadata  # type: ignore[attr-defined]
        if fmeta.uid != meta.uid:
            raise CannotAdoptError(
                f"original {kind.kind} {meta.namespace}/{meta.name} is gone: got uid {fmeta.uid}, wanted {meta.uid}"
            )
        if fmeta.deletion_timestamp:
            raise CannotAdoptError(
                f"{meta.namespace}/{meta.name} has just been deleted at {fmeta.deletion_timestamp}"
            )

    return check


# ============================================================================ ranking


def deletion_cost(pod: core_pb2.Pod) -> int:
    text = pod.metadata.annotations.get(POD_DELETION_COST, "")
    try:
        cost = int(text)
    except ValueError:
        return 0
    return cost if _INT32[0] <= cost <= _INT32[1] else 0


def _ready_time(pod: core_pb2.Pod) -> float | None:
    c = pod_ready_condition(pod)
    if c is None or c.status != "True":
        return None
    return timestamp(c.last_transition_time)


def _max_restarts(pod: core_pb2.Pod) -> int:
    return max((c.restart_count for c in pod.status.container_statuses), default=0)


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _log_rank(t: float, now: float) -> int:
    nanos = (now - t) * 1e9
    return int(math.log2(nanos)) if nanos > 0 else -1


def _newer_first(t1: float | None, t2: float | None, uid1: str, uid2: str, now: float) -> bool:
    """Later (or zero) time first, compared in log2 buckets of age with the UID as the
    tie-break (LogarithmicScaleDown, on by default upstream)."""
    if t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


def _deletion_less(a: tuple[core_pb2.Pod, int], b: tuple[core_pb2.Pod, int], now: float) -> bool:
    """Whether pod a should be deleted before pod b (upstream ActivePodsWithRanks.Less):
    unassigned < assigned; Pending < Unknown < Running; not ready < ready; lower
    deletion cost; more related pods on the same node; ready more recently; more
    container restarts; created more recently."""
    (p, rank_p), (q, rank_q) = a, b
    if p.spec.node_name != q.spec.node_name and (not p.spec.node_name or not q.spec.node_name):
        return not p.spec.node_name
    op, oq = _PHASE_ORDINAL.get(p.status.phase, 0), _PHASE_ORDINAL.get(q.status.phase, 0)
    if op != oq:
        return op < oq
    rp, rq = is_pod_ready(p), is_pod_ready(q)
    if rp != rq:
        return not rp
    cp, cq = deletion_cost(p), deletion_cost(q)
    if cp != cq:
        return cp < cq
    if rank_p != rank_q:
        return rank_p > rank_q
    if rp and rq:
        tp, tq = _ready_time(p), _ready_time(q)
        if tp != tq:
            return _newer_first(tp, tq, p.metadata.uid, q.metadata.uid, now)
    mp, mq = _max_restarts(p), _max_restarts(q)
    if mp != mq:
        return mp > mq
    tp, tq = timestamp(p.metadata.creation_timestamp), timestamp(q.metadata.creation_timestamp)
    if tp != tq:
        return _newer_first(tp, tq, p.metadata.uid, q.metadata.uid, now)
    return False


def rank_for_deletion(
    pods: Sequence[core_pb2.Pod], related: Sequence[core_pb2.Pod], now: float
) -> list[core_pb2.Pod]:
    """`pods` in the order the controller deletes them. A pod's rank is the number of
    active `related` pods (those of every ReplicaSet of the same owner) on its node, so
    doubled-up nodes lose pods first."""
    on_node: dict[str, int] = defaultdict(int)
    for p in related:
        if is_pod_active(p):
            on_node[p.spec.node_name] += 1
    ranked = [(p, on_node[p.spec.node_name]) for p in pods]

    def cmp(a: tuple[core_pb2.Pod, int], b: tuple[core_pb2.Pod, int]) -> int:
        if _deletion_less(a, b, now):
            return -1
        return 1 if _deletion_less(b, a, now) else 0

    ranked.sort(key=functools.cmp_to_key(cmp))
    return [p for p, _ in ranked]


# ============================================================================ slow start


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
    spec.nodeName index). Register `handlers()` before any handler that reads it."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, core_pb2.Pod]] = {}
        self._node_of: dict[str, str] = {}

    def handlers(self) -> Handlers:
        return Handlers(
            on_add=self._set, on_update=lambda _old, new: self._set(new), on_delete=self._remove
        )

    def pods_on(self, node_name: str) -> list[core_pb2.Pod]:
        return list(self._by_node.get(node_name, {}).values())

    def _set(self, pod: Message) -> None:
        key = pod_key(pod)
        node = pod.spec.node_name  # type: ignore[attr-defined]
        prev = self._node_of.get(key)
        if prev is not None and prev != node:
            self._drop(prev, key)
        if node:
            self._by_node.setdefault(node, {})[key] = pod  # type: ignore[assignment]
            self._node_of[key] = node

    def _remove(self, pod: Message) -> None:
        key = pod_key(pod)
        prev = self._node_of.pop(key, None)
        if prev is not None:
            self._drop(prev, key)

    def _drop(self, node: str, key: str) -> None:
        pods = self._by_node.get(node)
        if pods is not None:
            pods.pop(key, None)
            if not pods:
                del self._by_node[node]


# ============================================================================ events


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
        first_timestamp=stamp,
        last_timestamp=stamp,
        count=1,
    )
    ev.metadata.namespace = namespace or "default"
    ev.metadata.name = f"{name}.{secrets.token_hex(8)}"
    return ev


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
    "EXPECTATIONS_TIMEOUT",
    "POD_DELETION_COST",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "CannotAdoptError",
    "ControllerExpectations",
    "EventRecorder",
    "NamespaceIndex",
    "PodsByNode",
    "adopt",
    "claim",
    "controller_of",
    "deletion_cost",
    "is_namespace_terminating",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "new_controller_ref",
    "new_event",
    "pod_key",
    "pod_ready_condition",
    "rank_for_deletion",
    "recheck_owner",
    "release",
    "selector_for",
    "slow_start_batch",
    "split_key",
    "timestamp",
    "wait_any",
    "wait_synced",
    "write_event",
]
