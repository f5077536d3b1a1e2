"""The steps of one Deployment sync that do not depend on the rollout strategy (upstream
pkg/controller/deployment/sync.go): find or create the new ReplicaSet and bring the
revisions up to date, scale (proportionally when spec.replicas changes mid-rollout),
trim the revision history, and write status.

Kept apart from controller.py (config, informers, event handlers, the sync entry point)
because both rollout strategies (rollout.py) build on these steps. They are functions of
a `Deps` (deps.py: the client, clock, listers, event recorder and queue the controller
passes them); none keeps state of its own.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Sequence

from protos.kubera.v1 import core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError, ApiError, NotFoundError
from services.api.machinery.kubeobject import narrow, object_meta
from services.api.machinery.meta import object_key
from services.controllers.controller_utils import (
    REPLICA_SETS,
    controller_of,
    is_namespace_terminating,
    new_controller_ref,
)
from services.controllers.deployment.conditions import (
    FAILED_RS_CREATE,
    FOUND_NEW_RS,
    NEW_REPLICA_SET,
    PAUSED,
    RESUMED,
    TIMED_OUT,
    calculate_status,
    get_condition,
    new_condition,
    set_condition,
)
from services.controllers.deployment.deps import Deps
from services.controllers.deployment.util import (
    DEFAULT_UNIQUE_LABEL_KEY,
    DEPLOYMENTS,
    DESIRED_REPLICAS_ANNOTATION,
    REVISION_ANNOTATION,
    Deployment,
    ReplicaSet,
    active,
    by_revision,
    by_size,
    compute_hash,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replica_set,
    find_old_replica_sets,
    get_proportion,
    has_progress_deadline,
    has_revision_history_limit,
    int_annotation,
    is_rolling_update,
    is_saturated,
    max_revision,
    max_surge,
    new_rs_new_replicas,
    replicas_annotations_need_update,
    set_new_rs_annotations,
    set_replicas_annotations,
    set_revision,
    spec_replicas,
)

log = logging.getLogger(__name__)


async def write_deployment(deps: Deps, d: Deployment) -> None:
    """Persist our working copy: its revision annotation (pinned to the version we
    read) and its status; `d` then carries the new resourceVersion."""
    cached = deps.deployments.store.get(object_key(d))
    before = dict(object_meta(cached).annotations) if cached is not None else {}
    changed = {k: v for k, v in d.metadata.annotations.items() if before.get(k) != v}
    if changed:
        patch = {
            "metadata": {
                "annotations": changed,
                "uid": d.metadata.uid,
                "resourceVersion": d.metadata.resource_version,
            }
        }
        patched = await deps.client.patch(
            DEPLOYMENTS, d.metadata.name, json.dumps(patch), namespace=d.metadata.namespace
        )
        object_meta(d).resource_version = object_meta(patched).resource_version
    updated = await deps.client.update_status(d)
    d.metadata.resource_version = updated.metadata.resource_version


async def all_replica_sets(
    deps: Deps, d: Deployment, rss: Sequence[ReplicaSet], create: bool
) -> tuple[ReplicaSet | None, list[ReplicaSet]]:
    """(new RS, every old RS), with the revisions of the new RS and `d` brought up to
    date (getAllReplicaSetsAndSyncRevision)."""
    _, all_old = find_old_replica_sets(d, rss)
    new_rs = await _new_replica_set(deps, d, rss, all_old, create)
    return new_rs, all_old


async def _new_replica_set(
    deps: Deps,
    d: Deployment,
    rss: Sequence[ReplicaSet],
    old_rss: Sequence[ReplicaSet],
    create: bool,
) -> ReplicaSet | None:
    existing = find_new_replica_set(d, rss)
    new_revision = str(max_revision(old_rss) + 1)
    now = deps.clock.now()
    if existing is not None:
        rs_copy = narrow(codec.clone(existing), ReplicaSet)
        annotations_changed = set_new_rs_annotations(d, rs_copy, new_revision, exists=True)
        if annotations_changed or rs_copy.spec.min_ready_seconds != d.spec.min_ready_seconds:
            rs_copy.spec.min_ready_seconds = d.spec.min_ready_seconds
            return await deps.client.update(rs_copy)
        needs_update = set_revision(d, rs_copy.metadata.annotations.get(REVISION_ANNOTATION, ""))
        if has_progress_deadline(d) and get_condition(d.status, "Progressing") is None:
            msg = f'Found new replica set "{rs_copy.metadata.name}"'
            set_condition(d.status, new_condition("Progressing", "True", FOUND_NEW_RS, msg, now))
            needs_update = True
        if needs_update:
            await write_deployment(deps, d)
        return rs_copy
    if not create:
        return None

    collision = d.status.collision_count if d.status.HasField("collision_count") else None
    template = core_pb2.PodTemplateSpec()
    template.CopyFrom(d.spec.template)
    pod_hash = compute_hash(template, collision)
    template.metadata.labels[DEFAULT_UNIQUE_LABEL_KEY] = pod_hash
    new_rs = narrow(REPLICA_SETS.new(), ReplicaSet)
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
        created: ReplicaSet = await deps.client.create(new_rs)
    except AlreadyExistsError:
        # A slow cache, or a hash collision with someone else's ReplicaSet.
        already_exists = True
        found = deps.replica_sets.store.get(object_key(new_rs))
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
            await deps.client.update_status(d)
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
                await deps.client.update_status(d)
        deps.events.event(d, "Warning", FAILED_RS_CREATE, msg)
        raise
    if not already_exists and replicas > 0:
        deps.events.event(
            d,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled up replica set {created.metadata.name} from 0 to {replicas}",
        )
    needs_update = set_revision(d, new_revision)
    if not already_exists and has_progress_deadline(d):
        msg = f'Created new replica set "{created.metadata.name}"'
        set_condition(d.status, new_condition("Progressing", "True", NEW_REPLICA_SET, msg, now))
        needs_update = True
    if needs_update:
        await write_deployment(deps, d)
    return created


async def scale_replica_set(
    deps: Deps, rs: ReplicaSet, new_scale: int, d: Deployment, operation: str = ""
) -> tuple[bool, ReplicaSet]:
    """Set the RS's replicas (and the replicas its annotations say it is sized for)."""
    size_changed = rs.spec.replicas != new_scale
    max_replicas = d.spec.replicas + max_surge(d)
    if not size_changed and not replicas_annotations_need_update(rs, d.spec.replicas, max_replicas):
        return False, rs
    operation = operation or ("up" if rs.spec.replicas < new_scale else "down")
    old_scale = rs.spec.replicas
    rs_copy = narrow(codec.clone(rs), ReplicaSet)
    rs_copy.spec.replicas = new_scale
    set_replicas_annotations(rs_copy, d.spec.replicas, max_replicas)
    updated = await deps.client.update(rs_copy)
    if size_changed:
        deps.events.event(
            d,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled {operation} replica set {rs.metadata.name} from {old_scale} to {new_scale}",
        )
    return size_changed, updated


async def is_scaling_event(deps: Deps, d: Deployment, rss: Sequence[ReplicaSet]) -> bool:
    """An active RS was sized for another spec.replicas: the user scaled."""
    new_rs, old_rss = await all_replica_sets(deps, d, rss, create=False)
    for rs in active([*old_rss, new_rs]):
        desired = int_annotation(rs, DESIRED_REPLICAS_ANNOTATION)
        if desired is not None and desired != d.spec.replicas:
            return True
    return False


async def _scale(
    deps: Deps, d: Deployment, new_rs: ReplicaSet | None, old_rss: list[ReplicaSet]
) -> None:
    """Proportional scaling: spread a change of spec.replicas over the active RSes
    by their size, so a scale in mid-rollout neither hastens nor stalls it."""
    only = find_active_or_latest(new_rs, old_rss)
    if only is not None:
        if only.spec.replicas != d.spec.replicas:
            await scale_replica_set(deps, only, d.spec.replicas, d)
        return
    if is_saturated(d, new_rs):
        for old in active(old_rss):
            await scale_replica_set(deps, old, 0, d)
        return
    if not is_rolling_update(d):
        return
    all_rss = active([*old_rss, new_rs])
    allowed = d.spec.replicas + max_surge(d) if d.spec.replicas > 0 else 0
    to_add = allowed - spec_replicas(all_rss)
    operation = ""
    if to_add > 0:
        all_rss = by_size(all_rss, newer_first=True)
        operation = "up"
    elif to_add < 0:
        all_rss = by_size(all_rss, newer_first=False)
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
        await scale_replica_set(deps, rs, sizes[rs.metadata.name], d, operation)


async def sync_paused_or_scaled(deps: Deps, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
    """Paused or scaled: resize proportionally, no rollout."""
    new_rs, old_rss = await all_replica_sets(deps, d, rss, create=False)
    await _scale(deps, d, new_rs, old_rss)
    if d.spec.paused:
        await cleanup_deployment(deps, d, old_rss)
    await sync_status(deps, d, [*old_rss, new_rs], new_rs)


async def sync_status_only(deps: Deps, d: Deployment, rss: Sequence[ReplicaSet]) -> None:
    new_rs, old_rss = await all_replica_sets(deps, d, rss, create=False)
    await sync_status(deps, d, [*old_rss, new_rs], new_rs)


async def check_paused_conditions(deps: Deps, d: Deployment) -> None:
    if not has_progress_deadline(d):
        return
    cond = get_condition(d.status, "Progressing")
    if cond is not None and cond.reason == TIMED_OUT:
        return  # a reported lack of progress stays
    paused_cond = cond is not None and cond.reason == PAUSED
    now = deps.clock.now()
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
    await write_deployment(deps, d)


async def cleanup_deployment(deps: Deps, d: Deployment, old_rss: Sequence[ReplicaSet]) -> None:
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
            await deps.client.delete(REPLICA_SETS, rs.metadata.name, rs.metadata.namespace)


async def sync_status(
    deps: Deps,
    d: Deployment,
    all_rss: Sequence[ReplicaSet | None],
    new_rs: ReplicaSet | None,
) -> None:
    status = calculate_status(all_rss, new_rs, d, deps.clock.now())
    if d.status == status:
        return
    d.status.CopyFrom(status)
    await deps.client.update_status(d)
