"""Pure helpers of the Deployment controller (upstream
pkg/controller/deployment/util/deployment_util.go): the pod-template hash, maxSurge /
maxUnavailable, ReplicaSet lists and revisions, and the replicas annotations. The
Deployment's conditions and status, which build on these, are in conditions.py.

Kept apart from the controller so that the rules can be read and tested without a
cluster; nothing here does I/O.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Sequence

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError
from services.api.machinery.kinds import BY_KIND
from services.controllers.controller_utils import timestamp

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
_MAX_INT32 = 2**31 - 1

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


def fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & 0xFFFFFFFF
    return h


def compute_hash(template: core_pb2.PodTemplateSpec, collision_count: int | None = None) -> str:
    """The pod-template-hash: FNV-32a of the template (its canonical JSON here, where
    upstream hashes a Go dump of the struct), then the collision count as 8 little-endian
    bytes when set, printed in decimal and safe-encoded (controller.ComputeHash)."""
    encoded = codec.encode(template, go_structs=False)
    data = json.dumps(encoded, sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(4, "little") + bytes(4)
    return safe_encode(str(fnv32a(data)))


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


def by_size(rss: Sequence[ReplicaSet], newer_first: bool) -> list[ReplicaSet]:
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


def settled_available(rs: ReplicaSet) -> int:
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


def int_annotation(rs: ReplicaSet, key: str) -> int | None:
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
        annotated = int_annotation(rs, MAX_REPLICAS_ANNOTATION)
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


def set_revision(d: Deployment, rev: str) -> bool:
    if d.metadata.annotations.get(REVISION_ANNOTATION) != rev:
        d.metadata.annotations[REVISION_ANNOTATION] = rev
        return True
    return False


def old_pods_running(
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
    "ANNOTATIONS_TO_SKIP",
    "DEFAULT_UNIQUE_LABEL_KEY",
    "DEPLOYMENTS",
    "DEPRECATED_ROLLBACK_TO",
    "DESIRED_REPLICAS_ANNOTATION",
    "Deployment",
    "LAST_APPLIED_ANNOTATION",
    "MAX_REPLICAS_ANNOTATION",
    "MAX_REV_HISTORY_CHARS",
    "RECREATE",
    "REVISION_ANNOTATION",
    "REVISION_HISTORY_ANNOTATION",
    "ROLLING_UPDATE",
    "ReplicaSet",
    "active",
    "actual_replicas",
    "available_replicas",
    "by_creation",
    "by_revision",
    "by_size",
    "compute_hash",
    "equal_ignore_hash",
    "find_active_or_latest",
    "find_new_replica_set",
    "find_old_replica_sets",
    "get_proportion",
    "has_progress_deadline",
    "has_revision_history_limit",
    "int_annotation",
    "is_rolling_update",
    "is_saturated",
    "max_revision",
    "max_surge",
    "max_unavailable",
    "new_rs_new_replicas",
    "old_pods_running",
    "ready_replicas",
    "replicas_annotations_need_update",
    "resolve_fenceposts",
    "revision",
    "safe_encode",
    "scaled_value",
    "set_new_rs_annotations",
    "set_replicas_annotations",
    "set_revision",
    "settled_available",
    "spec_replicas",
]
