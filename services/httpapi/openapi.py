"""OpenAPI v3 documents of kubera's API, generated from the protobuf schema.

kubectl reads them for `kubectl explain`, to compute client-side apply patches (the
x-kubernetes-patch-* extensions), and to learn that the server validates fields (a
`fieldValidation` query parameter on the kind's PATCH operation makes `--validate=strict`
server-side). Like kube-apiserver, /openapi/v3 indexes one document per group-version,
each at a URL with its content hash, so clients cache a document until it changes.

Schemas are read off the message descriptors (protos/kubera/v1/*.proto) and named as
upstream's (io.k8s.api.core.v1.Pod, io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta):
the proto file says the group (core.proto → io.k8s.api.core.v1, meta.proto → apimachinery's
meta/v1). kubera's field options say what JSON cannot: `(quantity)` maps hold Quantity
strings, `(int_or_string)` fields are IntOrString; string fields named like timestamps are
Time (MicroTime for event and lease times). Descriptions are the .proto comments, read from
the descriptor set `make proto` writes beside the code (protos/kubera/v1/descriptors.binpb).
List strategies come from services.api.listtypes (the same table strategic merge uses).

Differences from kube-apiserver: fields kubera keeps as free-form JSON (probes, volumes,
securityContext…) are objects with x-kubernetes-preserve-unknown-fields; no watch paths
(deprecated upstream); no `required` lists (proto3 has none); /openapi/v2 is not served
(kubectl 1.32 uses v3 when the server has it).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import Descriptor, FieldDescriptor

import protos.kubera.v1
from protos.kubera.v1 import options_pb2
from services.api import listtypes
from services.api.kinds import KINDS, Kind
from services.httpapi import discovery

DESCRIPTOR_SET = Path(protos.kubera.v1.__file__).with_name("descriptors.binpb")

META = "io.k8s.apimachinery.pkg.apis.meta.v1"
QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
TIME = f"{META}.Time"
MICRO_TIME = f"{META}.MicroTime"

#: The schema prefix of each proto file's messages.
_FILE_PREFIX = {
    "protos/kubera/v1/core.proto": "io.k8s.api.core.v1",
    "protos/kubera/v1/apps.proto": "io.k8s.api.apps.v1",
    "protos/kubera/v1/policy.proto": "io.k8s.api.policy.v1",
    "protos/kubera/v1/scheduling.proto": "io.k8s.api.scheduling.v1",
    "protos/kubera/v1/coordination.proto": "io.k8s.api.coordination.v1",
    "protos/kubera/v1/node.proto": "io.k8s.api.node.v1",
    "protos/kubera/v1/meta.proto": META,
}
#: Messages that live in another file than upstream's package (meta/v1's options).
_RENAMED = {
    "kubera.v1.DeleteOptions": f"{META}.DeleteOptions",
    "kubera.v1.Preconditions": f"{META}.Preconditions",
}
#: Timestamps with microseconds (metav1.MicroTime) rather than seconds (metav1.Time).
_MICRO_TIME_FIELDS = frozenset({"event_time", "acquire_time", "renew_time"})

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)
_JSON_TYPES = ("application/json", "application/yaml")


# ------------------------------------------------------------ comments


@functools.cache
def _comments() -> dict[tuple[str, int], str]:
    """(message full name, field number or 0 for the message) → its .proto comment."""
    fds = descriptor_pb2.FileDescriptorSet.FromString(DESCRIPTOR_SET.read_bytes())
    out: dict[tuple[str, int], str] = {}
    for f in fds.file:
        names = {i: f"{f.package}.{m.name}" for i, m in enumerate(f.message_type)}
        fields = {
            (i, j): fd.number for i, m in enumerate(f.message_type) for j, fd in enumerate(m.field)
        }
        for loc in f.source_code_info.location:
            text = _clean(loc.leading_comments or loc.trailing_comments)
            if not text or not loc.path or loc.path[0] != 4:  # 4: FileDescriptorProto.message_type
                continue
            path = list(loc.path)
            if len(path) == 2:
                out[(names[path[1]], 0)] = text
            elif len(path) == 4 and path[2] == 2:  # 2: DescriptorProto.field
                out[(names[path[1]], fields[(path[1], path[3])])] = text
    return out


def _clean(comment: str) -> str:
    return " ".join(line.strip() for line in comment.strip().splitlines() if line.strip())


def description(message: Descriptor, field: FieldDescriptor | None = None) -> str:
    return _comments().get((message.full_name, field.number if field else 0), "")


# -------------------------------------------------------------- schemas


def schema_name(message: Descriptor) -> str:
    """Upstream's schema name of a kubera message (io.k8s.api.core.v1.Pod)."""
    renamed = _RENAMED.get(message.full_name)
    if renamed:
        return renamed
    prefix = _FILE_PREFIX.get(message.file.name, "io.kubera.v1")
    return f"{prefix}.{message.name}"


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _ref_field(name: str) -> dict[str, Any]:
    """A reference used as a field (upstream's shape: allOf, so a description may sit beside)."""
    return {"allOf": [_ref(name)], "default": {}}


def _is_map(f: FieldDescriptor) -> bool:
    return f.message_type is not None and f.message_type.GetOptions().map_entry


def _opt(f: FieldDescriptor, ext: Any) -> bool:
    return bool(f.GetOptions().Extensions[ext])


def _is_time(f: FieldDescriptor) -> bool:
    return f.type == FieldDescriptor.TYPE_STRING and (
        f.name.endswith("_timestamp") or f.name.endswith("_time") or f.name == "time_added"
    )


_SCALARS: dict[int, dict[str, Any]] = {
    FieldDescriptor.TYPE_STRING: {"type": "string"},
    FieldDescriptor.TYPE_BOOL: {"type": "boolean"},
    FieldDescriptor.TYPE_INT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_SINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_UINT32: {"type": "integer", "format": "int32"},
    FieldDescriptor.TYPE_INT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_SINT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_UINT64: {"type": "integer", "format": "int64"},
    FieldDescriptor.TYPE_DOUBLE: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_FLOAT: {"type": "number", "format": "double"},
    FieldDescriptor.TYPE_BYTES: {"type": "string", "format": "byte"},
}


def _value_schema(f: FieldDescriptor, *, quantity: bool, intstr: bool, time: str) -> dict[str, Any]:
    """The schema of one value of `f` (an item of a list, a value of a map, or the field)."""
    mt = f.message_type
    if mt is not None:
        if mt.full_name.startswith("google.protobuf."):
            return {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        return _ref_field(schema_name(mt))
    if quantity:
        return _ref_field(QUANTITY)
    if intstr:
        return _ref_field(INT_OR_STRING)
    if time:
        return _ref_field(time)
    return dict(_SCALARS.get(f.type, {"type": "string"}))


def _list_extensions(owner: Descriptor, f: FieldDescriptor) -> dict[str, Any]:
    """x-kubernetes-list-type / list-map-keys / patch-strategy / patch-merge-key of a list."""
    s = listtypes.strategy(owner.full_name, f.json_name)
    if s is None:
        return {}
    out: dict[str, Any] = {}
    list_type = getattr(s, "list_type", "")
    if list_type:
        out["x-kubernetes-list-type"] = list_type
    keys = tuple(getattr(s, "keys", ()) or ())
    if list_type == "map" and keys:
        out["x-kubernetes-list-map-keys"] = list(keys)
    merge_key = getattr(s, "merge_key", "")
    if merge_key:
        out["x-kubernetes-patch-merge-key"] = merge_key
    strategy = getattr(s, "patch_strategy", "")
    if strategy:
        out["x-kubernetes-patch-strategy"] = strategy
    return out


def field_schema(owner: Descriptor, f: FieldDescriptor) -> dict[str, Any]:
    """The property schema of field `f` of message `owner`."""
    time = (MICRO_TIME if f.name in _MICRO_TIME_FIELDS else TIME) if _is_time(f) else ""
    if _is_map(f):
        vf = f.message_type.fields_by_name["value"]
        values = _value_schema(
            vf,
            quantity=_opt(f, options_pb2.quantity),
            intstr=_opt(f, options_pb2.int_or_string),
            time="",
        )
        schema: dict[str, Any] = {"type": "object", "additionalProperties": values}
    elif f.is_repeated:
        item = _value_schema(
            f, quantity=False, intstr=_opt(f, options_pb2.int_or_string), time=time
        )
        schema = {"type": "array", "items": item, **_list_extensions(owner, f)}
    else:
        schema = _value_schema(
            f, quantity=False, intstr=_opt(f, options_pb2.int_or_string), time=time
        )
    text = description(owner, f)
    if text:
        schema["description"] = text
    return schema


def _gvk(group: str, version: str, kind: str) -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


def message_schema(message: Descriptor) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {f.json_name: field_schema(message, f) for f in message.fields},
    }
    text = description(message)
    if text:
        schema["description"] = text
    return schema


def _referenced(message: Descriptor) -> Iterable[Descriptor]:
    for f in message.fields:
        mt = f.message_type
        if mt is None:
            continue
        if _is_map(f):
            mt = mt.fields_by_name["value"].message_type
        if mt is not None and not mt.full_name.startswith("google.protobuf."):
            yield mt


def _closure(roots: Iterable[Descriptor]) -> list[Descriptor]:
    seen: dict[str, Descriptor] = {}
    todo = list(roots)
    while todo:
        m = todo.pop()
        if m.full_name in seen:
            continue
        seen[m.full_name] = m
        todo.extend(_referenced(m))
    return list(seen.values())


def _list_schema(kind: Kind) -> dict[str, Any]:
    item = schema_name(kind.message.DESCRIPTOR)
    return {
        "type": "object",
        "description": f"A list of {kind.kind} objects.",
        "required": ["items"],
        "properties": {
            "apiVersion": {"type": "string", "description": "The versioned schema of this list."},
            "kind": {"type": "string", "description": "The REST resource this list represents."},
            "items": {
                "type": "array",
                "items": _ref_field(item),
                "description": f"The {kind.resource}.",
            },
            "metadata": {**_ref_field(f"{META}.ListMeta"), "description": "The list's metadata."},
        },
        "x-kubernetes-group-version-kind": _gvk(kind.group, kind.version, kind.kind + "List"),
    }


def _common_schemas() -> dict[str, dict[str, Any]]:
    """The apimachinery types that are not kubera messages, as upstream describes them."""
    string = {"type": "string"}
    return {
        QUANTITY: {
            "type": "string",
            "description": "A fixed-point number with an optional suffix: 500m, 2, 1Gi, 1e3.",
        },
        INT_OR_STRING: {
            "type": "string",
            "format": "int-or-string",
            "x-kubernetes-int-or-string": True,
            "description": "An integer or a string (such as a percentage, 25%).",
        },
        TIME: {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp in seconds.",
        },
        MICRO_TIME: {
            "type": "string",
            "format": "date-time",
            "description": "An RFC 3339 timestamp with microseconds.",
        },
        f"{META}.Patch": {
            "type": "object",
            "description": "The body of a PATCH request, in the format its Content-Type names.",
        },
        f"{META}.StatusCause": {
            "type": "object",
            "properties": {"field": string, "message": string, "reason": string},
        },
        f"{META}.StatusDetails": {
            "type": "object",
            "properties": {
                "causes": {"type": "array", "items": _ref_field(f"{META}.StatusCause")},
                "group": string,
                "kind": string,
                "name": string,
                "retryAfterSeconds": {"type": "integer", "format": "int32"},
                "uid": string,
            },
        },
        f"{META}.Status": {
            "type": "object",
            "description": "What a call that returns no object returns (and every error).",
            "properties": {
                "apiVersion": string,
                "code": {"type": "integer", "format": "int32"},
                "details": _ref_field(f"{META}.StatusDetails"),
                "kind": string,
                "message": string,
                "metadata": _ref_field(f"{META}.ListMeta"),
                "reason": string,
                "status": string,
            },
            "x-kubernetes-group-version-kind": _gvk("", "v1", "Status"),
        },
        "io.k8s.api.autoscaling.v1.Scale": {
            "type": "object",
            "description": "The scale subresource of a workload.",
            "properties": {
                "apiVersion": string,
                "kind": string,
                "metadata": _ref_field(f"{META}.ObjectMeta"),
                "spec": {
                    "type": "object",
                    "properties": {"replicas": {"type": "integer", "format": "int32"}},
                },
                "status": {
                    "type": "object",
                    "properties": {
                        "replicas": {"type": "integer", "format": "int32"},
                        "selector": string,
                    },
                },
            },
            "x-kubernetes-group-version-kind": _gvk("autoscaling", "v1", "Scale"),
        },
    }


#: Kinds kubera's messages carry that are not stored kinds (the bodies of subresources).
_BODY_KINDS = {
    "kubera.v1.Binding": ("", "v1", "Binding"),
    "kubera.v1.Eviction": ("policy", "v1", "Eviction"),
    "kubera.v1.DeleteOptions": ("", "v1", "DeleteOptions"),
}


def _schemas(kinds: list[Kind]) -> dict[str, dict[str, Any]]:
    gvks = {k.message.DESCRIPTOR.full_name: (k.group, k.version, k.kind) for k in KINDS}
    gvks.update(_BODY_KINDS)
    roots = [k.message.DESCRIPTOR for k in kinds]
    roots += [_message(name) for name in (*_BODY_KINDS, "kubera.v1.ListMeta")]
    out = _common_schemas()
    for m in _closure(roots):
        schema = message_schema(m)
        if m.full_name in gvks:
            schema["x-kubernetes-group-version-kind"] = _gvk(*gvks[m.full_name])
        out[schema_name(m)] = schema
    for k in kinds:
        out[schema_name(k.message.DESCRIPTOR) + "List"] = _list_schema(k)
    return dict(sorted(out.items()))


def _message(full_name: str) -> Descriptor:
    from google.protobuf import descriptor_pool

    return descriptor_pool.Default().FindMessageTypeByName(full_name)


# ---------------------------------------------------------------- paths


def _param(
    name: str, type_: str, text: str, *, where: str = "query", **extra: Any
) -> dict[str, Any]:
    p: dict[str, Any] = {
        "name": name,
        "in": where,
        "description": text,
        "schema": {"type": type_, **extra},
    }
    if where == "path":
        p["required"] = True
    return p


_PRETTY = _param("pretty", "string", "If 'true', the output is pretty printed.")
_DRY_RUN = _param("dryRun", "string", "All: check the request, persist nothing.")
_FIELD_MANAGER = _param("fieldManager", "string", "The name of the actor making the change.")
#: kubectl looks for this parameter on a kind's PATCH to know the server validates fields.
_FIELD_VALIDATION = _param(
    "fieldValidation",
    "string",
    "What to do with unknown or duplicate fields: Ignore, Warn (the default) or Strict.",
)
_FORCE = _param("force", "boolean", "Apply: take over fields other managers own.")
_LIST = [
    _param("allowWatchBookmarks", "boolean", "Watch: ask for BOOKMARK events.", uniqueItems=True),
    _param("continue", "string", "The continue token of the previous page.", uniqueItems=True),
    _param("fieldSelector", "string", "Only objects whose fields match.", uniqueItems=True),
    _param("labelSelector", "string", "Only objects whose labels match.", uniqueItems=True),
    _param("limit", "integer", "At most this many objects per page.", uniqueItems=True),
    _param("resourceVersion", "string", "The version to list or watch from.", uniqueItems=True),
    _param("resourceVersionMatch", "string", "How resourceVersion applies.", uniqueItems=True),
    _param(
        "sendInitialEvents", "boolean", "Watch: start with the current objects.", uniqueItems=True
    ),
    _param("timeoutSeconds", "integer", "End the list or watch after this long.", uniqueItems=True),
    _param("watch", "boolean", "Stream changes instead of listing.", uniqueItems=True),
]
_DELETE = [
    _DRY_RUN,
    _param("gracePeriodSeconds", "integer", "Seconds before the object is deleted."),
    _param(
        "propagationPolicy", "string", "Orphan, Background or Foreground deletion of dependents."
    ),
]


def _content(schema: str, types: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {t: {"schema": _ref(schema)} for t in types}


def _op(
    action: str,
    op_id: str,
    kind: Kind,
    tag: str,
    gvk: tuple[str, str, str],
    response: str,
    *,
    params: list[dict[str, Any]] = (),  # type: ignore[assignment]
    body: dict[str, Any] | None = None,
    created: bool = False,
) -> dict[str, Any]:
    responses: dict[str, Any] = {"200": {"description": "OK", "content": _content(response)}}
    if created:
        responses["201"] = {"description": "Created", "content": _content(response)}
    responses["401"] = {"description": "Unauthorized"}
    op: dict[str, Any] = {
        "tags": [tag],
        "operationId": op_id,
        "parameters": list(params),
        "responses": responses,
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": {"group": gvk[0], "version": gvk[1], "kind": gvk[2]},
    }
    if body is not None:
        op["requestBody"] = body
    return op


def _body(schema: str, types: Iterable[str] = _JSON_TYPES) -> dict[str, Any]:
    return {"content": _content(schema, types), "required": True}


def _camel(group: str, version: str) -> str:
    name = group.split(".")[0] if group else "core"
    return name[:1].upper() + name[1:] + version[:1].upper() + version[1:]


def _tag(group: str, version: str) -> str:
    return f"{group.split('.')[0] if group else 'core'}_{version}"


def _write_params() -> list[dict[str, Any]]:
    return [_DRY_RUN, _FIELD_MANAGER, _FIELD_VALIDATION]


def _kind_paths(kind: Kind) -> dict[str, Any]:
    root = f"/api/{kind.version}" if not kind.group else f"/apis/{kind.group}/{kind.version}"
    gv, tag = _camel(kind.group, kind.version), _tag(kind.group, kind.version)
    gvk = (kind.group, kind.version, kind.kind)
    schema = schema_name(kind.message.DESCRIPTOR)
    ns = "Namespaced" if kind.namespaced else ""
    base = (
        f"{root}/namespaces/{{namespace}}/{kind.resource}"
        if kind.namespaced
        else f"{root}/{kind.resource}"
    )
    scope = [
        _param("namespace", "string", "The object's namespace.", where="path", uniqueItems=True)
    ]
    scope = scope if kind.namespaced else []
    name = [_param("name", "string", f"The {kind.kind}'s name.", where="path", uniqueItems=True)]
    delete_body = _body(f"{META}.DeleteOptions", ("application/json",))
    delete_body["required"] = False
    paths: dict[str, Any] = {
        base: {
            "parameters": [*scope, _PRETTY],
            "get": _op(
                "list", f"list{gv}{ns}{kind.kind}", kind, tag, gvk, schema + "List", params=_LIST
            ),
            "post": _op(
                "post",
                f"create{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=_write_params(),
                body=_body(schema),
                created=True,
            ),
        },
        f"{base}/{{name}}": {
            "parameters": [*name, *scope, _PRETTY],
            "get": _op("get", f"read{gv}{ns}{kind.kind}", kind, tag, gvk, schema),
            "put": _op(
                "put",
                f"replace{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=_write_params(),
                body=_body(schema),
                created=True,
            ),
            "patch": _op(
                "patch",
                f"patch{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                schema,
                params=[*_write_params(), _FORCE],
                body=_body(f"{META}.Patch", PATCH_TYPES),
                created=True,
            ),
            "delete": _op(
                "delete",
                f"delete{gv}{ns}{kind.kind}",
                kind,
                tag,
                gvk,
                f"{META}.Status",
                params=_DELETE,
                body=delete_body,
            ),
        },
    }
    if "deletecollection" in discovery.verbs_of(kind):
        paths[base]["delete"] = _op(
            "deletecollection",
            f"delete{gv}Collection{ns}{kind.kind}",
            kind,
            tag,
            gvk,
            f"{META}.Status",
            params=[*_LIST, *_DELETE],
            body=delete_body,
        )
    if kind.namespaced:
        paths[f"{root}/{kind.resource}"] = {
            "parameters": [_PRETTY],
            "get": _op(
                "list",
                f"list{gv}{kind.kind}ForAllNamespaces",
                kind,
                tag,
                gvk,
                schema + "List",
                params=_LIST,
            ),
        }
    for sub in discovery.subresources_of(kind):
        paths[f"{base}/{{name}}/{sub.name}"] = _subresource_path(kind, sub, gv, tag, name + scope)
    return paths


_SUB_SCHEMAS = {
    "Binding": "io.k8s.api.core.v1.Binding",
    "Eviction": "io.k8s.api.policy.v1.Eviction",
}


def _subresource_path(
    kind: Kind, sub: discovery.Subresource, gv: str, tag: str, params: list[dict[str, Any]]
) -> dict[str, Any]:
    ns = "Namespaced" if kind.namespaced else ""
    suffix = sub.name[:1].upper() + sub.name[1:]
    if sub.kind == "Scale":
        schema, gvk = "io.k8s.api.autoscaling.v1.Scale", ("autoscaling", "v1", "Scale")
    elif sub.kind:
        schema, gvk = _SUB_SCHEMAS[sub.kind], (sub.group, sub.version, sub.kind)
    else:
        schema, gvk = schema_name(kind.message.DESCRIPTOR), (kind.group, kind.version, kind.kind)
    item: dict[str, Any] = {"parameters": [*params, _PRETTY]}
    op_name = f"{gv}{ns}{kind.kind}{suffix}"
    if "create" in sub.verbs:
        item["post"] = _op(
            "post",
            f"create{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=_write_params(),
            body=_body(schema),
            created=True,
        )
    if "get" in sub.verbs:
        item["get"] = _op("get", f"read{op_name}", kind, tag, gvk, schema)
    if "update" in sub.verbs:
        item["put"] = _op(
            "put",
            f"replace{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=_write_params(),
            body=_body(schema),
            created=True,
        )
    if "patch" in sub.verbs:
        item["patch"] = _op(
            "patch",
            f"patch{op_name}",
            kind,
            tag,
            gvk,
            schema,
            params=[*_write_params(), _FORCE],
            body=_body(f"{META}.Patch", PATCH_TYPES),
            created=True,
        )
    return item


# ------------------------------------------------------------ documents


@functools.cache
def _document(group: str, version: str) -> dict[str, Any] | None:
    kinds = discovery.kinds_in(group, version)
    if not kinds:
        return None
    paths: dict[str, Any] = {}
    for kind in kinds:
        paths.update(_kind_paths(kind))
    title = "Kubernetes"
    return {
        "openapi": "3.0.0",
        "info": {"title": title, "version": discovery.GIT_VERSION},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": _schemas(kinds),
            "securitySchemes": {
                "BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}
            },
        },
        "security": [{"BearerToken": []}],
    }


def openapi_v3_document(group: str, version: str) -> dict[str, Any] | None:
    """/openapi/v3/api/v1 (group "") or /openapi/v3/apis/G/V; None for a group-version kubera
    does not serve. The document is built once and shared: callers must not change it."""
    return _document(group, version)


def _path_key(group: str, version: str) -> str:
    return f"apis/{group}/{version}" if group else f"api/{version}"


@functools.cache
def document_hash(group: str, version: str) -> str:
    """The content hash in the index's URL (upper-case hex SHA-512, as kube-apiserver's)."""
    doc = _document(group, version)
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha512(data).hexdigest().upper()


def openapi_v3_paths() -> dict[str, Any]:
    """/openapi/v3: every group-version's document URL, with its hash."""
    return {
        "paths": {
            _path_key(g, v): {
                "serverRelativeURL": f"/openapi/v3/{_path_key(g, v)}?hash={document_hash(g, v)}"
            }
            for g, v in discovery.group_versions()
        }
    }
