"""The subresources of the HTTP API that are not the object itself: pods/binding,
pods/eviction (pods/log is podlog.py) and the autoscaling/v1 Scale of deployments, replicasets and
statefulsets.

Why this module exists: each speaks its own type (Binding, Eviction, Scale) rather than
the kind's, so each is a translation to one registry call: `bind`, `evict`, and an
update of spec.replicas at the Scale's resourceVersion. (The status subresource is the
kind's own object: verbs.update and verbs.patch with `status`.)
"""

from __future__ import annotations

from typing import Any

from google.protobuf import json_format
from google.protobuf.message import Message

from protos.kubera.v1 import apps_pb2, meta_pb2, policy_pb2
from services.api.machinery import codec, patching
from services.api.machinery.errors import BadRequestError, ConflictError, InvalidError, invalid
from services.api.machinery.kinds import Kind
from services.api.machinery.kubeobject import object_meta
from services.api.machinery.labels import SelectorError, from_label_selector
from services.apiserver import MAX_RETRIES, conflict
from services.httpapi.status import success
from services.httpapi.verbs import Call, UnsupportedMediaType, body_doc, patch_type

#: The kinds with a scale subresource.
SCALABLE = frozenset({"deployments", "replicasets", "statefulsets"})


def _meta(obj: Message) -> meta_pb2.ObjectMeta:
    return object_meta(obj)


def _scalable(
    obj: Message,
) -> apps_pb2.Deployment | apps_pb2.ReplicaSet | apps_pb2.StatefulSet:
    """`obj` as a kind with a scale subresource (SCALABLE)."""
    if isinstance(obj, apps_pb2.Deployment | apps_pb2.ReplicaSet | apps_pb2.StatefulSet):
        return obj
    raise TypeError(f"{type(obj).__name__} has no scale subresource")


async def bind(call: Call) -> tuple[int, dict[str, Any]]:
    """POST pods/NAME/binding: a Binding naming the node (upstream answers 201 Success)."""
    doc = body_doc(call)
    if not isinstance(doc, dict):
        raise BadRequestError("expected a Binding object")
    target = doc.get("target") or {}
    meta = doc.get("metadata") or {}
    if meta.get("name") and meta["name"] != call.info.name:
        raise BadRequestError(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({call.info.name})"
        )
    node = target.get("name", "") if isinstance(target, dict) else ""
    if not node:
        raise BadRequestError("Binding: target.name: Required value")
    if call.dry_run:
        await call.api.get(call.kind, call.namespace, call.info.name)
        return 201, success()
    await call.api.bind(
        call.namespace,
        call.info.name,
        node,
        resource_version=str(meta.get("resourceVersion") or ""),
        uid=str(meta.get("uid") or ""),
        annotations=_string_map(meta, "annotations"),
        labels=_string_map(meta, "labels"),
    )
    return 201, success()


def _string_map(meta: dict[str, Any], name: str) -> dict[str, str]:
    value = meta.get(name) or {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BadRequestError(f"Binding: metadata.{name}: expected a map of strings")
    return value


async def evict(call: Call) -> tuple[int, dict[str, Any]]:
    """POST pods/NAME/eviction: a policy/v1 (or v1beta1) Eviction; 429 when a
    PodDisruptionBudget forbids it now (kubectl drain retries)."""
    doc = body_doc(call)
    if not isinstance(doc, dict):
        raise BadRequestError("expected an Eviction object")
    ev = policy_pb2.Eviction()
    try:
        json_format.ParseDict(
            {k: v for k, v in doc.items() if k not in ("apiVersion", "kind")},
            ev,
            ignore_unknown_fields=True,
        )
    except json_format.ParseError as e:
        raise BadRequestError(f"Eviction: {e}") from None
    if ev.metadata.name and ev.metadata.name != call.info.name:
        raise BadRequestError(
            f"name in URL does not match name in Eviction object ({call.info.name} != {ev.metadata.name})"
        )
    ev.metadata.name = call.info.name
    ev.metadata.namespace = call.namespace
    if call.dry_run and "All" not in ev.delete_options.dry_run:
        ev.delete_options.dry_run.append("All")
    await call.api.evict(ev)
    return 201, success()


def scale_doc(kind: Kind, obj: Message) -> dict[str, Any]:
    """autoscaling/v1 Scale of a Deployment, ReplicaSet or StatefulSet."""
    m = _meta(obj)
    owner = _scalable(obj)
    sel = owner.spec.selector
    try:
        selector = str(
            from_label_selector(
                dict(sel.match_labels),
                [
                    {"key": e.key, "operator": e.operator, "values": list(e.values)}
                    for e in sel.match_expressions
                ],
            )
        )
    except SelectorError:
        selector = ""
    meta: dict[str, Any] = {
        "name": m.name,
        "namespace": m.namespace,
        "uid": m.uid,
        "resourceVersion": m.resource_version,
    }
    if m.creation_timestamp:
        meta["creationTimestamp"] = m.creation_timestamp
    spec_replicas = owner.spec.replicas if owner.spec.HasField("replicas") else 1
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": spec_replicas},
        "status": {"replicas": owner.status.replicas, "selector": selector},
    }


async def get_scale(call: Call) -> dict[str, Any]:
    obj = await call.api.get(call.kind, call.namespace, call.info.name)
    return scale_doc(call.kind, obj)


async def update_scale(call: Call) -> dict[str, Any]:
    """PUT or PATCH of a Scale: spec.replicas written to the object, at the Scale's
    resourceVersion when it names one (else retried on conflict)."""
    for _ in range(MAX_RETRIES):
        current = await call.api.get(call.kind, call.namespace, call.info.name)
        cur_scale = scale_doc(call.kind, current)
        if call.info.verb == "patch":
            ptype = patch_type(call)
            if ptype == patching.APPLY_PATCH_YAML:
                raise UnsupportedMediaType("server-side apply of a Scale is not served")
            if ptype == patching.STRATEGIC_MERGE_PATCH:
                ptype = patching.MERGE_PATCH  # a Scale has no lists: the same result
            new_scale = patching.apply_patch(call.kind, cur_scale, ptype, call.body)
        else:
            new_scale = body_doc(call)
        if not isinstance(new_scale, dict):
            raise BadRequestError("expected a Scale object")
        rv = str((new_scale.get("metadata") or {}).get("resourceVersion") or "")
        replicas = (new_scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or isinstance(replicas, bool):
            raise InvalidError(
                "Scale", call.info.name, [invalid("spec.replicas", replicas, "must be an integer")]
            )
        obj = _scalable(codec.clone(current))
        obj.spec.replicas = replicas
        pinned = bool(rv) and rv != _meta(current).resource_version
        _meta(obj).resource_version = rv or _meta(current).resource_version
        try:
            updated = await call.api.update(obj, dry_run=call.dry_run)
        except ConflictError:
            if pinned or call.info.verb == "update" and rv:
                raise
            continue
        return scale_doc(call.kind, updated)
    raise conflict(call.kind, call.info.name)
