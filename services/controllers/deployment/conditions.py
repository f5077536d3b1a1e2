"""The Deployment's conditions and status (upstream
pkg/controller/deployment/util/deployment_util.go: GetDeploymentCondition,
SetDeploymentCondition, the Available / Progressing / ReplicaFailure rules, and
calculateStatus).

Kept apart from util.py (template hash, fenceposts, ReplicaSet lists and annotations),
which these build on; nothing here does I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import apps_pb2
from services.clock import rfc3339
from services.controllers.controller_utils import timestamp
from services.controllers.deployment.util import (
    Deployment,
    ReplicaSet,
    actual_replicas,
    available_replicas,
    has_progress_deadline,
    max_unavailable,
    ready_replicas,
    spec_replicas,
)

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


def rs_failure_conditions(
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


__all__ = [
    "FAILED_RS_CREATE",
    "FOUND_NEW_RS",
    "MINIMUM_REPLICAS_AVAILABLE",
    "MINIMUM_REPLICAS_UNAVAILABLE",
    "NEW_REPLICA_SET",
    "NEW_RS_AVAILABLE",
    "PAUSED",
    "REPLICA_SET_UPDATED",
    "RESUMED",
    "TIMED_OUT",
    "calculate_status",
    "deployment_complete",
    "deployment_progressing",
    "deployment_timed_out",
    "get_condition",
    "new_condition",
    "remove_condition",
    "rs_failure_conditions",
    "set_condition",
]
