"""The two rollout strategies and the Progressing condition they report (upstream
pkg/controller/deployment rolling.go, recreate.go and progress.go).

RollingUpdate scales the new ReplicaSet up within maxSurge, else the old ones down within
maxUnavailable (unhealthy replicas first); Recreate scales every old ReplicaSet to 0 and
creates or scales the new one only once no old pod runs. Both then write status with the
Progressing condition, and a rollout that has not progressed is looked at again when its
progress deadline passes.

Kept apart from controller.py (the controller and its sync entry point) and sync.py (the
strategy-independent steps these build on); functions of a `Deps` (deps.py), with no
state of their own.
"""

from __future__ import annotations

from collections.abc import Sequence

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery.meta import object_key
from services.controllers.controller_utils import timestamp
from services.controllers.deployment.conditions import (
    NEW_RS_AVAILABLE,
    REPLICA_SET_UPDATED,
    TIMED_OUT,
    calculate_status,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    get_condition,
    new_condition,
    remove_condition,
    rs_failure_conditions,
    set_condition,
)
from services.controllers.deployment.deps import Deps
from services.controllers.deployment.sync import (
    all_replica_sets,
    cleanup_deployment,
    scale_replica_set,
)
from services.controllers.deployment.util import (
    Deployment,
    ReplicaSet,
    active,
    by_creation,
    has_progress_deadline,
    max_unavailable,
    new_rs_new_replicas,
    old_pods_running,
    settled_available,
    spec_replicas,
)


async def rollout_rolling(deps: Deps, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
    new_rs, old_rss = await all_replica_sets(deps, d, rss, create=True)
    assert new_rs is not None
    all_rss = [*old_rss, new_rs]
    if await _reconcile_new(deps, all_rss, new_rs, d):
        await sync_rollout_status(deps, d, all_rss, new_rs)
        return
    if await _reconcile_old(deps, all_rss, active(old_rss), new_rs, d):
        await sync_rollout_status(deps, d, all_rss, new_rs)
        return
    if deployment_complete(d, d.status):
        await cleanup_deployment(deps, d, old_rss)
    await sync_rollout_status(deps, d, all_rss, new_rs)


async def _reconcile_new(
    deps: Deps, all_rss: list[ReplicaSet], new_rs: ReplicaSet, d: Deployment
) -> bool:
    if new_rs.spec.replicas == d.spec.replicas:
        return False
    if new_rs.spec.replicas > d.spec.replicas:
        scaled, _ = await scale_replica_set(deps, new_rs, d.spec.replicas, d)
        return scaled
    scaled, _ = await scale_replica_set(deps, new_rs, new_rs_new_replicas(d, all_rss, new_rs), d)
    return scaled


async def _reconcile_old(
    deps: Deps,
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
    new_unavailable = new_rs.spec.replicas - settled_available(new_rs)
    # Never below minAvailable, counting the new RS's not-yet-available pods as lost.
    max_scaled_down = all_pods - min_available - new_unavailable
    if max_scaled_down <= 0:
        return False
    old_rss, cleaned = await _cleanup_unhealthy(deps, old_rss, d, max_scaled_down)
    scaled_down = await _scale_down_old_for_rolling_update(deps, [*old_rss, new_rs], old_rss, d)
    return cleaned + scaled_down > 0


async def _cleanup_unhealthy(
    deps: Deps, old_rss: list[ReplicaSet], d: Deployment, max_cleanup: int
) -> tuple[list[ReplicaSet], int]:
    """Scale away old replicas that are not available: that costs no availability."""
    old_rss = by_creation(old_rss)
    total = 0
    for i, rs in enumerate(old_rss):
        if total >= max_cleanup:
            break
        unhealthy = rs.spec.replicas - settled_available(rs)
        if rs.spec.replicas == 0 or unhealthy == 0:
            continue
        count = min(max_cleanup - total, unhealthy)
        _, old_rss[i] = await scale_replica_set(deps, rs, rs.spec.replicas - count, d)
        total += count
    return old_rss, total


async def _scale_down_old_for_rolling_update(
    deps: Deps, all_rss: list[ReplicaSet], old_rss: list[ReplicaSet], d: Deployment
) -> int:
    min_available = d.spec.replicas - max_unavailable(d)
    available = sum(settled_available(rs) for rs in all_rss)
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
        await scale_replica_set(deps, rs, rs.spec.replicas - count, d)
        total += count
    return total


async def rollout_recreate(
    deps: Deps,
    d: Deployment,
    rss: Sequence[ReplicaSet],
    pod_map: dict[str, list[core_pb2.Pod]],
) -> None:
    # No new RS yet: it is created only once the old pods are gone.
    new_rs, old_rss = await all_replica_sets(deps, d, rss, create=False)
    all_rss: list[ReplicaSet | None] = [*old_rss, new_rs]
    scaled = False
    for i, rs in enumerate(old_rss):
        if rs.spec.replicas == 0:
            continue
        did, old_rss[i] = await scale_replica_set(deps, rs, 0, d)
        scaled = scaled or did
    if scaled or old_pods_running(new_rs, old_rss, pod_map):
        await sync_rollout_status(deps, d, all_rss, new_rs)
        return
    if new_rs is None:
        new_rs, old_rss = await all_replica_sets(deps, d, rss, create=True)
        all_rss = [*old_rss, new_rs]
    assert new_rs is not None
    await scale_replica_set(deps, new_rs, d.spec.replicas, d)
    if deployment_complete(d, d.status):
        await cleanup_deployment(deps, d, old_rss)
    await sync_rollout_status(deps, d, all_rss, new_rs)


async def sync_rollout_status(
    deps: Deps,
    d: Deployment,
    all_rss: Sequence[ReplicaSet | None],
    new_rs: ReplicaSet | None,
) -> None:
    now = deps.clock.now()
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
            set_condition(status, new_condition("Progressing", "True", NEW_RS_AVAILABLE, msg, now))
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
    failures = rs_failure_conditions(all_rss, new_rs)
    if failures:
        set_condition(status, failures[0])
    else:
        remove_condition(status, "ReplicaFailure")
    if d.status == status:
        _requeue_stuck(deps, d, status)
        return
    d.status.CopyFrom(status)
    await deps.client.update_status(d)


def _requeue_stuck(deps: Deps, d: Deployment, status: apps_pb2.DeploymentStatus) -> None:
    """Without progress, look again when the progress deadline passes."""
    current = get_condition(d.status, "Progressing")
    if not has_progress_deadline(d) or current is None:
        return
    if deployment_complete(d, status) or current.reason == TIMED_OUT:
        return
    since = timestamp(current.last_update_time)
    if since is None:
        return
    after = since + d.spec.progress_deadline_seconds - deps.clock.now()
    if after < 1:
        deps.queue.add_rate_limited(object_key(d))
    else:
        deps.queue.add_after(object_key(d), after + 1)
