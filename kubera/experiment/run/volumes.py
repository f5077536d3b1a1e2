"""createPods with persistentVolumeTemplatePath and persistentVolumeClaimTemplatePath: each
pod's claim and volume, pre-bound to each other, written before the pods (upstream
test/utils CreatePodWithPersistentVolume with bindVolume; the objects: spec/objects.py
volume_docs).

Upstream writes claim, claim status, volume, volume status, pod by pod, and no
PersistentVolume controller watches (scheduler_perf runs none). A kubera experiment runs the
controller-manager unless `controllerManagers: 0`, and that controller, upstream's and
kubera's alike, turns a bound claim Lost when its volume is missing or its volume's claimRef
names another uid (ClaimMisbound). So, deliberately:

- the volume's claimRef carries the claim's uid (upstream leaves it empty);
- the writes go a stage at a time: the claims, the volumes, the volumes' Bound status, then
  the claims' Bound status, once their volumes exist (over the Lost the controller may have
  written when a claim came before its volume).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from google.protobuf.message import Message

from kubera.experiment.spec import ops as o
from kubera.experiment.spec.objects import OpError, to_message, volume_docs
from services.api.machinery.errors import ConflictError
from services.api.machinery.kinds import kind_of
from services.client import Client

#: Objects per batch_update call (the apiserver splits further by its own caps).
CHUNK = 500
#: Times a status write that met another writer is read and sent again.
STATUS_RETRIES = 5


async def create_volumes(
    client: Client,
    create: Callable[[list[Message]], Awaitable[list[Message]]],
    op: o.CreatePods,
) -> None:
    """`op`'s claims `pvc-<i>` and volumes `<namespace>-vol-<i>`, i < op.count, Bound to
    each other. `create`: the executor's batched create (its retries)."""
    pairs = [volume_docs(op, i) for i in range(op.count)]
    claims = await create(
        [to_message(pvc, kind="PersistentVolumeClaim", namespace=op.namespace) for pvc, _ in pairs]
    )
    volumes = []
    for claim, (_, pv) in zip(claims, pairs, strict=True):
        pv["spec"]["claimRef"]["uid"] = claim.metadata.uid  # type: ignore[attr-defined]
        volumes.append(to_message(pv, kind="PersistentVolume"))
    await write_statuses(client, await create(volumes), [pv for _, pv in pairs])
    await write_statuses(client, claims, [pvc for pvc, _ in pairs])


def _key(obj: Message) -> str:
    m = obj.metadata  # type: ignore[attr-defined]
    return f"{m.namespace}/{m.name}"


async def write_statuses(client: Client, objs: list[Message], docs: list[dict[str, Any]]) -> None:
    """Each created object's status phase from its doc (UpdateStatus: a create resets it),
    whatever was written since: an object another writer changed meanwhile is read and
    written again, as upstream's update of an object without a resourceVersion retries."""
    phases = {_key(obj): doc["status"]["phase"] for obj, doc in zip(objs, docs, strict=True)}
    for attempt in range(STATUS_RETRIES + 1):
        for obj in objs:
            obj.status.phase = phases[_key(obj)]  # type: ignore[attr-defined]
        results = []
        for i in range(0, len(objs), CHUNK):
            results += await client.batch_update(objs[i : i + CHUNK], status=True)
        stale = [
            obj for obj, r in zip(objs, results, strict=True) if isinstance(r.error, ConflictError)
        ]
        bad = [r.error for r in results if r.error is not None]
        if len(bad) > len(stale) or (stale and attempt == STATUS_RETRIES):
            raise OpError(f"status update failed: {bad[0]}")
        if not stale:
            return
        kind = kind_of(stale[0])
        objs = [
            await client.get(kind, obj.metadata.name, obj.metadata.namespace)  # type: ignore[attr-defined]
            for obj in stale
        ]
