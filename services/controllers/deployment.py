"""The Deployment controller (upstream pkg/controller/deployment): rolls a pod template out
through ReplicaSets.

A Deployment owns ReplicaSets named `<deployment>-<pod-template-hash>`; the hash (of the
pod template and status.collisionCount) is also a label on the ReplicaSet, on its selector
and on its template, so the pods of two revisions never overlap. The ReplicaSet whose
template equals the Deployment's (ignoring that label) is the new one; every other one is
old. Each ReplicaSet carries its revision (`deployment.kubernetes.io/revision`, the
highest old revision + 1 for the new one) and the desired/max replicas it was sized for.

One sync, in upstream's order of precedence:

    claim ReplicaSets (adopt / release) ─► being deleted: status only
      ─► paused: scale proportionally + clean up history, status
      ─► a scaling event (an active RS sized for another spec.replicas): the same
      ─► Recreate: old RSes to 0; once no old pod runs, create/scale the new RS
      ─► RollingUpdate: scale the new RS up within maxSurge, else old RSes down within
         maxUnavailable (unhealthy replicas first); complete: trim revision history
      ─► status (replicas, updated, ready, available, unavailable, Available and
         Progressing conditions, progress deadline)

maxSurge rounds up and maxUnavailable down (percent of spec.replicas); both resolving to 0
makes maxUnavailable 1. The apiserver already refuses both set to 0.

Where kubera deliberately differs (both only while another controller's view lags):
- the pods of a ReplicaSet are counted as max(spec.replicas, status.replicas) when deciding
  how far the new ReplicaSet may surge, so it never grows before the ReplicaSet controller
  has seen the old pods it deleted go (upstream counts spec only and can briefly run more
  than replicas + maxSurge pods);
- a ReplicaSet's available replicas are counted as at most its spec.replicas when scaling
  down, which is what its status will say once its controller has caught up (upstream may
  read a stale, larger number and scale down past maxUnavailable).
Upstream's deprecated rollback annotation is not supported.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2, meta_pb2
from services.api import codec
from services.api.errors import AlreadyExistsError, ApiError, NotFoundError
from services.api.kinds import BY_KIND
from services.api.labels import Selector
from services.client import Client
from services.client.informer import Handlers, SharedInformers, object_key
from services.clock import Clock, RealClock, rfc3339
from services.controllers.replicaset import (
    PODS,
    REPLICA_SETS,
    EventRecorder,
    NamespaceIndex,
    claim,
    controller_of,
    is_namespace_terminating,
    new_controller_ref,
    recheck_owner,
    selector_for,
    split_key,
    timestamp,
    wait_synced,
)
from services.controllers.workqueue import WorkQueue, default_controller_rate_limiter

log = logging.getLogger(__name__)

DEPLOYMENTS = BY_KIND["Deployment"]

DEFAULT_UNIQUE_LABEL_KEY = "pod-template-hash"
REVISION_ANNOTATION = "deployment.kubernetes.io/revision"
REVISION_HISTORY_ANNOTATION = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS_ANNOTATION = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS_ANNOTATION = "deployment.kubernetes.io/max-replicas"
LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
DEPRECATED_ROLLBACK_TO = "deprecated.deployment.rollback.to"
#: Annotations of a Deployment never copied onto its ReplicaSets.
ANNOTATIONS_TO_SKIP = frozenset(
    {
        LAST_APPLIED_ANNOTATION,
        REVISION_ANNOTATION,
        REVISION_HISTORY_ANNOTATION,
        DESIRED_REPLICAS_ANNOTATION,
        MAX_REPLICAS_ANNOTATION,
        DEPRECATED_ROLLBACK_TO,
    }
)
#: Upstream's maxRevHistoryLengthInChars.
MAX_REV_HISTORY_CHARS = 2000
#: Upstream's maxRetries: a key failing this often is dropped until its next event.
MAX_RETRIES = 15
_MAX_INT32 = 2**31 - 1

# Condition reasons, in upstream's words.
REPLICA_SET_UPDATED = "ReplicaSetUpdated"
FAILED_RS_CREATE = "ReplicaSetCreateError"
NEW_REPLICA_SET = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"

ROLLING_UPDATE = "RollingUpdate"
RECREATE = "Recreate"

Deployment = apps_pb2.Deployment
ReplicaSet = apps_pb2.ReplicaSet


# ============================================================================ the template hash

_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery rand: no vowels, no 0/1/3


def safe_encode(text: str) -> str:
    """apimachinery's rand.SafeEncodeString: each character mapped into an alphabet
    without vowels, so hashes never spell words."""
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in text)


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: core_pb2.PodTemplateSpec, collision_count: int | None = None) -> str:
    """The pod-template-hash: FNV-32a of the template (its canonical JSON here, where
    upstream hashes a Go dump of the struct), then the collision count as 8 little-endian
    bytes when set, printed in decimal and safe-encoded (controller.ComputeHash)."""
    data = json.dumps(codec.encode(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    return safe_encode(str(_fnv32a(data)))


def equal_ignore_hash(t1: core_pb2.PodTemplateSpec, t2: core_pb2.PodTemplateSpec) -> bool:
    """Templates equal but for the pod-template-hash label."""
    a, b = core_pb2.PodTemplateSpec(), core_pb2.PodTemplateSpec()
    a.CopyFrom(t1)
    b.CopyFrom(t2)
    a.metadata.labels.pop(DEFAULT_UNIQUE_LABEL_KEY, None)
    b.metadata.labels.pop(DEFAULT_UNIQUE_LABEL_KEY, None)
    return a == b


# ============================================================================ int-or-percent


def scaled_value(raw: str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent; None counts as 0."""
    if raw is None or raw == "":
        return 0
    if raw.endswith("%"):
        pct = int(raw[:-1])
        return -(-pct * total // 100) if round_up else pct * total // 100
    return int(raw)


def resolve_fenceposts(
    max_surge: str | None, max_unavailable: str | None, desired: int
) -> tuple[int, int]:
    """(surge, unavailable) for `desired` replicas: surge rounds up, unavailable down; if
    both come out 0, unavailable is 1 (surge might be blocked by quota)."""
    surge = scaled_value(max_surge, desired, True)
    unavailable = scaled_value(max_unavailable, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def is_rolling_update(d: Deployment) -> bool:
    return d.spec.strategy.type == ROLLING_UPDATE


def _rolling_params(d: Deployment) -> tuple[str | None, str | None]:
    ru = d.spec.strategy.rolling_update
    surge = ru.max_surge if ru.HasField("max_surge") else None
    unavailable = ru.max_unavailable if ru.HasField("max_unavailable") else None
    return surge, unavailable


def max_surge(d: Deployment) -> int:
    if not is_rolling_update(d):
        return 0
    return resolve_fenceposts(*_rolling_params(d), d.spec.replicas)[0]


def max_unavailable(d: Deployment) -> int:
    if not is_rolling_update(d) or d.spec.replicas == 0:
        return 0
    unavailable = resolve_fenceposts(*_rolling_params(d), d.spec.replicas)[1]
    return min(unavailable, d.spec.replicas)


def has_progress_deadline(d: Deployment) -> bool:
    return (
        d.spec.HasField("progress_deadline_seconds")
        and d.spec.progress_deadline_seconds != _MAX_INT32
    )


def has_revision_history_limit(d: Deployment) -> bool:
    return d.spec.HasField("revision_history_limit") and d.spec.revision_history_limit != _MAX_INT32


# ============================================================================ ReplicaSet lists


def revision(rs: ReplicaSet) -> int:
    """The revision annotation (0 when absent; -1 when it does not parse)."""
    text = rs.metadata.annotations.get(REVISION_ANNOTATION)
    if text is None:
        return 0
    try:
        return int(text)
    except ValueError:
        return -1


def max_revision(rss: Sequence[ReplicaSet]) -> int:
    return max((r for r in map(revision, rss) if r >= 0), default=0)


def _created(rs: ReplicaSet) -> float:
    return timestamp(rs.metadata.creation_timestamp) or 0.0


def by_creation(rss: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    """Oldest first, name as the tie-break (ReplicaSetsByCreationTimestamp)."""
    return sorted(rss, key=lambda rs: (_created(rs), rs.metadata.name))


def by_revision(rss: Sequence[ReplicaSet]) -> list[ReplicaSet]:
    return sorted(rss, key=lambda rs: (revision(rs), _created(rs), rs.metadata.name))


def _by_size(rss: Sequence[ReplicaSet], newer_first: bool) -> list[ReplicaSet]:
    """Largest first; among equals the newer (scaling up) or older (down) first."""

    def cmp(a: ReplicaSet, b: ReplicaSet) -> int:
        if a.spec.replicas != b.spec.replicas:
            return -1 if a.spec.replicas > b.spec.replicas else 1
        ka, kb = (_created(a), a.metadata.name), (_created(b), b.metadata.name)
        if ka == kb:
            return 0
        older = ka < kb
        return (1 if older else -1) if newer_first else (-1 if older else 1)

    return sorted(rss, key=functools.cmp_to_key(cmp))


def active(rss: Sequence[ReplicaSet | None]) -> list[ReplicaSet]:
    return [rs for rs in rss if rs is not None and rs.spec.replicas > 0]


def spec_replicas(rss: Sequence[ReplicaSet | None]) -> int:
    return sum(rs.spec.replicas for rs in rss if rs is not None)


def actual_replicas(rss: Sequence[ReplicaSet | None]) -> int:
    return sum(rs.status.replicas for rs in rss if rs is not None)


def ready_replicas(rss: Sequence[ReplicaSet | None]) -> int:
    return sum(rs.status.ready_replicas for rs in rss if rs is not None)


def available_replicas(rss: Sequence[ReplicaSet | None]) -> int:
    return sum(rs.status.available_replicas for rs in rss if rs is not None)


def _pods_of(rs: ReplicaSet) -> int:
    """Pods the RS may still run: its spec, or more while its controller has not yet seen
    the pods it deleted go (kubera; see the module docstring)."""
    return max(rs.spec.replicas, rs.status.replicas)


def _settled_available(rs: ReplicaSet) -> int:
    """Available replicas once the RS has been scaled to its spec (kubera; see above)."""
    return min(rs.status.available_replicas, rs.spec.replicas)


def find_new_replica_set(d: Deployment, rss: Sequence[ReplicaSet]) -> ReplicaSet | None:
    """The oldest RS whose template is the Deployment's."""
    for rs in by_creation(rss):
        if equal_ignore_hash(rs.spec.template, d.spec.template):
            return rs
    return None


def find_old_replica_sets(
    d: Deployment, rss: Sequence[ReplicaSet]
) -> tuple[list[ReplicaSet], list[ReplicaSet]]:
    """(old RSes with replicas, every old RS)."""
    new = find_new_replica_set(d, rss)
    all_old = [rs for rs in rss if new is None or rs.metadata.uid != new.metadata.uid]
    return [rs for rs in all_old if rs.spec.replicas != 0], all_old


def new_rs_new_replicas(d: Deployment, all_rss: Sequence[ReplicaSet], new_rs: ReplicaSet) -> int:
    """How big the new RS may be now (NewRSNewReplicas)."""
    if d.spec.strategy.type == RECREATE:
        return d.spec.replicas
    if d.spec.strategy.type != ROLLING_UPDATE:
        raise ApiError(f"deployment type {d.spec.strategy.type} isn't supported")
    surge = scaled_value(_rolling_params(d)[0], d.spec.replicas, True)
    current = sum(_pods_of(rs) for rs in all_rss)
    max_total = d.spec.replicas + surge
    if current >= max_total:
        return new_rs.spec.replicas
    scale_up = min(max_total - current, d.spec.replicas - new_rs.spec.replicas)
    return new_rs.spec.replicas + scale_up


def is_saturated(d: Deployment, rs: ReplicaSet | None) -> bool:
    if rs is None:
        return False
    try:
        desired = int(rs.metadata.annotations.get(DESIRED_REPLICAS_ANNOTATION, ""))
    except ValueError:
        return False
    return (
        rs.spec.replicas == d.spec.replicas
        and desired == d.spec.replicas
        and rs.status.available_replicas == d.spec.replicas
    )


def find_active_or_latest(
    new_rs: ReplicaSet | None, old_rss: Sequence[ReplicaSet]
) -> ReplicaSet | None:
    """The only active RS, or the newest when none is active; None when several are."""
    if new_rs is None and not old_rss:
        return None
    newest_first = list(reversed(by_creation(old_rss)))
    act = active([*newest_first, new_rs])
    if not act:
        return new_rs if new_rs is not None else newest_first[0]
    return act[0] if len(act) == 1 else None


def _int_annotation(rs: ReplicaSet, key: str) -> int | None:
    try:
        return int(rs.metadata.annotations[key])
    except (KeyError, ValueError):
        return None


def _round_half_away(x: float) -> int:
    """integer.RoundToInt32."""
    return int(x - 0.5) if x < 0 else int(x + 0.5)


def get_proportion(rs: ReplicaSet | None, d: Deployment, to_add: int, added: int) -> int:
    """This RS's share of `to_add` replicas (scaling a Deployment mid-rollout)."""
    if rs is None or rs.spec.replicas == 0 or to_add == 0 or to_add == added:
        return 0
    if d.spec.replicas == 0:
        fraction = -rs.spec.replicas
    else:
        deployment_replicas = d.spec.replicas + max_surge(d)
        annotated = _int_annotation(rs, MAX_REPLICAS_ANNOTATION)
        if annotated is None:
            annotated = d.status.replicas
        new_size = rs.spec.replicas * deployment_replicas / annotated if annotated else 0.0
        fraction = _round_half_away(new_size) - rs.spec.replicas
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def set_replicas_annotations(rs: ReplicaSet, desired: int, max_replicas: int) -> bool:
    updated = False
    for key, value in (
        (DESIRED_REPLICAS_ANNOTATION, desired),
        (MAX_REPLICAS_ANNOTATION, max_replicas),
    ):
        if rs.metadata.annotations.get(key) != str(value):
            rs.metadata.annotations[key] = str(value)
            updated = True
    return updated


def replicas_annotations_need_update(rs: ReplicaSet, desired: int, max_replicas: int) -> bool:
    ann = rs.metadata.annotations
    return ann.get(DESIRED_REPLICAS_ANNOTATION) != str(desired) or ann.get(
        MAX_REPLICAS_ANNOTATION
    ) != str(max_replicas)


def set_new_rs_annotations(d: Deployment, rs: ReplicaSet, new_revision: str, exists: bool) -> bool:
    """Copy the Deployment's annotations, raise the revision to `new_revision` (keeping
    the revisions it served before in revision-history), and for a new RS record the
    replicas it is sized for. True when anything changed."""
    changed = False
    for k, v in d.metadata.annotations.items():
        if k in ANNOTATIONS_TO_SKIP or rs.metadata.annotations.get(k) == v:
            continue
        rs.metadata.annotations[k] = v
        changed = True
    old_text = rs.metadata.annotations.get(REVISION_ANNOTATION)
    try:
        old = int(old_text) if old_text else 0
    except ValueError:
        log.warning(
            "replicaset %s has a revision that is not a number: %r", rs.metadata.name, old_text
        )
        return False
    new = int(new_revision)
    if old < new:
        rs.metadata.annotations[REVISION_ANNOTATION] = new_revision
        changed = True
        if old_text is not None:
            history = rs.metadata.annotations.get(REVISION_HISTORY_ANNOTATION, "")
            if not history:
                rs.metadata.annotations[REVISION_HISTORY_ANNOTATION] = old_text
            else:
                parts = history.split(",")
                total = len(history) + len(old_text) + 1
                start = 0
                while total > MAX_REV_HISTORY_CHARS and start < len(parts):
                    total -= len(parts[start]) + 1
                    start += 1
                if total <= MAX_REV_HISTORY_CHARS:
                    rs.metadata.annotations[REVISION_HISTORY_ANNOTATION] = ",".join(
                        [*parts[start:], old_text]
                    )
    if not exists and set_replicas_annotations(rs, d.spec.replicas, d.spec.replicas + max_surge(d)):
        changed = True
    return changed


# ============================================================================ conditions and status


def get_condition(
    status: apps_pb2.DeploymentStatus, type_: str
) -> apps_pb2.DeploymentCondition | None:
    for c in status.conditions:
        if c.type == type_:
            return c
    return None


def new_condition(
    type_: str, status: str, reason: str, message: str, now: float
) -> apps_pb2.DeploymentCondition:
    t = rfc3339(now)
    return apps_pb2.DeploymentCondition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_update_time=t,
        last_transition_time=t,
    )


def set_condition(status: apps_pb2.DeploymentStatus, cond: apps_pb2.DeploymentCondition) -> None:
    """Add or replace; the same status and reason is no change, and the same status keeps
    its lastTransitionTime."""
    current = get_condition(status, cond.type)
    if current is not None and current.status == cond.status and current.reason == cond.reason:
        return
    if current is not None and current.status == cond.status:
        cond.last_transition_time = current.last_transition_time
    remove_condition(status, cond.type)
    status.conditions.append(cond)


def remove_condition(status: apps_pb2.DeploymentStatus, type_: str) -> None:
    keep = [c for c in status.conditions if c.type != type_]
    del status.conditions[:]
    status.conditions.extend(keep)


def calculate_status(
    all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None, d: Deployment, now: float
) -> apps_pb2.DeploymentStatus:
    available = available_replicas(all_rss)
    unavailable = max(0, spec_replicas(all_rss) - available)
    status = apps_pb2.DeploymentStatus(
        observed_generation=d.metadata.generation,
        replicas=actual_replicas(all_rss),
        updated_replicas=actual_replicas([new_rs]),
        ready_replicas=ready_replicas(all_rss),
        available_replicas=available,
        unavailable_replicas=unavailable,
    )
    if d.status.HasField("collision_count"):
        status.collision_count = d.status.collision_count
    status.conditions.extend(d.status.conditions)
    if available >= d.spec.replicas - max_unavailable(d):
        cond = new_condition(
            "Available",
            "True",
            MINIMUM_REPLICAS_AVAILABLE,
            "Deployment has minimum availability.",
            now,
        )
    else:
        cond = new_condition(
            "Available",
            "False",
            MINIMUM_REPLICAS_UNAVAILABLE,
            "Deployment does not have minimum availability.",
            now,
        )
    set_condition(status, cond)
    return status


def deployment_complete(d: Deployment, status: apps_pb2.DeploymentStatus) -> bool:
    """Every desired replica updated and available, and no old pod left."""
    n = d.spec.replicas
    return (
        status.updated_replicas == n
        and status.replicas == n
        and status.available_replicas == n
        and status.observed_generation >= d.metadata.generation
    )


def deployment_progressing(d: Deployment, status: apps_pb2.DeploymentStatus) -> bool:
    old = d.status
    return (
        status.updated_replicas > old.updated_replicas
        or status.replicas - status.updated_replicas < old.replicas - old.updated_replicas
        or status.ready_replicas > old.ready_replicas
        or status.available_replicas > old.available_replicas
    )


def deployment_timed_out(d: Deployment, status: apps_pb2.DeploymentStatus, now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    cond = get_condition(status, "Progressing")
    if cond is None or cond.reason == NEW_RS_AVAILABLE:
        return False
    if cond.reason == TIMED_OUT:
        return True
    since = timestamp(cond.last_update_time)
    return since is not None and since + d.spec.progress_deadline_seconds < now


def _rs_failure_conditions(
    all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None
) -> list[apps_pb2.DeploymentCondition]:
    def convert(c: apps_pb2.ReplicaSetCondition) -> apps_pb2.DeploymentCondition:
        return apps_pb2.DeploymentCondition(
            type=c.type,
            status=c.status,
            reason=c.reason,
            message=c.message,
            last_transition_time=c.last_transition_time,
            last_update_time=c.last_transition_time,
        )

    for group in ([new_rs], all_rss):
        conds = [
            convert(c)
            for rs in group
            if rs is not None
            for c in rs.status.conditions
            if c.type == "ReplicaFailure"
        ]
        if conds:
            return conds
    return []


# ============================================================================ controller


@dataclass
class DeploymentConfig:
    """Settings of the Deployment controller."""

    workers: int = 5
    """Deployments synced at once (--concurrent-deployment-syncs)."""

    max_retries: int = MAX_RETRIES
    """Failed syncs of one key retried with backoff before it is dropped until its next event."""

    base_backoff: float = 0.005
    """First retry delay of a failed sync; doubles per consecutive failure."""

    max_backoff: float = 1000.0
    """Cap of the per-key retry delay."""

    cascade_delete: bool = True
    """Delete the ReplicaSets of a deleted Deployment (kubera has no garbage collector)."""

    record_events: bool = True
    """Write ScalingReplicaSet and ReplicaSetCreateError Events."""

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be >= 0, got {self.max_retries}")
        if not 0 < self.base_backoff <= self.max_backoff:
            raise ValueError(
                f"need 0 < base_backoff <= max_backoff, got {self.base_backoff} and {self.max_backoff}"
            )


class DeploymentController:
    """Rolls Deployments out through ReplicaSets (see the module docstring)."""

    def __init__(
        self,
        client: Client,
        informers: SharedInformers,
        *,
        config: DeploymentConfig | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.client = client
        self.config = config or DeploymentConfig()
        self.clock = clock or RealClock()
        self.d_informer = informers.get(DEPLOYMENTS)
        self.rs_informer = informers.get(REPLICA_SETS)
        self.pod_informer = informers.get(PODS)
        self.queue: WorkQueue[str] = WorkQueue(
            clock=self.clock,
            rate_limiter=default_controller_rate_limiter(
                self.clock, base_delay=self.config.base_backoff, max_delay=self.config.max_backoff
            ),
            name="deployment",
        )
        self.events = EventRecorder(
            client, "deployment-controller", self.clock, enabled=self.config.record_events
        )
        self._d_index = NamespaceIndex(self.d_informer)
        self._rs_index = NamespaceIndex(self.rs_informer)
        self._pod_index = NamespaceIndex(self.pod_informer)
        # Deployment key -> UIDs of deleted Deployments of that name whose RSes are to go.
        self._dead_owners: dict[str, set[str]] = {}
        self.d_informer.add_handlers(
            Handlers(self._add_deployment, self._update_deployment, self._delete_deployment)
        )
        self.rs_informer.add_handlers(Handlers(self._add_rs, self._update_rs, self._delete_rs))
        self.pod_informer.add_handlers(Handlers(on_delete=self._delete_pod))

    # ------------------------------------------------------------------ lifecycle

    async def run(self, stop: asyncio.Event) -> None:
        """Sync Deployments with `workers` workers until `stop` is set."""
        workers: list[asyncio.Task[None]] = []
        try:
            synced = (self.d_informer.synced, self.rs_informer.synced, self.pod_informer.synced)
            if await wait_synced(stop, *synced):
                workers = [
                    asyncio.create_task(self._worker(), name=f"deployment-worker-{i}")
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
                if isinstance(e, ApiError) and is_namespace_terminating(e):
                    self.queue.forget(key)
                elif self.queue.num_requeues(key) < self.config.max_retries:
                    if isinstance(e, ApiError):
                        log.info("sync of deployment %s failed: %s", key, e)
                    else:
                        log.exception("sync of deployment %s failed", key)
                    self.queue.add_rate_limited(key)
                else:
                    log.warning("dropping deployment %s out of the queue: %s", key, e)
                    self.queue.forget(key)
            finally:
                self.queue.done(key)

    # ------------------------------------------------------------------ lookups

    def _deployments_in(self, namespace: str) -> list[Deployment]:
        return self._d_index.list(namespace)  # type: ignore[return-value]

    def _resolve(self, namespace: str, ref: meta_pb2.OwnerReference | None) -> Deployment | None:
        if ref is None or ref.kind != DEPLOYMENTS.kind:
            return None
        d = self.d_informer.store.get(f"{namespace}/{ref.name}")
        if d is None or d.metadata.uid != ref.uid:  # type: ignore[attr-defined]
            return None
        return d  # type: ignore[return-value]

    def _deployments_selecting(self, rs: ReplicaSet) -> list[Deployment]:
        out = []
        for d in self._deployments_in(rs.metadata.namespace):
            sel = selector_for(d.spec.selector)
            if sel is None or sel.is_empty() or not sel.matches(rs.metadata.labels):
                continue
            out.append(d)
        return out

    def _owned_replica_sets(self, d: Deployment) -> list[ReplicaSet]:
        rss: list[ReplicaSet] = self._rs_index.list(d.metadata.namespace)  # type: ignore[assignment]
        out = []
        for rs in rss:
            ref = controller_of(rs)
            if ref is not None and ref.uid == d.metadata.uid:
                out.append(rs)
        return out

    def _pod_map(self, d: Deployment, rss: Sequence[ReplicaSet]) -> dict[str, list[core_pb2.Pod]]:
        """Pods selected by `d`, grouped by the RS (of `rss`) that controls them."""
        sel = selector_for(d.spec.selector)
        pod_map: dict[str, list[core_pb2.Pod]] = {rs.metadata.uid: [] for rs in rss}
        if sel is None:
            return pod_map
        pods: list[core_pb2.Pod] = self._pod_index.list(d.metadata.namespace)  # type: ignore[assignment]
        for p in pods:
            ref = controller_of(p)
            if ref is not None and ref.uid in pod_map and sel.matches(p.metadata.labels):
                pod_map[ref.uid].append(p)
        return pod_map

    # ------------------------------------------------------------------ event handlers

    def _add_deployment(self, d: Message) -> None:
        self.queue.add(object_key(d))

    def _update_deployment(self, old: Message, cur: Message) -> None:
        if old.metadata.uid != cur.metadata.uid:  # type: ignore[attr-defined]
            self._delete_deployment(old)
        self.queue.add(object_key(cur))

    def _delete_deployment(self, d: Message) -> None:
        key = object_key(d)
        if self.config.cascade_delete:
            self._dead_owners.setdefault(key, set()).add(d.metadata.uid)  # type: ignore[attr-defined]
        self.queue.add(key)

    def _add_rs(self, obj: Message) -> None:
        rs: ReplicaSet = obj  # type: ignore[assignment]
        if rs.metadata.deletion_timestamp:
            self._delete_rs(rs)
            return
        ref = controller_of(rs)
        if ref is not None:
            d = self._resolve(rs.metadata.namespace, ref)
            if d is not None:
                self.queue.add(object_key(d))
            return
        for d in self._deployments_selecting(rs):  # an orphan: anyone may adopt it
            self.queue.add(object_key(d))

    def _update_rs(self, old_obj: Message, cur_obj: Message) -> None:
        old: ReplicaSet = old_obj  # type: ignore[assignment]
        cur: ReplicaSet = cur_obj  # type: ignore[assignment]
        if cur.metadata.resource_version == old.metadata.resource_version:
            return
        cur_ref, old_ref = controller_of(cur), controller_of(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            prev = self._resolve(old.metadata.namespace, old_ref)
            if prev is not None:
                self.queue.add(object_key(prev))
        if cur_ref is not None:
            d = self._resolve(cur.metadata.namespace, cur_ref)
            if d is not None:
                self.queue.add(object_key(d))
            return
        labels_changed = dict(cur.metadata.labels) != dict(old.metadata.labels)
        if labels_changed or ref_changed:
            for d in self._deployments_selecting(cur):
                self.queue.add(object_key(d))

    def _delete_rs(self, obj: Message) -> None:
        ref = controller_of(obj)
        if ref is None:
            return
        d = self._resolve(obj.metadata.namespace, ref)  # type: ignore[attr-defined]
        if d is not None:
            self.queue.add(object_key(d))

    def _delete_pod(self, obj: Message) -> None:
        """A Recreate rollout waits for the old pods to go: look again when the last one has."""
        pod: core_pb2.Pod = obj  # type: ignore[assignment]
        ref = controller_of(pod)
        if ref is None or ref.kind != REPLICA_SETS.kind:
            return
        rs = self.rs_informer.store.get(f"{pod.metadata.namespace}/{ref.name}")
        if rs is None or rs.metadata.uid != ref.uid:  # type: ignore[attr-defined]
            return
        d = self._resolve(pod.metadata.namespace, controller_of(rs))
        if d is None or d.spec.strategy.type != RECREATE:
            return
        pod_map = self._pod_map(d, self._owned_replica_sets(d))
        if not any(pod_map.values()):
            self.queue.add(object_key(d))

    # ------------------------------------------------------------------ sync

    async def sync(self, key: str) -> None:
        """Reconcile one Deployment; raises to be retried with backoff."""
        cached = self.d_informer.store.get(key)
        await self._cascade(key, cached)
        if cached is None:
            return
        d: Deployment = codec.clone(cached)  # type: ignore[assignment]
        selector = selector_for(d.spec.selector)
        if selector is None or selector.is_empty():
            self.events.event(
                d,
                "Warning",
                "SelectingAll",
                "This deployment is selecting all pods. A non-empty selector is required.",
            )
            if d.status.observed_generation < d.metadata.generation:
                d.status.observed_generation = d.metadata.generation
                await self.client.update_status(d)
            return
        rss = await self._claim_replica_sets(d, selector)
        if d.metadata.deletion_timestamp:
            await self._sync_status_only(d, rss)
            return
        await self._check_paused_conditions(d)
        if d.spec.paused or await self._is_scaling_event(d, rss):
            await self._sync(d, rss)
            return
        if d.spec.strategy.type == RECREATE:
            await self._rollout_recreate(d, rss, self._pod_map(d, rss))
        elif d.spec.strategy.type == ROLLING_UPDATE:
            await self._rollout_rolling(d, rss)
        else:
            raise ApiError(f"unexpected deployment strategy type: {d.spec.strategy.type}")

    async def _claim_replica_sets(self, d: Deployment, selector: Selector) -> list[ReplicaSet]:
        candidates = self._rs_index.list(d.metadata.namespace)
        return await claim(  # type: ignore[return-value]
            self.client,
            REPLICA_SETS,
            d,
            DEPLOYMENTS,
            selector,
            candidates,
            recheck_owner(self.client, DEPLOYMENTS, d),
        )

    async def _write(self, d: Deployment) -> None:
        """Persist our working copy: its revision annotation (pinned to the version we
        read) and its status; `d` then carries the new resourceVersion."""
        cached = self.d_informer.store.get(object_key(d))
        before = dict(cached.metadata.annotations) if cached is not None else {}  # type: ignore[attr-defined]
        changed = {k: v for k, v in d.metadata.annotations.items() if before.get(k) != v}
        if changed:
            patch = {
                "metadata": {
                    "annotations": changed,
                    "uid": d.metadata.uid,
                    "resourceVersion": d.metadata.resource_version,
                }
            }
            patched = await self.client.patch(
                DEPLOYMENTS, d.metadata.name, json.dumps(patch), namespace=d.metadata.namespace
            )
            d.metadata.resource_version = patched.metadata.resource_version  # type: ignore[attr-defined]
        updated = await self.client.update_status(d)
        d.metadata.resource_version = updated.metadata.resource_version

    # -- revisions and the new ReplicaSet

    async def _all_replica_sets(
        self, d: Deployment, rss: Sequence[ReplicaSet], create: bool
    ) -> tuple[ReplicaSet | None, list[ReplicaSet]]:
        """(new RS, every old RS), with the revisions of the new RS and `d` brought up to
        date (getAllReplicaSetsAndSyncRevision)."""
        _, all_old = find_old_replica_sets(d, rss)
        new_rs = await self._new_replica_set(d, rss, all_old, create)
        return new_rs, all_old

    async def _new_replica_set(
        self, d: Deployment, rss: Sequence[ReplicaSet], old_rss: Sequence[ReplicaSet], create: bool
    ) -> ReplicaSet | None:
        existing = find_new_replica_set(d, rss)
        new_revision = str(max_revision(old_rss) + 1)
        now = self.clock.now()
        if existing is not None:
            rs_copy: ReplicaSet = codec.clone(existing)  # type: ignore[assignment]
            annotations_changed = set_new_rs_annotations(d, rs_copy, new_revision, exists=True)
            if annotations_changed or rs_copy.spec.min_ready_seconds != d.spec.min_ready_seconds:
                rs_copy.spec.min_ready_seconds = d.spec.min_ready_seconds
                return await self.client.update(rs_copy)
            needs_update = _set_revision(
                d, rs_copy.metadata.annotations.get(REVISION_ANNOTATION, "")
            )
            if has_progress_deadline(d) and get_condition(d.status, "Progressing") is None:
                msg = f'Found new replica set "{rs_copy.metadata.name}"'
                set_condition(
                    d.status, new_condition("Progressing", "True", FOUND_NEW_RS, msg, now)
                )
                needs_update = True
            if needs_update:
                await self._write(d)
            return rs_copy
        if not create:
            return None

        collision = d.status.collision_count if d.status.HasField("collision_count") else None
        template = core_pb2.PodTemplateSpec()
        template.CopyFrom(d.spec.template)
        pod_hash = compute_hash(template, collision)
        template.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] = pod_hash
        new_rs: ReplicaSet = REPLICA_SETS.new()  # type: ignore[assignment]
        new_rs.metadata.name = f"{d.metadata.name}-{pod_hash}"
        new_rs.metadata.namespace = d.metadata.namespace
        new_rs.metadata.owner_references.append(new_controller_ref(d, DEPLOYMENTS))
        new_rs.metadata.labels.update(template.metadata.labels)
        new_rs.spec.replicas = 0
        new_rs.spec.min_ready_seconds = d.spec.min_ready_seconds
        new_rs.spec.selector.CopyFrom(d.spec.selector)
        new_rs.spec.selector.match_labels[DEFAULT_UNIQUE_LABEL_KEY] = pod_hash
        new_rs.spec.template.CopyFrom(template)
        replicas = new_rs_new_replicas(d, [*old_rss, new_rs], new_rs)
        new_rs.spec.replicas = replicas
        set_new_rs_annotations(d, new_rs, new_revision, exists=False)

        already_exists = False
        try:
            created: ReplicaSet = await self.client.create(new_rs)
        except AlreadyExistsError:
            # A slow cache, or a hash collision with someone else's ReplicaSet.
            already_exists = True
            found = self.rs_informer.store.get(object_key(new_rs))
            if found is None:
                raise
            ref = controller_of(found)
            if not (
                ref is not None
                and ref.uid == d.metadata.uid
                and equal_ignore_hash(d.spec.template, found.spec.template)  # type: ignore[attr-defined]
            ):
                before = d.status.collision_count if d.status.HasField("collision_count") else 0
                d.status.collision_count = before + 1
                await self.client.update_status(d)
                log.info(
                    "hash collision for deployment %s: collisionCount %d -> %d",
                    object_key(d),
                    before,
                    before + 1,
                )
                raise
            created = found  # type: ignore[assignment]
        except ApiError as e:
            if is_namespace_terminating(e):
                raise
            msg = f'Failed to create new replica set "{new_rs.metadata.name}": {e}'
            if has_progress_deadline(d):
                set_condition(
                    d.status, new_condition("Progressing", "False", FAILED_RS_CREATE, msg, now)
                )
                with contextlib.suppress(ApiError):
                    await self.client.update_status(d)
            self.events.event(d, "Warning", FAILED_RS_CREATE, msg)
            raise
        if not already_exists and replicas > 0:
            self.events.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled up replica set {created.metadata.name} from 0 to {replicas}",
            )
        needs_update = _set_revision(d, new_revision)
        if not already_exists and has_progress_deadline(d):
            msg = f'Created new replica set "{created.metadata.name}"'
            set_condition(d.status, new_condition("Progressing", "True", NEW_REPLICA_SET, msg, now))
            needs_update = True
        if needs_update:
            await self._write(d)
        return created

    # -- scaling

    async def _scale_replica_set(
        self, rs: ReplicaSet, new_scale: int, d: Deployment, operation: str = ""
    ) -> tuple[bool, ReplicaSet]:
        """Set the RS's replicas (and the replicas its annotations say it is sized for)."""
        size_changed = rs.spec.replicas != new_scale
        max_replicas = d.spec.replicas + max_surge(d)
        if not size_changed and not replicas_annotations_need_update(
            rs, d.spec.replicas, max_replicas
        ):
            return False, rs
        operation = operation or ("up" if rs.spec.replicas < new_scale else "down")
        old_scale = rs.spec.replicas
        rs_copy: ReplicaSet = codec.clone(rs)  # type: ignore[assignment]
        rs_copy.spec.replicas = new_scale
        set_replicas_annotations(rs_copy, d.spec.replicas, max_replicas)
        updated = await self.client.update(rs_copy)
        if size_changed:
            self.events.event(
                d,
                "Normal",
                "ScalingReplicaSet",
                f"Scaled {operation} replica set {rs.metadata.name} from {old_scale} to {new_scale}",
            )
        return size_changed, updated

    async def _is_scaling_event(self, d: Deployment, rss: Sequence[ReplicaSet]) -> bool:
        """An active RS was sized for another spec.replicas: the user scaled."""
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        for rs in active([*old_rss, new_rs]):
            desired = _int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
            if desired is not None and desired != d.spec.replicas:
                return True
        return False

    async def _scale(
        self, d: Deployment, new_rs: ReplicaSet | None, old_rss: list[ReplicaSet]
    ) -> None:
        """Proportional scaling: spread a change of spec.replicas over the active RSes
        by their size, so a scale in mid-rollout neither hastens nor stalls it."""
        only = find_active_or_latest(new_rs, old_rss)
        if only is not None:
            if only.spec.replicas != d.spec.replicas:
                await self._scale_replica_set(only, d.spec.replicas, d)
            return
        if is_saturated(d, new_rs):
            for old in active(old_rss):
                await self._scale_replica_set(old, 0, d)
            return
        if not is_rolling_update(d):
            return
        all_rss = active([*old_rss, new_rs])
        allowed = d.spec.replicas + max_surge(d) if d.spec.replicas > 0 else 0
        to_add = allowed - spec_replicas(all_rss)
        operation = ""
        if to_add > 0:
            all_rss = _by_size(all_rss, newer_first=True)
            operation = "up"
        elif to_add < 0:
            all_rss = _by_size(all_rss, newer_first=False)
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                share = get_proportion(rs, d, to_add, added)
                sizes[rs.metadata.name] = rs.spec.replicas + share
                added += share
            else:
                sizes[rs.metadata.name] = rs.spec.replicas
        for i, rs in enumerate(all_rss):
            if i == 0 and to_add != 0:  # leftovers go to the largest
                sizes[rs.metadata.name] = max(0, sizes[rs.metadata.name] + to_add - added)
            await self._scale_replica_set(rs, sizes[rs.metadata.name], d, operation)

    async def _sync(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        """Paused or scaled: resize proportionally, no rollout."""
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        await self._scale(d, new_rs, old_rss)
        if d.spec.paused:
            await self._cleanup(d, old_rss)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _sync_status_only(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        await self._sync_status(d, [*old_rss, new_rs], new_rs)

    async def _check_paused_conditions(self, d: Deployment) -> None:
        if not has_progress_deadline(d):
            return
        cond = get_condition(d.status, "Progressing")
        if cond is not None and cond.reason == TIMED_OUT:
            return  # a reported lack of progress stays
        paused_cond = cond is not None and cond.reason == PAUSED
        now = self.clock.now()
        if d.spec.paused and not paused_cond:
            set_condition(
                d.status,
                new_condition("Progressing", "Unknown", PAUSED, "Deployment is paused", now),
            )
        elif not d.spec.paused and paused_cond:
            set_condition(
                d.status,
                new_condition("Progressing", "Unknown", RESUMED, "Deployment is resumed", now),
            )
        else:
            return
        await self._write(d)

    async def _cleanup(self, d: Deployment, old_rss: Sequence[ReplicaSet]) -> None:
        """Keep only the newest revisionHistoryLimit old ReplicaSets that are scaled to 0."""
        if not has_revision_history_limit(d):
            return
        alive = [rs for rs in old_rss if not rs.metadata.deletion_timestamp]
        diff = len(alive) - d.spec.revision_history_limit
        if diff <= 0:
            return
        for rs in by_revision(alive)[:diff]:
            if (
                rs.status.replicas != 0
                or rs.spec.replicas != 0
                or rs.metadata.generation > rs.status.observed_generation
                or rs.metadata.deletion_timestamp
            ):
                continue
            with contextlib.suppress(NotFoundError):
                await self.client.delete(REPLICA_SETS, rs.metadata.name, rs.metadata.namespace)

    async def _sync_status(
        self, d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None
    ) -> None:
        status = calculate_status(all_rss, new_rs, d, self.clock.now())
        if d.status == status:
            return
        d.status.CopyFrom(status)
        await self.client.update_status(d)

    # -- rollouts

    async def _rollout_rolling(self, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=True)
        assert new_rs is not None
        all_rss = [*old_rss, new_rs]
        if await self._reconcile_new(all_rss, new_rs, d):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if await self._reconcile_old(all_rss, active(old_rss), new_rs, d):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if deployment_complete(d, d.status):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _reconcile_new(
        self, all_rss: list[ReplicaSet], new_rs: ReplicaSet, d: Deployment
    ) -> bool:
        if new_rs.spec.replicas == d.spec.replicas:
            return False
        if new_rs.spec.replicas > d.spec.replicas:
            scaled, _ = await self._scale_replica_set(new_rs, d.spec.replicas, d)
            return scaled
        scaled, _ = await self._scale_replica_set(
            new_rs, new_rs_new_replicas(d, all_rss, new_rs), d
        )
        return scaled

    async def _reconcile_old(
        self,
        all_rss: list[ReplicaSet],
        old_rss: list[ReplicaSet],
        new_rs: ReplicaSet,
        d: Deployment,
    ) -> bool:
        """Scale old RSes down as far as maxUnavailable allows (unhealthy replicas first)."""
        if spec_replicas(old_rss) == 0:
            return False
        all_pods = spec_replicas(all_rss)
        min_available = d.spec.replicas - max_unavailable(d)
        new_unavailable = new_rs.spec.replicas - _settled_available(new_rs)
        # Never below minAvailable, counting the new RS's not-yet-available pods as lost.
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old_rss, cleaned = await self._cleanup_unhealthy(old_rss, d, max_scaled_down)
        scaled_down = await self._scale_down_old_for_rolling_update([*old_rss, new_rs], old_rss, d)
        return cleaned + scaled_down > 0

    async def _cleanup_unhealthy(
        self, old_rss: list[ReplicaSet], d: Deployment, max_cleanup: int
    ) -> tuple[list[ReplicaSet], int]:
        """Scale away old replicas that are not available: that costs no availability."""
        old_rss = by_creation(old_rss)
        total = 0
        for i, rs in enumerate(old_rss):
            if total >= max_cleanup:
                break
            unhealthy = rs.spec.replicas - _settled_available(rs)
            if rs.spec.replicas == 0 or unhealthy == 0:
                continue
            count = min(max_cleanup - total, unhealthy)
            _, old_rss[i] = await self._scale_replica_set(rs, rs.spec.replicas - count, d)
            total += count
        return old_rss, total

    async def _scale_down_old_for_rolling_update(
        self, all_rss: list[ReplicaSet], old_rss: list[ReplicaSet], d: Deployment
    ) -> int:
        min_available = d.spec.replicas - max_unavailable(d)
        available = sum(_settled_available(rs) for rs in all_rss)
        if available <= min_available:
            return 0
        to_scale_down = available - min_available
        total = 0
        for rs in by_creation(old_rss):
            if total >= to_scale_down:
                break
            if rs.spec.replicas == 0:
                continue
            count = min(rs.spec.replicas, to_scale_down - total)
            await self._scale_replica_set(rs, rs.spec.replicas - count, d)
            total += count
        return total

    async def _rollout_recreate(
        self, d: Deployment, rss: Sequence[ReplicaSet], pod_map: dict[str, list[core_pb2.Pod]]
    ) -> None:
        # No new RS yet: it is created only once the old pods are gone.
        new_rs, old_rss = await self._all_replica_sets(d, rss, create=False)
        all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
        scaled = False
        for i, rs in enumerate(old_rss):
            if rs.spec.replicas == 0:
                continue
            did, old_rss[i] = await self._scale_replica_set(rs, 0, d)
            scaled = scaled or did
        if scaled or _old_pods_running(new_rs, old_rss, pod_map):
            await self._sync_rollout_status(d, all_rss, new_rs)
            return
        if new_rs is None:
            new_rs, old_rss = await self._all_replica_sets(d, rss, create=True)
            all_rss = [*old_rss, new_rs]
        assert new_rs is not None
        await self._scale_replica_set(new_rs, d.spec.replicas, d)
        if deployment_complete(d, d.status):
            await self._cleanup(d, old_rss)
        await self._sync_rollout_status(d, all_rss, new_rs)

    async def _sync_rollout_status(
        self, d: Deployment, all_rss: Sequence[ReplicaSet | None], new_rs: ReplicaSet | None
    ) -> None:
        now = self.clock.now()
        status = calculate_status(all_rss, new_rs, d, now)
        if not has_progress_deadline(d):
            remove_condition(status, "Progressing")
        current = get_condition(d.status, "Progressing")
        complete_before = (
            status.replicas == status.updated_replicas
            and current is not None
            and current.reason == NEW_RS_AVAILABLE
        )
        if has_progress_deadline(d) and not complete_before:
            name = (
                f'ReplicaSet "{new_rs.metadata.name}"'
                if new_rs is not None
                else f'Deployment "{d.metadata.name}"'
            )
            if deployment_complete(d, status):
                msg = f"{name} has successfully progressed."
                set_condition(
                    status, new_condition("Progressing", "True", NEW_RS_AVAILABLE, msg, now)
                )
            elif deployment_progressing(d, status):
                # Progress moves lastUpdateTime on even with the same reason.
                cond = new_condition(
                    "Progressing", "True", REPLICA_SET_UPDATED, f"{name} is progressing.", now
                )
                if current is not None:
                    if current.status == "True":
                        cond.last_transition_time = current.last_transition_time
                    remove_condition(status, "Progressing")
                set_condition(status, cond)
            elif deployment_timed_out(d, status, now):
                msg = f"{name} has timed out progressing."
                set_condition(status, new_condition("Progressing", "False", TIMED_OUT, msg, now))
        failures = _rs_failure_conditions(all_rss, new_rs)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, "ReplicaFailure")
        if d.status == status:
            self._requeue_stuck(d, status)
            return
        d.status.CopyFrom(status)
        await self.client.update_status(d)

    def _requeue_stuck(self, d: Deployment, status: apps_pb2.DeploymentStatus) -> None:
        """Without progress, look again when the progress deadline passes."""
        current = get_condition(d.status, "Progressing")
        if not has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.reason == TIMED_OUT:
            return
        since = timestamp(current.last_update_time)
        if since is None:
            return
        after = since + d.spec.progress_deadline_seconds - self.clock.now()
        if after < 1:
            self.queue.add_rate_limited(object_key(d))
        else:
            self.queue.add_after(object_key(d), after + 1)

    # -- deletion

    async def _cascade(self, key: str, current: Message | None) -> None:
        """Delete the ReplicaSets that deleted Deployments of this name controlled."""
        dead = self._dead_owners.get(key)
        if not dead:
            return
        if current is not None:
            dead.discard(current.metadata.uid)  # type: ignore[attr-defined]
        rss: list[ReplicaSet] = self._rs_index.list(split_key(key)[0])  # type: ignore[assignment]
        for rs in rss:
            ref = controller_of(rs)
            if ref is not None and ref.uid in dead and not rs.metadata.deletion_timestamp:
                with contextlib.suppress(NotFoundError):
                    await self.client.delete(
                        REPLICA_SETS, rs.metadata.name, rs.metadata.namespace, uid=rs.metadata.uid
                    )
        self._dead_owners.pop(key, None)


def _set_revision(d: Deployment, rev: str) -> bool:
    if d.metadata.annotations.get(REVISION_ANNOTATION) != rev:
        d.metadata.annotations[REVISION_ANNOTATION] = rev
        return True
    return False


def _old_pods_running(
    new_rs: ReplicaSet | None, old_rss: Sequence[ReplicaSet], pod_map: dict[str, list[core_pb2.Pod]]
) -> bool:
    """Any old RS still reports pods, or any pod of an old RS is not terminated."""
    if actual_replicas(old_rss) > 0:
        return True
    for uid, pods in pod_map.items():
        if new_rs is not None and uid == new_rs.metadata.uid:
            continue
        if any(p.status.phase not in ("Failed", "Succeeded") for p in pods):
            return True
    return False


__all__ = [
    "DEFAULT_UNIQUE_LABEL_KEY",
    "REVISION_ANNOTATION",
    "DeploymentConfig",
    "DeploymentController",
    "compute_hash",
    "equal_ignore_hash",
    "max_surge",
    "max_unavailable",
    "resolve_fenceposts",
    "safe_encode",
]
