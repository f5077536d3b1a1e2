"""Adoption and release of owned objects (upstream pkg/controller/controller_ref_manager.go):
an owner claims the objects its selector matches, adopting orphans and releasing the
objects it controls that no longer match; every change is a patch of ownerReferences
pinned to the version read.

Kept apart from the other controller helpers because it is the part that writes (through
the client); the ReplicaSet and Deployment controllers claim with it.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable

from google.protobuf.message import Message

from protos.kubera.v1 import meta_pb2
from services.api.machinery import codec
from services.api.machinery.errors import ApiError, NotFoundError
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.labels import Selector
from services.client import Client
from services.controllers.controller_utils import controller_of, new_controller_ref


class CannotAdoptError(ApiError):
    """The owner is gone or being deleted (upstream RecheckDeletionTimestamp)."""


def _owner_refs_json(refs: Iterable[meta_pb2.OwnerReference]) -> list[dict[str, object]]:
    return [codec.encode(r) for r in refs]


async def adopt(
    client: Client, kind: Kind, obj: Message, owner: Message, owner_kind: Kind
) -> Message:
    """Add `owner` as controller of `obj`, if `obj` is still the version we saw."""
    meta = object_meta(obj)
    refs = [
        *_owner_refs_json(meta.owner_references),
        codec.encode(new_controller_ref(owner, owner_kind)),
    ]
    return await _patch_owner_refs(client, kind, obj, refs)


async def release(client: Client, kind: Kind, obj: Message, owner_uid: str) -> Message:
    """Drop `owner_uid`'s reference from `obj`, if `obj` is still the version we saw."""
    meta = object_meta(obj)
    refs = _owner_refs_json(r for r in meta.owner_references if r.uid != owner_uid)
    return await _patch_owner_refs(client, kind, obj, refs)


async def _patch_owner_refs(
    client: Client, kind: Kind, obj: Message, refs: list[dict[str, object]]
) -> Message:
    """Set `obj`'s ownerReferences to `refs`, pinned to the uid and resourceVersion we saw."""
    meta = object_meta(obj)
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
    owner_meta = object_meta(owner)
    claimed: list[Message] = []
    errors: list[ApiError] = []
    adopt_error: ApiError | None = None
    adopt_checked = False
    for obj in candidates:
        meta = object_meta(obj)
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
        meta = object_meta(owner)
        fresh = await client.get(kind, meta.name, meta.namespace)
        fmeta = object_meta(fresh)
        if fmeta.uid != meta.uid:
            raise CannotAdoptError(
                f"original {kind.kind} {meta.namespace}/{meta.name} is gone: got uid {fmeta.uid}, wanted {meta.uid}"
            )
        if fmeta.deletion_timestamp:
            raise CannotAdoptError(
                f"{meta.namespace}/{meta.name} has just been deleted at {fmeta.deletion_timestamp}"
            )

    return check


__all__ = [
    "CannotAdoptError",
    "adopt",
    "claim",
    "recheck_owner",
    "release",
]
