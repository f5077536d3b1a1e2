"""The ReplicaSet controller (upstream pkg/controller/replicaset), and the controller
helpers the Deployment and PodGC controllers share with it (upstream pkg/controller's
controller_utils.go and controller_ref_manager.go).

A ReplicaSet keeps `spec.replicas` active pods matching its selector. One sync of a key:

    cascade (pods of a deleted RS of that name) ─► RS gone? forget its expectations, done
      ─► active pods of the namespace ─► claim (adopt matching orphans, release our pods
         that stopped matching) ─► expectations satisfied and RS not being deleted?
         ─► manage: create (slow start 1, 2, 4, …; at most burst_replicas) or delete
            (ranked as upstream's ActivePodsWithRanks) ─► status (only when it changed)

Expectations (upstream ControllerExpectations + UID tracking): before creating n pods the
controller records "expect n adds"; each pod-add event of a pod it controls lowers the
count, and until it reaches 0 (or 5 min pass) syncs do not create or delete again. So a
burst of events while its own creations are in flight cannot make it create twice.
Deletions are tracked by pod key, so a pod seen first with a deletionTimestamp and later
deleted is counted once.

Active pods (what counts towards replicas): not Succeeded, not Failed, no
deletionTimestamp. An evicted pod (Failed, reason Evicted) is therefore replaced at once.

kubera has no garbage collector: with `cascade_delete` (default) the controller deletes the
pods a deleted ReplicaSet controlled, as the GC's background propagation would. It cannot
see the propagation policy, so `--cascade=orphan` deletions also take the pods.
"""

from __future__ import annotations

import asyncio
import contextlib
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

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2
from services.api import codec
from services.api.errors import ApiError, NotFoundError
from services.api.kinds import BY_KIND, Kind
from services.api.labels import Selector, SelectorError, from_label_selector
from services.client import Client
from services.client.informer import Handlers, Informer, SharedInformers, object_key
from services.clock import Clock, RealClock, parse_rfc3339, rfc3339
from services.controllers.workqueue import WorkQueue, default_controller_rate_limiter

log = logging.getLogger(__name__)

PODS = BY_KIND["Pod"]
REPLICA_SETS = BY_KIND["ReplicaSet"]
EVENTS = BY_KIND["Event"]

#: Upstream's BurstReplicas: at most this many pods created or deleted in one sync.
BURST_REPLICAS = 500
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
    patch = {
        "metadata": {
            "ownerReferences": refs,
            "uid": meta.uid,
            "resourceVersion": meta.resource_version,
        }
    }
    return await client.patch(kind, meta.name, json.dumps(patch), namespace=meta.namespace)


async def release(client: Client, kind: Kind, obj: Message, owner_uid: str) -> Message:
    """Drop `owner_uid`'s reference from `obj`, if `obj` is still the version we saw."""
    meta = obj.metadata  # type: ignore[attr-defined]
    refs = _owner_refs_json(r for r in meta.owner_references if r.uid != owner_uid)
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


# ============================================================================ events


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
        kind = obj.kind or type(obj).__name__  # type: ignore[attr-defined]
        now = rfc3339(self.clock.now())
        ev = core_pb2.Event(
            involved_object=core_pb2.ObjectReference(
                kind=kind,
                namespace=meta.namespace,
                name=meta.name,
                uid=meta.uid,
                api_version=obj.api_version,  # type: ignore[attr-defined]
                resource_version=meta.resource_version,
            ),
            reason=reason,
            message=message,
            type=type_,
            source=core_pb2.EventSource(component=self.component),
            reporting_component=self.component,
            first_timestamp=now,
            last_timestamp=now,
            count=1,
        )
        ev.metadata.namespace = meta.namespace or "default"
        ev.metadata.name = f"{meta.name}.{secrets.token_hex(8)}"
        task = asyncio.get_running_loop().create_task(self._write(ev))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, ev: core_pb2.Event) -> None:
        try:
            await self.client.create(ev)
        except ApiError as e:
            log.info("could not record event %s %s: %s", ev.reason, ev.involved_object.name, e)

    async def close(self) -> None:
        tasks = list(self._tasks)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


# ============================================================================ controller


@dataclass
class ReplicaSetConfig:
    """Settings of the ReplicaSet controller (kube-controller-manager flags and constants)."""

    workers: int = 5
    """ReplicaSets synced at once (--concurrent-replicaset-syncs)."""

    burst_replicas: int = BURST_REPLICAS
    """Most pods one sync creates or deletes; the rest wait for the next sync."""

    expectations_timeout: float = EXPECTATIONS_TIMEOUT
    """How long a sync waits for its own creations and deletions to be observed before it
    acts again anyway (a lost watch event must not stall a ReplicaSet forever)."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the pods of a deleted ReplicaSet (kubera has no garbage collector)."""

    record_events: bool = True
    """Write SuccessfulCreate / SuccessfulDelete / FailedCreate / FailedDelete Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.burst_replicas < 1:
            raise ValueError(f"burst_replicas must be at least 1, got {self.burst_replicas}")
        if self.expectations_timeout <= 0:
            raise ValueError(
                f"expectations_timeout must be positive, got {self.expectations_timeout}"
            )
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


def pod_from_template(rs: apps_pb2.ReplicaSet) -> core_pb2.Pod:
    """A pod for `rs` (GetPodFromTemplate): the template's labels, annotations,
    finalizers and spec, named `<rs>-<5 random>` by the apiserver (generateName), and
    controlled by `rs`."""
    template = rs.spec.template
    pod = PODS.new()
    assert isinstance(pod, core_pb2.Pod)
    pod.metadata.namespace = rs.metadata.namespace
    pod.metadata.generate_name = f"{rs.metadata.name}-"
    pod.metadata.labels.update(template.metadata.labels)
    pod.metadata.annotations.update(template.metadata.annotations)
    pod.metadata.finalizers.extend(template.metadata.finalizers)
    pod.metadata.owner_references.append(new_controller_ref(rs, REPLICA_SETS))
    pod.spec.CopyFrom(template.spec)
    return pod


def _set_rs_condition(
    status: apps_pb2.ReplicaSetStatus, cond: apps_pb2.ReplicaSetCondition
) -> None:
    for c in status.conditions:
        if c.type == cond.type:
            if c.status == cond.status and c.reason == cond.reason:
                return
            break
    keep = [c for c in status.conditions if c.type != cond.type]
    del status.conditions[:]
    status.conditions.extend([*keep, cond])


def calculate_status(
    rs: apps_pb2.ReplicaSet, pods: Sequence[core_pb2.Pod], manage_error: ApiError | None, now: float
) -> apps_pb2.ReplicaSetStatus:
    """replicas = active pods; fullyLabeled = those carrying every template label; ready;
    available (ready for minReadySeconds); a ReplicaFailure condition while creating or
    deleting fails."""
    status = apps_pb2.ReplicaSetStatus()
    status.CopyFrom(rs.status)
    template_labels = Selector.from_set(rs.spec.template.metadata.labels)
    status.replicas = len(pods)
    status.fully_labeled_replicas = sum(
        1 for p in pods if template_labels.matches(p.metadata.labels)
    )
    status.ready_replicas = sum(1 for p in pods if is_pod_ready(p))
    status.available_replicas = sum(
        1 for p in pods if is_pod_available(p, rs.spec.min_ready_seconds, now)
    )
    has_failure = any(c.type == "ReplicaFailure" for c in rs.status.conditions)
    if manage_error is not None and not has_failure:
        diff = len(pods) - rs.spec.replicas
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        cond = apps_pb2.ReplicaSetCondition(
            type="ReplicaFailure",
            status="True",
            reason=reason,
            message=str(manage_error),
            last_transition_time=rfc3339(now),
        )
        _set_rs_condition(status, cond)
    elif manage_error is None and has_failure:
        keep = [c for c in status.conditions if c.type != "ReplicaFailure"]
        del status.conditions[:]
        status.conditions.extend(keep)
    return status


class ReplicaSetController:
    """Keeps each ReplicaSet's active pods at spec.replicas (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: ReplicaSetConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or ReplicaSetConfig()
        self.clock = clock or RealClock()
        self.rs_informer = informers.get(REPLICA_SETS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = WorkQueue(
            clock=self.clock,
            rate_limiter=default_controller_rate_limiter(
                self.clock, base_delay=self.config.base_backoff, max_delay=self.config.max_backoff
            ),
            name="replicaset",
        )
        self.expectations = ControllerExpectations(self.clock, self.config.expectations_timeout)
        self.events = EventRecorder(
            client, "replicaset-controller", self.clock, enabled=self.config.record_events
        )
        self._rs_index = NamespaceIndex(self.rs_informer)
        self._pod_index = NamespaceIndex(self.pod_informer)
        # RS key -> UIDs of deleted ReplicaSets of that name whose pods are still to go.
        self._dead_owners: dict[str, set[str]] = {}
        self.rs_informer.add_handlers(Handlers(self._add_rs, self._update_rs, self._delete_rs))
        self.pod_informer.add_handlers(Handlers(self._add_pod, self._update_pod, self._delete_pod))

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Sync ReplicaSets with `workers` workers until `stop` is set."""
        workers: list[asyncio.Task[None]] = []
        try:
            if await wait_synced(stop, self.rs_informer.synced, self.pod_informer.synced):
                workers = [
                    asyncio.create_task(self._worker(), name=f"replicaset-worker-{i}")
                    for i in range(self.config.workers)
                ]
                await stop.wait()
        finally:
            self.queue.shutdown()
            for w in workers:
                w.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            await self.events.close()

    async def _worker(self) -> None:
        while (key := await self.queue.get()) is not None:
            try:
                await self.sync(key)
                self.queue.forget(key)
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - logged and retried with backoff
                if isinstance(e, ApiError):
                    log.info("sync of replicaset %s failed: %s", key, e)
                else:
                    log.exception("sync of replicaset %s failed", key)
                self.queue.add_rate_limited(key)
            finally:
                self.queue.done(key)

    # ------------------------------------------------------------------ lookups

    def replica_sets_in(self, namespace: str) -> list[apps_pb2.ReplicaSet]:
        return self._rs_index.list(namespace)  # type: ignore[return-value]

    def pods_in(self, namespace: str) -> list[core_pb2.Pod]:
        return self._pod_index.list(namespace)  # type: ignore[return-value]

    def _resolve(self, namespace: str, ref: meta_pb2.OwnerReference) -> apps_pb2.ReplicaSet | None:
        if ref.kind != REPLICA_SETS.kind:
            return None
        rs = self.rs_informer.store.get(f"{namespace}/{ref.name}")
        if rs is None or rs.metadata.uid != ref.uid:  # type: ignore[attr-defined]
            return None
        return rs  # type: ignore[return-value]

    def _replica_sets_selecting(self, pod: core_pb2.Pod) -> list[apps_pb2.ReplicaSet]:
        out = []
        for rs in self.replica_sets_in(pod.metadata.namespace):
            sel = selector_for(rs.spec.selector)
            if sel is None or sel.is_empty() or not sel.matches(pod.metadata.labels):
                continue
            out.append(rs)
        return out

    def _related_pods(self, rs: apps_pb2.ReplicaSet) -> list[core_pb2.Pod]:
        """Pods selected by every ReplicaSet with the same controller (getIndirectlyRelatedPods)."""
        ref = controller_of(rs)
        if ref is None:
            return []
        seen: set[str] = set()
        out: list[core_pb2.Pod] = []
        pods = self.pods_in(rs.metadata.namespace)
        for other in self.replica_sets_in(rs.metadata.namespace):
            other_ref = controller_of(other)
            if other_ref is None or other_ref.uid != ref.uid:
                continue
            sel = selector_for(other.spec.selector)
            if sel is None:
                continue
            for p in pods:
                if p.metadata.uid not in seen and sel.matches(p.metadata.labels):
                    seen.add(p.metadata.uid)
                    out.append(p)
        return out

    # ------------------------------------------------------------------ event handlers

    def _add_rs(self, rs: Message) -> None:
        self.queue.add(object_key(rs))

    def _update_rs(self, old: Message, cur: Message) -> None:
        if old.metadata.uid != cur.metadata.uid:  # type: ignore[attr-defined]
            self._delete_rs(old)  # deleted and re-created between two looks
        self._add_rs(cur)

    def _delete_rs(self, rs: Message) -> None:
        key = object_key(rs)
        # A new ReplicaSet of the same name starts clean.
        self.expectations.delete(key)
        if self.config.cascade_delete:
            self._dead_owners.setdefault(key, set()).add(rs.metadata.uid)  # type: ignore[attr-defined]
        self.queue.add(key)

    def _add_pod(self, obj: Message) -> None:
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
        if pod.metadata.deletion_timestamp:
            # Seen for the first time already terminating (e.g. after a restart): that is
            # a deletion to observe, never a creation.
            self._pod_gone(pod)
            return
        ref = controller_of(pod)
        if ref is not None:
            rs = self._resolve(pod.metadata.namespace, ref)
            if rs is not None:
                rs_key = object_key(rs)
                self.expectations.creation_observed(rs_key)
                self.queue.add(rs_key)
            return
        # An orphan: whoever selects it may want to adopt it. No creation is observed.
        for rs in self._replica_sets_selecting(pod):
            self.queue.add(object_key(rs))

    def _update_pod(self, old_obj: Message, cur_obj: Message) -> None:
        old: core_pb2.Pod = old_obj  # type: ignore[assignment]
        cur: core_pb2.Pod = cur_obj  # type: ignore[assignment]
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        labels_changed = dict(cur.metadata.labels) != dict(old.metadata.labels)
        if cur.metadata.deletion_timestamp:
            # Graceful deletion began: replace the pod now, not when the kubelet is done.
            self._pod_gone(cur)
            if labels_changed:
                self._pod_gone(old)
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            prev = self._resolve(old.metadata.namespace, old_ref)
            if prev is not None:
                self.queue.add(object_key(prev))
        if cur_ref is not None:
            rs = self._resolve(cur.metadata.namespace, cur_ref)
            if rs is None:
                return
            self.queue.add(object_key(rs))
            if not is_pod_ready(old) and is_pod_ready(cur) and rs.spec.min_ready_seconds > 0:
                # Available only minReadySeconds later; one extra second against skew.
                self.queue.add_after(object_key(rs), rs.spec.min_ready_seconds + 1.0)
            return
        if labels_changed or ref_changed:
            for rs in self._replica_sets_selecting(cur):
                self.queue.add(object_key(rs))

    def _delete_pod(self, obj: Message) -> None:
        self._pod_gone(obj)  # type: ignore[arg-type]

    def _pod_gone(self, pod: core_pb2.Pod) -> None:
        ref = controller_of(pod)
        if ref is None:
            return
        rs = self._resolve(pod.metadata.namespace, ref)
        if rs is None:
            return
        rs_key = object_key(rs)
        self.expectations.deletion_observed(rs_key, object_key(pod))
        self.queue.add(rs_key)

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Reconcile one ReplicaSet; raises to be retried with backoff."""
        cached = self.rs_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            self.expectations.delete(key)
            return
        rs: apps_pb2.ReplicaSet = cached  # type: ignore[assignment]
        needs_sync = self.expectations.satisfied(key)
        selector = selector_for(rs.spec.selector)
        if selector is None:
            log.warning("replicaset %s has an invalid selector; ignoring it", key)
            return
        active = [p for p in self.pods_in(rs.metadata.namespace) if is_pod_active(p)]
        pods: list[core_pb2.Pod] = await claim(  # type: ignore[assignment]
            self.client,
            PODS,
            rs,
            REPLICA_SETS,
            selector,
            active,
            recheck_owner(self.client, REPLICA_SETS, rs),
        )
        manage_error: ApiError | None = None
        if needs_sync and not rs.metadata.deletion_timestamp:
            try:
                await self._manage_replicas(key, pods, rs)
            except ApiError as e:
                manage_error = e
        status = calculate_status(rs, pods, manage_error, self.clock.now())
        updated = await self._update_status(rs, status)
        if (
            manage_error is None
            and updated.spec.min_ready_seconds > 0
            and updated.status.ready_replicas == updated.spec.replicas
            and updated.status.available_replicas != updated.spec.replicas
        ):
            # Last line of defence against clock skew: look again when they should be available.
            self.queue.add_after(key, float(updated.spec.min_ready_seconds))
        if manage_error is not None:
            raise manage_error

    async def _manage_replicas(
        self, key: str, pods: Sequence[core_pb2.Pod], rs: apps_pb2.ReplicaSet
    ) -> None:
        diff = len(pods) - rs.spec.replicas
        if diff < 0:
            await self._create_pods(key, rs, min(-diff, self.config.burst_replicas))
        elif diff > 0:
            await self._delete_pods(key, rs, pods, min(diff, self.config.burst_replicas))

    async def _create_pods(self, key: str, rs: apps_pb2.ReplicaSet, count: int) -> None:
        self.expectations.expect_creations(key, count)
        template = pod_from_template(rs)

        async def create(n: int) -> tuple[int, ApiError | None]:
            try:
                results = await self.client.batch_create([template] * n)
            except ApiError as e:
                self.events.event(rs, "Warning", "FailedCreate", f"Error creating: {e}")
                return 0, e
            ok, first = 0, None
            for r in results:
                if r.error is None and r.object is not None:
                    ok += 1
                    self.events.event(
                        rs,
                        "Normal",
                        "SuccessfulCreate",
                        f"Created pod: {r.object.metadata.name}",  # type: ignore[attr-defined]
                    )
                elif r.error is not None and is_namespace_terminating(r.error):
                    ok += 1  # nothing more can be created; the namespace is going away
                elif r.error is not None:
                    self.events.event(rs, "Warning", "FailedCreate", f"Error creating: {r.error}")
                    first = first or r.error
            return ok, first

        made, err = await slow_start_batch(count, SLOW_START_INITIAL_BATCH_SIZE, create)
        # Pods never created will never be observed: stop expecting them.
        for _ in range(count - made):
            self.expectations.creation_observed(key)
        if err is not None:
            raise err

    async def _delete_pods(
        self, key: str, rs: apps_pb2.ReplicaSet, pods: Sequence[core_pb2.Pod], count: int
    ) -> None:
        victims = pods
        if count < len(pods):
            victims = rank_for_deletion(pods, self._related_pods(rs), self.clock.now())[:count]
        self.expectations.expect_deletions(key, [object_key(p) for p in victims])

        async def delete(pod: core_pb2.Pod) -> ApiError | None:
            try:
                await self.client.delete(PODS, pod.metadata.name, pod.metadata.namespace)
            except ApiError as e:
                # This deletion will never be observed.
                self.expectations.deletion_observed(key, object_key(pod))
                if isinstance(e, NotFoundError):
                    return None
                self.events.event(rs, "Warning", "FailedDelete", f"Error deleting: {e}")
                return e
            self.events.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pod.metadata.name}")
            return None

        errors = [e for e in await asyncio.gather(*(delete(p) for p in victims)) if e is not None]
        if errors:
            raise errors[0]

    async def _update_status(
        self, rs: apps_pb2.ReplicaSet, status: apps_pb2.ReplicaSetStatus
    ) -> apps_pb2.ReplicaSet:
        """Write `status` unless nothing changed; one retry on a fresh read."""
        old = rs.status
        if (
            old.replicas == status.replicas
            and old.fully_labeled_replicas == status.fully_labeled_replicas
            and old.ready_replicas == status.ready_replicas
            and old.available_replicas == status.available_replicas
            and rs.metadata.generation == old.observed_generation
            and list(old.conditions) == list(status.conditions)
        ):
            return rs
        status.observed_generation = rs.metadata.generation
        target: apps_pb2.ReplicaSet = codec.clone(rs)  # type: ignore[assignment]
        for attempt in range(2):
            target.status.CopyFrom(status)
            try:
                return await self.client.update_status(target)
            except ApiError:
                if attempt == 1:
                    raise
                target = await self.client.get(  # type: ignore[assignment]
                    REPLICA_SETS, rs.metadata.name, rs.metadata.namespace
                )
        raise AssertionError("unreachable")

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the pods that deleted ReplicaSets of this name controlled."""
        dead = self._dead_owners.get(key)
        if not dead:
            return
        if current is not None:
            dead.discard(current.metadata.uid)  # type: ignore[attr-defined]
        ns = split_key(key)[0]
        doomed = []
        for pod in self.pods_in(ns):
            ref = controller_of(pod)
            if ref is not None and ref.uid in dead and not pod.metadata.deletion_timestamp:
                doomed.append(pod)

        async def delete(pod: core_pb2.Pod) -> None:
            with contextlib.suppress(NotFoundError):
                await self.client.delete(
                    PODS, pod.metadata.name, pod.metadata.namespace, uid=pod.metadata.uid
                )

        await asyncio.gather(*(delete(p) for p in doomed))
        self._dead_owners.pop(key, None)


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
    "BURST_REPLICAS",
    "ControllerExpectations",
    "EventRecorder",
    "NamespaceIndex",
    "ReplicaSetConfig",
    "ReplicaSetController",
    "calculate_status",
    "claim",
    "controller_of",
    "is_pod_active",
    "is_pod_available",
    "is_pod_ready",
    "new_controller_ref",
    "pod_from_template",
    "rank_for_deletion",
    "recheck_owner",
    "selector_for",
    "slow_start_batch",
    "wait_synced",
]
