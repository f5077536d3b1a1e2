"""ControllerRevisions: the template history of DaemonSets and StatefulSets (upstream
pkg/controller/history/controller_history.go).

A revision is an immutable snapshot of its owner's pod template, stored as the patch that
restores it (`{"spec": {"template": {..., "$patch": "replace"}}}`, upstream's getPatch),
named `<owner>-<hash>` and labelled `controller-revision-hash: <hash>` plus the template's
labels. Its `revision` number orders the history: a rollback re-uses the old revision's
object and bumps its number to the newest.

    new_revision(owner, template, number, collision_count)
        → create_revision (an existing revision of that name holding other data is a
          hash collision: collision_count + 1, new name)
    find_equal(revisions, candidate) → the revisions holding the same template
    truncate: the oldest revisions no pod and no status names, beyond revisionHistoryLimit

Where kubera differs: the hash is FNV-32a of the data's canonical JSON (upstream hashes
the raw JSON bytes its encoder wrote); both stay stable for one template.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from google.protobuf import json_format, struct_pb2
from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, core_pb2
from services.api.machinery import codec
from services.api.machinery.errors import AlreadyExistsError
from services.api.machinery.kinds import BY_KIND, Kind
from services.api.machinery.kubeobject import narrow, object_meta
from services.client import Client
from services.controllers.controller_utils import new_controller_ref
from services.controllers.deployment.util import fnv32a, safe_encode

CONTROLLER_REVISIONS = BY_KIND["ControllerRevision"]
#: apps.ControllerRevisionHashLabelKey (also DefaultDaemonSetUniqueLabelKey and
#: StatefulSetRevisionLabel): on revisions, and on the pods made from them.
CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"
#: Longest owner-name prefix of a revision name (ControllerRevisionName).
MAX_PREFIX = 223


def revision_name(prefix: str, hash_: str) -> str:
    return f"{prefix[:MAX_PREFIX]}-{hash_}"


def template_patch(template: core_pb2.PodTemplateSpec) -> dict[str, Any]:
    """getPatch: the owner's template as a replace patch of spec.template (without the empty
    structs Go would write: kubera's revision hashes predate them, see codec.encode)."""
    encoded = codec.encode(template, go_structs=False)
    encoded["$patch"] = "replace"
    return {"spec": {"template": encoded}}


def data_bytes(data: struct_pb2.Struct) -> bytes:
    return json.dumps(
        json_format.MessageToDict(data), sort_keys=True, separators=(",", ":")
    ).encode()


def hash_revision(data: struct_pb2.Struct, probe: int | None = None) -> str:
    """HashControllerRevision: FNV-32a of the data, then the collision count in decimal."""
    raw = data_bytes(data)
    if probe is not None:
        raw += str(probe).encode()
    return safe_encode(str(fnv32a(raw)))


def new_revision(
    owner: Message,
    owner_kind: Kind,
    template: core_pb2.PodTemplateSpec,
    number: int,
    collision_count: int | None,
) -> apps_pb2.ControllerRevision:
    """NewControllerRevision: controlled by `owner`, labelled with the template's labels
    and its hash, annotated with the owner's annotations (kubectl's change-cause), holding
    `template` as a patch."""
    meta = object_meta(owner)
    cr = CONTROLLER_REVISIONS.new()
    assert isinstance(cr, apps_pb2.ControllerRevision)
    cr.metadata.namespace = meta.namespace
    cr.metadata.labels.update(template.metadata.labels)
    cr.metadata.annotations.update(meta.annotations)
    cr.metadata.owner_references.append(new_controller_ref(owner, owner_kind))
    cr.data.update(template_patch(template))
    cr.revision = number
    hash_ = hash_revision(cr.data, collision_count)
    cr.metadata.name = revision_name(meta.name, hash_)
    cr.metadata.labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
    return cr


def revision_template(cr: apps_pb2.ControllerRevision) -> core_pb2.PodTemplateSpec:
    """The template a revision restores (ApplyRevision for a replace patch)."""
    data = json_format.MessageToDict(cr.data)
    template = dict((data.get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out = core_pb2.PodTemplateSpec()
    json_format.ParseDict(template, out, ignore_unknown_fields=True)
    return out


def sort_revisions(
    revisions: Iterable[apps_pb2.ControllerRevision],
) -> list[apps_pb2.ControllerRevision]:
    """SortControllerRevisions: by revision number, then creation time, then name."""
    return sorted(
        revisions,
        key=lambda r: (r.revision, r.metadata.creation_timestamp, r.metadata.name),
    )


def equal_revision(a: apps_pb2.ControllerRevision, b: apps_pb2.ControllerRevision) -> bool:
    """EqualRevision: the same hash label (when both have one) and the same data."""
    ha = a.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
    hb = b.metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
    if ha is not None and hb is not None and ha != hb:
        return False
    return data_bytes(a.data) == data_bytes(b.data)


def find_equal(
    revisions: Sequence[apps_pb2.ControllerRevision], candidate: apps_pb2.ControllerRevision
) -> list[apps_pb2.ControllerRevision]:
    return [r for r in revisions if equal_revision(r, candidate)]


def next_revision(revisions: Sequence[apps_pb2.ControllerRevision]) -> int:
    """One more than the newest revision number (1 for an empty history)."""
    return max((r.revision for r in revisions), default=0) + 1


async def create_revision(
    client: Client,
    owner: Message,
    owner_kind: Kind,
    template: core_pb2.PodTemplateSpec,
    number: int,
    collision_count: int,
) -> tuple[apps_pb2.ControllerRevision, int]:
    """CreateControllerRevision: create the revision, probing new names while a revision of
    that name holds other data (a hash collision); (revision, collision count used)."""
    while True:
        cr = new_revision(owner, owner_kind, template, number, collision_count)
        try:
            created = await client.create(cr)
            return narrow(created, apps_pb2.ControllerRevision), collision_count
        except AlreadyExistsError:
            existing = narrow(
                await client.get(CONTROLLER_REVISIONS, cr.metadata.name, cr.metadata.namespace),
                apps_pb2.ControllerRevision,
            )
            if equal_revision(existing, cr):
                return existing, collision_count
            collision_count += 1


async def bump_revision(
    client: Client, cr: apps_pb2.ControllerRevision, number: int
) -> apps_pb2.ControllerRevision:
    """UpdateControllerRevision: give an existing revision a new number (a rollback)."""
    if cr.revision == number:
        return cr
    patch = json.dumps({"revision": number})
    out = await client.patch(
        CONTROLLER_REVISIONS, cr.metadata.name, patch, namespace=cr.metadata.namespace
    )
    return narrow(out, apps_pb2.ControllerRevision)


__all__ = [
    "CONTROLLER_REVISIONS",
    "CONTROLLER_REVISION_HASH_LABEL",
    "bump_revision",
    "create_revision",
    "equal_revision",
    "find_equal",
    "hash_revision",
    "new_revision",
    "next_revision",
    "revision_name",
    "revision_template",
    "sort_revisions",
    "template_patch",
]
